"""Synthesis ahead of playback: which pieces go to the engine now, and their PCM into tracks.

Called from the announcer's loop, except `read` (any thread: where an announcement is handed over).
Pieces are submitted in play order (the current announcement's, then the waiting ones'), while the audio
before a piece is shorter than `announcements.lookahead_s`, fewer requests run than the engine's batch
limit (the thermal governor sets it) and one more stream would not slow them below real time (pace.py);
the piece that plays next always goes, and an emergency's ignore the limits. PCM is taken from the engine
handles without waiting and put into the play's track in piece order (a later piece's waits in its handle).
A piece's SSML marks shape its audio (piece_audio.py): silence around it, a chime instead of synthesis, its
rate; its language and voice go into its request.
"""

from __future__ import annotations

import itertools
import logging
import time
from dataclasses import replace

import numpy as np

from qwen3tts.appliance.announcements import pace
from qwen3tts.appliance.announcements.announcement import Announcement, Cut
from qwen3tts.appliance.announcements.media import fill, media_play
from qwen3tts.appliance.announcements.phrase_replay import PhraseReplay
from qwen3tts.appliance.announcements.piece_audio import PieceAudio
from qwen3tts.appliance.announcements.play import PiecePlay, Play
from qwen3tts.appliance.audio.sinks import MODEL_RATE
from qwen3tts.appliance.audio.track import Track
from qwen3tts.appliance.priority import Priority
from qwen3tts.appliance.systemd.supervisor import isolated
from qwen3tts.engine.engine import Engine
from qwen3tts.engine.runaway import runaway_warning
from qwen3tts.errors import RequestError
from qwen3tts.settings import Settings
from qwen3tts.synthesis import SpeechDefaults, TextOptions, read_pieces, sentence_request, speaks
from qwen3tts.voices.catalog import VoiceCatalog

log = logging.getLogger(__name__)

CHARS_PER_SECOND = 14.0  # rough speaking rate, for the look-ahead horizon before a piece is synthesised


class LookAhead:
    """Prepares announcements, submits due pieces, moves their PCM; keeps the measured real-time factor."""

    def __init__(
        self, engine: Engine, settings: Settings, defaults: SpeechDefaults, text: TextOptions,
        voices: VoiceCatalog, replay: PhraseReplay | None = None, sounds: PieceAudio | None = None,
    ):  # fmt: skip
        self.engine = engine
        self.settings = settings
        self.defaults = defaults
        """What an announcement that names no voice, language or instruct gets (voice/set changes it)."""
        self.text = text
        self.voices = voices
        self.replay = replay
        """Plays whole announcements again from the phrase cache; None synthesises everything."""
        self.sounds = sounds or PieceAudio()
        """The audio of the pieces' SSML marks (silence, chimes, rate)."""
        self.rtf: float | None = None
        """EWMA of synthesis time / audio time of one stream, once it produces audio."""
        self.first_pcm_s: float | None = None
        """EWMA of the wait from a sentence's submission to its first PCM (its prompt's prefill)."""
        self.chunk_gap_s: float | None = None  # EWMA of the wait between two PCM chunks of a sentence
        self._request_ids = itertools.count()

    # ---- what plays, and how long it takes ----

    def read(self, ann: Announcement) -> Announcement:
        """`ann` with its text read: its pieces as the model gets them and the reader's warnings, or why
        it cannot be read. Any thread: the announcer calls it where an announcement is handed over
        (`Announcer.enqueue`, the spool's replay), so its own loop never waits on the text front end (a
        worker process when guarded, text/guard.py)."""
        if ann.pieces or ann.unreadable is not None or ann.media is not None:
            return ann  # read already, or nothing to read (media)
        language = ann.lang or self.defaults.language
        chimes = self.sounds.chime_names()
        try:
            pieces, reading = read_pieces(ann.text, language, self.text, ann.normalize, ann.ssml, chimes)
        except RequestError as exc:
            return replace(ann, unreadable=str(exc))
        return replace(ann, pieces=tuple(pieces), reading=reading)

    def prepare(self, ann: Announcement, use_cache: bool = False) -> Play:
        """A new play of `ann` from its `cursor`, over the pieces its text was read as (RequestError when
        it could not be read; one never handed over, as a test may queue it, is read here). With
        `use_cache`, a whole play found in the phrase cache is one complete piece, all in its track.
        Media plays from its samples (media.py)."""
        if ann.media is not None:
            return media_play(ann)
        ann = self.read(ann)
        if ann.unreadable is not None:
            raise RequestError(ann.unreadable)
        pieces = list(ann.pieces)
        first = min(ann.cursor, len(pieces) - 1)
        play = Play(ann, [PiecePlay(piece) for piece in pieces[first:]], Track(ann.id), first, ann.reading)
        if use_cache and self.replay is not None:
            voice, instruct = ann.voice or self.defaults.voice, ann.instruct or self.defaults.instruct
            self.replay.start(play, pieces, voice, ann.lang or self.defaults.language, instruct)
        return play

    def start_threshold(self, play: Play) -> int:
        """Samples to hold back before speech starts so that the play never runs dry: the shortfall over
        all it will say at one stream's speed now (revised every turn until speech starts; pace.py)."""
        jitter_ms = self.settings.audio.jitter_buffer_ms
        if not play.pieces or play.complete:
            return pace.jitter_threshold(jitter_ms, None, None)
        expected = sum(self.estimate(play, index) for index in range(play.playing_end))
        waiting = sum(p.handle is None and speaks(p.piece) for p in play.pieces[play.done : play.playing_end])
        rtf, waits_s = pace.slower(self.stream_rtf(), self.rtf), waiting * (self.first_pcm_s or 0.0)
        return pace.jitter_threshold(jitter_ms, expected, rtf, waits_s, self.chunk_gap_s or 0.0)

    def stream_rtf(self) -> float | None:
        """Synthesis time / audio time of one stream now (pace.stream_rtf)."""
        return pace.stream_rtf(self.engine.stats(), self.rtf)

    def estimate(self, play: Play, index: int) -> float:
        """Seconds of audio piece `index` gives (measured once it is complete)."""
        end = play.pieces[index].end
        if end is not None:
            return (end - (play.pieces[index - 1].end if index else 0)) / MODEL_RATE
        return self.sounds.estimate_s(play.pieces[index].piece, CHARS_PER_SECOND)

    @staticmethod
    def _arrived_s(play: Play, index: int) -> float:
        """Seconds of piece `index` already in the track (only the arriving piece has any)."""
        start = play.pieces[index - 1].end if index else 0
        return (play.track.received - start) / MODEL_RATE if index == play.done else 0.0

    @staticmethod
    def piece_playing(play: Play) -> int:
        """Index of the piece playback is in (the first not yet fully played)."""
        ends = play.ends
        return next((i for i, end in enumerate(ends) if end > play.track.taken), len(ends))

    # ---- submission ----

    def submit_due(self, plan: list[Play]) -> list[Play]:
        """Submit what is due in play order; returns the plays that got a request.

        A piece that cannot be submitted (the engine refuses it, or anything on the way raises) fails
        its play: `play.error` is set and it is returned too; the caller fails it.
        """
        lookahead = self.settings.announcements.lookahead_s
        in_flight = sum(len(play.handles()) for play in plan)
        stats = self.engine.stats()
        streams = max(stats.num_running + stats.num_waiting, in_flight)  # other doors' requests share it
        horizon = 0.0  # seconds of audio that play before the piece being considered
        first = True  # the first piece not yet complete in the whole plan: it plays next
        touched: list[Play] = []
        for play in plan:
            horizon += play.track.available / MODEL_RATE
            for index in range(play.done, play.playing_end):
                if not speaks(play.pieces[index].piece):  # a chime or a bare break: its audio is at hand
                    horizon += self.estimate(play, index)
                    continue
                if play.pieces[index].handle is not None:
                    horizon += max(0.0, self.estimate(play, index) - self._arrived_s(play, index))
                    first = False
                    continue
                urgent = first or play.ann.priority is Priority.EMERGENCY
                full = in_flight >= stats.max_batch or not pace.may_join(streams, stats, self.rtf)
                if not urgent and (horizon >= lookahead or full):
                    break  # the rest waits; a later emergency's pieces still go (they ignore the limits)
                first = False
                touched.append(play)
                if not self._submit_piece(play, index):
                    break
                in_flight, streams = in_flight + 1, streams + 1
                horizon += self.estimate(play, index)
        return list(dict.fromkeys(touched))  # each once, however many of its pieces went

    def _submit_piece(self, play: Play, index: int) -> bool:
        """Submit one piece; False, with `play.error` set, when it could not be (that play only)."""

        def failed(exc: BaseException) -> None:
            play.error = f"{type(exc).__name__}: {exc}"

        with isolated(f"{play.id}: submitting piece {play.first + index}", failed):
            try:
                play.pieces[index].handle = self.engine.submit(self._request(play, index))
                play.pieces[index].submitted_at = time.monotonic()
            except RequestError as exc:  # refused (bad input, no room): the engine's reason
                play.error = str(exc)
        return play.pieces[index].handle is not None

    def _request(self, play: Play, index: int):
        ann, piece = play.ann, play.pieces[index].piece
        voice = self.voices.resolve(piece.voice) if piece.voice else ann.voice or self.defaults.voice
        request = sentence_request(
            f"{ann.id}#{next(self._request_ids)}",
            piece.normalized,
            language=piece.language or ann.lang or self.defaults.language,
            voice=voice,
            instruct=ann.instruct or self.defaults.instruct,
            rank=ann.priority.rank,
            urgent=ann.priority.urgent,
            max_frames=self.settings.engine.max_frames,
            voices=self.voices,
            seed=ann.seed,
        )
        log.debug("%s: submitting piece %d as %s", ann.id, play.first + index, request.id)
        return request

    # ---- PCM ----

    def move_pcm(self, play: Play) -> None:
        """Append the PCM that is ready, in piece order; close the track after the last piece.

        Each piece brings its marks: silence (and a chime) before, its speech at its rate, silence after.
        Raises the RequestError of a piece whose synthesis failed. A cancelled request is not an ended
        one: its piece stays incomplete (only a finished request completes a piece).
        """
        track = play.track
        if track.closed or (play.cut is not None and play.cut is not Cut.TAKEOVER):
            return  # a cut play takes no more PCM: what its cancelled requests left is not the piece
        if play.ann.media is not None:
            return fill(play)  # from its samples, a few seconds ahead
        while play.done < play.playing_end:
            index = play.done
            piece = play.pieces[index]
            if track.received == (play.pieces[index - 1].end if index else 0):
                self._put(play, self.sounds.before(piece.piece))  # once: afterwards the track holds more
            if speaks(piece.piece) and not self._move_speech(play, piece, index):
                return
            self._put(play, self.sounds.after(piece.piece))
            piece.end = track.received
            if speaks(piece.piece):
                self._measure(piece, self.estimate(play, index) - self.sounds.extra_s(piece.piece))
        track.close()

    def _move_speech(self, play: Play, piece: PiecePlay, index: int) -> bool:
        """The piece's PCM that is ready into the track (at its rate); True once all of it is in."""
        handle = piece.handle
        if handle is None:
            return False
        chunks, ended = handle.ready_chunks()  # raises the piece's RequestError
        if chunks:  # one clock read per arrival: the chunk gap, and the speed from the first PCM on
            now = time.monotonic()
            self.chunk_gap_s, piece.last_pcm_at = pace.chunk_gap(self.chunk_gap_s, piece.last_pcm_at, now)
            if piece.arriving_since is None:
                piece.arriving_since = now
                piece.stretch = self.sounds.stretch(piece.piece)
                self._measure_wait(piece)
        for chunk in chunks:
            self._put(play, piece.stretch.push(chunk) if piece.stretch is not None else chunk)
        if not ended or handle.cancelled:
            return False
        piece.handle = None
        self._ran_away(play, handle, index)
        if piece.stretch is not None:
            self._put(play, piece.stretch.finish())
            piece.stretch = None
        return True

    @staticmethod
    def _ran_away(play: Play, handle, index: int) -> None:
        warning = runaway_warning(handle, play.first + index + 1)
        if warning is not None:  # said in the `finished` event (issue 24 item 5)
            log.warning("%s: %s", play.id, warning)
            play.runaway += (warning,)

    @staticmethod
    def _put(play: Play, chunk: np.ndarray) -> None:
        if not len(chunk):
            return
        play.track.put(chunk)
        if play.rendition is not None:
            play.rendition.append(chunk)

    def _measure(self, piece: PiecePlay, audio_s: float) -> None:
        """The real-time factor of the speech piece just complete (`audio_s` seconds of speech)."""
        since, piece.arriving_since = piece.arriving_since, None
        if since is None or audio_s < 0.5:
            return
        self.rtf = pace.ewma(self.rtf, (time.monotonic() - since) / audio_s)

    def _measure_wait(self, piece: PiecePlay) -> None:
        """The wait of the piece whose first PCM just came, since it was submitted."""
        if piece.submitted_at is not None:
            self.first_pcm_s = pace.ewma(self.first_pcm_s, piece.arriving_since - piece.submitted_at)

    # ---- takeover ----

    def take_over(self, play: Play) -> None:
        """End `play` after the piece it is playing; the rest is cancelled in the engine."""
        cut_at = self.piece_playing(play) + 1
        while cut_at < len(play.pieces):
            end = play.pieces[cut_at - 1].end
            if end is None:
                break  # its PCM is not all in yet: move_pcm stops at cut_at and closes the track
            if play.track.end_at(end):
                break
            cut_at += 1  # playback crossed the boundary meanwhile
        if cut_at >= len(play.pieces):
            return  # it is on its last piece: it ends before anything could take over
        play.cut_at, play.cut = cut_at, Cut.TAKEOVER
        log.info("%s: a priority announcement takes over after piece %d", play.id, play.first + cut_at)
        play.cancel_from(cut_at)
