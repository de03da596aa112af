"""The scheduler's binding limits (`sim.reports.BINDING_LIMITS`: why an iteration scheduled no
more) in words, one table for every face: the iteration view, the goal checklists and the command
line's report. tests/unit/test_limit_words.py ties its keys to the limits the schedulers set."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LimitWords:
    name: str
    """What the iteration view calls it."""
    short: str
    """A goal's checklist word."""
    why: str
    """The iteration view's reason (within 34 characters: the view's width at 80 columns)."""
    sentence: str
    """The command line's report, naming a dial as `{path}` (spelled by its flag there)."""


LIMIT_WORDS = {
    "token_budget": LimitWords("token budget", "budget", "budget spent, work still waiting",
                               "token budget ({engine.max_num_batched_tokens}) spent"),
    "max_num_seqs": LimitWords("seats", "seats", "all seats full, requests waiting",
                               "every seat ({engine.max_num_seqs}) taken"),
    "kv_cache": LimitWords("KV cache", "KV cache", "no free blocks to admit or grow",
                           "KV cache full (admission blocked or preemption)"),
    "none": LimitWords("nothing", "nothing", "everything waiting was scheduled",
                       "nothing held back: all work was scheduled"),
}
