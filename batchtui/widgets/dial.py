"""One dial: a setting the learner moves with the arrow keys, showing its range and unit."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widget import Widget

from sim import dials

from .answer_box import AnswerBox

from ..formatting import number
from ..glyphs import UNICODE

BIG_MOVE = 10
MAX_TRACK = 24
"""Cells of track at most: on a wide pane the value stays near its label."""


def track_cells(width: int, label: str, value: str) -> int:
    """Cells of track a dial line `width` wide has room for beside its label and value (and the
    focus mark and two spaces); 0 when fewer than five fit: the line shows no track."""
    cells = min(MAX_TRACK, width - 1 - len(label) - len(value) - 2)
    return cells if cells >= 5 else 0


def _unit_for(value: Any, unit: str) -> str:
    """"1 request", "2 requests": a plural unit word loses its s for exactly one."""
    if value == 1 and unit.isalpha() and unit.endswith("s") and len(unit) > 2:
        return unit[:-1]
    return unit


class DialControl(Widget, can_focus=True):
    """A numeric dial (min..max in steps) or a choice dial, drawn on one line: its label, a
    track with the knob where the value sits, the value. Left/right move it a notch, shift ten
    notches, home/end to the ends, Enter opens a box to type an exact value; up/down go to the
    dial above or below (never out of the dials), Escape back to the lesson."""

    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")
    COMPONENT_CLASSES = {"dial--label", "dial--value", "dial--range", "dial--track", "dial--knob",
                         "dial--focus"}
    BINDINGS = [
        Binding("left", "move(-1)", "less", show=False),
        Binding("right", "move(1)", "more", show=False),
        Binding("shift+left,pagedown", f"move(-{BIG_MOVE})", "much less", show=False),
        Binding("shift+right,pageup", f"move({BIG_MOVE})", "much more", show=False),
        Binding("home", "to_end(-1)", "minimum", show=False),
        Binding("end", "to_end(1)", "maximum", show=False),
        Binding("up", "neighbour(-1)", "dial above", show=False),
        Binding("down", "neighbour(1)", "dial below", show=False),
        Binding("enter", "type_value", "type", show=False),
        Binding("escape", "leave", "leave", show=False),
    ]

    class Changed(Message):
        """The learner asked for a new value. The screen applies it (and calls `set_value`),
        or refuses it and the dial keeps the value in force. `then`: the values to try in turn
        if it is refused (a choice dial's next choices in the move's direction, `beyond`)."""

        def __init__(self, dial: "DialControl", value: Any, then: tuple = ()) -> None:
            super().__init__()
            self.dial = dial
            self.value = value
            self.then = then

    class Neighbour(Message):
        """Up or down on a dial: the dial list moves focus (and stops at its ends)."""

        def __init__(self, dial: "DialControl", step: int) -> None:
            super().__init__()
            self.dial = dial
            self.step = step

    class TypeValue(Message):
        """Enter on a numeric dial: the dial list opens its entry box for it."""

        def __init__(self, dial: "DialControl") -> None:
            super().__init__()
            self.dial = dial

    class Leave(Message):
        """Escape on a dial: focus goes back to the lesson."""

    def __init__(self, spec, value: Any, *, id: str | None = None) -> None:
        """`spec` is a `steps.Dial` (name, label, unit, min, max, step, choices)."""
        super().__init__(id=id)
        self.spec = spec
        self.value = value
        """The value in force (what the simulation runs with)."""

    # -- values
    def moved(self, notches: int) -> Any:
        """The value `notches` steps away, kept inside the range."""
        spec = self.spec
        if spec.choices:
            choices = list(spec.choices)
            index = choices.index(self.value) if self.value in choices else 0
            return choices[max(0, min(len(choices) - 1, index + notches))]
        value = self.value if isinstance(self.value, (int, float)) and math.isfinite(self.value) else spec.max
        target = min(spec.max, max(spec.min, value + notches * spec.step))
        # Snap to the dial's grid so repeated moves do not drift (0.1 + 0.2 ...).
        snapped = spec.min + round((target - spec.min) / spec.step) * spec.step
        snapped = min(spec.max, max(spec.min, snapped))
        if all(float(x).is_integer() for x in (spec.min, spec.step)) and isinstance(self.value, int):
            return int(round(snapped))
        return round(snapped, 10)

    def beyond(self, notches: int) -> tuple:
        """Where the move goes on to, in turn, when the run refuses `moved(notches)` (a GPU the
        model does not fit): the choices past it in the move's direction, to the end of the list,
        so no refused choice walls off the ones behind it, either way; then those between it and
        the value in force, nearest it first, so a move that ran into the end of the list (End,
        Home) takes the accepted choice nearest that end. None for a number dial."""
        spec = self.spec
        if not spec.choices or notches == 0:
            return ()
        choices = list(spec.choices)
        target = choices.index(self.moved(notches))
        here = choices.index(self.value) if self.value in choices else 0
        if notches > 0:
            return (*choices[target + 1:], *reversed(choices[here + 1:target]))
        return (*reversed(choices[:target]), *choices[target + 1:here])

    def set_value(self, value: Any) -> None:
        self.value = value
        self.refresh()

    def set_spec(self, spec, value: Any) -> None:
        """Become another dial (a new step reuses the controls it can: mounting costs more)."""
        self.spec = spec
        self.set_value(value)

    def action_move(self, notches: int) -> None:
        target = self.moved(notches)
        if target != self.value:
            self.post_message(self.Changed(self, target, self.beyond(notches)))

    def action_to_end(self, direction: int) -> None:
        self.action_move(direction * 1_000_000)

    def action_neighbour(self, step: int) -> None:
        self.post_message(self.Neighbour(self, step))

    def action_type_value(self) -> None:
        if not self.spec.choices:  # a choice dial is moved with the arrows: nothing to type
            self.post_message(self.TypeValue(self))

    def action_leave(self) -> None:
        self.post_message(self.Leave())

    def submit_text(self, text: str) -> None:
        """What was typed in the entry box, as a value for the screen to apply or refuse."""
        if not text.strip():
            return
        try:  # spelled as the dial table reads it, in the dial's own unit
            value = dials.find(self.spec.name).read(text, flag_units=False)
        except ValueError:
            value = text.strip()  # the screen refuses it with the dial's own wording
        self.post_message(self.Changed(self, value))

    # -- drawing
    def range_words(self) -> str:
        """"1-40 req/s", or "2 of 5" for a choice dial."""
        spec = self.spec
        unit = f" {spec.unit}" if spec.unit else ""
        if spec.choices:
            choices = list(spec.choices)
            place = choices.index(self.value) + 1 if self.value in choices else 0
            return f"{place} of {len(choices)}"
        return f"{number(spec.min)}-{number(spec.max)}{unit}"

    def share(self) -> float:
        """Where the value sits in the dial's range, 0 to 1."""
        spec = self.spec
        if spec.choices:
            choices = list(spec.choices)
            index = choices.index(self.value) if self.value in choices else 0
            return index / max(1, len(choices) - 1)
        v = self.value if isinstance(self.value, (int, float)) and math.isfinite(self.value) else spec.max
        return max(0.0, min(1.0, (v - spec.min) / (spec.max - spec.min)))

    def value_words(self) -> str:
        unit = f" {_unit_for(self.value, self.spec.unit)}" if self.spec.unit else ""
        return f"{number(self.value)}{unit}"

    def render(self) -> Text:
        settings = getattr(self.app, "settings", None)
        g = settings.glyphs if settings is not None else UNICODE
        # The laid-out size, not `content_size` (which may lay out the whole screen again).
        width = max(0, self.outer_size.width - self.styles.gutter.width)
        text = Text(no_wrap=True, overflow="crop")
        focused = self.has_focus
        text.append(g.focus if focused else " ", self.get_component_rich_style("dial--focus", partial=True))
        value = self.value_words()
        room = max(1, width - 1 - len(value) - 1)
        label = self.spec.label if len(self.spec.label) <= room else self.spec.label[: max(1, room - 1)] + "."
        text.append(label, self.get_component_rich_style("dial--label", partial=True))
        track_width = track_cells(width, label, value)
        if track_width:
            knob_at = round(self.share() * (track_width - 1))
            track = self.get_component_rich_style("dial--track", partial=True)
            text.append(" ")
            text.append(g.dial_track * knob_at, track)
            text.append(g.dial_knob, self.get_component_rich_style("dial--knob", partial=True))
            text.append(g.dial_track * (track_width - knob_at - 1), track)
            text.append(" ")
        used = 1 + len(label) + len(value) + (track_width + 2 if track_width else 0)
        text.append(" " * max(0 if track_width else 1, width - used))
        text.append(value, self.get_component_rich_style("dial--value", partial=True))
        return text

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()


class DialEntry(AnswerBox):
    """The box under the dials for typing one dial's exact value; Enter applies, Escape cancels
    (both go back to the dial)."""

    DEFAULT_CSS = "DialEntry { margin: 0 0 0 1; }"
    BINDINGS = [Binding("escape", "cancel", "cancel", show=False)]

    class Done(Message):
        """The entry closed: `text` is what to apply, or None when cancelled."""

        def __init__(self, entry: "DialEntry", text: str | None, refocus: bool) -> None:
            super().__init__()
            self.entry = entry
            self.text = text
            self.refocus = refocus

    def __init__(self, dial: DialControl) -> None:
        super().__init__(value=number(dial.value).replace(",", ""),
                         placeholder=f"{dial.spec.label}: {dial.range_words()}", classes="dial-entry")
        self.dial = dial
        self.closed = False

    def _close(self, text: str | None, refocus: bool) -> None:
        if not self.closed:
            self.closed = True
            self.post_message(self.Done(self, text, refocus))

    async def action_submit(self) -> None:
        self._close(self.value, True)

    def action_cancel(self) -> None:
        self._close(None, True)

    def on_blur(self) -> None:
        self._close(None, False)
