"""/metrics: the engine's state and the requests' latencies in Prometheus text, under vLLM 0.33's
metric names, types, labels (`model_name`, `engine`, and each metric's own) and histogram buckets
(vllm/v1/metrics/loggers.py, buckets.py, perf.py, spec_decode/metrics.py), measured on the
simulated requests as vLLM measures its own:

- per request, when it ends: e2e latency (arrival to its last token), queue time (arrival to first
  scheduled), prefill time (first scheduled to first token), decode time (first to last token),
  inference time (first scheduled to last token), mean time per output token (decode time over
  its tokens less one, 0 for one token), preemptions, prompt and generated tokens, its prompt
  tokens computed (less those found in the prefix cache), max_tokens; by finish reason;
- per HTTP request (its n choices): n, and the most tokens a choice generated;
- per first token: time to first token, prompt tokens (computed and from the cache);
- per iteration with outputs: inter-token latency per request (one gap per iteration, however
  many tokens it brought), tokens (prompt tokens of the prefills that ended plus tokens generated);
- when scraped: running and waiting requests, KV cache usage, prefix-cache queries and hits,
  preemptions, speculative decoding counters.

Metrics vLLM registers for features the simulator does not have (a KV connector's external cache,
multimodal caches, frontend admission limits, MFU estimates without --enable-mfu-metrics) are
there at 0, as vLLM shows them without those features. A client's abort is not a request_success
(vLLM's frontend drops the request before its stats are taken); `batchtui:aborted_requests`
counts them. Latencies are simulated seconds: what vLLM on the simulated GPU would report,
whatever `--time-scale` the server runs at (stated by `batchtui:time_scale`).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from .pacer import Observer

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Bucket families (vllm/v1/metrics/buckets.py, vLLM 0.33).
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
ITL_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
               40.0, 80.0)
E2E_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
               480.0, 960.0, 1920.0, 7680.0)
ITERATION_TOKENS_BUCKETS = (1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
PARAMS_N_BUCKETS = (1, 2, 5, 10, 20)
PREEMPTIONS_BUCKETS = (1, 2, 3, 4, 5, 10, 20)
FINISH_REASONS = ("stop", "length", "abort", "error", "repetition")
LABELS = ("model_name", "engine")
PROMPT_SOURCES = ("local_compute", "local_cache_hit", "external_kv_transfer")
CACHE_SOURCES = ("device", "host", "p2p", "disk", "external_unspecified")
WAITING_REASONS = ("capacity", "deferred")
SLEEP_STATES = ("awake", "weights_offloaded", "discard_all")
ADMISSION_REASONS = ("max_num_queued_reqs", "max_num_queued_tokens")


def request_tokens_buckets(max_model_len: int) -> tuple[float, ...]:
    """vLLM's request_tokens family: 1, 2, 5, 10, 20, 50... up to max_model_len."""
    out, scale = [], 1
    while True:
        for m in (1, 2, 5):
            if m * scale > max_model_len:
                return tuple(out)
            out.append(m * scale)
        scale *= 10


# vLLM 0.33's CacheConfig fields (vllm/config/cache.py), in order, with their defaults as
# vllm:cache_config_info spells them (str() of each value); `cache_info` fills what the
# simulated engine knows.
CACHE_CONFIG_DEFAULTS = (
    ("block_size", "16"), ("user_specified_block_size", "False"), ("kv_cache_layout", "None"),
    ("prefix_match_unit", "None"), ("gpu_memory_utilization", "0.92"), ("cache_dtype", "auto"),
    ("is_attention_free", "False"), ("num_gpu_blocks_override", "None"), ("sliding_window", "None"),
    ("enable_prefix_caching", "True"), ("prefix_caching_hash_algo", "sha256"),
    ("prefix_cache_retention_interval", "0"), ("kv_cache_dtype_skip_layers", "[]"),
    ("mamba_page_size_padded", "None"), ("skip_page_size_padded", "None"), ("mamba_block_size", "None"),
    ("mamba_cache_dtype", "auto"), ("mamba_ssm_cache_dtype", "auto"), ("mamba_cache_mode", "none"),
    ("enable_mamba_shared_prefix_checkpoint", "False"), ("replayssm_buffer_len", "16"),
    ("use_replayssm", "False"), ("use_kda_recoverssm", "False"), ("num_gpu_blocks", "None"),
    ("num_cpu_blocks", "None"), ("simple_cpu_offload_num_blocks", "None"),
    ("effective_attention_block_size", "None"), ("kv_cache_size_tokens", "None"),
    ("kv_cache_max_concurrency", "None"), ("hash_block_size", "None"), ("cache_hit_alignment_tokens", "None"),
    ("kv_sharing_fast_prefill", "False"), ("swa_bounded_replay", "True"), ("kv_cache_memory_bytes", "None"),
    ("kv_offloading_size", "None"), ("kv_offloading_backend", "native"), ("_block_size_resolved", "True"),
)


def cache_info(engine, deployment) -> dict[str, str]:
    """vllm:cache_config_info's labels for the simulated engine: its block size, memory share, KV
    dtype, blocks (vLLM counts the null block among num_gpu_blocks), tokens the cache holds and
    how many max_model_len requests fit, prefix caching; vLLM's defaults for the rest."""
    pool, config = engine.pool, engine.config
    blocks = pool.usable + 1  # (the null block)
    tokens = blocks * pool.block_size
    info = dict(CACHE_CONFIG_DEFAULTS)
    info.update(block_size=str(pool.block_size), gpu_memory_utilization=str(deployment.gpu_memory_utilization),
                cache_dtype=str(deployment.kv_cache_dtype), num_gpu_blocks=str(blocks),
                num_gpu_blocks_override=str(deployment.num_gpu_blocks_override),
                enable_prefix_caching=str(bool(pool.caching)), effective_attention_block_size=str(pool.block_size),
                kv_cache_size_tokens=str(tokens), kv_cache_max_concurrency=str(tokens / config.max_model_len),
                hash_block_size=str(pool.block_size), kv_cache_memory_bytes=str(deployment.kv_cache_memory_bytes))
    return info


HISTOGRAMS = (
    # the attribute the observer fills, vLLM's name, its help, its buckets (None: a request's
    # tokens, `request_tokens_buckets` up to the served max_model_len)
    ("ttft", "vllm:time_to_first_token_seconds", "Time to first token (simulated seconds).", TTFT_BUCKETS),
    ("itl", "vllm:inter_token_latency_seconds", "Time between a request's outputs (simulated seconds), one per "
     "iteration.", ITL_BUCKETS),
    ("tpot", "vllm:request_time_per_output_token_seconds", "A request's decode time over its output tokens less "
     "one (simulated seconds).", ITL_BUCKETS),
    ("e2e", "vllm:e2e_request_latency_seconds", "Arrival to last token (simulated seconds).", E2E_BUCKETS),
    ("queue", "vllm:request_queue_time_seconds", "Arrival to first scheduled (simulated seconds).", E2E_BUCKETS),
    ("inference", "vllm:request_inference_time_seconds", "First scheduled to last token (simulated seconds).",
     E2E_BUCKETS),
    ("prefill", "vllm:request_prefill_time_seconds", "First scheduled to first token (simulated seconds).",
     E2E_BUCKETS),
    ("decode", "vllm:request_decode_time_seconds", "First token to last token (simulated seconds).", E2E_BUCKETS),
    ("preemptions", "vllm:request_num_preemptions", "Times a finished request was preempted.", PREEMPTIONS_BUCKETS),
    ("prompt_hist", "vllm:request_prompt_tokens", "Prompt tokens of a finished request.", None),
    ("generation_hist", "vllm:request_generation_tokens", "Tokens a finished request generated.", None),
    ("kv_computed", "vllm:request_prefill_kv_computed_tokens", "Prompt tokens a finished request computed (less "
     "those found in the prefix cache).", None),
    ("max_tokens", "vllm:request_params_max_tokens", "The max_tokens of a finished request.", None),
    ("params_n", "vllm:request_params_n", "The n of a finished HTTP request.", PARAMS_N_BUCKETS),
    ("max_generation", "vllm:request_max_num_generation_tokens", "The most tokens a choice of a finished HTTP "
     "request generated.", None),
    ("iteration_tokens", "vllm:iteration_tokens_total", "Tokens of an iteration with outputs: prompt tokens of the "
     "prefills it ended, plus tokens generated.", ITERATION_TOKENS_BUCKETS),
)
"""vLLM's histograms, as the server keeps them (`ServerMetrics`)."""


class ServerMetrics(Observer):
    """The registry /metrics renders, and the Pacer's observer. `cache_info`: the labels of
    vllm:cache_config_info (vLLM's CacheConfig as strings)."""

    def __init__(self, model_name: str, time_scale: float, max_model_len: int = 131072,
                 cache_info: dict[str, str] | None = None) -> None:
        disable_created_metrics()  # vLLM's /metrics has no *_created series
        self.registry = r = CollectorRegistry()
        self.labels = labels = (model_name, "0")
        self.model_name = model_name
        self.time_scale = time_scale
        self.pacer = None  # the Pacer (made after this: it reports to this)
        self.aborts = 0  # requests whose client went away

        def histogram(name, doc, buckets):
            return Histogram(name, doc, LABELS, buckets=buckets, registry=r).labels(*labels)

        def counter(name, doc, extra=None, values=()):
            if extra is None:
                return Counter(name, doc, LABELS, registry=r).labels(*labels)
            c = Counter(name, doc, LABELS + (extra,), registry=r)
            return {v: c.labels(*labels, v) for v in values}

        tokens = request_tokens_buckets(max_model_len)
        for attribute, name, doc, buckets in HISTOGRAMS:
            setattr(self, attribute, histogram(name, doc, tokens if buckets is None else buckets))
        self.prompt_tokens = counter("vllm:prompt_tokens", "Prompt tokens of the requests whose prefill ended.")
        self.by_source = counter("vllm:prompt_tokens_by_source", "Prompt tokens by where their KV came from.",
                                 "source", PROMPT_SOURCES)
        self.cached = counter("vllm:prompt_tokens_cached", "Prompt tokens found in a cache.")
        self.cached_by_source = counter("vllm:prompt_tokens_cached_by_source", "Prefix-cache hit tokens by the "
                                        "cache that held them (here only the GPU's: device).", "source",
                                        CACHE_SOURCES)
        self.generation_tokens = counter("vllm:generation_tokens", "Tokens generated.")
        self.success = counter("vllm:request_success", "Finished requests by finish reason.", "finished_reason",
                               FINISH_REASONS)
        for name, doc in (("vllm:external_prefix_cache_queries", "KV-connector cache queries (no connector here)."),
                          ("vllm:external_prefix_cache_hits", "KV-connector cache hits (no connector here)."),
                          ("vllm:mm_cache_queries", "Multimodal cache queries (text only here)."),
                          ("vllm:mm_cache_hits", "Multimodal cache hits (text only here)."),
                          ("vllm:estimated_flops_per_gpu_total", "MFU estimate, counted with "
                           "--enable-mfu-metrics only (not taken here)."),
                          ("vllm:estimated_read_bytes_per_gpu_total", "MFU estimate, counted with "
                           "--enable-mfu-metrics only (not taken here)."),
                          ("vllm:estimated_write_bytes_per_gpu_total", "MFU estimate, counted with "
                           "--enable-mfu-metrics only (not taken here).")):
            counter(name, doc)
        admission = Counter("vllm:admission_rejections", "Requests refused by a frontend queue limit (none here).",
                            ("model_name", "reason"), registry=r)
        for reason in ADMISSION_REASONS:
            admission.labels(model_name, reason)
        if cache_info is not None:
            info = Gauge("vllm:cache_config_info", "The engine's cache config (a gauge at 1, its values as "
                         "labels).", ("engine", *cache_info), registry=r)
            info.labels("0", *cache_info.values()).set(1)
        self._children: dict[object, list] = {}  # a prompt's choices still running, its longest
        r.register(_EngineCollector(self))

    # -- the Pacer's observer
    def first_token(self, stream, req) -> None:
        self.ttft.observe(req.first_token_time - req.arrival_time)
        cached = max(req.num_cached_tokens, 0)
        self.prompt_tokens.inc(stream.prompt_len)
        self.by_source["local_compute"].inc(stream.prompt_len - cached)
        self.by_source["local_cache_hit"].inc(cached)
        self.cached.inc(cached)

    def tokens(self, stream, req, new: int, gap: float | None) -> None:
        self.generation_tokens.inc(new)
        if gap is not None:
            self.itl.observe(gap)

    def iteration(self, tokens: int) -> None:
        self.iteration_tokens.observe(tokens)

    def finished(self, stream, req) -> None:
        scheduled = req.first_scheduled_time if req.first_scheduled_time is not None else req.arrival_time
        self.success[stream.finish_reason if stream.finish_reason in self.success else "length"].inc()
        self.e2e.observe(req.finish_time - req.arrival_time)
        self.queue.observe(scheduled - req.arrival_time)
        self.prefill.observe(req.first_token_time - scheduled)
        self.inference.observe(req.last_token_time - scheduled)
        decode = req.last_token_time - req.first_token_time
        self.decode.observe(decode)
        n = req.num_output_tokens
        self.tpot.observe(decode / (n - 1) if n > 1 else 0.0)
        self.preemptions.observe(req.num_preemptions)
        self.kv_computed.observe(stream.prompt_len - max(req.num_cached_tokens, 0))
        self.prompt_hist.observe(stream.prompt_len)
        self.generation_hist.observe(n)
        self.max_tokens.observe(stream.max_tokens)
        # The HTTP request's n and its longest choice, once its last choice has ended.
        group = stream.group
        left = self._children.setdefault(group, [stream.n, 0])
        left[0] -= 1
        left[1] = max(left[1], n)
        if left[0] <= 0:
            self.params_n.observe(stream.n)
            self.max_generation.observe(left[1])
            del self._children[group]

    def aborted(self, stream) -> None:
        self.aborts += 1
        self._children.pop(stream.group, None)

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

        def gauge(name, doc, value, extra=None):
            g = GaugeMetricFamily(name, doc, labels=LABELS + ((extra[0],) if extra else ()))
            if extra:
                for label, v in extra[1].items():
                    g.add_metric([*labels, label], v)
            else:
                g.add_metric(labels, value)
            return g

        def counter(name, doc, value):
            c = CounterMetricFamily(name, doc, labels=LABELS)
            c.add_metric(labels, value)
            return c

        waiting = sched.num_waiting
        yield gauge("vllm:num_requests_running", "Requests in the running batch.", len(sched.running))
        yield gauge("vllm:num_requests_waiting", "Requests waiting to be scheduled.", waiting)
        yield gauge("vllm:num_requests_waiting_by_reason", "Waiting requests by reason (capacity: for room in "
                    "the batch or KV cache; deferred: held by LoRA, KV-transfer or blocked states, none here).",
                    None, ("reason", {"capacity": waiting, "deferred": 0}))
        yield gauge("vllm:engine_sleep_state", "Sleep state (the simulated engine never sleeps: awake).",
                    None, ("sleep_state", {"awake": 1, "weights_offloaded": 0, "discard_all": 0}))
        yield gauge("vllm:kv_cache_usage_perc", "KV-cache usage: 1 is full.",
                    (pool.usable - pool.free) / pool.usable if pool.usable else 0.0)
        stats = engine.prefix_cache_stats()
        yield counter("vllm:prefix_cache_queries", "Prefix-cache queries, in prompt tokens.",
                      stats["prefix_cache_queries"])
        yield counter("vllm:prefix_cache_hits", "Prefix-cache hits, in prompt tokens.", stats["prefix_cache_hits"])
        yield counter("vllm:num_preemptions", "Preemptions so far.", engine.metrics.num_preemptions)
        if engine.speculative is not None:  # vLLM's SpecDecodingProm counters (speculative decoding only)
            drafts, draft_tokens, accepted, per_position = sched.spec_stats
            yield counter("vllm:spec_decode_num_drafts", "Speculative drafts.", drafts)
            yield counter("vllm:spec_decode_num_draft_tokens", "Draft tokens proposed.", draft_tokens)
            yield counter("vllm:spec_decode_num_accepted_tokens", "Draft tokens accepted.", accepted)
            by_position = CounterMetricFamily("vllm:spec_decode_num_accepted_tokens_per_pos",
                                              "Draft tokens accepted per draft position.", labels=[*LABELS, "position"])
            for position, count in enumerate(per_position):
                by_position.add_metric([*labels, str(position)], count)
            yield by_position
        yield counter("batchtui:aborted_requests", "Requests whose client went away (vLLM counts them in no "
                      "vllm: metric).", m.aborts)
        yield gauge("batchtui:time_scale", "Simulated seconds per real second (--time-scale); latencies in "
                    "these metrics are simulated seconds.", m.time_scale)
        yield gauge("batchtui:simulated_time_seconds", "The engine's simulated clock.", engine.time)
