"""Prefix caching on the command line: --enable-prefix-caching (vLLM's default) and its --no-
form, traffic that shares prefixes spelled as vllm bench serve spells it (--random-prefix-len,
the prefix_repetition dataset) plus conversations (--turns, --think-time) and a trace's hash
block size, and the hit rate, cached tokens and counters in every output."""

from __future__ import annotations

import csv
import json

import pytest

from tests.unit.cli_run import run

SMALL = ["--num-prompts", "60", "--input-len", "128", "--output-len", "16", "--request-rate", "20"]


def sim_json(capsys, *argv):
    code, out, err = run(capsys, "sim", *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_caching_is_on_by_default_and_a_shared_prefix_hits(capsys):
    d = sim_json(capsys, *SMALL, "--random-prefix-len", "256")
    assert d["engine"]["enable_prefix_caching"] is True
    assert d["total_input_tokens"] == 60 * (256 + 128)
    assert d["prefix_cache_queries"] == d["total_input_tokens"]
    assert d["prefix_cache_hits"] == 59 * 256  # every prompt but the first finds the prefix's 16 blocks
    assert d["prefix_cache_hit_rate"] == pytest.approx(d["prefix_cache_hits"] / d["prefix_cache_queries"])
    off = sim_json(capsys, *SMALL, "--random-prefix-len", "256", "--no-enable-prefix-caching")
    assert off["engine"]["enable_prefix_caching"] is False and off["prefix_cache_hits"] == 0
    assert off["median_ttft_ms"] > d["median_ttft_ms"]


def test_nothing_shared_nothing_hit(capsys):
    d = sim_json(capsys, *SMALL)
    assert d["prefix_cache_hits"] == 0 and d["prefix_cache_queries"] == d["total_input_tokens"]


def test_the_text_says_the_hit_rate_as_vllm_logs_it(capsys):
    code, out, err = run(capsys, "sim", *SMALL, "--random-prefix-len", "256")
    assert code == 0, err
    words = " ".join(out.split())
    assert "prefix caching on" in words and "256 tokens of shared prefix + 128 in / 16 out" in words
    line = next(x for x in out.splitlines() if x.startswith("Prefix cache hit rate (%):"))
    assert "65.6" in line and "15,104 of 23,040 prompt tokens" in line
    code, out, _ = run(capsys, "sim", *SMALL, "--no-enable-prefix-caching")
    assert "prefix caching off" in " ".join(out.split()) and "Prefix cache hit rate" not in out


def test_the_prefix_repetition_dataset_as_vllm_bench_serve_draws_it(capsys):
    d = sim_json(capsys, "--dataset-name", "prefix_repetition", "--num-prompts", "100", "--request-rate", "50",
                 "--save-detailed")
    assert set(d["input_lens"]) == {512} and d["total_output_tokens"] == 100 * 128  # 256 + 256 in, 128 out
    # ten prefixes of 256 tokens: each one's first request misses, every other request finds it
    assert d["prefix_cache_hits"] == 256 * (100 - 10)
    assert sum(d["num_cached_tokens"]) == d["prefix_cache_hits"]
    d = sim_json(capsys, "--dataset-name", "prefix_repetition", "--prefix-repetition-num-prefixes", "1",
                 "--prefix-repetition-prefix-len", "64", "--prefix-repetition-suffix-len", "32",
                 "--prefix-repetition-output-len", "8", "--num-prompts", "20")
    assert d["total_input_tokens"] == 20 * 96 and d["prefix_cache_hits"] == 19 * 64


def test_conversations_on_the_command_line(capsys, tmp_path):
    csv_path = tmp_path / "requests.csv"
    d = sim_json(capsys, "--num-prompts", "20", "--input-len", "64", "--output-len", "32", "--request-rate", "4",
                 "--random-prefix-len", "128", "--turns", "3", "--think-time", "1", "--per-request", csv_path)
    assert d["completed"] == 60
    rows = list(csv.DictReader(csv_path.open()))
    assert len(rows) == 60 and {r["request_id"] for r in rows} >= {"0", "0.2", "0.3"}
    assert sum(int(r["num_cached_tokens"]) for r in rows) == d["prefix_cache_hits"]
    third = next(r for r in rows if r["request_id"] == "5.3")
    assert int(third["prompt_len"]) == 128 + 3 * 64 + 2 * 32 and int(third["num_cached_tokens"]) >= 256


def test_a_trace_with_hash_ids_and_its_block_size(capsys, tmp_path):
    """As vLLM builds a timed trace's prompts: from the hash ids, a block each, up to input_length.
    (Before timed_trace meant what it means in vLLM 0.33, a prompt was input_length tokens, those
    past its ids its own, and 512-token blocks the default, under which these ids were too many.)"""
    path = tmp_path / "mooncake.jsonl"
    path.write_text("".join(json.dumps({"timestamp": 0.2 * i, "input_length": 600, "output_length": 8,
                                        "hash_ids": [1, 2, 3, 10 + i]}) + "\n" for i in range(10)))
    d = sim_json(capsys, "--workload", path, "--timed-trace-chunk-hash-size", "128")
    # ids 1-3 are the same 384 tokens in every prompt, the fourth 128 of its own; nothing past them
    assert d["prefix_cache_hits"] == 9 * 384 and d["total_input_tokens"] == 10 * 512
    d = sim_json(capsys, "--workload", path)  # vLLM's 16-token blocks: 64-token prompts
    assert d["total_input_tokens"] == 10 * 64 and d["prefix_cache_hits"] == 9 * 48


@pytest.mark.parametrize("argv, needle", [
    (["--turns", "0"], "argument --turns: expected a whole number >= 1"),
    (["--think-time", "-1"], "argument --think-time: expected a number >= 0"),
    (["--random-prefix-len", "x"], "argument --random-prefix-len: expected a whole number >= 0"),
    (["--prefix-repetition-suffix-len", "10"], "argument --prefix-repetition-suffix-len: needs --dataset-name "
                                               "prefix_repetition"),
    (["--dataset-name", "prefix_repetition", "--random-prefix-len", "5"],
     "argument --random-prefix-len: not allowed with --dataset-name prefix_repetition"),
    (["--workload", "t.jsonl", "--turns", "2"], "argument --turns: not allowed with a trace"),
    (["--dataset-name", "sharegpt", "--dataset-path", "x.json", "--turns", "2"], "argument --turns: needs the random"),
    (["plan", "--ttft-p99", "100", "--peak-rate", "50", "--turns", "3"], "argument --turns: not allowed with --peak-rate"),
    (["plan", "--offline", "100", "--turns", "3"], "argument --turns: not allowed with --offline"),
])
def test_bad_sharing_flags(capsys, argv, needle):
    if argv[0] == "plan":
        code, _, err = run(capsys, *argv)
        assert code == 2 and needle in err, err
        return
    code, _, err = run(capsys, "sim", "--num-prompts", "5", *argv)
    assert code == 2 and needle in err, err


def test_the_vllm_lines_a_plan_prints_carry_caching_and_the_prefix(capsys, monkeypatch):
    from sim import rate_plan

    monkeypatch.setattr(rate_plan, "PLAN_MIN_WINDOW", 40)
    monkeypatch.setattr(rate_plan, "PLAN_MIN_WINDOW_S", 0.0)
    monkeypatch.setattr(rate_plan, "PLAN_MIN_PROMPTS", 50)
    monkeypatch.setattr(rate_plan, "PLAN_CONFIRM_PROMPTS", 300)
    code, out, err = run(capsys, "plan", "--ttft-p99", "300", "--num-prompts", "60", "--input-len", "256",
                         "--output-len", "32", "--random-prefix-len", "512", "--jobs", "1", "--seeds", "1",
                         "--no-enable-prefix-caching")
    assert code == 0, err
    serve = next(x for x in out.splitlines() if "vllm serve" in x)
    bench = next(x for x in out.splitlines() if "vllm bench serve" in x)
    assert serve.endswith("--no-enable-prefix-caching") or "--no-enable-prefix-caching " in serve
    assert "--random-prefix-len 512" in bench
