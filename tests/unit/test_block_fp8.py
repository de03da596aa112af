"""Block-scaled FP8 weights (DeepSeek-V3's checkpoint, `--quantization fp8_per_block`): each of a
forward pass's linear-layer GEMMs pays a fixed time of its own on Hopper (issue 36; sources in
sim/data/profiles.toml, `block_fp8_gemm_s`)."""

from __future__ import annotations

import dataclasses
import statistics

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim import hf_config
from sim.cost import CostModel
from sim.profiles import BUILTIN_PROFILES, Deployment
from tests.examples import examples

P = BUILTIN_PROFILES
CONFIGS = "sim/data/hf-configs/"

# SGLang PR 5820: DeepGEMM's block-scaled FP8 GEMMs of DeepSeek-V3's shapes at one token, in us, by
# (N, K): the Q up-projection at tensor parallel 8, a 512-wide one, and the K/V up-projection.
DEEPGEMM_ONE_TOKEN_US = {(3072, 1536): 10.336, (512, 7168): 13.632, (32768, 512): 13.024}


def test_deepseek_v3s_config_gives_its_305_gemms_and_its_block_scales():
    """Per layer MLA's three projections (fused_qkv_a_proj, q_b_proj, o_proj), and two for the first
    three layers' dense MLPs and the other 58 layers' shared expert: 61 x 3 + 3 x 2 + 58 x 2."""
    ds = hf_config.shape(hf_config.read(CONFIGS + "deepseek-ai--DeepSeek-V3.json"), "ds")
    assert (ds.linear_gemms, ds.fp8_block_scales) == (305, True)
    qwen = hf_config.shape(hf_config.read(CONFIGS + "Qwen--Qwen3-8B.json"), "qwen")
    assert (qwen.linear_gemms, qwen.fp8_block_scales) == (4 * 36, False)  # QKV, O, gate-and-up, down
    moe = hf_config.shape(hf_config.read(CONFIGS + "Qwen--Qwen3-30B-A3B.json"), "moe")
    assert moe.linear_gemms == 2 * 48  # no shared expert: attention's two a layer
    assert P.model("llama-3.1-8b").gemms_per_pass == 4 * 32  # a profile without the count: four a layer


def test_the_fixed_time_is_the_median_of_deepgemms_excess_over_reading_the_weights():
    """What each measured GEMM took beyond reading its weights at the H200's `eta_bw`: the median is
    the constant priced (within half a microsecond)."""
    d = P.deployment("h200", "deepseek-v3", tensor_parallel_size=8)
    excess = [us * 1e-6 - n * k / (d.gpu.hbm_bandwidth * d.eta_bw) for (n, k), us in DEEPGEMM_ONE_TOKEN_US.items()]
    assert statistics.median(excess) == pytest.approx(d.gpu.block_fp8_gemm_s, abs=0.5e-6)


def test_each_block_scaled_gemm_pays_its_fixed_time_on_hopper_and_nothing_else_does():
    ds = P.deployment("h200", "deepseek-v3", tensor_parallel_size=8)
    assert ds.block_fp8_gemms_s == pytest.approx(305 * 9e-6)
    free = Deployment(dataclasses.replace(ds.gpu, block_fp8_gemm_s=0.0), ds.model, tensor_parallel_size=8)
    for batch, chunks in ((1, ()), (4, ()), (64, ()), (3, ((0, 229),))):
        a = CostModel(ds).iteration(batch, batch * 400, chunks)
        b = CostModel(free).iteration(batch, batch * 400, chunks)
        assert a.t_linear - b.t_linear == pytest.approx(305 * 9e-6, rel=1e-9)
    llama = {q: P.deployment("h100-sxm", "llama-3.1-8b", quantization=q).block_fp8_gemms_s
             for q in (None, "fp8", "fp8_per_tensor", "fp8_per_block")}
    assert llama == {None: 0.0, "fp8": 0.0, "fp8_per_tensor": 0.0, "fp8_per_block": pytest.approx(128 * 9e-6)}
    # weight-only fp8 through Marlin on an A100, and no benchmark off Hopper: not priced
    assert P.deployment("a100-80gb", "llama-3.1-8b", quantization="fp8_per_block").block_fp8_gemms_s == 0.0
    assert P.deployment("b200", "deepseek-v3", tensor_parallel_size=8).block_fp8_gemms_s == 0.0


@settings(max_examples=examples(30), deadline=None)
@given(case=st.sampled_from([("h200", "deepseek-v3", 8, None), ("h100-sxm", "llama-3.1-8b", 1, "fp8_per_block")]),
       batch=st.integers(1, 600), context=st.integers(0, 10**6), overlap=st.booleans())
def test_every_path_prices_a_block_scaled_decode_alike(case, batch, context, overlap):
    """The breakdown, the engine's time, the decode stretches and their numpy form add the same term."""
    gpu, model, tp, quantization = case
    cost = CostModel(P.deployment(gpu, model, tensor_parallel_size=tp, quantization=quantization),
                     overlap=overlap, graph_sizes=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512))
    total = cost.iteration(batch, context).total
    assert cost.iteration_time(batch, context) == total
    assert cost.decode_time(batch, context) == total
    assert cost.decode_times(batch, np.array([context]))[0] == total
    assert cost.decode_times(np.array([batch]), np.array([context]))[0] == total
