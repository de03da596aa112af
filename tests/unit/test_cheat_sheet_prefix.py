"""The cheat sheet's line on shared prefixes states what the simulator gives the multi-turn
helpdesk on the sheet's own deployment: the hit rate and TTFT p50 with prefix caching on and off."""

from __future__ import annotations

from dataclasses import replace

import pytest

import steps
from sim.engine import run_scenario
from sim.workload import MULTI_TURN_HELPDESK
from steps.activities import cheat_sheet_md
from steps.figures import HELPDESK_CONVERSATIONS, MEASURE_SEED, fmt
from tests import shared_steps


@pytest.fixture(scope="module")
def cheat_step():
    return next(s for s in shared_steps.lessons() if s.activity.kind == "cheat_sheet")


def helpdesk(scenario, caching: bool) -> dict:
    workload = replace(MULTI_TURN_HELPDESK, num_prompts=HELPDESK_CONVERSATIONS)
    run = replace(scenario.replace(seed=MEASURE_SEED), workload=workload)
    return run_scenario(run.with_engine(enable_prefix_caching=caching)).metrics


@pytest.mark.parametrize("gpu", ["h100-sxm", "l40s"])
def test_the_shared_prefix_line_is_the_helpdesk_run_by_the_simulator(cheat_step, gpu):
    scenario = steps.set_path(cheat_step.scenario, "gpu", gpu)
    on, off = helpdesk(scenario, True), helpdesk(scenario, False)
    # The history each turn resends is cached: most prompt tokens hit, and TTFT falls.
    assert 0.4 < on["prefix_cache_hit_rate"] < 0.9
    assert off["prefix_cache_hits"] == 0
    assert on["median_ttft_ms"] < off["median_ttft_ms"]
    sheet = cheat_sheet_md(scenario)
    line = next(part for part in sheet.split("\n- ") if part.startswith("**Shared prefix**"))
    line = " ".join(line.split())
    assert f"({MULTI_TURN_HELPDESK.prefix_len}-token system prompt, {MULTI_TURN_HELPDESK.turns} turns" in line
    assert f"**{fmt(100 * on['prefix_cache_hit_rate'], 2)}%**" in line
    assert f"TTFT p50 {fmt(on['median_ttft_ms'])} ms ({fmt(off['median_ttft_ms'])} uncached)" in line


def test_the_sheet_is_filled_once_per_scenario_and_anew_for_another(cheat_step, monkeypatch):
    """Opening step 19 again reads its sheet instead of running its measurements again; another
    scenario (a dial moved: a new object) is filled for itself."""
    from steps import figures

    filled = []
    real_fill = figures.fill
    monkeypatch.setattr(figures, "fill", lambda text, lab: filled.append(lab.scenario) or real_fill(text, lab))
    scenario = steps.set_path(cheat_step.scenario, "gpu_memory_utilization", 0.8)
    first = cheat_sheet_md(scenario)
    assert cheat_sheet_md(scenario) == first and len(filled) == 1
    other = steps.set_path(cheat_step.scenario, "gpu_memory_utilization", 0.7)
    assert cheat_sheet_md(other) != first and len(filled) == 2
    assert cheat_sheet_md(scenario) == first and len(filled) == 2
