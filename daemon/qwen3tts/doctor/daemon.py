"""What the daemon is configured to use: the bundle, the spool and its quarantine, the broker, the audio
output. Read-only: nothing here writes into the spool or the WAV directory of a running daemon."""

from __future__ import annotations

import os
from pathlib import Path

from qwen3tts.doctor.check import Check
from qwen3tts.errors import BundleError, Qwen3TTSError
from qwen3tts.settings import AudioSettings, DeviceSettings, MqttSettings

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def bundle_check(bundle: Path) -> list[Check]:
    """The bundle verifies (every sha256), and whether its weights are a release's or random."""
    from qwen3tts.model.bundle import read_manifest, weights_kind
    from qwen3tts.paths import default_bundle

    build = f"qwen3tts build --checkpoint DIR --out {bundle} (docs/models.md)"
    if not (bundle / "manifest.json").is_file():
        demo = (
            ", or `qwen3tts run --embedded` builds the random demo bundle here"
            if bundle == default_bundle()
            else ""
        )
        return [Check("bundle", False, f"no bundle at {bundle}", f"build it: {build}{demo}")]
    try:
        manifest = read_manifest(bundle)
    except Qwen3TTSError as exc:
        return [Check("bundle", False, str(exc), f"rebuild it: {build}")]
    spec = manifest.spec
    found = f"{spec.size} {spec.variant}, {len(manifest.files)} files verified, {bundle}"
    checks = [Check("bundle", True, found)]
    checks.append(
        Check(
            "weights",
            not manifest.random_weights,
            weights_kind(manifest) + (": it babbles, it is no voice" if manifest.random_weights else ""),
            f"build a bundle from a release checkpoint: {build}",
            needed=False,
        )
    )
    return checks


def codec_variant_check(bundle: Path, devices: DeviceSettings, core) -> list[Check]:
    """Which codec graphs the daemon would load on this CPU, and why (runtime/codec_variants.py)."""
    from qwen3tts.model.bundle import loadable_codec_variants, read_manifest
    from qwen3tts.runtime.codec_variants import choose_codec_variant

    # no bundle, or a CPU plugin that cannot answer (OpenVINO raises RuntimeError): their own checks say so
    try:
        manifest = read_manifest(bundle, verify_files=False)
        capabilities = tuple(core.get_property("CPU", "OPTIMIZATION_CAPABILITIES"))
    except (BundleError, OSError, RuntimeError):
        return []
    chosen, why = choose_codec_variant(loadable_codec_variants(manifest), devices, "CPU", capabilities)
    return [Check("codec graphs", True, f"{chosen.name if chosen else 'f32 exact'} on the CPU: {why}")]


def decode_path_check(bundle: Path, devices: DeviceSettings, available, max_num_seqs: int) -> list[Check]:
    """Which path each decode stage would take on this CPU with engine.max_num_seqs sequences, and why
    (runtime/native_plan.py): what the ready line and the status (`decode_paths`) will say, unless the
    bundle's tensors turn out unreadable."""
    from qwen3tts.model.bundle import read_manifest
    from qwen3tts.runtime.devices import preference_lists
    from qwen3tts.runtime.native import DEFAULT_LIBRARY, load_library
    from qwen3tts.runtime.native_plan import choose_fused_code_predictor, choose_native, choose_native_talker

    try:
        manifest = read_manifest(bundle, verify_files=False)
    except (BundleError, OSError):  # no bundle, or an unreadable one: its own check says so
        return []
    library = None
    wanted = devices.native_kernels != "never" or devices.native_talker == "always"
    if wanted and devices.inference_precision != "f32":
        library = load_library(devices.native_library)  # no core: nothing is compiled here
    isa, prefs, available = library and library.isa, preference_lists(devices), list(available)
    op = choose_native(devices, isa, prefs, available)
    weights = manifest.precision.get("code_predictor", "unknown")
    fused = choose_fused_code_predictor(devices, isa, prefs, available, weights, max_num_seqs)
    talker_weights = manifest.precision.get("talker", "unknown")
    native_talker = choose_native_talker(devices, isa, prefs, available, max_num_seqs, talker_weights)
    talker, why = "plugin", op.why
    if "talker" in op.components and talker_weights == "int8":
        talker = f"plugin+op {isa}"
    elif "talker" in op.components:  # the op replaces INT8 MatMuls only (runtime/native.py)
        why = f"{op.why}; the talker's weights are {talker_weights}, not INT8"
    talker = f"fused native {isa}" if native_talker.wanted else talker
    above = "" if fused.up_to is None else f" up to batch {fused.up_to}, plugin above"
    predictor = f"fused native {isa}{above}" if fused.wanted else "plugin"
    why = native_talker.why if native_talker.wanted else why
    detail = f"talker {talker} ({why}); code_predictor {predictor} ({fused.why})"
    path = devices.native_library or DEFAULT_LIBRARY
    if library is not None:  # which file: a packaged box and a checkout find it in different places
        detail += f"; native library {library.path} ({isa} kernels)"
    elif wanted and devices.inference_precision != "f32":
        detail += f"; native library {path} not built or not loadable"
    else:
        detail += "; native library not loaded (not asked for)"
    return [Check("decode paths", True, detail)]


def spool_checks(spool_dir: Path) -> list[Check]:
    """The spool is (or can be made) writable; announcements waiting; corrupt ones set aside."""
    existing = next((p for p in (spool_dir, *spool_dir.parents) if p.exists()), None)
    writable = existing is not None and existing.is_dir() and os.access(existing, os.W_OK | os.X_OK)
    if spool_dir.is_dir():
        waiting = len(list(spool_dir.glob("*.json")))
        detail = f"{spool_dir}, {waiting} announcement(s) waiting"
    else:
        detail = f"{spool_dir} does not exist yet; it is created at the first start"
    fix = f"make {existing or spool_dir} writable by the service user (or set announcements.spool_dir)"
    checks = [Check("spool", writable, detail if writable else f"{spool_dir} is not writable", fix)]
    from qwen3tts.appliance.announcements.spool import QUARANTINE, quarantined

    quarantine = [path.name for path in quarantined(spool_dir)]  # oldest first
    detail = "empty" if not quarantine else f"{len(quarantine)} corrupt entries: {', '.join(quarantine[:5])}"
    fix = f"look at them and delete them: {spool_dir / QUARANTINE}"
    checks.append(Check("quarantine", not quarantine, detail, fix, needed=False))
    return checks


def broker_checks(mqtt: MqttSettings, timeout: float) -> list[Check]:
    """Reachable, authenticates, and TLS on (or the broker is on this machine)."""
    from qwen3tts.appliance.mqtt.probe import probe_broker

    scheme = "mqtts" if mqtt.tls_ca else "mqtt"
    who = f" as {mqtt.username}" if mqtt.username else " anonymously"
    where = f"{scheme}://{mqtt.host}:{mqtt.port}{who}"
    try:
        problem = probe_broker(mqtt, timeout)
    except Qwen3TTSError as exc:  # unreadable password file, CA or certificate
        problem = str(exc)
    fix = (
        "check mqtt.host/port, that the broker runs, mqtt.username and the password "
        "(mqtt.password_file or $CREDENTIALS_DIRECTORY/mqtt-password), and mqtt.tls_* files"
    )
    detail = f"{where}: accepted the connection" if problem is None else f"{where}: {problem}"
    checks = [Check("broker", problem is None, detail, fix)]
    local = mqtt.host in LOOPBACK
    if mqtt.tls_ca:
        verified = f"on, server verified against {mqtt.tls_ca}"
        detail = verified if problem is None else "on; the connection failed (see broker)"
        checks.append(Check("broker TLS", problem is None, detail, needed=False))
    else:
        detail = (
            "off (the broker is on this machine)"
            if local
            else "off: the password and texts cross the network in clear"
        )
        fix = "set mqtt.tls_ca (and mqtt.port, usually 8883) to the broker's CA certificate"
        checks.append(Check("broker TLS", local, detail, fix, needed=False))
    return checks


def audio_check(audio: AudioSettings) -> Check:
    """The output opens (ALSA: at which rate); WAV: the directory is writable. Nothing is played."""
    if audio.sink == "null":
        return Check("audio", True, "null sink (audio is discarded)")
    if audio.sink == "wav":
        return _wav_dir_check(audio.wav_dir, needed=True)
    from qwen3tts.appliance.audio.alsa import AlsaSink

    try:
        sink = AlsaSink(audio.device, block_ms=audio.block_ms).open()
    except Qwen3TTSError as exc:
        fix = "connect a sound card; check `aplay -l`, audio.device, and the service user's group audio"
        if audio.sink == "alsa":
            fix += " (a running daemon holds the device: `systemctl stop qwen3tts` before this check)"
            return Check("audio", False, f"ALSA output {audio.device or 'default'}: {exc}", fix)
        wav = _wav_dir_check(audio.wav_dir, needed=True)
        return Check("audio", False, f"no ALSA output ({exc}); falls back to WAV files: {wav.detail}", fix,
                     needed=not wav.ok)  # fmt: skip
    try:
        return Check("audio", True, f"ALSA output {sink.name} opens at {sink.rate} Hz")
    finally:
        sink.close()


def _wav_dir_check(wav_dir: Path, needed: bool) -> Check:
    existing = next((p for p in (wav_dir, *wav_dir.parents) if p.exists()), None)
    ok = existing is not None and os.access(existing, os.W_OK | os.X_OK)
    return Check("audio", ok, f"WAV files in {wav_dir}" + ("" if ok else " (not writable)"),
                 f"make {existing or wav_dir} writable or set audio.wav_dir", needed)  # fmt: skip
