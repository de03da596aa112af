"""A break-it challenge: a goal on the live metrics, reached by pushing a dial."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static

from .base import ActivityView, Goal


class BreakItView(ActivityView):
    """Shows the goal; every frame asks the challenge whether it has been reached, and once it
    has, explains what happened with the numbers seen."""

    def __init__(self, challenge, done_before: bool = False) -> None:
        super().__init__(id="break-it")
        self.challenge = challenge
        self.done_before = done_before
        self.verdict = None

    def compose(self) -> ComposeResult:
        yield Static("Break it", classes="activity-title", markup=False)
        yield self.markdown(self.words(self.challenge.goal_md), id="break-it-goal")
        note = "You broke it before; do it again?" if self.done_before else "Watching the live metrics..."
        yield Static(self.words(note), id="break-it-status", classes="activity-feedback -info", markup=False)

    def update_snapshot(self, snapshot, compare=None) -> None:
        if self.verdict is not None:
            return
        verdict = self.challenge.check(snapshot)
        if verdict is None:
            return
        self.verdict = verdict
        status = self.query_one("#break-it-status", Static)
        status.update(self.words(verdict.title))
        status.set_class(False, "-info")
        status.set_class(True, "-correct")
        self.run_worker(self._show_verdict(verdict.message_md), group="verdict")
        self.post_message(self.Finished(verdict.title))

    async def _show_verdict(self, text: str) -> None:
        await self.show_markdown("break-it-verdict", text)
        # The learner is watching the dials and views: bring what happened into the lesson pane.
        self.bring_into_view(self.query_one("#break-it-status"), top=True)

    def goal(self) -> Goal:
        ask = "Break it: push a dial until the step sees it break (goal above)"
        if self.verdict is not None:
            return Goal(ask, "done", "broken")
        return Goal(ask, "open", "done before" if self.done_before else "")
