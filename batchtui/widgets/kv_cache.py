"""KV cache: a bar of the usable blocks, in use, cached but free, and free, with each sequence's
share shaded."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from ..formatting import count, percent
from .sim_view import SimView

MAX_PREEMPTION_MARKS = 5


class KVCacheView(SimView):
    """Blocks in use, cached but free, and free. Where every sequence gets at least two cells,
    neighbouring sequences are shaded differently so the learner sees how many share the cache;
    blocks just freed by a preemption are marked. With the prefix cache on, blocks nobody holds
    that keep their hash (vLLM's evictable blocks: a later prompt with the same prefix reuses
    them) are drawn apart from plain free ones, with a legend line."""

    view_name = "kv"
    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")
    COMPONENT_CLASSES = {"kv--title", "kv--used", "kv--used-alt", "kv--free", "kv--cached", "kv--mark",
                         "kv--dim", "kv--full"}

    def min_lines(self, width: int) -> int:
        return 3

    def wanted_lines(self, width: int) -> int:
        """A fourth line for the legend when the prefix cache is on."""
        return 4 if self.snapshot is not None and self.snapshot.prefix_caching else 3

    block_size = 16
    """Tokens per block when the snapshot does not say (the live engine's, set by the screen)."""

    def build(self, width: int) -> Text:
        snap = self.snapshot
        text = Text()
        if snap is None:
            text.append("KV cache: waiting for the first iteration", self.style_of("kv--dim"))
            return text
        used, usable = snap.kv_blocks_used, max(1, snap.kv_blocks_usable)
        share = used / usable
        text.append("KV ", self.style_of("kv--title"))
        text.append(f"{used:,}/{usable:,} blocks ")
        text.append(percent(share), self.style_of("kv--full") if share >= 0.95 else "")
        # The engine's own block size (a saved scenario may use 32), where the snapshot has it.
        block_size = getattr(snap, "block_size", None) or self.block_size
        tokens = f" {count(usable * block_size)} tok"
        if len(text.plain) + len(tokens) <= width:
            text.append(tokens, self.style_of("kv--dim"))
        text.append("\n")

        g = self.glyphs
        used_cells = min(width, round(share * width)) if used else 0
        if used and used_cells == 0:
            used_cells = 1
        evictable = snap.evictable_blocks
        cached_cells = min(width - used_cells, max(1, round(evictable / usable * width))) if evictable else 0
        by_request = [blocks for _, blocks in snap.kv_blocks_by_request if blocks > 0]
        if by_request and len(by_request) * 2 <= used_cells:
            # Cell i shows whichever sequence holds the block at its middle.
            bounds, total = [], 0
            for blocks in by_request:
                total += blocks
                bounds.append(total)
            index = 0
            shades = ((g.bar_used, self.style_of("kv--used")), (g.bar_used_alt, self.style_of("kv--used-alt")))
            cells = []
            for cell in range(used_cells):
                position = (cell + 0.5) * total / used_cells
                while index < len(bounds) - 1 and position > bounds[index]:
                    index += 1
                cells.append(shades[index % 2])
            self.append_runs(text, cells)
        else:
            text.append(g.bar_used * used_cells, self.style_of("kv--used"))
        preempted = len(snap.last.preempted) if snap.last is not None else 0
        marks = min(preempted, MAX_PREEMPTION_MARKS, width - used_cells - cached_cells)
        text.append(g.bar_mark * marks, self.style_of("kv--mark"))
        text.append(g.bar_cached * cached_cells, self.style_of("kv--cached"))
        text.append(g.bar_free * (width - used_cells - cached_cells - marks), self.style_of("kv--free"))

        text.append("\n")
        if snap.prefix_caching:
            text.append_text(self.legend(snap, width))
            if self.max_lines is not None and self.max_lines < 4:
                return text  # three lines: the legend says more than who holds blocks
            text.append("\n")
        total_preemptions = snap.metrics.num_preemptions
        # The snapshot lists at most the 256 biggest holders; every running sequence holds some.
        holders = max(len(snap.kv_blocks_by_request), snap.running)
        detail = f"{holders:,} {'seq holds' if holders == 1 else 'seqs hold'} blocks"
        if total_preemptions or preempted:
            text.append(detail + g.sep)
            text.append(f"preempted {total_preemptions:,}", self.style_of("kv--mark"))
            if preempted:
                text.append(f" ({preempted} now)", self.style_of("kv--mark"))
        else:
            text.append(detail + g.sep + "0 preempted", self.style_of("kv--dim"))
        return text

    def legend(self, snap, width: int) -> Text:
        """What the bar's glyphs mean, with the blocks of each where they fit: in use, cached
        but free (evictable: reused by a prompt with the same prefix until evicted), free."""
        g = self.glyphs
        free = max(0, snap.kv_blocks_usable - snap.kv_blocks_used - snap.evictable_blocks)
        counted = ((g.bar_used, "kv--used", f" {count(snap.kv_blocks_used)} used"),
                   (g.bar_cached, "kv--cached", f" {count(snap.evictable_blocks)} cached"),
                   (g.bar_free, "kv--free", f" {count(free)} free"))
        words = ((g.bar_used, "kv--used", " in use"), (g.bar_cached, "kv--cached", " cached, free"),
                 (g.bar_free, "kv--free", " free"))
        for parts in (counted, words):
            text = Text()
            for i, (glyph, style, label) in enumerate(parts):
                if i:
                    text.append(" ")
                text.append(glyph, self.style_of(style))
                text.append(label, self.style_of("kv--dim"))
            if len(text.plain) <= width:
                break
        return text
