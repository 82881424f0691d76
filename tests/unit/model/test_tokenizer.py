"""TextTokenizer against the official Qwen2TokenizerFast, and the tiny vocabulary it is tested on."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from qwen3tts.errors import TokenizerError
from qwen3tts.model.tiny import vocab as tiny_vocab
from qwen3tts.model.tokenizer import TextTokenizer, assistant_text, instruct_text, ref_text

EXPECTATIONS_PATH = Path(__file__).resolve().parents[2] / "fixtures" / "tokenizer_expectations.json"
EXPECTATIONS = json.loads(EXPECTATIONS_PATH.read_text(encoding="utf-8"))
CASES = EXPECTATIONS["cases"]
REGENERATE = "regenerate with: scripts/reference/.venv/bin/python scripts/reference/tokenizer_expectations.py"
FILES = ("vocab.json", "merges.txt", "tokenizer_config.json")


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("tiny_tokenizer")
    tiny_vocab.write_tokenizer_files(directory)
    return directory


@pytest.fixture(scope="module")
def tokenizer(tiny_dir) -> TextTokenizer:
    return TextTokenizer.from_dir(tiny_dir)


def expected_ids(text: str) -> list[int]:
    matches = [case["ids"] for case in CASES if case["text"] == text]
    assert len(matches) == 1, f"probe {text!r} missing from the expectations; {REGENERATE}"
    return matches[0]


def write_byte_vocab(directory: Path, merges: list[tuple[str, str]]) -> None:
    """A hand-made tokenizer dir: the byte alphabet plus `merges`, with <|im_start|>/<|im_end|> added."""
    vocab = {symbol: index for index, symbol in enumerate(tiny_vocab.bytes_to_unicode().values())}
    for left, right in merges:
        vocab.setdefault(left + right, len(vocab))
    config = {
        "added_tokens_decoder": {
            str(len(vocab) + offset): {"content": content, "special": True, "normalized": False}
            for offset, content in enumerate(("<|im_start|>", "<|im_end|>"))
        }
    }
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    lines = "".join(f"{left} {right}\n" for left, right in merges)
    (directory / "merges.txt").write_text("#version: 0.2\n" + lines, encoding="utf-8")
    (directory / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")


def chain_merges(word: str) -> list[tuple[str, str]]:
    """Merges that build `word` left to right (a+s, as+s, ass+i, ...)."""
    return [(word[:end], word[end]) for end in range(1, len(word))]


# --- the expectations are current ---------------------------------------------------------------


def test_expectations_were_made_from_the_files_tiny_vocab_writes_today(tiny_dir):
    for name in FILES:
        actual = hashlib.sha256((tiny_dir / name).read_bytes()).hexdigest()
        assert actual == EXPECTATIONS["sha256"][name], f"{name} changed since the expectations; {REGENERATE}"


def test_expectations_come_from_the_official_fast_tokenizer_and_cover_enough_probes():
    assert EXPECTATIONS["tokenizer_class"] == "Qwen2TokenizerFast"
    assert len(CASES) >= 30
    assert any("\n" in case["text"] for case in CASES)
    assert any("<|im_start|>" in case["text"] for case in CASES)


# --- ids equal the official tokenizer's ---------------------------------------------------------


@pytest.mark.reference
@pytest.mark.parametrize("case", CASES, ids=[f"case{index}" for index in range(len(CASES))])
def test_encode_returns_exactly_the_official_ids(tokenizer, case):
    assert tokenizer.encode(case["text"]) == case["ids"], f"text {case['text']!r}"


@pytest.mark.reference
def test_added_token_ids_match_the_official_tokenizer_and_write_tokenizer_files(tiny_dir, tokenizer):
    returned = tiny_vocab.write_tokenizer_files(tiny_dir / "again")
    assert returned == EXPECTATIONS["special_ids"]
    assert tokenizer.special_ids == EXPECTATIONS["special_ids"]
    assert tokenizer.vocab_size == EXPECTATIONS["vocab_size"] == tiny_vocab.VOCAB_SIZE


def test_tts_specials_keep_their_release_offsets_from_endoftext(tokenizer):
    # Release: <|endoftext|> 151643, <|im_start|> 151644, <|im_end|> 151645, <tts_pad> 151671,
    # <tts_text_bos> 151672, <tts_text_eod> 151673.
    base = tokenizer.token_id("<|endoftext|>")
    assert base == tiny_vocab.NUM_BASE_TOKENS
    offsets = {
        token: tokenizer.token_id(token) - base
        for token in ("<|im_start|>", "<|im_end|>", "<tts_pad>", "<tts_text_bos>", "<tts_text_eod>")
    }
    assert offsets == {
        "<|im_start|>": 1,
        "<|im_end|>": 2,
        "<tts_pad>": 28,
        "<tts_text_bos>": 29,
        "<tts_text_eod>": 30,
    }


@pytest.mark.reference
def test_instruct_and_reference_texts_encode_like_the_official_prompt(tokenizer):
    instruct = "Speak slowly and warmly."
    assert list(tokenizer.encode_instruct(instruct)) == expected_ids(instruct_text(instruct))
    reference = "我叫通义千问，是阿里云的开源大模型。"
    assert list(tokenizer.encode_ref_text(reference)) == expected_ids(ref_text(reference))[3:-2]


# --- the tiny vocabulary ------------------------------------------------------------------------


def test_write_tokenizer_files_writes_identical_bytes_every_time(tmp_path):
    first = tiny_vocab.write_tokenizer_files(tmp_path / "first")
    second = tiny_vocab.write_tokenizer_files(tmp_path / "second")
    assert first == second
    for name in FILES:
        assert (tmp_path / "first" / name).read_bytes() == (tmp_path / "second" / name).read_bytes(), name


def test_tiny_vocabulary_is_a_byte_level_bpe_of_a_few_hundred_merges(tiny_dir):
    vocab = json.loads((tiny_dir / "vocab.json").read_text(encoding="utf-8"))
    merges = (tiny_dir / "merges.txt").read_text(encoding="utf-8").splitlines()
    assert merges[0] == "#version: 0.2"
    assert len(merges) - 1 == tiny_vocab.NUM_MERGES
    assert list(vocab)[:256] == list(tiny_vocab.bytes_to_unicode().values())
    assert len(set(tiny_vocab.bytes_to_unicode().values())) == 256
    assert sorted(vocab.values()) == list(range(tiny_vocab.NUM_BASE_TOKENS))
    assert {"assistant", "user"} <= set(vocab)
    assert tiny_vocab.VOCAB_SIZE < 1000


def test_tokenizer_config_has_the_release_fields(tiny_dir):
    config = json.loads((tiny_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["tokenizer_class"] == "Qwen2Tokenizer"
    assert (config["bos_token"], config["unk_token"]) == (None, None)
    assert (config["eos_token"], config["pad_token"]) == ("<|im_end|>", "<|endoftext|>")
    assert config["errors"] == "replace"
    assert config["split_special_tokens"] is False and config["clean_up_tokenization_spaces"] is False
    assert "<tts_pad>" in config["additional_special_tokens"]
    entry = config["added_tokens_decoder"][str(tiny_vocab.NUM_BASE_TOKENS + 28)]
    assert entry == {
        "content": "<tts_pad>",
        "lstrip": False,
        "normalized": False,
        "rstrip": False,
        "single_word": False,
        "special": True,
    }


# --- chat framing -------------------------------------------------------------------------------


def test_chat_framing_is_three_role_tokens_and_five_closing_tokens(tokenizer):
    role = [tokenizer.token_id("<|im_start|>"), tokenizer.token_id("assistant"), tokenizer.token_id("Ċ")]
    assert tokenizer.encode("<|im_start|>assistant\n") == role
    assert tokenizer.encode("<|im_end|>\n<|im_start|>assistant\n") == [
        tokenizer.token_id("<|im_end|>"),
        role[2],
        *role,
    ]


def test_encode_target_splits_role_and_text_as_the_official_slicing(tokenizer):
    text = "你好，世界！Hello, world! 12345 和 67890。"
    target = tokenizer.encode_target(text)
    full = tokenizer.encode(assistant_text(text))
    assert list(target.ids) == full
    assert list(target.role) == full[:3]
    assert list(target.text) == full[3:-5] == tokenizer.encode(text)


def test_encode_target_rejects_a_vocabulary_without_a_single_assistant_token(tmp_path):
    write_byte_vocab(tmp_path, merges=[])
    with pytest.raises(TokenizerError, match="assistant"):
        TextTokenizer.from_dir(tmp_path).encode_target("hi")


def test_encode_target_rejects_text_that_merges_into_the_role_newline(tmp_path):
    write_byte_vocab(tmp_path, merges=[*chain_merges("assistant"), ("Ċ", "Ċ")])
    tokenizer = TextTokenizer.from_dir(tmp_path)
    assert len(tokenizer.encode_target("hi").text) == 2
    with pytest.raises(TokenizerError, match="framing"):
        tokenizer.encode_target("\nhi")


# --- normalization and decoding -----------------------------------------------------------------


def test_decomposed_and_composed_accents_encode_identically(tokenizer):
    decomposed, composed = "cafe\u0301 na\u0131\u0308ve", "caf\u00e9 na\u0131\u0308ve"
    assert decomposed != composed
    assert tokenizer.encode(decomposed) == tokenizer.encode(composed)
    assert tokenizer.encode("e\u0301") == tokenizer.encode("\u00e9")


@pytest.mark.parametrize("text", ["Hello, 世界! 123", "Emoji: 🙂👍🏽 🇨🇭", "a\n\n b\t c  "])
def test_decode_inverts_encode(tokenizer, text):
    assert tokenizer.decode(tokenizer.encode(text)) == text


# --- bad files ----------------------------------------------------------------------------------


@pytest.mark.parametrize("missing", FILES)
def test_a_missing_file_raises_tokenizer_error_naming_it(tiny_dir, tmp_path, missing):
    for name in FILES:
        if name != missing:
            (tmp_path / name).write_bytes((tiny_dir / name).read_bytes())
    with pytest.raises(TokenizerError, match=missing.replace(".", r"\.")):
        TextTokenizer.from_dir(tmp_path)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("vocab.json", "{not json", "vocab.json is not valid JSON"),
        ("vocab.json", "[1, 2]", "vocab.json must map"),
        ("merges.txt", "#version: 0.2\nĠ t h\n", "merges.txt line 2"),
        ("merges.txt", "#version: 0.2\nĠ ZZZ\n", "merges.txt does not fit"),
        ("tokenizer_config.json", "{}", "no added_tokens_decoder"),
        ("tokenizer_config.json", '{"added_tokens_decoder": {"9999": {"content": "<x>"}}}', "lands on"),
    ],
)
def test_bad_file_content_raises_tokenizer_error_naming_the_file(tiny_dir, tmp_path, name, content, message):
    for file_name in FILES:
        (tmp_path / file_name).write_bytes((tiny_dir / file_name).read_bytes())
    (tmp_path / name).write_text(content, encoding="utf-8")
    with pytest.raises(TokenizerError, match=message):
        TextTokenizer.from_dir(tmp_path)


# --- release scale ------------------------------------------------------------------------------


def release_sized_merges(num_base_tokens: int) -> list[tuple[str, str]]:
    """The role words' merges, then distinct two- and three-symbol filler merges up to the size."""
    alphabet = list(tiny_vocab.bytes_to_unicode().values())
    merges = chain_merges("assistant") + chain_merges("user")
    seen = {left + right for left, right in merges}
    pairs = ((a, b) for a in alphabet for b in alphabet)
    triples = ((a + b, c) for a in alphabet for b in alphabet for c in alphabet)
    for source in (pairs, triples):
        for left, right in source:
            if len(merges) == num_base_tokens - len(alphabet):
                return merges
            if left + right not in seen:
                seen.add(left + right)
                merges.append((left, right))
    raise AssertionError("not enough filler merges")


def test_a_release_sized_vocabulary_places_the_tts_specials_at_their_release_ids(tmp_path):
    # 151643 base tokens as in Qwen2/Qwen3, then the release's added tokens from 151643 on.
    write_byte_vocab(tmp_path, release_sized_merges(151643))
    config = tiny_vocab.tokenizer_config(151643)
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    tokenizer = TextTokenizer.from_dir(tmp_path)
    assert tokenizer.vocab_size == 151643 + len(tiny_vocab.ADDED_TOKENS)
    assert [tokenizer.token_id(t) for t in ("<tts_pad>", "<tts_text_bos>", "<tts_text_eod>")] == [
        151671,
        151672,
        151673,
    ]
    assert tokenizer.encode("<|im_start|>assistant\n") == [151644, tokenizer.token_id("assistant"), 198]
    assert len(tokenizer.encode_target("Hello world, 你好").role) == 3
