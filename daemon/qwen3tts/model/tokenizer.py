"""The Qwen2 byte-level BPE text tokenizer and the chat-format prompt texts of the official wrapper.

Mirrors what `transformers.Qwen2TokenizerFast` builds from `vocab.json` + `merges.txt` +
`tokenizer_config.json` (its `Qwen2Converter`): a BPE model, an NFC normalizer, the Qwen2 split regex
followed by a byte-level mapping, a byte-level decoder, and the added tokens of `added_tokens_decoder`.
The pipeline runs in the HF `tokenizers` library, so ids are exactly the ones the official processor
feeds the model. No special tokens are added automatically, as in the official processor.

The official `generate` slices the target ids by position (`[:3]` role, `[3:-5]` text), so
`encode_target` checks that the chat framing tokenized to exactly those lengths.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from qwen3tts.errors import TokenizerError

logger = logging.getLogger(__name__)

VOCAB_FILE = "vocab.json"
MERGES_FILE = "merges.txt"
CONFIG_FILE = "tokenizer_config.json"

# The Qwen2 pre-tokenizer split (contractions, letter runs with one leading non-letter, single digits,
# punctuation runs with trailing newlines, newline runs, other whitespace).
QWEN2_SPLIT_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

ROLE_LENGTH = 3  # <|im_start|> assistant \n
TARGET_TAIL_LENGTH = 5  # <|im_end|> \n <|im_start|> assistant \n
REF_TAIL_LENGTH = 2  # <|im_end|> \n


def assistant_text(text: str) -> str:
    """The target text as the official wrapper formats it before tokenizing."""
    return f"<|im_start|>assistant\n{text}<|im_end|>\n<|im_start|>assistant\n"


def instruct_text(instruct: str) -> str:
    """The instruct (voice description / style) turn as the official wrapper formats it."""
    return f"<|im_start|>user\n{instruct}<|im_end|>\n"


def ref_text(text: str) -> str:
    """The Base ICL reference transcript as the official wrapper formats it."""
    return f"<|im_start|>assistant\n{text}<|im_end|>\n"


def qwen2_pre_tokenizer() -> pre_tokenizers.PreTokenizer:
    """The Qwen2 split regex followed by the byte-level mapping (no prefix space, no GPT-2 regex)."""
    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_SPLIT_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )


@dataclass(frozen=True)
class TargetIds:
    """The target text's ids split the way the official `generate` slices them."""

    ids: tuple[int, ...]  # the whole framed prompt
    role: tuple[int, ...]  # ids[:3]: <|im_start|> assistant \n
    text: tuple[int, ...]  # ids[3:-5]: the text itself


class TextTokenizer:
    """Encodes text to Qwen2 ids exactly as the official `Qwen2TokenizerFast` does."""

    def __init__(self, tokenizer: Tokenizer, special_ids: dict[str, int]):
        self._tokenizer = tokenizer
        self.special_ids = dict(special_ids)  # added token content -> id, from tokenizer_config.json

    @classmethod
    def from_dir(cls, path: str | Path) -> TextTokenizer:
        """Load vocab.json, merges.txt and tokenizer_config.json; raise TokenizerError naming a bad file."""
        directory = Path(path)
        vocab = _read_vocab(directory / VOCAB_FILE)
        merges = _read_merges(directory / MERGES_FILE)
        added = _read_added_tokens(directory / CONFIG_FILE)
        tokenizer = _build_tokenizer(vocab, merges, directory / MERGES_FILE)
        special_ids = _add_tokens(tokenizer, added, directory / CONFIG_FILE)
        logger.debug(
            "loaded tokenizer from %s: %d base tokens, %d merges, %d added tokens",
            directory,
            len(vocab),
            len(merges),
            len(added),
        )
        return cls(tokenizer, special_ids)

    @property
    def vocab_size(self) -> int:
        """Number of ids in use: base vocabulary plus added tokens."""
        return self._tokenizer.get_vocab_size(with_added_tokens=True)

    def token_id(self, token: str) -> int:
        """The id of one token (an added token such as `<tts_pad>` or a byte-level symbol string)."""
        token_id = self._tokenizer.token_to_id(token)
        if token_id is None:
            raise TokenizerError(f"token {token!r} is not in the vocabulary")
        return token_id

    def encode(self, text: str) -> list[int]:
        """Ids of `text`, with no special tokens added."""
        return self._tokenizer.encode(text, add_special_tokens=False).ids

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        """Text of `ids` (invalid UTF-8 is replaced, as `errors="replace"` in the release config)."""
        return self._tokenizer.decode(ids, skip_special_tokens=skip_special_tokens)

    def encode_target(self, text: str) -> TargetIds:
        """Ids of the framed target text, split into role and text ids as the official slicing does."""
        ids = self.encode(assistant_text(text))
        self._check_framing(ids, self.encode(assistant_text("")), ROLE_LENGTH, TARGET_TAIL_LENGTH, text)
        return TargetIds(
            ids=tuple(ids), role=tuple(ids[:ROLE_LENGTH]), text=tuple(ids[ROLE_LENGTH:-TARGET_TAIL_LENGTH])
        )

    def encode_ref_text(self, text: str) -> tuple[int, ...]:
        """Ids of a Base ICL reference transcript without its framing (the official `ref_id[:, 3:-2]`)."""
        ids = self.encode(ref_text(text))
        self._check_framing(ids, self.encode(ref_text("")), ROLE_LENGTH, REF_TAIL_LENGTH, text)
        return tuple(ids[ROLE_LENGTH:-REF_TAIL_LENGTH])

    def encode_instruct(self, instruct: str) -> tuple[int, ...]:
        """Ids of the whole instruct turn (the official code embeds it unsliced)."""
        return tuple(self.encode(instruct_text(instruct)))

    @staticmethod
    def _check_framing(ids: list[int], empty: list[int], head: int, tail: int, text: str) -> None:
        # The framing around an empty text must be exactly head + tail tokens, and the framed text
        # must start and end with those same tokens; otherwise positional slicing would cut the text.
        if len(empty) != head + tail:
            raise TokenizerError(
                f"chat framing tokenizes to {len(empty)} tokens, expected {head} + {tail}: "
                "the vocabulary must hold 'assistant', 'user' and '\\n' as single tokens"
            )
        if len(ids) < head + tail or ids[:head] != empty[:head] or ids[-tail:] != empty[head:]:
            raise TokenizerError(f"text {text[:40]!r} merges with the chat framing; slicing would cut it")


def _read_json(path: Path) -> object:
    if not path.is_file():
        raise TokenizerError(f"tokenizer file {path} is missing")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TokenizerError(f"tokenizer file {path} is not valid JSON: {exc}") from exc


def _read_vocab(path: Path) -> dict[str, int]:
    vocab = _read_json(path)
    if not isinstance(vocab, dict) or not vocab or not all(isinstance(v, int) for v in vocab.values()):
        raise TokenizerError(f"tokenizer file {path} must map token strings to integer ids")
    return vocab


def _read_merges(path: Path) -> list[tuple[str, str]]:
    """Parse merges.txt the way Qwen2Tokenizer does: skip a `#version:` first line and blank lines."""
    if not path.is_file():
        raise TokenizerError(f"tokenizer file {path} is missing")
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise TokenizerError(f"tokenizer file {path} cannot be read: {exc}") from exc
    merges = []
    for number, raw in enumerate(lines):
        line = raw.strip()
        if (number == 0 and line.startswith("#version:")) or not line:
            continue
        parts = line.split()
        if len(parts) != 2:
            raise TokenizerError(f"tokenizer file {path} line {number + 1} is not a merge pair: {line!r}")
        merges.append((parts[0], parts[1]))
    return merges


def _read_added_tokens(path: Path) -> list[tuple[int, dict]]:
    config = _read_json(path)
    decoder = config.get("added_tokens_decoder") if isinstance(config, dict) else None
    if not isinstance(decoder, dict):
        raise TokenizerError(f"tokenizer file {path} has no added_tokens_decoder")
    try:
        added = sorted((int(token_id), entry) for token_id, entry in decoder.items())
    except ValueError as exc:
        raise TokenizerError(f"tokenizer file {path} has a non-integer added token id: {exc}") from exc
    for token_id, entry in added:
        if not isinstance(entry, dict) or not isinstance(entry.get("content"), str):
            raise TokenizerError(f"tokenizer file {path}: added token {token_id} has no content")
    return added


def _build_tokenizer(vocab: dict[str, int], merges: list[tuple[str, str]], merges_path: Path) -> Tokenizer:
    try:
        model = models.BPE(
            vocab=vocab,
            merges=merges,
            dropout=None,
            unk_token=None,
            continuing_subword_prefix="",
            end_of_word_suffix="",
            fuse_unk=False,
            byte_fallback=False,
        )
    except Exception as exc:  # the Rust side raises a bare Exception for merges outside the vocabulary
        raise TokenizerError(f"tokenizer file {merges_path} does not fit the vocabulary: {exc}") from exc
    tokenizer = Tokenizer(model)
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = qwen2_pre_tokenizer()
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    return tokenizer


def _add_tokens(tokenizer: Tokenizer, added: list[tuple[int, dict]], config_path: Path) -> dict[str, int]:
    """Add each token of `added_tokens_decoder` in id order and check it landed on its declared id."""
    ids = {}
    for token_id, entry in added:
        token = AddedToken(
            entry["content"],
            single_word=bool(entry.get("single_word", False)),
            lstrip=bool(entry.get("lstrip", False)),
            rstrip=bool(entry.get("rstrip", False)),
            normalized=bool(entry.get("normalized", False)),
            special=bool(entry.get("special", False)),
        )
        if token.special:
            tokenizer.add_special_tokens([token])
        else:
            tokenizer.add_tokens([token])
        actual = tokenizer.token_to_id(entry["content"])
        if actual != token_id:
            raise TokenizerError(
                f"tokenizer file {config_path}: added token {entry['content']!r} declares id {token_id} "
                f"but lands on {actual} (ids must follow the vocabulary without gaps)"
            )
        ids[entry["content"]] = token_id
    return ids
