"""One minimal Debian root per session, the two packages built from it, and a booted box to install them in.

Everything here is real: debootstrap from the mirror this machine's apt uses, scripts/package.sh,
apt and dpkg inside the root, and the root's own systemd as PID 1 in a systemd-nspawn container
(so the postinst really enables and starts the unit, and `systemctl` answers). Needs root.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SUITE = "bookworm"
FIRST_VERSION = "0.1.0-1"
UPGRADE_VERSION = "0.1.0-1.1"  # dpkg --compare-versions: higher than FIRST_VERSION
ROOT_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def _need_root_and_tools() -> None:
    if os.geteuid() != 0:
        pytest.skip("the fresh-root tests run as root (chroot, debootstrap, systemd-nspawn), as in CI")
    for tool in ("debootstrap", "dpkg-buildpackage", "lintian", "systemd-nspawn", "nsenter"):
        assert shutil.which(tool), f"{tool} missing: scripts/setup.sh installs it"


@pytest.fixture(scope="session")
def debian_base(tmp_path_factory) -> Path:
    """A minimal root of SUITE (debootstrap --variant=minbase), made once, copied for every use."""
    _need_root_and_tools()
    base = tmp_path_factory.mktemp("debian") / f"base-{SUITE}"
    subprocess.run([str(REPO / "packaging" / "make-root.sh"), SUITE, str(base)], check=True, timeout=900)
    return base


@dataclass(frozen=True)
class Packages:
    first: Path
    upgrade: Path


@pytest.fixture(scope="session")
def packages(debian_base, tmp_path_factory) -> Packages:
    """The package of this checkout, built twice by scripts/package.sh: as released and one version up."""
    work = tmp_path_factory.mktemp("package-work")
    out = tmp_path_factory.mktemp("packages")
    built = {}
    for version in (FIRST_VERSION, UPGRADE_VERSION):
        subprocess.run(
            [
                str(REPO / "scripts" / "package.sh"),
                "--base",
                str(debian_base),
                "--work",
                str(work),
                "--out",
                str(out),
                "--version",
                version,
            ],
            check=True,
            timeout=1800,
        )
        (built[version],) = out.glob(f"qwen3tts_{version}_amd64.deb")
    shutil.rmtree(work)  # the venv cache and the wheels: 700 MB
    return Packages(built[FIRST_VERSION], built[UPGRADE_VERSION])


@pytest.fixture(scope="session")
def lintian(packages) -> Iterator[subprocess.Popen]:
    """lintian on the first package, started at once: it takes minutes and overlaps the root's tests."""
    process = subprocess.Popen(
        ["lintian", "--display-info", "--fail-on", "error,warning", str(packages.first)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    yield process
    if process.poll() is None:
        process.kill()
        process.wait()


class Box:
    """A fresh root booted with its own systemd (systemd-nspawn --boot); commands run inside it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._nspawn: subprocess.Popen | None = None
        self._init_pid = 0

    def boot(self, log: Path) -> None:
        self._log = log.open("w")
        self._nspawn = subprocess.Popen(
            [
                "systemd-nspawn",
                "--quiet",
                "--boot",
                "--register=no",
                "--keep-unit",
                f"--machine=qwen3tts-{os.getpid()}",
                "--directory",
                str(self.root),
            ],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert self._nspawn.poll() is None, log.read_text(errors="replace")[-2000:]
            self._init_pid = self._find_init()
            if self._init_pid:
                state = self.run(["systemctl", "is-system-running"], check=False).stdout.strip()
                if state in ("running", "degraded"):
                    return
            time.sleep(0.5)
        raise AssertionError(f"the box did not boot in 120 s: {log.read_text(errors='replace')[-2000:]}")

    def _find_init(self) -> int:
        assert self._nspawn is not None
        children = Path(f"/proc/{self._nspawn.pid}/task/{self._nspawn.pid}/children")
        for pid in children.read_text().split() if children.exists() else []:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "systemd":
                return int(pid)
        return 0

    def run(self, argv: list[str], check: bool = True, timeout: float = 600, env: dict | None = None):
        """`argv` inside the booted box as root, with a clean environment."""
        variables = {
            "PATH": ROOT_PATH,
            "HOME": "/root",
            "LC_ALL": "C.UTF-8",
            "DEBIAN_FRONTEND": "noninteractive",
        }
        variables.update(env or {})
        command = ["nsenter", "--target", str(self._init_pid), "--all", "env", "-i"]
        command += [f"{key}={value}" for key, value in variables.items()] + argv
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        if check:
            assert result.returncode == 0, (
                f"{argv}: rc={result.returncode}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
            )
        return result

    def stopped(self) -> bool:
        return self._nspawn is None or self._nspawn.poll() is not None

    def shutdown(self) -> None:
        if self._nspawn is None or self._nspawn.poll() is not None:
            return
        self._nspawn.send_signal(signal.SIGTERM)  # nspawn asks the box's systemd to power off
        try:
            self._nspawn.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._nspawn.kill()
            self._nspawn.wait()
        self._log.close()


def _nspawn_run(root: Path, argv: list[str]) -> None:
    """`argv` in the root before it is booted (apt installing what a box has), in its own namespaces."""
    subprocess.run(
        [
            "systemd-nspawn",
            "--quiet",
            "--register=no",
            "--keep-unit",
            "--directory",
            str(root),
            "env",
            "-i",
            f"PATH={ROOT_PATH}",
            "HOME=/root",
            "LC_ALL=C.UTF-8",
            "DEBIAN_FRONTEND=noninteractive",
            *argv,
        ],
        check=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
    )


def package_depends(deb: Path) -> list[str]:
    """The Debian packages `deb` depends on, as names apt takes (versions and alternatives dropped)."""
    field = subprocess.run(
        ["dpkg-deb", "--field", str(deb), "Depends"], capture_output=True, text=True, check=True
    )
    return [item.split("|")[0].split("(")[0].strip() for item in field.stdout.split(",") if item.strip()]


@pytest.fixture(scope="session")
def box(debian_base, packages, tmp_path_factory) -> Iterator[Box]:
    """A copy of the base with systemd and the package's dependencies (what a Debian box has), booted."""
    root = tmp_path_factory.mktemp("box") / "root"
    subprocess.run(["cp", "-a", str(debian_base), str(root)], check=True)
    _nspawn_run(root, ["apt-get", "update", "-qq"])
    _nspawn_run(
        root,
        [
            "apt-get",
            "install",
            "-y",
            "-qq",
            "--no-install-recommends",
            "systemd",
            *package_depends(packages.first),
        ],
    )
    for deb in (packages.first, packages.upgrade):
        shutil.copy(deb, root / "root" / deb.name)
    machine = Box(root)
    try:
        machine.boot(root.parent / "nspawn.log")
        yield machine
    finally:
        machine.shutdown()
    if machine.stopped():  # about 1.3 GB; nspawn's mounts lived in its own namespace, gone with it
        shutil.rmtree(root)
