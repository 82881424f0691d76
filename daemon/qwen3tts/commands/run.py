"""`qwen3tts run`: the appliance daemon (systemd runs exactly this).

Start-up (building the embedded bundle, compiling graphs: seconds to minutes) runs in its own thread
so that SIGTERM or Ctrl-C during it stops the process at once with exit 0: a compile inside OpenVINO
cannot be interrupted, so the main thread leaves without waiting for it. Once started, the signals
drain the service in order (see appliance/service.py).
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import signal
import socket
import sys
import tempfile
import threading

from qwen3tts.settings import Settings

log = logging.getLogger(__name__)

POLL_S = 0.1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--embedded",
        action="store_true",
        help="first-run default: start a loopback mosquitto if none runs, build the random tiny bundle "
        "at its default path if missing",
    )


def run(args: argparse.Namespace, settings: Settings) -> int:
    from qwen3tts.paths import keep_temporary_files_in_runtime_dir
    from qwen3tts.settings_loader import check_writable_dirs

    check_writable_dirs(settings)  # one line naming the key now, not a traceback after the compile
    try:  # before the text front end's forkserver makes its socket there
        keep_temporary_files_in_runtime_dir()
    except OSError as exc:  # the daemon still runs; its temporary files go where tempfile says
        # too deep a <state>/run (never systemd's /run/qwen3tts) is a fact, not a fault
        level = logging.INFO if exc.errno == errno.ENAMETOOLONG else logging.WARNING
        log.log(level, "temporary files stay in %s: cannot use the runtime directory: %s",
                tempfile.gettempdir(), exc)  # fmt: skip
    startup = _Startup(settings, args.embedded, args.config)
    stop_requested = threading.Event()
    stoppers: list[threading.Thread] = []

    def on_stop(signum, _frame) -> None:
        if startup.started():
            stoppers.append(_stop_in_background(startup.service))
        else:
            stop_requested.set()

    def on_hup(_signum, _frame) -> None:
        if startup.started():
            startup.service.reload()
        else:
            log.info("SIGHUP during start-up ignored (nothing loaded yet to reload)")

    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGINT, on_stop)
    signal.signal(signal.SIGHUP, on_hup)
    threading.Thread(target=startup.run, name="startup", daemon=True).start()
    while not startup.done.wait(POLL_S):
        if stop_requested.is_set():
            _leave_during_startup(startup)
    if startup.error is not None:
        startup.stop_broker()
        raise startup.error
    service = startup.service
    if getattr(service, "found", None) is not None:  # waiting for a bundle (service/waiting.py)
        return _wait_for_bundle(service, stop_requested, stoppers)
    try:
        if stop_requested.is_set():  # the signal came in the last poll interval
            stoppers.append(_stop_in_background(service))
        else:
            site = settings.mqtt.site or socket.gethostname()
            print(
                f"qwen3tts is listening. Try:\n  mosquitto_pub -h {settings.mqtt.host} "
                f"-p {settings.mqtt.port} -t {settings.mqtt.prefix}/{site}/say -m 'Hello from qwen3tts.'",
                flush=True,
            )
        while not service.wait(1.0):
            pass
    finally:
        for stopper in stoppers:  # the broker goes last: the service says `offline` through it
            stopper.join()
        startup.stop_broker()
    return service.exit_code


class _Startup:
    """Everything before READY, run off the main thread; `done` is set when it succeeded or failed."""

    def __init__(self, settings: Settings, embedded: bool, config_path):
        self.settings, self.embedded, self.config_path = settings, embedded, config_path
        self.done = threading.Event()
        self.service = None
        self.broker = None
        self.error: BaseException | None = None

    def run(self) -> None:
        from qwen3tts.service.service import Service
        from qwen3tts.service.waiting import WaitingForBundle

        try:
            if not require_bundle(self.settings, self.embedded):
                self.service = WaitingForBundle(self.settings)
                self.service.start()
                return
            if self.embedded:
                from qwen3tts.paths import state_dir
                from qwen3tts.service.embedded import ensure_broker

                ensure_broker(self.settings, state_dir() / "mosquitto", on_created=self._keep_broker)
            self.service = Service(self.settings, config_path=self.config_path)
            self.service.start()
        except BaseException as exc:  # handed to the main thread, which reports it like any command error
            self.error = exc
        finally:
            self.done.set()

    def started(self) -> bool:
        """The service is up (READY sent): signals now go to it."""
        return self.done.is_set() and self.error is None and self.service is not None

    def _keep_broker(self, broker) -> None:
        self.broker = broker

    def stop_broker(self) -> None:
        if self.broker is not None:
            self.broker.stop()


def require_bundle(settings: Settings, embedded: bool) -> bool:
    """True when the configured bundle exists (with --embedded the random tiny one is built at its own
    default path first); False when the daemon must wait for one (service/waiting.py)."""
    from qwen3tts.paths import default_bundle

    bundle = settings.model.bundle
    if (bundle / "manifest.json").exists():
        return True
    if embedded and bundle == default_bundle():
        from qwen3tts.service.embedded import ensure_tiny_bundle

        ensure_tiny_bundle(settings)
        return True
    return False


BUNDLE_FOUND_EXIT = 75
"""EX_TEMPFAIL: the bundle appeared while the daemon waited; systemd (Restart=on-failure) starts it again
at once, now with the bundle, through a proper start (start timeout, compile, READY)."""


def _wait_for_bundle(waiting, stop_requested: threading.Event, stoppers: list[threading.Thread]) -> int:
    """Serve the waiting mode until a signal stops it or the bundle appears; then hand over: under
    systemd by exiting for a restart, in a terminal by running again in this process."""
    if stop_requested.is_set():
        stoppers.append(_stop_in_background(waiting))
    while not waiting.wait(1.0):
        pass
    for stopper in stoppers:
        stopper.join()
    if not waiting.found:
        return waiting.exit_code
    if os.environ.get("NOTIFY_SOCKET"):
        log.info("exiting so that systemd starts the daemon with the bundle")
        return BUNDLE_FOUND_EXIT
    logging.shutdown()
    os.execv(sys.executable, [sys.executable, "-m", "qwen3tts", *sys.argv[1:]])
    return 0  # not reached


def _leave_during_startup(startup: _Startup) -> None:
    """SIGTERM/Ctrl-C before READY: nothing is accepted or playing yet, so leave now with exit 0.

    os._exit because the start-up thread may be inside an OpenVINO compile that cannot be cancelled
    and must not race the interpreter's teardown; the spool is fsynced on every change, so nothing is lost.
    """
    log.info("stop requested during start-up; exiting")
    if startup.service is not None:
        startup.service.notifier.stopping()
    startup.stop_broker()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


# Longer than the announcer's drain (45 s) plus the bounded joins, shorter than TimeoutStopSec=60.
STOP_DEADLINE_S = 55.0


def _stop_in_background(service) -> threading.Thread:
    """Signal handlers must return quickly; the main thread waits for the stop to complete.

    SIGTERM always stops the process: should a wedged worker hold up the orderly stop past
    STOP_DEADLINE_S, the process exits anyway (non-zero, so the journal shows it was not clean).
    """
    thread = threading.Thread(target=service.stop, name="shutdown", daemon=True)
    thread.start()
    deadline = threading.Timer(STOP_DEADLINE_S, _exit_now, args=(service,))
    deadline.daemon = True
    deadline.start()
    return thread


def _exit_now(service) -> None:
    log.error("the orderly stop took longer than %.0f s; exiting now", STOP_DEADLINE_S)
    logging.shutdown()
    os._exit(service.exit_code or 1)
