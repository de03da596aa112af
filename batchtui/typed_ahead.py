"""Keys typed while `batchtui` starts reach the app as typed.

Until Textual puts the terminal in raw mode (after its imports: half a second, a second and more
on a loaded machine), the terminal's line discipline reads the keys first, in canonical mode:
it eats ctrl+q and ctrl+s (flow control), ctrl+r (reprint), ctrl+u and ctrl+w (erase what was
typed so far), ctrl+v and ctrl+d, echoes every key onto the shell's screen, and turns Enter into
a line feed. (tmux, a drill, one write 0.9 s after the start at load 5-8: 2 n Tab 9 Enter
ctrl+r 1 left one draft "91" where typed later it left "9" and the next question's "1".)

`hold()`, the command's first act (`batchtui.start`), turns that off: the keys wait, unread and
unechoed, as typed; signals are kept (Ctrl-C still ends start-up at once). `release()` puts the
terminal back as it was: before Textual saves its state to restore at exit and takes raw mode
(`key_input.KeysDriver`), before any other command runs (`batchtui.cli`), and when the command
ends or a signal ends it first. Nothing here touches a terminal that is not the input (a pipe,
textual-serve's sessions).
"""

from __future__ import annotations

import os
import signal

_held: tuple[int, list] | None = None
"""The terminal held (its descriptor) and its settings before, until `release`."""


def hold(fd: int = 0) -> None:
    """Keys typed from now on wait as typed (see the module's text), if `fd` is a terminal."""
    global _held
    if _held is not None:
        return
    try:
        if not os.isatty(fd):
            return
        import termios

        before = termios.tcgetattr(fd)
        held = [list(part) if isinstance(part, list) else part for part in before]
        held[0] &= ~(termios.IXON | termios.ICRNL)  # iflag: ctrl+q/ctrl+s; Enter as typed
        held[3] &= ~(termios.ICANON | termios.ECHO | termios.IEXTEN)  # lflag: no line editing, no echo
        held[6][termios.VMIN], held[6][termios.VTIME] = 1, 0
        termios.tcsetattr(fd, termios.TCSANOW, held)  # (TCSANOW: keys typed already stay)
    except Exception:  # noqa: BLE001 -- never stop the start
        return
    _held = (fd, before)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) is signal.SIG_DFL:
            signal.signal(signum, _released_then_default)


def release() -> None:
    """The terminal as it was before `hold` (once; nothing if nothing is held)."""
    global _held
    if _held is None:
        return
    fd, before = _held
    _held = None
    try:
        import termios

        termios.tcsetattr(fd, termios.TCSANOW, before)  # (TCSANOW: keys typed stay for the app)
    except Exception:  # noqa: BLE001 -- a terminal gone is nothing to put back
        pass


def _released_then_default(signum: int, frame: object) -> None:
    """SIGTERM or SIGHUP before anything else took it: the terminal put back, then the signal's
    own end (the status a shell reports for it)."""
    release()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
