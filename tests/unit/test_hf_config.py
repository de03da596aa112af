"""Any dense transformer from its Hugging Face config.json, aliases of the built-in models, and the
weight formats, KV cache dtypes and memory dials of `vllm serve` that change memory and time."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.unit.cli_run import run
from batchtui.cli.options import resolve_model
from sim import hf_config
from sim.cost import CostModel
from sim.errors import ConfigError, ProfileError
from sim.profiles import BUILTIN_PROFILES, load_profiles

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "hf-configs"


def config_path(hf_id: str) -> Path:
    return CONFIGS / (hf_id.replace("/", "--") + ".json")


# The built-in models written as profile fields or config fields in profiles.toml (those read from a
# shipped config.json are their config: tests/unit/test_moe.py).
BUILTIN_DECODERS = [m for m in BUILTIN_PROFILES.models.values() if m.kind == "decoder" and config_path(m.hf_id).exists()]


@pytest.mark.parametrize("model", BUILTIN_DECODERS, ids=lambda m: m.id)
def test_a_config_gives_the_built_in_profiles_figures(model):
    """Layers, heads, head dim, hidden size and context are the profile's; parameters within 1 %
    (the profiles round them to three figures), weight and KV bytes with them."""
    profiles = BUILTIN_PROFILES.with_config_model(model.hf_id, hf_config.read(config_path(model.hf_id)), "test")
    from_config = profiles.model(model.hf_id)
    for field in ("layers", "kv_heads", "q_heads", "head_dim", "hidden", "max_model_len"):
        assert getattr(from_config, field) == getattr(model, field), field
    assert from_config.params == pytest.approx(model.params, rel=0.01)
    ours = profiles.deployment("h200", model.hf_id, tensor_parallel_size=2)
    theirs = profiles.deployment("h200", model.id, tensor_parallel_size=2)
    assert ours.weight_bytes == pytest.approx(theirs.weight_bytes, rel=0.01)
    assert ours.kv_bytes_per_token == theirs.kv_bytes_per_token


# Published sizes: the total_size of each model's model.safetensors.index.json on the Hub (bf16
# weights), and the KV cache per token in bf16 (2 x layers x KV heads x head dim x 2 bytes:
# 56 KiB for Qwen2.5-7B, 320 KiB for the 70B Llamas).
PUBLISHED = {
    "Qwen/Qwen2.5-7B-Instruct": (15_231_233_024, 57_344),
    "meta-llama/Llama-3.3-70B-Instruct": (141_107_412_992, 327_680),
}


@pytest.mark.parametrize("hf_id", PUBLISHED)
def test_qwen_7b_and_llama_3_3_70b_from_their_configs_match_their_published_sizes(hf_id, capsys):
    weights, kv = PUBLISHED[hf_id]
    profiles = BUILTIN_PROFILES.with_config_model(hf_id, hf_config.read(config_path(hf_id)), "test")
    d = profiles.deployment("h200", hf_id, tensor_parallel_size=4)
    assert d.weight_bytes == pytest.approx(weights, rel=0.01)
    assert d.kv_bytes_per_token == pytest.approx(kv, rel=0.01)
    # They run from the command line, and the built-in profile written in config fields agrees.
    code, out, err = run(capsys, "sim", "--model", hf_id, "--hf-config", str(config_path(hf_id)), "--gpu", "h200",
                         "-tp", "4", "--num-prompts", "20", "--json")
    assert code == 0, err
    assert json.loads(out)["completed"] == 20 and json.loads(out)["model_id"] == hf_id
    builtin = BUILTIN_PROFILES.deployment("h200", resolve_model(hf_id, BUILTIN_PROFILES), tensor_parallel_size=4)
    assert builtin.weight_bytes == d.weight_bytes and builtin.kv_bytes_per_token == d.kv_bytes_per_token


def test_a_config_directory_is_read_as_vllm_reads_hf_config_path(tmp_path, capsys):
    (tmp_path / "config.json").write_text(config_path("Qwen/Qwen2.5-7B-Instruct").read_text())
    code, out, err = run(capsys, "sim", "vllm", "serve", "my-org/my-qwen", "--hf-config-path", str(tmp_path),
                         "--num-prompts", "5", "--json")
    assert code == 0, err
    assert json.loads(out)["model_id"] == "my-org/my-qwen"


@pytest.mark.parametrize("alias, profile", [
    ("meta-llama/Llama-3.1-8B", "llama-3.1-8b"),
    ("meta-llama/Meta-Llama-3.1-8B-Instruct", "llama-3.1-8b"),
    ("meta-llama/Llama-3.3-70B-Instruct", "llama-3.3-70b"),
    ("Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b"),
    ("qwen/qwen2.5-7b-instruct", "qwen2.5-7b"),
    ("meta-llama/Llama-3.1-70B", "llama-3.1-70b"),
])
def test_known_ids_and_their_aliases_resolve(alias, profile):
    assert resolve_model(alias, BUILTIN_PROFILES) == profile


def test_a_mixture_of_experts_config_runs_and_one_without_its_top_k_is_refused_in_one_line(capsys):
    code, out, err = run(capsys, "sim", "--model", "my/mixtral", "--hf-config",
                         str(config_path("mistralai/Mixtral-8x7B-v0.1")), "-tp", "2", "--num-prompts", "5", "--json")
    assert code == 0, err
    assert json.loads(out)["model_id"] == "my/mixtral"
    with pytest.raises(ProfileError, match="num_experts = 128.*num_experts_per_tok"):
        hf_config.shape({**json.loads(config_path("Qwen/Qwen2.5-7B-Instruct").read_text()), "num_experts": 128}, "x")


def test_bad_configs_are_one_line_errors(tmp_path, capsys):
    cases = {"missing.json": None, "notjson.json": "{", "list.json": "[1, 2]",
             "deep.json": "[" * 100_000 + "]" * 100_000,  # issue 38: was "internal error: RecursionError"
             "nohidden.json": json.dumps({"num_hidden_layers": 2}),
             "heads.json": json.dumps({**json.loads(config_path("Qwen/Qwen2.5-7B-Instruct").read_text()),
                                       "num_key_value_heads": 5})}
    for name, text in cases.items():
        if text is not None:
            (tmp_path / name).write_text(text)
        code, out, err = run(capsys, "sim", "--model", "x", "--hf-config", str(tmp_path / name))
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, (name, err)


def test_a_profile_table_may_spell_a_model_as_its_config(tmp_path):
    config = json.loads(config_path("meta-llama/Llama-3.1-8B-Instruct").read_text())
    keep = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
            "vocab_size", "max_position_embeddings", "model_type")
    body = "\n".join(f"{k} = {json.dumps(config[k])}" for k in keep)
    path = tmp_path / "p.toml"
    path.write_text(f'[models.mine]\nname = "Mine"\ntie_word_embeddings = false\n{body}\n')
    mine = load_profiles(path).model("mine")
    base = BUILTIN_PROFILES.model("llama-3.1-8b")
    assert (mine.layers, mine.kv_heads, mine.head_dim, mine.hidden) == (base.layers, base.kv_heads, base.head_dim,
                                                                         base.hidden)
    assert mine.params == pytest.approx(base.params, rel=0.001)
    mixtral = json.loads(config_path("mistralai/Mixtral-8x7B-v0.1").read_text())
    body = "\n".join(f"{k} = {json.dumps(mixtral[k])}" for k in (*keep, "num_local_experts", "num_experts_per_tok"))
    path.write_text(f'[models.moe]\nname = "M"\n{body}\n')
    moe = load_profiles(path).model("moe")
    assert (moe.expert_count, moe.expert_top_k) == (8, 2) and moe.params == pytest.approx(46.7e9, rel=0.01)
    path.write_text(f'[models.moe]\nname = "M"\n{body}\nnum_experts_per_tok = 9\n'.replace(
        "num_experts_per_tok = 2\n", ""))
    with pytest.raises(ProfileError, match="num_experts_per_tok = 9 is more than the 8 experts"):
        load_profiles(path)


# -- weight formats, KV dtypes, the cache's memory, CUDA graphs ------------------------------------


def test_fp8_weights_halve_the_linear_layers_and_use_fp8_tensor_cores_where_the_gpu_has_them():
    bf16 = BUILTIN_PROFILES.deployment("h100-sxm", "llama-3.1-8b")
    fp8 = BUILTIN_PROFILES.deployment("h100-sxm", "llama-3.1-8b", quantization="fp8")
    m = bf16.model
    embedding = 128256 * 4096 * 2
    assert fp8.weight_bytes == pytest.approx((m.params - embedding) * 1 + embedding * 2)
    assert fp8.weight_bytes == pytest.approx(9.08e9, rel=0.01)  # published FP8 checkpoints are ~9.1 GB
    assert fp8.linear_peak_flops == 1979e12 and bf16.linear_peak_flops == 989e12
    a100 = BUILTIN_PROFILES.deployment("a100-80gb", "llama-3.1-8b", quantization="fp8")
    # No fp8 tensor cores: weight-only fp8 through Marlin, at 0.9 of the bf16 peak (sim/profiles.py).
    assert a100.linear_peak_flops == pytest.approx(0.9 * 312e12)
    assert fp8.num_gpu_blocks > bf16.num_gpu_blocks
    # Decoding one sequence streams the weights: fp8 is faster; a big prefill is compute-bound: 2x peak.
    fast, slow = CostModel(fp8), CostModel(bf16)
    assert fast.iteration(1, 1000).total < 0.65 * slow.iteration(1, 1000).total
    big = [(8192, 0)]
    assert fast.iteration(0, 0, big).t_compute == pytest.approx(slow.iteration(0, 0, big).t_compute / 2)
    awq = BUILTIN_PROFILES.deployment("h100-sxm", "llama-3.1-70b", quantization="awq")
    assert awq.weight_bytes == pytest.approx(39.5e9, rel=0.03)  # published AWQ INT4 70B checkpoints: 39-40 GB
    with pytest.raises(ConfigError):
        BUILTIN_PROFILES.deployment("h100-sxm", "llama-3.1-8b", quantization="gguf")


def test_quantization_and_kv_dtypes_from_the_command_line(capsys):
    code, out, err = run(capsys, "sim", "--num-prompts", "5", "--quantization", "fp8", "--kv-cache-dtype", "float16",
                         "--json")
    assert code == 0, err
    code, out, err = run(capsys, "sim", "--num-prompts", "5", "--quantization", "gguf")
    assert code == 2 and "--quantization" in err
    for dtype in ("bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2", "auto"):
        code, out, err = run(capsys, "sim", "--num-prompts", "3", "--kv-cache-dtype", dtype, "--json")
        assert code == 0, (dtype, err)


def test_kv_cache_memory_bytes_sizes_the_cache_instead_of_the_memory_share(capsys):
    d = BUILTIN_PROFILES.deployment("h100-sxm", "llama-3.1-8b", kv_cache_memory_bytes=20 * 2**30)
    assert d.num_gpu_blocks == math.floor(20 * 2**30 / d.bytes_per_block)
    assert d.num_gpu_blocks == BUILTIN_PROFILES.deployment(
        "h100-sxm", "llama-3.1-8b", kv_cache_memory_bytes=20 * 2**30, gpu_memory_utilization=0.5).num_gpu_blocks
    with pytest.raises(ProfileError, match="kv_cache_memory_bytes"):
        BUILTIN_PROFILES.deployment("h100-sxm", "llama-3.1-8b", kv_cache_memory_bytes=90e9)
    code, out, err = run(capsys, "sim", "--num-prompts", "5", "--kv-cache-memory-bytes", "20G", "--max-model-len",
                         "8192", "--json")
    assert code == 0, err
    code, out, err = run(capsys, "sim", "--num-prompts", "5", "--kv-cache-memory-bytes", "90G")
    assert code == 2 and "KV cache --kv-cache-memory-bytes asks for" in err and "--tensor-parallel-size" in err, err


def test_a_kv_cache_too_small_for_two_blocks_is_explained_by_its_blocks(capsys):
    """Issue 38: 1 byte was explained as weights + reserve + "0.0 GB" needing more than 85 GB."""
    block = BUILTIN_PROFILES.deployment("h100-sxm", "llama-3.1-8b").bytes_per_block
    for given in ("1", str(int(block))):
        code, out, err = run(capsys, "sim", "--num-prompts", "5", "--kv-cache-memory-bytes", given)
        assert code == 2 and err.count("\n") == 1, err
        assert f"holds {int(given) // int(block)} block(s) of 16 tokens ({int(block):,} bytes each per GPU)" in err, err
        assert f"Give --kv-cache-memory-bytes at least {2 * int(block):,} bytes." in err and "weights" not in err
    code, out, err = run(capsys, "sim", "--num-prompts", "5", "--kv-cache-memory-bytes", str(2 * int(block)))
    assert "does not fit" not in err and "at most the 16 tokens the KV cache holds" in err, err  # the model fits


def test_partial_prefill_flags_take_only_vllm_v1s_value(capsys):
    code, out, err = run(capsys, "sim", "--num-prompts", "3", "--max-num-partial-prefills", "1",
                         "--max-long-partial-prefills", "1", "--json")
    assert code == 0, err
    code, out, err = run(capsys, "sim", "--num-prompts", "3", "--max-num-partial-prefills", "4")
    assert code == 2 and "Concurrent Partial Prefill is not supported" in err
