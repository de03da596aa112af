"""The iteration cost model, pinned to SIMULATOR.md section 2's calibration targets."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.cost import BINDINGS, CostModel
from sim.profiles import load_profiles
from tests.examples import examples

CONTEXT = 640  # 512 in / 256 out, halfway through the answer


@pytest.fixture(scope="module")
def profiles():
    return load_profiles()


@pytest.fixture(scope="module")
def cost(profiles):
    """Iterations as the engine prices them by default: async scheduling, the host's work
    (0.02 ms plus 50 us a sequence) overlapping the forward pass, so the calibration targets
    below are the GPU's time whenever the host's is shorter."""
    return CostModel(profiles.deployment(), overlap=True)


@pytest.fixture(scope="module")
def serial(profiles):
    """Synchronous scheduling: the host's work after the forward pass, term by term."""
    return CostModel(profiles.deployment())


def decode_ms(cost, batch, context=CONTEXT):
    return cost.iteration(batch, batch * context).total * 1e3


# -- calibration targets -----------------------------------------------------------------------


def test_prefill_of_512_tokens_alone_is_14_ms(cost):
    c = cost.iteration(0, 0, [(0, 512)])
    assert c.total * 1e3 == pytest.approx(14.0, rel=0.03)
    assert c.total * 1e3 == pytest.approx(13.72, abs=0.01)  # the pinned-defaults figure
    assert c.binding == "compute" and c.linear_binding == "compute"


@pytest.mark.parametrize("context", [512, 640, 768])
def test_batch_1_decode_is_6_02_ms(cost, context):
    ms = decode_ms(cost, 1, context)
    assert ms == pytest.approx(6.02, rel=0.01)
    assert 1e3 / ms == pytest.approx(166, rel=0.01)


def test_batch_1_decode_at_pinned_defaults(cost):
    assert decode_ms(cost, 1) == pytest.approx(6.02, abs=0.005)
    c = cost.iteration(1, CONTEXT)
    assert c.binding == "weights" and c.linear_binding == "weights"


@pytest.mark.parametrize(
    ("batch", "low", "high", "pinned"),
    [(64, 8.0, 9.0, 8.07), (128, 10.3, 11.5, 10.50), (256, 15.0, 19.0, 16.10)],
)
def test_decode_at_larger_batches(cost, batch, low, high, pinned):
    ms = decode_ms(cost, batch)
    assert low <= ms <= high
    assert ms == pytest.approx(pinned, abs=0.01)


def test_step_256_over_step_1(cost):
    assert 2.3 <= decode_ms(cost, 256) / decode_ms(cost, 1) <= 2.9


def test_batch_256_decode_is_compute_bound_in_its_linear_part(cost):
    c = cost.iteration(256, 256 * CONTEXT)
    assert c.linear_binding == "compute"
    assert c.t_compute > c.t_weights


def test_batching_1_to_64_multiplies_throughput_at_little_latency_cost(cost):
    # STEPS.md step 7: throughput rises about 40-50x, per-token latency only 30-50 %.
    t1, t64 = decode_ms(cost, 1), decode_ms(cost, 64)
    assert 40 <= (64 / t64) / (1 / t1) <= 50
    assert 1.30 <= t64 / t1 <= 1.50


def test_single_stream_ceiling(cost):
    assert cost.single_stream_ceiling_tokens_per_s == pytest.approx(3.35e12 / 16.06e9)
    assert round(cost.single_stream_ceiling_tokens_per_s) == 209
    assert 0.8 * cost.single_stream_ceiling_tokens_per_s == pytest.approx(167, abs=0.5)


def test_utilisation_gauges_at_batch_1(cost):
    c = cost.iteration(1, CONTEXT)
    tensor_cores = cost.tensor_core_utilization(1, c.total)
    assert tensor_cores == pytest.approx(0.0027, rel=0.03)  # "about 0.3 % of peak"
    bandwidth = cost.bandwidth_utilization(c.bytes_read, c.total)
    assert bandwidth == pytest.approx(0.80, abs=0.01)  # "a bandwidth gauge near 80 %"


# -- the terms, one by one ---------------------------------------------------------------------


def test_terms_follow_the_formulas(serial):
    cost = serial
    bw, peak = 3.35e12, 989e12
    c = cost.iteration(10, 10 * 1000, [(300, 200)])
    assert c.tokens == 210
    assert c.t_weights == pytest.approx(16.06e9 / (bw * 0.80), rel=1e-12)
    assert c.t_compute == pytest.approx(2 * 8.03e9 * 210 / (peak * 0.68), rel=1e-12)
    assert c.t_linear == pytest.approx(math.hypot(c.t_weights, c.t_compute), rel=1e-12)
    assert c.t_kv_read == pytest.approx(10_000 * 131_072 / (bw * 0.85), rel=1e-12)
    attn = 4 * 32 * 32 * 128 * 200 * (300 + 100)
    assert c.t_prefill_attn == pytest.approx(attn / (peak * 0.68), rel=1e-12)
    assert c.t_allreduce == 0.0
    assert c.t_overhead == pytest.approx(2e-5 + 11 * 50e-6, rel=1e-12)  # fixed, and 11 sequences
    assert c.total == pytest.approx(
        c.t_linear + c.t_kv_read + c.t_prefill_attn + c.t_overhead, rel=1e-15)
    assert c.flops == pytest.approx(2 * 8.03e9 * 210 + attn, rel=1e-12)
    assert c.bytes_read == pytest.approx(16.06e9 + 10_000 * 131_072, rel=1e-12)


def test_chunking_a_prefill_keeps_its_attention_work(cost):
    whole = cost.iteration(0, 0, [(0, 512)])
    halves = cost.iteration(0, 0, [(0, 256), (256, 256)])
    assert halves.t_prefill_attn == pytest.approx(whole.t_prefill_attn, rel=1e-12)
    assert halves.tokens == whole.tokens == 512


def test_a_nothing_iteration_costs_nothing(cost):
    c = cost.iteration(0, 0, [])
    assert c.total == 0.0 and c.tokens == 0 and c.binding == "idle"
    assert cost.decode_time(0, 0) == 0.0


def test_binding_names_the_largest_term(cost):
    assert cost.iteration(1, 640).binding == "weights"
    assert cost.iteration(0, 0, [(0, 2048)]).binding == "compute"
    assert cost.iteration(64, 64 * 32_000).binding == "kv_read"
    assert cost.iteration(0, 0, [(100_000, 512)]).binding == "prefill_attention"
    for c in (cost.iteration(1, 640), cost.iteration(64, 64 * 32_000)):
        assert c.binding in BINDINGS


def test_parts_add_up_and_split_linear_by_squares(cost):
    for c in (cost.iteration(1, 640), cost.iteration(128, 128 * 640, [(0, 300)]),
              cost.iteration(0, 0, [(0, 512)])):
        parts = c.parts()
        assert [label for label, _ in parts] == [
            "weights read", "KV read", "compute", "all-reduce", "overhead"]
        assert sum(s for _, s in parts) == pytest.approx(c.total, rel=1e-12)
        weights, compute = parts[0][1], parts[2][1] - c.t_prefill_attn
        assert weights / compute == pytest.approx(c.t_weights**2 / c.t_compute**2, rel=1e-9)


# -- the fast paths equal the full breakdown exactly -------------------------------------------


@pytest.mark.parametrize(
    "dials",
    [{}, {"tensor_parallel_size": 2}, {"kv_cache_dtype": "fp8"}, {"gpu_id": "l40s"},
     {"gpu_id": "b200", "model_id": "qwen2.5-14b", "tensor_parallel_size": 4}],
)
def test_decode_time_equals_iteration_total_exactly(profiles, dials):
    cost = CostModel(profiles.deployment(**dials))
    rng = np.random.default_rng(7)
    batches = rng.integers(0, 400, size=300)
    contexts = batches * rng.integers(1, 8000, size=300)
    vector = cost.decode_times(batches, contexts)
    for batch, context, fast in zip(batches.tolist(), contexts.tolist(), vector.tolist()):
        total = cost.iteration(batch, context).total
        assert cost.decode_time(batch, context) == total
        assert fast == total


def test_decode_ends_advance_a_clock_one_iteration_at_a_time(cost):
    """decode_ends adds each iteration's own total to the previous end, as an engine stepping one
    iteration at a time does, measures each as the difference of its ends, and stops after the
    first that ends at or after the limit."""
    start, batch, context = 12.345, 37, 37 * 900
    clock = [start]
    for j in range(50):
        clock.append(clock[-1] + cost.iteration(batch, context + batch * j).total)
    gaps = [b - a for a, b in zip(clock, clock[1:])]
    assert cost.decode_ends(batch, context, start, 50) == (clock[1:], gaps)
    limit = (clock[20] + clock[21]) / 2  # the 21st iteration ends after it: it is the last
    assert cost.decode_ends(batch, context, start, 50, limit) == (clock[1:22], gaps[:21])
    assert cost.decode_ends(batch, context, start, 50, clock[20]) == (clock[1:21], gaps[:20])  # ends at it
    assert cost.decode_ends(batch, context, start, 0) == ([], [])


@settings(max_examples=examples(100), deadline=None)
@given(st.sampled_from(["llama-3.1-8b", "gpt-oss-20b", "qwen3-30b-a3b"]), st.booleans(),
       st.sampled_from([(), (1, 2, 4, 8, 16, 32)]), st.integers(0, 300), st.integers(0, 4000),
       st.floats(0.0, 1e4), st.integers(0, 60), st.floats(0.0, 0.5))
def test_decode_ends_follow_a_clock_on_every_deployment(profiles, model, overlap, graphs, batch, per_seq, start,
                                                         count, span):
    """decode_ends (each of its loops: the host overlapped or not, a sliding window or none,
    CUDA graphs or none, a launch-bound batch) gives exactly the ends and gaps of a clock advanced
    one iteration at a time by `iteration(...).total`, stopping after the first at or past the
    limit."""
    cost = CostModel(profiles.deployment(model_id=model), overlap=overlap, graph_sizes=graphs)
    context = batch * per_seq
    clock = [start]
    for j in range(count):
        clock.append(clock[-1] + cost.iteration(batch, context + batch * j).total)
    gaps = [b - a for a, b in zip(clock, clock[1:])]
    limit = start + span if span else math.inf
    stop = next((j + 1 for j in range(count) if clock[j + 1] >= limit), count)
    ends = cost.decode_ends(batch, context, start, count, limit)
    if start >= limit:
        assert ends == ([], [])
    elif batch:
        assert ends == (clock[1:stop + 1], gaps[:stop])


@settings(max_examples=examples(60), deadline=None)
@given(st.sampled_from(["llama-3.1-8b", "gpt-oss-20b", "qwen3-30b-a3b"]), st.booleans(), st.booleans(),
       st.sampled_from([(), (1, 2, 4, 8, 16, 32)]), st.integers(0, 300), st.integers(0, 4000), st.integers(1, 40))
def test_decode_times_of_an_int_batch_equal_each_iteration_on_every_deployment(profiles, model, overlap, eager,
                                                                               graphs, batch, per_seq, count):
    """decode_times with a stretch's int batch (its parts kept by batch size, as decode_ends keeps
    them) and with the batch as an array give exactly `iteration(...).total` of each context: the
    host overlapped or not, a sliding window or none, a mixture of experts, CUDA graphs or none,
    eager launches or none."""
    cost = CostModel(profiles.deployment(model_id=model, enforce_eager=eager), overlap=overlap, graph_sizes=graphs)
    contexts = batch * per_seq + batch * np.arange(count, dtype=np.int64)
    expected = [cost.iteration(batch, int(c)).total if batch else 0.0 for c in contexts]
    assert cost.decode_times(batch, contexts).tolist() == expected
    assert cost.decode_times(np.full(count, batch), contexts).tolist() == expected


def test_decode_times_with_a_scalar_batch(cost):
    contexts = np.array([64 * 100, 64 * 640, 64 * 4000])
    times = cost.decode_times(64, contexts)
    assert times.tolist() == [cost.iteration(64, int(c)).total for c in contexts]


# -- other deployments -------------------------------------------------------------------------


def test_tensor_parallel_halves_linear_time_and_adds_all_reduce(profiles, cost):
    tp2 = CostModel(profiles.deployment(tensor_parallel_size=2))
    one, two = cost.iteration(64, 64 * 640), tp2.iteration(64, 64 * 640)
    assert two.t_weights == pytest.approx(one.t_weights / 2, rel=1e-12)
    assert two.t_kv_read == pytest.approx(one.t_kv_read / 2, rel=1e-12)
    # 2 all-reduces x 32 layers, ring over 2 GPUs moves the 64 x 4096 bf16 activations once,
    # plus 5 us each.
    expected = 2 * 32 * (2 * (1 / 2) * 64 * 4096 * 2 / 450e9 + 5e-6)
    assert two.t_allreduce == pytest.approx(expected, rel=1e-12)
    assert one.t_allreduce == 0.0
    assert two.total < one.total


def test_fp8_kv_cache_halves_kv_read(profiles, cost):
    fp8 = CostModel(profiles.deployment(kv_cache_dtype="fp8"))
    assert fp8.iteration(64, 64 * 640).t_kv_read == pytest.approx(
        cost.iteration(64, 64 * 640).t_kv_read / 2, rel=1e-12)


def test_a_faster_gpu_is_faster(profiles, cost):
    h200 = CostModel(profiles.deployment("h200"))
    assert h200.decode_time(1, 640) < cost.decode_time(1, 640)
    assert h200.single_stream_ceiling_tokens_per_s == pytest.approx(4.8e12 / 16.06e9)


def test_a_user_efficiency_reaches_the_cost(tmp_path):
    path = tmp_path / "calibrated.toml"
    path.write_text("[gpus.h100-sxm]\neta_bw = 0.40\n", encoding="utf-8")
    slow = CostModel(load_profiles(path).deployment())
    assert slow.iteration(1, 640).t_weights == pytest.approx(16.06e9 / (3.35e12 * 0.40))


def test_encoder_pass(profiles):
    cost = CostModel(profiles.deployment(model_id="bge-large-embedder"), overlap=True)
    one, many = cost.encoder_pass(1, 256), cost.encoder_pass(32, 256)
    assert many.tokens == 32 * 256 and many.t_kv_read == 0.0
    attn = 32 * 4 * 24 * 16 * 64 * 256 * 128
    assert many.t_prefill_attn == pytest.approx(attn / (989e12 * 0.68), rel=1e-12)
    # At 256 tokens one input is already near the compute roof, so batching amortises only
    # the weight read (the host's work overlaps the pass): per-input cost falls by about 28 %,
    # then flattens.
    per_input = {b: cost.encoder_pass(b, 256).total / b for b in (1, 2, 4, 8, 32)}
    assert per_input[1] > per_input[2] > per_input[4] > per_input[8] > per_input[32]
    assert per_input[32] / per_input[1] == pytest.approx(0.72, abs=0.02)
    assert one.binding == many.binding == "compute"
    assert cost.encoder_pass(0, 256).total == 0.0


# -- CUDA graphs and --enforce-eager (sources in sim/profiles.py and sim/config.py) ---------------


def test_capture_sizes_are_vllms_defaults():
    from sim.config import EngineConfig, cudagraph_capture_sizes

    h100 = cudagraph_capture_sizes(EngineConfig(max_num_seqs=1024, max_num_batched_tokens=8192))
    assert h100[:5] == (1, 2, 4, 8, 16) and h100[-3:] == (480, 496, 512)
    assert 248 in h100 and 250 not in h100 and 264 not in h100 and 272 in h100
    # 2 x max_num_seqs binds, and max_num_seqs itself is captured (decode batches fill the seats).
    seats_100 = cudagraph_capture_sizes(EngineConfig(max_num_seqs=100, max_num_batched_tokens=2048))
    assert seats_100[-1] == 200 and 100 in seats_100 and 99 not in seats_100
    # The token budget caps the sizes and is itself captured; B200's ceiling is 1024.
    assert cudagraph_capture_sizes(EngineConfig(max_num_seqs=256, max_num_batched_tokens=300))[-2:] == (288, 300)
    assert cudagraph_capture_sizes(EngineConfig(max_num_seqs=1024, max_num_batched_tokens=16384), 1024)[-1] == 1024


def test_cuda_graphs_pad_a_batch_to_the_next_capture_size(profiles):
    from sim.config import EngineConfig, cudagraph_capture_sizes

    d = profiles.deployment()
    graphs = CostModel(d, graph_sizes=cudagraph_capture_sizes(EngineConfig()))
    exact = CostModel(d)
    # 257 decoders run the graph of 272: compute as for 272 tokens, attention for the 257 real ones.
    assert graphs.iteration(257, 257 * CONTEXT).t_compute == exact.iteration(272, 272 * CONTEXT).t_compute
    assert graphs.iteration(257, 257 * CONTEXT).t_kv_read == exact.iteration(257, 257 * CONTEXT).t_kv_read
    assert graphs.iteration(257, 257 * CONTEXT).total > exact.iteration(257, 257 * CONTEXT).total
    # On a capture size, or above the largest (no graph), nothing is padded.
    for batch in (256, 600):
        assert graphs.iteration(batch, batch * CONTEXT).total == exact.iteration(batch, batch * CONTEXT).total
    # The engine's fast paths pad the same way.
    batches = np.array([1, 3, 257, 600])
    assert list(graphs.decode_times(batches, batches * CONTEXT)) == [
        graphs.decode_time(int(b), int(b) * CONTEXT) for b in batches]


def test_enforce_eager_launches_bind_small_batches_and_hide_under_large_ones(profiles):
    from sim.profiles import EAGER_LAUNCH_S_PER_LAYER

    graphs = CostModel(profiles.deployment())
    eager_deployment = profiles.deployment(enforce_eager=True)
    eager = CostModel(eager_deployment)
    # The source: a Llama 3.1 8B decode step at batch 1 on an H100 SXM takes 8.4 ms eager.
    assert 32 * EAGER_LAUNCH_S_PER_LAYER == pytest.approx(8.4e-3)
    one = eager.iteration(1, CONTEXT)
    assert one.total == pytest.approx(8.4e-3 + eager_deployment.overhead_s + eager_deployment.overhead_per_seq_s)
    assert one.t_launch_wait > 0 and sum(share for _, share in one.parts()) == pytest.approx(one.total)
    # The launches do not grow with the batch: the GPU's work grows until it hides them.
    added = [eager.iteration(b, b * CONTEXT).total - graphs.iteration(b, b * CONTEXT).total for b in (1, 16, 64, 256)]
    assert added[0] > added[1] > added[2] > 0 and added[3] == 0
    # The engine's fast paths agree.
    batches = np.array([1, 64, 256])
    assert list(eager.decode_times(batches, batches * CONTEXT)) == [
        eager.decode_time(int(b), int(b) * CONTEXT) for b in batches]
    assert [eager.decode_time(int(b), int(b) * CONTEXT) for b in batches] == [
        eager.iteration(int(b), int(b) * CONTEXT).total for b in batches]


# -- weight-only 4-bit formats: dequantised in the GEMM (sources in sim/profiles.py) --------------


def test_4bit_weights_win_memory_bound_and_pay_dequantisation_compute_bound(profiles):
    def model(gpu, quantization):
        return CostModel(profiles.deployment(gpu, "llama-3.1-8b", quantization=quantization))

    for gpu in ("h100-sxm", "l40s", "b200"):  # fp8 tensor cores: fp8 is W8A8
        awq, fp8, bf16 = model(gpu, "awq"), model(gpu, "fp8"), model(gpu, None)
        # Batch 1 streams the weights: 4 bits a weight beat 8 and 16.
        assert awq.iteration(1, CONTEXT).total < fp8.iteration(1, CONTEXT).total < bf16.iteration(1, CONTEXT).total
        # Compute-bound (a long prefill, a large decode batch) fp8's peak is twice bf16's, and
        # 4-bit weights run at bf16's peak at best: fp8 is faster.
        for iteration in ((0, 0, [(0, 8192)]), (512, 512 * CONTEXT)):
            assert awq.iteration(*iteration).total > fp8.iteration(*iteration).total, (gpu, iteration)
    # Hopper runs 4-bit through Machete (fp16's compute-bound speed); Ampere through Marlin, about
    # 10% slower than fp16 at large batch.
    prefill = (0, 0, [(0, 8192)])
    h100 = model("h100-sxm", "awq").iteration(*prefill).t_compute / model("h100-sxm", None).iteration(*prefill).t_compute
    a100 = model("a100-80gb", "awq").iteration(*prefill).t_compute / model("a100-80gb", None).iteration(*prefill).t_compute
    assert h100 == pytest.approx(1.0) and a100 == pytest.approx(1 / 0.9)
    assert model("a100-80gb", "awq").iteration(*prefill).total > 1.05 * model("a100-80gb", None).iteration(*prefill).total
    assert model("a100-80gb", "awq").iteration(1, CONTEXT).total * 2.5 < model("a100-80gb", None).iteration(1, CONTEXT).total
