"""The Debian package in a fresh Debian root: install, use, run under systemd, upgrade, purge, lintian.

One root per release for the whole module (conftest.py): the tests run in file order, on bookworm
then on trixie, and each one leaves the box as the next expects it, the way an operator's box goes
through the package's life.
"""

from __future__ import annotations

import json
import os
import re
import time
import wave
from pathlib import Path

import numpy as np
import pytest

from conftest import FIRST_VERSIONS, PYTHONS, REPO, UPGRADE_VERSIONS

pytestmark = pytest.mark.slow

CONFFILE = "/etc/qwen3tts/qwen3tts.yaml"
UNIT = "/lib/systemd/system/qwen3tts.service"
BUNDLE = "/var/lib/qwen3tts/bundle"
AS_THE_SERVICE = {"STATE_DIRECTORY": "/var/lib/qwen3tts", "CACHE_DIRECTORY": "/var/cache/qwen3tts"}
EXPOSURE_LIMIT = 2.5  # as tests/integration/appliance/test_systemd_unit.py

# What a running Debian system changes by itself, and where the test keeps its own files (/root):
# never a place the package writes to.
NOT_THE_PACKAGES = (
    "proc",
    "sys",
    "dev",
    "run",
    "tmp",
    "var/tmp",
    "root",
    "var/log",
    "var/cache/apt",
    "var/lib/apt",
    "var/lib/dpkg",
    "var/cache/debconf",
    "var/cache/ldconfig",
    "etc/ld.so.cache",
    "var/lib/systemd/random-seed",
    "var/lib/systemd/timers",
    "var/lib/systemd/catalog",
)
KEPT_STATE = ("var/lib/qwen3tts", "var/lib/private")
BEFORE: dict[str, set[str]] = {}


def snapshot(root: Path) -> set[str]:
    """Every path in the root (relative), but for the system's own moving parts listed above."""
    paths = set()
    for directory, dirs, files in os.walk(root):
        rel = os.path.relpath(directory, root)
        rel = "" if rel == "." else rel + "/"
        dirs[:] = [d for d in dirs if (rel + d) not in NOT_THE_PACKAGES]
        paths.update(rel + name for name in dirs + files if (rel + name) not in NOT_THE_PACKAGES)
    return paths


def unit_property(box, name: str) -> str:
    return box.run(["systemctl", "show", "--value", "-p", name, "qwen3tts"]).stdout.strip()


def unit_journal(box, after: str = "") -> str:
    """The unit's journal (its last 200 lines), or what came after `after`, a cursor of `journal_cursor`."""
    since = ["--after-cursor", after] if after else ["-n", "200"]
    return box.run(["journalctl", "-u", "qwen3tts", "--no-pager", "-o", "cat", *since]).stdout


def journal_cursor(box) -> str:
    shown = box.run(["journalctl", "-u", "qwen3tts", "--no-pager", "-n", "1", "--show-cursor"]).stdout
    cursor = re.search(r"^-- cursor: (\S+)$", shown, re.M)
    return cursor.group(1) if cursor else ""


def doctor(box) -> tuple[int, dict]:
    """As README.Debian says: root's command without --config finds the conffile; the unit's paths."""
    result = box.run(["qwen3tts", "doctor", "--json", "--timeout", "1"], check=False, env=AS_THE_SERVICE)
    assert result.returncode in (0, 1), result.stderr[-2000:]
    return result.returncode, json.loads(result.stdout)


def check_named(report: dict, name: str) -> dict:
    (check,) = [c for c in report["checks"] if c["name"] == name]
    return check


def test_apt_installs_the_package_with_its_dependencies_and_enables_the_unit(box, suite, packages, lintian):
    # `lintian` only starts here: it runs for minutes alongside the tests that follow
    BEFORE["paths"] = snapshot(box.root)
    box.run(["apt-get", "install", "-y", "-qq", f"/root/{packages.first.name}"])
    assert box.run(["dpkg-query", "-W", "-f", "${Version}", "qwen3tts"]).stdout == FIRST_VERSIONS[suite]
    assert box.run(["qwen3tts", "--version"]).stdout.strip() == "qwen3tts 0.1.0"
    assert box.run(["systemctl", "is-enabled", "qwen3tts"]).stdout.strip() == "enabled"
    conffiles = box.run(["dpkg-query", "-W", "-f", "${Conffiles}", "qwen3tts"]).stdout.split()
    assert conffiles[0::2] == [CONFFILE]
    for secret in ("mqtt.pass", "http.token"):  # LoadCredential= needs them; nobody else may read them
        mode = (box.root / "etc/qwen3tts" / secret).stat().st_mode & 0o777
        assert mode == 0o600, (secret, oct(mode))


def test_the_venv_runs_on_the_roots_own_python(box, suite):
    python = f"python{PYTHONS[suite]}"
    assert os.readlink(box.root / "opt/qwen3tts/venv/bin" / python) == f"/usr/bin/{python}"
    cfg = (box.root / "opt/qwen3tts/venv/pyvenv.cfg").read_text()
    assert "home = /usr/bin\n" in cfg
    assert f"version = {PYTHONS[suite]}." in cfg
    assert (box.root / f"opt/qwen3tts/venv/lib/{python}/site-packages/qwen3tts/cli.py").is_file()
    assert box.run(["dpkg-query", "-W", "-f", "${Depends}", "qwen3tts"]).stdout.count(python) == 1
    ran = box.run(["/opt/qwen3tts/venv/bin/python", "-c", "import sys; print(sys.base_prefix, sys.version)"])
    assert ran.stdout.startswith(f"/usr {PYTHONS[suite]}."), ran.stdout


def test_the_venv_ships_no_test_suites_of_its_wheels(box, suite):
    site = box.root / f"opt/qwen3tts/venv/lib/python{PYTHONS[suite]}/site-packages"
    suites = sorted(str(p.relative_to(site)) for p in site.rglob("tests") if p.is_dir())
    assert suites == [], suites[:20]
    # only test suites go: numpy.testing and scipy's test helpers are modules their packages import
    assert (site / "numpy" / "testing" / "__init__.py").is_file()
    assert (site / "scipy" / "_lib" / "_testutils.py").is_file()


def test_the_installed_unit_is_the_checkouts_with_the_packages_paths(box):
    installed = (box.root / UNIT.lstrip("/")).read_text().splitlines()
    checkout = (REPO / "systemd" / "qwen3tts.service").read_text().splitlines()
    changed = [(a, b) for a, b in zip(checkout, installed, strict=True) if a != b]
    assert [b.split("=")[0] if "=" in b else b[:15] for _, b in changed] == [
        "# Installed by ",
        "Documentation",
        "ExecStart",
    ]
    assert "ExecStart=/opt/qwen3tts/venv/bin/qwen3tts --config /etc/qwen3tts/qwen3tts.yaml run" in installed
    documentation = next(b for _, b in changed if b.startswith("Documentation="))
    for doc in re.findall(r"file://(\S+)", documentation):
        assert (box.root / doc.lstrip("/")).is_file(), doc


def test_the_conffile_asks_for_an_explicit_bundle(box):
    effective = box.run(["qwen3tts", "--config", CONFFILE, "config"], env=AS_THE_SERVICE).stdout
    assert re.search(rf"^  bundle: {BUNDLE}$", effective, flags=re.M), effective[:1500]


def test_root_without_config_reads_the_conffile(box):
    effective = box.run(["qwen3tts", "config"]).stdout
    assert re.search(rf"^  bundle: {BUNDLE}$", effective, flags=re.M), effective[:1500]


def test_without_a_bundle_doctor_names_it_and_says_how_to_build_one(box):
    status, report = doctor(box)
    bundle = check_named(report, "bundle")
    assert status == 1 and report["ok"] is False
    assert bundle["ok"] is False and bundle["needed"] is True
    assert BUNDLE in bundle["detail"]
    assert f"qwen3tts build --checkpoint DIR --out {BUNDLE}" in bundle["fix"]


def wait_until_settled(box, seconds: float = 240) -> str:
    """Wait until the unit is active or has failed for good (not starting, not between restarts)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        state, sub = unit_property(box, "ActiveState"), unit_property(box, "SubState")
        if state == "active" or (state == "failed" and sub == "failed"):
            return state
        time.sleep(2)
    raise AssertionError(f"still {state}/{sub} after {seconds} s")


def test_without_a_bundle_the_unit_does_not_restart_for_ever(box):
    """The postinst started the unit; whatever the daemon does without a bundle, it settles."""
    state = wait_until_settled(box)
    restarts = int(unit_property(box, "NRestarts"))
    assert restarts <= 5, restarts
    journal = box.run(["journalctl", "-u", "qwen3tts", "--no-pager", "-o", "cat"]).stdout
    assert BUNDLE in journal, journal[-2000:]  # about the bundle, not some other failure to start
    if state == "failed":  # five starts (StartLimitBurst=5 in 300 s), the sixth refused
        assert "Start request repeated too quickly." in journal, journal[-2000:]
    time.sleep(12)  # more than RestartSec=5: nothing starts it again
    assert int(unit_property(box, "NRestarts")) == restarts


def test_without_a_bundle_the_service_is_up_and_reports_the_missing_bundle(box):
    assert unit_property(box, "ActiveState") == "active"
    assert int(unit_property(box, "NRestarts")) == 0
    journal = box.run(["journalctl", "-u", "qwen3tts", "-b", "--no-pager", "-o", "cat"]).stdout
    assert "qwen3tts build" in journal


def test_tiny_build_and_say_to_a_wav_inside_the_box(box):
    box.run(["systemctl", "reset-failed", "qwen3tts"], check=False)
    box.run(["qwen3tts", "tiny", "/root/tiny-checkpoint"])
    box.run(["qwen3tts", "build", "--checkpoint", "/root/tiny-checkpoint", "--out", BUNDLE], timeout=900)
    box.run(
        [
            "qwen3tts",
            "say",
            "Hello from a fresh Debian root.",
            "--bundle",
            BUNDLE,
            "--seed",
            "1",
            "--max-frames",
            "12",
            "--out",
            "/root/hello.wav",
        ],
        timeout=600,
    )
    with wave.open(str(box.root / "root/hello.wav")) as wav:
        assert (wav.getframerate(), wav.getsampwidth(), wav.getnchannels()) == (24000, 2, 1)
        samples = np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2")
    assert samples.size >= 1920  # at least one 80 ms frame
    assert np.abs(samples).max() > 0
    _, report = doctor(box)
    assert check_named(report, "bundle")["ok"] is True, report


def test_the_package_ships_the_native_library_and_the_decode_paths_use_it(box, suite):
    library = (
        f"/opt/qwen3tts/venv/lib/python{PYTHONS[suite]}/site-packages/qwen3tts/lib/libqwen3tts_native.so"
    )
    linked = box.run(["ldd", library]).stdout  # every library it needs, the wheel's by its RPATH
    assert "not found" not in linked and "/openvino/libs/libopenvino.so" in linked, linked
    # the op on the plugin's talker and the fused frame; the native talker (auto on some CPU classes) aside
    always = ["--set", "devices.native_kernels=always", "--set", "devices.native_talker=never"]
    for overrides in ([], always):  # the conffile's `auto` loads it too: no configuration names it
        doctor = ["qwen3tts", *overrides, "doctor", "--json", "--timeout", "1"]
        report = json.loads(box.run(doctor, check=False, env=AS_THE_SERVICE).stdout)
        detail = check_named(report, "decode paths")["detail"]
        loaded = re.search(rf"; native library {re.escape(library)} \((\w+) kernels\)$", detail)
        assert loaded, detail  # loaded, and from the package's own copy
    isa = loaded.group(1)
    say = ["say", "The fast path.", "--bundle", BUNDLE, "--seed", "1", "--max-frames", "4"]
    spoken = box.run(["qwen3tts", *always, *say, "--out", "/root/native.wav"], timeout=600)
    if isa == "generic":  # a CPU without AVX2: the op in the graphs, the frame stays the plugin's
        assert "code_predictor plugin (this CPU has no AVX2)" in detail, detail
        return
    assert f"talker plugin+op {isa} (devices.native_kernels is always)" in detail, detail
    assert f"code_predictor fused native {isa} (devices.native_kernels is always)" in detail, detail
    assert f"code_predictor: fused native frame ({isa} kernels" in spoken.stderr, spoken.stderr[-3000:]
    assert (box.root / "root/native.wav").stat().st_size > 44  # a WAV header and samples


def test_systemd_analyze_verifies_the_installed_unit_without_a_warning(box):
    result = box.run(["systemd-analyze", "verify", UNIT], check=False)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == ""


def test_the_installed_unit_keeps_the_agreed_security_exposure(box):
    result = box.run(["systemd-analyze", "security", "--offline=yes", UNIT], check=False)
    score = re.search(r"Overall exposure level for \S+: ([0-9.]+)", result.stdout)
    assert score, result.stdout[-500:] + result.stderr
    assert float(score.group(1)) <= EXPOSURE_LIMIT


def test_the_service_starts_on_the_bundle_under_systemd(box):
    before = journal_cursor(box)
    started = box.run(["systemctl", "restart", "qwen3tts"], check=False, timeout=300)  # returns at READY=1
    assert started.returncode == 0, unit_journal(box)[-3000:]
    assert unit_property(box, "ActiveState") == "active"
    assert unit_property(box, "NRestarts") == "0"
    # this start's "ready:" line (logged just before READY=1) reaches journald through the unit's stream,
    # which systemd does not order with the notify socket: it may come after `restart` returned
    deadline = time.monotonic() + 60
    while "ready: " not in (lines := unit_journal(box, before)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "random (qwen3tts tiny)" in lines, lines[-3000:]
    owner = (box.root / "var/lib/private/qwen3tts").stat().st_uid
    assert owner >= 61184, owner  # DynamicUser=yes: the state belongs to the unit's dynamic user
    box.run(["systemctl", "reload", "qwen3tts"])  # ExecReload= runs /bin/kill: the package needs procps
    # systemctl returns once kill has sent SIGHUP; the unit is `reloading` from the daemon's RELOADING=1
    # until its READY=1 (Type=notify): the reload has to end there, without a restart
    assert wait_until_settled(box, 60) == "active"
    assert unit_property(box, "NRestarts") == "0"


def test_an_upgrade_keeps_the_edited_conffile_and_the_state(box, suite, packages):
    conffile = box.root / CONFFILE.lstrip("/")
    edited = conffile.read_text().replace("  language: auto\n", "  language: english\n", 1)
    assert "  language: english\n" in edited
    conffile.write_text(edited + "# edited on this box\n")
    marker = box.root / "var/lib/qwen3tts/kept-by-the-upgrade"
    marker.write_text("state\n")
    before_pid = unit_property(box, "MainPID")

    box.run(["apt-get", "install", "-y", "-qq", f"/root/{packages.upgrade.name}"], timeout=900)
    assert box.run(["dpkg-query", "-W", "-f", "${Version}", "qwen3tts"]).stdout == UPGRADE_VERSIONS[suite]
    assert conffile.read_text() == edited + "# edited on this box\n"
    assert marker.read_text() == "state\n"
    assert (box.root / BUNDLE.lstrip("/") / "manifest.json").is_file()
    wait_until_settled(box)
    assert unit_property(box, "ActiveState") == "active"
    assert unit_property(box, "MainPID") != before_pid  # restarted on the new code


def test_purge_leaves_nothing_but_the_state(box):
    box.run(["apt-get", "purge", "-y", "-qq", "qwen3tts"], timeout=600)
    status = box.run(["dpkg-query", "-W", "-f", "${db:Status-Status}", "qwen3tts"], check=False).stdout
    assert status in ("", "not-installed")
    after = snapshot(box.root)
    added = {p for p in after - BEFORE["paths"] if not p.startswith(KEPT_STATE)}
    # dpkg removes a directory that became empty and that no other package owns; debootstrap made
    # /opt, no package owns it, so purging the last package with files in /opt takes the empty /opt too
    removed = (
        BEFORE["paths"]
        - after
        - ({"opt"} if not any(p.startswith("opt/") for p in BEFORE["paths"]) else set())
    )
    assert not added, f"left behind: {sorted(added)[:50]}"
    assert not removed, f"removed what was there before: {sorted(removed)[:50]}"
    assert (box.root / BUNDLE.lstrip("/") / "manifest.json").is_file()  # the operator's work stays


def test_lintian_finds_nothing_beyond_the_overrides_and_their_reasons(lintian):
    if lintian is None:
        pytest.skip("lintian runs on bookworm's package only (conftest.py, `lintian`)")
    output, _ = lintian.communicate(timeout=1800)
    assert lintian.returncode == 0, output[-5000:]
    tags = [line for line in output.splitlines() if re.match(r"^[EW]: ", line)]
    assert tags == [], tags[:40]
    assert "unused-override" not in output and "mismatched-override" not in output, output[-3000:]
