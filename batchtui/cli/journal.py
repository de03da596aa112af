"""`batchtui search`'s journal: each point's result, one JSON line as it finishes, so an interrupted
search resumes where it stopped.

A journal is read a line at a time within a bound (`sim.userfiles`, kind "journal": 256 MiB, a
line 64 KiB), and every line must be a row this command writes, `{"key": ..., "result": ...}`
with each field of its type (`sim.search.PointResult.from_json`); anything else is refused in
one line naming the file and line. The only exception is the last line of a file that does not
end with a line break and starts as a row does: a row torn by a run killed mid-write, skipped.
So a file that is not a journal (an empty file is none the worse for one) is never appended to,
and is left as it was; `--output` must be a regular file (a device such as /dev/full or
/dev/zero is refused before anything runs). Appending to a journal with a torn last line first
cuts the torn bytes off, so every line stays whole.
"""

from __future__ import annotations

import json
import os
import stat

from sim import search as s
from sim.userfiles import FileRefused, read_lines

from .exits import OutputError, UserError

ROW_START = '{"key": '
"""How every row this command writes begins (`json.dumps` of {"key": ..., "result": ...})."""


class JournalFile:
    """What reading a journal found: its rows (key -> result), and whether its last line lacks
    its line break: a torn row (`torn_bytes` long) or a whole one (`unended`)."""

    def __init__(self) -> None:
        self.done: dict[str, s.PointResult] = {}
        self.torn_bytes = 0
        self.unended = False


def _row(line: str) -> tuple[str, s.PointResult]:
    try:
        row = json.loads(line)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if not isinstance(row, dict) or set(row) != {"key", "result"} or not isinstance(row["key"], str):
        raise ValueError("not a journal row")
    return row["key"], s.PointResult.from_json(row["result"])


def _could_be_torn(line: str) -> bool:
    """The start of a row cut short by a run killed mid-write."""
    return line.startswith(ROW_START) or ROW_START.startswith(line)


def read_journal(path: str, flag: str) -> JournalFile:
    """The rows of the journal at `path` (none when there is no such file); UserError naming
    `flag` for what cannot be read or is not a journal."""
    found = JournalFile()
    if not os.path.lexists(path):
        return found
    pending: tuple[int, str] | None = None  # the line before, checked once it is known not to be the last
    try:
        for number, line in read_lines(path, "journal", keep_ends=True):
            if pending is not None:
                _add(found, path, flag, *pending)
            pending = (number, line)
    except FileRefused as exc:
        raise UserError(f"argument {flag}: {exc}") from None
    if pending is not None:
        number, line = pending
        if line.endswith("\n"):
            _add(found, path, flag, number, line)
        else:
            try:
                key, result = _row(line)
            except (ValueError, TypeError):
                if not _could_be_torn(line):
                    raise _not_journal(path, flag, number) from None
                found.torn_bytes = len(line.encode("utf-8"))
            else:
                found.done[key] = result
                found.unended = True
    return found


def _add(found: JournalFile, path: str, flag: str, number: int, line: str) -> None:
    try:
        key, result = _row(line)
    except (ValueError, TypeError):
        raise _not_journal(path, flag, number) from None
    found.done[key] = result


def _not_journal(path: str, flag: str, number: int) -> UserError:
    return UserError(f"argument {flag}: {path}:{number}: not a line of a batchtui search journal (a "
                     "journal holds only the lines batchtui search writes; give another file)")


class Journal:
    """Appends each result to the journal at `path` as one JSON line, flushed, as it finishes;
    the file is created on the first result. `open` reads what is there first."""

    def __init__(self, path: str, read: JournalFile) -> None:
        self.path = path
        self.read = read
        self.handle = None

    @classmethod
    def open(cls, path: str) -> "Journal":
        """The journal at `path` (--output), its rows read and checked: UserError, the file
        untouched, when it is not a regular file, cannot be written, or is not a journal."""
        try:
            st = os.stat(path)
        except FileNotFoundError:
            st = None
        except OSError as exc:
            raise UserError(f"argument --output: cannot write {path}: {exc.strerror or exc}") from None
        if st is not None:
            if not stat.S_ISREG(st.st_mode):
                raise UserError(f"argument --output: {path} is not a regular file (the search journal is "
                                "appended to it)")
            if not os.access(path, os.W_OK):
                raise UserError(f"argument --output: cannot write {path}: the file is read-only")
        return cls(path, read_journal(path, "--output"))

    def _open(self) -> None:
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
            if self.read.torn_bytes:  # the torn row is ours: its bytes go, so every line is whole
                os.ftruncate(fd, os.fstat(fd).st_size - self.read.torn_bytes)
            self.handle = os.fdopen(fd, "a", encoding="utf-8")
            if self.read.unended:
                self.handle.write("\n")
        except OSError as exc:
            raise UserError(f"argument --output: cannot write {self.path}: {exc.strerror or exc}") from None

    def add(self, key: str, result: s.PointResult) -> None:
        if self.handle is None:
            self._open()
        try:
            self.handle.write(json.dumps({"key": key, "result": result.to_json()}) + "\n")
            self.handle.flush()
        except OSError as exc:  # a full disk: what is written stays, whole lines and a torn one
            raise OutputError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None
