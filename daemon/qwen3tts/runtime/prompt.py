"""Two-track prompt embeddings: text track + codec track summed per position.

Mirrors the prompt assembly of `Qwen3TTSForConditionalGeneration.generate` (official package):

    [instruct turn]  role(3)  codec prefix + [speaker] + pad (text: tts_pad.. tts_bos)  body

Body, non-streaming text: every text token + tts_eos on codec_pad, then tts_pad + codec_bos; the
trailing text track is empty (every later step adds tts_pad). Streaming text: the first text token
+ codec_bos; the trailing text track is the remaining tokens then tts_eos.
All lookups are rows of tables precomputed at build time (the projected text table, the talker's
codec table), so building a prompt costs a few array reads.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from qwen3tts.engine.sequence import Prompt, Request
from qwen3tts.errors import RequestError
from qwen3tts.model.spec import ModelSpec
from qwen3tts.model.tokenizer import TextTokenizer

DIALECT_LANGUAGES = ("chinese", "auto")  # the official dialect override applies only to these

XVectorSource = Callable[[str | None], np.ndarray | None]  # ref_audio path (None = default) -> x-vector


class PromptBuilder:
    """`builder(request) -> Prompt` from the bundle's tokenizer and tables (engine.PromptBuilder)."""

    def __init__(
        self,
        spec: ModelSpec,
        tokenizer: TextTokenizer,
        text_table: np.ndarray,
        codec_table: np.ndarray,
        xvectors: XVectorSource | None = None,
    ):
        self.spec = spec
        self.tokenizer = tokenizer
        self.text_table = text_table  # [text_vocab, hidden], may be a read-only memory map
        self.codec_table = codec_table  # [codec_vocab, hidden]
        self.xvectors = xvectors

    def text(self, ids) -> np.ndarray:
        return np.asarray(self.text_table[np.asarray(ids, dtype=np.int64)], dtype=np.float32)  # [n, hidden]

    def codec(self, ids) -> np.ndarray:
        return np.asarray(self.codec_table[np.asarray(ids, dtype=np.int64)], dtype=np.float32)  # [n, hidden]

    def validate(self, request: Request) -> None:
        """Reject what the official code would reject (or silently ignore) with a clear message."""
        spec = self.spec
        if not request.text or not request.text.strip():
            raise RequestError("text is empty")
        language = request.language.lower()
        if language != "auto" and language not in spec.languages:
            known = ", ".join(["auto", *sorted(spec.languages)])
            raise RequestError(f"unknown language {request.language!r} (known: {known})")
        if request.speaker and request.speaker.lower() not in spec.speakers:
            known = ", ".join(sorted(spec.speakers)) or "none: this bundle has no preset speakers"
            raise RequestError(f"unknown voice {request.speaker!r} (known: {known})")
        if request.instruct and not spec.supports_instruct:
            raise RequestError(f"instruct is not supported by a {spec.size} {spec.variant} model")
        if request.ref_audio and spec.variant != "base":
            raise RequestError(f"a reference voice needs a Base model, this bundle is {spec.variant}")

    def __call__(self, request: Request) -> Prompt:
        self.validate(request)
        target = self.tokenizer.encode_target(request.text)
        ids = self.spec.text_ids
        bos, eos, pad = self.text([ids.tts_bos, ids.tts_eos, ids.tts_pad])  # 3 x [hidden]
        codec_prefix = self._codec_prefix(request)  # [n, hidden], ends with codec_pad, codec_bos
        parts = []
        if request.instruct:
            parts.append(self.text(self.tokenizer.encode_instruct(request.instruct)))
        parts.append(self.text(target.role))
        n = codec_prefix.shape[0]
        text_track = np.concatenate([np.repeat(pad[None], n - 2, 0), bos[None]])  # [n-1, hidden]
        parts.append(text_track + codec_prefix[:-1])
        body, trailing = self._body(target.text, codec_prefix[-1], eos, pad, self._non_streaming(request))
        parts.append(body)
        return Prompt(np.concatenate(parts).astype(np.float32), trailing, pad.astype(np.float32))

    def _non_streaming(self, request: Request) -> bool:
        """The official wrapper's default: whole text up front, except for Base (dual-track)."""
        if request.non_streaming is not None:
            return request.non_streaming
        return self.spec.variant != "base"

    def _codec_prefix(self, request: Request) -> np.ndarray:
        spec, codec_ids = self.spec, self.spec.codec_ids
        language = request.language.lower()
        language_id = None if language == "auto" else spec.languages[language]
        speaker = request.speaker.lower() if request.speaker else None
        dialect = spec.speaker_dialects.get(speaker) if speaker else None
        if dialect and language in DIALECT_LANGUAGES:
            language_id = spec.languages[dialect]
        if language_id is None:
            tags = [codec_ids.nothink, codec_ids.think_bos, codec_ids.think_eos]
        else:
            tags = [codec_ids.think, codec_ids.think_bos, language_id, codec_ids.think_eos]
        rows = [self.codec(tags)]
        speaker_row = self._speaker_row(speaker, request.ref_audio)
        if speaker_row is not None:
            rows.append(speaker_row)
        rows.append(self.codec([codec_ids.pad, codec_ids.bos]))
        return np.concatenate(rows)

    def _speaker_row(self, speaker: str | None, ref_audio: str | None) -> np.ndarray | None:
        if speaker:
            return self.codec([self.spec.speakers[speaker]])
        if self.spec.variant == "base" and self.xvectors is not None:
            xvector = self.xvectors(ref_audio)
            if xvector is not None:
                return np.asarray(xvector, np.float32).reshape(1, -1)  # [1, hidden]
        return None

    def _body(self, text_ids, codec_bos, eos, pad, non_streaming: bool):
        hidden = pad.shape[0]
        if non_streaming:
            text_track = np.concatenate([self.text(text_ids), eos[None]])  # [t+1, hidden]
            codec_pad = self.codec([self.spec.codec_ids.pad])  # [1, hidden]
            body = np.concatenate([text_track + codec_pad, (pad + codec_bos)[None]])
            return body, np.zeros((0, hidden), np.float32)
        first = self.text(text_ids[:1]) + codec_bos  # [1, hidden]
        trailing = np.concatenate([self.text(text_ids[1:]), eos[None]]).astype(np.float32)
        return first, trailing
