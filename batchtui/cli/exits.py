"""Exit codes of the `batchtui` command, the errors that end it with one line, and how a stop
signal reaches it, defined once.

0: done. 1: a failure (the tool, the disk, worker processes that could not start or died, or for
`plan` "no rate meets this SLO", like grep's 1 for "no match"). 2: a mistake in what was asked (a
bad flag, a bad file, a configuration vLLM refuses). 130: interrupted (Ctrl-C, SIGINT). 143:
terminated (SIGTERM). A SIGKILL ends it at once (137 in a shell) and its worker processes with it.
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
    """SIGTERM while a command runs. A KeyboardInterrupt, so the command stops as after Ctrl-C
    (what finished kept, worker processes ended, temporary files removed), with its own line and
    EXIT_TERMINATED."""


_SIGTERM_SEEN: list[int] = []  # a SIGTERM has come during the stop_signals block now running


def _terminated(signum, frame) -> None:
    _SIGTERM_SEEN.append(signum)
    raise Terminated


def stopped_how(exc: KeyboardInterrupt) -> tuple[str, int]:
    """("terminated", EXIT_TERMINATED) for a stop by SIGTERM, else ("interrupted",
    EXIT_INTERRUPTED). By SIGTERM also when a library turned the Terminated into a plain
    KeyboardInterrupt (Ray's waits do)."""
    if isinstance(exc, Terminated) or _SIGTERM_SEEN:
        return "terminated", EXIT_TERMINATED
    return "interrupted", EXIT_INTERRUPTED


@contextlib.contextmanager
def stop_signals() -> Iterator[None]:
    """While the block runs, SIGTERM raises Terminated in the main thread (as SIGINT raises
    KeyboardInterrupt); the handler before is put back after. A SIGTERM ignored by whoever
    started the command stays ignored; off the main thread (where no handler can be set) the
    block runs as it is."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) == signal.SIG_IGN):
        yield
        return
    before = signal.signal(signal.SIGTERM, _terminated)
    _SIGTERM_SEEN.clear()
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)
        _SIGTERM_SEEN.clear()
