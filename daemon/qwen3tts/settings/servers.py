"""The network doors: Wyoming and the HTTP API."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class WyomingServerSettings:
    """The Wyoming TTS server Home Assistant's Wyoming integration talks to."""

    enabled: bool = False
    """Serve the Wyoming protocol. Default false."""
    host: str = "127.0.0.1"
    """Address to bind; a non-loopback address also needs allow_network. Default 127.0.0.1."""
    port: int = field(default=10200, metadata={"min": 1, "max": 65535})
    """TCP port (wyoming-piper's is 10200 too). Default 10200."""
    allow_network: bool = False
    """Permit a non-loopback bind; Wyoming has no authentication: firewall the port. Default false."""
    zeroconf: bool = True
    """Announce the server over mDNS (`_wyoming._tcp`) on the bound address, so Home Assistant offers to
    add it; a loopback bind is announced on loopback only. Default true."""
    zeroconf_name: str | None = None
    """Instance name in the announcement; unique on the network. Default none: qwen3tts-<host name>."""
    sentence_wait_s: float = field(default=0.25, metadata={"min": 0.0, "max": 5.0})
    """Streamed text (synthesize-chunk) that ends in sentence punctuation is spoken once no more text has
    come for this long, instead of waiting for the next sentence to begin. Default 0.25 s."""


@dataclass(frozen=True)
class HttpServerSettings:
    """The OpenAI-compatible HTTP API (/v1/audio/speech, /v1/voices, /healthz, /metrics, /status)."""

    enabled: bool = False
    """Serve the HTTP API. Default false."""
    host: str = "127.0.0.1"
    """Address to bind; a non-loopback address requires a token. Default 127.0.0.1."""
    port: int = field(default=8080, metadata={"min": 1, "max": 65535})
    """TCP port. Default 8080."""
    token_file: Path | None = None
    """Bearer token file, else $CREDENTIALS_DIRECTORY/http-token; needed off loopback. Default none."""
    voice_map: tuple[str, ...] = (
        "alloy=vivian", "ash=eric", "ballad=dylan", "coral=sohee", "echo=ryan", "fable=aiden",
        "onyx=uncle_fu", "nova=serena", "sage=vivian", "shimmer=ono_anna", "verse=aiden", "marin=serena",
        "cedar=ryan",
    )  # fmt: skip
    """OpenAI voice names as NAME=VOICE: a request for NAME speaks with the bundle's VOICE (a bundle voice
    or registered voice called NAME comes first; a VOICE the bundle lacks gives the default voice and a
    warning header; a name neither here nor in the bundle is a 400). Default: every current OpenAI voice
    onto a CustomVoice speaker, female voices onto the female speakers (vivian, serena, sohee, ono_anna),
    male ones onto the male speakers (ryan, aiden, eric, dylan, uncle_fu); a list replaces the whole table."""
    status_page: bool = True
    """Serve the status page at /status (state, queue, engine, events, a form to speak); same token and
    bind rules as the API. Default true."""


@dataclass(frozen=True)
class RendererServerSettings:
    """A UPnP/DLNA MediaRenderer (Home Assistant's DLNA Digital Media Renderer, Music Assistant): media
    played on it is fetched, decoded and handed to the announcement queue."""

    enabled: bool = False
    """Serve the renderer and announce it over SSDP. Default false."""
    host: str = "127.0.0.1"
    """IPv4 address to bind and advertise; a non-loopback address also needs allow_network. Default
    127.0.0.1."""
    port: int = field(default=49494, metadata={"min": 1, "max": 65535})
    """TCP port of its description and control URLs. Default 49494."""
    allow_network: bool = False
    """Permit a non-loopback bind; UPnP has no authentication: firewall the port. Default false."""
    ssdp: bool = True
    """Answer SSDP searches and send SSDP announcements on the bound address. Default true."""
    name: str | None = None
    """The name controllers show; unique on the network. Default none: qwen3tts <host name>."""
    announce_sources: tuple[str, ...] = field(default=(), metadata={"may_be_empty": True})
    """Controller addresses whose media plays at announcement priority; from any other address it plays
    as a normal, duckable stream. Default none."""
    max_media_bytes: int = field(default=33_554_432, metadata={"min": 1024})
    """Largest media file fetched, in bytes. Default 32 MiB."""
    max_media_s: float = field(default=600.0, metadata={"min": 1.0})
    """Longest media played, in seconds of audio; longer is refused. Default 600 s."""
    fetch_timeout_s: float = field(default=20.0, metadata={"min": 1.0, "max": 25.0})
    """Seconds to fetch a media file (connect, redirects, body); a controller waits this long for Play's
    answer, so it stays below UPnP's 30 s. Default 20 s."""


@dataclass(frozen=True)
class ServersSettings:
    """Network doors sharing the engine: audio goes back to the caller, never to the speaker."""

    wyoming: WyomingServerSettings = field(default_factory=WyomingServerSettings)
    """The Wyoming server."""
    http: HttpServerSettings = field(default_factory=HttpServerSettings)
    """The HTTP server."""
    renderer: RendererServerSettings = field(default_factory=RendererServerSettings)
    """The UPnP/DLNA media renderer."""
    max_concurrent_requests: int = field(default=2, metadata={"min": 1, "max": 64})
    """Network requests synthesised at once over both servers; one more is refused as busy (HTTP 429), or
    over Wyoming waits in a short queue first (max_waiting_requests). Default 2."""
    max_waiting_requests: int = field(default=4, metadata={"min": 0, "max": 64})
    """Wyoming requests that wait for a synthesis slot when all are taken, each for at most max_request_s,
    in arrival order; one more, or one that waited that long, is refused as busy. Default 4."""
    max_body_bytes: int = field(default=65536, metadata={"min": 1024})
    """Largest HTTP request body or Wyoming event (header, data and payload) in bytes. Default 64 KiB."""
    max_connections: int = field(default=32, metadata={"min": 1, "max": 4096})
    """Open connections per server; one more is closed at once (Wyoming: after an error event). Default 32."""
    max_connections_per_client: int = field(default=8, metadata={"min": 1, "max": 4096})
    """Open connections per server from one client address. Default 8."""
    idle_timeout_s: float = field(default=30.0, metadata={"min": 0.1})
    """Seconds a connection may send nothing while nothing is synthesised for it; then it is closed
    (Wyoming: with an error event `timeout`). Default 30 s."""
    read_timeout_s: float = field(default=10.0, metadata={"min": 0.1})
    """Seconds from the first byte of a Wyoming event or HTTP request to its last. Default 10 s."""
    write_timeout_s: float = field(default=15.0, metadata={"min": 0.1})
    """Seconds a client may take to accept written audio before it is disconnected and its synthesis
    cancelled. Default 15 s."""
    max_request_s: float = field(default=300.0, metadata={"min": 1.0})
    """Longest one network request holds a synthesis slot (a Wyoming text stream: from synthesize-start);
    then it ends with error `timeout`. Default 300 s."""
    file_reserve: int = field(default=64, metadata={"min": 8})
    """File handles kept free for the spool, MQTT, logs and models: a connection that would take one of
    them is closed at once. Default 64."""
