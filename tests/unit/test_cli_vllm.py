"""vllm bench serve's and vllm serve's interface as the simulator takes it: arrivals drawn as vLLM
draws them, its datasets and timed traces, its names and validation, failed requests, and
parallel sweeps that equal serial ones."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tests.unit.cli_run import run
from sim.workload import (LengthSpec, WorkloadSpec, dataset_lengths, estimate_tokens, generate,
                          load_trace, trace_requests)


def run_json(capsys, *argv):
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


# -- arrivals ------------------------------------------------------------------------------------


def test_gamma_arrivals_are_rescaled_to_n_over_rate_as_vllm_does():
    spec = WorkloadSpec(arrival="gamma", request_rate=10.0, num_prompts=200, burstiness=0.3)
    times = np.array([r.arrival_time for r in generate(spec, np.random.default_rng(1))])
    assert times[-1] == pytest.approx(200 / 10.0) and (np.diff(times) >= 0).all()
    even = WorkloadSpec(arrival="gamma", request_rate=10.0, num_prompts=5, burstiness=math.inf)
    assert [r.arrival_time for r in generate(even, np.random.default_rng(1))] == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5])
    poisson = np.diff([r.arrival_time for r in generate(replace_b(spec, 1.0), np.random.default_rng(1))])
    bursty = np.diff(times)
    # Burstier traffic has more spread-out gaps: a coefficient of variation above Poisson's 1.
    assert np.std(bursty) / np.mean(bursty) > 1.3 > np.std(poisson) / np.mean(poisson) > 0.7


def replace_b(spec, b):
    from dataclasses import replace
    return replace(spec, burstiness=b)


def test_a_ramp_up_raises_the_rate_over_the_run(capsys):
    d = run_json(capsys, "sim", "--num-prompts", "400", "--input-len", "64", "--output-len", "4",
                 "--ramp-up-strategy", "linear", "--ramp-up-start-rps", "5", "--ramp-up-end-rps", "50",
                 "--save-detailed")
    starts = np.array(d["start_times"])
    first, last = np.diff(starts[:100]).mean(), np.diff(starts[-100:]).mean()
    assert first > 3 * last
    assert d["ramp_up_strategy"] == "linear" and d["ramp_up_end_rps"] == 50


# -- datasets ------------------------------------------------------------------------------------


def test_token_estimate_is_about_four_characters_a_token():
    text = ("The quick brown fox jumps over the lazy dog while the helpdesk bot answers questions "
            "about printers, passwords and the VPN, 24 hours a day.")
    assert 25 <= estimate_tokens(text) <= 40  # 137 characters
    assert estimate_tokens("") == 1


def sharegpt_file(tmp_path):
    word = "word "
    convs = [
        {"conversations": [{"from": "human", "value": word * 50}, {"from": "gpt", "value": word * 120}]},
        {"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": word * 40}]},  # prompt < 4
        {"conversations": [{"from": "human", "value": word * 2000}, {"from": "gpt", "value": "ok ok ok ok"}]},  # > 1024
        {"conversations": [{"from": "human", "value": word * 30}]},  # one turn: dropped
        {"conversations": [{"from": "human", "value": word * 900}, {"from": "gpt", "value": word * 1500}]},  # > 2048
        {"conversations": [{"from": "human", "value": word * 10}, {"from": "gpt", "value": word * 7}]},
    ]
    path = tmp_path / "sharegpt.json"
    path.write_text(json.dumps(convs))
    return path


def test_sharegpt_is_filtered_shuffled_and_oversampled_as_vllm_does(tmp_path):
    path = sharegpt_file(tmp_path)
    spec = WorkloadSpec(dataset="sharegpt", dataset_path=str(path))
    prompt, output = dataset_lengths(spec, 10, seed=0)
    assert set(zip(prompt.tolist(), output.tolist())) == {(50, 120), (10, 7)}  # only the valid two
    assert len(prompt) == 10  # oversampled from them
    fixed = WorkloadSpec(dataset="sharegpt", dataset_path=str(path), dataset_output_len=3)
    prompt, output = dataset_lengths(fixed, 4, seed=0)
    # With a fixed answer length only the prompt is checked: the "hi" prompt is still too short.
    assert set(output.tolist()) == {3} and set(prompt.tolist()) <= {50, 10, 900}


def test_sim_runs_a_sharegpt_and_a_custom_dataset(capsys, tmp_path):
    path = sharegpt_file(tmp_path)
    d = run_json(capsys, "sim", "--dataset-name", "sharegpt", "--dataset-path", str(path), "--num-prompts", "30",
                 "--request-rate", "20")
    assert d["completed"] == 30 and d["total_output_tokens"] in range(30 * 7, 30 * 120 + 1)
    custom = tmp_path / "prompts.jsonl"
    custom.write_text('{"prompt": "What is the capital of India?"}\n{"prompt": "And of Iran?"}\n')
    d = run_json(capsys, "sim", "--dataset-name", "custom", "--dataset-path", str(custom), "--num-prompts", "6",
                 "--custom-output-len", "16")
    assert d["completed"] == 6 and d["total_output_tokens"] == 6 * 16


# -- traces --------------------------------------------------------------------------------------


def mooncake(tmp_path, n=60, gap_ms=100):
    path = tmp_path / "mooncake.jsonl"
    path.write_text("\n".join(json.dumps({"timestamp": gap_ms * i, "input_length": 300 + 10 * (i % 5),
                                          "output_length": 12 + i % 3, "hash_ids": [0, i]}) for i in range(n)))
    return path


def test_mooncake_traces_keep_hash_ids_and_read_milliseconds_with_vllms_multiplier(tmp_path):
    # vLLM 0.33 reads a timed trace in seconds (--timed-trace-sec-multiplier 1); a Mooncake trace's
    # milliseconds take 0.001, as vLLM's docs give it (this test read milliseconds by default
    # before timed_trace meant what it means in vLLM).
    assert load_trace(mooncake(tmp_path))[3].arrival_time == pytest.approx(300)
    specs = load_trace(mooncake(tmp_path), 512, 0.001)
    assert specs[3].arrival_time == pytest.approx(0.3) and specs[3].hash_ids == (0, 3)
    spec = WorkloadSpec(arrival="trace", trace_path=str(mooncake(tmp_path)), trace_rate=20.0, trace_requests=150,
                        hash_block_size=512, trace_sec_multiplier=0.001)
    out = trace_requests(spec)
    times = np.array([r.arrival_time for r in out])
    assert len(out) == 150 and (np.diff(times) >= 0).all()
    assert (len(out) - 1) / times[-1] == pytest.approx(20.0, rel=0.05)  # rescaled from 10 to 20 req/s
    assert out[60].hash_ids == (0, 0)  # the second copy of the trace


def test_sweep_over_rates_rescales_a_trace(capsys, tmp_path):
    d = run_json(capsys, "sweep", "--workload", str(mooncake(tmp_path)), "--request-rates", "5,20,5000",
                 "--jobs", "1")
    rates = [p["request_throughput"] for p in d["points"]]
    assert rates[0] < rates[1]
    assert d["points"][-1]["bounded"] is False and "saturated" in d["points"][-1]["note"]


def test_sweeping_seats_on_a_light_trace_says_the_traffic_limits_the_batch(capsys, tmp_path):
    code, out, _ = run(capsys, "sweep", "--workload", str(mooncake(tmp_path)), "--max-num-seqs-values", "1,8,64",
                       "--jobs", "1")
    assert code == 0
    words = " ".join(out.split())
    assert "No knee: from max_num_seqs 8 on, at most" in words and "<- knee" not in out


def test_parallel_sweeps_equal_serial_ones(capsys):
    argv = ["sweep", "--request-rates", "4,16,32,inf", "--num-prompts", "80", "--input-len", "256",
            "--output-len", "32"]
    serial = run_json(capsys, *argv, "--jobs", "1")
    parallel = run_json(capsys, *argv, "--jobs", "2")
    assert serial == parallel


# -- vllm serve's names and validation ---------------------------------------------------------------


def test_names_as_vllm_and_nvidia_smi_spell_them(capsys):
    d = run_json(capsys, "sim", "--num-prompts", "5", "--model", "meta-llama/Llama-3.1-8B-Instruct",
                 "--gpu", "NVIDIA A100-SXM4-80GB", "--kv-cache-dtype", "bfloat16", "--max-model-len", "32k")
    assert d["gpu"] == "a100-80gb" and d["model"] == "llama-3.1-8b" and d["engine"]["max_model_len"] == 32000
    d = run_json(capsys, "sim", "--num-prompts", "5", "--max-model-len", "32K")
    assert d["engine"]["max_model_len"] == 32768


def test_a_longer_max_model_len_needs_vllms_override(capsys, monkeypatch):
    code, _, err = run(capsys, "sim", "--num-prompts", "5", "--max-model-len", "256k")
    assert code == 2 and "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in err
    monkeypatch.setenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1")
    d = run_json(capsys, "sim", "--num-prompts", "5", "--max-model-len", "256k")
    assert d["engine"]["max_model_len"] == 256000


def test_requests_longer_than_max_model_len_fail_like_vllms_api_server(capsys):
    d = run_json(capsys, "sim", "--max-model-len", "600", "--input-len", "512", "--output-len", "256",
                 "--num-prompts", "10", "--save-detailed")
    assert d["completed"] == 0 and d["failed"] == 10 and d["total_output_tokens"] == 0
    assert "maximum context length is 600 tokens" in d["errors"][0]
    code, out, _ = run(capsys, "sim", "--max-model-len", "600", "--input-len", "512", "--output-len", "256",
                       "--num-prompts", "10", "--input-dist", "uniform", "--input-len-min", "100",
                       "--input-len-max", "500", "--output-len", "200")
    assert code == 0 and "Failed requests:" in out


def test_an_encoder_prints_no_generation_lines(capsys):
    code, out, _ = run(capsys, "sim", "--model", "bge-large-embedder", "--num-prompts", "40",
                       "--request-rate", "200")
    assert code == 0
    for gone in ("Total generated tokens", "Output token throughput", "Time to First Token",
                 "Time per Output Token", "Inter-token Latency", "Max ITL"):
        assert gone not in out
    assert "End-to-end Latency" in out and "Request throughput (req/s):" in out


# -- storage --------------------------------------------------------------------------------------


def test_records_kept_as_columns_read_back_as_records():
    from sim.engine import Engine
    from sim.scenario import Scenario

    sc = Scenario().with_workload(num_prompts=50, request_rate=30.0,
                                  output=LengthSpec(dist="uniform", mean=20, low=1, high=40))
    engine = Engine(sc, keep_requests=False)
    engine.run()
    records = engine.metrics.records
    assert len(records) == 50 and not engine.requests  # finished requests were not kept
    one = records[0]
    assert records[-1] == list(records)[-1] and one.request_id.isdigit()
    assert (records.column("tpot") != records.column("tpot")).sum() == sum(r.tpot is None for r in records)
    assert records == list(records) and records != list(records)[:-1]
