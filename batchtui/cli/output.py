"""Result files that never cost the user a file.

A result is written to a temporary file beside the target and renamed into place only when the
command succeeds, so a failing run leaves every existing file as it was; nothing this program did
not create is ever removed. Under `command_outputs()` (every subcommand runs under it) the renames
wait for the end of the command, after standard output has been written and flushed: a full or
closed standard output (`> /dev/full`) fails the run, in one line, before any file is replaced. `-` means standard output. A character device or a named pipe (such as
/dev/null or a process substitution) is written directly, as a stream; anything else that is not
a regular file (a directory, a block device) is refused, as is a read-only file.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .exits import OutputError, ReaderGone, UserError


class Sink:
    """A text stream whose write errors (a full disk, an I/O error) become one-line OutputErrors,
    and a reader gone away (a broken pipe) ReaderGone. Other attributes are the stream's own (so
    it can stand in for sys.stdout)."""

    def __init__(self, handle, shown: str) -> None:
        self._handle = handle
        self.shown = shown

    def __getattr__(self, name: str):
        return getattr(self._handle, name)

    def _closed(self) -> OutputError:
        return OutputError(f"cannot write {self.shown}: it is closed")

    def write(self, text: str) -> int:
        if self._handle is None:  # started with standard output closed (>&-)
            raise self._closed()
        try:
            return self._handle.write(text)
        except BrokenPipeError:  # the reader went away (`| head`): main stops quietly
            raise ReaderGone(self.shown) from None
        except ValueError:  # closed while running
            raise self._closed() from None
        except OSError as exc:
            raise OutputError(f"cannot write {self.shown}: {exc.strerror or exc}") from None

    def flush(self) -> None:
        if self._handle is None:
            return
        try:
            self._handle.flush()
        except BrokenPipeError:
            raise ReaderGone(self.shown) from None
        except OSError as exc:
            raise OutputError(f"cannot write {self.shown}: {exc.strerror or exc}") from None


# The renames waiting for the end of the command (None: rename as each file's block ends).
_pending: list[tuple[Path, Path, str]] | None = None


@contextlib.contextmanager
def command_outputs() -> Iterator[None]:
    """Run a command whose standard output goes through a Sink and whose result files are renamed
    into place only at the end, after standard output is flushed; on any failure, the temporary
    files are removed and every existing file stays as it was."""
    global _pending
    outer, real = _pending, sys.stdout
    _pending = pending = []
    sys.stdout = Sink(real, "standard output")
    done = False
    try:
        yield
        sys.stdout.flush()
        for tmp, target, shown in pending:
            try:
                os.replace(tmp, target)
            except OSError as exc:
                raise OutputError(f"cannot write {shown}: {exc.strerror or exc}") from None
        done = True
    finally:
        sys.stdout = real
        _pending = outer
        if not done:
            for tmp, _, _ in pending:
                with contextlib.suppress(OSError):
                    tmp.unlink()  # ours: made by output_file


def _refuse(flag: str, path: str, why: str) -> UserError:
    return UserError(f"argument {flag}: cannot write {path}: {why}")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def output_file(path: str | None, flag: str) -> Iterator[Sink | None]:
    """Yield a Sink for `path` (None when no path was given). The file appears, whole, only when
    the block ends without an exception."""
    if path is None:
        yield None
        return
    if path == "-":
        yield Sink(sys.stdout, "standard output")
        sys.stdout.flush()
        return
    st = _checked(path, flag)
    if st is not None and (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        yield from _stream(path, flag)
        return
    target = Path(os.path.realpath(path))  # through a symbolic link: replace what it points to
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise _refuse(flag, path, exc.strerror or str(exc)) from None
    tmp = Path(tmp_name)
    handle = os.fdopen(fd, "w", encoding="utf-8", newline="")
    sink = Sink(handle, path)
    committed = False
    try:
        yield sink
        sink.flush()
        try:
            handle.close()
            os.chmod(tmp, stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask())
            if _pending is None:
                os.replace(tmp, target)
        except OSError as exc:
            raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
        if _pending is not None:
            _pending.append((tmp, target, path))  # renamed when the command ends well
        committed = True
    finally:
        if not committed:
            with contextlib.suppress(OSError):
                handle.close()
            with contextlib.suppress(OSError):
                tmp.unlink()  # ours: made above


def _checked(path: str, flag: str):
    """`path`'s stat (None when it does not exist yet), or a UserError when it cannot be written as
    an output: a directory, a block device, a read-only file."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _refuse(flag, path, exc.strerror or str(exc)) from None
    if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        return st
    if stat.S_ISDIR(st.st_mode):
        raise _refuse(flag, path, "it is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(flag, path, "it is not a regular file (use - for standard output)")
    if not st.st_mode & 0o222 or not os.access(path, os.W_OK):
        raise _refuse(flag, path, "the file is read-only")
    return st


def check_writable(path: str | None, flag: str, directory: str | None = None) -> None:
    """Refuse, before a long run, an output that could not be written after it: `path` as
    `output_file` would refuse it, or, when its name is not known yet (None), a `directory` a file
    cannot be made in."""
    if path == "-":
        return
    if path is not None:
        st = _checked(path, flag)
        if st is not None:
            return
        directory = os.path.dirname(os.path.realpath(path))
    directory = directory or "."
    try:
        fd, tmp = tempfile.mkstemp(prefix=".batchtui-check.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise _refuse(flag, path or directory, exc.strerror or str(exc)) from None
    os.close(fd)
    os.unlink(tmp)  # ours: made just above


def _stream(path: str, flag: str) -> Iterator[Sink]:
    try:
        handle = open(path, "w", encoding="utf-8", newline="")
    except OSError as exc:
        raise _refuse(flag, path, exc.strerror or str(exc)) from None
    sink = Sink(handle, path)
    try:
        yield sink
        sink.flush()
    finally:
        with contextlib.suppress(OSError):
            handle.close()
