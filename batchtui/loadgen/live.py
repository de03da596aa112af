"""A real server driven live beside the simulator (the playground's `--server URL`).

`LiveSession(url)` opens one client to the server (`open`: its model from /v1/models, its time
scale from /metrics, prompts sized through its /tokenize), then `run(scenario, on_measured)`
sends the scenario's traffic as `batchtui bench` does (`send_traffic` over
`sim.arrivals.Arrivals.for_scenario`: the arrivals, lengths, client cap and conversations the
simulated engine serves for the same scenario) until `stop_run()`, and hands `on_measured` a
`Measured` every half second of the server's time: what a learner reads beside the simulator.

The client runs on an event loop of its own, in a thread of its own (`open` starts it, `close`
or `end_now` ends it): in the app's loop its clock would read the answers only when the
simulation's frame work let it (TTFT came out 60 ms late a request on a busy machine). The
coroutines called from the app's loop (`open`, `run`, `close`) run there and are awaited here;
`on_measured` is called on the caller's loop.

What is measured, and how it is made comparable with the simulator's live figures
(`sim.metrics.MetricsCollector.view` and its series):

- tokens/s: the server's own `vllm:generation_tokens` counter over the last `RATE_WINDOW_S`
  (the simulator's window), read from /metrics; a server without /metrics: the output tokens of
  the answers that ended in that window (said by `Measured.tokens_from`);
- TTFT and TPOT p50: over the last `PERCENTILE_WINDOW` answers the client saw (vllm bench
  serve's definitions, `loadgen.client`), in the server's seconds (real seconds times its time
  scale); the series points the median of the last `SERIES_RECENT`, as the simulator's;
- running, waiting and KV use: the gauges `vllm:num_requests_running`,
  `vllm:num_requests_waiting`, `vllm:kv_cache_usage_perc` at the last scrape.

Memory stays bounded however long the session runs: the last `KEPT_REQUESTS` answers of a
segment (a run of one scenario) and the last `KEPT_SEGMENTS` segments are kept, which is what
`result` writes as vLLM result files (for `batchtui calibrate`).

A server that goes away (connections refused or reset, /metrics unanswered for `STALE_S`) ends
the segment with `Measured.gone`, one line; a bad URL or a server that cannot be reached is a
`LiveError` from the constructor or `open`, one line.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import statistics
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from sim.reports import RATE_WINDOW_S

SERIES_INTERVAL_S = 0.5
"""Server seconds between series points and scrapes: the live engine's series interval
(`sim.engine.Engine(live=True)`)."""
SERIES_RECENT = 32
"""A latency series point is the median of the last this many answers, as the simulator's
(`sim.metrics.MetricsCollector._push_series`)."""
SERIES_LEN = 240
"""Series points kept (the simulator's `MetricsCollector.series_len`)."""
PERCENTILE_WINDOW = 512
"""Answers the p50s are taken over: the simulator's live window (`MetricsCollector.window`)."""
KEPT_REQUESTS = 2000
"""Answers of a segment kept for its result file (the last ones)."""
KEPT_SEGMENTS = 8
"""Segments kept for `results` (the last ones)."""
GONE_AFTER = 3
"""Answers in a row lost to the connection (refused, reset, timed out) that say the server went."""
STALE_S = 5.0
"""Real seconds without an answer from /metrics (which answered before) that say it went."""
SHUTDOWN_S = 1.0
"""The most the session's end waits for a thread of its loop (a host name looked up cannot be
stopped: past this its thread is left to finish alone)."""
CONNECTION_WORDS = ("cannot connect", "closed the connection", "did not answer in time", "broke off")
"""The client's one-line errors (`loadgen.client.connection_error`) that mean the connection, not
the request, failed."""


class LiveError(Exception):
    """The server cannot be used (a bad URL, nothing there, not an OpenAI-compatible server):
    one line."""


@dataclass(frozen=True)
class Measured:
    """The server's figures now, as the view draws them beside the simulator's (times in the
    server's seconds; None: not known yet, or the server does not say)."""

    time: float
    """Server seconds since the segment's traffic started."""
    completed: int
    failed: int
    tokens_per_s: float | None
    ttft_p50: float | None
    tpot_p50: float | None
    running: float | None
    waiting: float | None
    kv_usage: float | None
    """0..1, the fullest engine's."""
    series_throughput: tuple[float, ...] = ()
    series_ttft: tuple[float, ...] = ()
    series_tpot: tuple[float, ...] = ()
    tokens_from: str = "metrics"
    """"metrics" (the server's generation counter) or "answers" (no /metrics: ended answers)."""
    gone: str = ""
    """Why the server went away (one line), or ""."""
    time_scale: float = 1.0
    server: str = ""
    """host:port."""
    model: str = ""
    error: str = ""
    """The last failed request's error (one line), or ""."""


def base_url(url: str) -> str:
    """http(s)://host[:port] from what a learner types (a trailing /v1 or / dropped); LiveError."""
    text = url.strip()
    if "://" not in text and text:
        text = "http://" + text
    if not text.startswith(("http://", "https://")):
        raise LiveError(f"{url.strip() or 'an empty address'} is not an http:// or https:// address")
    rest = text.split("://", 1)[1]
    host = rest.split("/", 1)[0]
    port = host.rsplit(":", 1)[1] if ":" in host and not host.endswith("]") else None
    name = host[:len(host) - len(port) - 1] if port is not None else host
    if not name or any(c.isspace() for c in host):
        raise LiveError(f"{url.strip()} names no server (http://HOST:PORT)")
    if port is not None and not (port.isdigit() and 0 < int(port) < 65536):
        raise LiveError(f"{url.strip()}: {port!r} is not a port (1 to 65535)")
    path = rest[len(host):].rstrip("/")
    if path not in ("", "/v1"):
        raise LiveError(f"{url.strip()}: give the server's address, http://HOST:PORT, without a path")
    return text.split("://", 1)[0] + "://" + host


@dataclass
class Segment:
    """One scenario's traffic sent to the server: what the session keeps of it."""

    scenario: object
    time_scale: float
    start: float = 0.0
    """perf_counter when its traffic started."""
    started: datetime = field(default_factory=datetime.now)
    end: float = 0.0
    """perf_counter of its last answer (or its stop)."""
    kept: deque = field(default_factory=lambda: deque(maxlen=KEPT_REQUESTS))
    """The last `loadgen.traffic.Sent` answered (for the result file)."""
    recent: deque = field(default_factory=lambda: deque(maxlen=PERCENTILE_WINDOW))
    """(ttft, tpot or None) of the last answers that succeeded, in server seconds."""
    ended: deque = field(default_factory=deque)
    """(end, output tokens) of answers that ended in the last rate window (no /metrics)."""
    completed: int = 0
    failed: int = 0
    lost_in_a_row: int = 0
    error: str = ""
    watch: object = None
    """Its `loadgen.scrape.ServerWatch`."""

    def now(self) -> float:
        return (time.perf_counter() - self.start) * self.time_scale

    def answered(self, sent) -> None:
        """`send_traffic`'s on_answer: one request's outcome."""
        out = sent.outcome
        x = self.time_scale
        self.kept.append(sent)
        self.end = max(self.end, out.start + out.latency if out.success else time.perf_counter())
        if not out.success:
            self.failed += 1
            self.error = out.error
            lost = any(words in out.error for words in CONNECTION_WORDS)
            self.lost_in_a_row = self.lost_in_a_row + 1 if lost else 0
            return
        self.lost_in_a_row = 0
        self.completed += 1
        n = out.output_tokens or 1 + len(out.itl)
        tpot = (out.latency - out.ttft) * x / (n - 1) if n > 1 else None
        self.recent.append((out.ttft * x, tpot))
        self.ended.append(((out.start + out.latency - self.start) * x, n))


def _median(values) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


class LiveSession:
    """One server, driven with the playground's traffic; see the module's doc."""

    def __init__(self, url: str) -> None:
        from .client import Endpoint

        self.url = base_url(url)
        self.endpoint = Endpoint(base_url=self.url, ignore_eos=True)
        self.where = self.url.split("://", 1)[1]
        self.client = None
        self.model = ""
        self.prompts = None
        self.time_scale = 1.0
        self.segments: deque[Segment] = deque(maxlen=KEPT_SEGMENTS)
        self.segment: Segment | None = None
        """The segment running now (None between runs)."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None
        self._stop_wanted = False
        self._shutdown_future: concurrent.futures.Future | None = None

    # -- the client's own loop and thread
    async def _call(self, coroutine):
        """Run `coroutine` on the session's loop and await it here (cancelled with the caller)."""
        if self._loop is None:
            loop = self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=loop.run_forever, name=f"batchtui-live-{self.where}",
                                            daemon=True)
            self._thread.start()
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, self._loop))

    def stop_run(self) -> None:
        """End the run going on (from any thread)."""
        self._stop_wanted = True
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(stop.set)

    async def _shutdown(self) -> None:
        """On the session's loop, once (`_closing`): every other task there cancelled and awaited,
        the client closed (aiohttp's own closing task awaited), the loop's threads ended."""
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self.client is not None:
            client, self.client = self.client, None
            await client.__aexit__(None, None, None)
        # The loop's threads (a host name being looked up) end too, unless one hangs.
        await asyncio.wait({asyncio.ensure_future(asyncio.get_running_loop().shutdown_default_executor())},
                           timeout=SHUTDOWN_S)

    def _closing(self) -> concurrent.futures.Future | None:
        """The session's one shutdown, started on its loop by the first of `close` and `end_now`
        to ask (the app closing while a session disconnects asks both at once: two shutdowns
        cancelled each other, and the loop stopped under aiohttp's closing task); None when the
        loop is not running."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or not thread.is_alive() or loop.is_closed():
            return None
        if self._shutdown_future is None:
            self._shutdown_future = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
        return self._shutdown_future

    async def close(self) -> None:
        """End the session: its requests cancelled (the server aborts them), its loop and thread
        ended (also when the caller is cancelled meanwhile)."""
        closing = self._closing()
        try:
            if closing is not None:
                await asyncio.shield(asyncio.wrap_future(closing))
        except asyncio.CancelledError:
            if closing is None or not closing.cancelled():  # (else: `end_now` gave up on it)
                raise
        finally:
            self.end_now()

    def end_now(self, timeout: float = 2 * SHUTDOWN_S) -> None:
        """`close`, blocking (the app is closing and its loop may not run again)."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        closing = self._closing()
        self._loop = self._thread = self._shutdown_future = None
        if closing is not None:
            try:
                closing.result(timeout)
            except Exception:  # noqa: BLE001 -- ending regardless: a client that would not close
                pass
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout)
            closing.cancel()  # (a shutdown past `timeout`: a `close` waiting on it returns)
        if not thread.is_alive():
            loop.close()

    async def open(self) -> None:
        """Reach the server: its model, time scale and prompts. LiveError (one line)."""
        await self._call(self._open())

    async def _open(self) -> None:
        from .client import Client, ServerUnreachable
        from .prompts import prepare
        from .scrape import Scrape

        self.client = await Client(self.endpoint).__aenter__()
        try:
            try:
                models = await self.client.models()
            except ServerUnreachable as exc:
                raise LiveError(str(exc)) from None
            if models is None:
                raise LiveError(f"{self.where} has no /v1/models: not an OpenAI-compatible server")
            if not models:
                raise LiveError(f"{self.where} serves no model (its /v1/models is empty)")
            self.model = self.endpoint.model = models[0]
            scrape = Scrape.parse(await self.client.metrics_text())
            scale = scrape.time_scale if scrape is not None else None
            self.time_scale = scale or 1.0
            self.prompts = await prepare(self.client, server="batchtui serve" if scale else "the server")
        except BaseException:
            client, self.client = self.client, None
            await client.__aexit__(None, None, None)
            raise

    async def run(self, scenario, on_measured: Callable[[Measured], None]) -> Segment:
        """Send `scenario`'s traffic until `stop_run()` or the server goes away; `on_measured`
        (on the caller's loop) every half second of the server's time. Returns the segment (also
        kept in `segments`)."""
        caller = asyncio.get_running_loop()
        self._stop_wanted = False

        def post(measured: Measured) -> None:
            if not caller.is_closed():
                caller.call_soon_threadsafe(on_measured, measured)

        return await self._call(self._run(scenario, post))

    async def _run(self, scenario, on_measured: Callable[[Measured], None]) -> Segment:
        from sim.arrivals import Arrivals

        from .prompts import Prompts
        from .scrape import ServerWatch
        from .traffic import send_traffic

        arrivals = Arrivals.for_scenario(scenario)
        p = self.prompts
        # New words for a new segment (a fresh salt): the server's prefix cache never serves it
        # from an earlier one, as the simulated engine, which starts empty, never does.
        prompts = Prompts(p.words, p.specials, p.exact, p.rule, dataset_prompts=arrivals.dataset_prompts)
        x = self.time_scale
        stop = self._stop = asyncio.Event()
        if self._stop_wanted:
            stop.set()
        seg = self.segment = Segment(scenario, x)
        interval = SERIES_INTERVAL_S / x
        watch = seg.watch = ServerWatch(self.endpoint, interval=interval)
        await watch.start()
        seg.start = seg.end = time.perf_counter()
        seg.started = datetime.now()
        traffic = asyncio.create_task(send_traffic(self.client, arrivals, prompts, time_scale=x, stop=stop,
                                                   on_answer=seg.answered, keep_sent=False))
        figures = _Figures(seg, watch, self)
        gone = ""
        closing = False
        try:
            while not stop.is_set() and not traffic.done():
                waiter = asyncio.create_task(stop.wait())
                await asyncio.wait({waiter, traffic}, timeout=interval, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
                gone = figures.gone()
                on_measured(figures.sample(gone))
                if gone:
                    break
        except asyncio.CancelledError:  # the app is closing: nothing more is asked of the server
            closing = True
            traffic.cancel()
            raise
        finally:
            stop.set()
            try:
                await asyncio.gather(traffic, return_exceptions=True) if closing else await traffic
            finally:
                await watch.stop(read_after=not closing)
                seg.end = max(seg.end, seg.start)
                self.segments.append(seg)
                self.segment = None
        return seg

    def results(self, meta: dict | None = None) -> list[dict]:
        """The kept segments with answers, each as vllm bench serve's result file (its keys,
        the detailed arrays, batchtui's own key)."""
        return [self.result(seg, meta or {}) for seg in self.segments if seg.completed]

    def result(self, seg: Segment, meta: dict) -> dict:
        from .measure import bench_figures, result_data
        from .traffic import Traffic

        kept = sorted(seg.kept, key=lambda s: s.sent)
        traffic = Traffic(kept, max(0.0, seg.end - seg.start), seg.start)
        w = seg.scenario.workload
        rate = (w.trace_rate or math.inf) if w.arrival == "trace" else w.request_rate
        figures = bench_figures(traffic, time_scale=seg.time_scale, percentile_metrics=("ttft", "tpot", "itl", "e2el"),
                                percentiles=(99.0,), max_concurrency=w.max_concurrency or None,
                                finite_rate=math.isfinite(rate))
        own = {"prompts": self.prompts.rule if self.prompts else "", "seed": seg.scenario.seed,
               "time_scale": seg.time_scale, "sent": len(kept), "live": True,
               "answers_dropped": seg.completed + seg.failed - len(kept),
               "server_metrics": seg.watch.summary() if seg.watch is not None else None}
        return result_data(backend="openai", label="batchtui --server", model=self.model, tokenizer=self.model,
                           num_prompts=len(kept), meta=meta, workload=w, rate=rate, figures=figures,
                           traffic=traffic, started=seg.started, time_scale=seg.time_scale, watch=seg.watch,
                           own=own, date=seg.started.strftime("%Y%m%d-%H%M%S"))


class _Figures:
    """A segment's `Measured`, sampled every series interval."""

    def __init__(self, seg: Segment, watch, session: LiveSession) -> None:
        self.seg = seg
        self.watch = watch
        self.session = session
        self.counts: deque[tuple[float, float]] = deque()
        """(server time, generation tokens) of the scrapes within the rate window."""
        self.scrapes_seen = 0
        self.last_scrape = time.perf_counter()
        self.series: dict[str, deque] = {k: deque(maxlen=SERIES_LEN) for k in ("throughput", "ttft", "tpot")}

    def gone(self) -> str:
        seg, watch = self.seg, self.watch
        if seg.lost_in_a_row >= GONE_AFTER:
            return seg.error
        if len(watch.during) != self.scrapes_seen:
            self.last_scrape = time.perf_counter()
            del watch.during[:-2]  # (bounded: the newest is what the view reads, and the result's gauges the last)
            self.scrapes_seen = len(watch.during)
        elif watch.before is not None and time.perf_counter() - self.last_scrape > STALE_S:
            return f"{self.session.where} did not answer /metrics for {STALE_S:g} s"
        return ""

    def sample(self, gone: str) -> Measured:
        seg, s, watch = self.seg, self.session, self.watch
        now = seg.now()
        latest = watch.during[-1].values if watch.during else watch.before.values if watch.before is not None else {}
        tokens = latest.get("vllm:generation_tokens")
        while seg.ended and seg.ended[0][0] < now - RATE_WINDOW_S:  # (bounded, either way)
            seg.ended.popleft()
        if tokens is not None:
            since = "metrics"
            counts = self.counts
            if not counts:
                counts.append((0.0, watch.before.values.get("vllm:generation_tokens", tokens)))
            point = (tokens - counts[-1][1]) / (now - counts[-1][0]) if now > counts[-1][0] else 0.0
            counts.append((now, tokens))
            while len(counts) > 2 and counts[1][0] <= now - RATE_WINDOW_S:
                counts.popleft()
            rate = (tokens - counts[0][1]) / (now - counts[0][0]) if now > counts[0][0] else 0.0
        else:
            since = "answers"
            span = min(now, RATE_WINDOW_S)
            rate = point = sum(n for _, n in seg.ended) / span if span > 0 else 0.0
        recent = list(seg.recent)
        last32 = recent[-SERIES_RECENT:]
        self.series["throughput"].append(max(0.0, point))
        self.series["ttft"].append(_median(t for t, _ in last32) or 0.0)
        self.series["tpot"].append(_median(p for _, p in last32) or 0.0)
        return Measured(
            time=now, completed=seg.completed, failed=seg.failed, tokens_per_s=max(0.0, rate),
            ttft_p50=_median(t for t, _ in recent), tpot_p50=_median(p for _, p in recent),
            running=latest.get("vllm:num_requests_running"), waiting=latest.get("vllm:num_requests_waiting"),
            kv_usage=latest.get("vllm:kv_cache_usage_perc"),
            series_throughput=tuple(self.series["throughput"]), series_ttft=tuple(self.series["ttft"]),
            series_tpot=tuple(self.series["tpot"]), tokens_from=since, gone=gone, time_scale=seg.time_scale,
            server=s.where, model=s.model, error=seg.error)
