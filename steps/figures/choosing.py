"""Figures of steps 16 to 20 ("Choosing settings", "Recap & playground"): an offline job's
settings, reading percentiles, a chat SLO, the cheat sheet and what a shared prefix saves.

Each figure is registered by the step that first states it; `lab` is that step's own scenario."""

from __future__ import annotations

from sim import planning

from .base import FIGURES, Figure, Lab, PINNED, Pinned, choices, figure, fmt, sig, whole
from .batching import in_flight


# -- settings for an offline job (step 17) -------------------------------------------------------


@figure("num_prompts", whole)
def _num_prompts(lab):
    """Requests of the step's workload."""
    return lab.scenario.workload.num_prompts


@figure("compare_seats", whole)
def _compare_seats(lab):
    """Seats of the scenario beside the step's."""
    return lab.compare.engine.max_num_seqs


@figure("seat_ratio", 2)
def _seat_ratio(lab):
    """The step's seats over those of the scenario beside it."""
    return lab.engine.max_num_seqs / lab.compare.engine.max_num_seqs


def _job_run(lab):
    def run():
        from sim.engine import run_scenario

        return run_scenario(lab.scenario)

    return lab.memo("job", run)


@figure("offline_gain", 2)
def _offline_gain(lab):
    """How many times sooner the step's job ends than the same job beside it."""
    return _job_run(lab.compare).metrics["duration"] / _job_run(lab).metrics["duration"]


@figure("offline_tpot_ratio", 2)
def _offline_tpot_ratio(lab):
    """The step's TPOT over that of the job beside it."""
    return _job_run(lab).metrics["median_tpot_ms"] / _job_run(lab.compare).metrics["median_tpot_ms"]


@figure("vllm_offline_budget", whole)
def _vllm_offline_budget(lab):
    """vLLM's default --max-num-batched-tokens for offline use on the step's GPU."""
    from sim.config import vllm_defaults

    return vllm_defaults(lab.gpu.id, lab.gpu.memory_bytes, offline=True)["max_num_batched_tokens"]


@choices(17, rel=0.1)
def _choices_17(lab):
    """How many times sooner the job ends with the step's seats."""
    return _offline_gain(lab)


# -- reading percentiles (step 18) ---------------------------------------------------------------


@figure("batch_prompt", whole)
def _batch_prompt(lab):
    return lab.scenario.workload.batch_input.mean


@figure("batch_output", whole)
def _batch_output(lab):
    return lab.scenario.workload.batch_output.mean


@figure("batch_share_pct", 2)
def _batch_share_pct(lab):
    return lab.scenario.workload.batch_pool_share * 100


# -- settings for a chat SLO (step 16) -----------------------------------------------------------


@figure("slo_ttft_ms", 3)
def _slo_ttft_ms(lab):
    """The SLO's TTFT p99 bound, ms (the curve draws it)."""
    return lab.sweep.slo_ttft_p99_ms


@figure("slo_tpot_ms", 3)
def _slo_tpot_ms(lab):
    """The SLO's TPOT p99 bound, ms."""
    return lab.sweep.slo_tpot_p99_ms


@figure("headroom", 2)
def _headroom(lab):
    """Share of its SLO rate each replica is planned at: 1 - `sim.planning.HEADROOM`."""
    return planning.planned_rate(1.0)


@figure("headroom_pct", 2)
def _headroom_pct(lab):
    return planning.planned_rate(100.0)


def _slo_rate(lab, seats: int) -> float:
    """The SLO rate of the step's rate curve at `seats` seats, swept as step 16's drill sweeps it."""
    _, points = lab.memo(("rate_curve", seats), lambda: lab.sweep.rate_curve(lab.screen_scenario, seats))
    best, _ = planning.slo_rate(points, lab.sweep.slo)
    return best.rate


PINNED.append(Pinned(16, "about 33 req/s", lambda lab: _slo_rate(lab, lab.engine.max_num_seqs), 0.0,
                     "The SLO rate of step 16's curve at its own seats (a sweep: about a second)."))
PINNED.append(Pinned(16, "With 64 seats", lambda lab: 64, 0.0, "The smaller batch the lesson compares."))
PINNED.append(Pinned(16, "about 20 req/s", lambda lab: _slo_rate(lab, 64), 0.0,
                     "The SLO rate of step 16's curve at 64 seats."))


# -- the cheat sheet (step 19) ---------------------------------------------------------------------

CHEAT_PEAK = 150.0
"""The peak the cheat sheet's replicas line plans for (step 16's example)."""


def _text_figure(name: str):
    """Register `compute(lab) -> str` as the figure `{{name}}`: words, not a number."""

    def register(compute):
        FIGURES[name] = Figure(name, compute, str, (compute.__doc__ or "").strip())
        return compute

    return register


@_text_figure("model_name")
def _model_name(lab):
    return lab.model.name


@_text_figure("gpu_name")
def _gpu_name(lab):
    tp = lab.deployment.tensor_parallel_size
    return lab.gpu.name + (f" × {tp}" if tp > 1 else "")


@_text_figure("in_flight_line")
def _in_flight_line(lab):
    """Little's law at the scenario's rate, or why it has no answer there."""
    rate = lab.scenario.workload.request_rate
    measured = in_flight(lab)
    if measured is None:
        where = "past" if rate >= lab.saturated else "too close to"
        return (f"**In flight** = λ × W: {fmt(rate)} req/s is {where} this engine's saturated rate "
                f"({sig(lab.saturated, 2)} req/s): no steady W; the batch stays near the seats ({whole(lab.seats)}).")
    w, n = measured
    return f"**In flight** = λ × W: {fmt(rate)} req/s × {fmt(w)} s ≈ **{whole(n)}** (W measured at this load)."


@_text_figure("chat_seats_line")
def _chat_seats_line(lab):
    measured = in_flight(lab)
    if measured is None:
        return "seats ≥ the batch in flight at each replica's share of the peak, below the knee"
    return f"seats ≥ in flight (≈ {whole(measured[1])} here) and below the knee"


@figure("cheat_peak", 3)
def _cheat_peak(lab):
    return CHEAT_PEAK


@figure("cheat_replicas_floor", 2)
def _cheat_replicas_floor(lab):
    """The peak over what replicas planned at the saturated rate carry: a floor on replicas."""
    return CHEAT_PEAK / planning.planned_rate(lab.saturated)


# -- what a shared prefix saves (the cheat sheet) ----------------------------------------------------

HELPDESK_CONVERSATIONS = 60
"""Conversations of the multi-turn helpdesk (`sim.workload.MULTI_TURN_HELPDESK`) the cheat sheet
runs: its hit rate holds to a tenth of a per cent from 50 on, and the run takes hundredths of a
second (the cheat sheet is worked again on every dial move)."""


def helpdesk_run(lab: Lab, caching: bool):
    """The multi-turn helpdesk on the lab's deployment and engine, prefix caching on or off: the
    run's summary metrics (hit rate, TTFT)."""
    def run():
        from dataclasses import replace

        from sim.engine import run_scenario
        from sim.workload import MULTI_TURN_HELPDESK

        workload = replace(MULTI_TURN_HELPDESK, num_prompts=HELPDESK_CONVERSATIONS)
        scenario = replace(lab.scenario, workload=workload).with_engine(enable_prefix_caching=caching)
        return run_scenario(scenario).metrics

    return lab.memo(("helpdesk", caching), run)


@figure("helpdesk_prefix", whole)
def _helpdesk_prefix(lab):
    """The helpdesk chat's system prompt, shared by every conversation."""
    from sim.workload import MULTI_TURN_HELPDESK

    return MULTI_TURN_HELPDESK.prefix_len


@figure("helpdesk_turns", whole)
def _helpdesk_turns(lab):
    from sim.workload import MULTI_TURN_HELPDESK

    return MULTI_TURN_HELPDESK.turns


@figure("helpdesk_hit_pct", 2)
def _helpdesk_hit_pct(lab):
    """Of the helpdesk's prompt tokens, the share the prefix cache held (vLLM's hit rate)."""
    return 100.0 * helpdesk_run(lab, True)["prefix_cache_hit_rate"]


@figure("helpdesk_ttft_on_ms", 3)
def _helpdesk_ttft_on_ms(lab):
    return helpdesk_run(lab, True)["median_ttft_ms"]


@figure("helpdesk_ttft_off_ms", 3)
def _helpdesk_ttft_off_ms(lab):
    return helpdesk_run(lab, False)["median_ttft_ms"]


# -- a mixture of experts and speculative decoding (the cheat sheet) ------------------------------

MOE_MODEL = "qwen3-30b-a3b"
"""The mixture of experts the cheat sheet reads: Qwen3's, the size of the dense Qwen3 32B."""
MOE_BATCH = 64
"""The batch whose experts it counts beside one token's: the largest of step 7's batch sweep's
"throughput for little latency" stretch (1 to 64)."""


def _moe_cost(lab: Lab):
    """The MoE's cost model on the lab's GPU kind, on the fewest of them that hold it."""
    def made():
        from sim.deployments import fewest_gpus

        scenario = lab.scenario.replace(model=MOE_MODEL, speculative_config=None)
        gpus, why = fewest_gpus(scenario)
        if gpus is None:
            raise ValueError(why)
        return scenario.replace(tensor_parallel_size=gpus).cost_model()

    return lab.memo("moe_cost", made)


@_text_figure("moe_name")
def _moe_name(lab):
    return _moe_cost(lab).deployment.model.name


@figure("moe_experts", whole)
def _moe_experts(lab):
    """Routed experts in each of the MoE's layers."""
    return _moe_cost(lab).deployment.model.expert_count


@figure("moe_experts_one", whole)
def _moe_experts_one(lab):
    """Experts a layer reads for one token (its top k)."""
    return _moe_cost(lab).experts_read(1)


@figure("moe_batch", whole)
def _moe_batch(lab):
    return MOE_BATCH


@figure("moe_experts_batch", whole)
def _moe_experts_batch(lab):
    """Experts a layer reads, expected, for a decode batch of MOE_BATCH tokens (uniform routing)."""
    return _moe_cost(lab).experts_read(MOE_BATCH)


SPEC_OUTPUT = 64
"""Tokens each request of the speculative decoding runs generates: a steady TPOT (128 moves the
ratios by about 0.05), in a tenth of a second for all four runs (the sheet is worked again on
every dial move)."""


def _spec_method(lab: Lab) -> str:
    """EAGLE-3 where the lab's model has a published head, else n-gram (every model takes it)."""
    from sim.speculative import method_offered

    return "eagle3" if method_offered("eagle3", lab.model) is None else "ngram"


def _spec_speedup(lab: Lab, in_flight: int) -> float:
    """TPOT p50 without speculative decoding over TPOT p50 with it (K = PICKED_K), `in_flight`
    requests of the lab's prompt length sent at once."""
    def run():
        from sim.engine import run_scenario
        from sim.speculative import PICKED_K, picked_config
        from sim.workload import LengthSpec, WorkloadSpec

        w = lab.scenario.workload
        traffic = WorkloadSpec(arrival="all-at-once", num_prompts=in_flight, max_concurrency=in_flight,
                               input=LengthSpec("fixed", w.input.mean), output=LengthSpec("fixed", SPEC_OUTPUT))
        plain = lab.scenario.replace(workload=traffic, speculative_config=None)
        spec = plain.replace(speculative_config=picked_config(_spec_method(lab), lab.model, PICKED_K))
        return run_scenario(plain).metrics["median_tpot_ms"] / run_scenario(spec).metrics["median_tpot_ms"]

    return lab.memo(("spec_speedup", in_flight), run)


@_text_figure("spec_name")
def _spec_name(lab):
    from sim.speculative import METHOD_NAMES

    return METHOD_NAMES[_spec_method(lab)]


@figure("spec_k", whole)
def _spec_k(lab):
    from sim.speculative import PICKED_K

    return PICKED_K


@figure("spec_speedup_one", 2)
def _spec_speedup_one(lab):
    """How many times faster a token comes with speculative decoding, one request in flight."""
    return _spec_speedup(lab, 1)


@figure("spec_speedup_full", 2)
def _spec_speedup_full(lab):
    """The same with as many requests in flight as the engine has seats."""
    return _spec_speedup(lab, lab.seats)
