"""A learner's progress: the step they are on, the activities they finished, their answers.

Kept as one small JSON file under `$XDG_STATE_HOME/batchtui/` (or `~/.local/state/batchtui/`).
Every write goes to a temporary file first, is synced, and replaces the old one (the directory is
synced too), so a crash mid-write never leaves half a file; temporary files a killed run left
behind (named as `write_atomically` names them, nobody else's) are removed at the next start. A
file that cannot be read, whatever it holds, is renamed aside and reported in one line: losing a
bookmark must never stop the tutorial from opening. A file from a newer batchtui is kept aside as
it is, never overwritten; a version no batchtui has (1e30) is unreadable. A read-only file is
read and never replaced (one line says so). A folder that cannot be searched (one a `sudo
batchtui` left, owned by root) is reported in one line and the session runs without saving. A
progress file that is a symbolic link (a dotfile manager's) is written through: its target is
replaced, the link kept; a link whose target's folder is gone fails to save, creating nothing.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

FILE_NAME = "progress.json"
FORMAT_VERSION = 1
MAX_FORMAT_VERSION = 999
"""A larger version is no format number of any batchtui: the file is unreadable, not newer."""
MAX_FILE_BYTES = 1 << 20
"""A real progress file is a few kilobytes; anything past this is not ours and is not read."""
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
    _sync_directory(directory)


def _sync_directory(directory: Path) -> None:
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
    from .crash import REPORT_PREFIX

    stems = "|".join(re.escape(s) for s in (Path(FILE_NAME).stem,))
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


def clean_text(text: str) -> str:
    """An answer as the app may show it again: no control characters, no unpaired surrogates."""
    return "".join(
        "\ufffd" if unicodedata.category(ch) == "Cs" else ch
        for ch in text
        if unicodedata.category(ch) != "Cc"
    )


@dataclass
class Progress:
    """What survives a restart."""

    current_step: int = 1
    completed: set[int] = field(default_factory=set)
    """Numbers of the steps whose activity the learner finished."""
    answers: dict[int, str] = field(default_factory=dict)
    """The last answer typed or chosen on each step, as the learner gave it."""

    def still_open(self, numbers) -> str:
        """One line naming the steps (of `numbers`) not completed yet, runs joined ("1, 5,
        11-17"); "" when every one is done."""
        open_ = [n for n in numbers if n not in self.completed]
        if not open_:
            return ""
        runs: list[list[int]] = []
        for n in open_:
            if runs and n == runs[-1][-1] + 1:
                runs[-1].append(n)
            else:
                runs.append([n])
        shown = ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)
        return f"Still open: step{'s' if len(open_) > 1 else ''} {shown}."

    def to_json(self) -> dict:
        return {
            "version": FORMAT_VERSION,
            "current_step": self.current_step,
            "completed": sorted(self.completed),
            "answers": {str(k): v for k, v in sorted(self.answers.items())},
        }

    @classmethod
    def from_json(cls, data: object) -> "Progress":
        """Parse a saved file; raise ValueError with a short reason if it is not one of ours."""
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        step = data.get("current_step", 1)
        completed = data.get("completed", [])
        answers = data.get("answers", {})
        if not _is_int(step) or step < 1:
            raise ValueError("current_step is not a step number")
        if not isinstance(completed, list) or not all(_is_int(n) for n in completed):
            raise ValueError("completed is not a list of step numbers")
        if not isinstance(answers, dict) or not all(isinstance(v, str) for v in answers.values()):
            raise ValueError("answers is not a table of text")
        try:
            answers_by_step = {int(k): clean_text(v) for k, v in answers.items()}
        except ValueError:
            raise ValueError("answers are not keyed by step number") from None
        return cls(current_step=step, completed=set(completed), answers=answers_by_step)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class ProgressStore:
    """Loads and saves `Progress` in one directory. Never raises for a bad or missing file."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory if directory is not None else state_dir()
        self.path = self.directory / FILE_NAME
        self.save_failed = False
        """Set once a save failed, so the app reports it once rather than on every step."""
        self.keep_file = False
        """Set when a file that could not be used could not be moved aside either: this session
        then never writes over it."""
        self.loaded = False
        """`load` has returned: what the app holds is the learner's progress (or a fresh one in
        place of a file set aside). Until then, nothing may be saved over the file (a crash at
        start-up saved an empty progress over it)."""

    def load(self) -> tuple[Progress, str | None]:
        """The saved progress (or a fresh one) and a one-line notice if the file was set aside."""
        found = self._load()
        self.loaded = True
        return found

    def _load(self) -> tuple[Progress, str | None]:
        remove_stale_temporaries(self.directory)
        try:
            info = self.path.stat()  # (through a symbolic link)
        except FileNotFoundError:
            return Progress(), None
        except OSError as exc:  # the folder cannot be searched (a root-owned one), or is a file
            self.keep_file = True
            return Progress(), (f"Progress cannot be read or saved in {self.directory} ({_reason(exc)}); "
                                "this session runs without saving.")
        try:
            if not stat.S_ISREG(info.st_mode):  # a FIFO would never finish reading
                return Progress(), self._set_aside("not a regular file")
            with open(self.path, "rb") as file:
                raw = file.read(MAX_FILE_BYTES + 1)
        except FileNotFoundError:
            return Progress(), None
        except OSError as exc:
            return Progress(), self._set_aside(_reason(exc))
        if len(raw) > MAX_FILE_BYTES:
            return Progress(), self._set_aside(f"larger than {MAX_FILE_BYTES // 1024} KiB")
        try:
            data = json.loads(raw.decode("utf-8-sig"))  # an editor's byte-order mark is no harm
        except UnicodeDecodeError:
            return Progress(), self._set_aside("not UTF-8 text")
        except RecursionError:
            return Progress(), self._set_aside("nested too deeply")
        except ValueError as exc:  # json.JSONDecodeError is a ValueError too
            return Progress(), self._set_aside(_first_line(exc))
        version = data.get("version", FORMAT_VERSION) if isinstance(data, dict) else FORMAT_VERSION
        if not _is_int(version) or not 1 <= version <= MAX_FORMAT_VERSION:
            return Progress(), self._set_aside("its version is not a format number")
        if version > FORMAT_VERSION:
            return Progress(), self._keep_newer(version)
        try:
            progress = Progress.from_json(data)
        except ValueError as exc:
            return Progress(), self._set_aside(_first_line(exc))
        if not info.st_mode & 0o222 or not os.access(self.path, os.W_OK):
            self.keep_file = True  # made read-only by its owner: read, never replaced
            return progress, (f"Saved progress in {self.path} is read-only: it was read, and this session's "
                              "progress is not saved over it.")
        return progress, None

    def first_launch(self) -> bool:
        """No progress saved, not even one set aside as unreadable (--reset-progress starts over,
        orientation included). A folder that cannot be searched is someone's earlier run: no."""
        try:
            return not self.path.exists() and not any(self.directory.glob(FILE_NAME + ".*"))
        except OSError:
            return False

    def save(self, progress: Progress) -> str | None:
        """Write atomically. Returns a one-line notice on the first failure, else None."""
        if self.keep_file:
            return None  # the load notice said so
        try:
            write_atomically(self.path, json.dumps(progress.to_json(), indent=1))
        except OSError as exc:
            if self.save_failed:
                return None
            self.save_failed = True
            return f"Progress cannot be saved to {self.path} ({_reason(exc)}); it will last this session only."
        self.save_failed = False
        return None

    def reset(self) -> None:
        """Forget all progress (`--reset-progress`)."""
        try:
            self.path.unlink(missing_ok=True)
        except OSError:
            pass

    def _set_aside(self, reason: str) -> str:
        aside, error = self._move_aside("unreadable")
        if error:
            return (f"Saved progress in {self.path} is unreadable ({reason}) and could not be moved ({error}); "
                    "starting at step 1 without saving over it.")
        return f"Saved progress was unreadable ({reason}); moved it to {aside.name} and started at step 1."

    def _keep_newer(self, version: int) -> str:
        aside, error = self._move_aside(f"v{version}")
        if error:
            return (f"Saved progress in {self.path} is from a newer batchtui (format {version}) and could not "
                    f"be moved ({error}); starting at step 1 without saving over it.")
        return (f"Saved progress is from a newer batchtui (format {version}); kept it untouched as "
                f"{aside.name} and started at step 1.")

    def _move_aside(self, label: str) -> tuple[Path, str | None]:
        """Rename the file to `progress.json.LABEL` (or `-2`, `-3`... if taken); (path, error)."""
        aside = self.path.with_name(f"{FILE_NAME}.{label}")
        n = 1
        try:
            while aside.exists():
                n += 1
                aside = self.path.with_name(f"{FILE_NAME}.{label}-{n}")
            os.replace(self.path, aside)
        except OSError as exc:
            self.keep_file = True
            return aside, _reason(exc)
        _sync_directory(self.directory)
        return aside, None


def _first_line(exc: BaseException) -> str:
    text = str(exc).split("\n")[0]
    return text if len(text) <= 120 else text[:117] + "..."


def _reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or type(exc).__name__
