"""The folder where batchtui keeps state (`$XDG_STATE_HOME/batchtui/`, or
`~/.local/state/batchtui/`), the files it keeps there (the learner's progress,
`batchtui.progress`; crash reports, `batchtui.crash`) and how each is written: to a temporary
file first, synced, renamed over the old one, the folder synced too, so a crash at any moment
leaves the old file or the new one. Temporary files a killed run left behind (named as
`write_atomically` names them, nobody else's) are removed at the next start.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from pathlib import Path

PROGRESS_FILE = "progress.json"
REPORT_PREFIX = "crash-"
REPORT_SUFFIX = ".txt"
"""A crash report is `crash-<date>-<time>.txt`."""
STALE_TEMPORARY_S = 60.0
"""A temporary file older than this belongs to a run that died mid-write (a write takes ms)."""
TEMPORARY_SUFFIX = ".tmp"


def state_dir() -> Path:
    """Where batchtui keeps state, following the XDG base-directory rules."""
    xdg = os.environ.get("XDG_STATE_HOME", "")
    # The spec says a relative path is invalid and must be ignored.
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".local" / "state"
    return base / "batchtui"


def write_atomically(path: Path, text: str) -> None:
    """Replace `path` with `text` so that a crash at any moment leaves the old file or the new one.

    The text goes to a hidden temporary file beside it (`.NAME-*.tmp`), is synced, renamed over
    `path`, and the directory is synced so the rename itself survives a power cut. Raises OSError.
    """
    Path(path).parent.mkdir(parents=True, exist_ok=True)  # our folder, never a link's target's
    path = Path(os.path.realpath(path))  # through a symbolic link: its target is replaced
    directory = path.parent  # (a dangling link's missing folder is an OSError: nothing is created)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=TEMPORARY_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as tmp:
            tmp.write(text)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    sync_directory(directory)


def sync_directory(directory: Path) -> None:
    """Sync a folder, so a rename in it survives a power cut (where the file system can)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot sync a directory; the rename has still happened
    finally:
        os.close(fd)


def _our_temporary() -> re.Pattern:
    """Names `write_atomically` gives the temporaries of the files the app keeps in its state
    folder (the progress file, crash reports): `.progress-k1ll3d00.tmp`,
    `.crash-20260101-120000-x1y2z3w4.tmp`."""
    stems = "|".join(re.escape(s) for s in (Path(PROGRESS_FILE).stem,))
    # mkstemp's part is 8 characters of [a-z0-9_]: a user's `.progress-backup.tmp` is not ours
    return re.compile(rf"\.(?:{stems}|{re.escape(REPORT_PREFIX)}[0-9-]+)-[a-z0-9_]{{8}}{re.escape(TEMPORARY_SUFFIX)}")


def remove_stale_temporaries(directory: Path, now: float | None = None) -> int:
    """Delete the temporaries `write_atomically` made in `directory` for runs killed mid-write
    (and only those: a user's own `.notes.tmp` stays); returns how many went."""
    now = time.time() if now is None else now
    removed = 0
    ours = _our_temporary()
    try:
        candidates = [p for p in directory.glob(f".*{TEMPORARY_SUFFIX}") if ours.fullmatch(p.name)]
    except OSError:
        return 0
    for candidate in candidates:
        try:
            if candidate.is_file() and now - candidate.stat().st_mtime > STALE_TEMPORARY_S:
                candidate.unlink()
                removed += 1
        except OSError:
            pass  # another run's, or already gone
    return removed
