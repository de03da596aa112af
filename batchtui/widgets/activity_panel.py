"""The step's activity under the lesson text (placeholder until steps.activities lands)."""

from __future__ import annotations

from pathlib import Path

from textual.containers import Vertical


class ActivityPanel(Vertical):
    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")

    takes_choices = False
    has_input = False

    async def show_activity(self, step, saved_answer: str | None) -> None:
        await self.remove_children()

    def update_snapshot(self, snapshot) -> None:
        pass

    def choose(self, choice: int) -> None:
        pass
