"""When the app meets an error nothing else caught: a capped report under the state directory and
one line for the learner, instead of a screenful of traceback with every local variable in it.

The report holds what a maintainer needs (versions, the command, where the learner was, the
traceback without local variables) and nothing that can be huge: every line and the whole file
are capped, and only the newest few reports are kept.
"""

from __future__ import annotations

import platform
import sys
import time
import traceback
from collections.abc import Mapping
from pathlib import Path

from .state_folder import REPORT_PREFIX, REPORT_SUFFIX, write_atomically

KEEP_REPORTS = 10
MAX_REPORT_CHARS = 64 * 1024
MAX_LINE_CHARS = 400


def short_error(error: BaseException, limit: int = 100) -> str:
    """`Type: message` on one line, cut to `limit` characters."""
    text = " ".join(str(error).split())
    line = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _cap_line(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}... [{len(line) - MAX_LINE_CHARS:,} more characters]"


def format_report(error: BaseException, context: Mapping[str, object]) -> str:
    """The report's text: a header of `context` lines, then the traceback (no locals), capped."""
    head = ["batchtui crash report", f"time: {time.strftime('%Y-%m-%d %H:%M:%S %z')}"]
    head += [_cap_line(f"{key}: {value}") for key, value in context.items()]
    head.append("")
    try:
        lines = "".join(traceback.format_exception(error)).splitlines()
        inner = getattr(error, "error", None)  # Textual's WorkerFailed holds the worker's error
        if isinstance(inner, BaseException) and inner is not error.__cause__:
            lines += ["", "The worker's error:"] + "".join(traceback.format_exception(inner)).splitlines()
    except Exception as exc:  # a broken __str__ must not stop the report
        lines = [f"(the traceback could not be formatted: {type(exc).__name__})", short_error(error)]
    body = [_cap_line(line) for line in lines]
    text = "\n".join(head + body) + "\n"
    if len(text) <= MAX_REPORT_CHARS:
        return text
    # Keep the header and the end of the traceback (the innermost frames and the error itself).
    header = "\n".join(head) + "\n"
    budget = MAX_REPORT_CHARS - len(header) - 80
    kept: list[str] = []
    for line in reversed(body):
        budget -= len(line) + 1
        if budget < 0:
            break
        kept.append(line)
    kept.reverse()
    dropped = len(body) - len(kept)
    return header + f"[... {dropped:,} earlier lines of the traceback left out ...]\n" + "\n".join(kept) + "\n"


def environment() -> dict[str, str]:
    """Versions and the command line, for the report's header."""
    from importlib import metadata

    found = {}
    for package in ("batchtui", "textual", "rich"):
        try:
            found[package] = metadata.version(package)
        except Exception:
            found[package] = "?"
    return {
        "versions": ", ".join(f"{name} {version}" for name, version in found.items())
        + f", Python {platform.python_version()}",
        "system": platform.platform(),
        "command": " ".join(sys.argv),
    }


def save_report(directory: Path, error: BaseException, context: Mapping[str, object]) -> Path:
    """Write the report under `directory` and drop all but the newest reports. Raises OSError."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = directory / f"{REPORT_PREFIX}{stamp}{REPORT_SUFFIX}"
    n = 1
    while path.exists():
        n += 1
        path = directory / f"{REPORT_PREFIX}{stamp}-{n}{REPORT_SUFFIX}"
    write_atomically(path, format_report(error, {**environment(), **context}))
    reports = sorted(directory.glob(f"{REPORT_PREFIX}*{REPORT_SUFFIX}"), key=_age_key)
    for old in reports[:-KEEP_REPORTS]:
        try:
            old.unlink()
        except OSError:
            pass
    return path


def _age_key(path: Path) -> tuple[float, str]:
    try:
        return (path.stat().st_mtime, path.name)
    except OSError:
        return (0.0, path.name)


PROGRESS_SAVED = "Your progress is saved"
PROGRESS_NOT_SAVED = "Progress could not be saved"
PROGRESS_UNTOUCHED = "Nothing was written over your saved progress"
"""What the line says of the learner's progress: saved (it is, on every change), not saved (the
file could not be written), or untouched (the error came before it was read)."""


def record(directory: Path, error: BaseException, context: Mapping[str, object],
           progress: str = PROGRESS_SAVED) -> str:
    """Save a report if possible; returns the one line to show the learner, saying `progress`."""
    kept = progress
    try:
        path = save_report(directory, error, context)
    except Exception as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        return (f"batchtui stopped on an unexpected error ({short_error(error)}). {kept}; "
                f"no report could be written to {directory} ({reason}).")
    return (f"batchtui stopped on an unexpected error ({type(error).__name__}). {kept}; "
            f"the full report is in {path}")
