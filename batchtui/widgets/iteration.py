"""One engine iteration opened up: what went into its token budget, what held it back, where
its time went."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from ..formatting import ms
from .sim_view import SimView

# Every line is kept within 34 characters: the view's width at 80 columns.
LIMIT_WORDS = {
    "token_budget": ("token budget", "budget spent, work still waiting"),
    "max_num_seqs": ("seat cap", "all seats full, requests waiting"),
    "kv_cache": ("KV cache", "no free blocks to admit or grow"),
    "none": ("nothing", "everything waiting was scheduled"),
}
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
    cap, free KV blocks, the time split (weights read, KV read, compute) and the limit that bound
    the batch, named."""

    view_name = "iteration"
    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")
    COMPONENT_CLASSES = {
        "iteration--title", "iteration--decode", "iteration--prefill", "iteration--prefill-alt",
        "iteration--free", "iteration--weights", "iteration--kv", "iteration--compute",
        "iteration--other", "iteration--binding", "iteration--dim",
    }

    def build(self, width: int) -> Text:
        snap = self.snapshot
        text = Text()
        report = snap.last if snap is not None else None
        if report is None:
            text.append("no iteration yet: . runs one", self.style_of("iteration--dim"))
            return text
        g = self.glyphs
        dim = self.style_of("iteration--dim")
        # Every line below is always there, so the view's height never changes between frames:
        # a change of height would lay out (and redraw) the whole pane.
        text.append(f"iteration {report.index:,}", self.style_of("iteration--title"))
        text.append(f"{g.sep}{ms(report.duration)}\n")

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

        free_blocks = report.kv_blocks_usable - report.kv_blocks_used
        text.append(f"seats {report.running:,}/{report.max_num_seqs:,}{g.sep}waiting {report.waiting:,}\n")
        text.append(f"free KV blocks {free_blocks:,}\n")

        # Time split. The roofline overlaps weights and compute, so shares are of their sum.
        cost = report.cost
        text.append("time split")
        text.append(f"{g.sep}most: {TIME_WORDS.get(cost.binding, cost.binding)}\n", dim)
        parts = [("weights", cost.weights, "iteration--weights"), ("KV", cost.kv_read, "iteration--kv"),
                 ("compute", cost.compute + cost.prefill_attention, "iteration--compute"),
                 ("other", cost.allreduce + cost.overhead, "iteration--other")]
        cells = _cells([p[1] for p in parts], bar_width)
        text.append("[")
        for (_, _, style), n, glyph in zip(parts, cells, g.time_parts):
            text.append(glyph * n, self.style_of(style))
        text.append(g.bar_free * (bar_width - sum(cells)), self.style_of("iteration--free"))
        text.append("]\n")
        # Two items a line, or all four on one when there is room: decided by width alone, so
        # the height is steady. "other" is the all-reduce and the fixed per-iteration overhead.
        one_line = width >= 66
        for i, ((word, seconds, style), glyph) in enumerate(zip(parts, g.time_parts)):
            if i:
                text.append(" " if one_line or i % 2 else "\n")
            text.append(glyph, self.style_of(style))
            text.append(f" {word} {ms(seconds)}")
        text.append("\n")

        limit, why = LIMIT_WORDS.get(report.binding_limit, (report.binding_limit, ""))
        binding_style = self.style_of("iteration--binding") if report.binding_limit != "none" else ""
        text.append("limit: ")
        text.append(limit, binding_style)
        text.append("\n")
        text.append(why, dim)
        return text
