"""Profiles and deployments: the built-in table, user overrides, and KV-cache sizing."""

from __future__ import annotations

import dataclasses
import math
import re

import pytest

from sim.errors import ConfigError, ProfileError
from sim.profiles import (
    BUILTIN_GPUS,
    BUILTIN_MODELS,
    DEFAULT_GPU_ID,
    DEFAULT_MODEL_ID,
    Deployment,
    load_profiles,
)

MiB = 1024 * 1024


@pytest.fixture(scope="module")
def profiles():
    return load_profiles()


@pytest.fixture(scope="module")
def default(profiles):
    return profiles.deployment()


# -- the built-in table --------------------------------------------------------------------


def test_builtin_ids_and_defaults():
    assert list(BUILTIN_GPUS) == [
        "h100-sxm", "h100-pcie", "h100-nvl", "h200", "h200-nvl", "gh200", "a100-80gb",
        "a100-80gb-pcie", "a100-40gb", "a100-40gb-pcie", "l40s", "l40", "l4", "a10", "b200",
    ]
    assert list(BUILTIN_MODELS) == [
        "llama-3.1-8b", "llama-3.2-3b", "qwen2.5-14b", "llama-3.1-70b", "qwen2.5-7b", "llama-3.3-70b",
        "qwen2.5-1.5b", "llama-3.2-1b", "llama-2-7b", "gpt-oss-120b", "gpt-oss-20b", "qwen3-30b-a3b",
        "qwen3-32b", "qwen3-8b", "qwen3-235b-a22b", "mixtral-8x7b", "deepseek-v3", "llama-4-scout",
        "bge-large-embedder",
    ]
    assert DEFAULT_GPU_ID == "h100-sxm" and DEFAULT_MODEL_ID == "llama-3.1-8b"


def test_h100_profile_matches_the_spec(profiles):
    h100 = profiles.gpu("h100-sxm")
    assert h100.hbm_bandwidth == 3.35e12
    assert h100.bf16_peak_flops == 989e12
    assert h100.memory_bytes == 85.0e9
    assert h100.interconnect_bandwidth == 450e9
    assert (h100.eta_bw, h100.eta_mfu, h100.eta_attn, h100.overhead_s) == (0.80, 0.68, 0.85, 2e-5)


@pytest.mark.parametrize(
    ("gpu_id", "bandwidth", "peak", "memory"),
    [
        ("h200", 4.8e12, 989e12, 150.0e9),
        ("a100-80gb", 2.039e12, 312e12, 85.0e9),
        ("l40s", 0.864e12, 362e12, 48.3e9),
        ("b200", 8e12, 2250e12, 192.0e9),
        ("h100-pcie", 2.0e12, 756e12, 85.0e9),
        ("h100-nvl", 3.9e12, 835e12, 99.9e9),
        ("a100-40gb", 1.555e12, 312e12, 42.3e9),
        ("l4", 0.3e12, 121e12, 23.7e9),
    ],
)
def test_other_gpus(profiles, gpu_id, bandwidth, peak, memory):
    gpu = profiles.gpu(gpu_id)
    assert (gpu.hbm_bandwidth, gpu.bf16_peak_flops, gpu.memory_bytes) == (bandwidth, peak, memory)
    assert gpu.eta_bw == 0.80  # the [defaults] table reaches every GPU


def test_default_model_shape(profiles):
    m = profiles.model("llama-3.1-8b")
    assert (m.params, m.layers, m.kv_heads, m.q_heads, m.head_dim, m.hidden) == (
        8.03e9, 32, 8, 32, 128, 4096)
    assert m.max_model_len == 131072 and m.kind == "decoder" and m.has_kv_cache


def test_encoder_preset(profiles):
    m = profiles.model("bge-large-embedder")
    assert m.kind == "encoder" and not m.has_kv_cache
    assert m.input_len == 256 and m.max_model_len == 512


def test_profiles_are_frozen(profiles):
    with pytest.raises(dataclasses.FrozenInstanceError):
        profiles.gpu().hbm_bandwidth = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        profiles.gpus["x"] = profiles.gpu()  # type: ignore[index]


def test_unknown_ids_list_the_known_ones(profiles):
    with pytest.raises(ProfileError, match=r"known GPU profiles are h100-sxm \(or h100\), h100-pcie, h100-nvl, h200"):
        profiles.gpu("h800")
    # A plain name of several forms names those.
    with pytest.raises(ProfileError, match="'A100': it could be a100-80gb, a100-80gb-pcie, a100-40gb or a100-40gb-pcie"):
        profiles.gpu("A100")
    with pytest.raises(ProfileError, match=r"'llama-4'.*llama-3\.1-8b.*bge-large-embedder"):
        profiles.model("llama-4")


# -- the default deployment (SIMULATOR.md sections 1 and 3) --------------------------------


def test_default_memory_figures(default):
    assert default.weight_bytes == pytest.approx(16.06e9, rel=1e-12)
    assert default.kv_bytes_per_token == 131_072  # 128 KiB
    assert default.bytes_per_block == 2 * MiB


def test_default_kv_cache_size(default):
    # (0.92 x 85.0e9 - 16.06e9 - 3.4e9) / 2 MiB = 28,009.41, and vLLM divides with floor.
    # SIMULATOR.md quotes 28,010, which is this number rounded up; see the module report.
    assert (0.92 * 85.0e9 - 16.06e9 - 3.4e9) / (2 * MiB) == pytest.approx(28_009.41, abs=0.01)
    assert default.num_gpu_blocks == 28_009
    assert 27_500 <= default.num_gpu_blocks <= 28_600  # the outside-measurement range
    assert default.usable_blocks == 28_008  # one block is vLLM's null block
    assert default.kv_cache_tokens == 28_008 * 16  # about 448k tokens


def test_fp8_kv_cache_halves_bytes_and_doubles_blocks(profiles, default):
    fp8 = profiles.deployment(kv_cache_dtype="fp8")
    assert fp8.kv_bytes_per_token == default.kv_bytes_per_token // 2
    assert fp8.bytes_per_block == 1 * MiB
    assert fp8.num_gpu_blocks == 56_018
    assert fp8.num_gpu_blocks / default.num_gpu_blocks == pytest.approx(2.0, rel=1e-3)


def test_tensor_parallel_splits_weights_and_kv(profiles, default):
    tp2 = profiles.deployment(tensor_parallel_size=2)
    assert tp2.weight_bytes == default.weight_bytes
    assert tp2.weight_bytes_per_gpu == pytest.approx(8.03e9)
    assert tp2.kv_bytes_per_token_per_gpu == 65_536
    assert tp2.bytes_per_block == 1 * MiB
    # (0.92 x 85.0e9 - 8.03e9 - 3.4e9) / 1 MiB
    assert tp2.num_gpu_blocks == 63_676


def test_block_size_changes_block_count_not_tokens(profiles):
    big = profiles.deployment(block_size=32)
    assert big.bytes_per_block == 4 * MiB
    assert big.num_gpu_blocks == 14_004  # floor(28,009.41 / 2)


def test_override_sets_blocks_directly(profiles):
    d = profiles.deployment(num_gpu_blocks_override=100)
    assert (d.num_gpu_blocks, d.usable_blocks, d.kv_cache_tokens) == (100, 99, 99 * 16)


def test_more_memory_utilisation_gives_more_blocks(profiles, default):
    assert profiles.deployment(gpu_memory_utilization=0.95).num_gpu_blocks > default.num_gpu_blocks


def test_encoder_has_no_kv_cache_and_still_deploys(profiles):
    d = profiles.deployment(model_id="bge-large-embedder")
    assert d.kv_bytes_per_token == 0
    assert (d.num_gpu_blocks, d.usable_blocks, d.kv_cache_tokens) == (0, 0, 0)


def test_70b_on_one_h100_suggests_tensor_parallel(profiles):
    with pytest.raises(ProfileError, match="tensor_parallel_size to 2") as info:
        profiles.deployment(model_id="llama-3.1-70b")
    assert "Llama 3.1 70B" in str(info.value) and "H100" in str(info.value)
    # ...and the suggestion is right: it fits on 2.
    assert profiles.deployment(model_id="llama-3.1-70b", tensor_parallel_size=2).usable_blocks > 0


def test_suggestion_is_the_smallest_size_that_fits(profiles):
    with pytest.raises(ProfileError, match="tensor_parallel_size to 4"):
        profiles.deployment("l40s", "llama-3.1-70b")
    with pytest.raises(ProfileError, match="tensor_parallel_size to 4"):
        profiles.deployment("l40s", "llama-3.1-70b", tensor_parallel_size=2)


def test_a_model_too_big_for_eight_gpus_says_so(profiles):
    gpus = profiles.gpu("l40s")
    huge = dataclasses.replace(profiles.model("llama-3.1-70b"), params=500e9)
    with pytest.raises(ProfileError, match="does not fit even with tensor_parallel_size at 8"):
        Deployment(gpus, huge)


def test_a_kv_cache_asked_too_large_is_told_the_most_it_may_ask(profiles):
    """--kv-cache-memory-bytes 100G beside Llama 3.1 8B on an H100 said "It does not fit even with
    tensor_parallel_size at 8; choose a GPU with more memory": no GPU count or kind helps a cache
    asked for larger than any; the dial is what to change, to less than what the weights and the
    reserve leave (on as many GPUs as the weights need), and that much then fits."""
    with pytest.raises(ProfileError) as refused:
        profiles.deployment(kv_cache_memory_bytes=100e9)
    room = 85.0e9 - profiles.deployment().reserve_bytes - profiles.deployment().weight_bytes_per_gpu
    assert str(refused.value).endswith(f"Give kv_cache_memory_bytes less than {math.floor(room):,} bytes "
                                       f"({room / 1e9:.1f} GB); it is each GPU's cache, so no "
                                       "tensor_parallel_size holds the 100.0 GB asked.")
    assert profiles.deployment(kv_cache_memory_bytes=math.floor(room) - 1).usable_blocks > 0
    with pytest.raises(ProfileError, match=r"less than [\d,]+ bytes \(11.0 GB\) and set tensor_parallel_size to 2; "):
        profiles.deployment(model_id="llama-3.1-70b", kv_cache_memory_bytes=64e9)
    assert profiles.deployment(model_id="llama-3.1-70b", tensor_parallel_size=2, kv_cache_memory_bytes=10.9e9)


@pytest.mark.parametrize(("asked", "said"), [(1.5e12, "1.5 TB"), (999.99e9, "1.0 TB"), (2e18, "2.0 EB"),
                                             (1e30, "1e+30 bytes")])
def test_a_huge_kv_cache_asked_reads_in_a_unit_of_its_size(profiles, asked, said):
    """--kv-cache-memory-bytes 1e30 was refused naming "the 1000000000000000000000.0 GB asked":
    sizes in a refusal go up through the decimal units, and past them say the magnitude."""
    with pytest.raises(ProfileError) as refused:
        profiles.deployment(kv_cache_memory_bytes=asked)
    assert f"and the {said} KV cache kv_cache_memory_bytes asks for" in str(refused.value)
    assert str(refused.value).endswith(f"holds the {said} asked.")


def test_room_for_weights_but_not_for_a_block(profiles):
    with pytest.raises(ProfileError, match="not enough for the KV cache"):
        # 0.92 x 85.0e9 - 16.06e9 - reserve leaves one 2 MiB block: the null block, nothing else.
        profiles.deployment(reserve_bytes=62.14e9 - 3 * MiB)
    assert profiles.deployment(reserve_bytes=62.14e9 - 5 * MiB).usable_blocks == 1


@pytest.mark.parametrize(
    ("dial", "value"),
    [
        ("tensor_parallel_size", 3),
        ("tensor_parallel_size", 16),
        ("tensor_parallel_size", True),
        ("gpu_memory_utilization", 0.0),
        ("gpu_memory_utilization", 1.2),
        ("block_size", 24),
        ("block_size", 512),
        ("block_size", 0),
        ("kv_cache_dtype", "int4"),
        ("num_gpu_blocks_override", 1),
        ("reserve_bytes", -1.0),
    ],
)
def test_bad_dials_raise_config_error(profiles, dial, value):
    with pytest.raises(ConfigError) as info:
        profiles.deployment(**{dial: value})
    assert info.value.dial == dial and info.value.value == value


@pytest.mark.parametrize("block_size", [1, 8, 16, 32, 64, 128, 256])
def test_powers_of_two_block_sizes_are_accepted(profiles, block_size):
    assert profiles.deployment(block_size=block_size).block_size == block_size


def test_tensor_parallel_must_split_heads(profiles):
    # A model with 12 query heads cannot share them evenly across 8 GPUs.
    odd = dataclasses.replace(profiles.model("llama-3.2-3b"), q_heads=12, kv_heads=4)
    with pytest.raises(ConfigError, match="12 query heads") as info:
        Deployment(profiles.gpu(), odd, tensor_parallel_size=8)
    assert info.value.dial == "tensor_parallel_size"
    assert Deployment(profiles.gpu(), odd, tensor_parallel_size=4).kv_heads_per_gpu == 1
    # Every built-in decoder splits over 8 (Llama 3.2 3B: 24 query heads, 3 per GPU).
    assert profiles.deployment(model_id="llama-3.2-3b", tensor_parallel_size=8).usable_blocks


def test_unknown_dial_is_named(profiles):
    with pytest.raises(ConfigError, match="max_num_seqs"):
        profiles.deployment(max_num_seqs=64)


def test_replace_revalidates(default):
    with pytest.raises(ConfigError):
        dataclasses.replace(default, block_size=3)


# -- user profile files --------------------------------------------------------------------


def write(tmp_path, text):
    path = tmp_path / "my-profiles.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_user_file_overrides_an_efficiency_and_adds_a_gpu(tmp_path):
    path = write(tmp_path, """
[gpus.h100-sxm]
eta_bw = 0.75

[gpus.rtx-4090]
name = "RTX 4090"
hbm_bandwidth = 1.008e12
bf16_peak_flops = 165e12
memory_bytes = 25_300_000_000
interconnect_bandwidth = 32e9
""")
    profiles = load_profiles(path)
    h100 = profiles.gpu("h100-sxm")
    assert h100.eta_bw == 0.75
    assert h100.hbm_bandwidth == 3.35e12 and h100.eta_mfu == 0.68  # the rest is kept
    rtx = profiles.gpu("rtx-4090")
    assert rtx.name == "RTX 4090" and rtx.memory_bytes == 25.3e9
    assert rtx.eta_bw == 0.80  # efficiencies it does not set come from [defaults]
    assert profiles.deployment("rtx-4090").num_gpu_blocks > 0
    # The built-ins are untouched for everyone else.
    assert load_profiles().gpu("h100-sxm").eta_bw == 0.80
    assert BUILTIN_GPUS["h100-sxm"].eta_bw == 0.80


def test_user_defaults_reach_builtin_gpus_and_model_efficiencies_win(tmp_path):
    path = write(tmp_path, """
[defaults]
eta_mfu = 0.5

[gpus.b200]
eta_mfu = 0.6

[models."llama-3.1-8b"]
eta_mfu = 0.55
max_model_len = 8192
""")
    profiles = load_profiles(path)
    assert profiles.gpu("h100-sxm").eta_mfu == 0.5
    assert profiles.gpu("b200").eta_mfu == 0.6
    assert profiles.model("llama-3.1-8b").max_model_len == 8192
    assert profiles.model("llama-3.1-8b").params == 8.03e9
    assert profiles.deployment("b200").eta_mfu == 0.55
    assert profiles.deployment("b200", "llama-3.2-3b").eta_mfu == 0.6


def test_user_file_adds_a_model(tmp_path):
    path = write(tmp_path, """
[models.tiny]
name = "Tiny"
kind = "decoder"
params = 1e9
layers = 16
kv_heads = 4
q_heads = 16
head_dim = 64
hidden = 1024
max_model_len = 4096
""")
    d = load_profiles(path).deployment(model_id="tiny")
    assert d.kv_bytes_per_token == 2 * 16 * 4 * 64 * 2
    assert d.model.bytes_per_param == 2.0


def test_syntax_error_names_file_and_line(tmp_path):
    path = write(tmp_path, "[gpus.h100-sxm]\neta_bw = 0.7\nname = = 'x'\n")
    with pytest.raises(ProfileError) as info:
        load_profiles(path)
    assert f"{path}:3:" in str(info.value)
    assert "not valid TOML" in str(info.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[gpus.h100-sxm]\nspeed = 3\n", "unknown key 'speed'"),
        ("[gpus.h100-sxm]\nhbm_bandwidth = '3.35 TB/s'\n", "hbm_bandwidth = '3.35 TB/s'.*a number"),
        ("[gpus.h100-sxm]\nmemory_bytes = -1\n", "memory_bytes = -1.*positive"),
        ("[gpus.h100-sxm]\neta_bw = 1.5\n", r"eta_bw = 1.5.*\(0, 1\]"),
        ("[defaults]\neta_attn = 0\n", r"eta_attn = 0.*\(0, 1\]"),
        ("[models.\"llama-3.1-8b\"]\nlayers = 32.5\n", "layers = 32.5.*whole number"),
        ("[models.\"llama-3.1-8b\"]\nkind = 'diffusion'\n", "kind = 'diffusion'"),
        ("[gpus.new]\nname = 'New'\n", r"\[gpus.new\] is missing hbm_bandwidth"),
        ("[models.enc]\nname='E'\nkind='encoder'\nparams=1e8\nlayers=4\nkv_heads=4\n"
         "q_heads=4\nhead_dim=64\nhidden=256\nmax_model_len=512\n", "needs input_len"),
        ("[gpus.h100-sxm]\nid = 'h100'\n", "the table name is the id"),
        ("[hardware.h100]\nx = 1\n", "unknown table or key 'hardware'"),
    ],
)
def test_bad_values_name_file_key_and_reason(tmp_path, text, expected):
    path = write(tmp_path, text)
    with pytest.raises(ProfileError, match=expected) as info:
        load_profiles(path)
    assert str(info.value).startswith(f"{path}: ")


def test_missing_file_is_a_profile_error(tmp_path):
    missing = tmp_path / "nope.toml"
    with pytest.raises(ProfileError, match="cannot read"):
        load_profiles(missing)


def test_builtin_blocks_follow_the_formula_for_every_decoder(profiles):
    for gpu_id in profiles.gpus:
        for model in profiles.models.values():
            if not model.has_kv_cache or model.id == "llama-3.1-70b":
                continue
            if model.quantization or model.kv_latent_dim or model.window_layers:
                continue  # (their own tests: test_moe.py)
            if model.params * 2 + 3.4e9 >= 0.92 * profiles.gpu(gpu_id).memory_bytes:
                with pytest.raises(ProfileError, match="does not fit"):
                    profiles.deployment(gpu_id, model.id)
                continue
            d = profiles.deployment(gpu_id, model.id)
            expected = math.floor(
                (0.92 * d.gpu.memory_bytes - model.params * 2 - 3.4e9)
                / (2 * model.layers * model.kv_heads * model.head_dim * 2 * 16)
            )
            assert d.num_gpu_blocks == expected, (gpu_id, model.id)


def test_a_table_id_with_dots_unquoted_is_told_to_quote_it(tmp_path):
    """[models.llama-3.1-8b] is TOML for models -> llama-3 -> 1-8b: overriding a built-in model
    (their ids have dots) said only "[models.llama-3] has an unknown key '1-8b'" and listed 70
    keys. The refusal says how to write it; written so, it loads."""
    mine = tmp_path / "mine.toml"
    mine.write_text("[models.llama-3.1-8b]\neta_bw = 0.7\n")
    with pytest.raises(ProfileError, match=re.escape('(an id with a dot in it is quoted: [models."llama-3.1-8b"])')):
        load_profiles(mine)
    mine.write_text('[models."llama-3.1-8b"]\neta_bw = 0.7\n')
    assert load_profiles(mine).model("llama-3.1-8b").eta_bw == 0.7
