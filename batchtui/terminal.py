"""Noticing that the learner's terminal is gone, so the app never lingers as an orphan.

An SSH connection that drops, a closed terminal window or a killed textual-serve does not always
send SIGHUP: often the app only sees its input hang up (end of file, or a read error). Textual's
input thread then spins on a descriptor that is always readable, and a paused app would run like
that for ever. `TerminalWatch` polls the app's input and output for a hang-up or an error in a
thread of its own (no CPU while the terminal is there) and says so once.

Exit statuses follow the shell's convention for signals: 128 + the signal's number.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import threading
from collections.abc import Callable

EXIT_HANGUP = 128 + signal.SIGHUP
EXIT_INTERRUPTED = 128 + signal.SIGINT
EXIT_TERMINATED = 128 + signal.SIGTERM

LOST_GRACE_S = 0.5
"""After the terminal is gone, how long a tidy exit may take before the process just ends (there
is nothing to restore and the progress is already saved; Textual's writer may be stuck on it)."""
SIGNAL_GRACE_S = 3.0
"""After SIGTERM or SIGINT: time to put the terminal back before the process just ends."""

_GONE = select.POLLHUP | select.POLLERR | select.POLLNVAL


def standard_streams() -> tuple[int, ...]:
    """The descriptors of the terminal the app runs on (its input and its output)."""
    found = []
    for stream in (sys.__stdin__, sys.__stdout__):
        try:
            found.append(stream.fileno())
        except (AttributeError, ValueError, OSError):
            pass
    return tuple(found)


def hung_up(fds: tuple[int, ...]) -> bool:
    """True if any of `fds` reports a hang-up or an error now."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, 0)  # hang-ups and errors are always reported
    try:
        return any(events & _GONE for _fd, events in poller.poll(0))
    except OSError:
        return True


class TerminalWatch:
    """Calls `on_lost()` once, from its own thread, when the input or output hangs up."""

    POLL_MS = 250
    """How often the thread looks at its stop flag; a hang-up wakes it at once."""

    def __init__(self, on_lost: Callable[[], None], fds: tuple[int, ...] | None = None) -> None:
        self.on_lost = on_lost
        self.fds = standard_streams() if fds is None else fds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="batchtui-terminal-watch", daemon=True)

    def start(self) -> None:
        if self.fds:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _watch(self) -> None:
        poller = select.poll()
        for fd in self.fds:
            poller.register(fd, 0)
        while not self._stop.is_set():
            try:
                events = poller.poll(self.POLL_MS)
            except InterruptedError:
                continue
            except OSError:
                events = [(-1, select.POLLERR)]
            if any(mask & _GONE for _fd, mask in events):
                if not self._stop.is_set():
                    self.on_lost()
                return


def end_process_after(seconds: float, status: int) -> None:
    """Make sure the process ends within `seconds` even if a tidy exit gets stuck."""
    timer = threading.Timer(seconds, _end_now, args=(status,))
    timer.daemon = True
    timer.start()


def _end_now(status: int) -> None:
    silence_standard_streams()
    os._exit(status)


def silence_standard_streams() -> None:
    """Point stdout and stderr at /dev/null: with the terminal gone, the interpreter's last flush
    at exit would otherwise fail and turn the exit status into 120."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    for fd in (1, 2):
        try:
            os.dup2(null, fd)
        except OSError:
            pass
    os.close(null)
