"""How a run of the tutorial ends, and the exit status it ends with.

0 after a quit; 1 if an error nothing caught stopped it (a capped report under the state
directory, one line on stderr naming it); 129 when its terminal went away (the process ends
within half a second whatever is stuck: there is nothing to restore and progress is saved on
every change); 130 or 143 after SIGINT or SIGTERM, the terminal restored first.
"""

from __future__ import annotations

import asyncio
import errno
import signal
import sys

from . import terminal


class Ending:
    """Watches for the ways a run can end besides a quit, and says how it ended."""

    def __init__(self, app) -> None:
        self.app = app
        self.crash_message: str | None = None
        """The one line for the learner, once an error nothing caught has stopped the app."""
        self.terminal_lost = False
        self._watch: terminal.TerminalWatch | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._old_handlers: dict[int, object] = {}

    # -- while the app runs (on a real terminal, not under tests)
    def start(self) -> None:
        """From the app's loop: watch the terminal, and take SIGTERM and SIGINT."""
        self._loop = asyncio.get_running_loop()
        self._watch = terminal.TerminalWatch(self._terminal_gone)
        self._watch.start()
        # SIGHUP keeps its default: the process ends at once, which is all a hang-up needs.
        for signum in (signal.SIGTERM, signal.SIGINT):
            self._old_handlers[signum] = signal.signal(signum, self._on_stop_signal)

    def stop(self) -> None:
        if self._watch is not None:
            self._watch.stop()
        for signum, handler in self._old_handlers.items():
            signal.signal(signum, handler)
        self._old_handlers.clear()

    def _on_stop_signal(self, signum: int, frame: object) -> None:
        status = 128 + signum
        terminal.end_process_after(terminal.SIGNAL_GRACE_S, status)
        self._exit_from_anywhere(status)

    def _terminal_gone(self) -> None:
        """The terminal hung up (from the watch's thread, or after a write to it failed)."""
        if self.terminal_lost:
            return
        self.terminal_lost = True
        terminal.end_process_after(terminal.LOST_GRACE_S, terminal.EXIT_HANGUP)
        self._exit_from_anywhere(terminal.EXIT_HANGUP)

    def _exit_from_anywhere(self, status: int) -> None:
        try:
            self._loop.call_soon_threadsafe(self.app.exit, None, status)
        except (AttributeError, RuntimeError):  # no loop, or already closed: the app is ending
            pass

    def unexpected(self, error: BaseException) -> None:
        """An error nothing caught, in the app: record it (once); the caller stops the app."""
        if self.terminal_lost or (_is_terminal_error(error) and terminal.hung_up(terminal.standard_streams())):
            self._terminal_gone()  # a write to a terminal that is gone is no crash
            return
        if self.crash_message is not None:
            return
        from . import crash

        self.crash_message = crash.record(self.app.store.directory, error, self._context(),
                                          self._keep_progress(save=True))

    def _keep_progress(self, save: bool) -> str:
        """What becomes of the learner's progress as the app stops on an error, in the crash
        line's words: saved once more (`save`) if it was read, never written if it was not."""
        from . import crash

        app = self.app
        store = app.store
        if not store.loaded:  # what the app holds is a blank default, not the learner's
            return crash.PROGRESS_UNTOUCHED
        try:
            if save:
                store.save(app.progress)
            if not (store.save_failed or store.keep_file):
                return crash.PROGRESS_SAVED
        except Exception:
            pass
        return crash.PROGRESS_NOT_SAVED

    def _context(self) -> dict[str, object]:
        app = self.app
        context: dict[str, object] = {}
        try:
            context["screens"] = " > ".join(type(screen).__name__ for screen in app.screen_stack)
            context["terminal"] = f"{app.size.width}x{app.size.height}"
            context["progress"] = (f"step {app.progress.current_step}, completed {sorted(app.progress.completed)}"
                                   if app.store.loaded else "not read yet")
        except Exception as exc:
            context["context"] = f"incomplete ({type(exc).__name__})"
        return context

    # -- after the app's run
    def finish(self, error: BaseException | None = None) -> int:
        """The exit status, once `app.run()` has returned (or raised `error` outside the app's
        loop, starting or stopping the terminal driver); prints the line a crash owes."""
        if self.terminal_lost:
            terminal.silence_standard_streams()
            return terminal.EXIT_HANGUP
        if error is not None and self.crash_message is None:
            from . import crash

            self.crash_message = crash.record(self.app.store.directory, error,
                                              {"when": "starting or stopping the app"},
                                              self._keep_progress(save=False))
        if self.crash_message is not None:
            print(self.crash_message, file=sys.stderr)
            return 1
        return self.app.return_code or 0


def _is_terminal_error(error: BaseException) -> bool:
    """A failed write or read on a terminal (or textual-serve's pipe) that has gone away."""
    return isinstance(error, OSError) and error.errno in (errno.EIO, errno.EPIPE, errno.ENXIO, errno.EBADF)
