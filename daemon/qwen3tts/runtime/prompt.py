"""Two-track prompt embeddings: text track + codec track summed per position.

Mirrors the prompt assembly of `Qwen3TTSForConditionalGeneration.generate` (official package):

    [instruct turn]  role(3)  codec prefix + [speaker] + pad (text: tts_pad.. tts_bos)  body

Body, non-streaming text: every text token + tts_eos on codec_pad, then tts_pad + codec_bos; the
trailing text track is empty (every later step adds tts_pad). Streaming text: the first text token
+ codec_bos; the trailing text track is the remaining tokens then tts_eos.

Base ICL voice cloning (`generate_icl_prompt`) replaces the body: the text track is the reference
transcript, then the target text, then tts_eos; the codec track is codec_bos, then one summed
16-code embedding per reference frame. Non-streaming: the text track on codec_pad, then the codec
track on tts_pad. Streaming: the two tracks summed position by position for as long as the codec
track lasts; text left over becomes the trailing text, a shorter text is padded with tts_pad.
The reference codes also become the prompt's codec context: the official wrapper decodes them
before the generated codes and cuts their audio off, so the first generated frames are heard with
the reference as the decoder's left context.
All lookups are rows of tables precomputed at build time (the projected text table, the talker's
codec table), so building a prompt costs a few array reads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import get_args

import numpy as np

from qwen3tts.engine.sequence import Prompt, Request
from qwen3tts.errors import RequestError
from qwen3tts.model.spec import ModelSpec
from qwen3tts.model.tokenizer import TextTokenizer
from qwen3tts.runtime.cloning import VoiceInputs
from qwen3tts.settings.engine import TextTrack

TEXT_TRACKS = get_args(TextTrack)
DIALECT_LANGUAGES = ("chinese", "auto")  # the official dialect override applies only to these

# ref_audio path (None = the configured default) -> x-vector, or the full voice inputs
XVectorSource = Callable[[str | None], np.ndarray | VoiceInputs | None]


class PromptBuilder:
    """`builder(request) -> Prompt` from the bundle's tokenizer and tables (engine.PromptBuilder)."""

    def __init__(
        self,
        spec: ModelSpec,
        tokenizer: TextTokenizer,
        text_table: np.ndarray,
        codec_table: np.ndarray,
        xvectors: XVectorSource | None = None,
        predictor_tables: np.ndarray | None = None,
        text_track: str = "auto",
    ):
        if text_track not in TEXT_TRACKS:
            raise ValueError(f"text_track must be one of {', '.join(TEXT_TRACKS)}, got {text_track!r}")
        self.spec = spec
        self.text_track = text_track  # engine.text_track: a request's own non_streaming overrides it
        self.tokenizer = tokenizer
        self.text_table = text_table  # [text_vocab, hidden], may be a read-only memory map
        self.codec_table = codec_table  # [codec_vocab, hidden]
        self.xvectors = xvectors
        self.predictor_tables = predictor_tables  # [groups - 1, codebook, hidden]: ICL reference frames
        self.voices: dict[str, VoiceInputs] = {}  # request.ref_audio key -> precomputed voice inputs

    def register_voice(self, key: str, voice: VoiceInputs) -> None:
        """Requests whose `ref_audio` is `key` speak with `voice` (x-vector only, or ICL)."""
        if self.spec.variant != "base":
            raise RequestError(f"a reference voice needs a Base model, this bundle is {self.spec.variant}")
        hidden = self.codec_table.shape[1]
        if voice.xvector.shape[0] != hidden:
            raise RequestError(f"x-vector has {voice.xvector.shape[0]} values, this model needs {hidden}")
        if voice.icl:
            self._check_icl(voice)
        self.voices[key] = voice

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
        voice = self._voice(request)
        codec_prefix = self._codec_prefix(request, voice)  # [n, hidden], ends with codec_pad, codec_bos
        parts = []
        if request.instruct:
            parts.append(self.text(self.tokenizer.encode_instruct(request.instruct)))
        parts.append(self.text(target.role))
        n = codec_prefix.shape[0]
        text_track = np.concatenate([np.repeat(pad[None], n - 2, 0), bos[None]])  # [n-1, hidden]
        parts.append(text_track + codec_prefix[:-1])
        context = None
        if voice is not None and voice.icl:
            body, trailing = self._icl_body(voice, target.text, eos, pad, self._non_streaming(request))
            context = np.asarray(voice.ref_codes, np.int64)  # the codec decodes the reference first
        else:
            body, trailing = self._body(target.text, codec_prefix[-1], eos, pad, self._non_streaming(request))
        parts.append(body)
        embeddings = np.concatenate(parts).astype(np.float32)
        return Prompt(embeddings, trailing, pad.astype(np.float32), codec_context=context)

    def _non_streaming(self, request: Request) -> bool:
        """The request's layout, else engine.text_track, else the official wrapper's default: whole
        text up front, except for Base (dual-track)."""
        if request.non_streaming is not None:
            return request.non_streaming
        if self.text_track != "auto":
            return self.text_track == "whole"
        return self.spec.variant != "base"

    def _codec_prefix(self, request: Request, voice: VoiceInputs | None) -> np.ndarray:
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
        if speaker:
            rows.append(self.codec([spec.speakers[speaker]]))
        elif voice is not None:
            rows.append(np.asarray(voice.xvector, np.float32).reshape(1, -1))  # [1, hidden]
        rows.append(self.codec([codec_ids.pad, codec_ids.bos]))
        return np.concatenate(rows)

    def _voice(self, request: Request) -> VoiceInputs | None:
        """Base: the registered voice for request.ref_audio, else the x-vector source's answer."""
        if self.spec.variant != "base" or request.speaker:
            return None
        if request.ref_audio is not None and request.ref_audio in self.voices:
            return self.voices[request.ref_audio]
        found = self.xvectors(request.ref_audio) if self.xvectors is not None else None
        if found is None or isinstance(found, VoiceInputs):
            return found
        return VoiceInputs(np.asarray(found, np.float32).reshape(-1))

    def _check_icl(self, voice: VoiceInputs) -> None:
        if self.predictor_tables is None:
            raise RequestError("this bundle has no code predictor tables: rebuild it for ICL voice cloning")
        groups, codebook = self.predictor_tables.shape[0] + 1, self.predictor_tables.shape[1]
        codes, ids = voice.ref_codes, voice.ref_text_ids
        if codes.shape[1] != groups or codes.min() < 0 or codes.max() >= codebook:
            raise RequestError(f"reference codes must be (frames, {groups}) in [0, {codebook})")
        if ids.min() < 0 or ids.max() >= self.text_table.shape[0]:
            raise RequestError("reference text ids lie outside this bundle's text vocabulary")

    def _frames(self, codes: np.ndarray) -> np.ndarray:
        """Summed codec embeddings of whole frames codes [F, groups] -> [F, hidden] (as a decode input)."""
        groups = np.arange(self.predictor_tables.shape[0])
        rest = np.asarray(
            self.predictor_tables[groups[None, :], codes[:, 1:]], np.float32
        )  # [F, groups-1, H]
        return self.codec(codes[:, 0]) + rest.sum(axis=1, dtype=np.float32)

    def _icl_body(self, voice: VoiceInputs, text_ids, eos, pad, non_streaming: bool):
        """`generate_icl_prompt`: reference + target text track against codec_bos + reference frames."""
        self._check_icl(voice)
        hidden = pad.shape[0]
        ids = np.concatenate([voice.ref_text_ids, np.asarray(text_ids, np.int64)])
        text_track = np.concatenate([self.text(ids), eos[None]])  # [r + t + 1, hidden]
        codec_track = np.concatenate(
            [self.codec([self.spec.codec_ids.bos]), self._frames(voice.ref_codes)]
        )  # [F + 1, hidden]
        none = np.zeros((0, hidden), np.float32)
        if non_streaming:
            body = np.concatenate([text_track + self.codec([self.spec.codec_ids.pad]), codec_track + pad])
            return body, none
        n_text, n_codec = text_track.shape[0], codec_track.shape[0]
        if n_text > n_codec:
            return text_track[:n_codec] + codec_track, text_track[n_codec:].astype(np.float32)
        padded = np.concatenate([text_track, np.repeat(pad[None], n_codec - n_text, 0)])
        return padded + codec_track, none

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
