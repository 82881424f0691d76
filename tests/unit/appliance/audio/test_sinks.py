"""Sink logic without a sound card: device loss, a device that stops taking samples, and reopen with
backoff (a fake PortAudio), the resampler's chunk invariance and the null sink."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import soxr
from audio_fakes import FakeClock

from qwen3tts.appliance.audio.alsa import MAX_STUCK, REOPEN_BACKOFF_S, AlsaSink
from qwen3tts.appliance.audio.sinks import RECENT_ITEMS, NullSink, Resampler, WavSink
from qwen3tts.errors import AudioError


class FakePortAudio:
    """Just enough of the sounddevice module: one device that can be unplugged and plugged back."""

    class PortAudioError(Exception):
        pass

    def __init__(self):
        self.plugged = True
        self.reinits = 0
        self.streams: list[FakePortAudio.Stream] = []
        self.written: list[np.ndarray] = []

    class Stream:
        def __init__(self, sd, **kwargs):
            self.sd, self.kwargs, self.active, self.latency = sd, kwargs, False, 0.05

        def start(self):
            self.active = True

        def stop(self):
            self.active = False

        def abort(self):
            self.active = False

        def close(self):
            pass

        def write(self, frames):
            if not self.sd.plugged:
                raise FakePortAudio.PortAudioError("Unanticipated host error")
            self.sd.written.append(frames.copy())
            return False

    def query_devices(self, name=None, kind=None):
        if not self.plugged or name not in (None, "USB"):
            raise ValueError(f"No output device matching {name!r}")
        return {"name": "USB Speaker", "index": 3, "max_output_channels": 2, "default_samplerate": 48000.0}

    def OutputStream(self, **kwargs):
        if not self.plugged:
            raise self.PortAudioError("Device unavailable")
        self.streams.append(self.Stream(self, **kwargs))
        return self.streams[-1]

    def _terminate(self):
        pass

    def _initialize(self):
        self.reinits += 1


def test_the_alsa_sink_opens_by_name_at_the_device_rate_and_resamples():
    sd = FakePortAudio()
    sink = AlsaSink("USB", block_ms=40, backend=sd).open()
    assert (sink.rate, sink.channels, sink.name) == (48000, 1, "alsa:USB Speaker@48000")
    assert sd.streams[0].kwargs["blocksize"] == 1920 and sd.streams[0].kwargs["device"] == 3
    sink.begin("a")
    sink.write(np.ones(2400, dtype=np.float32))
    sink.end()
    assert sum(len(w) for w in sd.written) == 4800 and not sd.streams[0].active


def test_a_lost_device_is_reported_and_reopened_with_backoff_after_it_returns():
    sd, clock, states = FakePortAudio(), FakeClock(), []
    sink = AlsaSink("USB", backend=sd, clock=clock, on_state=lambda s, d: states.append(s)).open()
    sink.begin("a")
    sd.plugged = False
    with pytest.raises(AudioError, match="lost"):
        sink.write(np.ones(960, dtype=np.float32))
    assert states == ["ok", "lost"] and sink.latency() == 0.0
    with pytest.raises(AudioError):
        sink.begin("b")  # too early for the first retry
    assert sd.reinits == 0
    clock.advance(REOPEN_BACKOFF_S[0])
    assert not sink.recover() and sd.reinits == 1  # still unplugged: next retry later
    clock.advance(REOPEN_BACKOFF_S[0])
    assert not sink.recover() and sd.reinits == 1  # backoff grew
    sd.plugged = True
    clock.advance(REOPEN_BACKOFF_S[1])
    assert sink.recover() and sd.reinits == 2 and states == ["ok", "lost", "ok"]
    sink.begin("c")
    sink.write(np.ones(960, dtype=np.float32))


def test_chunked_resampling_equals_one_shot_and_flush_starts_afresh():
    x = np.random.default_rng(1).standard_normal(10000).astype(np.float32) * 0.1
    for rate in (44100, 48000, 16000):
        r = Resampler(rate)
        for _ in range(2):  # the second pass proves flush() reset the filter state
            out = np.concatenate([*(r.process(x[i : i + 960]) for i in range(0, len(x), 960)), r.flush()])
            np.testing.assert_array_equal(out, soxr.resample(x, 24000, rate, quality="HQ"))
    assert Resampler(24000).process(x) is not None and len(Resampler(24000).flush()) == 0


def test_the_null_sink_counts_what_it_swallows():
    sink = NullSink()
    sink.begin("a")
    assert sink.write(np.zeros(100, dtype=np.float32)) is False
    assert sink.samples_written == 100 and list(sink.items) == ["a"]


def test_what_a_sink_remembers_of_what_it_played_is_bounded(tmp_path):
    """A daemon runs for months: the sinks keep the last RECENT_ITEMS names, not one per announcement."""
    null, wav = NullSink(), WavSink(tmp_path)
    for n in range(RECENT_ITEMS + 5):
        null.begin(f"n{n}")
        wav.begin(f"w{n}")
        wav.write(np.zeros(10, dtype=np.float32))
        wav.end()
    assert len(null.items) == RECENT_ITEMS and null.items[-1] == f"n{RECENT_ITEMS + 4}"
    assert len(wav.paths) == RECENT_ITEMS and wav.paths[-1].endswith(f"w{RECENT_ITEMS + 4}.wav")
    assert len(list(tmp_path.glob("*.wav"))) == RECENT_ITEMS + 5  # the files themselves all stay


class StallingPortAudio(FakePortAudio):
    """A device whose streams stop taking samples while `stalled` is set: write() blocks (a stuck driver)."""

    def __init__(self):
        super().__init__()
        self.stalled = False
        self.released = threading.Event()
        self.closed: list[FakePortAudio.Stream] = []

    def OutputStream(self, **kwargs):
        stream = super().OutputStream(**kwargs)
        stream.stalls = self.stalled
        fake, write, close = self, stream.write, stream.close

        def blocking_write(frames):
            if stream.stalls:
                fake.released.wait()
            return write(frames)

        def recorded_close():
            fake.closed.append(stream)
            close()

        stream.write, stream.close = blocking_write, recorded_close
        return stream


def test_a_write_that_never_returns_loses_the_device_and_a_fresh_stream_plays_without_a_reinit():
    sd, clock, states = StallingPortAudio(), FakeClock(), []
    sink = AlsaSink("USB", backend=sd, clock=clock, stall_timeout_s=2.0,
                    on_state=lambda s, d: states.append((s, d))).open()  # fmt: skip
    sink.begin("a")
    sink.write(np.ones(960, dtype=np.float32))
    sd.streams[0].stalls = True
    with pytest.raises(AudioError, match="did not return within 2 s"):
        sink.write(np.ones(960, dtype=np.float32))
    assert [s for s, _ in states] == ["ok", "lost"] and "DeviceStalled" in states[-1][1]
    clock.advance(REOPEN_BACKOFF_S[0])
    assert sink.recover() and len(sd.streams) == 2
    assert sd.reinits == 0  # PortAudio is not re-initialised under the stream stuck in it
    sink.begin("b")
    sink.write(np.ones(960, dtype=np.float32))
    sink.end()
    sd.released.set()  # the driver comes back: the stuck write returns, its thread closes that stream
    deadline = time.monotonic() + 30
    while sd.streams[0] not in sd.closed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sd.streams[0] in sd.closed


def test_no_more_than_max_stuck_streams_are_left_in_the_driver():
    sd, clock = StallingPortAudio(), FakeClock()
    sd.stalled = True  # every stream opened from now on stalls
    sink = AlsaSink("USB", backend=sd, clock=clock, stall_timeout_s=2.0).open()  # a margin for a loaded box
    for _ in range(MAX_STUCK):
        with pytest.raises(AudioError, match="did not return"):
            sink.begin("a")
            sink.write(np.ones(960, dtype=np.float32))
        clock.advance(REOPEN_BACKOFF_S[-1])
        opened = sink.recover()
    assert not opened and len(sd.streams) == MAX_STUCK  # no third stream while two are stuck
    sd.released.set()
    deadline = time.monotonic() + 30
    while len(sd.closed) < MAX_STUCK and time.monotonic() < deadline:
        time.sleep(0.01)
    clock.advance(REOPEN_BACKOFF_S[-1])
    assert sink.recover() and len(sd.streams) == MAX_STUCK + 1 and sd.reinits == 1
