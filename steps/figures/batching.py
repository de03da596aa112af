"""Figures of saturation and batching (steps 3 to 9: "Batching that waits", "Iteration-level
batching"): static against continuous, inside one iteration, throughput against latency, past the
knee, sequences in flight.

Each figure is registered by the step that first states it; `lab` is that step's own scenario."""

from __future__ import annotations

import math

from .base import FIGURES, Figure, Lab, choices, figure, fmt, sig, whole


# -- saturation ---------------------------------------------------------------------------------


@figure("saturated_rate", lambda v: sig(v, 2))
def _saturated_rate(lab):
    """Requests/s the step's engine completes with its traffic all queued at once."""
    return lab.saturated


@figure("saturated_tokens", lambda v: fmt(round(v, -2), 3))
def _saturated_tokens(lab):
    """Output tokens/s at the saturated rate."""
    return lab.saturated_output


@figure("push_rate", lambda v: whole(v))
def _push_rate(lab):
    """Half as much traffic again as the engine can take, req/s: well past saturation."""
    return math.ceil(1.5 * lab.saturated)


@figure("saturated_rate_batch_1", lambda v: sig(v, 2))
def _saturated_rate_batch_1(lab):
    """Step 4's embedder at max batch size 1: requests/s with all traffic queued."""
    return lab.variant(max_batch_size=1).saturated


# -- static against continuous (step 5) --------------------------------------------------------


@figure("compare_saturated_rate", lambda v: sig(v, 2))
def _compare_saturated_rate(lab):
    """The saturated rate of the scenario run beside the step's, requests/s."""
    return lab.compare.saturated


@figure("compare_padding_pct", 2)
def _compare_padding_pct(lab):
    """Padded seat-iterations of the scenario beside the step's, saturated, per cent."""
    return lab.compare.saturated_run.metrics["padding_share"] * 100


@figure("saturated_gain", 2)
def _saturated_gain(lab):
    """Output tokens/s of the step's engine over the one beside it, both saturated."""
    return lab.saturated_output / lab.compare.saturated_output


# -- inside one iteration (step 6) --------------------------------------------------------------


@figure("vllm_seats", whole)
def _vllm_seats(lab):
    """vLLM's default --max-num-seqs for the step's GPU (`vllm serve`)."""
    from sim.config import vllm_defaults

    return vllm_defaults(lab.gpu.id, lab.gpu.memory_bytes)["max_num_seqs"]


@figure("vllm_budget", whole)
def _vllm_budget(lab):
    """vLLM's default --max-num-batched-tokens for the step's GPU (`vllm serve`)."""
    from sim.config import vllm_defaults

    return vllm_defaults(lab.gpu.id, lab.gpu.memory_bytes)["max_num_batched_tokens"]


@figure("kv_blocks", lambda v: sig(v, 2))
def _kv_blocks(lab):
    """Usable KV blocks of the step's deployment."""
    return lab.deployment.usable_blocks


def _full_decode(lab):
    """A decode iteration with every seat busy, each sequence half way through its answer."""
    return lab.cost.iteration(lab.seats, lab.seats * (lab.prompt + lab.output // 2))


# -- throughput against latency (step 7) ---------------------------------------------------------


def _batch_time(lab, batch: int) -> float:
    """A decode iteration of `batch` sequences at the sweep's context: each user's time per
    token (as the curve's batch sweep computes it)."""
    context = lab.sweep.context if lab.sweep is not None else lab.prompt + lab.output // 2
    return lab.cost.iteration(batch, batch * context).total


def _gain_batches(lab) -> tuple[int, int]:
    return tuple(lab.activity.get("batches", (1, 64)))


@figure("sweep_context", whole)
def _sweep_context(lab):
    """Context of every sequence in the curve's batch sweep, tokens."""
    return lab.sweep.context


@figure("gain_from", whole)
def _gain_from(lab):
    """The smaller batch a prediction compares."""
    return _gain_batches(lab)[0]


@figure("gain_to", whole)
def _gain_to(lab):
    """The bigger batch a prediction compares."""
    return _gain_batches(lab)[1]


@figure("batch_gain", 2)
def _batch_gain(lab):
    """Tokens/s at the bigger batch over tokens/s at the smaller."""
    a, b = _gain_batches(lab)
    return (b / _batch_time(lab, b)) / (a / _batch_time(lab, a))


@figure("batch_slowdown_pct", 2)
def _batch_slowdown_pct(lab):
    """How much longer each iteration (each user's token) takes at the bigger batch, per cent."""
    a, b = _gain_batches(lab)
    return (_batch_time(lab, b) / _batch_time(lab, a) - 1) * 100


def _batch_table(lab) -> str:
    """The batch sweep as a table: batch 1, then from the prediction's bigger batch up."""
    sizes = [s for s in lab.sweep.batch_sizes if s == 1 or s >= _gain_batches(lab)[1]]
    rows = ["| batch | iteration | tokens/s |", "|---|---|---|"]
    for b in sizes:
        t = _batch_time(lab, b)
        rows.append(f"| {b:,} | {fmt(t * 1000, 3)} ms | {sig(b / t, 3)} |")
    return "\n".join(rows)


FIGURES["batch_table"] = Figure("batch_table", _batch_table, str, _batch_table.__doc__)


@figure("ridge_batch", lambda v: sig(v, 2))
def _ridge_batch(lab):
    """The batch at which the linear layers' arithmetic takes as long as the weight read."""
    one = lab.cost.iteration(1, 0)
    return one.t_weights / one.t_compute


@figure("batch_max", whole)
def _batch_max(lab):
    """The biggest batch the curve's batch sweep runs."""
    return max(lab.sweep.batch_sizes)


@choices(7, rel=0.1)
def _choices_07(lab):
    """Times the tokens/s from the smaller batch to the bigger (the right choice is near it)."""
    return _batch_gain(lab)


# -- past the knee (step 8) ----------------------------------------------------------------------

OVER, FAR = 1.2, 1.5
"""Loads step 8 compares, as multiples of the saturated rate (STEPS.md)."""


@figure("over_rate", whole)
def _over_rate(lab):
    """1.2 x the saturated rate, up to whole requests/s (a load stated as past it stays past it)."""
    return math.ceil(OVER * lab.saturated)


@figure("far_rate", whole)
def _far_rate(lab):
    """1.5 x the saturated rate, up to whole requests/s."""
    return math.ceil(FAR * lab.saturated)


@figure("full_decode_ms", 3)
def _full_decode_ms(lab):
    """Every seat decoding, nothing else, each sequence halfway through its answer (prompt +
    output/2 of context): one iteration, ms. Step 7's batch table at the same batch."""
    seats, context = lab.engine.max_num_seqs, lab.prompt + lab.output // 2
    return lab.cost.iteration(seats, seats * context).total * 1000


@figure("saturated_tpot_ms", 3)
def _saturated_tpot_ms(lab):
    """TPOT p50 at the saturated rate (the step's traffic all queued at once), ms."""
    return lab.saturated_run.metrics["median_tpot_ms"]


@figure("riding_prefill", lambda v: sig(v, 2))
def _riding_prefill(lab):
    """Prompt tokens that ride along with each iteration's decodes at saturation, on average:
    newcomers per second × prompt length × seconds per iteration (TPOT p50 there)."""
    return lab.saturated * lab.prompt * _saturated_tpot_ms(lab) / 1000


# -- sequences in flight (step 9, the cheat sheet) -----------------------------------------------


def in_flight(lab: Lab, rate: float | None = None) -> tuple[float, float] | None:
    """Little's law at `rate` (the step's own by default): (W, rate x W), W the mean seconds from
    arrival to last token measured at the steady state (`sim.curves.measure_rate`) and rounded as
    it is stated (three figures), so the product is the sum a learner makes. None when the rate
    has no steady state: past saturation the time in the engine grows as long as traffic lasts.
    Step 9's example and drill and the cheat sheet all count this way."""
    rate = lab.scenario.workload.request_rate if rate is None else rate
    point = lab.steady(rate)
    if not point.bounded:
        return None
    w = float(sig(point.window["mean_e2e_ms"] / 1000.0, 3).replace(",", ""))
    return w, rate * w


def _in_flight(lab) -> tuple[float, float]:
    measured = in_flight(lab)
    if measured is None:
        raise ValueError(f"{lab.scenario.workload.request_rate:g} req/s is past this engine's saturated rate")
    return measured


@figure("in_flight_w_s", 3)
def _in_flight_w_s(lab):
    """W at the step's rate, s."""
    return _in_flight(lab)[0]


@figure("in_flight", whole)
def _in_flight_figure(lab):
    """Sequences in flight at the step's rate: rate x W."""
    return _in_flight(lab)[1]
