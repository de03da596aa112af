"""The step's dials: one line each, in a list of fixed height, and a line under them that says
what the focused dial takes (its range, how to type a value) or how to reach the dials.

Its height never changes while a step is open (typing a value takes the place of that line), so
the views under it never move. The list handles its own controls: a dial the learner moves is
checked by the lesson's range and set on the live run (read from its holder through the getter
the pane gives it), then the list posts `Moved` (or `Refused`, with the reason); dials set for
the learner (`set`) post nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.text import Text
from textual import on
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widget import Widget

from sim.dials import BY_PATH as DIAL_SPECS
from sim.errors import SimError

from ..formatting import first_fitting, in_app_words, number
from ..glyphs import UNICODE
from .dial import DialControl, DialEntry

DIAL_ROWS = 6
"""Dial lines in sight at most (in one column); a longer list scrolls as focus moves."""
DIAL_ROWS_ZOOMED = 4
"""In two columns, zoomed: the views need the height more."""


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

    class Moved(Message):
        """The learner moved dials, and the live run took the values: `moved`, path -> value.
        `passed`: why the choices the move stepped past were refused ("" for none)."""

        def __init__(self, moved: dict, passed: str = "") -> None:
            super().__init__()
            self.moved = moved
            self.passed = passed

    class Refused(Message):
        """A value the learner gave was refused (by the lesson's range or by the run): `words`."""

        def __init__(self, words: str) -> None:
            super().__init__()
            self.words = words

    def __init__(self, run: Callable[[], object] = lambda: None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rest_hint = "tab: the dials (← → turn them)"
        """What the help line says while no dial has focus."""
        self.entry: DialEntry | None = None
        self.live_run = run
        """The live run (`LiveSimulation`) the dials set, as its holder has it now, or None."""

    def compose(self):
        yield VerticalScroll(id="dial-rows", can_focus=False)
        yield DialHelp(id="dial-help")

    @property
    def dials(self) -> list[DialControl]:
        return list(self.query_one("#dial-rows").query(DialControl))

    @staticmethod
    def shape(count: int, wide: bool) -> tuple[int, int]:
        """Columns and lines in sight for `count` dials: two columns on a `wide` pane."""
        if wide and count > DIAL_ROWS_ZOOMED:
            return 2, DIAL_ROWS_ZOOMED
        return 1, DIAL_ROWS

    async def show_step(self, step, wide: bool) -> None:
        """The step's dials at the values its scenario starts with."""
        dials = [(spec, spec.value(step.scenario)) for spec in step.dials]
        columns, rows = self.shape(len(dials), wide)
        await self.set_dials(dials, rows, columns)

    async def mount_again(self, wide: bool) -> None:
        """The list in the shape `wide` wants, keeping the dials' values and focus."""
        dials = self.dials
        columns, rows = self.shape(len(dials), wide)
        await self.set_dials([(d.spec, d.value) for d in dials], rows, columns)

    def wants_mount_again(self, wide: bool) -> bool:
        """After a resize: the list wants the other shape."""
        columns, _ = self.shape(len(self.dials), wide)
        return self.query_one("#dial-rows").has_class("-grid") != (columns > 1)

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

    def answer_first(self, has_input: bool) -> None:
        """The resting hint says the answer box comes first in the tab order when there is one."""
        self.set_rest_hint("tab: answer box, then dials" if has_input else "tab: the dials (← → turn them)")

    @property
    def focused_help(self) -> tuple[Text, ...] | None:
        """The help line's forms while a dial has focus (a short screen shows them elsewhere)."""
        help_line = self.query_one(DialHelp)
        return help_line.forms if help_line.has_class("-focused") else None

    # -- values
    def show_values(self, scenario) -> None:
        """Every dial at its value in `scenario`."""
        for dial in self.dials:
            dial.set_value(dial.spec.value(scenario))
        self.update_help()

    @on(DialControl.Changed)
    def _changed(self, message: DialControl.Changed) -> None:
        """The learner moved a dial: checked by the lesson's range, then by the run. A value
        refused gives way to the next the move offers (`then`: a choice dial's next choices in
        the move's direction), and the one taken is said with why those before it were not."""
        message.stop()
        dial = message.dial
        run = self.live_run()
        refused: list[tuple[object, str]] = []
        for asked in (message.value, *message.then):
            try:
                value = dial.spec.check(asked)
                if run is None:
                    return
                run.set_dial(dial.spec.name, value)
            except (ValueError, SimError) as exc:
                refused.append((asked, in_app_words(exc)))
                continue
            dial.set_value(value)
            self.update_help()  # a choice dial's place ("2 of 5") moved with it
            passed = " ".join(f"Passed {number(asked)}: {words}" for asked, words in refused)
            self.post_message(self.Moved({dial.spec.name: value}, passed))
            return
        self.post_message(self.Refused(f"Refused: {refused[0][1]}"))

    def set(self, settings: dict) -> tuple[dict, SimError | None]:
        """Set dials (`sim.dials` paths) on the live run in order, and the dials to the values
        set; stops at the first one refused. Returns those set and the error."""
        applied, error, run = {}, None, self.live_run()
        for path, value in settings.items():
            try:
                run.set_dial(path, value)
            except SimError as exc:
                error = exc
                break
            applied[path] = value
        for dial in self.dials:
            if dial.spec.name in applied:
                dial.set_value(applied[dial.spec.name])
        self.update_help()
        return applied, error

    def asked(self, asked: dict, from_start: bool, start, words: str = "") -> tuple[dict, str]:
        """The settings to set for the run an activity asks for, and what to say of them.
        `from_start`: the other dials go back to their value in `start` (the step's scenario)
        first, so the settings asked for break it from there. `words`: the activity's own."""
        settings, back = dict(asked), []
        for control in self.dials if from_start else ():
            value = control.spec.value(start)
            if control.spec.name not in settings and control.value != value:
                back.append(control.spec.label)
                settings = {control.spec.name: value, **settings}
        said = [words] if words else [f"Running with {', '.join(self.words(asked))}."] if asked else []
        if back:
            said.append(f"{', '.join(back)} back to the step's start.")
        return settings, " ".join(said)

    def words(self, settings: dict) -> list[str]:
        """Settings in the dials' own words where the list has that dial (a drill may also set
        the GPU and model of its question)."""
        controls = {d.spec.name: d.spec for d in self.dials}
        said = []
        for path, value in settings.items():
            # Not on the list: the simulator's own name for the dial ("output length 384 tokens",
            # not the path's last word, "mean 384").
            spec = controls.get(path) or DIAL_SPECS.get(path)
            if spec is None:
                said.append(f"{path.rsplit('.', 1)[-1].replace('_', ' ')} {number(value)}")
            else:
                said.append(f"{spec.label} {number(value)}" + (f" {spec.unit}" if spec.unit else ""))
        return said

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
