"""The twenty lessons as data, loaded and checked.

Each step is one file, `steps/lessons/NN-slug.md`: TOML front matter between two `+++` lines,
then the lesson text in Markdown. A line holding only `<!-- reveal -->` splits the text: what
follows it (`Step.reveal_md`) answers the step's prediction or drill, so the app shows it only
once the learner has answered. The front matter holds

    number, title, section, minutes     the step's place and reading time
    views = [...]                       a subset of VIEWS: what the live panel shows
    hints = [...]                       short nudges shown one at a time
    [scenario]                          a `sim.scenario.Scenario` dict (num_prompts 0 = endless)
    [[dials]]                           name = a dial's dotted path (`sim.dials`), min/max/step for
                                        numbers or choices for the rest; label and unit only where
                                        the lesson words them otherwise than the dial table
    [activity]                          kind = one of ACTIVITY_KINDS, plus that kind's parameters
    [compare]       (optional)          label + scenario: overrides merged onto [scenario] to run
                                        side by side on the same arrivals (same seed)
    [sweep]         (optional)          what the "curve" view draws: batch_sizes + context (a
                                        cost-model sweep of decode batches) and/or rates (req/s)
    paused = true   (optional)          the run opens paused (one iteration at a time with `.`)

The text, the hints and an activity's wording state figures as `{{name}}` templates, filled from
the simulator when the step is built, or as numbers pinned by a test (`steps.figures`).

`load_steps()` validates all twenty and raises `StepError` naming the file and the problem.
`open_lessons()` is the app's lazy view of the same files: it reads every file's front matter
(number, title, section, minutes: enough for a header and a table of contents) and builds a full
`Step` only when one is asked for, so the app starts without validating nineteen steps it does
not show yet. This package imports `sim` at most: never textual or rich.

`steps.model` holds the dataclasses a step is made of, `steps.build` reads and checks one file;
both are re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .build import REVEAL_MARKER, draft, fill_figures, load_step, read_front_matter, read_summary
from .model import (ACTIVITY_KINDS, MAX_WORDS, NUM_STEPS, VIEWS, ActivitySpec, Comparison, Dial, Step, StepError,
                    StepSummary, SweepSpec, get_path, set_path)

__all__ = [
    "MAX_WORDS", "NUM_STEPS", "REVEAL_MARKER",
    "ACTIVITY_KINDS", "ActivitySpec", "Comparison", "Dial", "Lessons", "Step", "StepError",
    "StepSummary", "SweepSpec", "VIEWS", "get_path", "lesson_files", "load_step", "load_steps",
    "open_lessons", "read_lesson", "set_path",
]


# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------


def lessons_dir() -> Path:
    # Beside this file (importlib.resources would cost the first frame a hundredth of a second).
    return Path(__file__).with_name("lessons")


def lesson_files(directory: str | Path | None = None) -> list[Path]:
    """The lesson files, in step order."""
    return _lesson_files(Path(directory) if directory is not None else lessons_dir())


def _lesson_files(folder: Path) -> list[Path]:
    files = sorted(p for p in folder.glob("*.md"))
    if not files:
        raise StepError(str(folder), "no lesson files (NN-slug.md) found")
    return files


def _check_numbers(folder: Path, numbers: list[int]) -> None:
    expected = list(range(1, NUM_STEPS + 1))
    if numbers != expected:
        missing = sorted(set(expected) - set(numbers))
        extra = sorted(set(numbers) - set(expected))
        dupes = sorted({n for n in numbers if numbers.count(n) > 1})
        parts = []
        if missing:
            parts.append("missing step " + ", ".join(map(str, missing)))
        if extra:
            parts.append("unexpected step " + ", ".join(map(str, extra)))
        if dupes:
            parts.append("step numbered twice: " + ", ".join(map(str, dupes)))
        raise StepError(str(folder), "; ".join(parts) or "steps out of order")


def load_steps(directory: str | Path | None = None) -> list[Step]:
    """All twenty steps in order, each validated. Raises StepError naming the bad file. Every file
    is validated, and the steps' numbering checked, before the simulator fills any figure (a
    second or more): a broken or missing lesson is said at once."""
    folder = Path(directory) if directory is not None else lessons_dir()
    steps = [load_step(p, fill=False) for p in _lesson_files(folder)]
    _check_numbers(folder, [s.number for s in steps])
    return [fill_figures(s) for s in steps]


class Lessons(Sequence):
    """The twenty steps, built one at a time on first use (`lessons[i]` is a full, validated
    `Step`); `summaries` are ready at once. Indexing may raise StepError for a broken file."""

    def __init__(self, summaries: list[StepSummary]) -> None:
        self.summaries: tuple[StepSummary, ...] = tuple(summaries)
        self._built: dict[int, Step] = {}
        """Steps with their figures filled, each computed once per session."""
        self._unfilled: dict[int, Step] = {}
        """Steps validated, their templates not filled yet."""

    def __len__(self) -> int:
        return len(self.summaries)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        index = range(len(self))[index]  # negative indices, IndexError
        if index not in self._built:
            self._built[index] = fill_figures(self._validated(index))
        return self._built[index]

    def ready(self, index: int) -> bool:
        """Whether step `index` has its figures filled (indexing it costs no simulator run)."""
        return range(len(self))[index] in self._built

    def draft(self, index: int) -> Step:
        """Step `index` validated but without running the simulator: its figures read
        `figures.PENDING` (`figures_pending`), unless they are filled already. For a first frame
        that does not wait for numpy and the engine; `self[index]` fills them."""
        index = range(len(self))[index]
        if index in self._built:
            return self._built[index]
        return draft(self._validated(index))

    def _validated(self, index: int) -> Step:
        if index not in self._unfilled:
            summary = self.summaries[index]
            step = load_step(summary.path, fill=False)
            if step.number != summary.number:
                raise StepError(summary.path.name, "the step number changed while the app ran")
            self._unfilled[index] = step
        return self._unfilled[index]

    def __setitem__(self, index: int, step: Step) -> None:
        """Put a step in place (the playground opened on a saved scenario)."""
        index = range(len(self))[index]
        summary = self.summaries[index]
        if step.number != summary.number:
            raise ValueError(f"step {step.number} cannot replace step {summary.number}")
        self._built[index] = step


def open_lessons(directory: str | Path | None = None) -> Lessons:
    """The lessons for the app: every file's number, title, section and minutes checked now,
    each step built in full when first shown. `load_steps()` (and a test) checks all of them."""
    folder = Path(directory) if directory is not None else lessons_dir()
    summaries = [read_summary(p) for p in _lesson_files(folder)]
    _check_numbers(folder, [s.number for s in summaries])
    return Lessons(summaries)


def read_lesson(path: str | Path) -> tuple[dict, str]:
    """A lesson file's front matter (a dict) and its text, raw: templates not filled."""
    data, body, _ = read_front_matter(Path(path))
    return data, body
