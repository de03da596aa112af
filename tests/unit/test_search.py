"""`batchtui search` (issue 27): the grid, the screen and the confirmation, cost and the front, the
journal it resumes from, its answer against `plan`'s on the point they share, and the same
results from Ray as from the process pool. Small grids and short runs (the 512-point figure is
benchmarks/search_benchmark.py's)."""

from __future__ import annotations

import json
import math

import pytest

from batchtui.cli import cmd_search, main, search_stages
from batchtui.cli.exits import EXIT_INTERRUPTED
from sim import planning, rate_plan
from sim import search as s

SMALL = ["--num-prompts", "60", "--input-len", "256", "--output-len", "32", "--seeds", "2",
         "--confirm-prompts", "300", "--tpot-p99", "9", "--ttft-p99", "60", "--peak-rate", "100"]


@pytest.fixture
def small(monkeypatch):
    """Short windows and runs for the screen and plan's confirmation (the search is the real one)."""
    monkeypatch.setattr(rate_plan, "PLAN_MIN_WINDOW", 40)
    monkeypatch.setattr(rate_plan, "PLAN_MIN_WINDOW_S", 0.0)
    monkeypatch.setattr(rate_plan, "PLAN_MIN_PROMPTS", 50)
    monkeypatch.setattr(rate_plan, "PLAN_CONFIRM_PROMPTS", 300)
    # five confirmation runs: a new seed's bound over three is mean + 11.4 sd (a Gumbel's), which
    # runs of 300 requests rarely meet
    monkeypatch.setattr(rate_plan, "PLAN_CONFIRM_NEW_SEEDS", 3)
    monkeypatch.setattr(rate_plan, "ROUTER_MIN_PER_REPLICA", 100)
    monkeypatch.setattr(rate_plan, "ROUTER_MIN_SECONDS", 1.0)
    monkeypatch.setattr(s, "SCREEN_PROMPTS", 80)
    monkeypatch.setattr(s, "SCREEN_WINDOW", 30)
    monkeypatch.setattr(s, "SCREEN_WINDOW_S", 0.0)
    monkeypatch.setattr(s, "SCREEN_PRECISION", 0.1)


def search(capsys, tmp_path, *argv, name="s.jsonl"):
    out = tmp_path / name
    code = main(["search", *argv, "--output", str(out)])
    captured = capsys.readouterr()
    table = json.loads(out.with_suffix(".json").read_text()) if out.with_suffix(".json").exists() else None
    return code, captured.out, captured.err, table


def same_answers(table: dict) -> list:
    """What a search found, without how long it took or what it reused."""
    return [table[k] for k in ("ranked", "front", "infeasible", "best", "meet_slo", "cannot_run")]


# -- the pure parts ---------------------------------------------------------------------------------

def test_the_grid_is_every_combination_in_order():
    points = s.grid(["a", "b"], [1, 2], [8, 16, 32], [2048], ["auto", "fp8"], [True])
    assert len(points) == 2 * 2 * 3 * 2
    assert points[0] == s.GridPoint("a", 1, 8, 2048, "auto", True)
    assert points[-1] == s.GridPoint("b", 2, 32, 2048, "fp8", True)
    assert len(set(points)) == len(points)


def test_expert_parallelism_is_an_axis_of_points_of_several_gpus():
    from sim.scenario import Scenario

    points = s.grid(["h100-sxm"], [1, 8], [64], [2048], ["auto"], [True], [False, True])
    assert [(p.tensor_parallel_size, p.enable_expert_parallel) for p in points] == [(1, False), (8, False), (8, True)]
    ep = points[-1]
    assert ep.label() == "h100-sxm tp8 ep seqs 64 tokens 2048 kv auto cache on"
    sc = s.point_scenario(Scenario(model="qwen3-235b-a22b"), ep)
    assert sc.enable_expert_parallel and sc.deployment().expert_parallel
    assert s.point_scenario(Scenario(), points[1]).enable_expert_parallel is None
    # A journal written before the axis existed reads as points without it.
    old = s.PointResult(points[1], "screen", True, rate=1.0).to_json()
    del old["point"]["enable_expert_parallel"]
    assert s.PointResult.from_json(old).point == points[1]


def test_the_pareto_front_keeps_only_points_nobody_beats_on_both():
    def r(per_gpu, per_user, seqs):
        p = s.GridPoint("g", 1, seqs, 2048, "auto", True)
        return s.PointResult(p, "screen", True, rate=per_gpu, mean_output_len=1.0, median_tpot_ms=1000.0 / per_user)

    a, b, c, d = r(100, 10, 1), r(80, 20, 2), r(70, 15, 3), r(50, 30, 4)
    front = s.pareto_front([c, a, d, b])
    assert [x.point.max_num_seqs for x in front] == [1, 2, 4]  # c is beaten by b on both


def test_cost_counts_replicas_as_plan_does_and_prices_gpus():
    p = s.GridPoint("g", 2, 64, 2048, "auto", True)
    r = s.PointResult(p, "confirm", True, rate=10.0, mean_output_len=100.0)
    c = s.cost(r, 2.0, peak_rate=50.0, headroom=0.2)
    assert c.replicas == planning.replicas_needed(50.0, 10.0, 0.2) == 7
    assert c.gpus == 14 and c.per_hour == pytest.approx(28.0)
    assert c.per_million_tokens == pytest.approx(28.0 / (50 * 100 * 3600) * 1e6)
    unpriced = s.cost(r, None, 50.0, 0.2)
    assert unpriced.per_hour is None and unpriced.per_million_tokens is None and unpriced.gpus == 14


def test_a_point_is_priced_with_the_replicas_that_held_behind_a_router(monkeypatch):
    """The router check is plan's (`rate_plan.replicas_for_peak` over `check_router`): where the
    first proposal misses at the peak, the point gets the replicas that held, and costs them; where
    none within ROUTER_MAX_EXTRA more hold, it is infeasible with the miss said."""
    from sim.scenario import Scenario

    point = s.GridPoint("h100-sxm", 1, 64, 2048, "auto", True)
    confirmed = s.PointResult(point, "confirm", True, rate=10.0, mean_output_len=100.0, runs=5)
    first = planning.replicas_needed(50.0, 10.0, 0.2)
    asked = []

    def check_router(scenario, profiles, policy, replicas, peak_rate, slo, n):
        asked.append((replicas, policy, n))
        misses = [] if replicas >= first + holds_from else ["p99 TTFT 900 ms > 500 ms"]
        return rate_plan.RouterCheck(policy, replicas, peak_rate, {}, misses, [n // replicas] * replicas)

    monkeypatch.setattr(rate_plan, "check_router", check_router)
    holds_from = 1
    checked = s.router_point(Scenario(), confirmed, planning.Slo(500, None), 50.0, 0.2, 1.0, 10, 4)
    assert checked.stage == "router" and checked.feasible and checked.replicas == first + 1
    assert [r for r, _, _ in asked] == [first] * 2 + [first + 1] * 2  # every policy at each count
    assert checked.runs == 5 + 4
    assert s.cost(checked, 2.0, 50.0, 0.2).replicas == first + 1
    assert s.cost(checked, 2.0, 50.0, 0.2).per_hour == pytest.approx(2.0 * (first + 1))
    holds_from = 9
    missed = s.router_point(Scenario(), confirmed, planning.Slo(500, None), 50.0, 0.2, 1.0, 10, 4)
    assert not missed.feasible and f"{first + 4} replicas still miss the SLO: p99 TTFT 900 ms" in missed.reason


# -- the command --------------------------------------------------------------------------------------

def test_search_screens_confirms_and_lists_what_cannot_run(capsys, tmp_path, small):
    code, out, _, table = search(capsys, tmp_path, *SMALL, "--gpus", "h100-sxm,l4", "--max-num-seqs-values",
                                 "16,64", "--confirm", "1", "--jobs", "1", "--gpu-price", "h100-sxm=4")
    assert code == 0
    st = table["stages"]
    assert table["points"] == 4 and st["screen"]["ran"] == 4 and 1 <= st["confirm"]["ran"] <= 2
    # the L4 cannot hold Llama 3.1 8B's full context in its KV cache: infeasible, with vLLM's reason
    l4 = [d for d in table["infeasible"] if d["gpu"] == "l4"]
    assert len(l4) == 2 and all(d["reason"].startswith("--max-model-len = 131072 is not allowed") for d in l4)
    assert table["cannot_run"] == 2
    best = table["best"][0]
    assert best["stage"] == "router" and best["gpu"] == "h100-sxm"  # confirmed, its replicas checked
    assert all(d["stage"] == "router" for d in table["best"] if d["stage"] != "screen")  # (screened: too few confirmed)
    first = planning.replicas_needed(100, best["rate"], planning.HEADROOM)
    assert first <= best["replicas"] <= first + rate_plan.ROUTER_MAX_EXTRA
    assert best["cost_per_hour"] == pytest.approx(4 * best["gpus"])
    assert f"--max-num-seqs {best['max_num_seqs']}" in best["vllm_command"]
    assert "Cheapest first" in out and "Pareto front" in out and "vllm serve" in out
    assert "2 on l4 tp1: --max-model-len = 131072 is not allowed" in " ".join(out.split())
    lines = (tmp_path / "s.jsonl").read_text().splitlines()
    assert st["router"]["ran"] >= 1 and len(lines) == st["screen"]["ran"] + st["confirm"]["ran"] + st["router"]["ran"]


def test_search_matches_plan_on_the_point_they_share(capsys, tmp_path, small):
    point = ["--max-num-seqs", "64"]
    code = main(["plan", "--num-prompts", "60", "--input-len", "256", "--output-len", "32", "--seeds", "2",
                 "--tpot-p99", "9", "--ttft-p99", "60", "--peak-rate", "100", *point, "--jobs", "1", "--json"])
    plan = json.loads(capsys.readouterr().out)
    assert code == 0
    code, _, _, table = search(capsys, tmp_path, *SMALL, "--max-num-seqs-values", "64", "--jobs", "1")
    assert code == 0
    best = table["best"][0]
    assert best["stage"] == "router"
    assert best["rate"] == pytest.approx(plan["max_rate"])
    assert best["seeds"] == plan["confirm_seeds"]
    assert best["replicas"] == plan["replicas"]


@pytest.mark.heavy
def test_an_interrupted_search_resumed_gives_the_uninterrupted_answer(capsys, tmp_path, small, monkeypatch):
    grid = [*SMALL, "--max-num-seqs-values", "8,16,64", "--tensor-parallel-sizes", "1,2", "--confirm", "1",
            "--jobs", "1"]
    code, _, _, whole = search(capsys, tmp_path, *grid, name="whole.jsonl")
    assert code == 0
    real = search_stages.screen_task
    calls = []

    def interrupted(task):
        if len(calls) == 3:
            raise KeyboardInterrupt
        calls.append(task)
        return real(task)

    monkeypatch.setattr(search_stages, "screen_task", interrupted)
    code, _, err, table = search(capsys, tmp_path, *grid, name="cut.jsonl")
    assert code == EXIT_INTERRUPTED and table is None
    assert "interrupted" in err and "run the same command again" in err
    assert len((tmp_path / "cut.jsonl").read_text().splitlines()) == 3
    monkeypatch.setattr(search_stages, "screen_task", real)
    code, _, _, resumed = search(capsys, tmp_path, *grid, name="cut.jsonl")
    assert code == 0
    assert resumed["stages"]["screen"]["reused"] == 3 and resumed["stages"]["screen"]["ran"] == 3
    assert same_answers(resumed) == same_answers(whole)
    # and a third run reuses everything
    code, _, _, again = search(capsys, tmp_path, *grid, name="cut.jsonl")
    assert again["stages"]["screen"]["ran"] == 0 and again["stages"]["confirm"]["ran"] == 0
    assert same_answers(again) == same_answers(whole)


def test_a_result_is_reused_only_under_the_same_workload_and_slo(capsys, tmp_path, small):
    grid = [*SMALL, "--max-num-seqs-values", "16", "--confirm", "0", "--jobs", "1"]
    search(capsys, tmp_path, *grid)
    _, _, _, other = search(capsys, tmp_path, *grid, "--random-prefix-len", "8")
    assert other["stages"]["screen"]["ran"] == 1 and other["stages"]["screen"]["reused"] == 0


def test_a_torn_last_line_is_skipped_and_a_foreign_file_refused(capsys, tmp_path, small):
    grid = [*SMALL, "--max-num-seqs-values", "16,32", "--confirm", "0", "--jobs", "1"]
    search(capsys, tmp_path, *grid)
    path = tmp_path / "s.jsonl"
    first = path.read_text().splitlines()[0]
    path.write_text(first + "\n" + first[:25])  # killed mid-write
    _, _, _, table = search(capsys, tmp_path, *grid)
    assert table["stages"]["screen"]["reused"] == 1 and table["stages"]["screen"]["ran"] == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text("hello\nworld\n")
    code = main(["search", *grid, "--output", str(tmp_path / "x.jsonl"), "--resume", str(bad)])
    err = capsys.readouterr().err
    assert code == 2 and "bad.jsonl:1: not a line of a batchtui search journal" in err
    assert len(err.strip().splitlines()) == 1


def test_appending_after_a_torn_line_keeps_every_line_whole(capsys, tmp_path):
    grid = ["--offline", "100", "--input-len", "64", "--output-len", "8", "--max-num-seqs-values", "8,16,32",
            "--jobs", "1"]
    search(capsys, tmp_path, *grid)
    path = tmp_path / "s.jsonl"
    lines = path.read_text().splitlines()
    path.write_text(lines[0] + "\n" + lines[1][:40])  # killed mid-write
    code, _, _, table = search(capsys, tmp_path, *grid)
    assert code == 0 and table["stages"]["screen"]["reused"] == 1
    again = path.read_text()  # the torn bytes were cut before the new lines: every line whole
    assert again.startswith(lines[0] + "\n") and again.endswith("\n")
    assert sorted(json.loads(line)["key"] for line in again.splitlines()) == sorted(
        json.loads(line)["key"] for line in lines)
    code, _, _, table = search(capsys, tmp_path, *grid)  # and it reads back whole
    assert code == 0 and table["stages"]["screen"]["reused"] == 3


NOT_JOURNALS = {
    "one line": ('{"name": "my notes"}', 1),
    "words": ("hello\nworld\n", 1),
    "a row of the wrong type": (None, 2),
    "a line too long": ('{"key": "' + "x" * (70 << 10) + "\n", 1),
}


@pytest.mark.parametrize("case", list(NOT_JOURNALS))
def test_a_file_that_is_not_a_journal_is_refused_untouched(capsys, tmp_path, case):
    """Never appended to (issue 38: a one-line file was taken for a torn last line and changed),
    as --output or read as --resume: one line naming the file and the line."""
    text, number = NOT_JOURNALS[case]
    grid = ["--offline", "100", "--input-len", "64", "--output-len", "8", "--max-num-seqs-values", "8,16",
            "--jobs", "1"]
    if text is None:  # a row whose rate is a word
        search(capsys, tmp_path, *grid, name="good.jsonl")
        row = json.loads((tmp_path / "good.jsonl").read_text().splitlines()[0])
        row["result"]["rate"] = "fast"
        text = (tmp_path / "good.jsonl").read_text().splitlines()[0] + "\n" + json.dumps(row) + "\n"
    path = tmp_path / "existing.json"
    path.write_text(text)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    for flag in ("--output", "--resume"):
        argv = ["search", *grid, "--output", str(path)] if flag == "--output" else \
            ["search", *grid, "--resume", str(path), "--output", str(tmp_path / "new.jsonl")]
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and f"argument {flag}: {path}:{number}: " in err, err
        assert "not a line of a batchtui search journal" in err or "a line longer than 64 KiB" in err
        assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert not (tmp_path / "new.jsonl").exists() and not (tmp_path / "existing.json.json").exists()


@pytest.mark.parametrize("argv, needle", [
    (["--max-num-seqs-values", "16", "--max-num-seqs", "8", "--tpot-p99", "9"],
     "argument --max-num-seqs-values: not allowed with --max-num-seqs"),
    (["--gpus", "nonesuch", "--tpot-p99", "9"], "argument --gpus: unknown GPU profile 'nonesuch'; known GPU profiles are h100-sxm (or h100), "),
    (["--offline", "100", "--tpot-p99", "9"], "argument --tpot-p99: not allowed with --offline"),
    ([], "give a latency SLO"),
    (["--tpot-p99", "9", "--gpu-price", "h100"], "argument --gpu-price: expected NAME=USD_PER_HOUR"),
    (["--tpot-p99", "9", "--max-num-seqs-values", "8,x"], "argument --max-num-seqs-values"),
])
def test_search_bad_input(capsys, tmp_path, argv, needle):
    code = main(["search", *argv, "--output", str(tmp_path / "o.jsonl")])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and "Traceback" not in err


def test_a_model_the_default_gpu_cannot_hold_is_searched_on_the_grid_that_can(capsys, tmp_path):
    """Llama 3.1 70B on --tensor-parallel-sizes 1,4 was refused whole, in the words of the default
    H100 at TP 1 ("does not fit on one H100 SXM 80 GB ... Set --tensor-parallel-size to 2"), a
    flag search refuses beside the list: the base scenario was deployed though every point is
    deployed on its own. Now TP 4 runs and TP 1 is listed as infeasible, with that reason."""
    code, out, err, table = search(capsys, tmp_path, "--offline", "16", "--input-len", "64", "--output-len", "8",
                                   "--model", "llama-3.1-70b", "--gpus", "h100-sxm",
                                   "--tensor-parallel-sizes", "1,4", "--jobs", "1")
    assert code == 0, err
    assert [r["tensor_parallel_size"] for r in table["ranked"]] == [4]
    assert [(d["tensor_parallel_size"], d["reason"].split(":")[0]) for d in table["infeasible"]] == [
        (1, "Llama 3.1 70B does not fit on one H100 SXM 80 GB")]


def test_num_gpu_blocks_override_is_checked_on_each_point_not_the_base(capsys, tmp_path):
    """--num-gpu-blocks-override still deployed the base scenario (the default H100 at TP 1) to
    count the blocks that fit, so Llama 3.1 70B on --tensor-parallel-sizes 2,4 was refused whole
    in its words ("does not fit on one H100 SXM 80 GB"). Now each point is held to it: TP 4
    holds 5,000 blocks and runs, TP 2 holds fewer and is listed as infeasible, saying so."""
    code, out, err, table = search(capsys, tmp_path, "--offline", "16", "--input-len", "64", "--output-len", "8",
                                   "--model", "llama-3.1-70b", "--gpus", "h100-sxm", "--max-model-len", "4096",
                                   "--tensor-parallel-sizes", "2,4", "--num-gpu-blocks-override", "5000",
                                   "--jobs", "1")
    assert code == 0, err
    assert [r["tensor_parallel_size"] for r in table["ranked"]] == [4]
    [(tp, reason)] = [(d["tensor_parallel_size"], d["reason"]) for d in table["infeasible"]]
    assert tp == 2 and reason.startswith("--num-gpu-blocks-override = 5000 is not allowed: at most 1,602 blocks fit")
    assert "Infeasible (1 point):" in out  # (said "1 points")


def test_each_gpu_takes_its_own_vllm_default_for_a_dial_not_given(capsys, tmp_path):
    """Every point took the base GPU's (the H100's) 1,024 seats and 8,192-token budget, so an A100
    and an L40S were searched at dials vLLM never gives them (it gives them 256 and 2,048,
    vllm/engine/arg_utils.py): a dial not given takes each GPU's default, the one `sim --gpu`
    runs; one given (a flag, a list) is every GPU's. An offline job's are the LLM class's
    (`Scenario.offline`, as `plan --offline` runs: 16,384 tokens on an H100, 8,192 on an A100 or
    L40S), not vllm serve's (8,192 and 2,048), which search --offline took before."""
    from sim.scenario import Scenario

    gpus = ["h100-sxm", "a100-80gb", "l40s"]
    job = ["--offline", "8", "--input-len", "64", "--output-len", "8", "--gpus", ",".join(gpus), "--jobs", "1"]

    def dials(*argv, name):
        code, _, err, table = search(capsys, tmp_path, *job, *argv, name=name)
        assert code == 0, err
        return {r["gpu"]: (r["max_num_seqs"], r["max_num_batched_tokens"]) for r in table["ranked"]}

    llm_runs = {g: (c.max_num_seqs, c.max_num_batched_tokens) for g in gpus
                for c in [Scenario(gpu=g, offline=True).engine_config()]}
    assert dials(name="a.jsonl") == llm_runs == {"h100-sxm": (1024, 16384), "a100-80gb": (256, 8192),
                                                 "l40s": (256, 8192)}
    assert dials("--max-num-seqs", "64", name="b.jsonl") == {
        "h100-sxm": (64, 16384), "a100-80gb": (64, 8192), "l40s": (64, 8192)}
    assert dials("--max-num-batched-tokens-values", "4096", name="c.jsonl") == {
        "h100-sxm": (1024, 4096), "a100-80gb": (256, 4096), "l40s": (256, 4096)}
    serving = {g: s.grid_dials(Scenario(), Scenario().profiles(), g) for g in gpus}  # (a search for an SLO)
    assert serving == {g: ([c.max_num_seqs], [c.max_num_batched_tokens]) for g in gpus
                       for c in [Scenario(gpu=g).engine_config()]}


def test_an_offline_job_is_checked_against_the_llm_classs_defaults_not_vllm_serves(capsys, tmp_path):
    """plan --offline and search --offline judged their dials against vllm serve's defaults
    before turning the scenario offline: 10,000 seats on an H100 were refused for vllm serve's
    8,192-token budget ("at least --max-num-seqs"), where vLLM's LLM class runs 16,384 and takes
    them. build_setup makes an --offline command's scenario offline, the one place both go."""
    from batchtui.cli import main as cli_main

    job = ["--offline", "8", "--input-len", "64", "--output-len", "8", "--max-num-seqs", "10000"]
    assert cli_main(["plan", *job, "--json"]) == 0, capsys.readouterr().err
    plan = json.loads(capsys.readouterr().out)
    assert "max_num_seqs=10000" in plan["llm"] and "max_num_batched_tokens=16384" in plan["llm"]
    code, _, err, table = search(capsys, tmp_path, *job, "--jobs", "1")
    assert code == 0, err
    assert [(r["max_num_seqs"], r["max_num_batched_tokens"]) for r in table["ranked"]] == [(10000, 16384)]


def test_an_offline_search_prints_the_llm_call_plan_offline_prints(capsys, tmp_path):
    """search --offline printed `vllm serve` lines (and planned at vllm serve's 8,192-token budget
    on an H100) for a job vLLM's LLM class runs at 16,384: its best deployments are now given as
    plan --offline gives its answer, the LLM(...) call, the same call for the same dials; its
    table had a replicas column (always 1) and no job time: it has the time plan gives."""
    from batchtui.cli import main as cli_main

    job = ["--offline", "16", "--input-len", "64", "--output-len", "8", "--max-num-seqs", "16"]
    code, out, err, table = search(capsys, tmp_path, *job, "--jobs", "1")
    assert code == 0, err
    [best] = table["best"]
    assert "vllm_command" not in best and best["llm"].startswith("LLM(model='meta-llama/Llama-3.1-8B-Instruct'")
    assert "max_num_batched_tokens=16384" in best["llm"] and "api_server_count" not in best["llm"]
    assert "vLLM offline (from vllm import LLM) for the best deployments:" in out and "vllm serve" not in out
    assert "1 finished the job" in out and "meet the SLO" not in out
    assert cli_main(["plan", *job, "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["llm"] == best["llm"]
    # and the job's time, which plan --offline answers with, where a service has its replicas
    assert best["job_s"] == plan["job_time_s"] and "job time GPUs" in out and " repl " not in out


def test_offline_search_ranks_batch_jobs(capsys, tmp_path):
    code, out, _, table = search(capsys, tmp_path, "--offline", "200", "--input-len", "256", "--output-len", "32",
                                 "--max-num-seqs-values", "8,64", "--jobs", "1")
    assert code == 0 and table["stages"]["screen"]["ran"] == 2
    first = table["ranked"][0]
    assert first["stage"] == "offline" and first["max_num_seqs"] == 64  # more seats, the job ends sooner
    assert table["ranked"][0]["cost_per_million_tokens"] < table["ranked"][1]["cost_per_million_tokens"]


def test_ray_gives_the_same_results_as_the_process_pool(capsys, tmp_path, small):
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install \"batchtui[ray]\")")
    grid = [*SMALL, "--max-num-seqs-values", "16,64", "--confirm", "1"]
    _, _, _, pool = search(capsys, tmp_path, *grid, "--jobs", "1", name="pool.jsonl")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        code, _, _, table = search(capsys, tmp_path, *grid, "--executor", "ray", "--jobs", "2", name="ray.jsonl")
    finally:
        ray.shutdown()
    assert code == 0 and table["executor"] == "ray"
    assert same_answers(table) == same_answers(pool)
    assert not math.isnan(table["best"][0]["rate"])


def test_ctrl_c_in_a_terminal_keeps_what_finished_and_says_how_to_resume(tmp_path):
    """The real thing: a pool of two workers, SIGINT to the whole process group (as a terminal's
    Ctrl-C sends it): exit 130, one line, no traceback, the journal's lines whole, no table."""
    import os
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "s.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "batchtui", "search", "--input-len", "256", "--output-len", "32",
                             "--tpot-p99", "9", "--max-num-seqs-values", "8,16,32,64,128,256", "--jobs", "2",
                             "--output", str(out)], cwd=tmp_path, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            if out.exists() and out.read_text().count("\n") >= 1:
                break
            time.sleep(0.2)
        assert proc.poll() is None, "the search ended before it could be interrupted"
        os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == EXIT_INTERRUPTED, stderr
    assert "Traceback" not in stderr and stderr.strip().count("\n") == 0
    assert "interrupted: the points finished are kept in" in stderr
    lines = out.read_text().splitlines()
    assert 1 <= len(lines) < 6
    assert all(s.PointResult.from_json(json.loads(line)["result"]).stage == "screen" for line in lines)
    assert not out.with_suffix(".json").exists()


def test_survivors_are_the_cheapest_and_a_few_points_spread_along_the_front():
    results = []
    for i in range(10):  # all on one front: more per GPU, less per user
        p = s.GridPoint("g", 1, 8 * (i + 1), 2048, "auto", True)
        results.append(s.PointResult(p, "screen", True, rate=100.0 - i, mean_output_len=1.0,
                                     median_tpot_ms=1000.0 / (10 + i)))
    costs = {r.point: s.cost(r, 1.0, 50.0) for r in results}
    keep = s.survivors(results, costs, 3)
    seats = sorted(r.point.max_num_seqs for r in keep)
    # the three cheapest (highest rates: 8, 16, 24 seats) and the front's ends and middle (8, 40 or 48, 80)
    assert {8, 16, 24, 80} <= set(seats) and len(seats) == 5
    assert s.spread(list(range(10)), 3) == [0, 4, 9] or s.spread(list(range(10)), 3) == [0, 5, 9]
    assert s.spread([1, 2], 5) == [1, 2] and s.spread([1, 2, 3], 0) == []


@pytest.mark.heavy
def test_a_pool_of_two_gives_the_same_results_as_one_process(capsys, tmp_path, small, monkeypatch):
    """Two worker processes, each confirmed point a chain of units (`sim.search.run_unit`) with
    its router check straight after it, against one process running a point a task and the
    router checks as a stage of their own (as on Ray, which has no chains): the same journal,
    field for field, the same table and the same counts; and a search resumed from a journal
    holding the confirmations but not their router checks makes the checks in the points'
    chains, to the same journal."""
    from batchtui.cli.workers import Workers

    grid = [*SMALL, "--max-num-seqs-values", "16,64", "--tensor-parallel-sizes", "1,2", "--confirm", "2",
            "--best", "4", "--jobs", "2"]

    def journal(name: str) -> dict:
        lines = (tmp_path / name).read_text().splitlines()
        return {d["key"]: d["result"] for d in map(json.loads, lines)}

    code, _, _, chained = search(capsys, tmp_path, *grid, name="chained.jsonl")
    assert code == 0 and chained["stages"]["router"]["ran"] >= 2

    class Tasks(Workers):
        chains = None  # (a point a task, as on Ray)

    real = cmd_search.make_executor
    monkeypatch.setattr(cmd_search, "make_executor", lambda name, jobs: Tasks(jobs))
    code, _, _, tasks = search(capsys, tmp_path, *grid[:-1], "1", name="tasks.jsonl")
    assert code == 0 and (chained["jobs"], tasks["jobs"]) == (2, 1)
    assert same_answers(chained) == same_answers(tasks) and chained["stages"] == tasks["stages"]
    assert journal("chained.jsonl") == journal("tasks.jsonl")
    monkeypatch.setattr(cmd_search, "make_executor", real)
    # the journal less its router checks: the confirmations reused, the checks made in their chains
    lines = (tmp_path / "chained.jsonl").read_text().splitlines()
    (tmp_path / "resumed.jsonl").write_text("".join(line + "\n" for line in lines if ":router:" not in line))
    code, _, _, resumed = search(capsys, tmp_path, *grid, name="resumed.jsonl")
    assert code == 0 and same_answers(resumed) == same_answers(chained)
    st = resumed["stages"]
    assert st["confirm"]["ran"] == 0 and st["confirm"]["reused"] == chained["stages"]["confirm"]["ran"]
    assert st["router"] == chained["stages"]["router"] and journal("resumed.jsonl") == journal("chained.jsonl")


def test_at_a_peak_the_cheaper_per_hour_ranks_first_and_ties_go_to_tokens_per_gpu():
    def r(seqs, rate, out_len):
        return s.PointResult(s.GridPoint("g", 1, seqs, 2048, "auto", True), "screen", True, rate=rate,
                             mean_output_len=out_len)

    fast, slow, small = r(8, 30.0, 127.0), r(16, 25.0, 129.0), r(32, 10.0, 128.0)
    ranked = sorted([small, slow, fast], key=lambda x: s.rank_key(x, s.cost(x, 1.0, 50.0)))
    # fast and slow both need 3 replicas: the same cost an hour; slow's longer window answers must
    # not make it look cheaper per token
    assert [x.point.max_num_seqs for x in ranked] == [8, 16, 32]


# -- speculative decoding as an axis ----------------------------------------------------------------

EAGLE3_K7 = ('{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", '
             '"num_speculative_tokens": 7}')


def test_speculative_configs_are_an_axis_keyed_and_spelled_one_way():
    from sim.scenario import Scenario

    eagle = s.spec_text(EAGLE3_K7)
    assert eagle == s.spec_text(json.loads(EAGLE3_K7.replace("num_speculative_tokens", "num-speculative-tokens")))
    points = s.grid(["h100-sxm"], [1], [64], [2048], ["auto"], [True], [False], ["", eagle])
    assert [p.spec for p in points] == ["none", "eagle3 k7"]
    assert points[1].label().endswith("cache on spec eagle3 k7") and "spec" not in points[0].label()
    assert s.point_scenario(Scenario(), points[1]).speculative().k == 7
    assert s.point_scenario(Scenario(speculative_config=EAGLE3_K7), points[0]).speculative() is None
    keys = {s.point_key(p, "ctx", "screen") for p in points}
    assert len(keys) == 2
    # a point without drafts keeps the key it had before the axis (older journals still serve)
    assert "speculative_config" not in s.point_key(points[0], "ctx", "screen")
    old = s.PointResult(points[0], "screen", True, rate=1.0).to_json()
    del old["point"]["speculative_config"]
    assert s.PointResult.from_json(old).point == points[0]
    assert s.PointResult.from_json(s.PointResult(points[1], "screen", True).to_json()).point == points[1]


@pytest.mark.heavy
def test_a_search_over_none_and_eagle3_picks_drafts_where_they_win_and_not_where_they_lose(
        capsys, tmp_path, small):
    """A tight TPOT at a low peak: only a few requests run at once, verifying drafts costs almost
    nothing and EAGLE-3 (K=7) meets a TPOT plain decoding cannot (5.5 ms: plain decoding needs 6.1
    at 1.65 req/s). Its confirmation runs are 600 requests long: a p99 TPOT over 300 drafted
    requests varies so much between seeds that a new seed's bound (`confirmation.prediction_factor`)
    exceeds the SLO at every rate the confirmation tries. A batch job of 1,024 requests at once: at
    that batch verifying 8 tokens a request is compute, and plain decoding serves more."""
    grid = ["--speculative-configs", "none", EAGLE3_K7, "--jobs", "1", "--input-len", "256"]
    code, out, _, low = search(capsys, tmp_path, *grid, "--num-prompts", "60", "--output-len", "64", "--seeds", "2",
                               "--confirm-prompts", "600", "--tpot-p99", "5.5", "--ttft-p99", "200",
                               "--peak-rate", "2", name="low.jsonl")
    assert code == 0 and low["best"][0]["spec"] == "eagle3 k7"
    assert "num_speculative_tokens" in low["best"][0]["vllm_command"]
    assert [d["spec"] for d in low["infeasible"]] == ["none"]
    assert "spec eagle3 k7" in out and "eagle3 k7  router" in out
    code, out, _, batch = search(capsys, tmp_path, *grid, "--offline", "1024", "--output-len", "128",
                                 name="batch.jsonl")
    assert code == 0 and [d["spec"] for d in batch["ranked"]] == ["none", "eagle3 k7"]
    plain, eagle = batch["ranked"]
    assert plain["tokens_per_gpu"] > 1.1 * eagle["tokens_per_gpu"]
    assert "speculative_config" not in batch["best"][0]["llm"]


@pytest.mark.parametrize("argv, needle", [
    (["--speculative-configs", "none", "--speculative-config", EAGLE3_K7],
     "argument --speculative-configs: not allowed with --speculative-config"),
    (["--speculative-configs", "none", "--spec-tokens", "3"],
     "argument --speculative-configs: not allowed with --spec-tokens"),
    (["--speculative-configs", '{"method": "medusa", "num_speculative_tokens": 2}'],
     "argument --speculative-configs: "),
    (["--speculative-configs", "{method"], "argument --speculative-configs: "),
])
def test_a_bad_speculative_configs_list_is_refused_in_one_line(capsys, tmp_path, argv, needle):
    code = main(["search", "--tpot-p99", "9", *argv, "--output", str(tmp_path / "o.jsonl")])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and "Traceback" not in err and err.count("\n") == 1, err


def test_the_best_lines_name_expert_parallelism_and_a_missing_price(capsys, tmp_path):
    """The best deployments' lines read "1 x h100-sxm tp2" for a point with expert parallelism
    and one without (the table marks the first '2ep'), two lines alike above different
    commands, and "no price an hour" for a GPU without a price (Qwen3 235B-A22B on H100s and
    H200s, tmux): each now says 'tp2 ep', and 'no price'."""
    code, out, err, table = search(capsys, tmp_path, "--offline", "16", "--input-len", "64", "--output-len", "8",
                                   "--model", "qwen3-30b-a3b", "--gpus", "h100-sxm,h200", "--tensor-parallel-sizes",
                                   "2", "--expert-parallel", "both", "--best", "4", "--jobs", "1")
    assert code == 0, err
    heads = sorted(line.split(",")[0].strip() for line in out.splitlines() if line.startswith("  1 x "))
    assert heads == ["1 x h100-sxm tp2", "1 x h100-sxm tp2 ep", "1 x h200 tp2", "1 x h200 tp2 ep"]
    assert table["unpriced_gpus"] == ["h200"]
    assert "1 x h200 tp2, no price (" in out and "no price an hour" not in out
