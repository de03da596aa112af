"""A run whose seat or token cap never bound runs the same under another value of that cap above
its peaks (issue 40): the engine's own record of a run (`RunSummary.caps`) and the rule that reads
it (`sim.config.caps_cover`) against runs actually made, on the scenarios the engine's agreement
property draws; and `batchtui search`'s screen, which takes such a point's screen from a like
point's (`sim.search.ScreenProof`), against every point screened on its own."""

from __future__ import annotations

import json
import math

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from batchtui.cli import main
from sim import search as s
from sim.config import caps_cover
from sim.engine import Engine
from sim.errors import ConfigError, RequestRejected
from sim.scenario import Scenario
from sim.workload import LengthSpec, WorkloadSpec
from tests.examples import examples
from tests.unit.test_engine_agrees import assert_agree, outcome, scenarios
from tests.unit.test_search import SMALL, small  # noqa: F401  (a fixture)


def _run(scenario: Scenario, api_server: bool) -> Engine | None:
    try:
        engine = Engine(scenario, api_server=api_server)
        engine.run()
    except (ConfigError, RequestRejected):
        return None
    return engine


def _same_run(a: Engine, b: Engine, what: str) -> None:
    """Every record, summary figure, pool figure, the clock and the iteration count (the last
    iteration's report names the dials, so it is left out)."""
    x, y = outcome(a), outcome(b)
    x.pop("last")
    y.pop("last")
    assert_agree(x, y, what)


@settings(max_examples=examples(60), deadline=None)
@given(scenarios(), st.data())
def test_a_cap_that_never_bound_can_be_any_value_above_the_peak(drawn, data):
    scenario, api_server = drawn
    assume(scenario.engine["batching"] == "continuous" and not scenario.speculative_config)
    first = _run(scenario, api_server)
    assume(first is not None)
    caps = first.summary().caps
    ran = first.config
    # The other values: the same, just above the peak, at it (never covered), far above.
    seats = data.draw(st.sampled_from([ran.max_num_seqs, caps.peak_running + 1, max(1, caps.peak_running),
                                       caps.peak_running + 9, 1024]), "seats")
    budget = data.draw(st.sampled_from([ran.max_num_batched_tokens, caps.peak_tokens + 1, max(1, caps.peak_tokens),
                                        caps.peak_tokens + 40, 16384]), "budget")
    other = scenario.with_engine(max_num_seqs=seats, max_num_batched_tokens=budget)
    try:
        config = other.engine_config()
    except ConfigError:
        assume(False)
    ceiling = scenario.deployment().gpu.cudagraph_ceiling
    if caps_cover(caps, ran, config, ceiling):
        second = _run(other, api_server)
        assert second is not None
        _same_run(first, second, f"seats {ran.seats} -> {seats}, budget {ran.token_budget} -> {budget}")
    else:
        assert (seats, budget) != (ran.max_num_seqs, ran.max_num_batched_tokens)


# Seats of 256 and more, budgets of 512 and more: CUDA graphs of the same sizes (up to 512 tokens
# below Blackwell) whatever the caps, so only the caps' own bounds decide, and enough requests at
# once (or nearly) that the seats or the budget bind in many runs and not in others.
@settings(max_examples=examples(30), deadline=None)
@given(st.sampled_from([256, 512, 1024]), st.sampled_from([512, 1024, 2048, 4096]),
       st.sampled_from([256, 512, 1024]), st.sampled_from([512, 1024, 2048, 4096]),
       st.sampled_from([math.inf, 400.0, 60.0]), st.integers(200, 320), st.sampled_from([40, 160, 700]),
       st.booleans(), st.booleans(), st.integers(0, 50))
@example(256, 4096, 512, 4096, math.inf, 320, 40, False, False, 3)  # the seats fill (and 512 runs it otherwise)
def test_seats_and_budgets_that_never_bound_are_free_to_move(seats, budget, seats2, budget2, rate, n, prompt,
                                                            caching, asynchronous, seed):
    sc = Scenario(engine={"max_num_seqs": seats, "max_num_batched_tokens": budget,
                          "enable_prefix_caching": caching, "async_scheduling": asynchronous},
                  workload=WorkloadSpec(request_rate=rate, num_prompts=n, input=LengthSpec("uniform", prompt, 1, 2 * prompt),
                                        output=LengthSpec("uniform", 6, 1, 12), prefix_len=32 if caching else 0),
                  seed=seed)
    assume(budget >= seats and budget2 >= seats2)  # (vLLM refuses fewer tokens than seats)
    first = _run(sc, True)
    second = _run(sc.with_engine(max_num_seqs=seats2, max_num_batched_tokens=budget2), True)
    if caps_cover(first.summary().caps, first.config, second.config):
        _same_run(first, second, f"seats {seats} -> {seats2}, budget {budget} -> {budget2}")


def test_the_graph_sizes_are_part_of_the_rule():
    """Eight seats capture graphs up to 16 tokens, sixteen up to 32: a prefill of 20 tokens runs
    without a graph under the one and padded to 24 under the other, so neither cap binding is not
    enough, and the rule says so."""
    sc = Scenario(engine={"max_num_seqs": 8, "max_num_batched_tokens": 2048},
                  workload=WorkloadSpec(arrival="constant", request_rate=1.0, num_prompts=4, input=LengthSpec("fixed", 20),
                                        output=LengthSpec("fixed", 3)))
    a = _run(sc, True)
    caps = a.summary().caps
    assert not caps.seats_bound and caps.peak_running < 8 and 16 < caps.peak_tokens <= 32
    b = _run(sc.with_engine(max_num_seqs=16), True)
    assert outcome(a)["records"] != outcome(b)["records"]
    assert not caps_cover(caps, a.config, b.config)
    c = _run(sc.with_engine(max_num_batched_tokens=4096), True)  # the same sizes up to 20 tokens
    assert caps_cover(caps, a.config, c.config)
    _same_run(a, c, "budget 2048 -> 4096")


def test_a_run_that_fills_its_seats_says_so():
    sc = Scenario(engine={"max_num_seqs": 2},
                  workload=WorkloadSpec(request_rate=math.inf, num_prompts=6, input=LengthSpec("fixed", 30),
                                        output=LengthSpec("fixed", 5)))
    caps = _run(sc, True).summary().caps
    assert caps.seats_bound and caps.peak_running == 2 and not caps.budget_bound
    tight = _run(sc.with_engine(max_num_seqs=8, max_num_batched_tokens=64), True).summary().caps
    assert tight.budget_bound and not tight.seats_bound


def test_a_screen_taken_from_a_like_point_is_the_screen_run_anew(capsys, tmp_path, monkeypatch, small):  # noqa: F811
    """The search's screen with proofs shared against every point screened on its own (no proof
    covering any point), every field of every point."""
    grid = [*SMALL, "--max-num-seqs-values", "16,256,512", "--max-num-batched-tokens-values", "512,2048",
            "--confirm", "0", "--jobs", "1"]

    def screened(name: str) -> tuple[dict, dict]:
        out = tmp_path / name
        assert main(["search", *grid, "--output", str(out)]) == 0
        capsys.readouterr()
        results = [s.PointResult.from_json(json.loads(line)["result"]) for line in out.read_text().splitlines()]
        return {r.point: r.to_json() for r in results}, json.loads(out.with_suffix(".json").read_text())

    shared, table = screened("shared.jsonl")
    assert table["stages"]["screen"]["proved"] >= 1
    monkeypatch.setattr(s.ScreenProof, "covers", lambda self, point, config: False)
    alone, table_alone = screened("alone.jsonl")
    assert table_alone["stages"]["screen"]["proved"] == 0
    assert len(shared) == 6 and shared == alone
