"""One minimal Debian root per release, its package and that package one version up, and a booted box
to install them in.

Everything here is real: debootstrap from the mirror this machine's apt uses, scripts/package.sh,
apt and dpkg inside the root, and the root's own systemd as PID 1 in a systemd-nspawn container
(so the postinst really enables and starts the unit, and `systemctl` answers). Needs root.

The releases are Debian 12 (bookworm, Python 3.11) and Debian 13 (trixie, Python 3.13). Roots and
packages are made when a test first asks for them, trixie's right after bookworm's, while bookworm's
box is tested (`Releases`), and kept for the session (test_image.py reuses bookworm's); the booted box
is one per release, module-scoped through the parametrised `suite` fixture, so test_fresh_root.py
runs whole on bookworm, then whole on trixie, with one box (1.3 GB) at a time.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SUITES = ("bookworm", "trixie")
# The version scripts/package.sh gives each release's package (the changelog's, +deb13 for trixie),
# and the one the upgrade test installs on top (dpkg --compare-versions: higher).
FIRST_VERSIONS = {"bookworm": "0.1.0-1", "trixie": "0.1.0-1+deb13"}
UPGRADE_VERSIONS = {"bookworm": "0.1.0-1.1", "trixie": "0.1.0-1+deb13.1"}
# Each release's python3, which the package's venv must run on
PYTHONS = {"bookworm": "3.11", "trixie": "3.13"}
ROOT_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
BOX_BUNDLE = "var/lib/private/qwen3tts/bundle"  # the bundle test_fresh_root builds (DynamicUser's path)
# Making roots and packages and running lintian is batch work with no deadline (compression, compiling,
# indexing: most of this folder's CPU), done while the suite's workers run their tests (scripts/test.sh):
# at the lowest priority it takes the cores they leave. The boxes' services, whose start and watchdog
# have deadlines, keep the normal priority.
BATCH = ("nice", "-n", "19")


def _need_root_and_tools() -> None:
    if os.geteuid() != 0:
        pytest.skip("the fresh-root tests run as root (chroot, debootstrap, systemd-nspawn), as in CI")
    for tool in ("debootstrap", "dpkg-buildpackage", "lintian", "systemd-nspawn", "nsenter"):
        assert shutil.which(tool), f"{tool} missing: scripts/setup.sh installs it"


@dataclass(frozen=True)
class Packages:
    first: Path
    upgrade: Path


class Releases:
    """Each release's minimal root and packages, made on first use and kept for the session.

    They are made one release at a time, in SUITES order, on one thread of their own: asking for a
    release also queues the releases after it that the session's tests use, so the next release's root
    and packages are made while this one's box is tested (its tests mostly wait on the box's services
    and lintian; the batch work takes the cores they leave). Two releases made at the same time cost
    more CPU than one after the other (docs/benchmarks.md), so there is never more than one."""

    def __init__(self, tmp_path_factory, wanted: tuple[str, ...] = SUITES) -> None:
        self._tmp = tmp_path_factory
        self._wanted = wanted
        self._made: dict[str, Future[tuple[Path, Packages]]] = {}
        self._maker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="release")
        self._running: subprocess.Popen | None = None
        self._closed = False
        self.bundles: dict[str, Path] = {}  # the tiny bundle each release's box built, kept after it

    def base(self, suite: str) -> Path:
        """A minimal root of `suite` (debootstrap --variant=minbase), made once, copied for every use."""
        return self._release(suite).result()[0]

    def packages(self, suite: str) -> Packages:
        """The package of this checkout for `suite`, built by scripts/package.sh as released, and the
        same package one version up (`one_version_up`)."""
        return self._release(suite).result()[1]

    def close(self) -> None:
        """Stop what is being made (a session that ends early does not wait minutes for it)."""
        self._closed = True
        if self._running is not None and self._running.poll() is None:
            self._running.kill()
        self._maker.shutdown(wait=True, cancel_futures=True)

    def _release(self, suite: str) -> Future[tuple[Path, Packages]]:
        queue = [suite] + [s for s in SUITES[SUITES.index(suite) + 1 :] if s in self._wanted]
        for name in queue:
            if name not in self._made:
                self._made[name] = self._maker.submit(self._make, name)
        return self._made[suite]

    def _make(self, suite: str) -> tuple[Path, Packages]:
        base = self._tmp.mktemp("debian") / f"base-{suite}"
        self._batch([str(REPO / "packaging" / "make-root.sh"), suite, str(base)], timeout=900)
        work = self._tmp.mktemp(f"package-work-{suite}")
        out = self._tmp.mktemp(f"packages-{suite}")
        command = [str(REPO / "scripts" / "package.sh"), "--suite", suite, "--base", str(base)]
        self._batch([*command, "--work", str(work), "--out", str(out)], timeout=1800)
        shutil.rmtree(work)  # the venv cache and the wheels: 700 MB
        (first,) = out.glob(f"qwen3tts_{FIRST_VERSIONS[suite]}_amd64.deb")
        return base, Packages(first, one_version_up(first, UPGRADE_VERSIONS[suite], out))

    def _batch(self, command: list[str], timeout: float) -> None:
        if self._closed:
            raise RuntimeError(f"the session ended before {command[0]} ran")
        self._running = subprocess.Popen([*BATCH, *command])
        try:
            returncode = self._running.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._running.kill()
            self._running.wait()
            raise
        if returncode != 0:
            raise subprocess.CalledProcessError(returncode, command)


def one_version_up(deb: Path, version: str, out: Path) -> Path:
    """`deb` as Debian version `version`, every file and maintainer script the same: what an upgrade of
    the same checkout installs over it (dpkg runs the old package's prerm and the new one's postinst with
    the versions as for any upgrade). Repacked rather than built again (a second package.sh run made the
    same venv and library again): only the control member is rewritten with the new Version, the data
    member is the first package's, byte for byte (unpacking its 670 MB and packing them again took about
    11 s of dpkg-deb per release; this takes about 1 s)."""
    tree = out / f"repack-{version}"
    tree.mkdir()
    subprocess.run(["dpkg-deb", "--control", str(deb), str(tree / "control")], check=True)
    control = tree / "control" / "control"
    fields, count = re.subn(r"^Version: .*$", f"Version: {version}", control.read_text(), flags=re.M)
    assert count == 1, fields
    control.write_text(fields)
    # deb(5): debian-binary, control.tar.*, data.tar.*, in this order; the new control member is
    # compressed as the old one was (tar -a: by its name)
    members = subprocess.run(["ar", "t", str(deb)], capture_output=True, text=True, check=True).stdout.split()
    assert [m.split(".")[0] for m in members] == ["debian-binary", "control", "data"], members
    subprocess.run(["ar", "x", str(deb), members[0], members[2]], cwd=tree, check=True)
    subprocess.run(["tar", "-C", "control", "--owner=0", "--group=0", "--numeric-owner", "--sort=name",
                    "-caf", members[1], "."], cwd=tree, check=True)  # fmt: skip
    upgrade = out / f"qwen3tts_{version}_amd64.deb"
    subprocess.run(["ar", "rc", str(upgrade), *members], cwd=tree, check=True)
    shutil.rmtree(tree)
    return upgrade


@pytest.fixture(scope="session")
def releases(request, tmp_path_factory) -> Iterator[Releases]:
    _need_root_and_tools()
    # the releases this session's tests are parametrised with (a run of `-k bookworm` makes no trixie)
    used = {item.callspec.params.get("suite") for item in request.session.items if hasattr(item, "callspec")}
    made = Releases(tmp_path_factory, tuple(suite for suite in SUITES if suite in used))
    yield made
    made.close()


@pytest.fixture(scope="module", params=SUITES)
def suite(request) -> str:
    """The release under test: every module using it runs whole on bookworm, then on trixie."""
    return request.param


@pytest.fixture(scope="module")
def debian_base(releases, suite) -> Path:
    return releases.base(suite)


@pytest.fixture(scope="module")
def packages(releases, suite) -> Packages:
    return releases.packages(suite)


@pytest.fixture(scope="module")
def lintian(packages, suite) -> Iterator[subprocess.Popen | None]:
    """lintian on bookworm's first package, started at once: it takes minutes and overlaps the root's
    tests. Not on trixie's: the same debian/ and overrides, checked by this machine's (bookworm's)
    lintian, would take another 7 minutes of CI to say the same. Without the binaries/spelling check: it
    reads every string of every library in the venv (a fifth of lintian's CPU) for the one tag the
    overrides silence whole (spelling-error-in-binary: the wheels' strings are upstream's)."""
    if suite != "bookworm":
        yield None
        return
    command = ["lintian", "-X", "binaries/spelling", "--display-info", "--fail-on", "error,warning"]
    process = subprocess.Popen(
        [*BATCH, *command, str(packages.first)],
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


def mask_timers(root: Path) -> None:
    """Mask every timer unit of `root` (what `systemctl mask` does: a link to /dev/null in /etc): the box's
    own housekeeping fires by the wall clock — dpkg's daily database backup wrote /var/backups/*.0 into a
    purge test that ran across midnight — and would change the files the tests compare."""
    units = root / "usr" / "lib" / "systemd" / "system"  # /lib is /usr/lib on both releases
    timers = sorted(path.name for path in units.glob("*.timer"))
    masks = root / "etc" / "systemd" / "system"
    masks.mkdir(parents=True, exist_ok=True)
    for name in timers:  # the root is a fresh copy of the base: nothing is masked yet
        (masks / name).symlink_to("/dev/null")


def package_depends(deb: Path) -> list[str]:
    """The Debian packages `deb` depends on, as names apt takes (versions and alternatives dropped)."""
    field = subprocess.run(
        ["dpkg-deb", "--field", str(deb), "Depends"], capture_output=True, text=True, check=True
    )
    return [item.split("|")[0].split("(")[0].strip() for item in field.stdout.split(",") if item.strip()]


@pytest.fixture(scope="module")
def box(releases, suite, debian_base, packages, tmp_path_factory) -> Iterator[Box]:
    """A copy of the base with systemd and the package's dependencies (what a Debian box has), booted."""
    root = tmp_path_factory.mktemp(f"box-{suite}") / "root"
    subprocess.run(["cp", "-a", str(debian_base), str(root)], check=True)
    _nspawn_run(root, ["apt-get", "update", "-qq"])
    # a dependency can be a name the release provides under another (libasound2 is trixie's
    # libasound2t64): apt picks the one provider
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
    mask_timers(root)
    machine = Box(root)
    try:
        machine.boot(root.parent / "nspawn.log")
        timers = machine.run(["systemctl", "list-timers", "--no-legend"]).stdout  # the active ones
        assert not timers.strip(), f"a timer still runs in the box: {timers}"
        yield machine
    finally:
        machine.shutdown()
    bundle = root / BOX_BUNDLE
    if (bundle / "manifest.json").is_file():  # test_image.py serves it rather than building another
        kept = tmp_path_factory.mktemp(f"bundle-{suite}") / "bundle"
        shutil.copytree(bundle, kept, symlinks=True)
        releases.bundles[suite] = kept
    if machine.stopped():  # about 1.3 GB; nspawn's mounts lived in its own namespace, gone with it
        shutil.rmtree(root)
