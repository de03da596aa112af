"""Numbers as the views print them: times in ms, big counts with k/M, short and fixed width; and
the simulator's errors in the app's words (`in_app_words`)."""

from __future__ import annotations

import math


def ms(seconds: float) -> str:
    """A duration given in seconds, shown in ms (or s when long)."""
    if seconds is None or not math.isfinite(seconds):
        return "-"
    value = seconds * 1000
    if value >= 10_000:
        return f"{seconds:.1f} s"
    if value >= 999.5:  # "1.23 s" reads faster than "1234 ms"
        return f"{seconds:.2f} s"
    if value >= 100:
        return f"{value:.0f} ms"
    if value >= 10:
        return f"{value:.1f} ms"
    return f"{value:.2f} ms"


def latency(snap, value: float) -> str:
    """A latency percentile of a run's snapshot as the views print it: a dash until a request
    has finished (the percentile reads 0 before that, which is no measurement)."""
    return ms(value) if snap.metrics.completed and value > 0 else "-"


def count(value: float) -> str:
    """A count or rate with a k/M suffix once it gets long: 950, 7.8k, 12k, 1.2M."""
    if value is None or not math.isfinite(value):
        return "inf" if value == math.inf else "-"
    magnitude = abs(value)
    if magnitude >= 1_000_000:
        return f"{value / 1_000_000:.1f}M"
    if magnitude >= 10_000:
        return f"{value / 1000:.0f}k"
    if magnitude >= 1000:
        return f"{value / 1000:.1f}k"
    if magnitude >= 100 or float(value).is_integer():
        return f"{value:.0f}"
    return f"{value:.1f}"


def exact_count(n: int) -> str:
    """A count exact while short ("8,466"), then rounded ("12k"), so a metrics line fits 80 columns."""
    return f"{n:,}" if n < 10_000 else count(n)


def percent(share: float) -> str:
    return f"{share * 100:.0f}%" if share >= 0.1 or share == 0 else f"{share * 100:.1f}%"


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
