"""/metrics: the engine's state and the requests' latencies in Prometheus text, under vLLM's
metric names, labels (`model_name`, `engine`) and histogram buckets (vllm/v1/metrics/loggers.py).

Latencies are simulated seconds: what vLLM on the simulated GPU would report, whatever
`--time-scale` the server runs at (stated by `batchtui:time_scale`).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
ITL_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
               40.0, 80.0)
E2E_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
               480.0, 960.0, 1920.0, 7680.0)
FINISH_REASONS = ("stop", "length", "abort")
LABELS = ("model_name", "engine")


class ServerMetrics:
    """The registry /metrics renders; `observe` is the Pacer's observer."""

    def __init__(self, model_name: str, time_scale: float) -> None:
        disable_created_metrics()  # vLLM's /metrics has no *_created series
        self.registry = CollectorRegistry()
        self.labels = (model_name, "0")
        self.model_name = model_name
        self.time_scale = time_scale
        self.pacer = None  # the Pacer (made after this: it reports to `observe`)
        r = self.registry
        self.ttft = Histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                              LABELS, buckets=TTFT_BUCKETS, registry=r).labels(*self.labels)
        self.itl = Histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
                             LABELS, buckets=ITL_BUCKETS, registry=r).labels(*self.labels)
        self.tpot = Histogram("vllm:time_per_output_token_seconds",
                              "Histogram of time per output token in seconds.",
                              LABELS, buckets=ITL_BUCKETS, registry=r).labels(*self.labels)
        self.e2e = Histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
                             LABELS, buckets=E2E_BUCKETS, registry=r).labels(*self.labels)
        self.prompt_tokens = Counter("vllm:prompt_tokens", "Number of prefill tokens processed.", LABELS,
                                     registry=r).labels(*self.labels)
        self.generation_tokens = Counter("vllm:generation_tokens", "Number of generation tokens processed.",
                                         LABELS, registry=r).labels(*self.labels)
        success = Counter("vllm:request_success", "Count of successfully processed requests.",
                          LABELS + ("finished_reason",), registry=r)
        self.success = {reason: success.labels(*self.labels, reason) for reason in FINISH_REASONS}
        r.register(_EngineCollector(self))

    def observe(self, stream, event: str, value: float) -> None:
        if event == "ttft":
            self.ttft.observe(value)
            self.prompt_tokens.inc(stream.prompt_len)
            self.generation_tokens.inc(1)
        elif event == "itl":
            self.itl.observe(value)
            self.tpot.observe(value)
            self.generation_tokens.inc(1)
        elif event == "finish":
            self.e2e.observe(value)
            # The answer is max_tokens long: vLLM calls that finish "length".
            self.success["length"].inc()
        elif event == "abort":
            self.success["abort"].inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _EngineCollector:
    """Gauges and counters read off the engine when scraped."""

    def __init__(self, metrics: ServerMetrics) -> None:
        self.metrics = metrics

    def collect(self):
        m = self.metrics
        pacer = m.pacer
        labels = list(m.labels)
        engine = pacer.engine
        sched = engine.scheduler
        pool = engine.pool

        def gauge(name, doc, value):
            g = GaugeMetricFamily(name, doc, labels=LABELS)
            g.add_metric(labels, value)
            return g

        def counter(name, doc, value):
            c = CounterMetricFamily(name, doc, labels=LABELS)
            c.add_metric(labels, value)
            return c

        yield gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
                    len(sched.running))
        yield gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", sched.num_waiting)
        yield gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
                    (pool.usable - pool.free) / pool.usable if pool.usable else 0.0)
        stats = engine.prefix_cache_stats()
        yield counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.",
                      stats["prefix_cache_queries"])
        yield counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.",
                      stats["prefix_cache_hits"])
        yield counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.",
                      engine.metrics.num_preemptions)
        if engine.speculative is not None:  # vLLM's SpecDecodingProm counters (speculative decoding only)
            drafts, draft_tokens, accepted, per_position = sched.spec_stats
            yield counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", drafts)
            yield counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", draft_tokens)
            yield counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", accepted)
            by_position = CounterMetricFamily("vllm:spec_decode_num_accepted_tokens_per_pos",
                                              "Accepted tokens per draft position.", labels=[*LABELS, "position"])
            for position, count in enumerate(per_position):
                by_position.add_metric([*labels, str(position)], count)
            yield by_position
        yield gauge("batchtui:time_scale", "Simulated seconds per real second (--time-scale); latencies in "
                    "these metrics are simulated seconds.", m.time_scale)
        yield gauge("batchtui:simulated_time_seconds", "The engine's simulated clock.", engine.time)
