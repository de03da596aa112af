"""`t`: the twenty steps by section; Enter jumps to the highlighted one."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from .modal import OverlayScreen


class ContentsScreen(OverlayScreen[int | None]):
    """Dismisses with the chosen step number, or None (t, q, Escape)."""

    CSS_PATH = Path(__file__).with_suffix(".tcss")
    # The footer under it offers help: ? and F1 open it over the contents.
    BINDINGS = [Binding("t,q,escape", "close", "close"), Binding("question_mark,f1", "app.help", "help", show=False)]

    def __init__(self, steps: list, current: int, completed: set[int]) -> None:
        super().__init__()
        self.steps = steps
        self.current = current
        self.completed = completed

    def compose(self) -> ComposeResult:
        yield Static("Steps: up/down to move, Enter to open, t or q to close", id="contents-title")
        options: list[Option | None] = []
        section = None
        for step in self.steps:
            if step.section != section:
                section = step.section
                options.append(Option(section, disabled=True, id=f"section-{step.number}"))
            mark = "done" if step.number in self.completed else "    "
            here = ">" if step.number == self.current else " "
            options.append(Option(f"{here} {step.number:>2}. {step.title:<44} {mark} {step.minutes} min",
                                  id=f"step-{step.number}"))
        yield OptionList(*options, id="contents-list")

    def on_mount(self) -> None:
        found = self.query(OptionList)
        if not found:  # the app is quitting: the screen was mounted without being composed
            return
        listing = found.first()
        listing.highlighted = listing.get_option_index(f"step-{self.current}")
        listing.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(int(event.option.id.removeprefix("step-")))
