"""The cheat sheet's lines on a mixture of experts and speculative decoding (issue 39) state what
the simulator gives on the sheet's own GPU and model: the experts a layer reads grow with the
batch; speculative decoding's gain at one request in flight shrinks (or turns to a loss) with a
full engine."""

from __future__ import annotations

import re

import pytest

import steps
from sim.cost import CostModel
from sim.engine import run_scenario
from sim.speculative import PICKED_K, picked_config
from sim.workload import LengthSpec, WorkloadSpec
from steps.activities import cheat_sheet_md
from steps.figures import MEASURE_SEED, fmt
from steps.figures.choosing import SPEC_OUTPUT
from tests import shared_steps


@pytest.fixture(scope="module")
def cheat_step():
    return next(s for s in shared_steps.lessons() if s.activity.kind == "cheat_sheet")


def line_of(sheet: str, head: str) -> str:
    return " ".join(next(part for part in sheet.split("\n- ") if part.startswith(head)).split())


def tpot(scenario, spec, in_flight: int) -> float:
    traffic = WorkloadSpec(arrival="all-at-once", num_prompts=in_flight, max_concurrency=in_flight,
                           input=LengthSpec("fixed", scenario.workload.input.mean),
                           output=LengthSpec("fixed", SPEC_OUTPUT))
    run = scenario.replace(seed=MEASURE_SEED, workload=traffic, speculative_config=spec)
    return run_scenario(run).metrics["median_tpot_ms"]


@pytest.mark.parametrize("gpu, model, method", [("h100-sxm", "llama-3.1-8b", "EAGLE-3"),
                                                ("l40s", "qwen2.5-14b", "n-gram")])
def test_the_lines_are_the_simulators_on_the_sheets_deployment(cheat_step, gpu, model, method):
    scenario = steps.set_path(steps.set_path(cheat_step.scenario, "gpu", gpu), "model", model)
    sheet = cheat_sheet_md(scenario)

    moe = line_of(sheet, "**Mixture of experts**")
    found = re.search(r"Qwen3 30B-A3B reads (\d+) of (\d+) a layer for one token, (\d+) for (\d+)", moe)
    assert found, moe
    one, experts, many, batch = map(int, found.groups())
    cost = CostModel(scenario.replace(model="qwen3-30b-a3b", tensor_parallel_size=2).deployment())
    assert (one, experts) == (8, 128) and many == round(cost.experts_read(batch))
    assert one < many <= experts  # the batch's tokens route to more experts: more weights read

    spec = line_of(sheet, "**Speculative decoding**")
    found = re.search(rf"\({method}, K = (\d+)\): tokens ([\d.]+)× as fast alone, ([\d.]+)× with (\d+) in flight",
                      spec)
    assert found, spec
    k, alone, full, seats = int(found[1]), float(found[2]), float(found[3]), int(found[4])
    config = picked_config("eagle3" if method == "EAGLE-3" else "ngram",
                           scenario.profiles().model(model), PICKED_K)
    assert k == PICKED_K and seats == scenario.engine_config().max_num_seqs
    assert alone == float(fmt(tpot(scenario, None, 1) / tpot(scenario, config, 1), 2))
    assert full == float(fmt(tpot(scenario, None, seats) / tpot(scenario, config, seats), 2))
    assert alone > 1.0 and full < alone  # a gain alone that shrinks with a full engine
