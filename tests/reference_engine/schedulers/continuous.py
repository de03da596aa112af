"""Continuous (iteration-level) batching, following vLLM V1's scheduler step for step.

Each request carries `num_tokens` (prompt + outputs so far) and `num_computed_tokens` (tokens
with KV in the cache). Every iteration spends a token budget to close that gap: running requests
first, in admission order, then waiting ones. Reads top to bottom like vLLM's `schedule()`.
"""

from __future__ import annotations

import bisect
from collections import deque

from ..request import PREEMPTED, RUNNING, Request
from .base import Scheduler, SchedulerOutput


class WaitingQueue:
    """FCFS: a deque, preempted requests go back to the front. Priority: kept sorted by
    (priority, arrival time, submission order), preempted requests re-enter at their rank."""

    def __init__(self, policy: str) -> None:
        self.policy = policy
        self._fcfs: deque[Request] = deque()
        self._sorted: list[tuple[int, float, int, Request]] = []

    def __len__(self) -> int:
        return len(self._fcfs) if self.policy == "fcfs" else len(self._sorted)

    def __bool__(self) -> bool:
        return len(self) > 0

    def add(self, req: Request) -> None:
        if self.policy == "fcfs":
            self._fcfs.append(req)
        else:
            # `seq` is unique, so the comparison never reaches the Request itself.
            bisect.insort(self._sorted, (req.priority, req.arrival_time, req.seq, req))

    def prepend(self, req: Request) -> None:
        if self.policy == "fcfs":
            self._fcfs.appendleft(req)
        else:
            self.add(req)

    def peek(self) -> Request:
        return self._fcfs[0] if self.policy == "fcfs" else self._sorted[0][3]

    def pop(self) -> Request:
        return self._fcfs.popleft() if self.policy == "fcfs" else self._sorted.pop(0)[3]

    def __iter__(self):
        if self.policy == "fcfs":
            return iter(self._fcfs)
        return (entry[3] for entry in self._sorted)


class ContinuousScheduler(Scheduler):
    name = "continuous"

    def __init__(self, config, pool) -> None:
        super().__init__(config, pool)
        self.waiting = WaitingQueue(config.scheduling_policy)
        self.watermark_blocks = int(config.watermark * pool.num_blocks)

    def set_config(self, config) -> None:
        if config.scheduling_policy != self.waiting.policy:
            queue = WaitingQueue(config.scheduling_policy)
            for req in self.waiting:
                queue.add(req)
            self.waiting = queue
        super().set_config(config)
        self.watermark_blocks = int(config.watermark * self.pool.num_blocks)

    def add_request(self, request: Request) -> None:
        self.waiting.add(request)

    def waiting_requests(self) -> list[Request]:
        return list(self.waiting)

    @property
    def num_waiting(self) -> int:
        return len(self.waiting)

    def _preempt(self, req: Request) -> None:
        # Recompute preemption: drop the KV, keep the generated tokens, back to the queue.
        self.pool.free_request(req.request_id)
        req.status = PREEMPTED
        req.num_computed_tokens = 0
        req.num_preemptions += 1
        self.waiting.prepend(req)

    def schedule(self) -> SchedulerOutput:
        cfg = self.config
        pool = self.pool
        out = SchedulerOutput()
        scheduled_running: list[tuple[Request, int]] = []  # (request, tokens), in order
        scheduled_admitted: list[tuple[Request, int]] = []
        budget = cfg.max_num_batched_tokens
        threshold = cfg.long_prefill_token_threshold
        # The long-prefill cap only matters when a request shares the engine with others.
        if threshold > 0 and len(self.running) + len(self.waiting) <= 1:
            threshold = 0
        max_model_len = cfg.max_model_len
        work_left = False  # a request got fewer tokens than it wanted

        # First, the running requests, in admission order.
        running = self.running
        req_index = 0
        while req_index < len(running) and budget > 0:
            req = running[req_index]
            computed = req.num_computed_tokens
            n = req.num_tokens - computed  # wanted
            if 0 < threshold < n:
                n = threshold
            if n > budget:
                n = budget
                work_left = True
            if n > max_model_len - 1 - computed:
                n = max_model_len - 1 - computed
            if n <= 0:
                req_index += 1
                continue
            total = computed + n
            ok = True
            while not pool.try_allocate(req.request_id, total):
                if cfg.scheduling_policy == "priority":
                    victim = max(running, key=_victim_key)
                    running.remove(victim)
                    for i, (r, given) in enumerate(scheduled_running):
                        if r is victim:  # already scheduled this step: it gives its tokens back
                            del scheduled_running[i]
                            budget += given
                            req_index -= 1
                            break
                else:
                    victim = running.pop()
                self._preempt(victim)
                out.preempted.append(victim)
                if victim is req:
                    ok = False
                    break
            if not ok:
                break
            scheduled_running.append((req, n))
            budget -= n
            req_index += 1
        if req_index < len(running):
            work_left = True

        # Then admit waiting requests, unless this iteration had to preempt.
        stop_reason = ""
        if not out.preempted:
            while self.waiting and budget > 0:
                if len(running) >= cfg.max_num_seqs:  # ">=": a live dial may drop below the running count
                    stop_reason = "max_num_seqs"
                    break
                req = self.waiting.peek()
                n = req.num_tokens - req.num_computed_tokens
                if 0 < threshold < n:
                    n = threshold
                if not cfg.enable_chunked_prefill and n > budget:
                    stop_reason = "token_budget"
                    break
                if n > budget:
                    n = budget
                    work_left = True
                reserve = self.watermark_blocks if running else 0
                if cfg.scheduler_reserve_full_isl:
                    need = pool.blocks_needed(req.request_id, min(req.num_tokens, max_model_len))
                    if need + reserve > pool.free:
                        stop_reason = "kv_cache"
                        break
                if not pool.try_allocate(req.request_id, min(req.num_computed_tokens + n, max_model_len),
                                         reserve):
                    stop_reason = "kv_cache"
                    break
                self.waiting.pop()
                req.status = RUNNING
                running.append(req)
                out.admitted.append(req)
                scheduled_admitted.append((req, n))
                budget -= n
            if self.waiting and budget <= 0 and not stop_reason:
                stop_reason = "token_budget"

        out.scheduled = scheduled_running + scheduled_admitted

        if out.preempted or stop_reason == "kv_cache":
            out.binding_limit = "kv_cache"
        elif stop_reason:
            out.binding_limit = stop_reason
        elif work_left and budget <= 0:
            out.binding_limit = "token_budget"
        else:
            out.binding_limit = "none"
        return out


def _victim_key(req: Request) -> tuple:
    # The lowest-priority request (largest value), the latest arrival among equals.
    return (req.priority, req.arrival_time, req.seq)
