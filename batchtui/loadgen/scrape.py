"""The server's /metrics, read under vLLM 0.33's metric names (vllm/v1/metrics/loggers.py): how
full its KV cache is, how many requests run and wait, preemptions, prefix-cache queries and hits,
and speculative decoding's counters; and `batchtui serve`'s time scale (`batchtui:time_scale`).

`ServerWatch` reads them before a run, every `interval` seconds during it, and after: the counters
as differences over the run, the gauges as they were before and after and their peak and mean over
the run's scrapes. A server without /metrics (or without a metric) leaves it out.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field

GAUGES = ("vllm:kv_cache_usage_perc", "vllm:num_requests_running", "vllm:num_requests_waiting")
COUNTERS = ("vllm:num_preemptions", "vllm:prefix_cache_queries", "vllm:prefix_cache_hits",
            "vllm:external_prefix_cache_queries", "vllm:external_prefix_cache_hits", "vllm:prompt_tokens",
            "vllm:generation_tokens", "vllm:request_success", "vllm:spec_decode_num_drafts",
            "vllm:spec_decode_num_draft_tokens", "vllm:spec_decode_num_accepted_tokens")
PER_POSITION = "vllm:spec_decode_num_accepted_tokens_per_pos"
TIME_SCALE = "batchtui:time_scale"
"""`batchtui serve`'s simulated seconds per real second (absent on any other server)."""
SCRAPE_INTERVAL_S = 0.5


@dataclass
class Scrape:
    """One reading of /metrics: each metric summed over its series (engines, label values), but
    the KV cache's use, which is the fullest engine's."""

    values: dict[str, float] = field(default_factory=dict)
    per_position: dict[int, float] = field(default_factory=dict)

    @property
    def time_scale(self) -> float | None:
        """`batchtui serve`'s time scale (its own metric); None for any other server."""
        scale = self.values.get(TIME_SCALE)
        return scale if scale and scale > 0 else None

    @classmethod
    def parse(cls, text: str | None) -> Scrape | None:
        """None for no text or text that is not Prometheus's."""
        if not text:
            return None
        from prometheus_client.parser import text_string_to_metric_families

        wanted = {name: name for name in (*GAUGES, *COUNTERS, TIME_SCALE)}
        wanted.update({name + "_total": name for name in COUNTERS})
        out = cls()
        try:
            for family in text_string_to_metric_families(text):
                for sample in family.samples:
                    value = float(sample.value)
                    if not math.isfinite(value):
                        continue
                    if sample.name in (PER_POSITION, PER_POSITION + "_total"):
                        position = sample.labels.get("position")
                        if position is not None and position.isdigit():
                            out.per_position[int(position)] = out.per_position.get(int(position), 0.0) + value
                        continue
                    name = wanted.get(sample.name)
                    if name is None:
                        continue
                    if name in ("vllm:kv_cache_usage_perc", TIME_SCALE):
                        out.values[name] = max(out.values.get(name, value), value)
                    else:
                        out.values[name] = out.values.get(name, 0.0) + value
        except (ValueError, TypeError, IndexError):
            return None
        return out


class ServerWatch:
    """/metrics before, during (every `interval` s) and after a run, read over a connection of
    its own (`endpoint`'s server): never one a request waits for under a connection cap."""

    def __init__(self, endpoint, interval: float = SCRAPE_INTERVAL_S) -> None:
        self.endpoint = endpoint
        self.client = None
        self.interval = interval
        self.before: Scrape | None = None
        self.after: Scrape | None = None
        self.during: list[Scrape] = []
        self._task: asyncio.Task | None = None

    async def read(self) -> Scrape | None:
        return Scrape.parse(await self.client.metrics_text())

    async def start(self) -> None:
        from .client import Client

        self.client = await Client(self.endpoint, limit=1).__aenter__()
        self.before = await self.read()
        if self.before is not None:
            self._task = asyncio.create_task(self._watch())
        else:
            await self.close()

    async def close(self) -> None:
        if self.client is not None:
            await self.client.__aexit__(None, None, None)
            self.client = None

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            scrape = await self.read()
            if scrape is not None:
                self.during.append(scrape)

    async def stop(self, read_after: bool = True) -> None:
        """The readings end; `read_after` False: without the last one (the app is closing)."""
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        if read_after and self.before is not None and self.client is not None:
            self.after = await self.read()
        await self.close()

    @property
    def time_scale(self) -> float:
        """`batchtui serve`'s time scale, 1 for any other server."""
        return (self.before.time_scale if self.before is not None else None) or 1.0

    def summary(self) -> dict | None:
        """What the result file keeps (`server_metrics`): vLLM's names, the counters' increase
        over the run, the gauges before, after, at peak and on average during it."""
        if self.before is None or self.after is None:
            return None
        out: dict = {"counters": {}, "gauges": {}, "scrapes_during_run": len(self.during)}
        for name in COUNTERS:
            if name in self.before.values and name in self.after.values:
                out["counters"][name] = self.after.values[name] - self.before.values[name]
        for name in GAUGES:
            seen = [s.values[name] for s in self.during if name in s.values]
            if name not in self.before.values and not seen:
                continue
            out["gauges"][name] = {"before": self.before.values.get(name), "after": self.after.values.get(name),
                                   "peak": max(seen) if seen else None,
                                   "mean": sum(seen) / len(seen) if seen else None}
        return out

    def spec_decode(self) -> dict | None:
        """vllm bench serve's speculative-decoding keys from the counters' increase (as it reads
        them from /metrics before and after), or None without drafts."""
        if self.before is None or self.after is None:
            return None
        b, a = self.before.values, self.after.values
        names = ("vllm:spec_decode_num_drafts", "vllm:spec_decode_num_draft_tokens",
                 "vllm:spec_decode_num_accepted_tokens")
        if not all(n in b and n in a for n in names):
            return None
        drafts, draft_tokens, accepted = (int(a[n] - b[n]) for n in names)
        if draft_tokens <= 0:
            return None
        per_position = []
        if drafts > 0:
            for pos in sorted(set(self.before.per_position) | set(self.after.per_position)):
                before = self.before.per_position.get(pos, 0.0)
                per_position.append((self.after.per_position.get(pos, before) - before) / drafts)
        return {"spec_decode_acceptance_rate": accepted / draft_tokens * 100,
                "spec_decode_acceptance_length": 1 + accepted / drafts if drafts > 0 else 0.0,
                "spec_decode_num_drafts": drafts, "spec_decode_draft_tokens": draft_tokens,
                "spec_decode_accepted_tokens": accepted,
                "spec_decode_per_position_acceptance_rates": per_position}
