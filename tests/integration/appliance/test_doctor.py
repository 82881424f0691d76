"""`qwen3tts doctor`: the whole chain with ✔/✘ and the fix, a non-zero exit when something needed is
broken, --json. Real mosquitto (plain, and TLS with a password), a real tiny bundle, fake /dev and
/sys trees, and a fake OpenVINO core only where a GPU must seem present."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fake_sysfs import laptop
from test_mqtt_security import PASSWORD, secure_broker  # noqa: F401 - the TLS + password broker fixture

from qwen3tts.commands.doctor import run_checks
from qwen3tts.doctor.check import exit_code, render_text
from qwen3tts.settings_loader import load_settings


class FakeCore:
    """What the doctor asks OpenVINO: the device list and driver-version properties."""

    def __init__(self, devices):
        self.available_devices = devices

    def get_property(self, device, name):
        if name == "SUPPORTED_PROPERTIES":
            return ["FULL_DEVICE_NAME", "GPU_DRIVER_VERSION"] if device.startswith("GPU") else []
        return "24.52.32224" if name == "GPU_DRIVER_VERSION" else "?"


@pytest.fixture
def machine(tmp_path, tiny_models):
    """A bundle, a spool with one quarantined entry, a WAV directory, a laptop's sysfs, a /dev."""
    bundle = tmp_path / "bundle"
    shutil.copytree(tiny_models.bundle("custom_voice", "tiny", "f32"), bundle)
    (tmp_path / "spool" / "quarantine").mkdir(parents=True)
    (tmp_path / "spool" / "quarantine" / "000000000007.json.1767225600").write_text("{broken")
    (tmp_path / "spool" / "000000000008.json").write_text("{}")
    sysfs = tmp_path / "sys"
    laptop(sysfs, package_c=55.0)
    dev = tmp_path / "dev"
    (dev / "dri").mkdir(parents=True)
    (dev / "dri" / "renderD128").write_text("")
    return tmp_path


def settings_for(root: Path, broker_port: int, *extra: str):
    return load_settings(
        None,
        [
            f"model.bundle={root / 'bundle'}",
            f"announcements.spool_dir={root / 'spool'}",
            "audio.sink=wav",
            f"audio.wav_dir={root / 'wav'}",
            f"thermal.sysfs_root={root / 'sys'}",
            f"mqtt.port={broker_port}",
            *extra,
        ],
    )


def by_name(checks):
    return {c.name: c for c in checks}


def test_a_working_appliance_passes_and_optional_problems_are_shown_with_their_fix(machine, mosquitto):
    os.chmod(machine / "dev" / "dri" / "renderD128", 0o666)
    settings = settings_for(machine, mosquitto.port)
    checks = run_checks(settings, settings.thermal, machine / "dev", 5.0, core=FakeCore(["CPU", "GPU"]))
    found = by_name(checks)
    assert exit_code(checks) == 0, render_text(checks)
    assert found["OpenVINO"].ok and found["bundle"].ok and found["broker"].ok and found["spool"].ok
    assert "24.52.32224" in found["GPU"].detail and found["GPU"].ok
    assert not found["NPU"].ok and not found["NPU"].needed  # the codec falls back to the CPU
    assert "1 announcement(s) waiting" in found["spool"].detail
    assert not found["quarantine"].ok and "000000000007.json.1767225600" in found["quarantine"].detail
    assert not found["weights"].ok and "random (qwen3tts tiny)" in found["weights"].detail
    assert found["thermal sensors"].ok and "55.0 °C" in found["thermal sensors"].detail
    assert found["wyoming server"].ok and "disabled" in found["wyoming server"].detail
    assert found["http server"].ok and "port 8080" in found["http server"].detail
    paths = found["decode paths"].detail  # an f32 bundle: the fused frame reads INT8 or INT4 weights only
    assert "code_predictor plugin (the bundle's code predictor weights are f32, not INT8 or INT4" in paths
    text = render_text(checks)
    assert "✔ broker: mqtt://127.0.0.1:" in text and "✘ weights (optional): random" in text
    assert "    fix: build a bundle from a release checkpoint" in text
    assert text.endswith("everything needed works\n")


def test_a_device_node_the_service_user_cannot_open_is_reported(machine, mosquitto):
    os.chmod(machine / "dev" / "dri" / "renderD128", 0o600)  # root's group, no group or other access
    settings = settings_for(machine, mosquitto.port, "devices.talker=[GPU]")  # no CPU fallback: needed
    checks = run_checks(settings, settings.thermal, machine / "dev", 5.0, core=FakeCore(["CPU", "GPU"]))
    gpu = by_name(checks)["GPU"]
    assert not gpu.ok and gpu.needed and "not rw for the service user" in gpu.detail
    assert "group render, mode 0660" in gpu.fix
    assert exit_code(checks) == 1


def test_a_broken_bundle_and_an_unreachable_broker_fail_the_doctor_in_json(machine, mosquitto):
    port = mosquitto.port
    mosquitto.stop()
    (machine / "bundle" / "text_table.npy").write_bytes(b"not the table")
    result = subprocess.run(
        [sys.executable, "-m", "qwen3tts", "--set", f"model.bundle={machine / 'bundle'}", "--set",
         f"mqtt.port={port}", "--set", "audio.sink='null'", "doctor", "--json", "--timeout", "2"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    broken = {c["name"]: c for c in document["checks"] if not c["ok"] and c["needed"]}
    assert document["ok"] is False and set(broken) == {"bundle", "broker"}
    assert "text_table.npy: sha256 differs" in broken["bundle"]["detail"]
    assert "ConnectionRefusedError" in broken["broker"]["detail"] and broken["broker"]["fix"]


def test_the_broker_check_authenticates_over_tls(machine, secure_broker, tmp_path):  # noqa: F811
    broker, certs = secure_broker
    secret = tmp_path / "mqtt.pass"
    tls = [f"mqtt.tls_ca={certs / 'ca.crt'}", f"mqtt.tls_cert={certs / 'client.crt'}"]
    tls += [f"mqtt.tls_key={certs / 'client.key'}", "mqtt.username=appliance", f"mqtt.password_file={secret}"]
    settings = settings_for(machine, broker.port, *tls)
    for password, accepted in ((PASSWORD, True), ("wrong", False)):
        secret.write_text(password)
        checks = by_name(run_checks(settings, settings.thermal, machine / "dev", 5.0, core=FakeCore(["CPU"])))
        assert checks["broker"].ok is accepted, checks["broker"].detail
        assert checks["broker TLS"].ok is accepted
        if not accepted:
            assert "refused" in checks["broker"].detail
    assert "mqtts://127.0.0.1" in checks["broker"].detail and "as appliance" in checks["broker"].detail


@pytest.mark.parametrize("native_kernels", ["always", "never"])
def test_the_doctor_names_the_decode_path_of_each_stage(machine, mosquitto, tiny_models, native_kernels):
    from qwen3tts.runtime.native import load_library

    shutil.rmtree(machine / "bundle")
    shutil.copytree(tiny_models.bundle("custom_voice", "tiny", "int8"), machine / "bundle")
    kernels = f"devices.native_kernels={native_kernels}"
    settings = settings_for(machine, mosquitto.port, kernels, "devices.native_talker=never")
    checks = by_name(run_checks(settings, settings.thermal, machine / "dev", 5.0, core=FakeCore(["CPU"])))
    paths = checks["decode paths"].detail
    if native_kernels == "never":
        assert paths.startswith("talker plugin (devices.native_kernels is never); code_predictor plugin (")
        assert paths.endswith("; native library not loaded (not asked for)")
    else:
        library = load_library()  # what the daemon would load on this CPU
        isa = library.isa
        assert paths.startswith(f"talker plugin+op {isa} (devices.native_kernels is always)")
        assert f"code_predictor fused native {isa} (devices.native_kernels is always)" in paths
        assert paths.endswith(f"; native library {library.path} ({isa} kernels)")


def test_the_doctor_does_not_claim_the_op_for_a_talker_without_int8_weights(machine, mosquitto, tiny_models):
    shutil.rmtree(machine / "bundle")
    shutil.copytree(tiny_models.bundle("custom_voice", "tiny", "f16"), machine / "bundle")
    settings = settings_for(machine, mosquitto.port, "devices.native_kernels=always")
    checks = by_name(run_checks(settings, settings.thermal, machine / "dev", 5.0, core=FakeCore(["CPU"])))
    paths = checks["decode paths"].detail
    assert paths.startswith(
        "talker plugin (devices.native_kernels is always; the talker's weights are f16"
    ), paths
    assert "code_predictor plugin (" in paths and "not INT8" in paths
