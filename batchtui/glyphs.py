"""The characters the views draw with: Unicode blocks by default, plain ASCII with `--ascii`.

States are told apart by shape as well as colour, so the views still read under NO_COLOR.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Glyphs:
    seat_idle: str
    seat_decode: str
    seat_padded: str
    seat_preempted: str
    seat_prefill: tuple[str, ...]
    """Prefill progress, from just started to nearly done."""
    bar_used: str
    bar_used_alt: str
    """Every other sequence in the KV bar, so neighbours can be told apart."""
    bar_free: str
    bar_mark: str
    """A preemption mark."""
    budget_parts: tuple[str, str, str]
    """Token budget bar: decode tokens, prefill chunk, the next prefill chunk."""
    spark: tuple[str, ...]
    """Sparkline levels, lowest first."""
    point: str
    knee: str
    here: str
    axis_v: str
    axis_h: str
    axis_corner: str
    dot: str
    arrow_left: str
    arrow_right: str
    dial_track: str
    dial_knob: str
    sep: str
    """Between items on one line."""
    dash: str
    root: str
    squared: str
    """How the iteration view writes sqrt(a² + b²)."""
    focus: str
    """Marks the focused dial (shape, not only colour, so it reads under NO_COLOR)."""
    unbounded: str = "↑"
    """A curve's point with no steady state: its queue grows without bound."""
    line_v: str = "┆"
    """A vertical marker line across a plot (the saturated rate)."""
    line_h: str = "╌"
    """A horizontal marker line across a plot (a latency objective)."""
    bar_cached: str = "▒"
    """A KV block nobody holds that still keeps its prefix hash: free, reusable until evicted."""


UNICODE = Glyphs(
    seat_idle="·",
    seat_decode="█",
    seat_padded="░",
    seat_preempted="×",
    seat_prefill=("▁", "▂", "▃", "▄", "▅", "▆", "▇"),
    bar_used="█",
    bar_used_alt="▓",
    bar_free="░",
    bar_mark="×",
    budget_parts=("█", "▓", "▒"),
    spark=("▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"),
    point="•",
    knee="◆",
    here="◉",
    axis_v="│",
    axis_h="─",
    axis_corner="└",
    dot="·",
    arrow_left="◀",
    arrow_right="▶",
    dial_track="─",
    dial_knob="●",
    sep=" · ",
    dash="—",
    root="√",
    squared="²",
    focus="▸",
)

ASCII = Glyphs(
    seat_idle=".",
    seat_decode="#",
    seat_padded="_",
    seat_preempted="x",
    seat_prefill=("1", "2", "3", "4", "5", "6", "7", "8", "9"),
    bar_used="#",
    bar_used_alt="=",
    bar_free=".",
    bar_mark="x",
    budget_parts=("d", "p", "P"),
    spark=("_", ".", "-", "~", "=", "+", "*", "#"),
    point="*",
    knee="K",
    here="@",
    axis_v="|",
    axis_h="-",
    axis_corner="+",
    dot=".",
    arrow_left="<",
    arrow_right=">",
    dial_track="-",
    dial_knob="O",
    sep=" | ",
    dash="-",
    root="sqrt",
    squared="^2",
    focus=">",
    unbounded="^",
    line_v=":",
    line_h="-",
    bar_cached=":",
)


def glyphs_for(ascii_only: bool) -> Glyphs:
    return ASCII if ascii_only else UNICODE


# Lesson text is written in Unicode (×, ≈, ÷, superscripts); `--ascii` shows it like this.
_ASCII_TEXT = str.maketrans({
    "×": "x", "≈": "~", "÷": "/", "≤": "<=", "≥": ">=", "−": "-", "–": "-", "—": "--", "’": "'",
    "‘": "'", "“": '"', "”": '"', "…": "...", "→": "->", "←": "<-", "·": ".", "•": "*", "µ": "u",
    "\u00a0": " ", "\u202f": " ", "\u2009": " ",
    # A checklist's marks, as the goal bar's own under --ascii ("?" would read as the help key).
    "○": "[ ]", "◐": "[~]", "✓": "[x]",
    # The arrow keys as the key bar spells them, the lessons' formulas, and a plot's marks as
    # its ASCII drawing shows them (step 7's knee and "now").
    "↑": "up", "↓": "down", "±": "+/-", "λ": "lambda", "⌈": "ceil(", "⌉": ")",
    UNICODE.root: ASCII.root, UNICODE.knee: ASCII.knee, UNICODE.here: ASCII.here,
})
_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
_SUPERSCRIPT_RUN = re.compile("[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+")


def ascii_text(text: str) -> str:
    """`text` in plain ASCII: known symbols spelled out, anything else as `?`."""
    text = _SUPERSCRIPT_RUN.sub(lambda m: "^" + m.group().translate(_SUPERSCRIPTS), text)
    text = text.translate(_ASCII_TEXT)
    if text.isascii():
        return text
    return "".join(ch if ch.isascii() else "?" for ch in text)
