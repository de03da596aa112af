"""One dial: a setting the learner moves with the arrow keys, showing its range and unit."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input

from .answer_box import AnswerBox

from ..formatting import number
from ..glyphs import UNICODE

BIG_MOVE = 10


def parse_value(text: str, template: Any) -> Any:
    """The typed text as the same kind of value as `template`; ValueError if it is not one."""
    text = text.strip().replace(",", "").replace("_", "")
    if isinstance(template, bool):
        lowered = text.lower()
        if lowered in ("on", "true", "yes", "1"):
            return True
        if lowered in ("off", "false", "no", "0"):
            return False
        raise ValueError(f"{text!r} is not on or off")
    if isinstance(template, str):
        return text
    value = float(text)  # raises ValueError with Python's own wording; caught by the caller
    if math.isfinite(value) and value.is_integer() and isinstance(template, int):
        return int(value)
    return value


def _unit_for(value: Any, unit: str) -> str:
    """"1 request", "2 requests": a plural unit word loses its s for exactly one."""
    if value == 1 and unit.isalpha() and unit.endswith("s") and len(unit) > 2:
        return unit[:-1]
    return unit


class DialControl(Widget, can_focus=True):
    """A numeric dial (min..max in steps) or a choice dial. Left/right move it a notch, shift
    ten notches, home/end to the ends, Enter opens a box to type an exact value."""

    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")
    COMPONENT_CLASSES = {"dial--label", "dial--value", "dial--range", "dial--track", "dial--knob"}
    BINDINGS = [
        Binding("left", "move(-1)", "less", show=False),
        Binding("right", "move(1)", "more", show=False),
        Binding("shift+left,pagedown", f"move(-{BIG_MOVE})", "much less", show=False),
        Binding("shift+right,pageup", f"move({BIG_MOVE})", "much more", show=False),
        Binding("home", "to_end(-1)", "minimum", show=False),
        Binding("end", "to_end(1)", "maximum", show=False),
        Binding("up", "app.focus_previous", "dial above", show=False),
        Binding("down", "app.focus_next", "dial below", show=False),
        Binding("enter", "type_value", "type", show=False),
    ]

    class Changed(Message):
        """The learner asked for a new value. The screen applies it, or refuses it with
        `refuse()`, which puts the dial back."""

        def __init__(self, dial: "DialControl", value: Any) -> None:
            super().__init__()
            self.dial = dial
            self.value = value

    def __init__(self, spec, value: Any, *, id: str | None = None) -> None:
        """`spec` is a `steps.Dial` (name, label, unit, min, max, step, choices)."""
        super().__init__(id=id)
        self.spec = spec
        self.value = value
        """The value in force (what the simulation runs with)."""
        self.entry: Input | None = None

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

    def set_value(self, value: Any) -> None:
        self.value = value
        self.refresh()

    def action_move(self, notches: int) -> None:
        target = self.moved(notches)
        if target != self.value:
            self.post_message(self.Changed(self, target))

    def action_to_end(self, direction: int) -> None:
        self.action_move(direction * 1_000_000)

    # -- typing an exact value
    def action_type_value(self) -> None:
        if self.entry is not None or self.spec.choices:
            return  # a choice dial is moved with the arrows: there is nothing to type
        self.entry = DialEntry(self)
        self.parent.mount(self.entry, after=self)
        self.entry.focus()

    def entry_done(self, text: str | None, refocus: bool = True) -> None:
        """Called by the entry box: None when cancelled, else the typed text."""
        entry, self.entry = self.entry, None
        if entry is not None:
            entry.remove()
        if refocus:
            self.focus()
        if text is None or not text.strip():
            return
        try:
            value = parse_value(text, self.value)
        except ValueError:
            value = text.strip()  # the screen refuses it with the dial's own wording
        self.post_message(self.Changed(self, value))

    # -- drawing
    def range_words(self) -> str:
        spec = self.spec
        unit = f" {spec.unit}" if spec.unit else ""
        if spec.choices:
            choices = list(spec.choices)
            place = choices.index(self.value) + 1 if self.value in choices else 0
            return f"{place} of {len(choices)}"
        return f"{number(spec.min)}-{number(spec.max)}{unit}"

    def render(self) -> Text:
        settings = getattr(self.app, "settings", None)
        g = settings.glyphs if settings is not None else UNICODE
        # The laid-out size, not `content_size` (which may lay out the whole screen again).
        width = max(0, self.outer_size.width - self.styles.gutter.width)
        spec = self.spec
        unit = f" {_unit_for(self.value, spec.unit)}" if spec.unit else ""
        text = Text(no_wrap=True, overflow="crop")
        text.append(spec.label, self.get_component_rich_style("dial--label", partial=True))
        value = f"{number(self.value)}{unit}"
        text.append(" " * max(1, width - len(spec.label) - len(value)))
        text.append(value, self.get_component_rich_style("dial--value", partial=True))
        text.append("\n")
        left, right, track_glyph, knob = g.arrow_left, g.arrow_right, g.dial_track, g.dial_knob
        range_words = self.range_words()
        track_width = max(3, width - len(range_words) - 5)
        if spec.choices:
            choices = list(spec.choices)
            index = choices.index(self.value) if self.value in choices else 0
            share = index / max(1, len(choices) - 1)
        else:
            v = self.value if isinstance(self.value, (int, float)) and math.isfinite(self.value) else spec.max
            share = (v - spec.min) / (spec.max - spec.min)
        knob_at = round(max(0.0, min(1.0, share)) * (track_width - 1))
        text.append(left + " ", self.get_component_rich_style("dial--track", partial=True))
        text.append(track_glyph * knob_at, self.get_component_rich_style("dial--track", partial=True))
        text.append(knob, self.get_component_rich_style("dial--knob", partial=True))
        text.append(track_glyph * (track_width - knob_at - 1), self.get_component_rich_style("dial--track", partial=True))
        text.append(" " + right + " ", self.get_component_rich_style("dial--track", partial=True))
        text.append(range_words, self.get_component_rich_style("dial--range", partial=True))
        return text


class DialEntry(AnswerBox):
    """The box under a dial for typing an exact value; Enter applies, Escape cancels.
    Kept with the dial because it exists only while one dial is being typed into."""

    DEFAULT_CSS = "DialEntry { margin: 0 1; }"
    BINDINGS = [Binding("escape", "cancel", "cancel", show=False)]

    def __init__(self, dial: DialControl) -> None:
        super().__init__(value=number(dial.value).replace(",", ""), placeholder=dial.range_words(),
                         classes="dial-entry")
        self.dial = dial

    async def action_submit(self) -> None:
        self.dial.entry_done(self.value)

    def action_cancel(self) -> None:
        self.dial.entry_done(None)

    def on_blur(self) -> None:
        if self.dial.entry is self:
            self.dial.entry_done(None, refocus=False)
