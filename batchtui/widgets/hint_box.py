"""Hints, revealed one at a time with `h`."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.widget import Widget


class HintBox(Widget):
    """The hints shown so far for this step. Hidden until the first one."""

    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")
    COMPONENT_CLASSES = {"hint-box--label"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.hints: tuple[str, ...] = ()
        self.shown = 0

    def set_hints(self, hints: tuple[str, ...], keep_shown: bool = False) -> None:
        """New hints, none shown; or, `keep_shown`, as many shown as before (the same hints with
        their figures filled in)."""
        self.hints = tuple(hints)
        self.shown = min(self.shown, len(self.hints)) if keep_shown else 0
        self.set_class(self.shown > 0, "-shown")
        self.refresh(layout=True)

    def reveal_next(self) -> bool:
        """Show one more hint; False if there is none left."""
        if self.shown >= len(self.hints):
            return False
        self.shown += 1
        self.set_class(True, "-shown")
        self.refresh(layout=True)
        return True

    def render(self) -> Text:
        label = self.get_component_rich_style("hint-box--label", partial=True)
        text = Text()
        for i, hint in enumerate(self.hints[: self.shown]):
            if i:
                text.append("\n")
            text.append(f"Hint {i + 1}/{len(self.hints)}: ", label)
            text.append(hint)
        return text
