"""Typed description of a Qwen3-TTS 12 Hz checkpoint: what its config files say, nothing computed.

Field names mirror the release `config.json` / `speech_tokenizer/config.json` names so a reader can
grep both. checkpoint.py fills these from a checkpoint directory; graph builders read only these and
the weights, never the raw JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field

VARIANTS = ("custom_voice", "voice_design", "base")


@dataclass(frozen=True)
class TalkerSpec:
    """`talker_config`: the 28-layer (real) Qwen3 decoder that predicts code 0 of each frame."""

    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rms_norm_eps: float
    rope_theta: float
    vocab_size: int  # codec vocabulary: audio codes 0..codebook-1 plus special/language/speaker ids
    text_vocab_size: int
    text_hidden_size: int
    num_code_groups: int
    max_position_embeddings: int


@dataclass(frozen=True)
class CodePredictorSpec:
    """`talker_config.code_predictor_config`: the 5-layer decoder along the codebook axis (codes 1..15)."""

    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rms_norm_eps: float
    rope_theta: float
    vocab_size: int  # codebook size (2048 in the release)
    num_code_groups: int
    input_size: int  # talker hidden size; != hidden_size means small_to_mtp_projection exists (1.7B style)

    @property
    def has_input_projection(self) -> bool:
        return self.input_size != self.hidden_size


@dataclass(frozen=True)
class CodecDecoderSpec:
    """`speech_tokenizer/config.json` `decoder_config` plus the top-level rates."""

    codebook_size: int
    codebook_dim: int
    latent_dim: int
    decoder_dim: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rms_norm_eps: float
    layer_scale_initial_scale: float
    rope_theta: float
    max_position_embeddings: int
    sliding_window: int
    num_quantizers: int
    num_semantic_quantizers: int
    upsample_rates: tuple[int, ...]
    upsampling_ratios: tuple[int, ...]
    sample_rate: int  # output_sample_rate, Hz
    decode_upsample_rate: int  # samples per frame (1920 = 80 ms at 24 kHz)


@dataclass(frozen=True)
class SpeechEncoderSpec:
    """`speech_tokenizer/config.json` `encoder_config` (a MimiConfig) plus the rates: audio -> codes."""

    num_filters: int
    kernel_size: int
    last_kernel_size: int
    residual_kernel_size: int
    dilation_growth_rate: int
    num_residual_layers: int
    compress: int
    upsampling_ratios: tuple[int, ...]  # SEANet strides, applied in reverse order by the encoder
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    norm_eps: float
    rope_theta: float
    codebook_size: int
    codebook_dim: int
    vector_quantization_hidden_dimension: int
    num_semantic_quantizers: int
    num_valid_quantizers: int  # encoder_valid_num_quantizers: codes kept per frame (16)
    frame_rate: float  # 12.5 Hz
    sample_rate: int  # input_sample_rate, Hz (24000)
    downsample_rate: int  # encode_downsample_rate: samples per frame (1920)

    @property
    def encodec_frame_rate(self) -> float:
        """Frame rate after the SEANet strides (25 Hz), before the stride-2 downsample conv."""
        stride = 1
        for ratio in self.upsampling_ratios:
            stride *= ratio
        return self.sample_rate / stride


@dataclass(frozen=True)
class SpeakerEncoderSpec:
    """`speaker_encoder_config` (Base only): ECAPA-TDNN x-vector from a 128-bin mel spectrogram."""

    mel_dim: int
    enc_dim: int
    enc_channels: tuple[int, ...]
    enc_kernel_sizes: tuple[int, ...]
    enc_dilations: tuple[int, ...]
    enc_attention_channels: int
    enc_res2net_scale: int
    enc_se_channels: int
    sample_rate: int


@dataclass(frozen=True)
class TextIds:
    """Special ids of the Qwen2 text vocabulary used by the prompt layout."""

    im_start: int
    im_end: int
    tts_pad: int
    tts_bos: int
    tts_eos: int


@dataclass(frozen=True)
class CodecIds:
    """Special ids of the talker's codec vocabulary."""

    pad: int
    bos: int
    eos: int
    think: int
    nothink: int
    think_bos: int
    think_eos: int


@dataclass(frozen=True)
class GenerationDefaults:
    """`generation_config.json` with the official wrapper's fallbacks for missing keys."""

    do_sample: bool = True
    temperature: float = 0.9
    top_k: int = 50
    top_p: float = 1.0
    repetition_penalty: float = 1.05
    subtalker_dosample: bool = True
    subtalker_temperature: float = 0.9
    subtalker_top_k: int = 50
    subtalker_top_p: float = 1.0
    max_new_tokens: int = 2048


@dataclass(frozen=True)
class ModelSpec:
    """Everything a checkpoint declares about itself."""

    variant: str  # one of VARIANTS (`tts_model_type`)
    size: str  # `tts_model_size`: "0b6" or "1b7"
    talker: TalkerSpec
    code_predictor: CodePredictorSpec
    codec: CodecDecoderSpec
    speaker_encoder: SpeakerEncoderSpec | None
    text_ids: TextIds
    codec_ids: CodecIds
    languages: dict[str, int] = field(default_factory=dict)  # codec_language_id
    speakers: dict[str, int] = field(default_factory=dict)  # spk_id (lists in the release are unwrapped)
    speaker_dialects: dict[str, str | None] = field(default_factory=dict)  # spk_is_dialect (False -> None)
    generation: GenerationDefaults = field(default_factory=GenerationDefaults)

    @property
    def supports_instruct(self) -> bool:
        """The official wrapper drops `instruct` for 0.6B and Base has no instruct turn."""
        return self.variant != "base" and self.size != "0b6"
