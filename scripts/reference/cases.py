"""What the golden fixtures cover: the checkpoints, the generation cases and the fixed inputs.

Every checkpoint is written by the product's own `qwen3tts.model.tiny.write_checkpoint(out_dir, variant,
shape, seed)`; the official implementation then runs on it. "tiny" is 0.6B style (tts_model_size "0b6",
so the official wrapper drops instruct, and there is no small_to_mtp_projection); "tiny-1.7b" is 1.7B
style (talker hidden != code-predictor hidden). Instruct cases therefore use "tiny-1.7b".
"""

from __future__ import annotations

from dataclasses import dataclass

FORMAT_VERSION = 1


@dataclass(frozen=True)
class Checkpoint:
    name: str
    variant: str  # custom_voice | voice_design | base
    shape: str  # tiny | tiny-1.7b
    seed: int


CHECKPOINTS = (
    Checkpoint("custom_voice-tiny", "custom_voice", "tiny", 0),
    Checkpoint("custom_voice-tiny-1.7b", "custom_voice", "tiny-1.7b", 0),
    Checkpoint("voice_design-tiny-1.7b", "voice_design", "tiny-1.7b", 0),
    Checkpoint("base-tiny", "base", "tiny", 0),
    Checkpoint("base-tiny-1.7b", "base", "tiny-1.7b", 0),
)


@dataclass(frozen=True)
class TalkerCase:
    """One official generate_* call (greedy) and its stage-by-stage replay."""

    name: str
    checkpoint: str
    text: str
    language: str
    speaker: str | None = None  # custom_voice preset; None otherwise
    instruct: str | None = None
    non_streaming: bool = True  # True: whole text in the prompt; False: streaming-text ("dual-track")
    expect_eos: bool = False  # the greedy run must end with EOS (else it must give >= MIN_FRAMES frames)
    ref_text: str | None = (
        None  # base: ICL voice clone (REFERENCE_AUDIO + this transcript); None: x-vector only
    )


ENGLISH = "The next train to Zurich departs from platform 7 at 10:45."
CHINESE = "各位旅客请注意，列车即将进站。"
INSTRUCT = "Speak slowly and calmly, like a station announcer."
HAPPY = "Speak happily."
VOICE = "A warm, low female voice with a slight smile."
REF_TEXT = "Good morning, this is the reference voice speaking."

TALKER_CASES = (
    TalkerCase("cv-tiny-preset-english", "custom_voice-tiny", ENGLISH, "english", "vivian"),
    TalkerCase(
        "cv-tiny-preset-english-streaming",
        "custom_voice-tiny",
        ENGLISH,
        "english",
        "vivian",
        non_streaming=False,
    ),
    # dialect speakers: with language auto or chinese the language id becomes the dialect's id
    TalkerCase("cv-tiny-dialect-auto", "custom_voice-tiny", CHINESE, "auto", "eric"),
    TalkerCase(
        "cv-tiny-dialect-chinese-streaming",
        "custom_voice-tiny",
        CHINESE,
        "chinese",
        "dylan",
        non_streaming=False,
    ),
    # 0b6: the official wrapper silently drops the instruct, the prompt has no instruct turn
    TalkerCase("cv-tiny-instruct-dropped", "custom_voice-tiny", ENGLISH, "english", "ryan", INSTRUCT),
    TalkerCase("cv-1.7b-instruct", "custom_voice-tiny-1.7b", ENGLISH, "english", "vivian", HAPPY),
    TalkerCase(
        "cv-1.7b-instruct-streaming",
        "custom_voice-tiny-1.7b",
        CHINESE,
        "auto",
        "eric",
        INSTRUCT,
        non_streaming=False,
    ),
    # EOS: frames from the first EOS on are dropped (found by trying texts on the seed-0 weights)
    TalkerCase(
        "cv-1.7b-instruct-eos",
        "custom_voice-tiny-1.7b",
        ENGLISH,
        "english",
        "vivian",
        INSTRUCT,
        expect_eos=True,
    ),
    TalkerCase("vd-1.7b-instruct", "voice_design-tiny-1.7b", ENGLISH, "english", instruct=VOICE),
    TalkerCase(
        "vd-1.7b-instruct-streaming",
        "voice_design-tiny-1.7b",
        ENGLISH,
        "auto",
        instruct=VOICE,
        non_streaming=False,
    ),
    # base: the x-vector of REFERENCE_AUDIO (speaker-encoder case) sits in the speaker slot
    TalkerCase("base-tiny-xvector", "base-tiny", ENGLISH, "english"),
    TalkerCase("base-tiny-xvector-streaming", "base-tiny", ENGLISH, "english", non_streaming=False),
    # base ICL ("in-context learning", x_vector_only_mode=False): reference text + codes + x-vector
    TalkerCase("base-tiny-icl", "base-tiny", ENGLISH, "english", ref_text=REF_TEXT),
    TalkerCase(
        "base-tiny-icl-streaming", "base-tiny", ENGLISH, "english", non_streaming=False, ref_text=REF_TEXT
    ),
    TalkerCase("base-1.7b-icl", "base-tiny-1.7b", CHINESE, "chinese", ref_text=REF_TEXT),
    TalkerCase(
        "base-1.7b-icl-streaming", "base-tiny-1.7b", ENGLISH, "auto", non_streaming=False, ref_text=REF_TEXT
    ),
)

# Greedy generation: max_new_tokens sampled code-0 tokens give max_new_tokens - 1 frames without EOS.
GREEDY = {"do_sample": False, "subtalker_dosample": False, "repetition_penalty": 1.05, "max_new_tokens": 33}
MIN_FRAMES = 30
NUM_DECODE_STEPS = 8  # teacher-forced talker steps stored per case
NUM_PREDICTOR_FRAMES = 1  # frames whose 15 code-predictor logits are stored per case

# Tokenizer: plain texts (no chat format added) plus the chat-formatted prompts the wrapper builds.
TOKENIZER_TEXTS = (
    "",
    "Hello world",
    ENGLISH,
    "Attention please:  the store will close in 15 minutes!!",
    "  leading and trailing spaces  ",
    "line one\nline two\r\n\ttabbed",
    "Numbers 1234567 and 3.14159, dates 2024-05-01.",
    "Don't, can't, we'll, they're, I'm, you've, she'd.",
    CHINESE,
    "混合 mixed 文本 text 123。",
    "Café naïve résumé – “quotes” … ✓ 😀",
    "<|im_start|>assistant\nHello world<|im_end|>\n<|im_start|>assistant\n",
    f"<|im_start|>user\n{INSTRUCT}<|im_end|>\n",
    "text with <tts_pad> and <|endoftext|> inside",
)

CODEC_SHORT_FRAMES = 40
CODEC_LONG_FRAMES = 120  # > 72-frame attention window, <= 300 where the official chunked decode is exact
CODEC_SEED = 1234

REFERENCE_AUDIO_SECONDS = 2.0
REFERENCE_AUDIO_SEED = 7
SAMPLE_RATE = 24000
# speech-encoder cases: the reference audio at these input rates (the official code resamples to 24 kHz)
SPEECH_ENCODER_RATES = (24000, 16000, 44100)
