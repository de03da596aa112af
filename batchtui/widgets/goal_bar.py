"""The line above the keys: what this step asks of the learner, and whether it is still open."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.widget import Widget

STATES = ("open", "answered", "done")


class GoalBar(Widget):
    """`show(ask, state, note)`: the ask on the left ("Predict: ..."), the state on the right
    with a mark that reads without colour (`[ ]` open, `[~]` answered, `[x]` done)."""

    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")
    COMPONENT_CLASSES = {"goal-bar--label", "goal-bar--open", "goal-bar--answered", "goal-bar--done"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.ask = ""
        self.state = "open"
        self.note = ""
        """A few words after the state ("2 of 3", "right", "wrong")."""
        self.marks = {"open": "○", "answered": "◐", "done": "✓"}
        self.sep = " · "
        """Between the ask and its note."""

    def set_marks(self, ascii_only: bool, sep: str) -> None:
        """The marks and the separator this terminal shows (`--ascii`: `[x]`, ` | `)."""
        self.sep = sep
        if ascii_only:
            self.marks = {"open": "[ ]", "answered": "[~]", "done": "[x]"}

    def show(self, ask: str, state: str = "open", note: str = "") -> None:
        if (ask, state, note) != (self.ask, self.state, self.note):
            self.ask, self.state, self.note = ask, state, note
            self.set_class(state == "done", "-done")
            self.refresh()

    def render(self) -> Text:
        width = self.content_size.width
        text = Text(no_wrap=True, overflow="ellipsis")
        if not self.ask:
            return text
        label = "Goal "
        joint = " " if self.ask.endswith(":") else self.sep  # a checklist follows its colon
        ask = f"{self.ask}{joint}{self.note}" if self.note else self.ask
        # The ask in full where it fits: the state's word goes first, then the ask is cut.
        for state in (f"{self.marks[self.state]} {self.state}", self.marks[self.state]):
            if len(label) + len(ask) + 2 + len(state) <= width:
                break
        room = width - len(label) - len(state) - 2
        if len(ask) > room:
            ask = ask[: max(0, room - 3)] + "..."
        text.append(label, self.get_component_rich_style("goal-bar--label", partial=True))
        text.append(ask)
        text.append(" " * max(2, width - len(label) - len(ask) - len(state)))
        text.append(state, self.get_component_rich_style(f"goal-bar--{self.state}", partial=True))
        return text
