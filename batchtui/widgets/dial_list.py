"""The step's dials: one line each, in a list of fixed height, and a line under them that says
what the focused dial takes (its range, how to type a value) or how to reach the dials.

Its height never changes while a step is open (typing a value takes the place of that line), so
the views under it never move.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widget import Widget

from ..formatting import first_fitting
from ..glyphs import UNICODE
from .dial import DialControl, DialEntry


class DialHelp(Widget):
    """The line under the dials."""

    DEFAULT_CSS = """
    DialHelp { height: 1; color: $foreground-muted; text-wrap: nowrap; text-overflow: clip; }
    DialHelp.-focused { color: $foreground; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.text = Text()
        self.shorter: tuple[Text, ...] = ()
        """Shorter forms of `text`, longest first, for a line too narrow for it."""

    def show(self, text: Text, focused: bool, shorter: tuple[Text, ...] = ()) -> None:
        self.text, self.shorter = text, shorter
        self.set_class(focused, "-focused")
        self.refresh()

    @property
    def forms(self) -> tuple[Text, ...]:
        """`text` and its shorter forms, longest first."""
        return (self.text, *self.shorter)

    def render(self) -> Text:
        return first_fitting(self.forms, self.content_size.width)


class DialList(Vertical):
    """`set_dials(controls)` for a new step; `visible_rows` caps the list's height (the rest
    scroll into sight as focus moves). Up and down stop at the ends of the list."""

    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")

    class HelpChanged(Message):
        """The help line's text changed: a screen too short for the line shows it elsewhere."""

        def __init__(self, text: Text, focused: bool) -> None:
            super().__init__()
            self.text = text
            self.focused = focused
            """A dial has focus (the text is the dial's range), rather than the resting hint."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rest_hint = "tab: the dials (← → turn them)"
        """What the help line says while no dial has focus."""
        self.entry: DialEntry | None = None

    def compose(self):
        yield VerticalScroll(id="dial-rows", can_focus=False)
        yield DialHelp(id="dial-help")

    @property
    def dials(self) -> list[DialControl]:
        return list(self.query_one("#dial-rows").query(DialControl))

    async def set_dials(self, dials: list[tuple[object, object]], visible_rows: int, columns: int = 1) -> None:
        """Show these dials, each (spec, value): a `steps.Dial` and the value in force."""
        rows = self.query_one("#dial-rows", VerticalScroll)
        await self._close_entry()
        controls = self.dials
        for control, (spec, value) in zip(controls, dials):
            control.set_spec(spec, value)
        if len(controls) > len(dials):
            await rows.remove_children(controls[len(dials):])
        elif len(dials) > len(controls):
            await rows.mount_all([DialControl(spec, value) for spec, value in dials[len(controls):]])
        shown_rows = min(visible_rows, -(-len(dials) // columns)) if dials else 0
        rows.styles.height = shown_rows
        rows.set_class(columns > 1, "-grid")
        rows.scroll_home(animate=False)
        self.display = bool(dials)
        self.update_help()

    def set_rest_hint(self, hint: str) -> None:
        self.rest_hint = hint
        self.update_help()

    # -- focus moves
    @on(DialControl.Neighbour)
    def _neighbour(self, message: DialControl.Neighbour) -> None:
        message.stop()
        dials = self.dials
        if message.dial in dials:
            i = dials.index(message.dial) + message.step
            if 0 <= i < len(dials):
                dials[i].focus()
                dials[i].scroll_visible(animate=False)

    def update_help(self) -> None:
        if not self.is_mounted:
            return
        g = self.app.settings.glyphs if hasattr(self.app, "settings") else UNICODE
        focused = self.screen.focused if self.screen is not None else None
        dials = self.dials
        shorter: tuple[Text, ...] = ()
        if isinstance(focused, DialControl) and focused in dials:
            place = f"  {dials.index(focused) + 1}/{len(dials)}" if len(dials) > 1 else ""
            turn = f" {g.arrow_left}{g.arrow_right} {focused.range_words()}"
            typing = f"{g.sep}enter types" if focused.spec.is_numeric else ""
            # Narrower lines (the status line of a short terminal) drop "enter types", then
            # the dial's place in the list, never the range.
            text = Text(turn + typing + place, no_wrap=True, overflow="crop")
            shorter = tuple(Text(t, no_wrap=True, overflow="crop")
                            for t in dict.fromkeys((turn + place, turn)) if t != text.plain)
            focused = True
        else:
            text, focused = Text(" " + self.app_words(self.rest_hint)), False
        help_line = self.query_one(DialHelp)
        if (text.plain, focused) != (help_line.text.plain, help_line.has_class("-focused")):
            help_line.show(text, focused, shorter)
            self.post_message(self.HelpChanged(text, focused))

    def app_words(self, text: str) -> str:
        words = getattr(self.app, "words", None)
        return words(text) if words is not None else text

    # -- typing a value
    @on(DialControl.TypeValue)
    async def _type_value(self, message: DialControl.TypeValue) -> None:
        message.stop()
        await self._close_entry()
        self.entry = entry = DialEntry(message.dial)
        self.add_class("-typing")
        await self.mount(entry)
        if self.entry is entry:  # not closed by a key that arrived while it was mounted
            entry.focus()

    @on(DialEntry.Done)
    async def _entry_done(self, message: DialEntry.Done) -> None:
        message.stop()
        dial = message.entry.dial
        await self._close_entry()
        if message.refocus:
            dial.focus()
        if message.text is not None:
            # From the dial itself: Textual does not bubble a message back up to the widget
            # that sent it, and one sent from here would stop at this list.
            dial.call_later(dial.submit_text, message.text)

    async def _close_entry(self) -> None:
        entry, self.entry = self.entry, None
        if entry is not None:
            await entry.remove()
        if self.is_mounted:
            self.remove_class("-typing")
            self.update_help()
