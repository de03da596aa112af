"""Exit codes of the `batchtui` command, the errors that end it with one line, and how a stop
signal reaches it, defined once.

0: done. 1: a failure (the tool, the disk, worker processes that could not start or died, or for
`plan` "no rate meets this SLO", like grep's 1 for "no match"). 2: a mistake in what was asked (a
bad flag, a bad file, a configuration vLLM refuses). 130: interrupted (Ctrl-C, SIGINT). 143:
terminated (SIGTERM). 129: hung up (SIGHUP: its terminal or SSH connection went away). A SIGKILL
ends it at once (137 in a shell) and its worker processes with it.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 128 + signal.SIGINT
EXIT_TERMINATED = 128 + signal.SIGTERM
EXIT_HUNG_UP = 128 + signal.SIGHUP
# The signals that stop a command as Ctrl-C does (what finished kept, workers ended, temporary
# files removed), each with its word and status.
STOP_SIGNALS = {signal.SIGTERM: ("terminated", EXIT_TERMINATED), signal.SIGHUP: ("hung up", EXIT_HUNG_UP)}


class UserError(Exception):
    """A mistake in what the user asked for: printed as one line, exit 2."""


class OutputError(Exception):
    """Writing a result failed after the run (a full disk, an I/O error): one line, exit 1."""


class ReaderGone(Exception):
    """The reader of standard output (or of an output pipe) went away (`| head`): the command
    stops quietly. Only a `output.Sink` raises it: a broken pipe anywhere else is no such news."""


class WorkerError(Exception):
    """Worker processes could not start, or one died before its answer: one line, exit 1."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (or another of `STOP_SIGNALS`, `signum`) while a command runs. A KeyboardInterrupt,
    so the command stops as after Ctrl-C (what finished kept, worker processes ended, temporary
    files removed), with its own line and status."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__()
        self.signum = signum


_SIGTERM_SEEN: list[int] = []  # a stop signal has come during the stop_signals block now running


def _terminated(signum, frame) -> None:
    _SIGTERM_SEEN.append(signum)
    raise Terminated(signum)


def stopped_how(exc: KeyboardInterrupt) -> tuple[str, int]:
    """("terminated", EXIT_TERMINATED) for a stop by SIGTERM, ("hung up", EXIT_HUNG_UP) by
    SIGHUP, else ("interrupted", EXIT_INTERRUPTED). By the signal also when a library turned the
    Terminated into a plain KeyboardInterrupt (Ray's waits do)."""
    signum = exc.signum if isinstance(exc, Terminated) else (_SIGTERM_SEEN[0] if _SIGTERM_SEEN else None)
    return STOP_SIGNALS.get(signum, ("interrupted", EXIT_INTERRUPTED))


@contextlib.contextmanager
def stop_signals() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP (`STOP_SIGNALS`) raise Terminated in the main
    thread (as SIGINT raises KeyboardInterrupt); the handlers before are put back after. A signal
    ignored by whoever started the command stays ignored (`nohup` ignores SIGHUP); off the main
    thread (where no handler can be set) the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    for sig, handler in before.items():
        if handler != signal.SIG_IGN:
            signal.signal(sig, _terminated)
    _SIGTERM_SEEN.clear()
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        _SIGTERM_SEEN.clear()
