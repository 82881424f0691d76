"""Shared fixtures for the whole suite."""

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# tests/ is not a package; test modules import shared helpers from tests/support/ by module name.
sys.path.insert(0, str(REPO / "tests" / "support"))

from collections.abc import Callable, Iterator  # noqa: E402

import compile_cache  # noqa: E402
from bundles import TinyModels  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402
from mosquitto_broker import Mosquitto, Recorder  # noqa: E402

# No verdict may depend on the machine's speed: Hypothesis' per-example deadline (200 ms) and its
# too_slow health check do, and failed on loaded 2-core machines. Tests that set their own @settings
# inherit this profile for everything they do not name.
settings.register_profile("qwen3tts", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("qwen3tts")


@pytest.fixture(scope="session", autouse=True)
def _state_and_cache_in_tmp(tmp_path_factory) -> Iterator[None]:
    """Default paths (qwen3tts.paths) point into the session's tmp dir: no test writes into $HOME, nor
    into a developer's $XDG_RUNTIME_DIR (the ledger of ended spool files lives in the runtime directory)."""
    names = ("XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR", "STATE_DIRECTORY", "CACHE_DIRECTORY")
    saved = {k: os.environ.get(k) for k in (*names, "RUNTIME_DIRECTORY")}
    root = tmp_path_factory.mktemp("xdg")
    os.environ["XDG_STATE_HOME"] = str(root / "state")
    os.environ["XDG_CACHE_HOME"] = str(root / "cache")
    (root / "run").mkdir(mode=0o700)  # as the XDG spec wants it
    os.environ["XDG_RUNTIME_DIR"] = str(root / "run")
    for systemd in ("STATE_DIRECTORY", "CACHE_DIRECTORY", "RUNTIME_DIRECTORY"):
        os.environ.pop(systemd, None)
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(autouse=True)
def _root_logging_restored() -> Iterator[None]:
    """Each test leaves the root logger as it found it. An in-process `qwen3tts` command (cli.main) sets
    up logging on the sys.stderr it sees, which is pytest's capture of that one test: kept, it made every
    later record (a module's server thread logging after the test ended) a "Logging error ... I/O
    operation on closed file" in the suite's output."""
    import logging

    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    yield
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])


def _shared_by_workers(tmp_path_factory) -> Path:
    """The session's folder: under pytest-xdist the one that holds every worker's own (popen-gw0, ...)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory) -> TinyModels:
    """Tiny release-layout checkpoints and their bundles, each written once per session, in the folder
    the xdist workers share, so they do not each build the same bundles again."""
    root = _shared_by_workers(tmp_path_factory) / "tiny-models"
    root.mkdir(exist_ok=True)
    return TinyModels(root)


@pytest.fixture(scope="session", autouse=True)
def _daemons_compile_once(tmp_path_factory) -> None:
    """The daemons the tests start begin with the compile cache earlier daemons wrote (compile_cache.py)."""
    compile_cache.keep_in(_shared_by_workers(tmp_path_factory) / "compile-cache")


# ---- a real mosquitto on 127.0.0.1 (fails loudly when the binary is missing) ----


@pytest.fixture
def mosquitto(tmp_path: Path) -> Iterator[Mosquitto]:
    broker = Mosquitto(tmp_path, persistence=False)
    broker.start()
    yield broker
    broker.stop()


@pytest.fixture
def durable_mosquitto(tmp_path: Path) -> Iterator[Mosquitto]:
    broker = Mosquitto(tmp_path, persistence=True)
    broker.start()
    yield broker
    broker.stop()


@pytest.fixture
def recorder_factory() -> Iterator[Callable[[Mosquitto, list[str]], Recorder]]:
    made: list[Recorder] = []

    def make(broker: Mosquitto, topics: list[str]) -> Recorder:
        made.append(Recorder(broker, topics))
        return made[-1]

    yield make
    for recorder in made:
        recorder.close()
