"""The one typed configuration of qwen3tts: a frozen dataclass tree.

Order of precedence: defaults here -> the YAML file (`--config`, default config/qwen3tts.yaml shape)
-> command-line overrides (`--set key.path=value`) -> secrets read from files (never from YAML).
Every field carries a docstring with its unit and default; `config/qwen3tts.yaml` is the commented copy.
Derived runtime facts (the block count actually allocated, compiled shapes) do not live here.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from qwen3tts.errors import ConfigError

Priority = Literal["normal", "priority", "emergency"]


@dataclass(frozen=True)
class ModelSettings:
    """Where the OpenVINO bundle comes from."""

    bundle: Path | None = None
    """Directory of the OpenVINO bundle (manifest.json inside); `qwen3tts build` makes one. Default null:
    the embedded random bundle <state>/bundle-tiny that `run --embedded` builds (see docs/operations.md)."""
    checkpoint: Path | None = None
    """Release checkpoint `qwen3tts build` reads without --checkpoint (docs/models.md). Default none."""
    weights: Literal["int8", "int4-cp", "int4", "f16", "f32"] = "int8"
    """Weight precision policy used by `build` when it has to build the bundle; int4-cp / int4 are faster
    build options with more drift (docs/fidelity.md). Default int8."""
    cache_dir: Path | None = None
    """OpenVINO compile cache directory. Default null: <cache>/openvino ($CACHE_DIRECTORY under systemd)."""


@dataclass(frozen=True)
class DeviceSettings:
    """Which OpenVINO device runs which graph: preference lists, first that compiles wins."""

    talker: tuple[str, ...] = ("GPU", "CPU")
    """Device preference for the talker (and the code predictor, which follows it). Default GPU, CPU."""
    codec: tuple[str, ...] = ("NPU", "GPU", "CPU")
    """Device preference for the speech decoder. Default NPU, GPU, CPU."""
    inference_precision: Literal["auto", "f32", "bf16", "f16"] = "auto"
    """INFERENCE_PRECISION_HINT; auto is f32 on CPUs (bf16 measured too lossy for the codec and no faster
    with compressed weights) and the device default on GPU/NPU. An explicit f32 means exact f32 arithmetic:
    the exact codec graphs (never a lossy variant) and no native kernels. Default auto."""
    codec_variant: Literal["auto", "f32", "bf16-tail"] = "auto"
    """Codec graphs on a CPU: auto loads the bundle's fastest variant that passed its build-time SNR gate
    (>= 35 dB against the exact decode) and whose needs the CPU meets (bf16-tail: AVX-512 BF16 or AMX),
    else the exact f32 graphs; f32 always loads the exact graphs, and so does devices.inference_precision
    f32. Default auto."""
    num_threads: int = field(default=0, metadata={"min": 0})
    """CPU inference threads; 0 lets OpenVINO use every core. Default 0."""
    cpu_pinning: bool = True
    """Pin CPU inference threads to cores. Default true."""
    native_kernels: Literal["auto", "always", "never"] = "auto"
    """The compiled INT8 matrix products of native/ (libqwen3tts_native.so, built by scripts/setup.sh) for
    the talker and code predictor on the CPU: auto uses them where they measured faster on this CPU class
    (docs/benchmarks.md) unless devices.inference_precision is an explicit f32 (their int16 activations
    are not exact f32); always uses them wherever the library loads; never does not. Default auto."""
    native_library: Path | None = None
    """Path of libqwen3tts_native.so. Default null: native/build/ of the source tree qwen3tts runs from."""

    def __post_init__(self) -> None:
        for key in ("talker", "codec"):
            for index, name in enumerate(getattr(self, key)):
                _check_device_name(f"devices.{key}[{index}]", name)


VIRTUAL_DEVICES = ("AUTO", "MULTI", "HETERO", "BATCH")
"""OpenVINO's meta-devices: they choose or split devices themselves, which the device plan does here."""


def _check_device_name(path: str, name: str) -> None:
    family = name.split(":", 1)[0].split(".", 1)[0].strip().upper()
    if family in VIRTUAL_DEVICES:
        raise ConfigError(
            f"{path}: {name!r} is an OpenVINO meta-device, not supported: list real devices in order of "
            "preference instead, e.g. [GPU, CPU] (the first that compiles wins; see `qwen3tts devices`)"
        )
    if not family or ":" in name:
        raise ConfigError(f"{path}: expected a device name such as CPU, GPU, GPU.1 or NPU, got {name!r}")


@dataclass(frozen=True)
class EngineSettings:
    """The continuous-batching engine."""

    max_num_seqs: int = field(default=4, metadata={"min": 1, "max": 64})
    """Most announcements synthesised at once (the batch limit before thermal throttling). Default 4."""
    max_num_batched_tokens: int = field(default=256, metadata={"min": 16})
    """Token budget of one engine step; longer prompts are prefilled in chunks. Default 256 tokens."""
    num_kv_blocks: int = field(default=0, metadata={"min": 0})
    """Paged KV cache blocks; 0 derives the count from kv_cache_mib. Default 0."""
    kv_cache_mib: int = field(default=256, metadata={"min": 1})
    """KV cache memory budget in MiB, used when num_kv_blocks is 0. Default 256 MiB."""
    kv_cache_precision: Literal["u8", "f16", "bf16", "f32"] = "u8"
    """Element type of the paged KV cache. Default u8."""
    prefix_caching: bool = True
    """Share KV blocks of bit-identical prompt prefixes between requests (same voice). Default true."""
    max_frames: int = field(default=2048, metadata={"min": 2})
    """Most 80 ms frames one request may produce (2048 = 164 s). Default 2048 frames."""
    max_text_chars: int = field(default=2000, metadata={"min": 1})
    """Longest accepted text, in characters. Default 2000."""
    first_chunk_frames: int = field(default=2, metadata={"min": 1})
    """Frames in the first codec chunk of a stream (built into the bundle). Default 2 = 160 ms."""
    chunk_frames: int = field(default=12, metadata={"min": 1})
    """Frames in each later codec chunk (built into the bundle). Default 12 = 960 ms."""
    temperature: float = field(default=0.9, metadata={"min": 0.0})
    """Talker sampling temperature; 0 means greedy. Default 0.9 (official)."""
    top_k: int = field(default=50, metadata={"min": 0})
    """Talker top-k; 0 disables. Default 50 (official)."""
    top_p: float = field(default=1.0, metadata={"min": 0.0, "max": 1.0})
    """Talker nucleus threshold. Default 1.0 (official)."""
    repetition_penalty: float = field(default=1.05, metadata={"min": 1.0})
    """Penalty on repeated code-0 tokens. Default 1.05 (official)."""
    subtalker_temperature: float = field(default=0.9, metadata={"min": 0.0})
    """Code-predictor sampling temperature; 0 means greedy. Default 0.9 (official)."""
    subtalker_top_k: int = field(default=50, metadata={"min": 0})
    """Code-predictor top-k; 0 disables (the sampler then sorts nothing). Default 50 (official)."""
    subtalker_top_p: float = field(default=1.0, metadata={"min": 0.0, "max": 1.0})
    """Code-predictor nucleus threshold. Default 1.0 (official)."""


@dataclass(frozen=True)
class VoiceSettings:
    """What an announcement sounds like when it does not say."""

    voice: str = ""
    """Default speaker (CustomVoice preset name); empty picks the bundle's first speaker. Default empty."""
    language: str = "auto"
    """Default language name (english, chinese, ...) or auto. Default auto."""
    instruct: str = ""
    """Default style instruction (VoiceDesign / 1.7B CustomVoice). Default empty."""
    ref_audio: Path | None = None
    """Reference WAV whose voice a Base bundle speaks with. Default none."""


@dataclass(frozen=True)
class TextSettings:
    """How announcement text becomes what the model says (see docs/text.md)."""

    normalize: bool = True
    """Say numbers, times, prices, units and codes as words; a message may opt out. Default true."""
    lexicon: Path | None = None
    """Site lexicon YAML (words or patterns -> how they are said), reloaded on SIGHUP. Default none."""
    front_end_timeout_s: float = field(default=2.0, metadata={"min": 0.0, "max": 600.0})
    """Seconds the text front end may take over one text; past it its worker process is killed and
    replaced, and the text fails with that reason. 0: run it in-process, unguarded. Default 2 s."""
    front_end_workers: int = field(default=2, metadata={"min": 1, "max": 8})
    """Worker processes of the guarded text front end (texts read at once). Default 2."""


@dataclass(frozen=True)
class MqttSettings:
    """The MQTT broker and topic contract."""

    host: str = "127.0.0.1"
    """Broker host name or address. Default 127.0.0.1."""
    port: int = field(default=1883, metadata={"min": 1, "max": 65535})
    """Broker TCP port (8883 is usual with TLS). Default 1883."""
    prefix: str = field(default="qwen3tts", metadata={"topic": "level"})
    """First topic level. Default qwen3tts."""
    site: str = field(default="", metadata={"topic": "level"})
    """Second topic level naming this appliance; empty means the host name. Default empty."""
    client_id: str = ""
    """MQTT client id; empty derives a stable one from /etc/machine-id. Default empty."""
    protocol: Literal["5", "3.1.1"] = "5"
    """Preferred protocol; 5 falls back to 3.1.1 when the broker refuses it. Default 5."""
    keepalive: int = field(default=30, metadata={"min": 5})
    """Keepalive interval in seconds. Default 30 s."""
    username: str = ""
    """User name; empty for anonymous. Default empty."""
    password_file: Path | None = None
    """File holding the password; else $CREDENTIALS_DIRECTORY/mqtt-password when present. Default none."""
    tls_ca: Path | None = None
    """CA certificate file; setting it enables TLS. Default none."""
    tls_cert: Path | None = None
    """Client certificate file for mutual TLS. Default none."""
    tls_key: Path | None = None
    """Client key file for mutual TLS. Default none."""
    max_queued_messages: int = field(default=1000, metadata={"min": 200})
    """Bound on outgoing messages not yet acknowledged by the broker (also while disconnected); reading
    pauses at a quarter of it so no answer is dropped. At least 200 (the rest covers the answers of the
    messages already handed over). Default 1000."""
    session_expiry: int = field(default=3600, metadata={"min": 0})
    """MQTT 5 session expiry in seconds, so QoS 1 commands wait for a restart. Default 3600 s."""
    discovery: bool = True
    """Publish Home Assistant discovery configs. Default true."""
    discovery_prefix: str = field(default="homeassistant", metadata={"topic": "prefix"})
    """Home Assistant discovery prefix. Default homeassistant."""
    hermes: bool = False
    """Also serve the Hermes topics hermes/tts/say -> sayFinished. Default false."""
    hermes_site_id: str = "default"
    """Hermes siteId this appliance answers to. Default default."""
    hermes_chime: bool = False
    """Play the announcement chime before Hermes dialogue replies. Default false."""
    hermes_satellites: tuple[str, ...] = field(default=(), metadata={"may_be_empty": True})
    """Hermes siteIds of Rhasspy satellites this box speaks for: a hermes/tts/say for one of them is
    synthesised here and its WAV published to hermes/audioServer/<siteId>/playBytes/<id>; each is also
    a zone of this box named by the siteId (letters, digits, . _ -). Needs hermes. Default none."""
    hermes_play_timeout: float = field(default=10.0, metadata={"min": 0.5, "max": 600.0})
    """Seconds a satellite may take beyond the length of the audio to send its playFinished; after that
    sayFinished goes out anyway and the announcement ends in an `error` naming the zone. Default 10 s."""
    response_prefix: str = field(default="", metadata={"topic": "prefix"})
    """MQTT 5 response topics answered besides <prefix>/<site>/reply/...; empty for none. Default empty."""
    pool: str = field(default="", metadata={"topic": "level"})
    """Synthesis pool (MQTT 5 shared subscription group) this box joins: it also speaks announcements
    published to <pool_topic>/say, each taken by one member of the group; empty joins none. Default empty."""
    pool_topic: str = field(default="", metadata={"topic": "prefix"})
    """Topic of the pool: members read <pool_topic>/say; empty means <prefix>/pool. Default empty."""
    pool_max_waiting: int = field(default=2, metadata={"min": 1})
    """Pooled announcements are taken only while fewer announcements than this wait in the queue; the
    rest stay unacknowledged at the broker, where a peer rescues them if this box dies. Default 2."""
    pool_max_delay: float = field(default=30.0, metadata={"min": 1.0})
    """Seconds of estimated audio waiting ahead at which the box also leaves the round robin (the broker
    sends new pooled announcements to the others) until it is below again. Default 30 s."""


@dataclass(frozen=True)
class AnnouncementSettings:
    """Validation limits and the durable queue."""

    spool_dir: Path | None = None
    """Directory of the durable spool. Default null: <state>/spool ($STATE_DIRECTORY under systemd)."""
    max_payload_bytes: int = field(default=65536, metadata={"min": 64})
    """Largest accepted say payload in bytes. Default 64 KiB."""
    max_queue: int = field(default=100, metadata={"min": 1})
    """Most announcements waiting; more are rejected. Default 100."""
    default_ttl: float = field(default=0.0, metadata={"min": 0.0})
    """Seconds an announcement stays valid when it gives no ttl; 0 means forever. Default 0."""
    max_repeat: int = field(default=10, metadata={"min": 1})
    """Largest accepted repeat count. Default 10."""
    dedup_window: int = field(default=1000, metadata={"min": 1})
    """How many recent announcement ids are remembered to drop duplicates. Default 1000."""
    interrupted: Literal["cancel", "resume"] = "resume"
    """What happens to an announcement a higher priority one barged in on. Default resume."""
    on_shutdown: Literal["finish", "cancel"] = "finish"
    """On SIGTERM, finish the announcement playing or cancel it (it stays spooled). Default finish."""
    lookahead_s: float = field(default=20.0, metadata={"min": 0.0})
    """Seconds of audio synthesised ahead of playback (this and the next announcements). Default 20 s."""
    max_attempts: int = field(default=2, metadata={"min": 1})
    """A spooled announcement the daemon died on this many times is quarantined, not replayed. Default 2."""


@dataclass(frozen=True)
class CacheSettings:
    """The phrase cache: finished announcements' audio, replayed without synthesis."""

    enabled: bool = True
    """Store finished announcements on disk and replay identical ones; false writes nothing (a repeat
    still replays its first rendition from memory). Default true."""
    phrase_dir: Path | None = None
    """Directory of cached phrases. Default null: <cache>/phrases ($CACHE_DIRECTORY under systemd)."""
    max_bytes: int = field(default=256 * 2**20, metadata={"min": 0})
    """Size bound of the phrase directory in bytes; least recently used out. Default 268435456 (256 MiB)."""


@dataclass(frozen=True)
class LoudnessSettings:
    """Even loudness: every announcement and every chime brought to one integrated loudness (ITU-R BS.1770,
    measured with pyloudnorm) under a true-peak ceiling, while the speech streams (docs/benchmarks.md)."""

    enabled: bool = True
    """Level announcements and chimes; false plays them at the level the model and the files have.
    Default true."""
    target_lufs: float = field(default=-18.0, metadata={"min": -40.0, "max": -6.0})
    """Integrated loudness of every announcement and chime, in LUFS. Default -18 LUFS."""
    true_peak_dbtp: float = field(default=-1.0, metadata={"min": -20.0, "max": 0.0})
    """Ceiling of the true (4x oversampled) peak, in dBTP; a look-ahead limiter holds it. Default -1 dBTP."""
    max_gain_db: float = field(default=20.0, metadata={"min": 0.0, "max": 40.0})
    """Most a quiet sound is raised, in dB, so near-silence is not lifted into noise. Default 20 dB."""


@dataclass(frozen=True)
class AudioSettings:
    """Where the sound goes."""

    sink: Literal["auto", "alsa", "wav", "null"] = "auto"
    """auto uses ALSA when an output device exists, else WAV files. Default auto."""
    device: str = ""
    """ALSA/PortAudio device name (substring match); empty is the default device. Default empty."""
    wav_dir: Path | None = None
    """Directory for the wav sink, one file per announcement. Default null: <state>/wav."""
    wav_realtime: bool = False
    """Write WAV files at the speed a loudspeaker plays them (a demo, or a test that needs an announcement
    to be still playing when the next message arrives). Default false: as fast as synthesis goes."""
    volume: float = field(default=1.0, metadata={"min": 0.0, "max": 1.0})
    """Master volume, 0..1. Default 1.0."""
    muted: bool = False
    """Mute everything but emergency announcements. Default false."""
    lead_in_ms: int = field(default=300, metadata={"min": 0, "max": 5000})
    """Silence before each announcement so amplifiers wake, in ms. Default 300 ms."""
    tail_ms: int = field(default=300, metadata={"min": 0, "max": 5000})
    """Silence after each announcement so the end is not clipped, in ms. Default 300 ms."""
    fade_ms: int = field(default=10, metadata={"min": 0, "max": 500})
    """Fade at start, stop and barge-in, in ms. Default 10 ms."""
    block_ms: int = field(default=40, metadata={"min": 5, "max": 500})
    """Audio write granularity (barge-in reaction time), in ms. Default 40 ms."""
    jitter_buffer_ms: int = field(default=300, metadata={"min": 0})
    """Least audio buffered before playback starts; raised from the measured real-time factor. Default 300."""
    chime_normal: str = "default"
    """Chime before normal announcements: default, none, or a sound file (WAV, FLAC, Ogg, MP3; up to
    30 s). Default default."""
    chime_priority: str = "default"
    """Chime before priority announcements: default, none, or a sound file (WAV, FLAC, Ogg, MP3; up to
    30 s). Default default."""
    chime_emergency: str = "default"
    """Chime before emergency announcements: default, none, or a sound file (WAV, FLAC, Ogg, MP3; up to
    30 s). Default default."""
    loudness: LoudnessSettings = field(default_factory=LoudnessSettings)
    """The loudness every announcement and chime is played at (a zone may set its own)."""


ZONE_NAME_PATTERN = r"[A-Za-z0-9._-]{1,64}"
"""Zone names: one MQTT topic level of letters, digits and . _ - (`platform-3`, `car.park`)."""


@dataclass(frozen=True)
class SnapcastSettings:
    """A zone's Snapcast output: the snapserver stream it feeds and the groups it switches to that stream."""

    host: str = "127.0.0.1"
    """snapserver's host name or address, for its JSON-RPC control (Group.SetStream). Default 127.0.0.1."""
    control_port: int = field(default=1705, metadata={"min": 1, "max": 65535})
    """snapserver's JSON-RPC TCP port (its tcp.port). Default 1705."""
    source: str = "tcp://127.0.0.1:4953"
    """Where the PCM goes: tcp://host:port, the stream's `tcp://` source in server mode (snapserver listens;
    works across machines), or pipe:///path, the stream's `pipe://` source on this host. Default
    tcp://127.0.0.1:4953 (docs/operations.md has the measurements behind it)."""
    stream: str = "announcements"
    """Id (the `name=`) of the snapserver stream that source feeds. Default announcements."""
    clients: tuple[str, ...] = ("*",)
    """Snapcast clients of this zone, by id or name: each group holding one of them is switched to the
    stream while an announcement plays and back afterwards; * is every group. Default *."""
    buffer_ms: int = field(default=1000, metadata={"min": 0, "max": 10000})
    """snapserver's stream.buffer: how long after the last write the clients play the last sample (the
    group is switched back then). Default 1000 ms."""
    connect_timeout_s: float = field(default=2.0, metadata={"min": 0.1, "max": 60.0})
    """Timeout of one JSON-RPC call or connection to snapserver, in seconds. Default 2 s."""


@dataclass(frozen=True)
class SnapcastDuckSettings:
    """Ducking on Snapcast: the volume of the zone's Snapcast clients lowered over JSON-RPC."""

    host: str = "127.0.0.1"
    """snapserver's host name or address, for its JSON-RPC control (Client.SetVolume). Default 127.0.0.1."""
    control_port: int = field(default=1705, metadata={"min": 1, "max": 65535})
    """snapserver's JSON-RPC TCP port (its tcp.port). Default 1705."""
    clients: tuple[str, ...] = ()
    """Snapcast clients lowered, by id or name; * is every client; empty lowers none. Default empty."""
    connect_timeout_s: float = field(default=2.0, metadata={"min": 0.1, "max": 60.0})
    """Timeout of one JSON-RPC call to snapserver, in seconds. Default 2 s."""


@dataclass(frozen=True)
class AlsaMixerDuckSettings:
    """Ducking on an ALSA mixer control (through `amixer`), where the card has one."""

    card: str = ""
    """The card (`amixer -c`): its index or name, e.g. 0 or PCH. Default empty: the default card."""
    control: str = ""
    """The simple mixer control lowered, e.g. Master or PCM; empty lowers none. Default empty."""


@dataclass(frozen=True)
class DuckingSettings:
    """What a zone lowers while an announcement plays in it (docs/operations.md, "Ducking")."""

    level_db: float = field(default=-20.0, metadata={"min": -90.0, "max": 0.0})
    """How far other audio is lowered while an announcement plays, in dB (0 or less). Default -20 dB."""
    ramp_in_ms: int = field(default=300, metadata={"min": 0, "max": 10000})
    """How long the lowering takes, in ms; the chime starts after it. Default 300 ms."""
    ramp_out_ms: int = field(default=800, metadata={"min": 0, "max": 10000})
    """How long raising it back takes after the last sample, in ms. Default 800 ms."""
    mqtt_topic: str = field(default="", metadata={"topic": "prefix"})
    """Topic of the zone's `duck` / `unduck` messages (docs/mqtt.md); empty sends none. Default empty."""
    snapcast: SnapcastDuckSettings = field(default_factory=SnapcastDuckSettings)
    """Snapcast clients whose volume is lowered; none by default."""
    alsa_mixer: AlsaMixerDuckSettings = field(default_factory=AlsaMixerDuckSettings)
    """An ALSA mixer control lowered; none by default."""

    @property
    def enabled(self) -> bool:
        """True when anything is lowered at all."""
        return bool(self.mqtt_topic or self.snapcast.clients or self.alsa_mixer.control)


@dataclass(frozen=True)
class ZoneSettings:
    """One zone of this box: a name announcements address and the output it plays on."""

    name: str = field(default="", metadata={"topic": "level"})
    """The zone's name (letters, digits, . _ -; also its topic <prefix>/zone/<name>/say). Required."""
    output: Literal["alsa", "wav", "null", "snapcast"] = "alsa"
    """alsa (a sound card), wav (files), null (discard) or snapcast (a snapserver stream). Default alsa."""
    device: str = ""
    """alsa: the ALSA/PortAudio device name (substring match); empty is the default device. Default empty."""
    wav_dir: Path | None = None
    """wav: the directory, one file per announcement. Default null: <state>/wav/<name>."""
    wav_realtime: bool = False
    """wav: write at the speed a loudspeaker plays. Default false."""
    snapcast: SnapcastSettings = field(default_factory=SnapcastSettings)
    """snapcast: the snapserver and stream."""
    ducking: DuckingSettings = field(default_factory=DuckingSettings)
    """What this zone lowers while an announcement plays in it; nothing by default."""
    loudness: LoudnessSettings | None = None
    """This zone's loudness (all of its keys, as in audio.loudness). Default null: audio.loudness."""


@dataclass(frozen=True)
class ThermalSettings:
    """The governor that shrinks the batch when the chip runs hot."""

    enabled: bool = True
    """Run the thermal governor. Default true."""
    sysfs_root: Path = Path("/sys")
    """Root of sysfs (tests point it at a fake tree). Default /sys."""
    interval_s: float = field(default=1.0, metadata={"min": 0.05})
    """Sampling interval in seconds. Default 1 s."""
    ewma_alpha: float = field(default=0.3, metadata={"min": 0.01, "max": 1.0})
    """Smoothing factor of the temperature EWMA. Default 0.3."""
    zone_types: tuple[str, ...] = ("x86_pkg_temp", "TCPU")
    """Thermal zone types that count. Default x86_pkg_temp, TCPU."""
    t_hot_c: float = field(default=85.0, metadata={"min": 20.0, "max": 150.0})
    """Step-down temperature in °C when no passive trip point exists. Default 85 °C."""
    trip_margin_c: float = field(default=5.0, metadata={"min": 0.0})
    """T_hot = lowest passive trip point minus this, in °C. Default 5 °C."""
    hysteresis_c: float = field(default=5.0, metadata={"min": 0.0})
    """Step up only below T_hot minus this, in °C. Default 5 °C."""
    dwell_s: float = field(default=30.0, metadata={"min": 0.0})
    """Seconds below T_hot - hysteresis before stepping up one level. Default 30 s."""
    batch_levels: tuple[int, ...] = (4, 2, 1)
    """Batch limits from cool to hot. Default 4, 2, 1."""


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
        "alloy=vivian", "echo=ryan", "fable=aiden", "onyx=uncle_fu", "nova=serena", "shimmer=ono_anna",
    )  # fmt: skip
    """OpenAI voice names as NAME=VOICE: a request for NAME speaks with the bundle's VOICE (a bundle voice
    called NAME comes first; a VOICE the bundle lacks gives the default voice and a warning header).
    Default: the six classic OpenAI voices onto CustomVoice speakers."""
    status_page: bool = True
    """Serve the status page at /status (state, queue, engine, events, a form to speak); same token and
    bind rules as the API. Default true."""


@dataclass(frozen=True)
class ServersSettings:
    """Network front doors sharing the engine: audio goes back to the caller, never to the speaker."""

    wyoming: WyomingServerSettings = field(default_factory=WyomingServerSettings)
    """The Wyoming server."""
    http: HttpServerSettings = field(default_factory=HttpServerSettings)
    """The HTTP server."""
    max_concurrent_requests: int = field(default=2, metadata={"min": 1, "max": 64})
    """Network requests synthesised at once over both servers; more are refused as busy. Default 2."""
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


@dataclass(frozen=True)
class LoggingSettings:
    """Operator logs."""

    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    """Log level. Default INFO."""


@dataclass(frozen=True)
class Settings:
    """The whole configuration."""

    model: ModelSettings = field(default_factory=ModelSettings)
    devices: DeviceSettings = field(default_factory=DeviceSettings)
    engine: EngineSettings = field(default_factory=EngineSettings)
    voice: VoiceSettings = field(default_factory=VoiceSettings)
    text: TextSettings = field(default_factory=TextSettings)
    mqtt: MqttSettings = field(default_factory=MqttSettings)
    announcements: AnnouncementSettings = field(default_factory=AnnouncementSettings)
    cache: CacheSettings = field(default_factory=CacheSettings)
    audio: AudioSettings = field(default_factory=AudioSettings)
    thermal: ThermalSettings = field(default_factory=ThermalSettings)
    servers: ServersSettings = field(default_factory=ServersSettings)
    logging: LoggingSettings = field(default_factory=LoggingSettings)
    zones: tuple[ZoneSettings, ...] = ()
    """The zones of this box (docs/operations.md). Empty: one zone `default`, the `audio` section's sink."""

    def __post_init__(self) -> None:
        names = [zone.name for zone in self.zones]
        for index, zone in enumerate(self.zones):
            if not re.fullmatch(ZONE_NAME_PATTERN, zone.name):
                raise ConfigError(
                    f"zones[{index}].name: expected 1-64 of A-Z a-z 0-9 . _ -, got {zone.name!r}"
                )
            if names.index(zone.name) != index:
                first = names.index(zone.name)
                raise ConfigError(f"zones[{index}].name: {zone.name!r} is already the name of zones[{first}]")
        _check_satellites(self.mqtt, tuple(names) or ("default",))


def _check_satellites(mqtt: MqttSettings, zones: tuple[str, ...]) -> None:
    """Satellite siteIds become zone names and topic levels: they must be valid and distinct."""
    if mqtt.hermes_satellites and not mqtt.hermes:
        raise ConfigError("mqtt.hermes_satellites: needs mqtt.hermes: true")
    for index, site in enumerate(mqtt.hermes_satellites):
        key = f"mqtt.hermes_satellites[{index}]"
        if not re.fullmatch(ZONE_NAME_PATTERN, site):
            raise ConfigError(f"{key}: expected 1-64 of A-Z a-z 0-9 . _ -, got {site!r}")
        if site == mqtt.hermes_site_id:
            raise ConfigError(f"{key}: {site!r} is this box's own siteId (mqtt.hermes_site_id)")
        if site in zones or mqtt.hermes_satellites.index(site) != index:
            raise ConfigError(f"{key}: {site!r} is already the name of a zone of this box")


def read_mqtt_password(mqtt: MqttSettings, environ: dict[str, str] | None = None) -> str | None:
    """The MQTT password from password_file, else from systemd's $CREDENTIALS_DIRECTORY/mqtt-password.

    Secrets never live in the YAML: it is often world-readable and ends up in bug reports.
    """
    return _read_secret(mqtt.password_file, "mqtt-password", "mqtt.password_file", environ)


def read_http_token(http: HttpServerSettings, environ: dict[str, str] | None = None) -> str | None:
    """The HTTP bearer token from token_file, else from $CREDENTIALS_DIRECTORY/http-token."""
    token = _read_secret(http.token_file, "http-token", "servers.http.token_file", environ)
    if token == "" and http.token_file is not None:
        raise ConfigError(f"servers.http.token_file: {http.token_file} is empty")
    return token or None  # an empty systemd credential (the installer's placeholder) means no token


def _read_secret(path: Path | None, credential: str, key: str, environ: dict[str, str] | None) -> str | None:
    """A secret from its file, else from systemd's credentials directory; None when neither exists."""
    environ = os.environ if environ is None else environ
    if path is None and environ.get("CREDENTIALS_DIRECTORY"):
        candidate = Path(environ["CREDENTIALS_DIRECTORY"]) / credential
        path = candidate if candidate.exists() else None
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read {path}: {exc.strerror}") from exc
