"""The one reader of files a user names: scenarios, profiles, traces, datasets, result files and
scheduler cases.

Whatever the path is, the answer is the file's text or one line (`FileRefused`) saying why not,
in bounded memory and time:

- a regular file is read when its size is within its kind's cap (`KINDS`), checked before a byte
  is read; a named pipe (a process substitution, `<(zcat trace.gz)`) is read as a stream up to the
  same cap; anything else (a folder, a character device such as /dev/zero or /dev/urandom, a
  socket) is refused;
- text is read a chunk at a time and decoded as it comes, so bytes that are not UTF-8 (or a NUL
  byte, which no format read here holds) stop the read at the first chunk, and Ctrl-C
  (KeyboardInterrupt) stops it between chunks;
- formats read a line at a time (JSON Lines traces, custom datasets) are streamed by `read_lines`
  and never held whole.

Imports the standard library only: `sim` and the command line use it alike.
"""

from __future__ import annotations

import codecs
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

from .errors import SimError

CHUNK_BYTES = 1 << 20
MAX_LINE_BYTES = 64 << 20
"""A line of a line-by-line format longer than this is refused (a trace line is under 1 KB, a
custom dataset's prompt a few hundred KB at most)."""


@dataclass(frozen=True)
class Kind:
    """A kind of user file: what the messages call it, the most bytes read of one, and (for a
    format read a line at a time) the longest line."""

    what: str
    max_bytes: int
    max_line_bytes: int = MAX_LINE_BYTES


KINDS = {
    # A saved scenario is under 2 KB; the built-in profiles about 10 KB.
    "scenario": Kind("scenario file", 256 << 10),
    "profiles": Kind("profile file", 4 << 20),
    # ShareGPT_V3_unfiltered_cleaned_split.json, the dataset vllm bench serve names, is 673 MB.
    "dataset": Kind("dataset file", 1 << 30),
    "trace": Kind("trace file", 1 << 30),
    # A detailed `vllm bench serve --save-result` of 100,000 requests is a few hundred MB.
    "result": Kind("result file", 1 << 30),
    "cases": Kind("case file", 64 << 20),
    # `batchtui search`'s journal: a line a point, under 2 KB; 512 points are about 400 KB.
    "journal": Kind("search journal", 256 << 20, 64 << 10),
}


class FileRefused(SimError, ValueError):
    """A user file that cannot be read as the kind asked; the message names the file, one line.
    `not_text` when it was read but is not text (not UTF-8, or NUL bytes: a caller may say what it
    is not)."""

    def __init__(self, message: str, not_text: bool = False, why: str = "") -> None:
        super().__init__(message)
        self.not_text = not_text
        self.why = why or message
        """Why, without the file's name (the message's end)."""


def size_text(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            value = n / (1 << shift)
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"


def _refuse(path, kind: Kind, why: str, not_text: bool = False) -> FileRefused:
    return FileRefused(f"{path}: cannot read the {kind.what}: {why}", not_text, why)


def _open(path, kind: Kind) -> tuple[int, bool]:
    """An open descriptor for `path` and whether it is a stream (a named pipe)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        if isinstance(exc, IsADirectoryError):
            raise _refuse(path, kind, "it is a folder") from None
        raise _refuse(path, kind, getattr(exc, "strerror", None) or str(exc)) from None
    try:
        info = os.fstat(fd)  # the file opened, not whatever the name points at by now
        mode = info.st_mode
        if stat.S_ISDIR(mode):
            raise _refuse(path, kind, "it is a folder")
        if stat.S_ISFIFO(mode):
            return fd, True
        if not stat.S_ISREG(mode):
            raise _refuse(path, kind, "it is not a regular file or a pipe")
        if info.st_size > kind.max_bytes:
            raise _refuse(path, kind, f"it is {size_text(info.st_size)}, over the "
                                      f"{size_text(kind.max_bytes)} a {kind.what} may be")
        return fd, False
    except BaseException:
        os.close(fd)
        raise


def _chunks(path, kind: Kind) -> Iterator[str]:
    """The file's text, decoded a chunk at a time; refuses past the kind's cap or on bytes that
    are not UTF-8. Ctrl-C raises KeyboardInterrupt between chunks."""
    fd, _ = _open(path, kind)
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    total = 0
    try:
        while True:
            try:
                data = os.read(fd, CHUNK_BYTES)
            except OSError as exc:
                raise _refuse(path, kind, exc.strerror or str(exc)) from None
            total += len(data)
            if total > kind.max_bytes:  # a stream that grew past the cap
                raise _refuse(path, kind, f"it holds more than the {size_text(kind.max_bytes)} a "
                                          f"{kind.what} may be")
            try:
                text = decoder.decode(data, final=not data)
            except UnicodeDecodeError:
                raise _refuse(path, kind, "it is not UTF-8 text", not_text=True) from None
            if "\x00" in text:  # no format read here (JSON, JSON Lines, TOML) holds one
                raise _refuse(path, kind, "it holds NUL bytes, so it is not a text file", not_text=True)
            if text:
                yield text
            if not data:
                return
    finally:
        os.close(fd)


def read_text(path, kind: str) -> str:
    """The whole text of a user file of `kind` (a key of KINDS). Raises FileRefused."""
    return "".join(_chunks(path, KINDS[kind]))


def read_lines(path, kind: str, keep_ends: bool = False) -> Iterator[tuple[int, str]]:
    """(line number from 1, line without its end) of a user file of `kind`, streamed: the file is
    never held whole. With `keep_ends` a line keeps its "\n" (the last has none when the file
    does not end with one). Raises FileRefused (also for a line over the kind's max_line_bytes)."""
    spec = KINDS[kind]
    pending: list[str] = []
    pending_len = 0
    lineno = 0
    for text in _chunks(path, spec):
        start = 0
        while True:
            end = text.find("\n", start)
            if end < 0:
                break
            piece = text[start:end]
            if pending:
                piece = "".join(pending) + piece
                pending.clear()
                pending_len = 0
            lineno += 1
            if len(piece) > spec.max_line_bytes:
                raise _long_line(path, spec, lineno)
            yield lineno, piece + "\n" if keep_ends else piece.rstrip("\r")
            start = end + 1
        if start < len(text):
            pending.append(text[start:])
            pending_len += len(text) - start
            if pending_len > spec.max_line_bytes:
                raise _long_line(path, spec, lineno + 1)
    if pending:
        yield lineno + 1, "".join(pending) if keep_ends else "".join(pending).rstrip("\r")


def _long_line(path, spec: Kind, lineno: int) -> FileRefused:
    return FileRefused(f"{path}:{lineno}: cannot read the {spec.what}: a line longer than "
                       f"{size_text(spec.max_line_bytes)}")
