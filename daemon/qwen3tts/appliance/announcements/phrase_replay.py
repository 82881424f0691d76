"""Announcements played again without synthesis: from the phrase cache (phrase_cache.py) or, for a
`repeat`, from the first rendition kept in memory.

The key is everything that determines the audio (PhraseCache.key): the pieces of text exactly as the
model gets them (after the lexicon and normalisation), the voice (a registered voice by its content,
so `voice add --replace` is a new key), language, instruct, seed, the bundle's hash and the engine's
sampling settings. Only a whole play is looked up and kept: an announcement resumed from a later
sentence is synthesised, and audio is stored only when it played out completely and was not cut.
`"cache": false` in a message bypasses both ways (looked up never, kept never, its repeats synthesised
again). `cache.enabled: false` turns the disk cache off (`cache` None here: nothing is written to disk);
a `repeat` still replays its first rendition. That is not a cache: the samples belong to the one
announcement, live in memory only until its last play (then they are released) and never outlive the
process. A repeat is the same announcement played again, so listeners hear the same words the same way
(a fresh synthesis samples new prosody), and the engine is not spent on audio it already made.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping

import numpy as np

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.announcements.phrase_cache import PhraseCache
from qwen3tts.appliance.announcements.piece_audio import piece_key
from qwen3tts.appliance.announcements.play import PiecePlay, Play
from qwen3tts.appliance.audio.sinks import MODEL_RATE
from qwen3tts.errors import BundleError
from qwen3tts.text import Piece
from qwen3tts.voices import bundle_hash
from qwen3tts.voices.catalog import VoiceCatalog

log = logging.getLogger(__name__)


class PhraseReplay:
    """Looks announcements up before synthesis and keeps finished ones; called from the announcer's loop."""

    def __init__(
        self,
        cache: PhraseCache | None,
        *,
        bundle_hash: str,
        sampling: Mapping[str, object],
        voice_identity=lambda voice: voice,
    ):
        self.cache = cache
        self.bundle_hash = bundle_hash
        self.sampling = dict(sampling)
        self.voice_identity = voice_identity
        """voice name -> what identifies its sound (VoiceCatalog.identity; a preset is its name)."""
        self._repeats: dict[str, np.ndarray] = {}
        """The first rendition of each announcement that plays again, by id, until its last play."""

    @classmethod
    def from_settings(cls, settings, engine, voices: VoiceCatalog) -> PhraseReplay:
        """The daemon's: the phrase directory when `cache.enabled`, keyed to the loaded bundle and the
        engine's sampling defaults; a directory that cannot be made leaves replays of repeats only."""
        cache = None
        if settings.cache.enabled and settings.cache.phrase_dir is not None:
            try:
                cache = PhraseCache(settings.cache.phrase_dir, settings.cache.max_bytes)
            except OSError as exc:
                log.warning(
                    "phrase cache %s unusable (%s); only repeats are replayed",
                    settings.cache.phrase_dir,
                    exc,
                )
        try:
            digest = bundle_hash(settings.model.bundle)
        except (BundleError, OSError) as exc:  # no manifest (a runtime test double): nothing else shares it
            log.warning("phrase cache: no bundle hash for %s (%s)", settings.model.bundle, exc)
            digest = ""
        sampling = dataclasses.asdict(engine.config.sampling)
        if settings.engine.text_track != "auto":  # another prompt layout, other audio (auto: the keys
            sampling["text_track"] = settings.engine.text_track  # of the phrases cached before stay)
        return cls(
            cache,
            bundle_hash=digest,
            sampling=sampling,
            voice_identity=voices.identity,
        )

    @staticmethod
    def allowed(ann: Announcement) -> bool:
        return ann.cache is not False

    def key(self, pieces: list[str], voice: str | None, language: str, instruct: str | None, seed) -> str:
        return PhraseCache.key(
            " ".join(pieces),
            voice=self.voice_identity(voice),
            language=language,
            instruct=instruct,
            seed=seed,
            bundle_hash=self.bundle_hash,
            sampling=self.sampling,
        )

    def start(
        self, play: Play, pieces: list[Piece], voice: str | None, language: str, instruct: str | None
    ) -> None:
        """A new play of all of `pieces` (the whole text) in `voice`, `language`, `instruct`: found (the
        first rendition first, then the cache), it becomes one complete piece whose audio is all in its
        track and plays without synthesis; else its PCM is collected for `keep` as it is synthesised."""
        key = self.key([piece_key(piece) for piece in pieces], voice, language, instruct, play.ann.seed)
        pcm = self._lookup(play, key)
        if pcm is None:
            play.rendition = [] if play.first == 0 and self.allowed(play.ann) else None
            play.rendition_key = key
            return
        whole = " ".join(piece.normalized for piece in pieces)
        play.pieces = [PiecePlay(Piece(play.ann.text, whole, 0, len(play.ann.text)), end=len(pcm))]
        play.track.put(pcm)
        play.track.close()
        play.from_cache = True
        log.info("%s: %.1f s of audio from the phrase cache, no synthesis", play.id, len(pcm) / MODEL_RATE)

    def _lookup(self, play: Play, key: str) -> np.ndarray | None:
        if play.first != 0 or not self.allowed(play.ann):
            return None
        if play.ann.id in self._repeats:
            return self._repeats[play.ann.id]
        return self.cache.get(key) if self.cache is not None else None

    def keep(self, play: Play, plays_again: bool) -> None:
        """`play` played out completely and was not cut: store its audio (and keep it for a repeat)."""
        chunks, play.rendition = play.rendition, None
        if not plays_again:
            self.forget(play.ann.id)  # its last play: the rendition kept for the repeats is released
        if play.from_cache or chunks is None or not self.allowed(play.ann):
            return
        pcm = np.concatenate(chunks) if chunks else np.zeros(0, np.float32)
        if pcm.size == 0:
            return
        if plays_again:
            self._repeats[play.ann.id] = pcm
        if self.cache is not None and play.rendition_key is not None:
            stored = self.cache.put(play.rendition_key, pcm)
            log.info("%s: %s the phrase cache", play.id, "stored in" if stored else "too large for")

    def kept_for_repeats(self, ann_id: str) -> bool:
        return ann_id in self._repeats

    def forget(self, ann_id: str) -> None:
        """The announcement is gone (its last play, cancelled, failed, expired): release its rendition."""
        self._repeats.pop(ann_id, None)

    def stats(self) -> dict[str, int]:
        if self.cache is None:
            return {}
        s = self.cache.stats()
        return {
            "entries": s.entries,
            "bytes": s.bytes,
            "max_bytes": s.max_bytes,
            "hits": s.hits,
            "misses": s.misses,
            "evictions": s.evictions,
        }
