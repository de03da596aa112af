"""Seats: one cell per slot of the running batch, and the queue beside it."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from sim.reports import SeatView

from .sim_view import SimView, encoder_pass_size, seat_capacity

MAX_ROWS = 8
COMFORTABLE_ROWS = 4
"""Rows of seats worth more than the blank lines between views; more come after those."""
STATE_WORDS = {"decode": "decoding", "prefill": "prefilling", "padded": "padded",
               "preempted": "preempted", "idle": "idle", "unused": "unused"}
""""unused": a seat drawn past what the server can fill (a sequential server fills one of the
seats a batching server would have)."""


class SeatsView(SimView):
    """Every seat (up to what fits) as a cell: decoding, prefilling with how much of the prompt
    is done, padded (finished but held by a static batch), preempted, or idle."""

    view_name = "seats"
    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")
    COMPONENT_CLASSES = {
        "seats--title", "seats--idle", "seats--prefill", "seats--decode", "seats--padded",
        "seats--preempted", "seats--queue", "seats--dim", "seats--unused",
    }

    caption: str | None = None
    """What the header calls this run ("static", "64 seats"); None: its batching policy."""

    def min_lines(self, width: int) -> int:
        return 3  # the header, one row of seats, the legend

    def wanted_lines(self, width: int) -> int:
        seats = len(self.snapshot.seats) if self.snapshot is not None else 64
        return 2 + min(MAX_ROWS, -(-seats // max(1, width)))

    def comfortable_lines(self, width: int) -> int:
        return min(self.wanted_lines(width), 2 + COMFORTABLE_ROWS)

    def _glyph(self, seat) -> str:
        if seat.state == "prefill":
            levels = self.glyphs.seat_prefill
            return levels[min(len(levels) - 1, int(seat.progress * len(levels)))]
        return self._glyph_for_state(seat.state)

    def build(self, width: int) -> Text:
        snap = self.snapshot
        text = Text()
        if snap is None:
            text.append("seats: waiting for the first iteration", self.style_of("seats--dim"))
            return text
        seats = snap.seats
        words = STATE_WORDS
        passed = encoder_pass_size(snap)
        if passed:
            # An encoder's pass starts and ends within one iteration, so between frames every
            # seat is idle: show the requests the last pass carried instead.
            seats = tuple(SeatView("decode") for _ in range(min(passed, len(seats)))) + seats[passed:]
            words = {**STATE_WORDS, "decode": "in last pass"}
        busy = sum(1 for s in seats if s.state in ("prefill", "decode"))
        # The longest header that fits: "continuous 160/512 busy     queue 1,840".
        queue_style = self.style_of("seats--queue") if snap.queue_len else self.style_of("seats--dim")
        caption = self.caption or snap.batching
        # Out of the seats it can fill, as every view counts them (seat_capacity).
        seats_count = seat_capacity(snap)
        if len(seats) > seats_count:  # cells past the capacity: idle for good, not waiting for work
            seats = seats[:seats_count] + tuple(
                SeatView("unused") if s.state == "idle" else s for s in seats[seats_count:])
        for busy_words, queue in ((" busy", f"queue {snap.queue_len:,}"), ("", f"queue {snap.queue_len:,}"),
                                  ("", f"q {snap.queue_len:,}")):
            head = f" {busy}/{seats_count:,}{busy_words}"
            if len(caption) + len(head) + 1 + len(queue) <= width:
                break
        text.append(caption, self.style_of("seats--title"))
        text.append(head)
        text.append(" " * max(1, width - len(caption) - len(head) - len(queue)))
        text.append(queue, queue_style)

        # As many rows as the view is given; the seats past them are counted in the legend
        # (busy seats come first, so what is cut is idle ones).
        rows = MAX_ROWS if self.max_lines is None else max(1, min(MAX_ROWS, self.max_lines - 2))
        capacity = width * rows
        shown = seats if len(seats) <= capacity else seats[: capacity - 1]
        styles = {state: self.style_of(f"seats--{state}") for state in STATE_WORDS}
        for start in range(0, len(shown), width):
            text.append("\n")
            self.append_runs(text, ((self._glyph(seat), styles.get(seat.state, styles["idle"]))
                                    for seat in shown[start:start + width]))
        if len(shown) < len(seats):
            text.append("+", self.style_of("seats--dim"))

        counts: dict[str, int] = {}
        for seat in seats:
            counts[seat.state] = counts.get(seat.state, 0) + 1
        text.append("\n")
        legend = Text()
        for state in ("decode", "prefill", "padded", "preempted", "idle", "unused"):
            if state not in counts and (state not in ("decode", "idle") or "unused" in counts):
                continue
            item = Text()
            item.append(self._glyph_for_state(state), self.style_of(f"seats--{state}"))
            item.append(f" {words[state]} {counts.get(state, 0)}  ")
            if len(legend.plain) + len(item.plain.rstrip()) > width:
                break
            legend.append_text(item)
        legend.rstrip()
        text.append_text(legend)
        return text

    def _glyph_for_state(self, state: str) -> str:
        g = self.glyphs
        return {"decode": g.seat_decode, "padded": g.seat_padded, "prefill": g.seat_prefill[3],
                "preempted": g.seat_preempted}.get(state, g.seat_idle)
