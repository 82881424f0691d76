"""The child side of the guarded text front end (guard.py): one process that runs `prepare` on request.

Started from the forkserver, which has imported this module (and so the whole text front end) once:
a new worker is a fork of a warm process. It warms the language detector for the bundle's languages,
says it is ready, then answers one call at a time on its pipe. The lexicon comes with a call only when
it changed (SIGHUP) since this worker last saw it; otherwise the call says "the same as before".

Every answer is ("ok", Prepared) or ("error", exception): a RequestError is the request's fault and is
raised as such in the daemon; anything else is a bug, said as a RuntimeError naming it. The worker
never decides about time: the daemon kills it when a call takes too long.
"""

from __future__ import annotations

import pickle
import signal
from collections.abc import Callable

from qwen3tts.errors import RequestError
from qwen3tts.text.detect import warm_up
from qwen3tts.text.prepare import prepare

SAME_LEXICON = "same"  # a call's lexicon field when the worker already holds the daemon's lexicon


def serve(conn, languages: tuple[str, ...], target: Callable = prepare) -> None:
    """The worker's life: warm up, say ready, answer calls until the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C in a terminal is the daemon's to handle
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # SIGHUP reloads the daemon; the lexicon comes by pipe
    warm_up(languages)
    conn.send(("ready", None))
    lexicon = None
    while True:
        try:
            call = conn.recv()
        except (EOFError, OSError):
            return  # the daemon closed the pipe (shutdown) or went away
        text, language, normalize, sent_lexicon, supported, marks = call
        if sent_lexicon != SAME_LEXICON:
            lexicon = sent_lexicon
        conn.send(_answer(target, (text, language, normalize, lexicon, supported), marks))


def _answer(target: Callable, arguments: tuple, marks: dict) -> tuple[str, object]:
    """`target`'s Prepared, or the error it raised, as something the pipe can carry."""
    try:
        prepared = target(*arguments, **marks)
    except RequestError as exc:
        return "error", _picklable(exc)
    except Exception as exc:  # a boundary: a bug in the front end is one failed request, not a dead worker
        return "error", RuntimeError(f"text front end failed: {type(exc).__name__}: {exc}")
    return "ok", prepared


def _picklable(exc: RequestError) -> RequestError:
    """`exc`, or a plain RequestError with its message if its own class does not survive the pipe."""
    try:
        pickle.loads(pickle.dumps(exc))
    except (pickle.PickleError, TypeError, AttributeError, ValueError):  # its class does not pickle
        return RequestError(str(exc))
    return exc
