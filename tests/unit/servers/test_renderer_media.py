"""What the renderer takes from a fetched body: the audio containers we decode (to 24 kHz mono, the
tone kept), nothing else; and a title from metadata that may be hostile."""

from __future__ import annotations

import io

import numpy as np
import pytest
import soundfile

from qwen3tts.servers.renderer.decode import decode_media
from qwen3tts.servers.renderer.fetch import ILLEGAL_MIME_TYPE, MediaError
from qwen3tts.servers.renderer.metadata import media_title
from qwen3tts.servers.renderer.outlet import MEDIA_RATE


def encoded(fmt: str, subtype: str | None, rate: int = 44_100, seconds: float = 1.0) -> bytes:
    t = np.arange(int(rate * seconds)) / rate
    buffer = io.BytesIO()
    soundfile.write(buffer, 0.4 * np.sin(2 * np.pi * 440 * t), rate, format=fmt, subtype=subtype)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("fmt", "subtype"), [("WAV", "PCM_16"), ("FLAC", "PCM_16"), ("OGG", "VORBIS"), ("MP3", "MPEG_LAYER_III")]
)
def test_each_container_we_take_decodes_to_24_khz_mono_with_its_tone(fmt, subtype):
    pcm = decode_media(encoded(fmt, subtype), max_seconds=5)
    assert pcm.dtype == np.float32
    assert abs(len(pcm) - MEDIA_RATE) < MEDIA_RATE * 0.1  # codecs pad a little
    peak_hz = np.argmax(np.abs(np.fft.rfft(pcm))) * MEDIA_RATE / len(pcm)
    assert abs(peak_hz - 440) < 5
    assert 0.3 < np.abs(pcm).max() < 0.5


def test_media_longer_than_the_limit_is_refused_while_it_decodes():
    with pytest.raises(MediaError, match="longer than 2 s") as refused:
        decode_media(encoded("FLAC", "PCM_16", seconds=3.0), max_seconds=2)
    assert refused.value.code == ILLEGAL_MIME_TYPE


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"hello, not audio",
        b"\x89PNG\r\n\x1a\n" + bytes(2048),
        b"RIFF\xff\xff\xff\xffWAVEfmt " + bytes(64),
    ],
)
def test_anything_else_is_refused_as_not_audio(body):
    with pytest.raises(MediaError) as refused:
        decode_media(body, max_seconds=5)
    assert refused.value.code == ILLEGAL_MIME_TYPE


def test_the_title_comes_from_didl_metadata_else_from_the_url():
    didl = (
        '<DIDL-Lite xmlns="urn:schemas-upnp-org:metadata-1-0/DIDL-Lite/" '
        'xmlns:dc="http://purl.org/dc/elements/1.1/"><item><dc:title>Doorbell\x07 chime</dc:title></item>'
        "</DIDL-Lite>"
    )
    assert media_title(didl.replace("\x07", ""), "http://h/a.mp3") == "Doorbell chime"
    bomb = '<!DOCTYPE x [<!ENTITY a "aaaa">]><x xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>&a;</dc:title></x>'
    for metadata in (bomb, "<not xml", "x" * 20_000, ""):
        assert media_title(metadata, "http://h/path/door%20bell.mp3?x=1") == "door bell.mp3"
    assert media_title("", "http://h/") == "media"
    assert len(media_title("", "http://h/" + "a" * 500)) == 200
