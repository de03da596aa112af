"""Numbers as the views print them: times in ms, big counts with k/M, short and fixed width
(`steps.numbers`, whose rule a lesson's reading of a live run shares), a dial's value, a
latency or a dash; and the simulator's errors in the app's words (`in_app_words`)."""

from __future__ import annotations

import math

from steps.numbers import count, exact_count, latency, ms, percent, worst_gap

__all__ = ["count", "exact_count", "first_fitting", "in_app_words", "latency", "ms", "number", "percent",
           "worst_gap", "wrap_words"]


def number(value: float) -> str:
    """A dial value: whole numbers plain, fractions with up to three digits."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, str):
        return value
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:.3f}".rstrip("0").rstrip(".")


def in_app_words(error: BaseException) -> str:
    """A simulator error as the app says it: each dial it names by its label in the table of
    dials (`sim.dials`: "seats = 0 is not allowed: ..."), a name that is no dial as it is."""
    from sim.errors import SimError

    if isinstance(error, SimError):
        from sim.dials import label_of
        from sim.errors import ConfigError

        if isinstance(error, ConfigError) and isinstance(error.value, int) and not isinstance(error.value, bool):
            # a whole number as its dial shows it ("16,384")
            return error.spelled(label_of, f"{label_of(error.dial) or error.dial} = {number(error.value)}")
        return error.spelled(label_of)
    return str(error)


def first_fitting(texts, width: int):
    """The first of `texts` (Rich Texts, longest first) that fits in `width` cells; the last,
    cropped by its widget, when none does."""
    for text in texts:
        if text.cell_len <= width:
            return text
    return texts[-1]


def wrap_words(text: str, width: int) -> str:
    """`text` wrapped at spaces to lines of at most `width` cells, a `code span` never broken
    (a command to type is read whole); a word longer than a line keeps a line of its own."""
    import re

    parts = re.findall(r"`[^`]*`\S*|\S+", text)
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + 1 + len(part) <= width:
            lines[-1] += " " + part
        else:
            lines.append(part)
    return "\n".join(lines)
