"""A small but real Qwen2-format byte-level BPE vocabulary for tiny test checkpoints.

`write_tokenizer_files` writes `vocab.json`, `merges.txt` and `tokenizer_config.json` laid out like the
Qwen3-TTS release: the 256 GPT-2 byte symbols, then merges learned deterministically from the small
built-in corpus below, then the added tokens in Qwen3-TTS order, so each added token sits at the same
offset from `<|endoftext|>` as in the release (`<tts_pad>` is `<|endoftext|>` + 28 there, 151671).

The corpus is framed as chat turns, so `assistant` and `user` become single tokens and the official
positional prompt slicing (3 role tokens, 5 closing tokens) holds, as it does for the real vocabulary.
"""

from __future__ import annotations

import json
from collections import Counter
from itertools import pairwise
from pathlib import Path

from qwen3tts.errors import TokenizerError
from qwen3tts.model.tokenizer import (
    CONFIG_FILE,
    MERGES_FILE,
    VOCAB_FILE,
    assistant_text,
    instruct_text,
    qwen2_pre_tokenizer,
)

NUM_MERGES = 384
NUM_BASE_TOKENS = 256 + NUM_MERGES  # ids of the added tokens start here
MODEL_MAX_LENGTH = 131072

# (content, special) in release order; the non-special ones are Qwen3's tool/FIM/think tokens.
ADDED_TOKENS = (
    ("<|endoftext|>", True),
    ("<|im_start|>", True),
    ("<|im_end|>", True),
    ("<|object_ref_start|>", True),
    ("<|object_ref_end|>", True),
    ("<|box_start|>", True),
    ("<|box_end|>", True),
    ("<|quad_start|>", True),
    ("<|quad_end|>", True),
    ("<|vision_start|>", True),
    ("<|vision_end|>", True),
    ("<|vision_pad|>", True),
    ("<|image_pad|>", True),
    ("<|video_pad|>", True),
    ("<tool_call>", False),
    ("</tool_call>", False),
    ("<|fim_prefix|>", False),
    ("<|fim_middle|>", False),
    ("<|fim_suffix|>", False),
    ("<|fim_pad|>", False),
    ("<|repo_name|>", False),
    ("<|file_sep|>", False),
    ("<tool_response>", False),
    ("</tool_response>", False),
    ("<think>", False),
    ("</think>", False),
    ("<|audio_start|>", True),
    ("<|audio_end|>", True),
    ("<tts_pad>", True),
    ("<tts_text_bos>", True),
    ("<tts_text_eod>", True),
    ("<tts_text_bos_single>", True),
    ("<|audio_pad|>", True),
)
# Every id in use: a checkpoint's `text_vocab_size` must be at least this.
VOCAB_SIZE = NUM_BASE_TOKENS + len(ADDED_TOKENS)

# Announcements as an appliance speaks them, in English and Chinese, with digits and punctuation.
SPEECH_CORPUS = (
    "The next train to Zurich departs from platform 7 at 10:45.",
    "Attention please: the store will close in fifteen minutes.",
    "Welcome! Please take a number and wait until it is called.",
    "Your order number 42 is ready for pickup at the counter.",
    "Good morning, everyone. Today's temperature is 23 degrees.",
    "The elevator is out of service; please use the stairs.",
    "Thank you for shopping with us, and have a nice day!",
    "Flight LX 318 to London is now boarding at gate B12.",
    "Please mind the gap between the train and the platform.",
    "The meeting starts at 9 o'clock in room 204, don't be late.",
    "Hello, how are you? I'm fine, thanks, and you're welcome.",
    "We'll be arriving shortly; please check that you have all your belongings.",
    "Doors are closing. Stand clear of the doors, please.",
    "The front door is open, the kitchen light is on, and the alarm is off.",
    "Speak in a calm and friendly voice, slowly and clearly.",
    "A warm, cheerful young woman with a soft voice.",
    "下一班开往北京的列车将于十点四十五分从七号站台出发。",
    "各位顾客请注意，本店将在十五分钟后关门。",
    "欢迎光临！请取号并耐心等候叫号。",
    "您的订单号码是四十二号，请到柜台取餐。",
    "大家早上好，今天的气温是二十三度。",
    "电梯暂停使用，请走楼梯。",
    "感谢您的光临，祝您生活愉快！",
    "请注意列车与站台之间的空隙。",
    "会议将在二零四会议室九点开始，请不要迟到。",
    "你好，你今天怎么样？我很好，谢谢。",
    "前门开着，厨房的灯亮着，报警器已经关闭。",
    "请用温柔、亲切的声音，慢慢地、清楚地说话。",
    "我叫通义千问，是阿里云的开源大模型。",
    "Qwen3-TTS 支持中文、English 和数字 12345。",
    "温度：23°C，湿度 45%，风速 3.5 m/s。",
    "Price: $19.99 (incl. VAT) - 20% off until 2026-12-31!",
    "E-mail: info@example.com; phone +41 44 123 45 67.",
    "“Quoted text,” she said — and then… silence.",
)


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map (the byte-level BPE base alphabet)."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    mapping = {byte: chr(byte) for byte in printable}
    shifted = 0
    for byte in range(256):
        if byte not in mapping:
            mapping[byte] = chr(256 + shifted)  # the unprintable bytes move to U+0100 onwards
            shifted += 1
    # Release order: the printable bytes first, then the shifted ones (GPT-2 / Qwen2 ids 0..255).
    return dict(sorted(mapping.items(), key=lambda item: ord(item[1])))


def training_texts() -> list[str]:
    """The corpus as the model sees it: each sentence as a target turn, every fourth also as instruct."""
    texts = [assistant_text(sentence) for sentence in SPEECH_CORPUS]
    texts += [instruct_text(sentence) for sentence in SPEECH_CORPUS[::4]]
    return texts


def word_counts(texts: list[str]) -> Counter[str]:
    """Byte-level pre-tokens of `texts`, chat control tokens removed, counted."""
    pre_tokenizer = qwen2_pre_tokenizer()
    counts: Counter[str] = Counter()
    for text in texts:
        for chunk in _strip_control_tokens(text):
            counts.update(piece for piece, _ in pre_tokenizer.pre_tokenize_str(chunk))
    return counts


def _strip_control_tokens(text: str) -> list[str]:
    # Added tokens never reach BPE, so they must not contribute pairs (as in the real tokenizer).
    chunks = [text]
    for content, _ in ADDED_TOKENS:
        chunks = [part for chunk in chunks for part in chunk.split(content)]
    return [chunk for chunk in chunks if chunk]


def learn_merges(counts: Counter[str], num_merges: int) -> list[tuple[str, str]]:
    """Classic BPE: repeatedly merge the most frequent adjacent pair; ties go to the smallest pair."""
    words = {tuple(word): count for word, count in sorted(counts.items())}
    merges: list[tuple[str, str]] = []
    while len(merges) < num_merges:
        pairs: Counter[tuple[str, str]] = Counter()
        for symbols, count in words.items():
            for pair in pairwise(symbols):
                pairs[pair] += count
        if not pairs:
            break
        best = min(pairs, key=lambda pair: (-pairs[pair], pair))
        merges.append(best)
        words = {_merge_pair(symbols, best): count for symbols, count in words.items()}
    return merges


def _merge_pair(symbols: tuple[str, ...], pair: tuple[str, str]) -> tuple[str, ...]:
    merged: list[str] = []
    index = 0
    while index < len(symbols):
        if index + 1 < len(symbols) and (symbols[index], symbols[index + 1]) == pair:
            merged.append(symbols[index] + symbols[index + 1])
            index += 2
        else:
            merged.append(symbols[index])
            index += 1
    return tuple(merged)


def build_vocab(merges: list[tuple[str, str]]) -> dict[str, int]:
    """Byte symbols first, then each merge result in merge order."""
    vocab = {symbol: index for index, symbol in enumerate(bytes_to_unicode().values())}
    for left, right in merges:
        vocab.setdefault(left + right, len(vocab))
    return vocab


def tokenizer_config(first_added_id: int) -> dict:
    """`tokenizer_config.json` as in the release (Qwen2Tokenizer, ChatML eos, no bos/unk)."""
    added_tokens_decoder = {
        str(first_added_id + offset): {
            "content": content,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": special,
        }
        for offset, (content, special) in enumerate(ADDED_TOKENS)
    }
    additional = [content for content, special in ADDED_TOKENS if special and content != "<|endoftext|>"]
    return {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": added_tokens_decoder,
        "additional_special_tokens": additional,
        "bos_token": None,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": MODEL_MAX_LENGTH,
        "pad_token": "<|endoftext|>",
        "split_special_tokens": False,
        "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": None,
    }


def write_tokenizer_files(out_dir: str | Path) -> dict[str, int]:
    """Write vocab.json, merges.txt and tokenizer_config.json (identical bytes on every call).

    Returns every added token's content -> id (`<|im_start|>`, `<|im_end|>`, `<tts_pad>`,
    `<tts_text_bos>`, `<tts_text_eod>`, ...).
    """
    merges = learn_merges(word_counts(training_texts()), NUM_MERGES)
    vocab = build_vocab(merges)
    if len(vocab) != NUM_BASE_TOKENS:
        raise TokenizerError(f"learned {len(vocab)} base tokens, expected {NUM_BASE_TOKENS}")
    for word in ("assistant", "user"):
        if word not in vocab:
            raise TokenizerError(f"the learned vocabulary lacks {word!r} as a single token")
    config = tokenizer_config(len(vocab))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _write_text(out / VOCAB_FILE, json.dumps(vocab, ensure_ascii=False, separators=(",", ":")) + "\n")
    _write_text(out / MERGES_FILE, "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
    _write_text(out / CONFIG_FILE, json.dumps(config, ensure_ascii=False, indent=2) + "\n")
    return {entry["content"]: int(token_id) for token_id, entry in config["added_tokens_decoder"].items()}


def _write_text(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8"))
