"""The engine: one call advances one iteration of one serving replica.

It owns the clock, the block pool, the policy's scheduler, the cost model and the metrics, and
hands out frozen reports. Deterministic for a scenario's seed; no wall clock anywhere (pacing
against real time is the asyncio driver's job).

One loop for every policy: admit arrivals, ask the scheduler for a batch, price it with the cost
model (once), process the batch's output, book the metrics. With async scheduling (continuous
batching only) batch k is scheduled before batch k-1's output is processed, as vLLM's
EngineCore does with a batch queue of two: an iteration's output is processed one engine call
later, and the iteration report describes the batch whose output was processed. Headless runs
also let the continuous scheduler run stretches of alike decode iterations in bulk
(`ContinuousScheduler.decode_stretch`; with async scheduling `async_stretch`, engine calls in bulk,
each leaving a batch in flight as one call does), with the same results as one iteration at a time.
"""

from __future__ import annotations

import gc
import math
from collections import deque
from typing import Any
from dataclasses import dataclass, field, replace

import numpy as np

from . import dials
from .arrivals import Arrivals, LazyRun, is_endless, refuse_at_once
from .config import EngineConfig, cudagraph_capture_sizes
from .cost import CostModel
from .errors import ConfigError, ProfileError, RequestRejected, SimError
from .frontend import TRANSIT_S, Frontend, FrontendCosts
from .kv import BlockPool
from .limits import MAX_SPAN_S
from .metrics import MetricsCollector, RecordTable
from .reports import EngineSnapshot, IterationReport, ScheduledWork, SeatView
from .request import FINISHED, Request, check_request, check_segments
from .scenario import Scenario
from .schedulers.base import CapsUsed, Scheduler, SchedulerOutput, UpdateResult
from .schedulers.continuous import ContinuousScheduler
from .schedulers.dynamic import DynamicScheduler
from .schedulers.static import SequentialScheduler, StaticScheduler
from .speculative import Acceptance
from .workload import RequestSpec

MAX_SEATS_SHOWN = 1024
# No iteration limit: the largest int the compiled core holds unboxed (2^62 - 1; at 2^62 each
# comparison and subtraction with it went through Python ints, allocating).
MAX_STRETCH = (1 << 62) - 1
# Arrivals of an endless stream refused one after another, with nothing to run, after which an
# unpaced step() or run() gives up and returns (every arrival refused: it would never return).
MAX_REFUSED_IN_A_ROW = 10_000


@dataclass
class RunSummary:
    """What a headless run returns."""

    scenario: Scenario
    metrics: dict
    pools: dict
    iterations: int
    records: RecordTable | list = field(default_factory=list)
    failed: list = field(default_factory=list)
    """Requests the API server refused (`FailedRequest`s), in order of arrival."""
    api_server_ceiling: float = math.inf
    """Requests/s the API servers in front can sustain at this run's mix of requests
    (`sim.frontend.Frontend.ceiling`; inf with none in front)."""
    caps: CapsUsed | None = None
    """How near the run came to its seat and token caps (`sim.schedulers.base.CapsUsed`; None
    for a policy other than continuous batching)."""

    def __getitem__(self, key: str):
        return self.metrics[key]


def _parts(sc: Scenario, profiles: Any) -> tuple:
    """What a run of `sc` is built on, checked as vLLM checks it before it serves (the model, the
    GPU, the deployment, the engine config and the KV cache's block pool), without touching a run:
    a refusal here (ConfigError, ProfileError) leaves the engine as it was."""
    sc.workload.validate()
    model = profiles.model(sc.model)
    gpu = profiles.gpu(sc.gpu)
    deployment = sc.deployment(profiles)
    config = sc.engine_config(profiles)
    if model.kind == "encoder":
        if config.batching != "dynamic":
            raise ConfigError("engine.batching", config.batching, "dynamic for an encoder model",
                              f"{model.name} serves one fixed-cost pass per request")
        pool = BlockPool(2**40, 16)  # an encoder keeps no KV cache
    else:
        pool = BlockPool(deployment.num_gpu_blocks, deployment.block_size,
                         caching=config.caches_prefixes, layout=deployment.kv_layout)
        _check_max_model_len(config, pool)
    _check_times(model, gpu, deployment)
    return model, gpu, deployment, config, pool


def _check_times(model: Any, gpu: Any, deployment: Any) -> None:
    """Refuse a profile whose times run past what simulated time holds (`sim.limits.MAX_SPAN_S`):
    an iteration of one token, or one request's work in the API server, longer than that (a
    bandwidth or an efficiency near zero, a host cost of 1e300 s) would overflow the run's
    arithmetic (an internal error) or report durations of hundreds of digits."""
    cost = CostModel(deployment)
    one = (cost.encoder_pass(1, 1) if model.kind == "encoder" else cost.iteration(1, 1)).total
    front = deployment.frontend_request_s + deployment.frontend_prompt_token_s + deployment.frontend_output_token_s
    for what, seconds, values in (
            ("one iteration", one, "hbm_bandwidth, bf16_peak_flops, eta_bw, eta_mfu, overhead_s, overhead_per_seq_s"),
            ("one request in the API server", front, "frontend_request_s, frontend_prompt_token_s, "
                                                     "frontend_output_token_s")):
        if not seconds <= MAX_SPAN_S:  # (nan too)
            raise ProfileError(f"{what} of {model.name} on {gpu.name} would take {seconds:.3g} s, more than the "
                               f"{MAX_SPAN_S:g} s of simulated time a run holds: check the profile's {values}")


def _check_max_model_len(config, pool) -> None:
    """vLLM refuses to start a continuous engine whose max_model_len exceeds what its KV cache holds."""
    if config.batching == "continuous" and config.max_model_len > pool.token_capacity:
        raise ConfigError("engine.max_model_len", config.max_model_len,
                          f"at most the {pool.token_capacity:,} tokens the KV cache holds",
                          "vLLM refuses to start otherwise; lower {engine.max_model_len} or give the cache more "
                          "blocks: {gpu_memory_utilization}, {num_gpu_blocks_override}")


class Engine:
    """One serving replica under one batching policy."""

    def __init__(self, scenario: Scenario, *, live: bool = False, keep_records: bool | None = None,
                 series_interval: float | None = None, profiles=None, keep_requests: bool | None = None,
                 api_server: bool = False, frontend: bool = True) -> None:
        self.scenario = scenario
        self.live = live
        self._keep_records = (not live) if keep_records is None else keep_records
        # Finished requests stay in `requests` (tests and traces read them) unless a long
        # headless run asks to drop them: its metrics keep what it reports.
        self._keep_requests = self._keep_records if keep_requests is None else keep_requests
        # Requests pass vLLM's OpenAI API server first: one it refuses (a prompt plus requested
        # output longer than max_model_len) fails and is counted, instead of stopping the run.
        self.api_server = api_server
        # The API server process(es) in front of the engine core (sim.frontend), as the profile
        # prices them; off for a caller that puts its own server in front (batchtui serve).
        self._frontend_wanted = frontend
        self._series_interval = series_interval if series_interval is not None else (0.5 if live else None)
        self._profiles = profiles or scenario.profiles()
        self._build()

    # -- construction
    def _build(self, parts: tuple | None = None) -> None:
        sc = self.scenario
        model, gpu, deployment, config, pool = parts if parts is not None else _parts(sc, self._profiles)
        self.model = model
        self.gpu = gpu
        self.encoder = model.kind == "encoder"
        self.deployment = deployment
        self.config = config
        self.pool = pool
        self._async = config.runs_async
        # Speculative decoding (continuous batching only): drafts accepted per position from a
        # generator seeded by the run's seed (`sim.speculative.Acceptance`).
        self.speculative = sc.speculative() if config.batching == "continuous" and not self.encoder else None
        self._acceptance = Acceptance(self.speculative, sc.seed) if self.speculative is not None else None
        self.cost = self._cost_model(config)
        self.arrivals = Arrivals.for_scenario(sc)
        self.rng = self.arrivals.rng
        self.frontend = Frontend(self.arrivals, self._frontend_costs(config), sc.seed)
        self._front = self.frontend.on
        self._threads = self.frontend.threads is not None  # a client of threads reads the streams
        if self._threads:
            self.frontend.on_read = self._client_read
        # The live engine keeps an endless workload's waiting requests in compact form (see
        # sim.arrivals): under overload its memory does not grow with the queue.
        self._lazy_queue = self.live and self.arrivals.endless
        self._tail_run: LazyRun | None = None  # the run the next arrival of the workload may join
        self.scheduler: Scheduler = self._make_scheduler(config, pool)  # (typed: its calls are direct)
        self.time = 0.0
        self.iteration = 0
        self.done = False
        self.requests: dict[str, Request] = {}
        self.notices: deque[str] = deque(maxlen=8)
        self.metrics = MetricsCollector(keep_records=self._keep_records,
                                        series_interval=self._series_interval)
        self.metrics.kv_usable = pool.usable
        self._last: IterationReport | None = None
        # A lean iteration's parts, made into `last` on demand: what `_report` takes, or (index, the
        # last decode stretch run).
        self._stash: tuple | None = None
        self._in_flight: tuple[SchedulerOutput, float, float, tuple] | None = None  # async scheduling: (batch, start, end, cost) running on the GPU
        self._last_preempted: tuple[str, ...] = ()
        self._carry_preempted: list[str] = []
        self._seq = 0
        self.aborted = 0  # requests whose client went away (see abort)
        self._sent: set[str] = set()  # ids submitted and still on their way through the API server

    def _policy(self) -> Any:
        """The scheduler as its own class, for what only some policies hold (their running
        requests, speculative decoding's counts): `scheduler` is typed as the base class, whose
        methods the loop calls directly."""
        return self.scheduler

    def _make_scheduler(self, config: EngineConfig, pool: BlockPool) -> Scheduler:
        lazy = self._lazy_queue
        if config.batching == "continuous":
            return ContinuousScheduler(config, pool, lazy_queue=lazy, speculative=self.speculative,
                                       acceptance=self._acceptance)
        if config.batching == "static":
            return StaticScheduler(config, pool, lazy_queue=lazy)
        if config.batching == "sequential":
            return SequentialScheduler(config, pool, lazy_queue=lazy)
        return DynamicScheduler(config, pool, encoder=self.encoder, lazy_queue=lazy)

    def reset(self, scenario: Scenario | None = None) -> None:
        """Start over (with a new scenario if given). A new scenario the engine refuses
        (ConfigError, ProfileError: `_parts`) changes nothing: the run goes on as it was."""
        if scenario is None:
            self._build()
            return
        own = scenario.profiles_path or scenario.hf_config_path
        profiles = self._profiles if not own else scenario.profiles()
        parts = _parts(scenario, profiles)
        self.scenario = scenario
        self._profiles = profiles
        self._build(parts)

    # -- traffic
    def submit(self, spec: RequestSpec, *, arrived: bool = False) -> None:
        """Queue one request (validated: an unservable request is refused with a reason). It
        arrives now, or at its own arrival time if that is later. `arrived`: its arrival time is
        when it truly reached the server, kept even if the clock is past it (a server's request
        that came while the iteration just run was on the GPU: it waits for the next schedule,
        and its latencies count from when it came)."""
        if self._front:
            # It reaches the engine once the API server has done its job (sent now, or when it
            # truly reached the server if `arrived`); the server answers one it refuses at once.
            if spec.arrival_time < self.time and not arrived:
                spec = replace(spec, arrival_time=self.time)
            refusal, duplicate = self._check(spec)
            if refusal is not None:
                self._refuse(spec, refusal, duplicate)
                return
            self._sent.add(spec.request_id)
            self.arrivals.submit(spec)
            self.done = False
        elif spec.arrival_time <= self.time:
            self._add(spec if arrived else replace(spec, arrival_time=self.time))
            if self.scheduler.has_work():
                self.done = False  # a finished run has work again
        else:
            self.arrivals.submit(spec)
            self.done = False

    def abort(self, request_id: str) -> bool:
        """The client of a submitted request went away: it stops (waiting or running), its KV
        blocks go back to the pool, and it is not booked as finished (vLLM counts an abort
        apart). False if it is unknown or already finished. Continuous batching only."""
        req = self.requests.get(request_id)
        abort = getattr(self.scheduler, "abort", None)
        if req is None or abort is None or not abort(req):
            return False
        self.aborted += 1
        if not self._keep_requests:
            self.requests.pop(request_id, None)
        if not self.scheduler.has_work() and self._in_flight is None and self._next_arrival() == math.inf:
            self.done = True
        return True

    def release(self, request_id: str) -> None:
        """Forget a finished request whose results its caller has read (an engine made with
        `keep_requests` keeps them until then: a server's memory stays bounded)."""
        req = self.requests.get(request_id)
        if req is not None and req.status == FINISHED:
            del self.requests[request_id]

    def sync(self) -> None:
        """Bring every running request's fields (tokens, token times) up to date: the continuous
        scheduler holds decoders compactly and settles them only when asked. For a caller that
        reads the Request objects of `requests` between iterations (the HTTP server)."""
        self.scheduler.sync()

    def _add(self, spec: RequestSpec, origin=None) -> None:
        """A request arrives: refused (headless: an error; live: a notice) or queued (`origin`:
        where it comes from in an endless workload's stream, for the compact queue)."""
        if self._sent:
            self._sent.discard(spec.request_id)
        refusal, duplicate = self._check(spec)
        if refusal is not None:
            self._refuse(spec, refusal, duplicate)
        if self._lazy_queue and origin is not None and not duplicate:
            run = self._tail_run
            lazy = self._policy()  # (its queue of runs, which the base does not declare)
            if run is not None and run.follows(origin) and lazy.waiting.can_extend(run):
                lazy.extend_run(run, refusal is None)  # (a refused one stays skipped)
            elif refusal is None:
                run = LazyRun(origin[0], origin[1], self._seq, self._accepts(), self._request)
                run.extend(True)
                lazy.add_request(run)
                self._tail_run = run
        elif refusal is None:
            req = self._request(spec, self._seq)
            self.requests[req.request_id] = req
            self.scheduler.add_request(req)
        elif duplicate:
            self._tail_run = None  # a run spans only what `accept` can tell again
        if refusal is None:
            self._seq += 1
            self.metrics.on_arrival(spec.arrival_time)

    def _check(self, spec: RequestSpec) -> tuple[RequestRejected | None, bool]:
        """(Why the request is refused or None, whether for its id): vLLM's checks, and an id that
        a request being served (or submitted and on its way through the API server) holds."""
        refusal = self._refusal(spec)
        if refusal is None:
            other = self.requests.get(spec.request_id)
            if (other is not None and other.status != FINISHED) or spec.request_id in self._sent:
                # Two live requests under one id would share one entry of the block pool.
                return RequestRejected(spec.request_id, "the id is already used by a request being served"), True
        return refusal, False

    def _refuse(self, spec: RequestSpec, refusal: RequestRejected, duplicate: bool) -> None:
        """A refused request: failed (the API server's words), an error (headless) or a notice (live)."""
        if self.api_server and not duplicate:
            # (A served run's failures are the server's words: each dial by its flag.)
            self.metrics.on_failed(spec.request_id, spec.arrival_time, spec.prompt_len, spec.output_len,
                                   refusal.spelled_reason(dials.flag_of))
        elif not self.live:
            raise refusal
        else:
            self.metrics.rejected += 1
            self.notices.append(str(refusal))
        self.arrivals.on_done(spec.request_id, self.time, served=False)  # the client hears of it at once

    def _refusal(self, spec: RequestSpec, config: EngineConfig | None = None) -> RequestRejected | None:
        """Why vLLM would refuse this request (or the simulator could never serve it), if so."""
        if config is None:
            config = self.config
        try:
            if self.api_server and not self.encoder and spec.prompt_len + spec.output_len > config.max_model_len:
                raise RequestRejected(
                    spec.request_id, f"this model's maximum context length is {config.max_model_len} tokens, "
                                     f"but {spec.prompt_len + spec.output_len} were requested ({spec.prompt_len} "
                                     f"in the prompt, {spec.output_len} for the completion)")
            if self.encoder:
                if spec.prompt_len > self.model.max_model_len:
                    raise RequestRejected(spec.request_id, f"its input of {spec.prompt_len} tokens is longer than "
                                                           f"the model's {self.model.max_model_len}")
            else:
                check_request(spec.request_id, spec.prompt_len, spec.output_len, config, self.pool)
                if spec.prompt_segments is not None:
                    check_segments(spec.request_id, spec.prompt_segments, spec.prompt_len)
        except RequestRejected as exc:
            return exc
        return None

    def _accepts(self):
        """The check of a request's arrival with today's dials (a run replays it later)."""
        config = self.config
        return lambda spec: self._refusal(spec, config) is None

    def _request(self, spec: RequestSpec, seq: int) -> Request:
        # (Positional: one is made for every arrival, as Request's parameters; the output segment
        # asked only of a conversation's turn: the property is an interpreted call.)
        return Request(spec.request_id, spec.arrival_time, spec.prompt_len, 1 if self.encoder else spec.output_len,
                       spec.priority, spec.pool, seq, spec.prompt_segments,
                       spec.output_segment if spec.conversation else None, spec.client_queue_time)

    def _admit_arrivals(self) -> None:
        """Queue every request that has arrived by now, in arrival order (the workload's first
        among equal times, then submitted ones); through the API server, those whose job there
        is done."""
        arrivals: Frontend | Arrivals = self.frontend if self._front else self.arrivals
        now = self.time
        if self._front:
            self.frontend.advance(now)
        while arrivals.next_at <= now and (spec := arrivals.pop_due(now)) is not None:
            self._add(spec, arrivals.origin)

    # -- dials
    def set_dial(self, path: str, value) -> None:
        """Change one dial (see `sim.dials`): engine dials apply from the next iteration,
        traffic to arrivals from now on, and hardware, model, seed or the engine's structure
        restart the run. A refused value (ConfigError) changes nothing."""
        spec = dials.find(path)
        new = dials.set_value(self.scenario, path, value, self._profiles)
        _ = self.last  # the last report describes the run before the change
        if spec.applies == "restart" or self.encoder:
            self.reset(new)
        elif spec.applies == "iteration":
            config = new.engine_config(self._profiles)
            _check_max_model_len(config, self.pool)
            self.scenario = new
            self.config = config
            self.cost = self._cost_model(config)  # its CUDA graph sizes follow the seats and budget
            self.scheduler.set_config(config)
            self._tail_run = None  # later arrivals are checked with the new dials
        elif self.arrivals.endless and is_endless(new.workload):
            self.scenario = new
            self.arrivals.set_workload(new.workload, self.time)  # arrivals not yet due are drawn again
        else:  # a finite workload: the run starts again with it
            refuse_at_once(self.arrivals.endless, new.workload)
            self.reset(new)

    # -- the loop
    def step(self) -> IterationReport | None:
        """Run one iteration; None once the workload is exhausted and nothing is left, or when an
        endless stream had MAX_REFUSED_IN_A_ROW arrivals refused in a row with nothing to run
        (`done` stays False; the clock is past them)."""
        while True:
            out = self._next_schedule()
            if out is None:
                return None
            if self._run(out, lean=False):
                return self._last

    def has_work(self) -> bool:
        return self.scheduler.has_work() or self._in_flight is not None

    def _next_schedule(self, until_time: float | None = None) -> SchedulerOutput | None:
        """Admit arrivals, skip idle time and schedule the next batch that runs something (or,
        with async scheduling, any batch while one is in flight); None once the workload is
        exhausted. A paced run (`until_time`) never jumps past its horizon: with nothing to run
        before it, the clock stops there and None comes back with `done` still False. Jumping
        would serve the next arrival early: the UI showed a request admitted and prefilled while
        the GPU was in fact idle, the clock ahead of the driver's."""
        sched = self.scheduler
        arrivals = self.arrivals
        guard = idle = 0
        while True:
            if self._next_arrival() <= self.time:
                self._admit_arrivals()
            if not (sched.has_work() or self._in_flight is not None):
                nxt = self._next_arrival()
                if nxt == math.inf:
                    self.done = True
                    return None
                if self._threads and nxt < self.frontend.next_at:
                    # The client's threads read and send while the engine waits (no chunk comes
                    # before its next iteration), whatever the horizon: the clock does not move.
                    self.frontend.advance(nxt)
                    continue
                if until_time is not None and nxt >= until_time:
                    self.time = max(self.time, until_time)
                    return None
                if self._front and nxt < self.frontend.next_at:
                    # A request is sent before any reaches the engine: with nothing running, no
                    # output comes before it, so the API server takes it now.
                    self.frontend.advance(nxt)
                    continue
                if until_time is None and arrivals.endless:
                    idle += 1  # (each jump after the first is past an arrival refused)
                    if idle > MAX_REFUSED_IN_A_ROW:
                        return None
                self.time = max(self.time, nxt)
                continue
            sched.now = self.time
            out = sched.schedule()
            if self._lazy_queue:
                for req in out.admitted:
                    self.requests.setdefault(req.request_id, req)
            if not out.is_empty or self._in_flight is not None:
                return out
            if out.preempted:
                # vLLM runs an empty iteration after preempting everything; it costs no GPU time.
                self._carry_preempted.extend(r.request_id for r in out.preempted)
                self.metrics.num_preemptions += len(out.preempted)
                guard += 1
                if guard > 4:
                    raise SimError("the engine cannot schedule anything (a request larger than the cache?)")
                continue
            wake = [t for t in (out.wake_at, self._next_arrival()) if t is not None and self.time < t < math.inf]
            if not wake:
                raise SimError("the engine has queued work but nothing it can schedule")
            if until_time is not None and min(wake) >= until_time:
                self.time = max(self.time, until_time)
                return None
            self.time = min(wake)

    def _run(self, out: SchedulerOutput, lean: bool = True) -> bool:
        """Price a scheduled batch (the cost model, once) and process the batch whose output is
        due: this one, or with async scheduling the one in flight (this one then runs on the GPU
        after it). True if a batch's output was processed (an iteration ran)."""
        if out.encoder_batch:
            seconds = self.cost.encoder_pass(out.encoder_batch, out.encoder_input_len).total
            cost: tuple = ("encoder", out.encoder_batch, out.encoder_input_len)
        elif self.speculative is not None:
            # A decode row verifies its drafts: its tokens are linear-layer tokens and attention
            # queries over a context it reads once.
            num_decode = verify = 0
            context = 0
            chunks = []
            for _, n, before, decode in out.scheduled:
                if decode:
                    num_decode += 1
                    context += before + n
                    verify += n - 1
                else:
                    chunks.append((before, n))
            # The drafter runs over every row, unless no row can use its drafts (all mid-prefill:
            # vLLM 0.33's model runner then skips drafting).
            rows = num_decode + len(chunks) if out.sampling else 0
            seconds = self.cost.spec_iteration_time(num_decode, context, chunks, verify, rows)
            cost = (num_decode, context, chunks, verify, rows)
        else:
            num_decode = out.num_compact + out.padded
            context = out.compact_context + out.padded_context
            chunks = []
            longest = max(w[1] for w in out.scheduled) if out.padded_prefill_tokens else 0
            for _, n, before, decode in out.scheduled:
                if decode:
                    num_decode += 1
                    context += before + 1
                else:
                    chunks.append((before, longest or n))
            seconds = self.cost.iteration_time(num_decode, context, chunks)
            cost = (num_decode, context, chunks)  # what the report's breakdown needs
        if not self._async:
            self._process(out, self.time, self.time + seconds, cost, lean)
            return True
        in_flight, self._in_flight = self._in_flight, None
        if in_flight is not None:
            batch, start, end, priced = in_flight  # (unpacked: a typed call, not a call with *args)
            self._process(batch, start, end, priced, lean)
        if out.is_empty:  # costs nothing; its preemptions show in the next report
            self._carry_preempted.extend(r.request_id for r in out.preempted)
            self.metrics.num_preemptions += len(out.preempted)
        else:
            self._in_flight = (out, self.time, self.time + seconds, cost)
        return in_flight is not None

    def _process(self, out: SchedulerOutput, start: float, end: float, cost: tuple, lean: bool) -> None:
        """The batch ran from `start` to `end`: its output is processed and booked. `lean`
        (headless runs) defers building the IterationReport: `self.last` is made from the stash
        only when someone asks."""
        sched = self.scheduler
        self.iteration += 1
        if self._front:
            # The batch's tokens reach their clients once the API server has streamed them: they
            # are stamped with that time (the scheduler's token times are the clients').
            frontend = self.frontend
            tokens = sched.tokens_out(out)
            before = frontend.last_seen
            seen = frontend.output(end, tokens) if tokens else before
            result: UpdateResult = sched.update_from_output(out, before, seen)
            if self._threads and (tokens or result.finished):
                # Its client's threads read each request's chunk in their turns (`_client_read`).
                # (A request that finished an iteration before and is forgotten, its stream closed,
                # may still be in this batch, scheduled before that iteration's outputs: no chunk.)
                requests = self.requests
                emitted = [requests.get(r.request_id) for r in sched.describe(out) if r.sampled]
                frontend.stream(seen, [req for req in emitted if req is not None], result.finished)
        else:
            seen = end
            result = sched.update_from_output(out, start, end)
        self.time = end
        metrics = self.metrics
        if not self._threads:  # (else each read is booked as the client's threads read it)
            for gap, count in result.gaps:
                metrics.on_gaps(gap, count)
        for req in result.first_tokens:
            req.first_token_iteration = self.iteration
        if not self._threads:
            for req in result.finished:
                self._finish(req, seen)
        if out.preempted or self._carry_preempted:
            preempted = tuple(self._carry_preempted) + tuple(r.request_id for r in out.preempted)
            self._carry_preempted = []
            metrics.num_preemptions += len(out.preempted)
        else:
            preempted = ()
        batch = out.num_compact + len(out.scheduled)
        seats = batch + out.padded if not out.encoder_batch else 0
        kv_used = self.pool.usable - self.pool.free
        metrics.on_iteration(start, end, batch, kv_used, out.binding_limit, result.num_emitted,
                             len(result.finished), seats, out.padded, seen)
        self._last_preempted = preempted
        self._stash = (self.iteration, start, end, cost, out, result, preempted, result.num_running,
                       result.num_waiting, kv_used, seen if self._front else None)
        if not lean:
            self._last = self._report(*self._stash)
            self._stash = None

    def _client_read(self, req: Request, when: float, first: bool, gap: float | None,
                     longest: float | None) -> None:
        """The client's thread read a chunk of `req` at `when` (`sim.frontend.Frontend.on_read`):
        its first token is seen then, or a gap of its ITL ends; the last ends the request."""
        metrics = self.metrics
        if first:
            req.first_token_time = when
        elif gap is not None:
            metrics.on_gaps(gap, 1)
        if when > metrics.last_token_time:
            metrics.last_token_time = when
        if longest is not None:
            req.max_gap = longest
            self._finish(req, when)

    def _finish(self, req: Request, end: float) -> None:
        """`req` finished, its last token reaching its client at `end`."""
        req.finish_time = end
        req.finish_iteration = self.iteration
        arrival = req.arrival_time
        outputs = req.num_output_tokens
        ttft = req.first_token_time - arrival  # type: ignore[operator]  # (set: it sampled)
        e2e = end - arrival
        tpot = (e2e - ttft) / (outputs - 1) if outputs > 1 else None
        cached = req.num_cached_tokens
        # (A RequestRecord's fields, in their order: the record is made when read.)
        self.metrics.on_finish_row((req.request_id, req.pool, arrival, req.prompt_len, outputs, ttft, e2e,
                                    tpot, req.num_preemptions, req.max_gap, req.finish_reason,
                                    cached if cached > 0 else 0, req.client_queue_time))
        if not self._keep_requests:
            self.requests.pop(req.request_id, None)
        arrivals = self.arrivals
        if arrivals.listens:
            arrivals.on_done(req.request_id, end, answered=req.num_output_tokens)

    def _report(self, index, start, end, cost, out, result, preempted, running, waiting,
                kv_used, seen=None) -> IterationReport:
        """The one place an IterationReport is made (from what `_process` kept of the
        iteration; dials do not change between the two)."""
        rows = self.scheduler.describe(out)
        if cost[0] == "encoder":
            breakdown = self.cost.encoder_pass(cost[1], cost[2])
        elif len(cost) == 5:  # (speculative decoding's: verified drafts and rows too)
            breakdown = self.cost.spec_iteration(*cost)
        else:
            breakdown = self.cost.iteration(*cost)
        # An encoder pass lists no per-request work: each input is one whole pass (the views
        # read the pass's size from what it emitted).
        scheduled = () if out.encoder_batch else tuple(
            ScheduledWork(r.request_id, r.num_tokens, r.is_prefill, r.context_len) for r in rows)
        return IterationReport(
            index=index, start_time=start, end_time=end, scheduled=scheduled,
            num_decode_tokens=sum(w.num_tokens for w in scheduled if not w.is_prefill),
            num_prefill_tokens=sum(w.num_tokens for w in scheduled if w.is_prefill),
            token_budget=self.config.token_budget,
            max_num_seqs=self._seat_cap(),
            admitted=tuple(r.request_id for r in out.admitted),
            first_tokens=tuple(r.request_id for r in result.first_tokens),
            emitted=tuple(r.request_id for r in rows if r.sampled),
            finished=tuple(r.request_id for r in result.finished),
            preempted=preempted,
            running=running,
            waiting=waiting,
            kv_blocks_used=kv_used,
            kv_blocks_usable=self.pool.usable,
            binding_limit=out.binding_limit,
            cost=self.cost.report_parts(breakdown),
            padded_seats=out.padded,
            seen_time=seen,
            **_spec_counts(result.spec),
        )

    @property
    def last(self) -> IterationReport | None:
        """The report of the last iteration run (headless runs make it only when asked)."""
        if self._stash is not None:
            stash, self._stash = self._stash, None
            if len(stash) == 2 and len(stash[1]) == 12:  # (index, a first decode call's batch)
                index, (req, start, end, used, binding, batch, seen, itl, out, cost, running, waiting) = stash
                result = UpdateResult(num_emitted=batch)
                result.first_tokens.append(req)
                result.gaps = [(itl, batch - 1)] if batch > 1 else []
                result.num_running, result.num_waiting = running, waiting
                stash = (index, start, end, cost, out, result, (), running, waiting, used,
                         seen if self._front else None)
            elif len(stash) == 2:  # (index, the last decode stretch run): its last iteration
                index, part = stash  # (see sim.schedulers.base.DECODE_STRETCH_FIELDS)
                _, end, last_start, _, _, batch, last_context, _, binding, finished, used_last, running, waiting, \
                    seen, _ = part
                out = SchedulerOutput(num_compact=batch, compact_context=last_context, binding_limit=binding,
                                      compact_finished=finished, finished=finished)
                result = UpdateResult(num_emitted=batch, finished=[req for _, req in finished])
                stash = (index, last_start, end, (batch, last_context, ()), out, result, (), running, waiting,
                         used_last, None if seen is None else float(seen[-1]))
            self._last = self._report(*stash)
        return self._last

    def _frontend_costs(self, config: EngineConfig) -> FrontendCosts:
        """The API servers' costs as the deployment prices them (none in front: 0 servers). vLLM's
        API server fronts vLLM's engine, continuous batching; the sequential, static and dynamic
        policies stand for classic servers, whose front is not modelled."""
        if not self._frontend_wanted or not config.api_server_count or config.batching != "continuous":
            # (batchtui serve is the API server itself, its request handling and streaming done
            # for real. It adds no transit either: its real way in (the client's HTTP, the
            # server's parsing, the event loop) already takes what the transit and the request's
            # job price, 4-5 ms from the client to the engine and back in the served closed loop
            # (benchmarks/closed_loop.py), so the transit added would count that way twice: its
            # calibration then fitted overhead_s 7.5 ms and left eta_bw undetermined, where it
            # recovers the hidden 0.66 without.)
            return FrontendCosts(servers=0)  # (the other policies stand for classic servers)
        d, w = self.deployment, self.scenario.workload
        return FrontendCosts(d.frontend_request_s, d.frontend_prompt_token_s, d.frontend_output_token_s,
                             config.api_server_count, w.client_request_s, w.client_token_s, TRANSIT_S)

    def next_event(self) -> float:
        """When the engine next has a request to take in (inf if none will come): a live caller
        (batchtui serve's pacer) runs the engine again then. Never before the clock: a request
        already due (one stamped with when it truly came, behind the clock) is due now."""
        t = self._next_arrival()
        return t if t > self.time else self.time

    def _next_arrival(self) -> float:
        """When the next request reaches the engine, or (through the API server) is sent; behind
        the clock if one is already due (the engine's own loops take those first)."""
        return self.frontend.next_event if self._front else self.arrivals.next_at

    def _cost_model(self, config) -> CostModel:
        """The iteration times of this deployment under these dials: their CUDA graph capture
        sizes (vLLM 0.33's defaults; none for an encoder: graphs are not modelled for pooling passes)."""
        sizes = () if self.encoder else cudagraph_capture_sizes(config, self.deployment.gpu.cudagraph_ceiling)
        return CostModel(self.deployment, overlap=config.overlaps_host, graph_sizes=sizes)

    def _seat_cap(self) -> int:
        b = self.config.batching
        if b == "continuous":
            return self.config.seats
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
        enabled = gc.isenabled()
        gc.disable()  # (a run makes no reference cycles: docs/performance.md, "The collector paused")
        try:
            self._advance(until_time, max_iterations)
            return self.summary()
        finally:
            if enabled:
                gc.enable()

    def advance_until(self, time: float, max_iterations: int | None = None) -> int:
        """Run iterations while the clock is before `time` (at most `max_iterations`), as many
        step() calls would, and return how many ran; an engine idle until after `time` stops
        there, its clock at `time`. For the driver: cheaper than run(), which also computes the
        summary."""
        return self._advance(time, max_iterations)

    def _advance(self, until_time: float | None, max_iterations: int | None) -> int:
        """The loop of run(): step() without reports, and stretches of alike decode iterations
        in bulk where the scheduler has them, booked as the iterations they are (the same
        numbers, in the same order, as one iteration at a time). Results are identical to
        calling step()."""
        n = 0
        stretch = getattr(self.scheduler, "async_stretch" if self._async else "decode_stretch", None)
        if self.speculative is not None or self._threads:
            # (One iteration at a time: a decoder's tokens per step vary; a client's threads read
            # each request's tokens at its own time.)
            stretch = None
        asynchronous = self._async
        continuous = self.scheduler if isinstance(self.scheduler, ContinuousScheduler) else None  # (called directly)
        arrivals = self.arrivals
        frontend = self.frontend if self._front else None
        cost = self.cost
        while True:
            if until_time is not None and self.time >= until_time:
                break
            if max_iterations is not None and n >= max_iterations:
                break
            if stretch is not None and not self._carry_preempted and (not asynchronous or (
                    self._in_flight is not None and len(self._in_flight[0].scheduled) < 2)):
                # (Async: a stretch starts from a batch in flight of compact decoders only, or
                # with one admitted request's prompt besides: see async_stretch.)
                if self._next_arrival() <= self.time:
                    self._admit_arrivals()
                # (Through the API server: no request reaches the engine before its horizon.)
                nxt = arrivals.next_at if frontend is None else frontend.horizon()
                limit = nxt if until_time is None else min(nxt, until_time)
                calls = MAX_STRETCH if max_iterations is None else max_iterations - n
                if not asynchronous:
                    got = stretch(cost, self.time, limit, calls, arrivals.listens, frontend)
                    if got:
                        n += self._book_stretches(got)
                        continue
                elif self._in_flight is not None and continuous is not None:
                    got = continuous.async_stretch(cost, self._in_flight, limit, calls, arrivals.listens, frontend)
                    if got:
                        # Calls run in bulk, each leaving a batch in flight (the last one's is kept).
                        parts, self._in_flight = got
                        n += self._book_stretches(parts)
                        continue
            out = self._next_schedule(until_time)
            if out is None:
                break
            if self._run(out):
                n += 1
        return n

    def _book_stretches(self, got) -> int:
        """Book decode stretches run in bulk as the iterations they are (the same numbers, in the
        same order, as one iteration at a time); returns how many iterations they held."""
        metrics = self.metrics
        series = metrics.series_interval is not None
        n = 0
        for part in got:  # (see sim.schedulers.base.DECODE_STRETCH_FIELDS)
            if len(part) == 12:  # a request's first decode call's batch (FIRST_DECODE_FIELDS)
                req, start, end, used, binding, batch, seen, itl = part[:8]
                self.iteration += 1
                n += 1
                self.time = end
                if batch > 1:
                    metrics.on_gaps(itl, batch - 1)  # (the decoders': the request's first token is no gap)
                req.first_token_iteration = self.iteration
                metrics.on_iteration(start, end, batch, used, binding, batch, 0, batch, 0, seen)
                continue
            start, end, last_start, ends, gaps, batch, _, used, binding, finished, used_last, _, _, seen, itl = part
            k = len(ends)
            self.iteration += k
            n += k
            self.time = end
            # When the last iteration's tokens reached their clients (through the API server).
            seen_end = end if seen is None else float(seen[-1])
            if not finished:
                metrics.on_decode_iterations(start, ends, gaps, batch, used, binding, seen_ends=seen, itl=itl)
            elif series:  # the finished are booked before the last iteration's series point
                if k > 1:
                    metrics.on_decode_iterations(start, ends[:-1], gaps[:-1], batch, used, binding,
                                                 seen_ends=None if seen is None else seen[:-1],
                                                 itl=None if itl is None else itl[:-1])
                metrics.on_gaps(float((gaps if itl is None else itl)[-1]), batch)
                for _, req in finished:
                    self._finish(req, seen_end)
                metrics.on_iteration(last_start, end, batch, used_last, binding, batch,
                                     len(finished), batch, seen=seen_end)
            else:
                metrics.on_decode_iterations(start, ends, gaps, batch, used, binding, len(finished),
                                             used_last, seen_ends=seen, itl=itl)
                for _, req in finished:
                    self._finish(req, seen_end)
        self._stash = (self.iteration, part)
        self._last_preempted = ()
        return n

    def summary(self, **options) -> RunSummary:
        """The run so far (`options`: `percentiles` and `goodput`, as `Metrics.summary` takes them)."""
        duration = self.metrics.last_token_time
        metrics = self.metrics.summary(duration, **options)
        for key, value in self.prefix_cache_stats().items():
            metrics.setdefault(key, value)
        for key, value in self.spec_decode_stats().items():
            metrics.setdefault(key, value)
        return RunSummary(self.scenario, metrics, self.metrics.pool_summary(metrics),
                          self.iteration, self.metrics.records, self.metrics.failed, self.frontend.ceiling(),
                          caps.copy() if (caps := getattr(self.scheduler, "caps", None)) is not None else None)

    def prefix_cache_stats(self) -> dict:
        """Prefix cache lookups so far, in tokens, as vLLM's PrefixCacheStats counts them when a
        request is admitted: `prefix_cache_queries` and `prefix_cache_hits` for first admissions
        (vLLM's prefix_cache_queries / prefix_cache_hits counters), the hit rate (hits/queries,
        0 with no query), and the same for resumptions after a preemption."""
        stats = getattr(self.scheduler, "prefix_stats", None) or (0, 0, 0, 0)
        queries, hits, p_queries, p_hits = stats
        return {
            "prefix_cache_queries": queries,
            "prefix_cache_hits": hits,
            "prefix_cache_hit_rate": hits / queries if queries else 0.0,
            "prefix_cache_preempted_queries": p_queries,
            "prefix_cache_preempted_hits": p_hits,
        }

    def spec_decode_stats(self) -> dict:
        """Speculative decoding so far, as `vllm bench serve` reports it from vLLM's
        vllm:spec_decode_* counters ({} without speculative decoding): drafts (verifications),
        draft tokens, accepted tokens, the acceptance rate (%, accepted / draft tokens), the mean
        acceptance length (1 + accepted / drafts) and the acceptance rate per draft position
        (accepted at that position / drafts). As in vLLM, the padding rows of a request admitted
        with one token count as drafts (none accepted), and so do an async step's placeholder
        drafts the drafter found nothing for."""
        if self.speculative is None:
            return {}
        drafts, draft_tokens, accepted, per_position = self._policy().spec_stats
        return {
            "spec_decode_acceptance_rate": 100.0 * accepted / draft_tokens if draft_tokens else 0.0,
            "spec_decode_acceptance_length": 1.0 + accepted / drafts if drafts else 1.0,
            "spec_decode_num_drafts": drafts,
            "spec_decode_draft_tokens": draft_tokens,
            "spec_decode_accepted_tokens": accepted,
            "spec_decode_per_position_acceptance_rates": [n / drafts if drafts else 0.0 for n in per_position],
        }

    # -- for the UI
    def snapshot(self) -> EngineSnapshot:
        sched = self.scheduler
        prefix = self.prefix_cache_stats()
        last = self.last
        seats: list[SeatView] = []
        held = self.pool.held
        # Seats as they stand when the last iteration ends: a batch already scheduled (async) counts tokens before it.
        ahead: dict[str, int] = {} if self._in_flight is None else {
            req.request_id: before for req, _, before, _ in self._in_flight[0].scheduled}
        for req in sched.seated():
            done = ahead.get(req.request_id, req.num_computed_tokens)
            if req.status == FINISHED:
                seats.append(SeatView("padded", req.request_id, 1.0, held(req.request_id)))
            elif req.prefilling_at(done, 0):
                seats.append(SeatView("prefill", req.request_id, min(1.0, done / max(1, req.num_tokens)),
                                      held(req.request_id)))
            else:
                seats.append(SeatView("decode", req.request_id, req.num_output_tokens / max(1, req.output_len),
                                      held(req.request_id)))
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
            max_num_seqs=self._seat_cap(),
            queue_len=sched.num_waiting,
            running=len(self._policy().running),
            kv_blocks_used=self.pool.used,
            kv_blocks_usable=self.pool.usable,
            kv_blocks_by_request=tuple(sorted(self.pool.holdings().items(), key=lambda kv: -kv[1])[:256]),
            last=last,
            metrics=m.view(self.time),
            series_throughput=tuple(m.series_throughput),
            series_ttft=tuple(m.series_ttft),
            series_tpot=tuple(m.series_tpot),
            series_itl=tuple(m.series_itl),
            finished=self.done,
            notices=tuple(self.notices),
            block_size=self.pool.block_size,
            async_scheduling=self._async,
            cached_blocks=self.pool.cached,
            evictable_blocks=self.pool.evictable,
            prefix_caching=self.pool.caching,
            prefix_cache_queries=prefix["prefix_cache_queries"],
            prefix_cache_hits=prefix["prefix_cache_hits"],
            encoder=self.encoder,
            **self._spec_totals(),
        )

    def _spec_totals(self) -> dict:
        """The snapshot's speculative decoding fields (none without it)."""
        spec = self.speculative
        if spec is None:
            return {}
        drafts, draft_tokens, accepted, _ = self._policy().spec_stats
        return {"spec_method": spec.method, "spec_k": spec.k, "spec_drafts": drafts,
                "spec_draft_tokens": draft_tokens, "spec_accepted": accepted}


def _spec_counts(counts: tuple[int, int, int] | None) -> dict:
    """An iteration report's speculative decoding fields from what its output counted."""
    if counts is None:
        return {}
    drafts, draft_tokens, accepted = counts
    return {"spec_drafts": drafts, "spec_draft_tokens": draft_tokens, "spec_accepted": accepted}


def run_scenario(scenario: Scenario, **kwargs) -> RunSummary:
    """Run a scenario to the end, headless, and return its summary."""
    return Engine(scenario, **kwargs).run()


def sweep(scenario: Scenario, rates, **kwargs) -> list[RunSummary]:
    """The same scenario at several request rates (requests/s; math.inf = all at once)."""
    return [run_scenario(scenario.with_workload(request_rate=float(r)), **kwargs) for r in rates]

