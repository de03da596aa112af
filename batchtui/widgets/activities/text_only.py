"""Activities that are only text to read: the cheat sheet, the playground's file keys."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.widgets import Markdown

from .base import ActivityView


class TextView(ActivityView):
    """Markdown under the lesson, written by `write(scenario)`: written again whenever a dial
    changes the scenario (the cheat sheet fills its formulas with the live profile)."""

    answered = True  # nothing to answer
    def __init__(self, write: Callable[[object], str], scenario, id: str) -> None:
        super().__init__(id=id)
        self.write = write
        self.text_md = write(scenario)

    def compose(self) -> ComposeResult:
        yield self.markdown(self.text_md)

    async def scenario_changed(self, scenario) -> None:
        text_md = self.write(scenario)
        if text_md != self.text_md:
            self.text_md = text_md
            await self.query_one(Markdown).update(self.words(text_md))
