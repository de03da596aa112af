"""A learner's progress: the step they are on, the activities they finished, their answers.

Kept as one small JSON file under `$XDG_STATE_HOME/batchtui/` (or `~/.local/state/batchtui/`).
Every write goes to a temporary file first and replaces the old one, so a crash mid-write never
leaves half a file. A file that cannot be read is renamed aside and reported in one line: losing
a bookmark must never stop the tutorial from opening.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

FILE_NAME = "progress.json"
FORMAT_VERSION = 1


def state_dir() -> Path:
    """Where batchtui keeps state, following the XDG base-directory rules."""
    xdg = os.environ.get("XDG_STATE_HOME", "")
    # The spec says a relative path is invalid and must be ignored.
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".local" / "state"
    return base / "batchtui"


@dataclass
class Progress:
    """What survives a restart."""

    current_step: int = 1
    completed: set[int] = field(default_factory=set)
    """Numbers of the steps whose activity the learner finished."""
    answers: dict[int, str] = field(default_factory=dict)
    """The last answer typed or chosen on each step, as the learner gave it."""

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
        if isinstance(step, bool) or not isinstance(step, int) or step < 1:
            raise ValueError("current_step is not a step number")
        if not isinstance(completed, list) or not all(
            isinstance(n, int) and not isinstance(n, bool) for n in completed
        ):
            raise ValueError("completed is not a list of step numbers")
        if not isinstance(answers, dict) or not all(isinstance(v, str) for v in answers.values()):
            raise ValueError("answers is not a table of text")
        try:
            answers_by_step = {int(k): v for k, v in answers.items()}
        except ValueError:
            raise ValueError("answers are not keyed by step number") from None
        return cls(current_step=step, completed=set(completed), answers=answers_by_step)


class ProgressStore:
    """Loads and saves `Progress` in one directory. Never raises for a bad or missing file."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory if directory is not None else state_dir()
        self.path = self.directory / FILE_NAME
        self.save_failed = False
        """Set once a save failed, so the app reports it once rather than on every step."""

    def load(self) -> tuple[Progress, str | None]:
        """The saved progress (or a fresh one) and a one-line notice if the file was set aside."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return Progress(), None
        except (OSError, UnicodeDecodeError) as exc:
            return Progress(), self._set_aside(_reason(exc))
        try:
            return Progress.from_json(json.loads(text)), None
        except ValueError as exc:  # json.JSONDecodeError is a ValueError too
            return Progress(), self._set_aside(str(exc).split("\n")[0])

    def save(self, progress: Progress) -> str | None:
        """Write atomically. Returns a one-line notice on the first failure, else None."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = tempfile.mkstemp(prefix=".progress-", suffix=".tmp", dir=self.directory)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as tmp:
                    json.dump(progress.to_json(), tmp, indent=1)
                    tmp.flush()
                    os.fsync(tmp.fileno())
                os.replace(tmp_name, self.path)
            except BaseException:
                Path(tmp_name).unlink(missing_ok=True)
                raise
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
        aside = self.path.with_name(FILE_NAME + ".unreadable")
        n = 1
        while aside.exists():
            n += 1
            aside = self.path.with_name(f"{FILE_NAME}.unreadable-{n}")
        try:
            os.replace(self.path, aside)
        except OSError as exc:
            return f"Saved progress in {self.path} is unreadable ({reason}) and could not be moved ({_reason(exc)}); starting at step 1."
        return f"Saved progress was unreadable ({reason}); moved it to {aside.name} and started at step 1."


def _reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or type(exc).__name__
