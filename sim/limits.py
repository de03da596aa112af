"""What the simulator can run honestly: the bounds past which a number would be clamped, overflow
or lose its meaning, written once. `check_workload` refuses a workload past them with a
ConfigError naming the dial by its path (each face spells it: the command line its flag), instead of a clamp, an
overflow or a schedule that is not the one asked for.

- Token counts are held as 32-bit integers: a length past MAX_TOKENS would be clamped.
- Requests are held as arrays: at most MAX_NUM_PROMPTS of them (about 100 bytes each).
- Simulated time is a float of seconds: a schedule longer than MAX_SPAN_S (about 32 years) would
  lose the microseconds an iteration is timed in, and say nothing a shorter one does not.
- A finite rate above MAX_RATE sends requests less than a nanosecond apart: that is `inf`
  (every request at once), and is refused so that the user says so.
- Gamma gaps of a shape below MIN_BURSTINESS underflow to zero (the schedule collapses to an
  instant and is not the rate asked for).
- A lognormal length of a shape above MAX_SIGMA spreads its draws past MAX_TOKENS and to zero.
"""

from __future__ import annotations

import math

from .errors import ConfigError

MAX_TOKENS = 2**31 - 1
MAX_NUM_PROMPTS = 10_000_000
MAX_SPAN_S = 1e9
MAX_RATE = 1e9
MIN_BURSTINESS = 0.01
MAX_SIGMA = 4.0
MAX_TURNS = 10_000
MAX_API_SERVERS = 1024
"""API server processes (--api-server-count): each is a server the frontend walks for every
iteration's output; more processes than a host has cores serve nothing faster."""

_LENGTH_FIELDS = ("mean", "low", "high", "long_len")


def _whole_at_most(name: str, value, high: int, what: str, tail: str = "") -> None:
    if isinstance(value, int) and not isinstance(value, bool) and value > high:
        raise ConfigError(name, value, f"{what} up to {high:,}{tail}")


def check_engine(config) -> None:
    """Refuse a `sim.config.EngineConfig` past the bounds above (its own checks ran first)."""
    for name in ("max_model_len", "max_num_batched_tokens", "max_num_scheduled_tokens", "long_prefill_token_threshold"):
        _whole_at_most(f"engine.{name}", getattr(config, name), MAX_TOKENS, "a whole number of tokens")
    for name in ("max_num_seqs", "max_batch_size"):
        _whole_at_most(f"engine.{name}", getattr(config, name), MAX_NUM_PROMPTS, "a whole number of requests")
    _whole_at_most("engine.api_server_count", config.api_server_count, MAX_API_SERVERS,
                   "a whole number of API server processes")
    if config.max_queue_delay > MAX_SPAN_S:
        raise ConfigError("engine.max_queue_delay", config.max_queue_delay, f"a wait in seconds up to {MAX_SPAN_S:g}",
                          "longer, a batch's wait spans more simulated time than the simulator holds")


def check_workload(w) -> None:
    """Refuse a `sim.workload.WorkloadSpec` past the bounds above (its own checks ran first)."""
    _whole_at_most("workload.num_prompts", w.num_prompts, MAX_NUM_PROMPTS, "a whole number of requests")
    _whole_at_most("workload.trace_requests", w.trace_requests, MAX_NUM_PROMPTS, "a whole number of requests")
    _whole_at_most("workload.max_concurrency", w.max_concurrency, MAX_NUM_PROMPTS,
                   "a whole number of requests in flight", " (0 = no cap)")
    _whole_at_most("workload.burst_size", w.burst_size, MAX_NUM_PROMPTS, "a whole number of requests")
    _whole_at_most("workload.turns", w.turns, MAX_TURNS, "a whole number of turns")
    _whole_at_most("workload.num_prefixes", w.num_prefixes, MAX_NUM_PROMPTS, "a whole number of prefixes")
    for name in ("prefix_len", "hash_block_size", "dataset_output_len"):
        _whole_at_most(f"workload.{name}", getattr(w, name), MAX_TOKENS, "a whole number of tokens")
    sides = [("input", w.input), ("output", w.output)]
    if w.batch_pool_share > 0:
        sides += [("batch_input", w.batch_input), ("batch_output", w.batch_output)]
    for side, spec in sides:
        for field in _LENGTH_FIELDS:
            _whole_at_most(f"workload.{side}.{field}", getattr(spec, field), MAX_TOKENS, "a whole number of tokens")
        if spec.dist == "lognormal" and spec.sigma > MAX_SIGMA:
            raise ConfigError(f"workload.{side}.sigma", spec.sigma, f"a shape from 0 to {MAX_SIGMA:g}",
                              "wider, the draws run past every length a prompt can have and down to zero")
    requests = max(w.num_prompts, 1)
    if w.arrival != "trace":
        rate = w.request_rate
        if not math.isinf(rate):
            if rate > MAX_RATE:
                raise ConfigError("workload.request_rate", rate, f"requests/s up to {MAX_RATE:g}, or inf",
                                  "faster, requests are under a nanosecond apart: say inf for all at once")
            if requests / rate > MAX_SPAN_S:
                raise ConfigError("workload.request_rate", rate, f"at least {requests / MAX_SPAN_S:.3g} requests/s "
                                  f"for {requests:,} request(s)",
                                  f"slower, the schedule spans more than {MAX_SPAN_S:g} s of simulated time")
        if w.arrival == "gamma" and not math.isinf(w.burstiness) and w.burstiness < MIN_BURSTINESS:
            raise ConfigError("workload.burstiness", w.burstiness, f"a burstiness of at least {MIN_BURSTINESS:g} "
                              "(1 = Poisson, inf = evenly spaced)",
                              "below it, gamma gaps underflow to zero and the schedule is not the rate asked for")
        if w.ramp_up_strategy:
            for name in ("ramp_up_start_rps", "ramp_up_end_rps"):
                value = getattr(w, name)
                if value > MAX_RATE:
                    raise ConfigError(f"workload.{name}", value, f"requests/s up to {MAX_RATE:g}")
            if requests / w.ramp_up_start_rps > MAX_SPAN_S:
                raise ConfigError("workload.ramp_up_start_rps", w.ramp_up_start_rps,
                                  f"at least {requests / MAX_SPAN_S:.3g} requests/s for {requests:,} request(s)",
                                  f"slower, the schedule spans more than {MAX_SPAN_S:g} s of simulated time")
    elif w.trace_rate and not math.isinf(w.trace_rate):  # (inf: the trace queued at once)
        requests = max(w.trace_requests, 1)
        if not requests / MAX_SPAN_S <= w.trace_rate <= MAX_RATE:
            raise ConfigError("workload.trace_rate", w.trace_rate, f"requests/s from {requests / MAX_SPAN_S:.3g} to "
                              f"{MAX_RATE:g}, or inf (0 = the trace's own timing)")
    if w.think_time * max(w.turns - 1, 0) > MAX_SPAN_S:
        raise ConfigError("workload.think_time", w.think_time, f"seconds up to {MAX_SPAN_S / max(w.turns - 1, 1):g} "
                          f"for {w.turns} {{workload.turns}}",
                          f"longer, a conversation spans more than {MAX_SPAN_S:g} s of simulated time")
