"""The step's activity under the lesson text. Which view a kind gets is the app's business
(`batchtui/activity_kinds.py`); the panel holds the one it is given and passes keys and frames."""

from __future__ import annotations

from pathlib import Path

from textual.containers import Vertical

from .activities.base import ActivityView


class ActivityPanel(Vertical):
    """Holds at most one ActivityView; the screen talks to it, it talks to the view."""

    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.view: ActivityView | None = None
        self._mounted: ActivityView | None = None
        """The view on show once mounted with its parts: until then keys wait (`_when_mounted`)
        and frames skip it (the next one follows)."""
        self._showing = 0
        """Calls of `show` under way (a step change taking the old view down, mounting the new)."""

    @property
    def takes_choices(self) -> bool:
        return self.view is not None and self.view.takes_choices

    @property
    def choices_coming(self) -> bool:
        return self.view is not None and self.view.choices_coming

    @property
    def choice_count(self) -> int:
        """How many answers the number keys pick from right now (0: none)."""
        return self.view.choice_count if self.takes_choices else 0

    @property
    def has_input(self) -> bool:
        return self.view is not None and self.view.has_input

    @property
    def give_up_label(self) -> str:
        """What ctrl+d does now when no text box has focus ("" if it is not for the footer)."""
        return self.view.give_up_label if self.view is not None else ""

    @property
    def hints(self) -> tuple[str, ...]:
        return self.view.hints if self.view is not None else ()

    async def show(self, view: ActivityView | None) -> None:
        self._mounted = None
        self._showing += 1
        try:
            await self.remove_children()
            self.view = view
            if view is not None:
                await self.mount(view)
        finally:
            self._showing -= 1
        if self.view is view:
            self._mounted = view
            self.display = view is not None

    def _ready(self) -> bool:
        """The view on show is mounted with its parts."""
        view = self.view
        return view is not None and self._mounted is view and view.is_attached

    def _when_mounted(self, act) -> bool:
        """True if the view on show is mounted with its parts, so `act` may run now. While a step
        change takes the old view down and mounts the new one, `act` (a key in the same read as
        the change) waits and then runs on the new view: a key belongs to the step it came after."""
        if self._ready():
            return True
        if self._showing:
            self.call_after_refresh(act)
        return False

    async def scenario_changed(self, scenario) -> None:
        """A dial moved (the cheat sheet works its formulas again for the new profile)."""
        if self._when_mounted(lambda: self.scenario_changed(scenario)):
            await self.view.scenario_changed(scenario)

    def update_snapshot(self, snapshot, compare=None) -> None:
        if self._ready():
            self.view.update_snapshot(snapshot, compare)

    def choose(self, number: int) -> None:
        if self._when_mounted(lambda: self.choose(number)):
            self.view.choose(number)

    async def give_up(self) -> None:
        if self._when_mounted(self.give_up):
            await self.view.give_up()

    async def refill(self, activity) -> bool:
        """The view on show takes `activity` (the step's, with its figures) in place: True if it
        did (`ActivityView.refill`)."""
        return self._ready() and await self.view.refill(activity)

    async def new_question(self) -> None:
        if self._when_mounted(self.new_question):
            await self.view.new_question()
