"""The engine: one call advances one iteration of one serving replica.

It owns the clock, the block pool, the policy's scheduler, the cost model and the metrics, and
hands out frozen reports. Deterministic for a scenario's seed; no wall clock anywhere (pacing
against real time is the asyncio driver's job).
"""

from __future__ import annotations

import bisect
from collections import deque
from dataclasses import dataclass, field, replace

import numpy as np

from sim.config import EngineConfig
from .cost import CostModel
from sim.errors import ConfigError, RequestRejected, SimError
from .fastpath import FastPath
from .kv import BlockPool
from .metrics import MetricsCollector, RequestRecord
from .reports import EngineSnapshot, IterationReport, ScheduledWork, SeatView
from .request import FINISHED, Request
from sim.scenario import Scenario
from .schedulers.base import SchedulerOutput
from .schedulers.continuous import ContinuousScheduler
from .schedulers.dynamic import DynamicScheduler
from .schedulers.static import SequentialScheduler, StaticScheduler
from .request import check_request
from sim.workload import RequestSpec, generate

DEPLOYMENT_KEYS = ("gpu", "model", "tensor_parallel_size", "kv_cache_dtype", "gpu_memory_utilization",
                   "block_size", "num_gpu_blocks_override")
ENDLESS_CHUNK = 256
MAX_SEATS_SHOWN = 1024


@dataclass
class RunSummary:
    """What a headless run returns."""

    scenario: Scenario
    metrics: dict
    pools: dict
    iterations: int
    records: list = field(default_factory=list)

    def __getitem__(self, key: str):
        return self.metrics[key]


class Engine:
    """One serving replica under one batching policy."""

    fast_path_enabled = True  # run()/advance_until() use sim.fastpath (tests turn it off to compare)

    def __init__(self, scenario: Scenario, *, live: bool = False, keep_records: bool | None = None,
                 series_interval: float | None = None, profiles=None) -> None:
        self.scenario = scenario
        self.live = live
        self._keep_records = (not live) if keep_records is None else keep_records
        self._series_interval = series_interval if series_interval is not None else (0.5 if live else None)
        self._profiles = profiles or scenario.profiles()
        self._build()

    # -- construction
    def _build(self) -> None:
        sc = self.scenario
        sc.workload.validate()
        profiles = self._profiles
        self.model = profiles.model(sc.model)
        self.gpu = profiles.gpu(sc.gpu)
        self.encoder = self.model.kind == "encoder"
        self.deployment = sc.deployment(profiles)
        config = sc.engine_config(profiles)
        if self.encoder and config.batching != "dynamic":
            raise ConfigError("batching", config.batching, "dynamic for an encoder model",
                              f"{self.model.name} serves one fixed-cost pass per request")
        if self.encoder:
            pool = BlockPool(2**40, 16)  # an encoder keeps no KV cache
        else:
            pool = BlockPool(self.deployment.num_gpu_blocks, self.deployment.block_size)
            if config.batching == "continuous" and config.max_model_len > pool.usable * pool.block_size:
                raise ConfigError(
                    "max_model_len", config.max_model_len,
                    f"at most the {pool.usable * pool.block_size} tokens the KV cache holds",
                    "vLLM refuses to start otherwise; lower --max-model-len or give the cache more memory")
        self.config = config
        self.pool = pool
        self.cost = CostModel(self.deployment)
        self.scheduler = self._make_scheduler(config, pool)
        self.rng = np.random.default_rng(sc.seed)
        self.time = 0.0
        self.iteration = 0
        self.done = False
        self.requests: dict[str, Request] = {}
        self.notices: deque[str] = deque(maxlen=8)
        self.metrics = MetricsCollector(keep_records=self._keep_records,
                                        series_interval=self._series_interval)
        self.metrics.kv_usable = pool.usable
        self._last: IterationReport | None = None
        self._stash = None  # a lean iteration's parts, made into `last` on demand
        self._fast = None  # the bulk path (sim.fastpath), made on first use
        self._fast_retry_at = 0
        self._fast_backoff = 1
        self._last_preempted: tuple[str, ...] = ()
        self._carry_preempted: list[str] = []
        self._seq = 0
        self._endless = sc.workload.num_prompts == 0 and sc.workload.arrival not in ("trace", "all-at-once")
        self.pending: deque[RequestSpec] = deque()
        self._submitted: list[RequestSpec] = []  # submit()ted requests that arrive later
        self._generated = 0
        self._last_arrival = 0.0
        self._refill(force=True)

    def _make_scheduler(self, config: EngineConfig, pool: BlockPool):
        if config.batching == "continuous":
            return ContinuousScheduler(config, pool)
        if config.batching == "static":
            return StaticScheduler(config, pool)
        if config.batching == "sequential":
            return SequentialScheduler(config, pool)
        return DynamicScheduler(config, pool, encoder=self.encoder)

    def reset(self, scenario: Scenario | None = None) -> None:
        """Start over (with a new scenario if given)."""
        if scenario is not None:
            self.scenario = scenario
            self._profiles = self._profiles if not scenario.profiles_path else scenario.profiles()
        self._build()

    # -- traffic
    def _refill(self, force: bool = False) -> None:
        spec = self.scenario.workload
        if force and not self._endless:
            self.pending = deque(generate(spec, self.rng))
            self._generated = len(self.pending)
            return
        if self._endless and (force or len(self.pending) < 16):
            n = ENDLESS_CHUNK
            if spec.arrival == "bursts":
                n = spec.burst_size * max(1, -(-ENDLESS_CHUNK // spec.burst_size))
            new = generate(spec, self.rng, n=n, start=self._last_arrival, first_index=self._generated)
            self._generated += len(new)
            if new:
                self._last_arrival = new[-1].arrival_time
            self.pending.extend(new)

    def _next_arrival_time(self) -> float | None:
        self._refill()
        t = self.pending[0].arrival_time if self.pending else None
        if self._submitted:
            s = self._submitted[0].arrival_time
            if t is None or s < t:
                t = s
        return t

    def submit(self, spec: RequestSpec) -> None:
        """Queue one request (validated: an unservable request is refused with a reason). It
        arrives now, or at its own arrival time if that is later."""
        if spec.arrival_time <= self.time:
            self._add(replace(spec, arrival_time=self.time))
            if self.scheduler.has_work():
                self.done = False  # a finished run has work again
        else:
            bisect.insort(self._submitted, spec, key=_arrival_key)  # after equal times
            self.done = False

    def _add(self, spec: RequestSpec) -> None:
        cfg = self.config
        output_len = 1 if self.encoder else spec.output_len
        try:
            if self.encoder:
                if spec.prompt_len > self.model.max_model_len:
                    raise RequestRejected(spec.request_id, f"its input of {spec.prompt_len} tokens is longer than "
                                                           f"the model's {self.model.max_model_len}")
            else:
                check_request(spec.request_id, spec.prompt_len, output_len, cfg, self.pool.usable,
                              self.pool.block_size)
            other = self.requests.get(spec.request_id)
            if other is not None and other.status != FINISHED:
                # Two live requests under one id would share one entry of the block pool.
                raise RequestRejected(spec.request_id, "the id is already used by a request being served")
        except RequestRejected as exc:
            if not self.live:
                raise
            self.metrics.rejected += 1
            self.notices.append(str(exc))
            return
        req = Request(spec.request_id, spec.arrival_time, spec.prompt_len, output_len,
                      priority=spec.priority, pool=spec.pool, seq=self._seq)
        self._seq += 1
        self.requests[req.request_id] = req
        self.metrics.on_arrival(spec.arrival_time)
        self.scheduler.add_request(req)

    def _admit_arrivals(self) -> None:
        """Queue every request that has arrived by now, in arrival order (the workload's first
        among equal times, then submitted ones)."""
        self._refill()
        pending = self.pending
        submitted = self._submitted
        now = self.time
        while True:
            if pending and pending[0].arrival_time <= now and not (
                    submitted and submitted[0].arrival_time < pending[0].arrival_time):
                self._add(pending.popleft())
                if not pending:
                    self._refill()
            elif submitted and submitted[0].arrival_time <= now:
                self._add(submitted.pop(0))
            else:
                return

    # -- dials
    def set_dial(self, path: str, value) -> None:
        """Change one dial. Engine dials apply from the next iteration; traffic changes apply to
        arrivals from now on; hardware changes (GPU, model, memory, blocks) restart the run."""
        head, _, rest = path.partition(".")
        sc = self.scenario
        if head == "engine":
            new = sc.with_engine(**{rest: value})
            config = new.engine_config(self._profiles)
            if config.batching != self.config.batching or self.encoder:
                self.reset(new)
                return
            if config.batching == "continuous" and config.max_model_len > self.pool.usable * self.pool.block_size:
                raise ConfigError("max_model_len", config.max_model_len,
                                  f"at most the {self.pool.usable * self.pool.block_size} tokens the KV cache holds")
            self.scenario = new
            self.config = config
            self.scheduler.set_config(config)
            return
        if head == "workload":
            parts = rest.split(".")
            w = sc.workload
            if len(parts) == 2:
                sub = getattr(w, parts[0], None)
                if sub is None or not hasattr(sub, parts[1]):
                    raise ConfigError(path, value, "a known traffic setting")
                w = replace(w, **{parts[0]: replace(sub, **{parts[1]: value})})
            else:
                if not hasattr(w, rest):
                    raise ConfigError(path, value, "a known traffic setting")
                if rest == "request_rate":
                    value = float(value)
                w = replace(w, **{rest: value})
            w.validate()
            self.scenario = replace(sc, workload=w)
            if self._endless:
                # Arrivals not yet due are redrawn with the new traffic.
                self.pending.clear()
                self._last_arrival = self.time
                self._refill(force=True)
            else:
                self._build()
            return
        if head in DEPLOYMENT_KEYS or head == "seed":
            new = replace(sc, **{head: value})
            new.validate_types()
            new.deployment(self._profiles)  # raises on a bad value before anything changes
            self.reset(new)
            return
        raise ConfigError(path, value, "a dial path such as engine.max_num_seqs or workload.request_rate")

    # -- the loop
    def step(self) -> IterationReport | None:
        """Run one iteration; None once the workload is exhausted and nothing is left."""
        out = self._next_schedule()
        if out is None:
            return None
        self._run_iteration(out, lean=False)
        return self._last

    def _next_schedule(self, until_time: float | None = None) -> SchedulerOutput | None:
        """Admit arrivals, skip idle time and schedule the next iteration that runs something;
        None once the workload is exhausted. A paced run (`until_time`) never jumps past its
        horizon: with nothing to run before it, the clock stops there and None comes back with
        `done` still False. Jumping would serve the next arrival early: the UI showed a request
        admitted and prefilled while the GPU was in fact idle, the clock ahead of the driver's."""
        sched = self.scheduler
        guard = 0
        while True:
            self._admit_arrivals()
            if not sched.has_work():
                nxt = self._next_arrival_time()
                if nxt is None:
                    self.done = True
                    return None
                if until_time is not None and nxt >= until_time:
                    self.time = max(self.time, until_time)
                    return None
                self.time = max(self.time, nxt)
                continue
            if isinstance(sched, StaticScheduler):
                sched.now = self.time
            out = sched.schedule()
            if out.scheduled:
                return out
            if out.preempted:
                # vLLM runs an empty iteration after preempting everything; it costs no GPU time.
                self._carry_preempted.extend(r.request_id for r in out.preempted)
                self.metrics.num_preemptions += len(out.preempted)
                guard += 1
                if guard > 4:
                    raise SimError("the engine cannot schedule anything (a request larger than the cache?)")
                continue
            wake = [t for t in (out.wake_at, self._next_arrival_time()) if t is not None and t > self.time]
            if not wake:
                raise SimError("the engine has queued work but nothing it can schedule")
            if until_time is not None and min(wake) >= until_time:
                self.time = max(self.time, until_time)
                return None
            self.time = min(wake)

    def _iteration_cost(self, out: SchedulerOutput):
        """The iteration's cost and its work as (request id, tokens, is prefill, context after)."""
        if out.encoder_batch:
            return self.cost.encoder_pass(out.encoder_batch, out.encoder_input_len), []
        num_decode = out.padded
        ctx = out.padded_context
        chunks = []
        work = []
        longest = 0
        if out.padded_prefill_tokens:
            longest = max(req.num_tokens - req.num_computed_tokens for req, _ in out.scheduled)
        for req, n in out.scheduled:
            before = req.num_computed_tokens
            outputs = req.num_output_tokens
            # A decode: one token, the last one (num_tokens - before == 1) of a request that has
            # sampled before.
            if n == 1 and outputs > 0 and req.prompt_len + outputs - before == 1:
                num_decode += 1
                ctx += before + 1
                work.append((req.request_id, 1, False, before + 1))
            else:
                chunks.append((before, longest if longest else n))
                work.append((req.request_id, n, True, before + n))
        return self.cost.iteration(num_decode, ctx, chunks), work

    def _run_iteration(self, out: SchedulerOutput, lean: bool = True) -> None:
        """Run a scheduled iteration and book it. `lean` (headless runs) defers building the
        IterationReport: `self.last` is made from the stash only when someone asks."""
        sched = self.scheduler
        cost, work = self._iteration_cost(out)
        start = self.time
        end = start + cost.total
        self.iteration += 1
        result = sched.update_from_output(out)
        self.time = end
        metrics = self.metrics
        emitted = result.emitted
        if emitted:
            gaps: dict = {}
            for req in emitted:
                last = req.last_token_time
                if last is None:
                    req.first_token_time = end
                    req.first_token_iteration = self.iteration
                else:
                    gap = end - last
                    gaps[gap] = gaps.get(gap, 0) + 1
                    if gap > req.max_gap:
                        req.max_gap = gap
                req.last_token_time = end
            for gap, count in gaps.items():
                metrics.on_gaps(gap, count)
        for req in result.finished:
            self._finish(req, end)
        preempted = tuple(self._carry_preempted) + tuple(r.request_id for r in out.preempted)
        self._carry_preempted = []
        metrics.num_preemptions += len(out.preempted)
        nsched = len(out.scheduled)
        seats = nsched + out.padded if not out.encoder_batch else 0
        metrics.on_iteration(start, end, running=nsched, kv_used=self.pool.used,
                             binding=out.binding_limit, tokens=len(emitted),
                             completions=len(result.finished), seats=seats, padded=out.padded)
        self._last_preempted = preempted
        stash = (self.iteration, start, end, work, cost, out, result, preempted, len(sched.running),
                 sched.num_waiting, self.pool.used, self.config.max_num_batched_tokens, self._seat_cap())
        if lean:
            self._stash = stash
        else:
            self._stash = None
            self._last = self._report(*stash)

    def _finish(self, req: Request, end: float) -> None:
        req.finish_time = end
        req.finish_iteration = self.iteration
        ttft = req.first_token_time - req.arrival_time
        e2e = end - req.arrival_time
        tpot = (e2e - ttft) / (req.num_output_tokens - 1) if req.num_output_tokens > 1 else None
        self.metrics.on_finish(RequestRecord(req.request_id, req.pool, req.arrival_time, req.prompt_len,
                                             req.num_output_tokens, ttft, e2e, tpot, req.num_preemptions,
                                             req.max_gap, req.finish_reason))
        if not self._keep_records:
            self.requests.pop(req.request_id, None)

    def _report(self, index, start, end, work, cost, out, result, preempted, running, waiting,
                kv_used, token_budget, max_num_seqs) -> IterationReport:
        scheduled = tuple(ScheduledWork(*w) for w in work)
        return IterationReport(
            index=index, start_time=start, end_time=end, scheduled=scheduled,
            num_decode_tokens=sum(w[1] for w in work if not w[2]),
            num_prefill_tokens=sum(w[1] for w in work if w[2]),
            token_budget=token_budget,
            max_num_seqs=max_num_seqs,
            admitted=tuple(r.request_id for r in out.admitted),
            first_tokens=tuple(r.request_id for r in result.first_tokens),
            emitted=tuple(r.request_id for r in result.emitted),
            finished=tuple(r.request_id for r in result.finished),
            preempted=preempted,
            running=running,
            waiting=waiting,
            kv_blocks_used=kv_used,
            kv_blocks_usable=self.pool.usable,
            binding_limit=out.binding_limit,
            cost=self.cost.report_parts(cost),
            padded_seats=out.padded,
        )

    @property
    def last(self) -> IterationReport | None:
        """The report of the last iteration run (headless runs make it only when asked)."""
        if self._stash is not None:
            stash, self._stash = self._stash, None
            self._last = stash() if callable(stash) else self._report(*stash)
        return self._last

    def _seat_cap(self) -> int:
        b = self.config.batching
        if b == "continuous":
            return self.config.max_num_seqs
        if b == "sequential":
            return 1
        return self.config.max_batch_size

    def _seats_shown(self) -> int:
        """Seats the view draws. A sequential server has as many as continuous batching would
        (max_num_seqs) but fills one: the idle ones are the waste the first lesson shows."""
        if self.config.batching == "sequential":
            return self.config.max_num_seqs
        return self._seat_cap()

    def run(self, until_time: float | None = None, max_iterations: int | None = None) -> RunSummary:
        """Run headless until the workload is done (or a time or iteration limit)."""
        self._advance(until_time, max_iterations)
        return self.summary()

    def advance_until(self, time: float, max_iterations: int | None = None) -> int:
        """Run iterations while the clock is before `time` (at most `max_iterations`), as many
        step() calls would, and return how many ran; an engine idle until after `time` stops
        there, its clock at `time`. For the driver: cheaper than run(), which also computes the
        summary."""
        return self._advance(time, max_iterations)

    def _advance(self, until_time: float | None, max_iterations: int | None) -> int:
        """The loop of run(): step() without reports, and alike decode iterations in bulk
        (sim.fastpath) where the policy allows. Results are identical to calling step()."""
        n = 0
        fast = self._fast_path()
        while True:
            if until_time is not None and self.time >= until_time:
                break
            if max_iterations is not None and n >= max_iterations:
                break
            if fast is not None and self.iteration >= self._fast_retry_at:
                if fast.enter():
                    try:
                        k, why = fast.run(until_time, None if max_iterations is None else max_iterations - n)
                    finally:
                        fast.leave()
                    n += k
                    if why != "bail":
                        break
                    # Back off while the fast path keeps handing iterations back.
                    self._fast_backoff = 1 if k >= 16 else min(64, self._fast_backoff * 2)
                else:
                    self._fast_backoff = min(64, self._fast_backoff * 2)
                self._fast_retry_at = self.iteration + self._fast_backoff
            out = self._next_schedule(until_time)
            if out is None:
                break
            self._run_iteration(out)
            n += 1
        return n

    def _fast_path(self):
        if self._fast is None:
            self._fast = FastPath(self) if FastPath.supports(self) and self.fast_path_enabled else False
        return self._fast or None

    def summary(self) -> RunSummary:
        duration = self.metrics.last_token_time
        return RunSummary(self.scenario, self.metrics.summary(duration), self.metrics.pool_summary(),
                          self.iteration, self.metrics.records)

    # -- for the UI
    def snapshot(self) -> EngineSnapshot:
        sched = self.scheduler
        seats: list[SeatView] = []
        members = getattr(sched, "batch", None)
        reqs = members if members else sched.running
        for req in reqs:
            if req.status == FINISHED:
                seats.append(SeatView("padded", req.request_id, 1.0, self.pool.held(req.request_id)))
            elif req.is_prefilling:
                total = max(1, req.num_tokens)
                seats.append(SeatView("prefill", req.request_id, req.num_computed_tokens / total,
                                      self.pool.held(req.request_id)))
            else:
                seats.append(SeatView("decode", req.request_id, req.num_output_tokens / max(1, req.output_len),
                                      self.pool.held(req.request_id)))
        for rid in self._last_preempted:
            seats.append(SeatView("preempted", rid, 0.0, 0))
        cap = min(self._seats_shown(), MAX_SEATS_SHOWN)
        while len(seats) < cap:
            seats.append(SeatView("idle"))
        m = self.metrics
        return EngineSnapshot(
            time=self.time,
            iteration=self.iteration,
            batching=self.config.batching,
            seats=tuple(seats),
            max_num_seqs=self._seats_shown(),
            queue_len=sched.num_waiting,
            running=len(sched.running),
            kv_blocks_used=self.pool.used,
            kv_blocks_usable=self.pool.usable,
            kv_blocks_by_request=tuple(sorted(self.pool.holdings().items(), key=lambda kv: -kv[1])[:256]),
            last=self.last,
            metrics=m.view(self.time),
            series_throughput=tuple(m.series_throughput),
            series_ttft=tuple(m.series_ttft),
            series_tpot=tuple(m.series_tpot),
            series_itl=tuple(m.series_itl),
            finished=self.done,
            notices=tuple(self.notices),
        )


def _arrival_key(spec: RequestSpec) -> float:
    return spec.arrival_time


def run_scenario(scenario: Scenario, **kwargs) -> RunSummary:
    """Run a scenario to the end, headless, and return its summary."""
    return Engine(scenario, **kwargs).run()


def sweep(scenario: Scenario, rates, **kwargs) -> list[RunSummary]:
    """The same scenario at several request rates (requests/s; math.inf = all at once)."""
    return [run_scenario(scenario.with_workload(request_rate=float(r)), **kwargs) for r in rates]
