"""The status page's voice routes over HTTP (servers/voice_console.py) on a whole daemon with a tiny Base
bundle: a voice cloned there is used by the next MQTT, HTTP and Wyoming request with no restart, the
default follows on every door, a hostile upload gets `voice add`'s own refusal as a 4xx and stores
nothing, and the routes keep the page's token and Host rules."""

from __future__ import annotations

import asyncio
import json
from urllib.parse import quote

import httpx
import pytest
from status_page_rig import HOSTILE, recordings, start_page_daemon
from wyoming.audio import AudioChunk, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.info import Describe, Info
from wyoming.tts import Synthesize, SynthesizeVoice

from qwen3tts.servers import voice_console
from qwen3tts.voices import VoiceRegistry, voices_dir

pytestmark = pytest.mark.slow
TIMEOUT = httpx.Timeout(120.0)


def clone(url: str, name: str, path, transcript: str | None = None, **kwargs) -> httpx.Response:
    query = "" if transcript is None else f"?transcript={quote(transcript)}"
    headers = {"Content-Type": "audio/wav"} | kwargs.pop("headers", {})
    return httpx.put(f"{url}/status/voices/{name}{query}", content=path.read_bytes(), headers=headers,
                     timeout=TIMEOUT, **kwargs)  # fmt: skip


def wyoming_voices(port: int) -> list[str]:
    """The voices of the Wyoming server's answer to `describe`, asked as Home Assistant asks: each is
    listed once per language as `<voice>@<language code>` (docs/servers.md); the voices' own names."""

    async def describe() -> Info:
        async with AsyncTcpClient("127.0.0.1", port) as client:
            await client.write_event(Describe().event())
            async with asyncio.timeout(60):
                while not Info.is_type((event := await client.read_event()).type):
                    pass
            return Info.from_event(event)

    return sorted({voice.name.split("@")[0] for voice in asyncio.run(describe()).tts[0].voices})


def wyoming_speaks(port: int, voice: str) -> int:
    """Bytes of audio a Wyoming `synthesize` with `voice` got back before its audio-stop."""

    async def synthesize() -> int:
        async with AsyncTcpClient("127.0.0.1", port) as client:
            await client.write_event(Synthesize("Platform two.", voice=SynthesizeVoice(name=voice)).event())
            audio = 0
            async with asyncio.timeout(120):
                while not AudioStop.is_type((event := await client.read_event()).type):
                    assert not Error.is_type(event.type), event.data
                    audio += len(event.payload or b"") if AudioChunk.is_type(event.type) else 0
            return audio

    return asyncio.run(synthesize())


def event_of(recorder, ann_id: str) -> dict:
    ends = ("finished", "rejected", "error")

    def found(msgs):
        return [e for m in msgs if m.topic.endswith("/event") for e in [json.loads(m.payload)]
                if e.get("id") == ann_id and e["event"] in ends]  # fmt: skip

    return found(recorder.wait_for(lambda msgs: bool(found(msgs)), 120))[0]


def test_a_voice_cloned_over_http_is_used_by_the_next_mqtt_http_and_wyoming_request(
    tmp_path, mosquitto, tiny_models, recorder_factory
):
    files = recordings(tmp_path / "rec")
    bundle = tiny_models.bundle("base", "tiny", "f32")
    service, url = start_page_daemon(tmp_path, mosquitto, bundle, wyoming=True)
    recorder = recorder_factory(mosquitto, ["qwen3tts/page/#"])
    try:
        wyoming_port = service.servers.wyoming_port
        assert "anna" not in wyoming_voices(wyoming_port)
        added = clone(url, "anna", files["ref"], "Hello there.")
        assert added.status_code == 201, added.text
        assert added.json() | {"transcript": None} == {"name": "anna", "kind": "clone", "icl": True,
                                                      "transcript": None, "instruct": None}  # fmt: skip
        assert "anna" in [v["name"] for v in httpx.get(f"{url}/status/voices").json()["voices"]]
        # every door offers it at once: Wyoming's info, the OpenAI voice lists, the MQTT voices topic
        assert "anna" in wyoming_voices(wyoming_port)
        assert "anna" in [v["id"] for v in httpx.get(f"{url}/v1/voices").json()["voices"]]
        assert "anna" in httpx.get(f"{url}/v1/audio/voices").json()["voices"]
        recorder.wait_for(
            lambda msgs: any(m.topic.endswith("/voices") and b"anna" in m.payload for m in msgs), 30
        )
        # ... and speaks with it: HTTP, then MQTT, with the stored ICL inputs
        said = {"input": "Platform two.", "voice": "anna", "response_format": "wav"}
        speech = httpx.post(f"{url}/v1/audio/speech", json=said, timeout=TIMEOUT)
        assert speech.status_code == 200 and len(speech.content) > 1000
        assert service.runtime.prompt_builder.voices["voice:anna"].icl
        recorder.publish("qwen3tts/page/say", json.dumps({"id": "cloned", "text": "Hi.", "voice": "anna"}))
        assert event_of(recorder, "cloned")["event"] == "finished"
        assert wyoming_speaks(wyoming_port, "anna") > 1000

        made = httpx.put(f"{url}/status/default-voice", json={"voice": "ANNA"})
        assert made.status_code == 200 and made.json() == {"default": "anna"}
        assert httpx.get(f"{url}/v1/voices").json()["default_voice"] == "anna"  # the servers follow
        assert service.status().voice == "anna"  # and the appliance (MQTT, Home Assistant's select)
        refused = httpx.delete(f"{url}/status/voices/anna")
        assert refused.status_code == 409 and "default voice" in refused.json()["error"]["message"]
        assert httpx.put(f"{url}/status/default-voice", json={"voice": "default"}).json() == {
            "default": "default"
        }
        assert httpx.delete(f"{url}/status/voices/anna").status_code == 200
        assert "anna" not in wyoming_voices(wyoming_port)
        assert "anna" not in httpx.get(f"{url}/v1/audio/voices").json()["voices"]
        assert VoiceRegistry(voices_dir(service.settings)).names() == []
        gone = httpx.post(f"{url}/v1/audio/speech", json={"input": "Hi.", "voice": "anna"})
        assert gone.status_code == 400 and "unknown voice" in gone.json()["error"]["message"]
    finally:
        service.stop()


def test_hostile_uploads_get_voice_adds_refusal_store_nothing_and_the_daemon_keeps_serving(
    tmp_path, mosquitto, tiny_models, monkeypatch
):
    files = recordings(tmp_path / "rec")
    service, url = start_page_daemon(tmp_path, mosquitto, tiny_models.bundle("base", "tiny", "f32"))
    try:
        for stem, name, transcript, message in HOSTILE:
            answer = clone(url, name, files[stem], transcript)
            assert answer.status_code == 400, (stem, name, answer.text)
            said = answer.json()["error"]["message"]
            assert message in said and "/tmp" not in said, (stem, name, said)
        no_transcript = clone(url, "anna", files["ref"])
        assert no_transcript.status_code == 400 and "--text" in no_transcript.json()["error"]["message"]
        bad_utf8 = httpx.put(f"{url}/status/voices/anna?transcript=caf%E9", content=files["ref"].read_bytes(),
                             headers={"Content-Type": "audio/wav"})  # fmt: skip
        assert bad_utf8.status_code == 400 and "UTF-8" in bad_utf8.json()["error"]["message"]
        unknown = httpx.put(f"{url}/status/voices/anna?path=/etc/passwd", content=files["ref"].read_bytes(),
                            headers={"Content-Type": "audio/wav"})  # fmt: skip
        assert unknown.status_code == 400 and "unknown parameter 'path'" in unknown.json()["error"]["message"]
        html = clone(url, "anna", files["ref"], "Hello there.", headers={"Content-Type": "text/html"})
        assert html.status_code == 415
        form = clone(
            url, "anna", files["ref"], "Hello there.", headers={"Content-Type": "multipart/form-data"}
        )
        assert form.status_code == 415  # what a cross-site form could send
        empty = httpx.put(f"{url}/status/voices/anna?transcript=Hi", headers={"Content-Type": "audio/wav"})
        assert empty.status_code == 400 and "no recording" in empty.json()["error"]["message"]
        monkeypatch.setattr(voice_console, "MAX_UPLOAD_BYTES", 1000)
        big = clone(url, "anna", files["ref"], "Hello there.")
        assert big.status_code == 413 and "exceeds the limit of 1000" in big.json()["error"]["message"]

        async def trickle():  # a declared length the client never sends: the upload's time bound ends it
            reader, writer = await asyncio.open_connection("127.0.0.1", int(url.rsplit(":", 1)[1]))
            writer.write(b"PUT /status/voices/anna?transcript=Hi HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         b"Content-Type: audio/wav\r\nContent-Length: 900\r\n\r\nRIFF")  # fmt: skip
            await writer.drain()
            head = await asyncio.wait_for(reader.readline(), 60)
            writer.close()
            return head

        monkeypatch.setattr(voice_console, "UPLOAD_TIMEOUT_S", 1.0)
        assert b"408" in asyncio.run(trickle())
        assert VoiceRegistry(voices_dir(service.settings)).names() == []
        monkeypatch.undo()
        assert httpx.get(f"{url}/healthz").json()["status"] == "ready"  # nothing silenced the daemon
        assert clone(url, "anna", files["flac"], headers={"Content-Type": "audio/flac"},
                     params={"x_vector_only": "true"}).status_code == 201  # fmt: skip
        assert httpx.get(f"{url}/status/voices").json()["voices"][-1] == {
            "name": "anna", "kind": "clone", "icl": False, "transcript": None, "instruct": None}  # fmt: skip
    finally:
        service.stop()


def test_the_voice_routes_keep_the_token_and_refuse_what_the_bundle_cannot_do(
    tmp_path, mosquitto, tiny_models
):
    files = recordings(tmp_path / "rec")
    bundle = tiny_models.bundle("custom_voice", "tiny", "f32")
    service, url = start_page_daemon(tmp_path, mosquitto, bundle, token="voice-secret")
    auth = {"Authorization": "Bearer voice-secret"}
    try:
        routes = [("GET", "/status/voices"), ("PUT", "/status/voices/anna"),
                  ("DELETE", "/status/voices/anna"), ("PUT", "/status/default-voice")]  # fmt: skip
        for method, path in routes:
            refused = httpx.request(
                method, f"{url}{path}", content=b"x", headers={"Content-Type": "audio/wav"}
            )
            assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Basic"), (
                path
            )
        listing = httpx.get(f"{url}/status/voices", headers=auth).json()
        assert [v["name"] for v in listing["voices"]] == list(service.catalog.speakers)
        assert "needs a Base bundle" in listing["cloning"]
        base_only = clone(url, "anna", files["ref"], "Hello there.", headers=auth)
        assert base_only.status_code == 400 and "needs a Base bundle" in base_only.json()["error"]["message"]
        preset = httpx.delete(f"{url}/status/voices/{service.catalog.speakers[0]}", headers=auth)
        assert preset.status_code == 404 and "no registered voice" in preset.json()["error"]["message"]
        unknown = httpx.put(f"{url}/status/default-voice", json={"voice": "nobody"}, headers=auth)
        assert unknown.status_code == 400 and "unknown voice 'nobody'" in unknown.json()["error"]["message"]
        plain = httpx.put(f"{url}/status/default-voice", content='{"voice": "x"}',
                          headers=auth | {"Content-Type": "text/plain"})  # fmt: skip
        assert plain.status_code == 415
        other = service.catalog.speakers[-1]
        assert (
            httpx.put(f"{url}/status/default-voice", json={"voice": other}, headers=auth).status_code == 200
        )
        assert httpx.get(f"{url}/v1/voices", headers=auth).json()["default_voice"] == other
    finally:
        service.stop()


def test_without_a_token_the_voice_routes_act_only_for_a_loopback_host(tmp_path, mosquitto, tiny_models):
    files = recordings(tmp_path / "rec")
    service, url = start_page_daemon(tmp_path, mosquitto, tiny_models.bundle("base", "tiny", "f32"))
    try:
        rebound = clone(url, "anna", files["ref"], "Hello there.", headers={"Host": "evil.example"})
        assert rebound.status_code == 403
        assert httpx.put(f"{url}/status/default-voice", json={"voice": "default"},
                         headers={"Host": "evil.example"}).status_code == 403  # fmt: skip
        assert VoiceRegistry(voices_dir(service.settings)).names() == []
    finally:
        service.stop()
