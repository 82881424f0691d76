"""Record the official Qwen2TokenizerFast ids for the tiny vocabulary (run in the reference venv).

Writes tests/fixtures/tokenizer_expectations.json: the sha256 of the vocab.json / merges.txt /
tokenizer_config.json it was made from, and for each probe text the ids that transformers'
`AutoTokenizer` (a `Qwen2TokenizerFast`, as the official Qwen3TTSProcessor uses) returns.
tests/unit/model/test_tokenizer.py compares our TextTokenizer against these ids.

Usage (from the repository root):
    scripts/reference/.venv/bin/python scripts/reference/tokenizer_expectations.py
    scripts/reference/.venv/bin/python scripts/reference/tokenizer_expectations.py --tokenizer-dir DIR
Without --tokenizer-dir the files are written by qwen3tts.model.tiny.vocab into a temporary folder.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUTPUT = REPO / "tests" / "fixtures" / "tokenizer_expectations.json"
HASHED_FILES = ("vocab.json", "merges.txt", "tokenizer_config.json")

PROBES = [
    "Hello world",
    " Hello world",
    "The next train to Zurich departs from platform 7 at 10:45.",
    "I'm sure you're right, but DON'T panic; we'll see. It's 'quoted'.",
    "下一班开往北京的列车将于十点四十五分从七号站台出发。",
    "你好，世界！Hello, world! 12345 和 67890。",
    "Qwen3-TTS 支持中文、English 和数字 3.14159。",
    "Price: $19.99 (incl. VAT) - 20% off until 2026-12-31!",
    "温度：23°C，湿度 45%，风速 3.5 m/s。",
    "１２３ full-width digits, ½ and ² and ٣ are numbers too",
    "Emoji: 🙂👍🏽 👨‍👩‍👧 🇨🇭 ❤️ done",
    "tabs\tand  two spaces   three    four",
    "trailing spaces   ",
    "   leading spaces",
    "line one\nline two\n\nparagraph\r\nwindows line\n",
    "ends with punctuation!\n\n",
    "\n\nstarts with newlines",
    "   \n  \n",
    "",
    " ",
    "\n",
    "日本語のテキストとカタカナ、한국어 텍스트도 있습니다.",
    "Ünïcödé àccents: café, naïve, façade, Zürich, Ångström",
    "cafe\u0301 and caf\u00e9",
    "E-mail: info@example.com; phone +41 44 123 45 67.",
    "“Quoted text,” she said — and then… silence.",
    "<|im_start|>assistant\nHello<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>assistant\n",
    "<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>user\nSpeak slowly and warmly.<|im_end|>\n",
    "<|im_start|>assistant\n我叫通义千问，是阿里云的开源大模型。<|im_end|>\n",
    "special tokens inline: a<tts_pad>b <tts_text_bos> c<tts_text_eod>",
    "<|endoftext|><|im_start|><|im_end|><|audio_start|><|audio_end|>",
    "non-special added tokens: <think>reasoning</think> <tool_call>{}</tool_call>",
    "broken special <|im_start and <tts_pad without closing",
    "assistant user system assistantuser",
]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def render(record: dict) -> str:
    """Indented JSON with one line per case, so a regenerated file diffs case by case."""
    header = {key: value for key, value in record.items() if key != "cases"}
    head = json.dumps(header, ensure_ascii=False, indent=1)[: -len("\n}")]
    lines = ",\n  ".join(json.dumps(case, ensure_ascii=False) for case in record["cases"])
    return f'{head},\n "cases": [\n  {lines}\n ]\n}}\n'


def write_tiny_files(out_dir: Path) -> None:
    sys.path.insert(0, str(REPO / "daemon"))
    from qwen3tts.model.tiny.vocab import write_tokenizer_files

    write_tokenizer_files(out_dir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tokenizer-dir", type=Path, help="existing tokenizer files (default: write tiny ones)"
    )
    parser.add_argument("--out", type=Path, default=OUTPUT)
    args = parser.parse_args()

    import transformers
    from transformers import AutoTokenizer

    with tempfile.TemporaryDirectory() as scratch:
        directory = args.tokenizer_dir or Path(scratch)
        if args.tokenizer_dir is None:
            write_tiny_files(directory)
        tokenizer = AutoTokenizer.from_pretrained(str(directory))
        if type(tokenizer).__name__ != "Qwen2TokenizerFast":
            raise SystemExit(f"expected Qwen2TokenizerFast, got {type(tokenizer).__name__}")
        record = {
            "generator": "scripts/reference/tokenizer_expectations.py",
            "transformers_version": transformers.__version__,
            "tokenizer_class": type(tokenizer).__name__,
            "sha256": {name: sha256(directory / name) for name in HASHED_FILES},
            "vocab_size": len(tokenizer),
            "special_ids": {t: tokenizer.convert_tokens_to_ids(t) for t in tokenizer.added_tokens_encoder},
            "cases": [{"text": text, "ids": tokenizer(text)["input_ids"]} for text in PROBES],
        }
    args.out.write_text(render(record), encoding="utf-8")
    print(f"wrote {len(record['cases'])} cases to {args.out}")


if __name__ == "__main__":
    main()
