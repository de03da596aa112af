"""The step's activity under the lesson text: builds the right view for the step's kind."""

from __future__ import annotations

from pathlib import Path

from textual.containers import Vertical

from steps import activities

from .activities.base import ActivityView
from .activities.break_it import BreakItView
from .activities.drill import DrillView
from .activities.predict import PredictView
from .activities.read import ReadView
from .activities.text_only import TextView


class ActivityPanel(Vertical):
    """Holds at most one ActivityView; the screen talks to it, it talks to the view."""

    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.view: ActivityView | None = None

    @property
    def takes_choices(self) -> bool:
        return self.view is not None and self.view.takes_choices

    @property
    def choice_count(self) -> int:
        """How many answers the number keys pick from right now (0: none)."""
        return self.view.choice_count if self.takes_choices else 0

    @property
    def has_input(self) -> bool:
        return self.view is not None and self.view.has_input

    @property
    def hints(self) -> tuple[str, ...]:
        return self.view.hints if self.view is not None else ()

    async def show_activity(self, step, saved_answer: str | None, done_before: bool, seed: int) -> None:
        await self.remove_children()
        self.view = self._build(step, saved_answer, done_before, seed)
        if self.view is not None:
            await self.mount(self.view)
        self.display = self.view is not None

    def _build(self, step, saved_answer, done_before, seed) -> ActivityView | None:
        kind = step.activity.kind
        if kind == "cheat_sheet":
            return TextView(activities.cheat_sheet_md(step.scenario), id="cheat-sheet")
        if kind == "playground":
            return TextView(PLAYGROUND_MD, id="playground")
        activity = activities.build(step)
        if activity is None:
            return None
        if kind == "drill":
            return DrillView(activity, seed, saved_answer if not done_before else None)
        if kind == "break_it":
            return BreakItView(activity, done_before)
        if kind == "predict":
            return PredictView(activity)
        if kind == "read":
            return ReadView(activity, seed)
        return None

    async def scenario_changed(self, scenario) -> None:
        """A dial moved: the cheat sheet works its formulas again for the new profile."""
        if isinstance(self.view, TextView) and self.view.id == "cheat-sheet":
            await self.view.show(activities.cheat_sheet_md(scenario))

    def update_snapshot(self, snapshot, compare=None) -> None:
        if self.view is not None:
            self.view.update_snapshot(snapshot, compare)

    def choose(self, number: int) -> None:
        if self.view is not None:
            self.view.choose(number)

    async def give_up(self) -> None:
        if self.view is not None:
            await self.view.give_up()

    async def new_question(self) -> None:
        if self.view is not None:
            await self.view.new_question()


PLAYGROUND_MD = """\
**Files**: `w` writes this scenario to a TOML file in your state folder; `o` opens it again
(`batchtui --scenario FILE` opens any saved one here).
"""
