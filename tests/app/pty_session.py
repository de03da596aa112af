"""The app on a pseudo-terminal, as a learner's terminal sees it: keys written as bytes (several
in one write, as SSH and pastes deliver them), the screen read back through a terminal emulator."""

from __future__ import annotations

import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pyte

KEY_BYTES = {
    "enter": b"\r", "tab": b"\t", "shift+tab": b"\x1b[Z", "escape": b"\x1b", "space": b" ",
    "up": b"\x1b[A", "down": b"\x1b[B", "right": b"\x1b[C", "left": b"\x1b[D",
    "backspace": b"\x7f", "ctrl+q": b"\x11", "ctrl+n": b"\x0e", "ctrl+p": b"\x10", "ctrl+t": b"\x14",
    "ctrl+o": b"\x0f", "ctrl+d": b"\x04", "ctrl+r": b"\x12", "ctrl+u": b"\x15", "f1": b"\x1bOP",
    "pagedown": b"\x1b[6~", "pageup": b"\x1b[5~", "home": b"\x1b[H", "end": b"\x1b[F",
}


SYNC_QUERY = b"\x1b[?2026$p"
"""The app asks whether the terminal supports synchronized output..."""
SYNC_REPLY = b"\x1b[?2026;2$y"
"""...and a terminal that does says so."""
SYNC_END = b"\x1b[?2026l"
"""The end of a frame the app wrote as one."""


def key_bytes(*keys: str) -> bytes:
    """Bytes a terminal sends for these keys (single characters stand for themselves)."""
    return b"".join(KEY_BYTES.get(k) or k.encode() for k in keys)


class PtySession:
    """`python -m batchtui ARGS` (or `command` + ARGS) on a pty of `cols`x`rows`, its state under
    `state_home`.

    The child gets its own session without a controlling terminal, so closing the pty sends it
    no SIGHUP: what it sees is only a read error or end of file on its input."""

    def __init__(self, args: list[str], state_home: Path, cols: int = 80, rows: int = 24,
                 env: dict[str, str] | None = None, command: list[str] | None = None,
                 first_launch: bool = False, synchronized: bool = False) -> None:
        """`synchronized`: the terminal says it supports synchronized output (as kitty, WezTerm,
        iTerm2 and foot do), so the app writes each frame between its marks (`frames`)."""
        self._synchronized = synchronized
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        environment = dict(os.environ, TERM="xterm-256color", XDG_STATE_HOME=str(state_home))
        for name in ("NO_COLOR", "COLORTERM", "TEXTUAL", "TEXTUAL_DRIVER"):
            environment.pop(name, None)
        environment.update(env or {})
        command = command or [sys.executable, "-m", "batchtui"]
        # Its working directory is its own: a file prompt given a relative name writes there.
        state_home.mkdir(parents=True, exist_ok=True)
        if not first_launch:
            # Progress saved already: the first-launch orientation (which takes the first key)
            # does not cover the step the keys are meant for.
            from batchtui.progress import Progress, ProgressStore

            store = ProgressStore(state_home / "batchtui")
            if not store.path.exists():
                store.save(Progress())
        self.proc = subprocess.Popen([*command, *args], stdin=slave, stdout=slave,
                                     stderr=slave, env=environment, start_new_session=True, close_fds=True,
                                     cwd=state_home)
        os.close(slave)
        self.screen = pyte.Screen(cols, rows)
        self._stream = pyte.ByteStream(self.screen)
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self.output = bytearray()
        """Everything the app wrote (tracebacks land here too)."""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        # select with a timeout, never a blocking read: a descriptor another thread is reading
        # stays open after close(), and the app would never see its terminal go.
        while not self._closing.is_set():
            try:
                if not select.select([self.master], [], [], 0.05)[0]:
                    continue
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            with self._lock:
                self.output += chunk
                self._stream.feed(chunk)
                asked = self._synchronized and SYNC_QUERY in self.output[-len(chunk) - len(SYNC_QUERY):]
            if asked:
                self._synchronized = False
                os.write(self.master, SYNC_REPLY)

    def text(self) -> str:
        with self._lock:
            return "\n".join(self.screen.display)

    def wait_for(self, words: str, timeout: float = 20.0) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if words in self.text():
                return True
            if self.proc.poll() is not None:
                self._drain()
                return words in self.text()
            time.sleep(0.02)
        return False

    def write(self, data: bytes) -> None:
        os.write(self.master, data)

    def press(self, *keys: str) -> None:
        """All these keys in one write."""
        self.write(key_bytes(*keys))

    def resize(self, cols: int, rows: int) -> None:
        """The terminal window changes size (the app has no controlling terminal here, so the
        SIGWINCH a terminal would send is sent by hand)."""
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        with self._lock:
            self.screen.resize(rows, cols)
        self.proc.send_signal(signal.SIGWINCH)

    def wait_exit(self, timeout: float = 10.0) -> int | None:
        """The app's exit status once it has ended (None if it runs on after `timeout`), with
        everything it wrote read: `output`, `text` and `transcript` then hold its last bytes."""
        try:
            status = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        self._drain()
        return status

    def _drain(self, timeout: float = 10.0) -> None:
        """The app has ended: wait until the reader has read what it wrote last. A process's exit
        does not wait for the terminal to be read; on a busy machine the reader thread ran later
        than the exit, and a test that read the transcript at once missed the app's last line.
        The reader ends when the pty reports that no process holds its other end any more."""
        if self.master >= 0:
            self._reader.join(timeout=timeout)

    def close_terminal(self) -> None:
        """The terminal goes away (an SSH connection dropped): the pty's master is closed."""
        if self.master >= 0:
            self._closing.set()
            self._reader.join(timeout=5)
            os.close(self.master)
            self.master = -1

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=5)
        self.close_terminal()

    def mark(self) -> int:
        """Where the output is now (for `frames`)."""
        with self._lock:
            return len(self.output)

    def frames(self, since: int) -> list[str]:
        """The screen after each whole frame written since `since` (a `mark`): with
        `synchronized`, a frame is what the app writes between the marks."""
        with self._lock:
            output = bytes(self.output)
        screen = pyte.Screen(self.screen.columns, self.screen.lines)
        stream = pyte.ByteStream(screen)
        stream.feed(output[:since])
        shown = []
        for frame in output[since:].split(SYNC_END)[:-1]:
            stream.feed(frame + SYNC_END)
            shown.append("\n".join(screen.display))
        return shown

    def transcript(self) -> str:
        with self._lock:
            return bytes(self.output).decode("utf-8", "replace")
