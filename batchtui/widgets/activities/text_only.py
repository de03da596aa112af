"""Activities that are only text to read: the cheat sheet, the playground's file keys."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Markdown

from .base import ActivityView


class TextView(ActivityView):
    """Markdown under the lesson, replaced with `show(text_md)`."""

    def __init__(self, text_md: str, id: str) -> None:
        super().__init__(id=id)
        self.text_md = text_md

    def compose(self) -> ComposeResult:
        yield self.markdown(self.text_md)

    async def show(self, text_md: str) -> None:
        self.text_md = text_md
        await self.query_one(Markdown).update(self.words(text_md))
