"""What the playground's model picker and its experts-and-drafts view are built on (issue 39): the
fewest GPUs each model needs, the speculative configs a picker makes, and the spec counters each
iteration report carries."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.deployments import fewest_gpus, model_choices
from sim.engine import Engine
from sim.errors import ConfigError
from sim.profiles import load_profiles
from sim.scenario import Scenario
from sim.speculative import EAGLE3_HEADS, method_offered, parse, picked_config
from sim.workload import LengthSpec, WorkloadSpec

PROFILES = load_profiles()
PLAYGROUND_ENGINE = {"batching": "continuous", "max_num_seqs": 256, "max_num_batched_tokens": 16384,
                     "max_model_len": 16384}


@pytest.mark.parametrize("gpu, model, gpus", [
    ("h100-sxm", "gpt-oss-120b", 1),  # issue 39: gpt-oss-120b on one H100
    ("h200", "deepseek-v3", 8),  # and DeepSeek-V3 on eight H200 with TP 8
    ("h100-sxm", "deepseek-v3", None),  # 671 GB of FP8 weights: more than eight H100s hold
    ("h100-sxm", "llama-3.1-70b", 2),
    ("h100-sxm", "qwen3-235b-a22b", 8),
    ("h200", "qwen3-235b-a22b", 4),
])
def test_the_fewest_gpus_of_a_kind_that_serve_a_model(gpu, model, gpus):
    scenario = Scenario(gpu=gpu, model=model, engine=PLAYGROUND_ENGINE)
    found, why = fewest_gpus(scenario)
    assert found == gpus
    if gpus is None:
        assert "does not fit on 8 x" in why
    else:
        # The count is the least that runs: one size fewer is refused.
        smaller = {2: 1, 4: 2, 8: 4}.get(gpus)
        if smaller is not None:
            assert fewest_gpus(scenario.replace(model=model), PROFILES)[0] == gpus
            with pytest.raises(Exception):
                Engine(scenario.replace(tensor_parallel_size=smaller), live=True)
        Engine(scenario.replace(tensor_parallel_size=gpus), live=True)


def test_the_picker_lists_every_chat_model_with_its_experts_and_mtp():
    choices = {c.model_id: c for c in model_choices(Scenario(gpu="h100-sxm", engine=PLAYGROUND_ENGINE))}
    assert "bge-large-embedder" not in choices  # an encoder serves no chat
    assert {"gpt-oss-120b", "gpt-oss-20b", "qwen3-30b-a3b", "qwen3-32b", "qwen3-235b-a22b", "mixtral-8x7b",
            "deepseek-v3", "llama-4-scout", "llama-3.1-8b"} <= set(choices)
    assert (choices["gpt-oss-120b"].experts, choices["gpt-oss-120b"].experts_per_token) == (128, 4)
    assert choices["qwen3-32b"].experts == 0 and choices["deepseek-v3"].mtp_layers == 1
    assert choices["deepseek-v3"].gpus is None and choices["deepseek-v3"].why_not


def test_a_picked_config_is_what_vllm_reads():
    gpt = PROFILES.model("gpt-oss-120b")
    text = picked_config("eagle3", gpt, 3)
    assert json.loads(text) == {"method": "eagle3", "num_speculative_tokens": 3, "model": EAGLE3_HEADS[gpt.hf_id]}
    assert parse(text).k == 3
    assert json.loads(picked_config("ngram", gpt, 5)) == {"method": "ngram", "num_speculative_tokens": 5}
    assert json.loads(picked_config("mtp", PROFILES.model("deepseek-v3"), 1))["method"] == "mtp"
    assert picked_config("none", gpt, 3) is None


def test_a_method_the_model_cannot_take_is_refused_in_one_line():
    gpt, mixtral = PROFILES.model("gpt-oss-120b"), PROFILES.model("mixtral-8x7b")
    assert "no MTP layers" in method_offered("mtp", gpt)
    assert "EAGLE-3" in method_offered("eagle3", mixtral)  # its published heads are EAGLE-1's
    assert method_offered("ngram", mixtral) is None
    for method, model in (("mtp", gpt), ("eagle3", mixtral)):
        with pytest.raises(ConfigError) as caught:
            picked_config(method, model, 3)
        assert "\n" not in str(caught.value)
    with pytest.raises(ConfigError):
        picked_config("ngram", gpt, 0)


def test_every_listed_head_is_for_a_model_the_profiles_have():
    hf_ids = {model.hf_id for model in PROFILES.models.values()}
    assert set(EAGLE3_HEADS) <= hf_ids


def _spec_run(k: int, prompts: int, concurrency: int, seed: int, model: str = "qwen3-30b-a3b") -> Engine:
    workload = WorkloadSpec(arrival="all-at-once", num_prompts=prompts, max_concurrency=concurrency,
                            input=LengthSpec("fixed", 64), output=LengthSpec("uniform", 24))
    return Engine(Scenario(model=model, workload=workload, seed=seed,
                           speculative_config=picked_config("eagle3", PROFILES.model(model), k)))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(k=st.integers(1, 5), prompts=st.integers(1, 12), concurrency=st.integers(1, 8), seed=st.integers(0, 99))
def test_the_iteration_reports_add_up_to_the_runs_spec_counters(k, prompts, concurrency, seed):
    """Two paths, one count: each report's drafts, draft tokens and accepted tokens summed over
    the run are vLLM's spec_decode counters at its end, and the snapshot carries the same."""
    engine = _spec_run(k, prompts, concurrency, seed)
    totals = [0, 0, 0]
    while (report := engine.step()) is not None:
        assert 0 <= report.spec_accepted <= report.spec_draft_tokens <= k * report.spec_drafts
        totals = [totals[0] + report.spec_drafts, totals[1] + report.spec_draft_tokens,
                  totals[2] + report.spec_accepted]
    stats = engine.spec_decode_stats()
    assert totals == [stats["spec_decode_num_drafts"], stats["spec_decode_draft_tokens"],
                      stats["spec_decode_accepted_tokens"]]
    snap = engine.snapshot()
    assert (snap.spec_method, snap.spec_k) == ("eagle3", k)
    assert [snap.spec_drafts, snap.spec_draft_tokens, snap.spec_accepted] == totals


def test_without_speculative_decoding_the_reports_count_nothing():
    workload = WorkloadSpec(arrival="all-at-once", num_prompts=3, input=LengthSpec("fixed", 64),
                            output=LengthSpec("fixed", 8))
    engine = Engine(Scenario(workload=workload))
    while (report := engine.step()) is not None:
        assert (report.spec_drafts, report.spec_draft_tokens, report.spec_accepted) == (0, 0, 0)
    assert engine.snapshot().spec_method == ""
