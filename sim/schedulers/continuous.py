"""Continuous (iteration-level) batching, following vLLM V1's scheduler step for step.

Each request carries `num_tokens` (prompt + outputs so far) and `num_computed_tokens` (tokens
with KV in the cache). Every iteration spends a token budget to close that gap: running requests
first, in admission order, then waiting ones. `schedule()` reads top to bottom like vLLM's.

With async scheduling (vLLM's AsyncScheduler) the engine schedules batch k before it processes
the output of batch k-1: a request that samples in a batch carries a placeholder for that token
until its output is processed (`Request.num_output_placeholders`), so the next batch can already
hold its next decode token, and a request whose in-flight tokens reach its length is not
scheduled again.

The running requests live in a `RunningSet`, which holds decoders compactly (see there); that is
what makes an iteration cost about the same whatever the batch size.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from itertools import accumulate
from typing import Any

from ..cost import CostModel
from ..frontend import Frontend
from ..kv import NO_HIT
from ..metrics import largest
from ..request import FINISHED, PREEMPTED, RUNNING, Request
from .base import (CapsUsed, Scheduler, SchedulerOutput, UpdateResult, WorkRow, is_decode, record_token, stop_reason,
                   stops)
from .queues import make_queue
from .running import RunningSet

COMPACT_ASYNC = True
"""Under async scheduling, decoders are held compactly too (False: every request explicitly, one
by one, the form the vLLM traces were first checked with; tests compare the two)."""
NUMPY_STRETCH = 1024
"""Decode stretches at least this long are timed with numpy arrays."""
MAX_STRETCH = 1 << 16


class ContinuousScheduler(Scheduler):
    name = "continuous"

    def __init__(self, config, pool, lazy_queue: bool = False, compact_async: bool | None = None,
                 speculative=None, acceptance=None) -> None:
        super().__init__(config, pool)
        self._lazy_queue = lazy_queue  # the queue may hold runs of requests in compact form
        self.waiting = make_queue(config.scheduling_policy, lazy=lazy_queue)
        self.async_scheduling = bool(getattr(config, "async_scheduling", False))
        # Speculative decoding (`sim.speculative`): K drafts a step, the KV slots reserved past
        # the scheduled tokens, and what accepts drafts (`Acceptance`, or a trace's patterns).
        # Every request is then held explicitly: a decoder's tokens per step vary.
        self.spec_k = speculative.k if speculative is not None else 0
        self.spec_lookahead = speculative.lookahead_tokens if speculative is not None else 0
        self.acceptance = acceptance
        # vLLM's spec decode counters, of the batches processed: drafts (verifications), draft
        # tokens, accepted tokens, and accepted tokens by position.
        self.spec_stats: list = [0, 0, 0, [0] * self.spec_k]
        self._spec_in_flight: dict[Request, int] = {}
        # Async scheduling with compact decoders: the batch schedule() made last, which the
        # update that follows (of the batch before it) lets decoders join.
        self._compact_async = self.async_scheduling and not self.spec_k and (
            COMPACT_ASYNC if compact_async is None else compact_async)
        self._next_out: SchedulerOutput | None = None
        self.running = RunningSet(pool, config.max_model_len, asynchronous=self._compact_async)
        self.watermark_blocks = int(config.watermark * pool.num_blocks)
        # The binding limit the waiting queue keeps giving while nothing it depends on changes
        # (None: it may admit someone next time). Lets decode stretches run in bulk.
        self._steady_binding: str | None = None
        # Prefix cache lookups of admitted requests, in tokens: queries and hits of first
        # admissions, then of resumptions after a preemption.
        self.prefix_stats: list[int] = [0, 0, 0, 0]
        self.caps = CapsUsed()  # how near the run came to its seat and token caps
        self._read_dials(config)

    def _read_dials(self, config) -> None:
        """The dials schedule() reads, as this scheduler's own typed fields (read from the
        frozen config once, not on every call: an EngineConfig is an interpreted object, its
        `token_budget` and `seats` properties calls)."""
        self._budget: int = config.token_budget
        self._threshold: int = config.long_prefill_token_threshold
        self._adaptive = config.long_prefill_token_threshold_adaptive
        self._batched_tokens: int = config.max_num_batched_tokens
        self._max_model_len: int = config.max_model_len
        self._scheduling_policy: str = config.scheduling_policy
        self._seats: int = config.seats
        self._chunked = config.enable_chunked_prefill
        self._reserve_full_isl = config.scheduler_reserve_full_isl

    def set_config(self, config) -> None:
        # The compact form was built with the old dials (max_model_len sets finish ticks).
        self.running.flush()
        self.running.max_model_len = config.max_model_len
        if config.scheduling_policy != self.waiting.policy:
            self.waiting = make_queue(config.scheduling_policy, self.waiting.items(), lazy=self._lazy_queue)
        super().set_config(config)
        self._read_dials(config)
        self.watermark_blocks = int(config.watermark * self.pool.num_blocks)
        self._steady_binding = None
        self.caps.unknown()

    def add_request(self, request) -> None:
        """Queue an arrival (a Request, or with a lazy queue a `LazyRun` of them)."""
        if self._steady_binding is not None:  # (nearly always None when a request arrives)
            self._arrival_may_change_schedule()
        self.waiting.add_request(request)

    def extend_run(self, run, accepted: bool) -> None:
        """The next request of a queued run's stream arrived (refused if not `accepted`)."""
        run.extend(accepted)
        if accepted:
            self._arrival_may_change_schedule()
            self.waiting.extended(run, accepted)

    def _arrival_may_change_schedule(self) -> None:
        # A new arrival cannot be admitted while the seats are full or the budget is spent, nor
        # (first come, first served) behind a head that does not fit: decoding stays steady.
        if not (self._steady_binding in ("max_num_seqs", "token_budget")
                or (self._steady_binding == "kv_cache" and self.waiting.policy == "fcfs")):
            self._steady_binding = None

    @property
    def num_waiting(self) -> int:
        return len(self.waiting)

    def has_work(self) -> bool:
        return bool(self.running.members or self.waiting)

    def sync(self) -> None:
        self.running.sync()

    def seated(self) -> list[Request]:
        self.running.sync()
        return list(self.running)

    def abort(self, req: Request) -> bool:
        """The client went away: take `req` out wherever it is (running or waiting), free its
        blocks and finish it with reason "abort", as vLLM's scheduler finishes an aborted
        request. False if it had already finished. With async scheduling a batch in flight may
        still hold it: its output is dropped when processed (see update_from_output)."""
        if req.status == FINISHED:
            return False
        if req in self.running:
            self.running.discard(req)
        else:
            self.waiting.remove_requests([req])
        self.pool.free_request(req.request_id)
        req.status = FINISHED
        req.finish_reason = "abort"
        self._steady_binding = None
        return True

    def _preempt(self, req: Request) -> None:
        # Recompute preemption: drop the KV, keep the generated tokens, back to the queue.
        self.running.remove(req)
        self.pool.free_request(req.request_id)
        req.status = PREEMPTED
        req.num_computed_tokens = 0
        if self.spec_k:
            # vLLM 0.33: its tokens in flight become stale output, delivered without touching
            # the counters a resumption starts from.
            req.num_drafts = 0
            req.num_output_placeholders = 0
        req.num_preemptions += 1
        self.waiting.prepend_request(req)
        self._steady_binding = None

    def _wanted(self, req: Request, threshold: int) -> int:
        """Tokens a running request asks for before the budget: 0 if its last token is already
        in flight (async scheduling), else up to its known tokens, capped by the long-prefill
        threshold."""
        computed = req.num_computed_tokens
        in_flight = req.num_output_placeholders
        if in_flight and computed + 2 - in_flight >= req.prompt_len + req.output_len:
            return 0
        n = req.prompt_len + req.num_output_tokens + in_flight + req.num_drafts - computed
        if 0 < threshold < n:
            n = threshold
        return n

    def _slots(self, req: Request, n: int) -> int:
        """The tokens whose KV slots `n` scheduled tokens need: with a drafter that keeps KV of its
        own, K lookahead slots more, up to max_model_len (vLLM's allocate_slots)."""
        total = req.num_computed_tokens + n
        if self.spec_lookahead:
            total += self.spec_lookahead
            if total > self._max_model_len:
                total = self._max_model_len
        return total

    def _take_drafts(self, req: Request, n: int, out: SchedulerOutput) -> None:
        """A running request got `n` tokens: those past its known ones are its drafts (vLLM's
        scheduled_spec_decode_tokens, cut by the budget or max_model_len); the drafts it held are
        used up (new ones come after the step)."""
        spec = n + req.num_computed_tokens - req.num_tokens - req.num_output_placeholders
        if spec > 0:
            if spec > req.num_drafts:
                spec = req.num_drafts
            if out.spec is None:
                out.spec = {}
            out.spec[req] = spec
        req.num_drafts = 0

    def schedule(self) -> SchedulerOutput:
        pool = self.pool
        running = self.running
        waiting = self.waiting
        out = SchedulerOutput()
        budget = self._budget  # (the dials typed: the compiled core compares them unboxed)
        threshold = self._threshold
        # The long-prefill cap only matters when a request shares the engine with others.
        budget_given = budget
        eligible = len(running.members) + len(waiting)
        if threshold > 0 and eligible <= 1:
            threshold = 0
        elif threshold > 0 and self._adaptive:
            # vLLM 0.33's adaptive cap: never below a fair share of the token budget.
            threshold = max(threshold, self._batched_tokens // eligible)
        max_model_len = self._max_model_len
        policy = self._scheduling_policy
        work_left = False  # a request got fewer tokens than it wanted

        # First, the running requests, in admission order. If all of them fit the budget and the
        # free blocks, each simply gets what it wants (the walk below would give the same): the
        # compact decoders one token each, the others their chunk. The plan: each explicit one
        # with its tokens, and the new blocks they all need (None if the budget falls short, or a
        # request waits this iteration).
        if self._compact_async and running.explicit:
            self._join_first_decoders()
        decoders, decoder_blocks, decoder_context = running.coming_batch() if running.decoders else (0, 0, 0)
        blocks = decoder_blocks
        plan: list[tuple[Request, int]] | None
        plan = []
        demand = decoders
        for req in running.explicit:
            n = self._wanted(req, threshold)
            if n > max_model_len - 1 - req.num_computed_tokens:
                n = max_model_len - 1 - req.num_computed_tokens
            if n <= 0:
                continue  # (its last token is in flight: the walk would skip it too)
            demand += n
            blocks += pool.blocks_needed(req.request_id, self._slots(req, n))
            plan.append((req, n))
        caps = self.caps
        if demand > caps.peak_tokens:
            caps.peak_tokens = demand
        if demand > budget:
            plan = None
            caps.budget_bound = True
        if plan is not None and blocks > pool.free and policy == "fcfs":
            plan, blocks = self._preempt_latest(plan, blocks, out)
            decoders, decoder_blocks, decoder_context = running.coming_batch() if running.decoders else (0, 0, 0)
        spec_k = self.spec_k
        if plan is not None and blocks <= pool.free:
            if decoders:
                running.take_decode_blocks(decoder_blocks)
                out.num_compact = decoders
                out.compact_context = decoder_context
                budget -= decoders
            caching = pool.caching
            for req, n in plan:
                pool.try_allocate(req.request_id, self._slots(req, n))
                if caching:
                    pool.cache_blocks(req, req.num_computed_tokens + n)
                if spec_k and req.num_drafts:
                    self._take_drafts(req, n, out)
                out.scheduled.append((req, n, req.num_computed_tokens, False))
                budget -= n
        else:
            # One by one, preempting when blocks run short.
            order = running.flush()
            scheduled = out.scheduled
            req_index = 0
            while req_index < len(order) and budget > 0:
                req = order[req_index]
                computed = req.num_computed_tokens
                n = self._wanted(req, threshold)
                if n > budget:
                    n = budget
                    work_left = caps.budget_bound = True
                if n > max_model_len - 1 - computed:
                    n = max_model_len - 1 - computed
                if n <= 0:
                    req_index += 1
                    continue
                ok = True
                while not pool.try_allocate(req.request_id, self._slots(req, n)):
                    if policy == "priority":
                        victim = max(order, key=_victim_key)
                        order.remove(victim)
                        for i, work in enumerate(scheduled):
                            if work[0] is victim:  # already scheduled this step: it gives its tokens back
                                del scheduled[i]
                                budget += work[1]
                                if out.spec:
                                    out.spec.pop(victim, None)
                                req_index -= 1
                                break
                    else:
                        victim = order.pop()
                    self._preempt(victim)
                    out.preempted.append(victim)
                    if victim is req:
                        ok = False
                        break
                if not ok:
                    if policy == "priority":
                        # It was the lowest priority and preempted itself: the requests after it
                        # rank higher and may fit in what it freed (vLLM 0.33 goes on with them).
                        continue
                    break
                if pool.caching:
                    pool.cache_blocks(req, computed + n)
                if spec_k and req.num_drafts:
                    self._take_drafts(req, n, out)
                scheduled.append((req, n, computed, False))
                budget -= n
                req_index += 1
            if req_index < len(order):
                work_left = True

        # Then admit waiting requests, unless this iteration had to preempt. With speculative
        # decoding, a request admitted with one token to compute, while no running request
        # scheduled is prefilling and some are (or it has computed tokens: a prefix hit, a
        # resumption), is padded to 1 + K rows so the batch stays a uniform decode for vLLM's CUDA
        # graph: if the budget cannot take the padding it is not admitted; near max_model_len it
        # goes unpadded.
        stop_reason = ""
        pad = spec_k and not any(work[0].prefill_chunk for work in out.scheduled)
        running_scheduled = bool(out.scheduled)
        if not out.preempted and waiting:
            members = running.members
            max_num_seqs = self._seats
            caching = pool.caching
            chunked = self._chunked
            reserve_full_isl = self._reserve_full_isl
            scheduled = out.scheduled
            while waiting and budget > 0:
                if len(members) >= max_num_seqs:  # ">=": a live dial may drop below the running count
                    stop_reason = "max_num_seqs"
                    break
                req = waiting.peek_request()
                computed = req.num_computed_tokens
                num_tokens = req.num_tokens
                hit = NO_HIT
                if caching and not computed:
                    hit = pool.find_cached(req)  # (a preempted request looks again)
                    computed = hit.num_blocks * pool.block_size
                n = num_tokens - computed
                padded = False
                if pad and n == 1 and (running_scheduled or computed) and computed + spec_k + 2 <= max_model_len:
                    if 1 + spec_k > budget:
                        stop_reason = "token_budget"
                        break
                    n = 1 + spec_k
                    padded = True
                if 0 < threshold < n:
                    n = threshold
                if n > budget:
                    if not chunked:
                        stop_reason = "token_budget"
                        break
                    n = budget
                    work_left = caps.budget_bound = True
                reserve = self.watermark_blocks if members else 0
                if reserve_full_isl:
                    # Hit blocks cost nothing, unless they are evictable: touching them takes them
                    # out of the free queue.
                    need = pool.blocks_needed(req.request_id, num_tokens if num_tokens < max_model_len
                                              else max_model_len) - hit.num_blocks + hit.evictable
                    if need + reserve > pool.free:
                        stop_reason = "kv_cache"
                        break
                total = computed + n + self.spec_lookahead
                if total > max_model_len:
                    total = max_model_len
                if hit is NO_HIT:
                    if not pool.try_allocate(req.request_id, total, reserve):
                        stop_reason = "kv_cache"
                        break
                elif not pool.admit(req, hit, total, reserve):
                    stop_reason = "kv_cache"
                    break
                if caching:
                    pool.cache_blocks(req, computed + n)
                    req.num_computed_tokens = computed
                    # The lookup counted as vLLM's PrefixCacheStats counts it: queries and hits in
                    # tokens, first admissions and resumptions apart.
                    stats = self.prefix_stats
                    if req.num_preemptions:
                        stats[2] += num_tokens
                        stats[3] += computed
                    else:
                        stats[0] += num_tokens
                        stats[1] += computed
                        req.num_cached_tokens = computed
                waiting.pop_request()
                req.status = RUNNING
                if req.first_scheduled_time is None:  # (vLLM's scheduled_ts: its first scheduling)
                    req.first_scheduled_time = self.now
                running.admit(req)
                out.admitted.append(req)
                scheduled.append((req, n, computed, False))
                budget -= n
                if padded:
                    if out.spec is None:
                        out.spec = {}
                        out.spec_padding = []
                    elif out.spec_padding is None:
                        out.spec_padding = []
                    out.spec[req] = spec_k
                    out.spec_padding.append(req)
            if waiting and budget <= 0 and not stop_reason:
                stop_reason = "token_budget"

        if stop_reason == "max_num_seqs":
            caps.seats_bound = True
        elif stop_reason == "token_budget" or (budget <= 0 and (work_left or waiting)):
            caps.budget_bound = True
        if len(running.members) > caps.peak_running:
            caps.peak_running = len(running.members)
        if budget_given - budget > caps.peak_tokens:
            caps.peak_tokens = budget_given - budget
        if out.preempted or stop_reason == "kv_cache":
            out.binding_limit = "kv_cache"
        elif stop_reason:
            out.binding_limit = stop_reason
        elif work_left and budget <= 0:
            out.binding_limit = "token_budget"
        else:
            out.binding_limit = "none"

        # As vLLM's `_update_after_schedule`: the scheduled tokens count as computed at once, and
        # a request whose known tokens are then all computed samples one in this batch (a
        # placeholder until its output is processed).
        scheduled = out.scheduled
        if spec_k:
            self._after_schedule_spec(out)
        else:
            for i, (req, n, before, _) in enumerate(scheduled):
                in_flight = req.num_output_placeholders
                if n == 1 and is_decode(req, n, before, in_flight):
                    scheduled[i] = (req, n, before, True)
                computed = before + n
                req.num_computed_tokens = computed
                if computed >= req.prompt_len + req.num_output_tokens + in_flight:
                    req.num_output_placeholders = in_flight + 1
                    out.sampling.append(req)
        steady = waiting and not scheduled and not out.preempted
        self._steady_binding = out.binding_limit if steady else None
        if self._compact_async:
            self._next_out = out
        return out

    def _join_first_decoders(self) -> None:
        """Async: a request whose whole prompt is in the batch in flight, sampling its first
        token, decodes from the batch made now on, one token at a time: held compactly from now
        (`RunningSet.join_first`) instead of joining once that token is processed (see
        update_from_output), where it would join with its next token scheduled as a plain decode
        and it steady. (A walk or a preemption that follows makes it explicit again.)"""
        # (A first look at the requests sampling their first token, those `_join_first` can join:
        # a method call for each explicit request would cost a walk's schedule() microseconds.)
        for req in [r for r in self.running.explicit if r.num_output_placeholders == 1 and not r.num_output_tokens]:
            self._join_first(req)

    def _join_first(self, req: Request) -> bool:
        """`_join_first_decoders` for one explicit request: whether it joined."""
        if (req.num_output_placeholders == 1 and not req.num_output_tokens
                and req.num_computed_tokens == req.prompt_len and req.status == RUNNING
                and stop_reason(req, 1, self._max_model_len) is None and self.running.steady(req, 1)):
            self.running.join_first(req)
            return True
        return False

    def _took_first_token(self, req: Request, end: float, first_tokens: list[Request]) -> None:
        """A decoder that joined with its first decode (`_join_first_decoders`) got its first
        token at `end`, its prefill row's in the batch processed."""
        self.running.took_first_token(req)
        record_token(req, end, first_tokens)

    def _after_schedule_spec(self, out: SchedulerOutput) -> None:
        """`schedule()`'s last part with speculative decoding (vLLM's `_update_after_schedule`, and
        the runner): the scheduled tokens count as computed, a request whose known tokens are then
        all computed samples (with its drafts verified; under async scheduling its next K drafts
        are placeholders from now on), and the runner's verdict on each verification is drawn
        now. A row of one token plus drafts is a decode (priced as one)."""
        scheduled = out.scheduled
        spec = out.spec or {}
        padding = out.spec_padding or ()
        asynchronous = self.async_scheduling
        k = self.spec_k
        verifying: list[Request] = []
        drafts: list[int] = []
        for i, (req, n, before, _) in enumerate(scheduled):
            in_flight = req.num_output_placeholders
            drafted = spec.get(req, 0)
            if n - drafted == 1 and is_decode(req, 1, before, in_flight):
                scheduled[i] = (req, n, before, True)
            computed = before + n
            req.num_computed_tokens = computed
            if computed >= req.prompt_len + req.num_output_tokens + in_flight:
                req.num_output_placeholders = in_flight + 1 + (drafted if asynchronous else 0)
                req.prefill_chunk = False
                if asynchronous:
                    req.num_drafts = k  # placeholders: the runner fills in the drafts it proposes
                out.sampling.append(req)
                if drafted:
                    req.spec_scheduled += drafted
                    if req not in padding:
                        verifying.append(req)
                        drafts.append(drafted)
            else:
                req.prefill_chunk = True
        # The tokens of each request the batch holds, until it is processed (vLLM's
        # num_in_flight_tokens, which async scheduling's update caches blocks short of).
        self._spec_in_flight = {work[0]: work[1] for work in scheduled} if asynchronous else {}
        if spec:
            accepted = dict.fromkeys(padding, 0)
            if verifying:
                for req, a in zip(verifying, self.acceptance.accepted(verifying, drafts, asynchronous)):
                    accepted[req] = a
                    req.spec_verifications += 1
                    req.spec_accepted += a
            out.accepted = accepted
        for req in out.sampling:
            req.tokens_sampled += 1 + (accepted.get(req, 0) if spec else 0)

    def _preempt_latest(self, plan: list[tuple[Request, int]], blocks: int,
                        out: SchedulerOutput) -> tuple[list[tuple[Request, int]], int]:
        """FCFS, blocks short, budget enough: the walk would preempt the most recently admitted
        requests until the others fit (the one whose allocation failed being the last victim if
        it comes to that). The victims are the shortest tail of the admission order whose blocks,
        freed, and whose needs, dropped, make the rest fit: take them here without walking."""
        running = self.running
        pool = self.pool
        wanted = {id(req): n for req, n in plan}
        while blocks > pool.free:
            victim = running.last()
            if victim in running.decoders:
                running.make_explicit(victim)
                # (async: a decoder whose last token is in flight was not in the coming batch)
                n = 1 if not victim.num_output_placeholders or self._wanted(victim, 0) > 0 \
                    and victim.num_computed_tokens < self._max_model_len - 1 else 0
            else:
                n = wanted.pop(id(victim), 0)  # (0: its last token is in flight, it wants none)
            blocks -= pool.blocks_needed(victim.request_id, self._slots(victim, n))
            self._preempt(victim)
            out.preempted.append(victim)
        if len(wanted) < len(plan):
            plan = [(req, n) for req, n in plan if id(req) in wanted]
        return plan, blocks

    def tokens_out(self, output: SchedulerOutput) -> int:
        # Every request that samples in a batch is listed in `sampling` when it is scheduled.
        return output.num_compact + len(output.sampling)

    def update_from_output(self, output: SchedulerOutput, start: float = 0.0,
                           end: float = 0.0) -> UpdateResult:
        """The batch ran from `start` to `end`: every request that sampled in it gets its token,
        those that reached their length finish, and new decoders join the compact form."""
        if self.spec_k:
            return self._update_spec(output, end)
        running = self.running
        result = UpdateResult()
        joinable = None
        unjoined = False  # decoders back in explicit form, their tokens last in `sampling`
        if self._compact_async:
            if running.left:
                self._unjoin(output, running.take_left())
                unjoined = True
            nxt = self._next_out
            if nxt is not None and nxt is not output and nxt.scheduled and output.sampling:
                joinable = {id(work[0]) for work in nxt.scheduled if work[3]}
        compact = output.num_compact
        fresh = running.fresh  # (decoders whose first token is this batch's: see _join_first_decoders)
        ended = running.advance(1, end, end - start) if compact or fresh else ()
        output.compact_finished = ended
        max_model_len = self._max_model_len
        gap_order = []  # (admission number, gap, requests) for the ITL log, in scheduled order
        finished: list[tuple[float, Request]] = []  # (admission number, or inf out of the running set; request)
        stopped_waiting: list[Request] = []
        for req in output.sampling:
            if req.status == FINISHED:  # aborted while its batch was in flight
                req.num_output_placeholders -= 1
                continue
            if fresh and req in fresh:  # a compact decoder now, its first token this batch's row's
                self._took_first_token(req, end, result.first_tokens)
                output.joined.append(req)
                continue
            outputs = req.num_output_tokens + 1
            req.num_output_tokens = outputs
            req.num_output_placeholders -= 1
            gap = record_token(req, end, result.first_tokens)
            if gap is not None:
                gap_order.append((running.members.get(req, math.inf), gap, 1))
            if stops(req, outputs, max_model_len):
                pass
            elif req.status == RUNNING and not self.async_scheduling and running.steady(req):
                running.join(req)
                output.joined.append(req)
                continue
            elif joinable is not None and req.status == RUNNING and id(req) in joinable and running.steady(req):
                # Async: its next token, a plain decode, is in the batch scheduled just now: it
                # is held compactly from that batch on.
                running.join(req)
                output.joined.append(req)
                continue
            else:
                continue
            self._stopped(req, finished, stopped_waiting)
        if ended:
            finished.extend(ended)
        if (ended or unjoined) and len(finished) > 1:
            finished.sort(key=_first)  # (admission order, as the explicit form finishes them)
        if stopped_waiting:
            self.waiting.remove_requests(stopped_waiting)
        output.finished = finished
        for _, req in finished:
            req.status = FINISHED
            self.pool.free_request(req.request_id)
            result.finished.append(req)
        # ITL gaps in scheduled order (booked per distinct gap, in order of first occurrence).
        if gap_order:
            if compact:  # the compact decoders' gap takes the place of the first of them
                first = min(running.first_decoder_number(exclude=output.joined),
                            min((n for n, _ in ended), default=math.inf))
                gap_order.append((first, end - start, compact))
                gap_order.sort(key=_first)
            elif unjoined:
                gap_order.sort(key=_first)
            gaps: dict[float, int] = {}
            for _, gap, count in gap_order:
                gaps[gap] = gaps.get(gap, 0) + count
            result.gaps = list(gaps.items())
        elif compact:
            result.gaps = [(end - start, compact)]
        result.num_emitted = compact + len(output.sampling)
        result.num_running = len(running.members)
        result.num_waiting = len(self.waiting)
        if output.joined and joinable is not None:
            nxt = self._next_out
            assert nxt is not None  # (joinable is read from it)
            self._move_to_compact(nxt, output.joined)
        if finished or output.joined:
            self._steady_binding = None
        return result

    def _update_spec(self, output: SchedulerOutput, end: float) -> UpdateResult:
        """`update_from_output` with speculative decoding (every request held explicitly), as
        vLLM's: a verification's rejected drafts roll back `num_computed_tokens` (their KV blocks
        stay held); the request gets 1 + accepted tokens, trimmed at its length or max_model_len
        (the trimmed ones rolled back too); an output for a request that finished meanwhile is
        dropped. Synchronously the drafter then proposes the next drafts: K, or fewer near
        max_model_len (the cap of vLLM's n-gram proposer), or none when it finds no match."""
        running = self.running
        result = UpdateResult()
        max_model_len = self._max_model_len
        asynchronous = self.async_scheduling
        spec = output.spec or {}
        accepted = output.accepted or {}
        stats = self.spec_stats
        per_position = stats[3]
        counted = stats[0], stats[1], stats[2]
        delivered: dict[Request, int] = {}
        gaps: dict[float, int] = {}
        finished: list[tuple[float, Request]] = []  # (admission number, or inf out of the running set; request)
        stopped_waiting: list[Request] = []
        caching = self.pool.caching
        in_flight = self._spec_in_flight
        for req in output.sampling:
            if req.status == FINISHED:  # finished or aborted while its batch was in flight
                continue
            stale = req.status != RUNNING  # preempted since: delivered, its counters left alone
            drafted = spec.get(req, 0)
            got = 1
            if drafted:
                took = accepted.get(req, 0)
                got += took
                rejected = drafted - took
                if not stale:
                    if req.num_computed_tokens > 0:
                        req.num_computed_tokens -= rejected
                    if asynchronous and req.num_output_placeholders > 0:
                        req.num_output_placeholders -= rejected
                stats[0] += 1  # (vLLM counts a padded row as a draft too, none accepted)
                stats[1] += drafted
                stats[2] += took
                for i in range(took):
                    per_position[i] += 1
            outputs = req.num_output_tokens
            room = req.output_len - outputs
            if room > max_model_len - req.prompt_len - outputs:
                room = max_model_len - req.prompt_len - outputs
            sampled = got
            if got > room:  # a stop trims the rest, and they are not computed
                if not stale:
                    req.num_computed_tokens -= got - room
                got = room
            outputs += got
            req.num_output_tokens = outputs
            if not asynchronous:
                req.num_output_placeholders -= 1
            elif not stale and req.num_output_placeholders > 0:
                req.num_output_placeholders -= sampled
            delivered[req] = got
            if caching and not stale:
                # Blocks whose tokens are now known and not in flight get their hashes.
                self.pool.cache_blocks(req, req.num_computed_tokens - in_flight.get(req, 0))
            gap = record_token(req, end, result.first_tokens)
            if gap is not None:
                gaps[gap] = gaps.get(gap, 0) + 1
            if stops(req, outputs, max_model_len):
                self._stopped(req, finished, stopped_waiting)
        if stopped_waiting:
            self.waiting.remove_requests(stopped_waiting)
        output.finished = finished
        output.delivered = delivered
        for _, req in finished:
            req.status = FINISHED
            self.pool.free_request(req.request_id)
            result.finished.append(req)
        if not asynchronous:
            k = self.spec_k
            acceptance = self.acceptance
            for req in output.sampling:
                if req.status == RUNNING:
                    room = max_model_len - req.num_tokens
                    req.num_drafts = (k if k <= room else max(room, 0)) if acceptance.proposes(req) else 0
        result.gaps = list(gaps.items())
        result.num_emitted = sum(delivered.values())
        result.num_running = len(running.members)
        result.num_waiting = len(self.waiting)
        result.spec = (stats[0] - counted[0], stats[1] - counted[1], stats[2] - counted[2])
        if finished:
            self._steady_binding = None
        return result

    def _stopped(self, req: Request, finished: list, stopped_waiting: list) -> None:
        """`req` got its last token: out of the running set (with its admission number), or, if it
        was preempted while its tokens were in flight, out of the queue."""
        if req.status == RUNNING:
            finished.append((self.running.remove(req), req))
        else:
            stopped_waiting.append(req)
            finished.append((math.inf, req))

    @staticmethod
    def _move_to_compact(out: SchedulerOutput, joined: list[Request]) -> None:
        """Async: the decoders that just joined the compact form run their token of `out` (the
        batch in flight) as compact decoders instead of explicitly (the same tokens and cost)."""
        ids = set(map(id, joined))
        kept = []
        for work in out.scheduled:
            if id(work[0]) in ids:
                out.num_compact += 1
                out.compact_context += work[2] + 1
            else:
                kept.append(work)
        out.scheduled = kept
        out.sampling = [req for req in out.sampling if id(req) not in ids]

    @staticmethod
    def _unjoin(out: SchedulerOutput, left: list[tuple[Request, int]]) -> None:
        """Async: decoders that became explicit while `out` ran (a walk, a preemption, new dials,
        an abort) have their token of it processed explicitly."""
        for req, before in left:
            out.num_compact -= 1
            out.compact_context -= before + 1
            out.scheduled.append((req, 1, before, True))
            out.sampling.append(req)

    def prefix_hits(self, output: SchedulerOutput) -> dict[str, int]:
        """The tokens each request admitted by this schedule() took from the prefix cache (vLLM's
        prefix hit at admission; {} without caching): where its computation started."""
        if not self.pool.caching or not output.admitted:
            return {}
        admitted = set(map(id, output.admitted))
        return {req.request_id: before for req, _, before, _ in output.scheduled if id(req) in admitted}

    def describe(self, output: SchedulerOutput) -> list[WorkRow]:
        rows = super().describe(output)
        if not output.num_compact:
            return rows
        # The compact decoders of the batch: those still decoding (but not the ones that only
        # joined with it) and those that finished with it, each with its admission number.
        running = self.running
        joined = set(map(id, output.joined))
        decoders = running.decoders
        numbered: list[tuple[float, WorkRow]] = [(n, WorkRow(r.request_id, 1, False, running.context(r), True))
                    for r, n in running.members.items() if r in decoders and id(r) not in joined]
        numbered += [(n, WorkRow(r.request_id, 1, False, r.num_computed_tokens - r.num_output_placeholders, True))
                     for n, r in output.compact_finished]
        for (req, _, _, _), row in zip(output.scheduled, rows):
            number: float | None = running.members.get(req)
            if number is None:
                number = next((n for n, r in output.finished if r is req), math.inf)
            numbered.append((number, row))
        numbered.sort(key=_first)
        return [row for _, row in numbered]

    # -- steady decoding in bulk
    def decode_stretch(self, cost: CostModel, start: float, limit: float, max_iterations: int,
                       until_finish: bool = False, frontend: Frontend | None = None) -> list[tuple] | tuple:
        """Run alike decode iterations in bulk, as many as run before anything changes: every
        running request a compact decoder getting one token, nobody admitted (the queue empty or
        blocked the same way as last time), enough free blocks. Iterations are timed with the
        cost model's decode times and added up in order, and stop before the first that would
        start at or after `limit` (the next arrival or the caller's horizon). A stretch has one
        batch size and ends at the latest with the iteration in which decoders finish (they are
        retired); with nobody waiting, the next stretch follows at once, unless `until_finish` (the
        client listens for finishes: a finish may send a request, a conversation's next turn or
        one a concurrency cap held back, which must be admitted at the very next iteration). The
        stretches run, in order, as `DECODE_STRETCH_FIELDS` tuples (none if no such iteration is
        next). `frontend` (the API server in front, or None: tokens reach their clients when
        sampled; its `outputs`) gives when each iteration's tokens reach their clients: the decoders' token times
        and gaps."""
        running = self.running
        if (self._steady_binding is None and self.waiting) or running.explicit or not running.decoders \
                or max_iterations <= 0 or self.async_scheduling:
            return ()
        pool = self.pool
        budget = self._budget
        block_size = running.block_size
        stretches: list[tuple] = []
        while True:
            batch = len(running.decoders)
            if batch > budget:
                break
            k = running.next_finish - running.tick
            if k > max_iterations:
                k = max_iterations
            context = running.decode_context()
            if k >= NUMPY_STRETCH:
                if k > MAX_STRETCH:
                    k = MAX_STRETCH
                if limit != math.inf:
                    # Iteration times grow with the context: the first bounds how many start before the limit.
                    k = min(k, int((limit - start) / cost.decode_time(batch, context)) + 2)
            free = pool.free
            # A decoder needs a block at most once in `block_size` ticks: the exact count is
            # needed only when that bound does not fit (and then the first tick that does not
            # fit is found).
            enough_blocks = batch * (k // block_size + 1) <= free or running.decode_blocks_over(k) <= free
            ends: Any  # (a numpy array or a list, as the stretch is long or not)
            gaps: Any
            if k >= NUMPY_STRETCH:
                import numpy as np

                times = cost.decode_times(batch, context + batch * np.arange(k, dtype=np.int64))
                ends = np.cumsum(np.concatenate(((start,), times)))  # adds left to right, as a loop would
                count = int(np.searchsorted(ends[:k], limit, side="left"))
                if not enough_blocks:
                    taken = np.cumsum(np.asarray(running.crossing_schedule(k), dtype=np.int64))
                    count = min(count, int(np.searchsorted(taken, free, side="right")))
                if count == 0:
                    break
                gaps = ends[1:count + 1] - ends[:count]
                ends = ends[1:count + 1]
                end = float(ends[-1])
                last_start = float(ends[-2]) if count > 1 else start
                top = float(gaps.max())  # (Python's max would walk the array element by element)
            else:
                # The iterations that start before the limit.
                ends, gaps = cost.decode_ends(batch, context, start, k, limit)
                count = len(ends)
                if not enough_blocks:
                    count = min(count, bisect_right(list(accumulate(running.crossing_schedule(count))), free))
                    del ends[count:]
                    del gaps[count:]
                if count == 0:
                    break
                end = ends[-1]
                last_start = ends[-2] if count > 1 else start
                top = max(gaps)
            binding = self._steady_binding or "none"
            last_context = context + batch * (count - 1)
            seen, itl, seen_end, top = _retimed(frontend, ends, batch, end, top)
            if running.tick + count != running.next_finish:  # nobody finishes in it
                running.advance(count, seen_end, top)
                used = pool.usable - pool.free
                stretches.append((start, end, last_start, ends, gaps, batch, last_context, used, binding, (), used,
                                  batch, len(self.waiting), seen, itl))
                break
            # Decoders finish with the last iteration: the blocks in use before it are the
            # stretch's peak (the last takes its own, then the finished give theirs back).
            last_blocks = running.decode_blocks_needed(count - 1)
            ended = running.advance(count, seen_end, top)
            used = pool.usable - pool.free - last_blocks
            for _, req in ended:
                req.status = FINISHED
                pool.free_request(req.request_id)
            stretches.append((start, end, last_start, ends, gaps, batch, last_context, used, binding, ended,
                              pool.usable - pool.free, len(running.members), len(self.waiting), seen, itl))
            self._steady_binding = None
            max_iterations -= count
            if until_finish or self.waiting or not running.decoders or max_iterations <= 0:
                break
            start = end
        return stretches


    def async_stretch(self, cost: CostModel, flight: tuple, limit: float, max_calls: int,
                      until_finish: bool = False, frontend: Frontend | None = None) -> tuple:
        """Async scheduling's `decode_stretch`: engine calls run in bulk, each scheduling the next
        batch of decoders while the one in flight runs, then processing the one in flight, with
        the same results as one call at a time. `flight` is the engine's batch in flight, (output,
        start, end, cost): it must hold only compact decoders, all of them. A call runs if the
        batch it processes started before `limit` (the next arrival or the caller's horizon; the
        engine's clock is at that start when the call begins). Calls stop where anything could
        change: before blocks run short, at `max_calls`, before the first call whose batch is
        smaller than the last if requests wait for the token budget (the budget a finishing decoder
        leaves may admit one; seats and blocks are freed only once its batch is processed), and
        after a call that retires decoders if requests wait or `until_finish` (the client listens).
        Each call leaves a batch in flight, as one call does: the last one is returned with the
        calls run, as (stretches as `DECODE_STRETCH_FIELDS` tuples of the batches processed, the
        batch now in flight as `flight` is, or None if nothing is); () if no call can run so.
        `frontend` as in `decode_stretch`, for the batches processed.

        The batch in flight may also hold one request's whole prompt besides every decoder (the
        call after its admission), if nobody waits, no decoder finishes with it and the batch
        after it starts before `limit`: the request joins the decoders as `schedule()` would have
        it join (`_join_first_decoders`), and the first call, its first decode call, processes its
        first token with the decoders' tokens. That batch is given apart, as
        `FIRST_DECODE_FIELDS` (the request's first token is no inter-token gap)."""
        out: SchedulerOutput = flight[0]
        start: float = flight[1]
        end: float = flight[2]
        running = self.running
        decoders = running.decoders
        waiting = bool(self.waiting)
        if (not self._compact_async or max_calls <= 0 or running.left or out.preempted
                or out.num_compact != len(decoders)):
            return ()
        fresh = None  # the request whose first token the batch in flight samples
        if out.scheduled:
            # (A decoder finishing with the batch in flight, or the next batch starting at the limit:
            # one call at a time.)
            if (end >= limit or waiting or len(out.sampling) != 1 or len(out.scheduled) != 1
                    or running.next_finish - running.tick < 2):
                return ()
            # It joins as schedule() would have it join first (`_join_first_decoders`).
            fresh = out.sampling[0]
            if len(running.explicit) != 1 or fresh not in running.explicit or not self._join_first(fresh):
                return ()
        elif (start >= limit or running.explicit or not decoders or out.admitted
                or (waiting and self._steady_binding is None)):
            return ()
        pool = self.pool
        budget: int = self._batched_tokens
        block_size = running.block_size
        binding = self._steady_binding or "none"
        first_binding = out.binding_limit
        batch = len(decoders)  # (with `fresh`, one more than the batch in flight's)
        context = out.compact_context  # of the batch in flight
        stretches: list[tuple] = []
        in_flight: tuple | None = flight
        while True:
            tick = running.tick
            if batch > budget:
                break
            to_finish = running.next_finish - tick  # the call that processes the finishing batch
            # (With requests waiting, the finishing call's smaller batch leaves budget that may admit
            # one when the budget was what held them back; seats and blocks are freed only after.)
            calls = to_finish - 1 if waiting and binding == "token_budget" else to_finish
            if calls > max_calls:
                calls = max_calls
            if calls > MAX_STRETCH:
                calls = MAX_STRETCH
            if calls <= 0:
                break
            # Batches scheduled by the calls before the finishing one: all decoders, one tick on.
            pure = calls if calls < to_finish else to_finish - 1
            next_context = context + batch if fresh is None else running.coming_batch()[2]  # the first of them
            ends: Any  # (a numpy array or a list, as the stretch is long or not)
            gaps: Any
            if pure >= NUMPY_STRETCH:
                import numpy as np

                k = pure
                if limit != math.inf:
                    # Iteration times grow with the context: the first bounds how many start before the limit.
                    k = min(k, int((limit - end) / cost.decode_time(batch, next_context)) + 2)
                times = cost.decode_times(batch, next_context + batch * np.arange(k, dtype=np.int64))
                timeline = np.cumsum(np.concatenate(((end,), times)))  # adds left to right, as a loop would
                priced = int(np.searchsorted(timeline[:k], limit, side="left"))
                ends = timeline[1:priced + 1]
                gaps = ends - timeline[:priced]
            else:
                ends, gaps = cost.decode_ends(batch, next_context, end, pure, limit)
                priced = len(ends)
            if priced < pure:
                calls = priced + 1  # the batch of the last call starts at or after the limit
            # Blocks: each call takes those of the batch it schedules.
            shrinks = calls == to_finish
            last_need = 0
            if shrinks:
                finishing = running.finishing(tick + to_finish)
                last_need = running.decode_blocks_needed(to_finish) - sum(
                    1 for _, final in finishing if (final - 1) % block_size == 0)
            free = pool.free
            if batch * (calls // block_size + 1) <= free:  # (a decoder needs a block once in block_size ticks)
                taken = running.decode_blocks_over(calls - shrinks, ahead=1) + last_need if calls > shrinks \
                    else last_need
            else:
                needs = running.crossing_schedule(calls - shrinks, ahead=1) if calls > shrinks else []
                if shrinks:
                    needs.append(last_need)
                taken = 0
                fit = 0
                for need in needs:
                    if taken + need > free:
                        break
                    taken += need
                    fit += 1
                if fit < calls:
                    calls = fit
                    if shrinks:
                        shrinks = False
                        last_need = 0
                    if calls <= 0:
                        break
            # The batch the last call schedules (now in flight after it).
            # The batches processed: the one in flight, then those the calls before the last scheduled.
            if ends.__class__ is list:
                processed_ends, processed_gaps, top = _processed(end, end - start, ends, gaps, calls - 1)
            else:
                processed_ends = timeline[:calls]
                processed_gaps = np.concatenate(((end - start,), gaps[:calls - 1]))
                top = float(processed_gaps.max())
            last_start = float(processed_ends[-2]) if calls > 1 else start
            start_next = float(processed_ends[-1])
            seen, itl, seen_end, top = _retimed(frontend, processed_ends, batch, start_next, top)
            if shrinks:
                next_batch = batch - len(finishing)
                scheduled_context = next_context + batch * (calls - 1) - sum(final for _, final in finishing)
            else:
                next_batch = batch
                scheduled_context = next_context + batch * (calls - 1)
            if not shrinks and calls - 1 < len(ends):
                end_next = float(ends[calls - 1])
            elif next_batch:
                end_next = cost.decode_ends(next_batch, scheduled_context, start_next, 1)[0][0]
            else:
                end_next = start_next
            last_context = next_context + batch * (calls - 2)  # (of the last batch processed)
            pool.take(taken)
            running.flights += calls - (shrinks and not next_batch)
            peak = pool.usable - pool.free
            if fresh is not None:
                # Its first token is the first batch's: processed apart (its gap is no ITL).
                first_end = float(processed_ends[0] if seen is None else seen[0])
                first_gap = float(processed_gaps[0] if itl is None else itl[0])
                running.advance(1, first_end, first_gap)
                self._took_first_token(fresh, first_end, [])
                out.joined.append(fresh)  # (as update_from_output marks it, for the batch's report)
                first_running = len(running.members)
                if calls > 1:
                    rest = processed_gaps[1:] if itl is None else itl[1:]
                    top = largest(rest) if rest.__class__ is list else float(rest.max())
                self._steady_binding = None
            parts: list[tuple]
            head: tuple
            if not shrinks:
                if fresh is None or calls > 1:
                    running.advance(calls - (fresh is not None), seen_end, top)
                parts = [(start, start_next, last_start, processed_ends, processed_gaps, batch, last_context, peak,
                          binding, (), peak, batch, len(self.waiting), seen, itl)]
            else:
                used = peak - last_need  # before the last call took its blocks
                ended = running.advance(calls - (fresh is not None), seen_end, top)
                for _, req in ended:
                    req.status = FINISHED
                    pool.free_request(req.request_id)
                parts = [(start, start_next, last_start, processed_ends, processed_gaps, batch, last_context, used,
                          binding, ended, pool.usable - pool.free, len(running.members), len(self.waiting), seen,
                          itl)]
                self._steady_binding = None
            if fresh is not None:
                whole = list(parts[0])
                head = (fresh, start, end, whole[7], first_binding, batch, first_end, first_gap, out, flight[3],
                        first_running, whole[12])
                parts = [head, _after_first(whole, processed_ends, processed_gaps, seen, itl)] if calls > 1 else [head]
                first_binding = binding
                fresh = None
            elif first_binding != binding:
                # The batch in flight was scheduled apart, with another binding limit: booked apart.
                whole = list(parts[0])
                if calls == 1:
                    whole[8] = first_binding
                    parts = [tuple(whole)]
                else:
                    head = (start, end, start, [end], [end - start], batch, context, whole[7], first_binding, (),
                            whole[7], batch, whole[12], None if seen is None else [float(seen[0])],
                            None if itl is None else [float(itl[0])])
                    parts = [head, _after_first(whole, processed_ends, processed_gaps, seen, itl)]
                first_binding = binding
            stretches.extend(parts)
            max_calls -= calls
            next_out = SchedulerOutput(num_compact=next_batch, compact_context=scheduled_context,
                                       binding_limit=binding) if next_batch else None
            in_flight = (next_out, start_next, end_next, (next_batch, scheduled_context, [])) if next_batch else None
            self._next_out = next_out
            if not shrinks or until_finish or waiting or not next_batch or max_calls <= 0 or start_next >= limit:
                break
            start, end, batch, context = start_next, end_next, next_batch, scheduled_context
        if not stretches:
            return ()
        return stretches, in_flight


def _retimed(frontend: Frontend | None, ends, batch: int, end: float, top: float) -> tuple:
    """(seen, itl, when the last tokens reached their clients, the largest gap) of a stretch's
    iterations: through the API server in front (`sim.frontend.Frontend.outputs`), or as the
    engine timed them."""
    if frontend is None:
        return None, None, end, top
    seen, itl = frontend.outputs(ends, batch)
    return seen, itl, float(seen[-1]), largest(itl) if itl.__class__ is list else float(itl.max())


def _processed(end: float, gap: float, ends: list[float], gaps: list[float], n: int) -> tuple:
    """([end] + ends[:n], [gap] + gaps[:n], the largest of those gaps): the lists' own floats,
    sliced (read one by one, the compiled core would unbox each and box it again)."""
    out_ends = [end]
    out_gaps = [gap]
    if n > 0:
        out_ends += ends[:n]
        out_gaps += gaps[:n]
    return out_ends, out_gaps, largest(out_gaps)


def _after_first(whole: list, ends, gaps, seen, itl) -> tuple:
    """A stretch (`whole`, DECODE_STRETCH_FIELDS as a list) without its first iteration."""
    whole[0] = ends[0]
    whole[3] = ends[1:]
    whole[4] = gaps[1:]
    if seen is not None:
        whole[13] = seen[1:]
        whole[14] = itl[1:]
    return tuple(whole)


def _first(item):
    return item[0]


def _victim_key(req: Request) -> tuple:
    # The lowest-priority request (largest value), the latest arrival among equals.
    return (req.priority, req.arrival_time, req.seq)
