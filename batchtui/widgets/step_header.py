"""The top line: section, step n of 20, the step's title, and about how long is left."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.widget import Widget


class StepHeader(Widget):
    """Where the learner is. Minutes left is the reading estimate of the steps still ahead, not a
    clock: a clock would change the screen every minute for nothing."""

    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")
    COMPONENT_CLASSES = {"step-header--section", "step-header--number", "step-header--title",
                         "step-header--left"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.section = ""
        self.number = 0
        self.total = 0
        self.title = ""
        self.minutes_left = 0
        self.separator = " · "
        """Set to an ASCII one by the screen under `--ascii`."""
        self.gpu = ""
        """The learner's GPU (`--gpu`), named beside the time left."""

    def show_step(self, section: str, number: int, total: int, title: str, minutes_left: int) -> None:
        self.section, self.number, self.total = section, number, total
        self.title, self.minutes_left = title, minutes_left
        self.refresh()

    def show_gpu(self, label: str) -> None:
        self.gpu = label
        self.refresh()

    def render(self) -> Text:
        width = self.content_size.width
        left = f"~{self.minutes_left} min left" if self.minutes_left else "last step"
        if self.gpu:
            left = f"{self.gpu}{self.separator}{left}"
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f"Step {self.number}/{self.total}", self.get_component_rich_style("step-header--number", partial=True))
        text.append(self.separator)
        text.append(self.section, self.get_component_rich_style("step-header--section", partial=True))
        text.append(self.separator)
        room = width - len(text.plain) - len(left) - 1
        title = self.title
        if len(title) > room:
            title = title[: max(0, room - 3)] + "..." if room > 3 else ""
        text.append(title, self.get_component_rich_style("step-header--title", partial=True))
        text.append(" " * max(1, width - len(text.plain) - len(left)))
        text.append(left, self.get_component_rich_style("step-header--left", partial=True))
        return text
