"""The UPnP MediaRenderer driven by Home Assistant's own client library (async-upnp-client's
UpnpFactory + DmrDevice, as the dlna_dmr integration uses them) on loopback, with a media server on
127.0.0.1 and a recording outlet in place of the announcement queue."""

from __future__ import annotations

import asyncio
import contextlib

import numpy as np
import pytest
from async_upnp_client.exceptions import UpnpActionResponseError
from async_upnp_client.profiles.dlna import TransportState
from async_upnp_client.search import SsdpSearchListener
from renderer_rig import TONE_HZ, WAIT_S, WAV_SECONDS, RecordingOutlet, renderer_rig

from qwen3tts.servers.renderer.device import DEVICE_TYPE
from qwen3tts.servers.renderer.outlet import MEDIA_RATE


def run(scenario, *overrides: str, **rig_options):
    async def main():
        async with renderer_rig(*overrides, **rig_options) as rig:
            return await scenario(rig)

    return asyncio.run(main())


def test_home_assistant_plays_a_url_playing_then_stopped_and_the_outlet_gets_the_decoded_audio():
    async def scenario(rig):
        assert rig.dmr.transport_state == TransportState.NO_MEDIA_PRESENT
        await rig.play("/hello.wav", title="Doorbell")
        await rig.wait_state(TransportState.PLAYING)
        [media] = rig.outlet.media
        rig.outlet.finish("play-1")
        await rig.wait_state(TransportState.STOPPED)
        return media

    media = run(scenario)
    assert media.title == "Doorbell"  # from the DIDL-Lite metadata DmrDevice built
    assert media.url.endswith("/hello.wav") and media.announce is False
    assert (
        media.pcm.dtype == np.float32 and abs(len(media.pcm) - WAV_SECONDS * MEDIA_RATE) < MEDIA_RATE * 0.01
    )
    spectrum = np.abs(np.fft.rfft(media.pcm))
    assert abs(np.argmax(spectrum) * MEDIA_RATE / len(media.pcm) - TONE_HZ) < 5  # the tone, resampled
    assert 0.3 < np.abs(media.pcm).max() <= 0.51  # stereo averaged to mono, level kept


def test_subscribed_events_say_playing_then_stopped_as_home_assistant_receives_them():
    async def scenario(rig):
        await rig.play("/hello.wav")
        await rig.wait_state(TransportState.PLAYING, poll=False)
        rig.outlet.finish("play-1")
        await rig.wait_state(TransportState.STOPPED, poll=False)
        return rig.changes

    changes = run(scenario, subscribe=True)
    assert changes.index("PLAYING") < len(changes) - 1 - changes[::-1].index("STOPPED")


def test_volume_and_mute_are_set_read_back_and_follow_the_playing_media():
    async def scenario(rig):
        await rig.dmr.async_set_volume_level(0.3)
        await rig.dmr.async_update()
        volume = rig.dmr.volume_level
        await rig.play("/hello.wav")
        await rig.wait_state(TransportState.PLAYING)
        await rig.dmr.async_mute_volume(True)
        await rig.dmr.async_update()
        return volume, rig.dmr.is_volume_muted, rig.outlet.media[0].gain, list(rig.outlet.gains)

    volume, muted, gain_at_start, gains = run(scenario)
    assert volume == pytest.approx(0.3)
    assert muted is True
    assert gain_at_start == pytest.approx(0.3**2)
    assert gains == [("play-1", 0.0)]  # muting while it plays reaches the outlet


def test_stop_cuts_what_plays_and_a_new_url_plays_after_it():
    async def scenario(rig):
        await rig.play("/hello.wav")
        await rig.wait_state(TransportState.PLAYING)
        await rig.dmr.async_stop()
        await rig.wait_state(TransportState.STOPPED)
        await rig.play("/hello.wav", title="Again")
        await rig.wait_state(TransportState.PLAYING)
        return rig.outlet

    outlet = run(scenario)
    assert outlet.stopped == ["play-1"]
    assert [media.title for media in outlet.media] == ["Hello", "Again"]


def test_a_controller_named_in_announce_sources_plays_at_announcement_priority():
    async def scenario(rig):
        await rig.play("/hello.wav")
        await rig.wait_state(TransportState.PLAYING)
        return rig.outlet.media[0]

    assert run(scenario, "servers.renderer.announce_sources=[127.0.0.1]").announce is True


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("/page.html", 714),  # not audio by its Content-Type
        ("/noise.wav", 714),  # audio by its type, not by its bytes
        ("/image.bin", 714),  # a generic type: FFmpeg opens it, but it is no audio container we take
        ("/long.wav", 714),  # longer than servers.renderer.max_media_s
        ("/huge.wav", 714),  # Content-Length over servers.renderer.max_media_bytes
        ("/endless.wav", 714),  # a body that never ends is cut at the byte limit
        ("/slow.wav", 715),  # nothing within servers.renderer.fetch_timeout_s
        ("/missing.wav", 716),  # 404
    ],
)
def test_media_that_cannot_be_played_is_a_upnp_error_and_the_renderer_goes_on(path, code):
    async def scenario(rig):
        with pytest.raises(UpnpActionResponseError) as refused:
            await rig.play(path)
        await rig.dmr.async_update()
        state = rig.dmr.transport_state
        await rig.play("/hello.wav")  # the next request plays
        await rig.wait_state(TransportState.PLAYING)
        return refused.value, state, rig.outlet

    # The fetch timeout is the product's (20 s) but for the media that never comes, where a short one keeps
    # the test short: the next play's fetch (of a 1 s WAV on loopback) must fit in it on a loaded box too.
    overrides = ("servers.renderer.fetch_timeout_s=5",) if path == "/slow.wav" else ()
    refused, state_after, outlet = run(scenario, *overrides)
    assert refused.error_code == code
    assert state_after == TransportState.STOPPED
    assert [media.url.rsplit("/", 1)[-1] for media in outlet.media] == ["hello.wav"]


def test_a_url_the_renderer_may_not_fetch_is_refused_when_it_is_set():
    async def scenario(rig):
        errors = []
        for url in ("file:///etc/passwd", "ftp://127.0.0.1/a.wav", "http://", "http://a b/c.wav"):
            with pytest.raises(UpnpActionResponseError) as refused:
                await rig.dmr.async_set_transport_uri(url, "x", meta_data="")
            errors.append(refused.value.error_code)
        await rig.dmr.async_update()
        return errors, rig.dmr.transport_state

    errors, state = run(scenario)
    assert errors == [716] * 4
    assert state == TransportState.NO_MEDIA_PRESENT


def test_an_outlet_that_refuses_is_a_upnp_error_with_state_stopped():
    async def scenario(rig):
        with pytest.raises(UpnpActionResponseError) as refused:
            await rig.play("/hello.wav")
        await rig.dmr.async_update()
        return refused.value.error_code, rig.dmr.transport_state

    code, state = run(scenario, outlet=RecordingOutlet(refuse="the queue is full"))
    assert (code, state) == (715, TransportState.STOPPED)


def test_found_by_an_ssdp_search_on_loopback_where_home_assistant_looks_for_renderers():
    async def scenario(rig):
        found = asyncio.Event()
        seen: list = []

        async def on_response(headers) -> None:
            if headers.get("usn", "").startswith(rig.dmr.profile_device.udn):
                seen.append(headers)
                found.set()

        listener = SsdpSearchListener(on_response, source=("127.0.0.1", 0), search_target=DEVICE_TYPE)
        await listener.async_start()
        try:
            async with asyncio.timeout(WAIT_S):
                while not found.is_set():  # M-SEARCH is UDP: ask again until the answer comes
                    listener.async_search()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(found.wait(), 1.0)
        finally:
            listener.async_stop()
        return seen[0], rig.servers.renderer.description_url

    answer, description_url = run(scenario)
    assert answer["location"] == description_url  # where Home Assistant's UpnpFactory reads the device
    assert answer["st"] == DEVICE_TYPE
    assert answer["_host"] == "127.0.0.1"  # answered from loopback


def test_stop_while_the_media_is_still_fetched_drops_it_and_the_next_url_plays():
    async def scenario(rig):
        await rig.dmr.async_set_transport_uri(f"{rig.media_base}/slow.wav", "Slow", meta_data="")
        playing = asyncio.create_task(rig.dmr.async_play())
        await rig.wait_state(TransportState.TRANSITIONING)
        await rig.dmr.async_stop()
        with pytest.raises(UpnpActionResponseError) as dropped:
            await playing
        await rig.play("/hello.wav")
        await rig.wait_state(TransportState.PLAYING)
        return dropped.value.error_code, rig.outlet

    code, outlet = run(scenario, "servers.renderer.fetch_timeout_s=25")
    assert code == 715
    assert [media.title for media in outlet.media] == ["Hello"]  # the slow one never reached the outlet
    assert outlet.stopped == []  # nothing of it was playing to cut


class FailingOnceOutlet(RecordingOutlet):
    """An outlet with a bug: its first play raises what nobody expects."""

    def play(self, media, on_event) -> str:
        if not hasattr(self, "failed"):
            self.failed = True
            raise RuntimeError("a bug in the outlet")
        return super().play(media, on_event)


def test_an_outlet_that_fails_unexpectedly_fails_that_play_only():
    async def scenario(rig):
        with pytest.raises(UpnpActionResponseError):
            await rig.play("/hello.wav")
        await rig.dmr.async_update()
        state = rig.dmr.transport_state
        await rig.play("/hello.wav", title="Next")
        await rig.wait_state(TransportState.PLAYING)
        return state, rig.outlet

    state, outlet = run(scenario, outlet=FailingOnceOutlet())
    assert state == TransportState.STOPPED  # not left in TRANSITIONING
    assert [media.title for media in outlet.media] == ["Next"]
