"""Headline numbers: throughput, TTFT and TPOT percentiles, running batch and queue, and the prefix
cache hit rate when the cache is on."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from sim.reports import RATE_WINDOW_S, pool_label

from ..formatting import count, exact_count, ms, percent, worst_gap
from .sim_view import SimView, encoder_pass_size


class MetricsView(SimView):
    """What `vllm bench serve` would print, over the recent window, updated every frame."""

    view_name = "metrics"
    LINES = 6
    """Without pools; each pool of traffic (chat, batch) adds a line under TTFT and under TPOT."""

    def wanted_lines(self, width: int) -> int:
        pools = self.snapshot.metrics.pools if self.snapshot is not None else ()
        return self.LINES + 2 * len(pools)

    def comfortable_lines(self, width: int) -> int:
        return self.wanted_lines(width)  # the pools are what a step with pools is about
    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")
    COMPONENT_CLASSES = {"metrics--label", "metrics--value", "metrics--dim", "metrics--alarm"}

    def build(self, width: int) -> Text:
        snap = self.snapshot
        text = Text()
        if snap is None:
            text.append("metrics: waiting for the first iteration", self.style_of("metrics--dim"))
            return text
        m = snap.metrics
        label, value = self.style_of("metrics--label"), self.style_of("metrics--value")

        text.append(f"{'':8}{'p50':>10}{'p99':>10}\n", self.style_of("metrics--dim"))
        # Per pool (chat, batch) under each line, when the traffic has pools and there is room.
        pools = m.pools if self.max_lines is None or self.max_lines >= self.LINES + 2 * len(m.pools) else ()
        for name, key in (("TTFT", "ttft"), ("TPOT", "tpot")):
            rows = [(name, m.completed, getattr(m, f"{key}_p50"), getattr(m, f"{key}_p99"), label)]
            rows += [(f" {pool_label(pool.pool)}", pool.completed, getattr(pool, f"{key}_p50"), getattr(pool, f"{key}_p99"),
                      self.style_of("metrics--dim")) for pool in pools]
            for row_name, completed, p50, p99, style in rows:
                text.append(f"{row_name:8}", style)
                # A one-token answer (an embedder's) has no time per token: a dash, not 0.00 ms.
                if completed and p99 > 0:
                    text.append(f"{ms(p50):>10}{ms(p99):>10}\n", value)
                else:  # percentiles of nothing: say so rather than print zeros
                    text.append(f"{'-':>10}{'-':>10}\n", self.style_of("metrics--dim"))

        def item(name: str, shown: str, alarm: bool = False) -> Text:
            piece = Text(name + " ", label)
            piece.append(shown, self.style_of("metrics--alarm") if alarm else value)
            return piece

        # Fixed lines (cropped when narrow) rather than a flow: a steady height means a frame
        # redraws only the lines that changed, not the whole pane.
        throughput = [item("req/s", count(m.requests_per_s))]
        if not snap.encoder:  # an encoder (an embedder) generates no tokens
            throughput.insert(0, item("tokens/s", count(m.output_tokens_per_s)))
        lines = [
            throughput,
            [item("batch", f"{snap.running or encoder_pass_size(snap):,}"),
             item("queue", exact_count(snap.queue_len), alarm=snap.queue_len > max(8, snap.running)),
             item("done", exact_count(m.completed))],
            [item("gap max", worst_gap(snap))],
        ]
        if snap.batching in ("static", "dynamic") or m.padding_share:
            lines[2].append(item("padding", percent(m.padding_share), alarm=m.padding_share > 0.3))
        if m.num_preemptions:
            lines[2].append(item("preempted", f"{m.num_preemptions:,}", alarm=True))
        # Where there is room: the mean running batch (Little's law, step 9) and, with the prefix
        # cache on, vLLM's hit rate (prompt tokens found cached over those looked up, since the
        # run started), the hit rate first once prompts share something.
        extras = []
        if m.mean_running:
            extras.append(item("mean batch", count(m.mean_running)))
        if snap.prefix_caching:
            hits, queries = snap.prefix_cache_hits, snap.prefix_cache_queries
            extras.insert(0 if hits else len(extras),
                          item("prefix hits", percent(hits / queries) if queries else "-"))
        for extra in extras:
            if len(Text("  ").join(lines[2] + [extra]).plain) <= width:
                lines[2].append(extra)
        # Rates are over a recent window, `done` counts the whole run: say which, where it fits.
        window = Text(f"(last {RATE_WINDOW_S:g} s)", self.style_of("metrics--dim"))
        if len(Text("  ").join(lines[0] + [window]).plain) <= width:
            lines[0].append(window)
        for i, pieces in enumerate(lines):
            if i:
                text.append("\n")
            text.append_text(Text("  ").join(pieces))
        return text
