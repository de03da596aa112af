"""Mixture-of-experts, MLA and sliding-window models from their config.json (issue 39): their sizes,
the experts an iteration reads, their KV caches, and the commands that run them by name."""

from __future__ import annotations

import dataclasses
import json
import math
import statistics

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim import hf_config
from sim.cost import CostModel, ExpertReads, expert_compute_share, fused_moe_compute_share, windowed
from sim.engine import Engine
from sim.errors import ConfigError
from sim.kv import BlockPool, KvLayout, blocks_for
from sim.profiles import BUILTIN_PROFILES, MXFP4_MARLIN_READ_SHARE, Deployment
from sim.scenario import Scenario
from sim.workload import LengthSpec, WorkloadSpec
from tests.examples import examples
from tests.unit.cli_run import run

P = BUILTIN_PROFILES

# Published totals (model cards), in billions: parameters, and active parameters a token. gpt-oss
# (OpenAI's model card, Aug 2025): 116.83 / 5.13 and 20.91 / 3.61, counting the output head but not
# the input embedding (a lookup); the others count both: Qwen3 (Qwen's model cards): 30.5 / 3.3,
# 235 / 22, 32.8 and 8.2 dense; DeepSeek-V3 (its technical report, arXiv 2412.19437): 671 / 37 for the main
# model; Mixtral 8x7B (Mistral's announcement): 46.7 / 12.9; Llama 4 Scout (Meta's model card):
# 109 / 17 with its vision encoder, which the shipped text config leaves out (about 1 B of it).
PUBLISHED = {
    "gpt-oss-120b": (116.83, 5.13, False), "gpt-oss-20b": (20.91, 3.61, False), "qwen3-30b-a3b": (30.5, 3.3, True),
    "qwen3-235b-a22b": (235.0, 22.0, True), "qwen3-32b": (32.8, 32.8, True), "qwen3-8b": (8.2, 8.2, True),
    "deepseek-v3": (671.0, 37.0, True),
    "mixtral-8x7b": (46.7, 12.9, True), "llama-4-scout": (108.0, 17.0, True),
}


@pytest.mark.parametrize("model_id", PUBLISHED)
def test_the_shipped_configs_give_the_published_parameter_counts(model_id):
    total, per_token, with_embedding = PUBLISHED[model_id]
    m = P.model(model_id)
    assert m.params / 1e9 == pytest.approx(total, rel=0.01)
    active = m.params - (m.expert_count - m.expert_top_k) * m.expert_params
    if not with_embedding:
        active -= m.vocab_size * m.hidden
    assert active / 1e9 == pytest.approx(per_token, rel=0.02)


def test_checkpoint_formats_give_the_published_checkpoint_sizes():
    # gpt-oss model card: MXFP4 experts (4.25 bits a parameter), the rest bf16; checkpoints of
    # 60.8 GiB (120b) and 12.8 GiB (20b).
    for model_id, gib in (("gpt-oss-120b", 60.8), ("gpt-oss-20b", 12.8)):
        d = P.deployment("h100-sxm", model_id)
        assert d.weight_bytes / 2**30 == pytest.approx(gib, rel=0.02), model_id
        assert d.weight_format is None and d.expert_weight_format.bytes_per_param == 4.25 / 8
    # DeepSeek-V3: FP8 weights with 128x128 block scales, about a byte a parameter (its 671 B).
    ds = P.deployment("h200", "deepseek-v3", tensor_parallel_size=8)
    assert ds.weight_bytes / 1e9 == pytest.approx(671 + 1.85, rel=0.01)  # (+ the bf16 embedding and head)
    assert ds.linear_peak_flops == ds.gpu.fp8_peak_flops == ds.expert_peak_flops


def test_a_checkpoints_own_format_refuses_another_quantization(capsys):
    with pytest.raises(ConfigError, match="mxfp4"):
        P.deployment("h100-sxm", "gpt-oss-120b", quantization="fp8")
    assert P.deployment("h100-sxm", "gpt-oss-120b", quantization="mxfp4").weight_bytes == \
        P.deployment("h100-sxm", "gpt-oss-120b").weight_bytes
    code, out, err = run(capsys, "sim", "--model", "openai/gpt-oss-120b", "--quantization", "awq")
    assert code == 2 and "--quantization" in err and "mxfp4" in err and err.count("\n") == 1, err


def test_nvfp4_runs_at_the_fp4_peak_on_blackwell_and_weight_only_before_it():
    b200 = P.deployment("b200", "qwen3-30b-a3b", quantization="modelopt_fp4")
    h100 = P.deployment("h100-sxm", "qwen3-30b-a3b", quantization="modelopt_fp4")
    assert b200.expert_peak_flops == 9000e12 and h100.expert_peak_flops == h100.gpu.bf16_peak_flops
    bf16 = P.deployment("b200", "qwen3-30b-a3b")
    embedding = 2 * 151936 * 2048
    assert b200.weight_bytes == pytest.approx((bf16.model.params - embedding) * 4.5 / 8 + embedding * 2)


# -- the KV cache ----------------------------------------------------------------------------------


def test_mla_caches_the_compressed_latent_whole_on_every_gpu():
    """DeepSeek-V3: kv_lora_rank 512 + qk_rope_head_dim 64 values a token a layer, 61 layers, bf16:
    70,272 bytes a token, the same on each of 8 GPUs (vLLM's MLA backends replicate the latent)."""
    one = P.deployment("h200", "deepseek-v3", tensor_parallel_size=8)
    assert one.kv_bytes_per_token == one.kv_bytes_per_token_per_gpu == 61 * 576 * 2
    assert one.bytes_per_block == 61 * 576 * 2 * 16
    fp8 = P.deployment("h200", "deepseek-v3", tensor_parallel_size=8, kv_cache_dtype="fp8")
    assert fp8.kv_bytes_per_token_per_gpu == 61 * 576
    # Prefill attention with MLA's head widths: (128 + 64) for QK and 128 for PV, 128 heads.
    cost = CostModel(one)
    assert cost.iteration(0, 0, [(0, 1000)]).t_prefill_attn * cost.deployment.eta_mfu * 989e12 == \
        pytest.approx(2 * 128 * (192 + 128) * 61 / 8 * 1000 * 500)


def test_mlas_down_projections_are_held_and_read_whole_on_every_gpu():
    """vLLM's deepseek_v2.py builds fused_qkv_a_proj (hidden x (q_lora_rank + kv_lora_rank +
    qk_rope_head_dim)) with disable_tp=True: each of eight GPUs holds all 15.1 M weights a layer."""
    ds = P.deployment("h200", "deepseek-v3", tensor_parallel_size=8)
    whole = 61 * 7168 * (1536 + 512 + 64)
    assert ds.model.replicated_params == whole and ds.replicated_bytes == whole * 1.0  # (FP8)
    assert ds.weight_bytes_per_gpu == pytest.approx((ds.weight_bytes - whole) / 8 + whole, rel=1e-12)
    split = Deployment(ds.gpu, dataclasses.replace(ds.model, replicated_params=0.0), tensor_parallel_size=8)
    assert CostModel(ds).weights_read(4) - CostModel(split).weights_read(4) == pytest.approx(whole * 7 / 8)
    assert ds.kv_memory_bytes_per_gpu == pytest.approx(split.kv_memory_bytes_per_gpu - whole * 7 / 8)
    dense = P.deployment("h100-sxm", "llama-3.1-8b", tensor_parallel_size=2)
    assert dense.replicated_bytes == 0.0 and dense.weight_bytes_per_gpu == dense.weight_bytes / 2


def test_gpt_oss_keeps_its_window_layers_in_blocks_of_their_own():
    """vLLM 0.33's hybrid KV cache manager: 18 sliding (window 128) and 18 full layers, two groups
    of 18; a request holds its tokens' blocks in the full group and at most cdiv(127, 16) + 1 = 9
    in the sliding one."""
    d = P.deployment("h100-sxm", "gpt-oss-120b")
    assert d.kv_layout == KvLayout(group_layers=18, window_groups=1, window_blocks=9)
    assert d.bytes_per_block == 18 * 2 * 8 * 64 * 2 * 16
    layout = d.kv_layout
    assert [blocks_for(t, 16, layout.window_groups, layout.window_blocks)
            for t in (1, 16, 17, 128, 144, 145, 1000)] == [2, 2, 4, 16, 18, 19, 72]
    # About twice the tokens of a cache without windows, past the window.
    assert d.kv_cache_tokens == (d.usable_blocks - 9) * 16
    assert d.kv_cache_tokens > 1.9 * d.usable_blocks * 16 / 2
    # A layout with more full layers than one group falls back to holding every layer fully.
    long_window = dataclasses.replace(d.model, window_layers=6)
    assert Deployment(d.gpu, long_window).kv_layout == KvLayout(36)


layouts = st.one_of(st.just(KvLayout(32)), st.builds(KvLayout, st.integers(1, 64), st.integers(1, 4), st.integers(1, 40)))


@given(layout=layouts, block_size=st.sampled_from([1, 2, 16, 64]), blocks=st.integers(0, 5000))
def test_a_layouts_token_capacity_is_the_most_tokens_its_blocks_hold(layout, block_size, blocks):
    """`KvLayout.token_capacity` (sim.profiles) reads `sim.kv.blocks_for` the other way: the tokens
    of so many blocks are the most whole blocks' worth that blocks_for fits in them."""
    tokens = layout.token_capacity(blocks, block_size)
    count = BlockPool(2, block_size, layout=layout).blocks_for
    assert tokens % block_size == 0 and count(tokens) <= blocks < count(tokens + 1)


@given(layout=layouts, block_size=st.sampled_from([1, 16]), prompt=st.integers(1, 3000), output=st.integers(1, 3000),
       short=st.booleans())
def test_a_request_is_refused_for_the_blocks_the_pool_would_hold_for_it(layout, block_size, prompt, output, short):
    """`check_request` counts a request's blocks at its peak (prompt + output - 1 tokens, its
    window groups' included) as the pool holds them: a cache of exactly that many takes it, one
    block fewer refuses it, naming the count."""
    from sim.config import EngineConfig
    from sim.errors import RequestRejected
    from sim.request import check_request

    config = EngineConfig(max_model_len=8192)
    need = BlockPool(2, block_size, layout=layout).blocks_for(prompt + output - 1)
    if not short:
        check_request("r", prompt, output, config, BlockPool(need + 1, block_size, layout=layout))
    elif need > 1:
        with pytest.raises(RequestRejected, match=f"it needs {need} KV blocks "):
            check_request("r", prompt, output, config, BlockPool(need, block_size, layout=layout))


def test_decoders_that_pass_their_window_hold_exactly_their_tokens_blocks():
    """Every running request holds `blocks_for` its computed tokens at every iteration, held
    explicitly while its window fills and compactly after (sync and async scheduling)."""
    for asynchronous in (False, True):
        sc = Scenario(model="gpt-oss-20b", engine={"async_scheduling": asynchronous, "enable_prefix_caching": False},
                      workload=WorkloadSpec(arrival="poisson", request_rate=200.0, num_prompts=40,
                                            input=LengthSpec("uniform", 60, 1, 200), output=LengthSpec("fixed", 300)))
        engine = Engine(sc)
        pool = engine.pool
        assert pool.window_groups == 1
        compact = 0
        while engine.step() is not None:
            engine.sync()
            held = 0
            for req in engine.scheduler.seated():
                computed = req.num_computed_tokens
                assert pool.held(req.request_id) == pool.blocks_for(computed), (req, computed)
                held += pool.held(req.request_id)
            assert pool.used == held
            compact = max(compact, len(engine.scheduler.running.decoders))
        assert compact > 0  # (the compact form was used)


def test_a_sliding_window_bounds_prefill_attention_and_decode_reads():
    assert windowed(0, 100, 128) == 100 * 50  # inside the window: as a full layer
    assert windowed(500, 100, 128) == 100 * 128  # past it: the window each
    assert windowed(100, 100, 128) == pytest.approx((128**2 - 100**2) / 2 + 128 * 72)
    d = P.deployment("h100-sxm", "gpt-oss-120b")
    cost = CostModel(d)
    layer = 2 * 8 * 64 * 2
    read = cost.kv_read_time(4, 4000) * d.gpu.hbm_bandwidth * d.eta_attn
    assert read == pytest.approx(18 * layer * 4000 + 4 * 18 * layer * 128)


# -- the experts an iteration reads -----------------------------------------------------------------


def test_expected_experts_read_grow_from_top_k_to_all_of_them():
    reads = ExpertReads(128, 8, 1, False)
    assert reads.distinct[1] == pytest.approx(8)
    assert reads.distinct[11] == pytest.approx(128 * (1 - (120 / 128) ** 11))
    assert reads.distinct[reads.cap] == 128.0
    assert np.all(np.diff(reads.distinct) >= 0)
    # Expert parallel: the busiest of 8 GPUs reads more than the mean, never more than its 16.
    ep = ExpertReads(128, 8, 8, True)
    assert np.all(ep.per_gpu[1:] >= reads.distinct[1:] / 8 - 1e-9) and np.all(ep.per_gpu <= 16 + 1e-9)
    assert ep.per_gpu[1] > 1.5 * reads.distinct[1] / 8  # one token's 8 experts seldom spread evenly
    assert ep.per_gpu[ep.cap] == pytest.approx(16)


def test_qwen3_30b_a3b_decodes_faster_than_dense_qwen3_32b_and_the_gap_narrows_with_the_batch():
    moe = P.deployment("h100-sxm", "qwen3-30b-a3b").model
    moe_cost = CostModel(P.deployment("h100-sxm", "qwen3-30b-a3b"), overlap=True)
    dense_cost = CostModel(P.deployment("h100-sxm", "qwen3-32b"), overlap=True)
    speedups = [dense_cost.iteration(b, b * 640).total / moe_cost.iteration(b, b * 640).total
                for b in (1, 8, 64, 256)]
    # One token reads 8 of 128 experts, about a tenth of the dense model's weights; from batch 64 on
    # every expert is read, and the MoE's lead is its compute (3.3 B active parameters, not 32.8).
    assert speedups[0] > 5, speedups
    assert speedups[0] > speedups[1] > speedups[2] and 1 < speedups[3] < 0.3 * speedups[0], speedups
    assert moe_cost.iteration(1, 640).experts_read == pytest.approx(8)
    assert moe_cost.iteration(256, 256 * 640).experts_read == pytest.approx(moe.expert_count)


def as_dense(model):
    return dataclasses.replace(model, expert_count=0, expert_top_k=0, expert_params=0.0, expert_layers=0)


@settings(max_examples=examples(40), deadline=None)
@given(batch=st.integers(1, 600), context=st.integers(1, 4000), chunks=st.lists(
    st.tuples(st.integers(0, 2000), st.integers(1, 600)), max_size=3),
    tp=st.sampled_from([1, 2]), fmt=st.sampled_from([None, "fp8", "awq"]), overlap=st.booleans())
def test_one_expert_routed_top_1_prices_as_its_dense_model(batch, context, chunks, tp, fmt, overlap):
    """A mixture of one expert, each token routed to it, reads and computes what the same model
    read as dense does, whatever the batch, the prefills and the weight format (the fixed cost of
    the expert kernels and the fixed part of their GEMMs' tiles, which a dense layer does not run,
    set to 0 here)."""
    config = hf_config.read("tests/data/hf-configs/mistralai--Mixtral-8x7B-v0.1.json")
    one = {**config, "num_local_experts": 1, "num_experts_per_tok": 1, "num_hidden_layers": 4}
    profiles = P.with_config_model("one-expert", one, "test")
    gpu = dataclasses.replace(P.gpu("h100-sxm"), moe_layer_latency_s=0.0, moe_tile_overhead_k=0.0)
    moe = Deployment(gpu, profiles.model("one-expert"), tensor_parallel_size=tp, quantization=fmt)
    dense = Deployment(gpu, as_dense(moe.model), tensor_parallel_size=tp, quantization=fmt)
    assert moe.weight_bytes == pytest.approx(dense.weight_bytes, rel=1e-12)
    a, b = CostModel(moe, overlap=overlap), CostModel(dense, overlap=overlap)
    x, y = a.iteration(batch, batch * context, chunks), b.iteration(batch, batch * context, chunks)
    for field in ("t_weights", "t_compute", "t_linear", "total", "flops", "bytes_read"):
        assert getattr(x, field) == pytest.approx(getattr(y, field), rel=1e-12), field
    assert x.experts_read == 1.0
    times = a.decode_times(np.array([batch, 1]), np.array([batch * context, context]))
    assert times == pytest.approx(b.decode_times(np.array([batch, 1]), np.array([batch * context, context])),
                                  rel=1e-12)


@settings(max_examples=examples(30), deadline=None)
@given(model_id=st.sampled_from(["qwen3-30b-a3b", "gpt-oss-120b", "mixtral-8x7b"]), batch=st.integers(0, 3000),
       context=st.integers(0, 10**6), ep=st.booleans())
def test_every_path_prices_a_mixture_of_experts_decode_alike(model_id, batch, context, ep):
    """The breakdown, the engine's time, the decode stretches and their numpy form read one table."""
    tp = 2 if model_id != "gpt-oss-120b" or ep else 1
    cost = CostModel(P.deployment("h100-sxm", model_id, tensor_parallel_size=tp, enable_expert_parallel=ep),
                     overlap=True, graph_sizes=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512))
    total = cost.iteration(batch, context).total
    assert cost.iteration_time(batch, context) == total
    if batch:
        assert cost.decode_time(batch, context) == total
        assert cost.decode_times(batch, np.array([context]))[0] == total


def test_each_moe_layer_pays_its_expert_kernels_fixed_cost():
    """25 us a layer (vLLM's fused-MoE kernel benchmarks at one token, sim/data/profiles.toml):
    Qwen3-30B-A3B's 48 layers, 1.2 ms an iteration whatever its size; none for a dense model. (The
    same 25 us prices a small kernel at a sixth of it, `GpuProfile.small_kernel_s`, so zeroing it
    also frees the layers' query-and-key-norm kernel, 48 x 25 / 6 us: `Deployment.qk_norm_s`.)"""
    d = P.deployment("h100-sxm", "qwen3-30b-a3b")
    assert d.moe_latency_s == pytest.approx(48 * 25e-6)
    assert d.qk_norm_s == pytest.approx(48 * 25e-6 / 6)
    free = Deployment(dataclasses.replace(d.gpu, moe_layer_latency_s=0.0), d.model)
    for batch in (1, 64, 1024):
        a, b = CostModel(d).iteration(batch, batch * 500), CostModel(free).iteration(batch, batch * 500)
        assert a.t_linear - b.t_linear == pytest.approx(48 * 25e-6 + 48 * 25e-6 / 6)
    assert P.deployment("h100-sxm", "qwen3-32b").moe_latency_s == 0.0


def test_expert_parallel_costs_small_batches_and_holds_the_same_bytes():
    tp = P.deployment("h100-sxm", "qwen3-235b-a22b", tensor_parallel_size=8)
    ep = P.deployment("h100-sxm", "qwen3-235b-a22b", tensor_parallel_size=8, enable_expert_parallel=True)
    assert ep.expert_parallel and ep.weight_bytes_per_gpu == tp.weight_bytes_per_gpu
    one_tp, one_ep = CostModel(tp).iteration(1, 1000), CostModel(ep).iteration(1, 1000)
    assert one_ep.t_weights > one_tp.t_weights  # the busiest GPU holds more than its share of 8 experts
    big_tp, big_ep = CostModel(tp).iteration(512, 512 * 1000), CostModel(ep).iteration(512, 512 * 1000)
    assert big_ep.t_weights == pytest.approx(big_tp.t_weights, rel=1e-9)  # every expert read on every GPU
    # (and multiplied faster: whole experts, their down GEMM's reduction 1,536 long, not a slice of 192)
    assert big_ep.t_compute < big_tp.t_compute and big_ep.total < big_tp.total
    # The manual's figures (docs/vllm-flags.md, Mixture of experts): a step at a 1,000-token context, the engine's pricing.
    steps = [[round(CostModel(x, overlap=True).iteration(b, b * 1000).total * 1e3, 2) for b in (1, 64)]
             for x in (tp, ep)]
    # (5.38, 26.39, 7.38 and 26.7 ms before its 94 layers' query-and-key-norm kernels, 0.39 ms a step)
    assert steps == [[5.77, 26.79], [7.77, 27.09]]
    dense = P.deployment("h100-sxm", "llama-3.1-70b", tensor_parallel_size=8, enable_expert_parallel=True)
    assert not dense.expert_parallel  # (a dense model has no experts to place)


# -- by name, on their usual GPUs -------------------------------------------------------------------


def test_gpt_oss_120b_runs_by_name_on_one_h100_and_deepseek_v3_on_eight_h200s(capsys):
    code, out, err = run(capsys, "sim", "--model", "openai/gpt-oss-120b", "--num-prompts", "20", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["completed"] == 20 and result["model_id"] == "openai/gpt-oss-120b"
    code, out, err = run(capsys, "sim", "vllm", "serve", "deepseek-ai/DeepSeek-V3", "--gpu", "h200", "-tp", "8",
                         "--num-prompts", "20", "--json")
    assert code == 0, err
    assert json.loads(out)["completed"] == 20
    code, out, err = run(capsys, "sim", "--model", "deepseek-ai/DeepSeek-V3", "--gpu", "h200", "-tp", "4")
    assert code == 2 and "does not fit" in err and "--tensor-parallel-size to 8" in err, err


def test_every_shipped_model_runs_on_the_gpus_its_description_names():
    for model_id, gpu, tp in (("gpt-oss-20b", "h100-sxm", 1), ("qwen3-30b-a3b", "h100-sxm", 1),
                              ("qwen3-235b-a22b", "h100-sxm", 8),
                              ("qwen3-235b-a22b", "h200", 4), ("mixtral-8x7b", "h100-sxm", 2),
                              ("llama-4-scout", "h100-sxm", 4)):
        sc = Scenario(model=model_id, gpu=gpu, tensor_parallel_size=tp,
                      workload=WorkloadSpec(num_prompts=4, request_rate=math.inf))
        if model_id == "llama-4-scout":  # (a context of 10M tokens: vLLM asks for --max-model-len)
            sc = sc.with_engine(max_model_len=131072)
        assert Engine(sc).run().metrics["completed"] == 4, model_id
    # Qwen3-32B in bf16 on one H100 leaves 35,360 tokens of cache: its 40,960-token context is
    # refused, as vLLM refuses it, and a shorter one runs.
    sc = Scenario(model="qwen3-32b", workload=WorkloadSpec(num_prompts=4, request_rate=math.inf))
    with pytest.raises(ConfigError, match="35,360 tokens"):
        Engine(sc)
    assert Engine(sc.with_engine(max_model_len=32768)).run().metrics["completed"] == 4


def test_the_catalog_lists_every_model_with_a_line_on_it():
    catalog = P.catalog()
    assert [row[0] for row in catalog] == list(P.models)
    assert all(hf and line for _, hf, line in catalog)
    assert ("gpt-oss-120b", "openai/gpt-oss-120b") in {row[:2] for row in catalog}


def test_the_iteration_report_says_how_many_experts_each_layer_read():
    sc = Scenario(model="qwen3-30b-a3b", workload=WorkloadSpec(num_prompts=6, request_rate=math.inf,
                                                             input=LengthSpec("fixed", 64),
                                                             output=LengthSpec("fixed", 8)))
    engine = Engine(sc)
    reports = [r for r in iter(engine.step, None)]
    parts = [r.cost for r in reports]
    assert all(p.experts == 128 for p in parts)
    cost = CostModel(engine.deployment)
    first = reports[0]
    assert parts[0].experts_read == pytest.approx(cost.experts_read(first.num_decode_tokens + first.num_prefill_tokens))
    assert any(p.experts_read < 64 for p in parts) and max(p.experts_read for p in parts) > 100
    dense = Engine(Scenario(workload=sc.workload)).step()
    assert dense.cost.experts == 0 and dense.cost.experts_read == 0.0


# vLLM PR 24700 (H100, benchmarks/kernels/benchmark_moe.py, Mixtral-8x7B-Instruct at TP 2, the tuned
# config): the fused-MoE kernel's time for one layer's experts, by tokens, in microseconds.
MIXTRAL_TP2_H100_KERNEL_US = {1: 144.03, 8: 434.98, 64: 483.14, 256: 536.77, 512: 662.33, 1024: 833.72,
                              1536: 1122.93}


def test_one_layers_experts_price_as_vllms_fused_moe_kernel_measures_them():
    """The experts' roofline (their weights read at the GPU's bandwidth efficiency, their FLOPs at its
    tensor-core efficiency times the share their kernels reach) plus the expert kernels' fixed cost,
    within 15 % of vLLM's kernel benchmark from one token to 1,536 (the manual, Mixture of experts)."""
    d = P.deployment("h100-sxm", "mixtral-8x7b", tensor_parallel_size=2)
    layers = d.model.expert_layers
    reads = ExpertReads(8, 2, 2, False)
    for tokens, measured in MIXTRAL_TP2_H100_KERNEL_US.items():
        mem = reads.per_gpu[min(tokens, reads.cap)] * d.expert_bytes / layers / (d.gpu.hbm_bandwidth * d.eta_bw)
        cmp = (2 * 2 * d.model.expert_params / layers / 2 * tokens
               / (d.expert_peak_flops * d.eta_mfu * expert_compute_share(d)))
        priced = (math.hypot(mem, cmp) + d.gpu.moe_layer_latency_s) * 1e6
        assert priced == pytest.approx(measured, rel=0.15), tokens


# vLLM PR 44818 (H200, Gemma 4's MoE layer: 128 experts of width 704 on a hidden size of 2,816, top 8,
# bf16, vLLM's Triton fused-MoE kernel with its default config): one layer's time, by tokens, in us.
NARROW_EXPERTS_H200_KERNEL_US = {2048: 742.9, 3072: 992.9, 4096: 1249.5}


def test_narrow_experts_reach_half_the_tensor_core_efficiency_vllms_kernel_benchmark_measures():
    """Compute-bound, the fused-MoE kernel's GEMMs on experts a few hundred wide reach about half of
    `eta_mfu` on Hopper (`GpuProfile.moe_tile_overhead_k`): Gemma 4's layer priced with that
    share comes within 5 % of vLLM's kernel benchmark at 2,048-4,096 tokens; at the full `eta_mfu`
    it comes out 30-42 % short."""
    d = P.deployment("h200", "qwen3-30b-a3b")
    experts, width, hidden, top_k = 128, 704, 2816, 8
    share = fused_moe_compute_share(hidden, width, d.gpu.moe_tile_overhead_k)
    assert share == pytest.approx(0.49, abs=0.005)
    mem = experts * 3 * width * hidden * 2 / (d.gpu.hbm_bandwidth * d.eta_bw)  # every expert is read
    flops_per_token = 2 * top_k * 3 * width * hidden
    for tokens, measured in NARROW_EXPERTS_H200_KERNEL_US.items():
        cmp = flops_per_token * tokens / (d.gpu.bf16_peak_flops * d.eta_mfu)
        full = math.hypot(mem, cmp) + d.gpu.moe_layer_latency_s
        assert -0.43 <= full / (measured * 1e-6) - 1 <= -0.29, tokens
        priced = math.hypot(mem, cmp / share) + d.gpu.moe_layer_latency_s
        assert priced == pytest.approx(measured * 1e-6, rel=0.05), tokens


def test_the_experts_compute_share_applies_to_bf16_experts_on_hopper_by_their_width_on_a_gpu():
    """Qwen3-30B-A3B's experts (768 wide, hidden 2,048) at 0.48 of eta_mfu on an H100, a quarter of
    their width at TP 4 lower still and whole again with expert parallelism; Mixtral's (14,336)
    near a dense GEMM's; 1 on an A100 and a B200 (not measured there), for a dense model, and for
    gpt-oss's MXFP4 experts (their own kernels) and fp8 experts."""
    h100 = P.deployment("h100-sxm", "qwen3-30b-a3b")
    assert expert_compute_share(h100) == pytest.approx(fused_moe_compute_share(2048, 768, 1450))
    assert expert_compute_share(h100) == pytest.approx(0.475, abs=0.001)
    tp4 = P.deployment("h100-sxm", "qwen3-30b-a3b", tensor_parallel_size=4)
    assert expert_compute_share(tp4) == pytest.approx(fused_moe_compute_share(2048, 192, 1450))
    ep4 = P.deployment("h100-sxm", "qwen3-30b-a3b", tensor_parallel_size=4, enable_expert_parallel=True)
    assert expert_compute_share(ep4) == pytest.approx(expert_compute_share(h100))
    mixtral = P.deployment("h100-sxm", "mixtral-8x7b", tensor_parallel_size=2)
    assert expert_compute_share(mixtral) == pytest.approx(0.77, abs=0.005)
    for gpu, model, dials in (("a100-80gb", "qwen3-30b-a3b", {}), ("b200", "qwen3-30b-a3b", {}),
                              ("h100-sxm", "llama-3.1-8b", {}), ("h100-sxm", "gpt-oss-120b", {}),
                              ("h100-sxm", "qwen3-30b-a3b", {"quantization": "fp8"})):
        assert expert_compute_share(P.deployment(gpu, model, **dials)) == 1.0, (gpu, model, dials)
    # (the engine prices the experts' FLOPs at it: a compute-bound prefill of narrow experts is slower)
    slow = CostModel(h100).iteration(0, 0, [(0, 8192)])
    fast = CostModel(dataclasses.replace(h100, gpu=dataclasses.replace(h100.gpu, moe_tile_overhead_k=0.0)))
    assert slow.t_compute > 1.4 * fast.iteration(0, 0, [(0, 8192)]).t_compute


# vLLM PR 19049 (A100 PCIe 40 GB, benchmarks/kernels/benchmark_moe.py, Qwen3-30B-A3B bf16 at TP 1, the
# default config an A100 runs for that shape): the fused-MoE kernel's time for one layer, by tokens, in us.
QWEN3_30B_A100_KERNEL_US = {1: 109.21, 2: 159.81, 4: 268.89, 8: 403.13, 16: 611.19, 32: 808.53, 64: 917.45}


def test_an_a100s_experts_price_as_vllms_fused_moe_kernel_measures_them():
    """On an A100 the expert kernels' fixed time is 45 us (sim/data/profiles.toml): priced so, one
    Qwen3-30B-A3B layer's experts come within 5 % of vLLM's kernel benchmark at one to four tokens,
    where the fixed time weighs most, and within 15 % up to 64 (at 25 us, the Hopper figure, one
    token comes out 22 % short)."""
    # (the benchmark holds one layer: the 40 GB card's memory is lifted so the whole model fits)
    gpu = dataclasses.replace(P.gpu("a100-40gb-pcie"), memory_bytes=85e9)
    d = Deployment(gpu, P.model("qwen3-30b-a3b"))
    assert d.gpu.moe_layer_latency_s == 45e-6 and d.moe_kernels == 6
    layers = d.model.expert_layers
    reads = ExpertReads(128, 8, 1, False)
    for tokens, measured in QWEN3_30B_A100_KERNEL_US.items():
        mem = reads.per_gpu[min(tokens, reads.cap)] * d.expert_bytes / layers / (d.gpu.hbm_bandwidth * d.eta_bw)
        cmp = 2 * 8 * d.model.expert_params / layers * tokens / (d.expert_peak_flops * d.eta_mfu)
        priced = (math.hypot(mem, cmp) + d.moe_latency_s / layers) * 1e6
        assert priced == pytest.approx(measured, rel=0.05 if tokens <= 4 else 0.15), tokens


def test_gpt_oss_experts_pay_the_triton_kernels_paths_eighteen_kernels_on_hopper_and_blackwell():
    """gpt-oss's MXFP4 experts run vLLM's triton_kernels path on compute capability 9.0-10.x: 18
    kernels a layer (14 of routing metadata, vLLM PR 39714) at a sixth of the fused-MoE path's
    fixed time each, three times that path's; on an A100 (Marlin) and for bf16 experts, six."""
    for gpu in ("h100-sxm", "h200", "b200"):
        d = P.deployment(gpu, "gpt-oss-120b", tensor_parallel_size=2)
        assert d.moe_kernels == 18
        assert d.moe_latency_s == pytest.approx(36 * d.gpu.moe_layer_latency_s * 3)
    a100 = P.deployment("a100-80gb", "gpt-oss-120b", tensor_parallel_size=2)
    assert a100.moe_kernels == 6 and a100.moe_latency_s == pytest.approx(36 * 45e-6)
    assert P.deployment("h100-sxm", "mixtral-8x7b", tensor_parallel_size=2).moe_kernels == 6
    assert P.deployment("h100-sxm", "gpt-oss-20b").moe_kernels == 18


# Triton PR 10047 (B200, 8 TB/s): triton_kernels' matmul, the kernel vLLM runs as matmul_ogs, on
# gpt-oss-120b's first expert GEMM, its two tables' share of peak bandwidth at 128-512 tokens, in %.
MATMUL_OGS_GPT_OSS_B200_BANDWIDTH = (51.4, 56.2, 54.9, 55.8, 58.4, 50.4, 49.7, 49.0, 52.1,
                                     55.7, 55.6, 55.7, 55.7, 55.5, 53.7, 53.5, 53.5, 53.6)


@pytest.mark.parametrize("gpu, share", [("h100-sxm", 0.54 / 0.80), ("h200", 0.54 / 0.80),
                                        ("a100-80gb", MXFP4_MARLIN_READ_SHARE)])
def test_gpt_oss_experts_are_read_at_matmul_ogs_bandwidth_where_triton_kernels_run_them(gpu, share):
    """On compute capability 9.0-10.x gpt-oss's MXFP4 experts are read at the share of the HBM's
    bandwidth triton_kernels' matmul measures (the median of Triton PR 10047's figures), over the
    80 % a weight-streaming GEMM reaches; an A100's, which Marlin reads, at Marlin's share (below);
    the always-read weights and bf16 experts at that 80 %."""
    assert statistics.median(MATMUL_OGS_GPT_OSS_B200_BANDWIDTH) == pytest.approx(54, abs=0.5)
    d = P.deployment(gpu, "gpt-oss-120b")
    assert d.moe_read_share == pytest.approx(share)
    cost = CostModel(d)
    bandwidth = d.gpu.hbm_bandwidth * d.eta_bw
    always = d.weight_bytes - d.routed_expert_bytes
    for tokens in (1, 8, 64):
        routed = ExpertReads(128, 4, 1, False).per_gpu[tokens] * d.expert_bytes
        assert cost.iteration(tokens, tokens * 300).t_weights == pytest.approx(
            always / bandwidth + routed / (bandwidth * share), rel=1e-12)
    for model, tp in (("qwen3-30b-a3b", 1), ("mixtral-8x7b", 2)):
        assert P.deployment(gpu, model, tensor_parallel_size=tp).moe_read_share == 1.0


def test_marlins_mxfp4_experts_replay_vllm_pr_27523s_marlin_latency(tmp_path, monkeypatch):
    """vLLM PR 27523 measured gpt-oss-120b's offline latency on an H100 through Marlin
    (VLLM_MXFP4_USE_MARLIN=1): 1.17 s. Replayed on an H100 that runs Marlin (the profile's compute
    capability moved off 9.0-10.x, where vLLM picks Marlin), with Marlin reading the experts at
    MXFP4_MARLIN_READ_SHARE of eta_bw: within 0.5 % (1.165-1.175 s, what 1.17 s rounds); at
    eta_bw, the fused-MoE path's pricing before, 11 % short. Marlin's path runs the fused-MoE
    path's six kernels; the file's own figure (triton_kernels, 1.58 s) is not Marlin's."""
    import sim.profiles
    from batchtui.cli.measured import load_run
    from benchmarks.fidelity import PUBLISHED
    from sim.engine import run_scenario

    assert MXFP4_MARLIN_READ_SHARE == pytest.approx(0.845)
    profile = tmp_path / "marlin.toml"
    profile.write_text("[gpus.h100-sxm]\ncompute_capability = 8.9\n", encoding="utf-8")
    path = str(PUBLISHED / "vllm-pr27523-gpt-oss-120b-h100-latency.json")

    def latency() -> float:
        replay = load_run(path, Scenario(profiles_path=str(profile)), {}, str(tmp_path), 0, ("gpu", "model"))
        d = replay.scenario.deployment()
        assert d.moe_kernels == 6 and d.gpu.compute_capability == 8.9
        return run_scenario(replay.scenario, keep_requests=False).metrics["mean_e2el_ms"]

    assert latency() == pytest.approx(1170, rel=0.005)
    formats = dict(sim.profiles.WEIGHT_FORMATS)
    formats["mxfp4"] = dataclasses.replace(formats["mxfp4"], marlin_read_share=1.0)
    monkeypatch.setattr(sim.profiles, "WEIGHT_FORMATS", formats)
    assert latency() == pytest.approx(1046, rel=0.005)


def test_the_readmes_qwen3_table():
    moe = CostModel(P.deployment("h100-sxm", "qwen3-30b-a3b"), overlap=True)
    dense = CostModel(P.deployment("h100-sxm", "qwen3-32b"), overlap=True)
    # (each 0.2 ms and 0.27 ms less before their 48 and 64 layers' query-and-key-norm kernels were priced)
    rows = {1: (3.92, 8, 24.78), 8: (11.45, 52, 25.20), 64: (25.27, 126, 29.27), 256: (30.20, 128, 50.28)}
    for batch, (moe_ms, experts, dense_ms) in rows.items():
        a, b = moe.iteration(batch, batch * 640), dense.iteration(batch, batch * 640)
        assert (round(a.total * 1e3, 2), round(a.experts_read), round(b.total * 1e3, 2)) == (moe_ms, experts, dense_ms)


def test_a_checkpoint_format_the_simulator_does_not_read_is_refused_in_one_line(tmp_path, capsys):
    config = json.loads(open("tests/data/hf-configs/Qwen--Qwen2.5-7B-Instruct.json").read())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "quantization_config": {"quant_method": "compressed-tensors"}}))
    code, out, err = run(capsys, "sim", "--model", "x/y", "--hf-config-path", str(path))
    assert code == 2 and err.count("\n") == 1 and "compressed-tensors" in err and "--quantization" in err, err
    path.write_text(json.dumps({**config, "quantization_config": {"quant_method": "fp8"}}))
    code, out, err = run(capsys, "sim", "--model", "x/y", "--hf-config-path", str(path), "--num-prompts", "3",
                         "--json")
    assert code == 0, err
