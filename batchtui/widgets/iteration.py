"""One engine iteration opened up: what went into its token budget, what held it back, where
its time went."""

from __future__ import annotations

import math
from pathlib import Path

from rich.text import Text

from ..formatting import count, ms
from ..keys import shown
from ..limit_words import LIMIT_WORDS
from .sim_view import SimView

# Every line is kept within 34 characters: the view's width at 80 columns.
TIME_WORDS = {"weights": "weights read", "kv_read": "KV read", "compute": "compute",
              "prefill_attention": "attention", "allreduce": "all-reduce",
              "overhead": "overhead"}


def _cells(parts: list[float], width: int) -> list[int]:
    """Split `width` cells among `parts` in proportion, using every cell (largest remainders
    get the spare ones); every non-zero part gets at least one cell while there are cells."""
    total = sum(parts)
    if total <= 0 or width <= 0:
        return [0] * len(parts)
    exact = [p / total * width for p in parts]
    cells = [int(x) for x in exact]
    spare = width - sum(cells)
    for i in sorted(range(len(parts)), key=lambda i: exact[i] - cells[i], reverse=True)[:spare]:
        cells[i] += 1
    # A part too small for a cell of its own borrows one from the largest.
    for i, p in enumerate(parts):
        if p > 0 and cells[i] == 0 and max(cells) > 1:
            cells[cells.index(max(cells))] -= 1
            cells[i] = 1
    return cells


class IterationView(SimView):
    """The last iteration: decode tokens and prefill chunks against the token budget, the seat
    cap, free KV blocks (vLLM's count: cached blocks nobody holds included), how its time adds
    up, and the limit that bound the batch, named.

    The time is shown the way the cost model makes it: the weights read and the linear layers'
    compute overlap (the roofline joins them as the square root of the sum of their squares),
    then the KV read, prefill attention, all-reduce and overhead add on. Full form: 11 lines;
    compact (when the view stack has less room): 7; tight (a short terminal, where it saves a
    page): 6, without the seats line (the seats and KV views show both)."""

    view_name = "iteration"
    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")
    COMPONENT_CLASSES = {
        "iteration--title", "iteration--decode", "iteration--prefill", "iteration--prefill-alt",
        "iteration--free", "iteration--weights", "iteration--kv", "iteration--compute",
        "iteration--other", "iteration--binding", "iteration--dim", "iteration--kv-free",
        "iteration--kv-cached",
    }
    FULL_LINES = 11
    COMPACT_LINES = 7
    TIGHT_LINES = 6

    def min_lines(self, width: int) -> int:
        return self.COMPACT_LINES

    def tight_lines(self, width: int) -> int:
        return self.TIGHT_LINES

    @property
    def tight(self) -> bool:
        return self.max_lines is not None and self.max_lines < self.COMPACT_LINES

    def wanted_lines(self, width: int) -> int:
        return self.FULL_LINES

    @property
    def compact(self) -> bool:
        return self.max_lines is not None and self.max_lines < self.FULL_LINES

    def build(self, width: int) -> Text:
        snap = self.snapshot
        text = Text()
        report = snap.last if snap is not None else None
        if report is None:
            text.append(f"no iteration yet: {shown('sim.single_iteration')} runs one", self.style_of("iteration--dim"))
            return text
        g = self.glyphs
        dim = self.style_of("iteration--dim")
        compact = self.compact
        words = LIMIT_WORDS[report.binding_limit]
        limit, why = words.name, words.why
        binding_style = self.style_of("iteration--binding") if report.binding_limit != "none" else ""
        # Every line below is always there, so the view's height never changes between frames:
        # a change of height would lay out (and redraw) the whole pane.
        title = f"iteration {report.index:,}"
        text.append(title, self.style_of("iteration--title"))
        text.append(f"{g.sep}{ms(report.duration)}")
        if compact:  # the limit on the title line, where it fits
            tail = f"{g.sep}limit: "
            if len(text.plain) + len(tail) + len(limit) <= width:
                text.append(tail)
                text.append(limit, binding_style)
        text.append("\n")

        # Token budget: decode tokens, then each prefill chunk, then what was left unused.
        chunks = [w.num_tokens for w in report.scheduled if w.is_prefill]
        budget = max(report.token_budget, report.num_scheduled_tokens, 1)
        decode, prefill = f"{report.num_decode_tokens:,}", f"{report.num_prefill_tokens:,}"
        of = f" of {report.token_budget:,}"
        pieces = f" in {len(chunks)}" if len(chunks) > 1 else ""
        # The longest wording that fits: long prompts and big budgets make long numbers.
        for words in (("decode ", "prefill ", pieces, of), ("decode ", "prefill ", "", of),
                      ("decode ", "prefill ", "", ""), ("", "", "", of), ("", "", "", "")):
            d_text = f"{g.budget_parts[0]} {words[0]}{decode}"
            p_text = f" + {g.budget_parts[1]} {words[1]}{prefill}{words[2]}"
            if len(d_text) + len(p_text) + len(words[3]) <= width:
                break
        text.append(d_text, self.style_of("iteration--decode"))
        text.append(p_text, self.style_of("iteration--prefill"))
        text.append(f"{words[3]}\n")
        bar_width = max(1, width - 2)
        unused = max(0, budget - report.num_scheduled_tokens)
        cells = _cells([report.num_decode_tokens, *chunks, unused], bar_width)
        text.append("[")
        decode_glyph, prefill_glyph, prefill_alt_glyph = g.budget_parts
        text.append(decode_glyph * cells[0], self.style_of("iteration--decode"))
        for i, n in enumerate(cells[1:-1]):
            if i % 2:
                text.append(prefill_alt_glyph * n, self.style_of("iteration--prefill-alt"))
            else:
                text.append(prefill_glyph * n, self.style_of("iteration--prefill"))
        text.append(g.bar_free * (bar_width - sum(cells[:-1])), self.style_of("iteration--free"))
        text.append("]\n")

        seats = f"seats {report.running:,}/{report.max_num_seqs:,}{g.sep}waiting {report.waiting:,}"
        if report.finished and len(seats) + len(g.sep) + 12 <= width // (2 if compact else 1):
            # Seats are counted after the iteration: those it finished left (24 decoded, 2 finished:
            # 22 seats), so the two figures above and here read as one.
            seats += f"{g.sep}{len(report.finished):,} finished"
        if self.tight:
            pass
        elif compact:
            text.append(seats)
            text.append_text(self._free_blocks(report, width - len(seats), compact=True))
            text.append("\n")
        else:
            text.append(f"{seats}\n")
            text.append_text(self._free_blocks(report, width, compact=False))
            text.append("\n")

        self._time_lines(text, report.cost, report.duration, width, compact)

        if compact:
            if len(title) + len(g.sep) + len(ms(report.duration)) + len(g.sep) + 7 + len(limit) > width:
                text.append("\nlimit: ")
                text.append(limit, binding_style)
            return text
        text.append("\nlimit: ")
        text.append(limit, binding_style)
        text.append("\n")
        text.append(why, dim)
        return text

    def _free_blocks(self, report, room: int, compact: bool) -> Text:
        """The KV blocks the scheduler may still take, the longest wording that fits in `room`
        (compact: after the seats, with its separator; none if nothing fits). It is vLLM's free
        count, which with the prefix cache on includes the cached blocks nobody holds (it evicts
        them to make room), so the KV view's legend splits the same blocks into cached and
        free; the label says so, or, shortest, shows both of the legend's glyphs."""
        g = self.glyphs
        free = report.kv_blocks_usable - report.kv_blocks_used
        lead = g.sep if compact else ""
        cached = self.snapshot.prefix_caching
        incl = " (cached incl.)" if cached else ""
        words = [f"free KV {free:,}{incl}", f"free KV {count(free)}{incl}"]
        if not compact:
            words.insert(0, f"free KV blocks {free:,}{incl}")
        for shown in words:
            if len(lead) + len(shown) <= room:
                return Text(lead + shown)
        if not cached:
            short = f"{lead}KV {count(free)}"
            return Text(short) if len(short) <= room else Text()
        glyphs = Text(f"{lead}KV ")
        glyphs.append(g.bar_free, self.style_of("iteration--kv-free"))
        glyphs.append(g.bar_cached, self.style_of("iteration--kv-cached"))
        glyphs.append(f" {count(free)}")
        return glyphs if len(glyphs.plain) <= room else Text()

    def _time_lines(self, text: Text, cost, duration: float, width: int, compact: bool) -> None:
        """How the iteration's time adds up, as the engine adds it:
        sqrt(weights² + compute²) + KV + attention + other = total."""
        g = self.glyphs
        sq, root = g.squared, g.root
        # The engine's own figure; reports that predate it are worked out the same way.
        linear = cost.linear or math.sqrt(cost.weights ** 2 + cost.compute ** 2)
        weights, compute = self.style_of("iteration--weights"), self.style_of("iteration--compute")
        if not compact:
            head = Text("time: weights and compute overlap", self.style_of("iteration--dim"))
            text.append_text(head)
            text.append("\n")
        # Line 1: the overlapped linear layers.
        line = Text(f"{root}(")
        line.append(f"W {_ms_bare(cost.weights)}{sq}", weights)
        line.append(" + ")
        line.append(f"C {_ms_bare(cost.compute)}{sq}", compute)
        line.append(f") = {ms(linear)}")
        if len(line.plain) > width:  # drop the units' precision before anything else
            line = Text(f"{root}(")
            line.append(f"W{sq}", weights)
            line.append("+")
            line.append(f"C{sq}", compute)
            line.append(f") = {ms(linear)}")
        text.append_text(line)
        text.append("\n")
        # Line 2: what adds on, and the total.
        adds = [("KV", cost.kv_read, "iteration--kv"), ("attn", cost.prefill_attention, "iteration--compute"),
                ("other", cost.allreduce + cost.overhead + cost.draft, "iteration--other")]  # (a drafter's passes)
        line = Text()
        for word, seconds, style in adds:
            line.append("+ ")
            line.append(f"{word} {_ms_bare(seconds)}", self.style_of(style))
            line.append(" ")
        total = f"= {ms(duration)}"
        if compact or len(line.plain) + len(total) > width:
            line.rstrip()
            text.append_text(line)
            if not compact:
                text.append("\n")
                text.append(f"{total}{g.sep}most: {TIME_WORDS.get(cost.binding, cost.binding)}",
                            self.style_of("iteration--dim"))
        else:
            line.append(total)
            text.append_text(line)
            text.append("\n")
            text.append(f"most: {TIME_WORDS.get(cost.binding, cost.binding)}", self.style_of("iteration--dim"))


def _ms_bare(seconds: float) -> str:
    """A short time in ms without the unit ("5.99"), for sums that name ms once."""
    shown = ms(seconds)
    return shown[:-3] if shown.endswith(" ms") else shown
