"""Figures of steps 10 to 15 ("Prefill against decode", "What caps the batch"): long prompts
against decodes, the token budget, the KV cache and what caps the batch.

Each figure is registered by the step that first states it; `lab` is that step's own scenario."""

from __future__ import annotations

import math

from .base import PINNED, Lab, Pinned, choices, figure, kilo, whole
from .batching import FAR


# -- prefill against decode (steps 10 and 11) ----------------------------------------------------


@figure("long_len", whole)
def _long_len(lab):
    """Length of the occasional long prompts, tokens."""
    return lab.scenario.workload.input.long_len


@figure("long_share_pct", 2)
def _long_share_pct(lab):
    """Share of prompts that are long, per cent."""
    return lab.scenario.workload.input.long_share * 100


@figure("long_len_max", whole)
def _long_len_max(lab):
    """The longest prompt the step's dial allows, tokens."""
    return lab.dials["workload.input.long_len"].max


@figure("long_prefill_s", 2)
def _long_prefill_s(lab):
    """One iteration prefilling the longest prompt the dial allows, whole, s."""
    return lab.cost.iteration(0, 0, [(0, int(_long_len_max(lab)))]).total


def _budget_run(lab, budget: int):
    """600 requests of the step's traffic at a token budget (the long prompts' share of them)."""

    def run():
        from sim.engine import run_scenario

        return run_scenario(lab.scenario.with_engine(max_num_batched_tokens=budget).with_workload(num_prompts=600),
                            keep_records=True)

    return lab.memo(("budget", budget), run)


def _budget_row(lab, budget: int) -> tuple[float, float, float]:
    """(budget, worst gap in ms, the long prompts' mean TTFT in s)."""
    run = _budget_run(lab, budget)
    long = [r.ttft for r in run.records if r.prompt_len == lab.scenario.workload.input.long_len]
    return budget, run.metrics["max_itl_ms"], sum(long) / len(long)


# Step 11's table, row by row as the lesson writes it: the budget (a setting), the worst gap
# (within 15 %: one stall decides it) and the long prompts' TTFT (within 8 %). (The TTFTs moved up
# by about 40 ms, 0.53/0.53/0.61 s before, when the API server came in front of the engine: a
# 16,000-token prompt takes it about 32 ms to tokenize, sim/frontend.py.)
STEP_11_ROWS = {8192: "| 8,192 | ≈ 270 ms | ≈ 0.56 s |",
                2048: "| 2,048 | ≈ 74 ms | ≈ 0.58 s |",
                512: "| 512 | ≈ 22 ms | ≈ 0.65 s |"}
for _budget, _row in STEP_11_ROWS.items():
    PINNED.append(Pinned(11, _row, lambda lab, budget=_budget: _budget_row(lab, budget), (0.0, 0.15, 0.08),
                         "A budget's worst gap and long-prompt TTFT over 600 requests of step 11's traffic."))


@choices(11, rel=0.0)
def _choices_11(lab):
    """The budget, of the choices, whose worst gap is smallest."""
    budgets = [int(c.replace(",", "")) for c in lab.activity["choices"]]
    return min(budgets, key=lambda b: _budget_row(lab, b)[1])


# -- the KV cache (steps 12, 14, 15, 17) ---------------------------------------------------------


@figure("cache_tokens", kilo)
def _cache_tokens(lab):
    """Tokens the KV cache holds (usable blocks x block size)."""
    return lab.deployment.kv_cache_tokens


@figure("kv_memory_gb", 3)
def _kv_memory_gb(lab):
    """Memory left for the KV cache: utilisation x GPU memory − weights − reserve, GB."""
    dep = lab.deployment
    return (dep.gpu_memory_utilization * lab.gpu.memory_bytes - dep.weight_bytes - dep.reserve_bytes) / 1e9


@figure("layers", whole)
def _layers(lab):
    return lab.model.layers


@figure("kv_heads", whole)
def _kv_heads(lab):
    return lab.model.kv_heads


@figure("head_dim", whole)
def _head_dim(lab):
    return lab.model.head_dim


@figure("kv_bytes_per_value", whole)
def _kv_bytes_per_value(lab):
    """Bytes of one cached key or value element (the KV cache dtype)."""
    dep = lab.deployment
    return dep.kv_bytes_per_token / (2 * lab.model.layers * lab.model.kv_heads * lab.model.head_dim)


@figure("kv_bytes_per_token", whole)
def _kv_bytes_per_token(lab):
    return lab.deployment.kv_bytes_per_token


@figure("kv_kib_per_token", 3)
def _kv_kib_per_token(lab):
    return lab.deployment.kv_bytes_per_token / 1024


@figure("cache_batch", 3)
def _cache_batch(lab):
    """Sequences the cache holds at full length: cache tokens ÷ (prompt + output)."""
    return lab.deployment.kv_cache_tokens / (lab.prompt + lab.output)


@figure("cache_batch_whole", whole)
def _cache_batch_whole(lab):
    """Whole sequences that fit at full length."""
    return math.floor(_cache_batch(lab))


@figure("cache_batch_prompt", 3)
def _cache_batch_prompt(lab):
    """Prompts the cache holds: cache tokens ÷ prompt (vLLM admits on the prompt's blocks)."""
    return lab.deployment.kv_cache_tokens / lab.prompt


@figure("cache_batch_prompt_whole", whole)
def _cache_batch_prompt_whole(lab):
    return math.floor(_cache_batch_prompt(lab))


# -- capping the batch (step 13) -----------------------------------------------------------------


def _capped(lab) -> Lab:
    """The step's engine with the seats the prediction runs with."""
    return lab.memo("capped", lambda: lab.variant(max_num_seqs=lab.run_value("engine.max_num_seqs")))


@figure("run_seats", whole)
def _run_seats(lab):
    """The seats a prediction runs with once the guess is in."""
    return lab.run_value("engine.max_num_seqs")


@figure("capped_rate", 2)
def _capped_rate(lab):
    """Requests/s the capped engine completes, flat out."""
    return _capped(lab).saturated


# -- the cache caps the batch (step 14) ----------------------------------------------------------


@figure("cache_push_rate", 2)
def _cache_push_rate(lab):
    """Traffic that keeps the cache full: 1.5 x the saturated rate, requests/s."""
    return round(FAR * lab.saturated * 2) / 2
