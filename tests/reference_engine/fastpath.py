"""The bulk path of the headless engine: continuous batching many iterations at a time, with the
same results, float for float, as `Engine.step()` one iteration at a time.

Why it can be fast: most iterations of a continuous-batching engine are decode iterations in
which the running set does not change — every running request gets one token and only the
contexts grow by one. Such a request's state is a function of how many iterations have run since
it started decoding, so it is kept implicit here:

- a decoder is stored as the iteration count `G` at which it joined (its Request fields are
  exact as of then); `num_output_tokens` at iteration count G is `o_join + G - G_join`;
- the decode context of an iteration is `S + B * G` (S sums prompt + o_join - G_join over the
  B decoders), so its time is `t(G) = a + b * (S + B * G)` and needs no loop over requests;
- a decoder needs a new KV block on the iterations where its computed tokens are a multiple of
  the block size: decoders are counted by that residue, so the blocks an iteration takes are one
  list lookup;
- finishes are known in advance and kept in a calendar keyed by iteration count;
- a decoder's largest ITL gap is read off a log of per-stretch maxima when it is needed.

Iterations that admit, prefill or finish requests go through `_general`, which mirrors
`ContinuousScheduler.schedule()` and `update_from_output()` line for line (including FCFS
preemption) but touches only the requests that are not plain decoders. Stretches of alike decode
iterations between events go through `_bulk` (a plain loop, or numpy for long stretches), which
stops exactly before the iteration that would see the next arrival (the first whose start time
is at or after it), the first finish, a KV shortfall, or the caller's time or iteration limit.
A queue that cannot be admitted (seats full, blocks short, budget spent) does not stop it: the
iteration before the stretch showed the refusal, and nothing it depends on changes until an
arrival or a finish.

Whatever this path cannot mirror cheaply — a running request left without budget, priority
preemption — it hands back before touching anything, and the engine runs that iteration the
ordinary way. `tests/unit/test_fastpath.py` runs random workloads both ways and compares.

Floats: iteration times are summed in the same order as step by step, and every metric the
engine books per iteration is booked per iteration here too (in bulk, but in order; see
MetricsCollector.on_decode_iterations), so times, TTFT, TPOT, E2E, ITL and the time-weighted
running mean are bit-identical.

Coupling: this module reads private parts of its neighbours — CostModel's constants (the
iteration time is inlined), BlockPool._held (decoders' blocks are settled lazily), the waiting
queue's container — and mirrors ContinuousScheduler.schedule(); a change there needs the same
change here, which test_fastpath catches.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left

import numpy as np

from .reports import IterationReport, ScheduledWork
from .request import FINISHED, RUNNING

_INF = math.inf


class FastPath:
    """Holds a continuous-batching engine's running state in implicit form between `enter()`
    and `leave()`; `run()` advances it."""

    def __init__(self, engine) -> None:
        self.engine = engine
        self.active = False

    @staticmethod
    def supports(engine) -> bool:
        return engine.config.batching == "continuous" and not engine.encoder

    # -- taking the state over and giving it back -------------------------------------------------

    def enter(self) -> bool:
        """Take the engine's state over; False (nothing changed) if it is not one this path
        mirrors: a decoding request that missed the last iteration, an empty iteration's
        preemptions still to report."""
        e = self.engine
        sched = e.scheduler
        if e._carry_preempted:
            return False
        pool = e.pool
        bs = pool.block_size
        t = e.time
        held = pool._held
        dec_list = []
        prefill: dict = {}
        running: dict = {}
        for i, r in enumerate(sched.running):
            running[r] = i
            c = r.num_computed_tokens
            if r.num_tokens - c == 1 and r.num_output_tokens > 0:
                if r.last_token_time != t or held.get(r.request_id, 0) != -(-c // bs):
                    return False
                dec_list.append(r)
            else:
                prefill[r] = None
        cm = e.cost
        self.cfg = e.config
        self.sched = sched
        self.pool = pool
        self.metrics = e.metrics
        self.bs = bs
        self.mask = bs - 1
        self.mml = e.config.max_model_len
        self.running = running
        self.prefill = prefill
        self.seq = len(running)
        self.dec: dict = {}
        self.cross = [0] * bs
        self.S = 0
        self.cal: dict = {}
        self.heap: list = []
        self.nf = _INF  # no decoder finishes before this iteration count (a lower bound)
        self.G = 0
        self.seg_start: list = []  # iteration counts where a stretch of the gap log starts
        self.seg_max: list = []  # the largest gap of that stretch
        self.t = t
        self.probe = None  # the binding limit a blocked queue repeats while nothing changes
        self.guard = 0
        self.last_info = None
        for r in dec_list:
            self._join(r, 0)
        self.next_arr = e._next_arrival_time()
        # CostModel's constants, to inline its arithmetic (same operations, same order).
        self.c_mem2 = cm._t_mem_squared
        self.c_cmp = cm._t_cmp_per_token
        self.c_kv = cm._t_kv_per_token
        self.c_ar = cm._t_ar_per_token
        self.c_arf = cm._t_ar_fixed
        self.c_ov = cm._t_overhead
        self.c_attn = cm._attn_flops_coeff
        self.c_peak = cm._effective_peak
        waiting = sched.waiting
        # The queue's own container, for cheap len() and truth tests (peek and pop stay methods).
        self.wq = getattr(waiting, "_fcfs" if waiting.policy == "fcfs" else "_sorted", waiting)
        self.active = True
        return True

    def _join(self, r, gj: int) -> None:
        """`r` decodes from iteration count `gj` on; its fields are exact as of then."""
        o = r.num_output_tokens
        p = r.prompt_len
        self.dec[r] = gj
        self.cross[(gj - p - o + 1) & self.mask] += 1
        self.S += p + o - gj
        gf = gj + min(r.output_len - o, self.mml - p - o)
        slot = self.cal.get(gf)
        if slot is None:
            self.cal[gf] = [(r, gj)]
            heapq.heappush(self.heap, gf)
            if gf < self.nf:
                self.nf = gf
        else:
            slot.append((r, gj))

    def _drop(self, r, gj: int) -> None:
        """`r` stops decoding (finished or preempted) at the current iteration count."""
        del self.dec[r]
        o = r.num_output_tokens  # already brought up to date by the caller
        p = r.prompt_len
        o_join = o - (self.G - gj)
        self.cross[(gj - p - o_join + 1) & self.mask] -= 1
        self.S -= p + o_join - gj

    def _materialize(self, r, gj: int, G: int, t: float) -> None:
        """Bring a decoder's Request fields up to iteration count G (last token at t)."""
        o = r.num_output_tokens + (G - gj)
        r.num_output_tokens = o
        c = r.prompt_len + o - 1
        r.num_computed_tokens = c
        r.last_token_time = t
        if G > gj:
            i = bisect_left(self.seg_start, gj)
            if i < len(self.seg_start):
                m = max(self.seg_max[i:])
                if m > r.max_gap:
                    r.max_gap = m
        self.pool._held[r.request_id] = -(-c // self.bs)

    def leave(self) -> None:
        """Give the state back to the engine and its scheduler, exact in every field."""
        if not self.active:
            return
        e = self.engine
        G, t = self.G, self.t
        for r, gj in self.dec.items():
            if gj != G:
                self._materialize(r, gj, G, t)
        self.sched.running = list(self.running)
        e.time = t
        if self.last_info is not None:
            e._stash = self._report_maker(self.last_info)
        self.active = False

    # -- the loop ----------------------------------------------------------------------------------

    def run(self, until_time: float | None, max_iterations: int | None) -> tuple[int, str]:
        """Run until a limit ("limit"), the end of the workload ("done") or an iteration this
        path does not mirror ("bail": nothing of it has been done). Returns (iterations, why)."""
        e = self.engine
        waiting = self.wq
        until = _INF if until_time is None else until_time
        left = max_iterations if max_iterations is not None else 1 << 62
        n = 0
        check = True
        while True:
            # Limits are checked before each iteration, as Engine.run() checks them before each
            # step(); an idle jump or an empty iteration inside one step() does not check them.
            if check and (self.t >= until or n >= left):
                return n, "limit"
            check = True
            t = self.t
            na = self.next_arr
            if na is not None and na <= t:
                e.time = t
                e._admit_arrivals()
                self.next_arr = e._next_arrival_time()
                self.probe = None
            if not self.running and not waiting:
                if self.next_arr is None:
                    e.done = True
                    return n, "done"
                if self.next_arr >= until:
                    # Engine._next_schedule's rule: a paced run idles to its horizon rather than
                    # serving the next arrival early.
                    self.t = max(t, until)
                    return n, "limit"
                self.t = max(t, self.next_arr)
                check = False
                continue
            if not self.prefill and self.dec and (self.probe is not None or not waiting):
                k = self._bulk(until, left - n)
                if k:
                    n += k
                    continue
            status = self._general()
            if status == "bail":
                return n, "bail"
            if status == "ran":
                n += 1
            else:
                check = False

    def _bulk(self, until: float, left: int) -> int:
        """Alike decode iterations, as many as can run before anything changes."""
        e = self.engine
        dec = self.dec
        B = len(dec)
        if B > self.cfg.max_num_batched_tokens:
            return 0
        G = self.G
        k_max = self.nf - G - 1
        if k_max > left:
            k_max = left
        if k_max <= 0:
            return 0
        na = self.next_arr
        L = until if na is None or na > until else na
        binding = self.probe if self.probe is not None else "none"
        metrics = self.metrics
        pool = self.pool
        free = pool.free
        cross = self.cross
        mask = self.mask
        t_cmp = self.c_cmp * B
        tl = math.sqrt(self.c_mem2 + t_cmp * t_cmp)
        tar = self.c_ar * B + self.c_arf
        tov = self.c_ov
        kv = self.c_kv
        ctx = self.S + B * G
        t = start = self.t
        if k_max >= self.NUMPY_MIN and (L - t) >= self.NUMPY_MIN * (tl + ctx * kv + tar + tov):
            return self._bulk_numpy(k_max, L, B, binding, tl, tar, tov, kv, ctx)
        ends = []
        gaps = []
        k = 0
        while k < k_max:
            need = cross[(G + k) & mask]
            if need > free:
                break
            free -= need
            end = t + (tl + ctx * kv + tar + tov)
            gaps.append(end - t)
            ends.append(end)
            t = end
            ctx += B
            k += 1
            if t >= L:
                break
        if k == 0:
            return 0
        pool.free = free
        self.G = G + k
        self.t = t
        e.time = t
        e.iteration += k
        m = max(gaps)
        self.seg_start.append(G)
        self.seg_max.append(m)
        metrics.on_decode_iterations(start, ends, gaps, B, pool.usable - free, binding)
        e._last_preempted = ()
        self.last_info = ("bulk", e.iteration, ends[-2] if k > 1 else start, t, B, binding,
                          self.S + B * (G + k - 1), pool.usable - free, len(self.wq))
        return k

    NUMPY_MIN = 96  # stretches at least this long are computed with numpy

    def _bulk_numpy(self, k_max, L, B, binding, tl, tar, tov, kv, ctx) -> int:
        """_bulk for a long stretch: the same floats, computed as arrays (numpy's cumsum adds
        left to right, as the loop does)."""
        e = self.engine
        pool = self.pool
        G = self.G
        t = start = self.t
        # Iteration times grow with the context, so the first one bounds how many fit before L.
        first = tl + ctx * kv + tar + tov
        K = k_max if L == _INF else min(k_max, int((L - t) / first) + 2)
        K = min(K, 1 << 16)
        j = np.arange(K, dtype=np.int64)
        need = np.asarray(self.cross, dtype=np.int64)[(G + j) & self.mask]
        cum = np.cumsum(need)
        free = pool.free
        if cum[-1] > free:
            K = int(np.searchsorted(cum, free, side="right"))  # the first that does not fit stops
            if K == 0:
                return 0
        d = (ctx + B * j[:K]).astype(np.float64) * kv
        d += tl  # tl + ctx * kv, then + tar, then + tov: the loop's order (x + y == y + x exactly)
        d += tar
        d += tov
        ends = np.cumsum(np.concatenate(((t,), d)))
        # Iteration i (0-based) runs only if it starts before L: stop after the first that ends there.
        k = int(np.searchsorted(ends[1:], L, side="left")) + 1
        if k > K:
            k = K
        ends = ends[:k + 1]
        gaps = ends[1:] - ends[:-1]
        ends = ends[1:]
        free -= int(cum[k - 1])
        t = float(ends[-1])
        pool.free = free
        self.G = G + k
        self.t = t
        e.time = t
        e.iteration += k
        self.seg_start.append(G)
        self.seg_max.append(float(gaps.max()))
        self.metrics.on_decode_iterations(start, ends, gaps, B, pool.usable - free, binding)
        e._last_preempted = ()
        self.last_info = ("bulk", e.iteration, float(ends[-2]) if k > 1 else start, t, B, binding,
                          self.S + B * (G + k - 1), pool.usable - free, len(self.wq))
        return k

    def _general(self) -> str:
        """One iteration of any kind, mirroring schedule() and update_from_output()."""
        e = self.engine
        cfg = self.cfg
        pool = self.pool
        sched = self.sched
        waiting = sched.waiting
        wq = self.wq
        running = self.running
        prefill = self.prefill
        dec = self.dec
        G = self.G
        t = self.t
        mml = self.mml
        budget = cfg.max_num_batched_tokens
        threshold = cfg.long_prefill_token_threshold
        if threshold > 0 and len(running) + len(wq) <= 1:
            threshold = 0

        # -- schedule: the running requests, in admission order
        B = len(dec)
        cross_need = self.cross[G & self.mask]
        demand = B
        need = cross_need
        pf = []
        bs = self.bs
        held = pool._held
        for r in prefill if prefill else ():
            c = r.num_computed_tokens
            n = r.num_tokens - c
            if 0 < threshold < n:
                n = threshold
            demand += n
            a = -(-(c + n) // bs) - held.get(r.request_id, 0)
            if a > 0:
                need += a
            pf.append((r, n, c))
        if demand > budget:
            return "bail"  # someone would be left without budget: the ordinary path does it
        victims = []
        if need > pool.free:
            if cfg.scheduling_policy != "fcfs":
                return "bail"
            pf, B = self._preempt_fcfs(pf)
            victims = self._victims
            if not pf and not B:
                # Everything was preempted: an empty iteration, as Engine._next_schedule has it.
                e._carry_preempted.extend(r.request_id for r in victims)
                self.metrics.num_preemptions += len(victims)
                self.guard += 1
                if self.guard > 4:
                    from .errors import SimError
                    raise SimError("the engine cannot schedule anything (a request larger than the cache?)")
                self.probe = None
                return "again"
            demand = B + sum(n for _, n, _ in pf)
        else:
            pool.free -= cross_need
            for r, n, c in pf:
                pool.try_allocate(r.request_id, c + n)
        budget -= demand

        # -- schedule: admit waiting requests, unless this iteration had to preempt
        admitted = []
        stop_reason = ""
        work_left = False
        if not victims:
            nrun = len(running)
            max_seqs = cfg.max_num_seqs
            chunked = cfg.enable_chunked_prefill
            full_isl = cfg.scheduler_reserve_full_isl
            while wq and budget > 0:
                if nrun >= max_seqs:
                    stop_reason = "max_num_seqs"
                    break
                r = waiting.peek()
                n = r.num_tokens - r.num_computed_tokens
                if 0 < threshold < n:
                    n = threshold
                if not chunked and n > budget:
                    stop_reason = "token_budget"
                    break
                if n > budget:
                    n = budget
                    work_left = True
                reserve = sched.watermark_blocks if nrun else 0
                if full_isl:
                    if pool.blocks_needed(r.request_id, min(r.num_tokens, mml)) + reserve > pool.free:
                        stop_reason = "kv_cache"
                        break
                if not pool.try_allocate(r.request_id, min(r.num_computed_tokens + n, mml), reserve):
                    stop_reason = "kv_cache"
                    break
                waiting.pop()
                r.status = RUNNING
                running[r] = self.seq
                self.seq += 1
                nrun += 1
                admitted.append((r, n, r.num_computed_tokens))
                budget -= n
            if wq and budget <= 0 and not stop_reason:
                stop_reason = "token_budget"
        if victims or stop_reason == "kv_cache":
            binding = "kv_cache"
        elif stop_reason:
            binding = stop_reason
        elif work_left and budget <= 0:
            binding = "token_budget"
        else:
            binding = "none"

        # -- the forward pass
        work = pf + admitted if admitted else pf  # scheduled order: running first, then admitted
        num_decode = B
        ctx = self.S + B * G
        chunks = []
        flags = []
        tokens = B
        attn = 0.0
        coeff = self.c_attn
        for r, n, c in work:
            if n == 1 and r.num_tokens - c == 1 and r.num_output_tokens > 0:
                num_decode += 1
                ctx += c + 1
                flags.append(False)
                tokens += 1
            else:
                chunks.append((c, n))
                flags.append(True)
                tokens += n
                attn += coeff * n * (c + n / 2)
        # CostModel.iteration(num_decode, ctx, chunks).total, same operations in the same order
        # (test_fastpath checks the two agree).
        t_cmp = self.c_cmp * tokens
        end = t + (math.sqrt(self.c_mem2 + t_cmp * t_cmp) + ctx * self.c_kv + attn / self.c_peak
                   + (self.c_ar * tokens + self.c_arf) + self.c_ov)
        e.iteration += 1
        index = e.iteration
        G1 = G + 1

        # -- update: tokens, first tokens, finishes, in scheduled order
        g = end - t
        self.seg_start.append(G)
        self.seg_max.append(g)
        specials = []
        first_tokens = []
        finishers = []
        for r, n, c in work:
            c += n
            r.num_computed_tokens = c
            if c >= r.num_tokens:
                last = r.last_token_time
                if last is None:
                    first_tokens.append(r)
                    r.first_token_time = end
                    r.first_token_iteration = index
                else:
                    gap = end - last
                    specials.append((running[r], gap))
                    if gap > r.max_gap:
                        r.max_gap = gap
                r.last_token_time = end
                r.num_output_tokens += 1
                if r.num_output_tokens >= r.output_len:
                    r.finish_reason = "stop"
                elif r.num_tokens >= mml:
                    r.finish_reason = "length"
                else:
                    if r in prefill:
                        del prefill[r]
                    self._join(r, G1)
                    continue
                prefill.pop(r, None)
                finishers.append((running[r], r, None))
            elif r not in prefill:
                prefill[r] = None  # admitted with part of its prompt
        if self.nf <= G1:
            ended = self.cal.pop(G1, None)
            if ended:
                for r, gj in ended:
                    if dec.get(r) == gj:
                        finishers.append((running[r], r, gj))
            heap = self.heap
            while heap and heap[0] <= G1:
                heapq.heappop(heap)
            self.nf = heap[0] if heap else _INF
        metrics = self.metrics
        if B:
            if specials:
                first_dec = next(running[r] for r in running if r in dec and dec[r] <= G)
                order = sorted([(first_dec, g, B)] + [(s, gap, 1) for s, gap in specials])
            else:
                order = ((0, g, B),)
        else:
            order = sorted((s, gap, 1) for s, gap in specials)
        if order:
            gaps: dict = {}
            for _, gap, count in order:
                gaps[gap] = gaps.get(gap, 0) + count
            for gap, count in gaps.items():
                metrics.on_gaps(gap, count)
        emitted = B + len(first_tokens) + len(specials)
        done = []
        if finishers:
            finishers.sort(key=_first)
            self.G = G1
            for s, r, gj in finishers:
                if gj is not None:
                    self._materialize(r, gj, G1, end)
                    self._drop(r, gj)
                    r.finish_reason = "stop" if r.num_output_tokens >= r.output_len else "length"
                r.status = FINISHED
                pool.free_request(r.request_id)
                del running[r]
                done.append((s, r, gj))
            for _, r, _ in done:
                e._finish(r, end)
        self.G = G1
        self.t = end
        e.time = end
        nsched = B + len(work)
        metrics.on_iteration(t, end, running=nsched, kv_used=pool.used, binding=binding,
                             tokens=emitted, completions=len(finishers), seats=nsched, padded=0)
        self.guard = 0
        preempted = tuple(e._carry_preempted) + tuple(r.request_id for r in victims)
        e._carry_preempted = []
        e._last_preempted = preempted
        metrics.num_preemptions += len(victims)
        self.probe = binding if (wq and not victims and not admitted and not pf
                                 and not finishers) else None
        self.last_info = ("general", index, t, end, (num_decode, ctx, chunks), work, flags, first_tokens,
                          done, preempted, admitted, binding, pool.used, len(wq))
        return "ran"

    def _preempt_fcfs(self, pf):
        """The running phase when blocks run short (FCFS): allocate in admission order and, when
        a request does not fit, preempt the most recently admitted until it does (or it was the
        victim). Mirrors ContinuousScheduler.schedule(). Returns the surviving prefill work and
        the number of decoders scheduled; the victims are left in self._victims."""
        pool = self.pool
        sched = self.sched
        dec = self.dec
        G, t, bs = self.G, self.t, self.bs
        chunk = {id(r): (n, c) for r, n, c in pf}
        order = list(self.running)
        victims = []
        end = len(order)
        i = 0
        held = pool._held
        while i < end:
            r = order[i]
            gj = dec.get(r)
            if gj is not None:
                o = r.num_output_tokens + (G - gj)
                c = r.prompt_len + o - 1
                a = 1 if c % bs == 0 else 0
            else:
                n, c = chunk[id(r)]
                a = -(-(c + n) // bs) - held.get(r.request_id, 0)
            gone = False
            while a > pool.free:
                v = order[end - 1]
                end -= 1
                vj = dec.get(v)
                if vj is not None:
                    self._materialize(v, vj, G, t)
                    self._drop(v, vj)
                else:
                    del self.prefill[v]
                del self.running[v]
                sched._preempt(v)
                victims.append(v)
                if v is r:
                    gone = True
                    break
            if gone:
                break
            if a > 0:
                if gj is not None:
                    pool.free -= a
                else:
                    pool.try_allocate(r.request_id, c + n)
            i += 1
        self._victims = victims
        kept = [(r, n, c) for r, n, c in pf if r in self.running]
        return kept, len(dec)

    # -- the report of the last iteration ----------------------------------------------------------

    def _report_maker(self, info):
        """A function that builds the IterationReport of the last iteration run here from the
        state as left (called only if someone reads `Engine.last`; any later iteration replaces
        it first)."""
        usable = self.pool.usable
        cost_model = self.engine.cost
        budget = self.cfg.max_num_batched_tokens
        seats = self.engine._seat_cap()
        nrun = len(self.running)
        dec_now = sorted((s, r) for r, s in self.running.items() if r in self.dec)
        seq_running = {id(r): s for r, s in self.running.items()}

        def make():
            if info[0] == "bulk":
                (_, index, start, end, B, binding, ctx, kv_used, nwait) = info
                work = tuple(ScheduledWork(r.request_id, 1, False, r.num_computed_tokens)
                             for _, r in dec_now)
                ids = tuple(w.request_id for w in work)
                return _make_report(index, start, end, work, cost_model.report_parts(cost_model.iteration(B, ctx, ())), ids,
                                    (), (), (), (), binding, nrun, nwait, kv_used, usable, budget, seats)
            (_, index, start, end, cost_args, work, flags, first_tokens, done, preempted,
             admitted, binding, kv_used, nwait) = info
            cost = cost_model.iteration(*cost_args)
            seq_of = {id(r): s for s, r, _ in done}
            seq_of.update(seq_running)
            joined = {id(r) for r, _, _ in work}
            rows = [(s, ScheduledWork(r.request_id, 1, False, r.num_computed_tokens), True)
                    for s, r in dec_now if id(r) not in joined]
            rows += [(s, ScheduledWork(r.request_id, 1, False, r.num_computed_tokens), True)
                     for s, r, gj in done if gj is not None]
            admitted_ids = {id(r) for r, _, _ in admitted}
            tail = []
            for (r, n, c), is_prefill in zip(work, flags):
                row = (seq_of.get(id(r), 0), ScheduledWork(r.request_id, n, is_prefill, c + n),
                       r.last_token_time == end)
                (tail if id(r) in admitted_ids else rows).append(row)
            rows.sort(key=_first)
            rows += tail
            scheduled = tuple(w for _, w, _ in rows)
            emitted = tuple(w.request_id for _, w, em in rows if em)
            return _make_report(index, start, end, scheduled, cost_model.report_parts(cost), emitted,
                                tuple(r.request_id for r in first_tokens),
                                tuple(r.request_id for _, r, _ in done), preempted,
                                tuple(r.request_id for r, _, _ in admitted), binding,
                                nrun, nwait, kv_used, usable, budget, seats)
        return make


def _first(item):
    return item[0]


def _make_report(index, start, end, scheduled, parts, emitted, first_tokens, finished, preempted,
                 admitted, binding, running, waiting, kv_used, usable, budget, seats) -> IterationReport:
    return IterationReport(
        index=index, start_time=start, end_time=end, scheduled=scheduled,
        num_decode_tokens=sum(w.num_tokens for w in scheduled if not w.is_prefill),
        num_prefill_tokens=sum(w.num_tokens for w in scheduled if w.is_prefill),
        token_budget=budget, max_num_seqs=seats,
        admitted=admitted, first_tokens=first_tokens, emitted=emitted, finished=finished,
        preempted=preempted, running=running, waiting=waiting,
        kv_blocks_used=kv_used, kv_blocks_usable=usable, binding_limit=binding,
        cost=parts,
        padded_seats=0,
    )
