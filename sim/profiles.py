"""Hardware and model profiles, and a deployment of one model on one GPU type.

Profiles are data: the built-in table lives in `sim/data/profiles.toml`, and a user TOML file
with the same layout adds profiles or overrides any field of a built-in one (efficiencies
included), so the cost model can be calibrated to one's own measurements. A `Deployment` adds the
vLLM serving dials that decide memory: tensor parallelism, KV-cache dtype, memory utilisation and
block size, and from them derives the size of the KV cache in blocks (SIMULATOR.md section 3).
"""

from __future__ import annotations

import dataclasses
import math
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from sim import hf_config
from sim.errors import ConfigError, ProfileError

DEFAULT_GPU_ID = "h100-sxm"
DEFAULT_MODEL_ID = "llama-3.1-8b"

MODEL_KINDS = ("decoder", "encoder")
TENSOR_PARALLEL_SIZES = (1, 2, 4, 8)
KV_CACHE_DTYPE_BYTES: Mapping[str, int] = MappingProxyType(
    # "auto" follows the model's activation dtype, which for every preset is bf16.
    {"auto": 2, "bf16": 2, "float16": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}
)


@dataclass(frozen=True)
class WeightFormat:
    """How `--quantization` stores the linear layers' weights and which tensor cores multiply them."""

    bytes_per_param: float
    """Bytes per linear-layer weight, scales included (embeddings and the output head stay bf16)."""
    fp8_compute: bool
    """W8A8: the linear layers run at the GPU's fp8 tensor-core peak where it has one (else, as
    vLLM does on Ampere, weight-only fp8 through Marlin kernels at the bf16 peak)."""
    fp4_compute: bool = False
    """W4A4: the linear layers run at the GPU's fp4 tensor-core peak where it has one (Blackwell);
    elsewhere weight-only, dequantized in the GEMM."""
    moe_kernels: int = 0
    """The kernels a mixture-of-experts layer runs with experts in this format, on the GPUs of
    `moe_kernel_capability` (where vLLM has a kernel path of its own for it); 0, or another GPU:
    the Triton fused-MoE path's FUSED_MOE_KERNELS."""
    moe_kernel_capability: tuple[float, float] = (0.0, 0.0)
    """The compute capabilities, from (inclusive) and below, on which `moe_kernels` applies."""
    moe_read_share: float = 1.0
    """On the GPUs of `moe_kernel_capability`: the share of a weight-streaming GEMM's bandwidth
    (`eta_bw`) the format's own MoE kernels reach reading the routed experts (1: the same)."""
    marlin_read_share: float = 1.0
    """Off `moe_kernel_capability`, where vLLM runs these experts through Marlin's MoE kernels (the
    fused-MoE path's six): the share of `eta_bw` they read them at (MXFP4_MARLIN_READ_SHARE)."""
    experts_only: bool = False
    """Only the routed experts are stored so (gpt-oss's MXFP4: vLLM's Mxfp4Config quantizes only
    the MoE layers, and the checkpoint keeps attention, router, embedding and head in bf16)."""
    block_scaled: bool = False
    """FP8 with 128 x 128 block scales, multiplied by vLLM's block-scaled FP8 GEMMs (each with a
    fixed time of its own on Hopper, `GpuProfile.block_fp8_gemm_s`)."""


MXFP4_MARLIN_READ_SHARE = 0.845
"""The share of `eta_bw` Marlin's MoE kernels read MXFP4 experts at (vLLM runs them so off compute
capability 9.0-10.x: mxfp4.py's get_mxfp4_backend). vLLM PR 27523: gpt-oss-120b's offline latency
on an H100 through Marlin, 1.17 s, where six kernels with the experts at `eta_bw` give 1.046 s; the
excess, 0.97 ms on each of 128 steps against 5.1 ms of expert reads, is this share (1.165-1.175 s:
0.839-0.849). Checked on GPUStack's A100 runs; AWQ and GPTQ experts on Marlin keep `eta_bw` (not
measured). docs/accuracy.md, Mixtures of experts."""

# 4-bit group-quantized formats keep one fp16 scale and one 4-bit zero point per 128 weights:
# 0.5 + 2.5 / 128 bytes a weight. bitsandbytes' NF4 with double quantization: about 4.13 bits.
_INT4_GROUP128 = 0.5 + 2.5 / 128
WEIGHT_FORMATS: Mapping[str, WeightFormat] = MappingProxyType({
    "fp8": WeightFormat(1.0, True),
    "fbgemm_fp8": WeightFormat(1.0, True),
    "modelopt": WeightFormat(1.0, True),
    "ptpc_fp8": WeightFormat(1.0, True),
    # vLLM 0.33's online shorthands: bf16 checkpoints quantized to fp8 at load (scales per tensor,
    # output channel or 128x128 block: a negligible share of the bytes).
    "fp8_per_tensor": WeightFormat(1.0, True),
    "fp8_per_channel": WeightFormat(1.0, True),
    "fp8_per_block": WeightFormat(1.0, True, block_scaled=True),
    "awq": WeightFormat(_INT4_GROUP128, False),
    "awq_marlin": WeightFormat(_INT4_GROUP128, False),
    "gptq": WeightFormat(_INT4_GROUP128, False),
    "gptq_marlin": WeightFormat(_INT4_GROUP128, False),
    "auto_awq": WeightFormat(_INT4_GROUP128, False),  # vLLM 0.33's names for the same checkpoints
    "auto_gptq": WeightFormat(_INT4_GROUP128, False),
    "bitsandbytes": WeightFormat(4.13 / 8, False),
    # OCP Microscaling MXFP4 (gpt-oss): 4-bit E2M1 values and one 8-bit E8M0 scale per 32, 4.25 bits a
    # weight (OCP MX spec v1.0; the gpt-oss model card: "MXFP4 ... 4.25 bits per parameter"). vLLM 0.33
    # runs its MoE with bf16 activations on Hopper (Marlin or triton matmul_ogs kernels): weight-only.
    # On compute capability 9.0 to 10.x (where triton_kernels run: vLLM's mxfp4.py) vLLM runs gpt-oss's
    # experts through OpenAI's triton_kernels: routing metadata in a chain of 14 kernels at small
    # batches (sort, histogram, gather and scatter indices, prefix sums, block schedule: vLLM PR 39714,
    # measured on gpt-oss-120b at TP 2 on H100s with vLLM 0.20.1, which fused it into 2 and was not
    # merged), then the top-k, the two matmul_ogs GEMMs and the output's reduction: 18 kernels a
    # layer against the fused-MoE path's 6 (Marlin, on Ampere, runs that path's shape). Those GEMMs
    # read the MXFP4 experts at about 54 % of the HBM's peak: Triton PR 10047 benchmarked
    # triton_kernels' matmul (what vLLM calls matmul_ogs) on gpt-oss-120b's first expert GEMM (2880 x
    # 5760, 128 experts) at 128 to 512 tokens and measured 48-58 % of a B200's 8 TB/s, 54 % at the
    # median of its two tables (FP8 activations there, bf16 in vLLM on Hopper; no Hopper figure is
    # published), against the 80 % a weight-streaming GEMM reaches (`eta_bw`): a share of 0.54 / 0.80.
    "mxfp4": WeightFormat(4.25 / 8, False, moe_kernels=18, moe_kernel_capability=(9.0, 11.0),
                          moe_read_share=0.54 / 0.80, marlin_read_share=MXFP4_MARLIN_READ_SHARE,
                          experts_only=True),
    # NVIDIA's NVFP4 (ModelOpt checkpoints, vLLM's modelopt_fp4): E2M1 values and one FP8 E4M3 scale
    # per 16, 4.5 bits a weight (NVIDIA's "Introducing NVFP4" blog, 2025); W4A4 on Blackwell's fp4
    # tensor cores, weight-only (Marlin) elsewhere.
    "modelopt_fp4": WeightFormat(4.5 / 8, False, fp4_compute=True),
})
# Weight-only formats (W4A16 AWQ and GPTQ; fp8 weights on GPUs without fp8 tensor cores) dequantize
# the weights inside the GEMM, so once compute-bound they run below the bf16 peak. vLLM 0.33 picks the
# first kernel that can run them (vllm/model_executor/kernels/linear/__init__.py: CUTLASS W4A8, then
# Machete, then Marlin): Machete only on compute capability 9.0, Marlin elsewhere. Marlin: close to the
# ideal 3.87x over fp16 up to batch 16-32, gradually less up to 64-128 (IST-DASLab/marlin's README and
# the MARLIN paper, arXiv 2408.11743, which finds batch-1024 prefill still about 10% slower than fp16).
# Machete (vLLM PR #7174: mma-based Marlin reaches at best ~75% of the peak on Hopper, so Machete uses
# wgmma) matches fp16's compute-bound speed (Neural Magic's announcement). Below the ridge the weights'
# bytes bind and the share changes nothing: 4-bit still wins at small batches.
MIXED_INPUT_SHARES: Mapping[str, float] = MappingProxyType({"machete": 1.0, "marlin": 0.9})
# Without CUDA graphs (--enforce-eager: no torch.compile, no graphs, as vLLM 0.33 sets it) the host
# launches every kernel of every layer itself while the GPU runs the ones already launched: the
# forward pass takes the longer of the GPU's work and the host's launches (the GPU idles between
# kernels only when the host falls behind: vLLM-Ascend's graph-mode design note draws it as
# host-bound launching; a vLLM CUDA-graph PR (#1440) saw the gain "only at lower batch size").
# The launches do not grow with the batch: one launch a kernel, whatever its size. Measured: a
# Llama 3.1 8B decode step at batch 1 on an H100 SXM takes 8.4 ms eager against 5.1 ms with CUDA
# graphs (https://cloudai.pt/cuda-graphs-torch-compile-1-65x-llm-decode-speedup/), launch-bound:
# 8.4 ms of launches over 32 layers, about 262 us a layer. Larger batches hide them under the GPU's work.
EAGER_LAUNCH_S_PER_LAYER = 8.4e-3 / 32
MAX_BLOCK_SIZE = 256
FUSED_MOE_KERNELS = 6
"""The kernels vLLM's Triton fused-MoE path runs in a mixture-of-experts layer (vllm/model_executor/
layers/fused_moe/fused_moe.py): the router's top-k (topk_softmax), sorting the tokens by expert
(moe_align_block_size), the gate-and-up GEMM, the activation, the down GEMM and the sum over each
token's experts (moe_sum). `GpuProfile.moe_layer_latency_s` is their fixed time, so each small
kernel costs a sixth of it (about 4 us on Hopper: `GpuProfile.small_kernel_s`); a format whose path
runs more kernels (`WeightFormat.moe_kernels`) pays that much for each."""
QK_NORM_KERNELS = 1
"""The small kernels each layer of a model whose attention normalises queries and keys per head
(`ModelProfile.qk_norm`: Qwen3's q_norm and k_norm, before the rotary embedding) runs beyond a Llama
layer in today's vLLM, each `GpuProfile.small_kernel_s` (`Deployment.qk_norm_s`). Inductor compiles
both norms and RoPE (custom ops are off under it). vLLM PR 26682 turns on Inductor's combo kernels
wherever torch is 2.9 or newer (`CompilationConfig.__post_init__`): Qwen3-0.6B's kernels after the
QKV projection went from 5 to 2, one for the q and k norms, one for their RoPE, which is all a Llama
layer runs there (one kernel of both shapes): 1 more (vLLM PR 38621, March 2026, the same; the fused
pass `enable_qk_norm_rope_fusion`, PR 27165, off by default in a 2026 build's config dump,
community-scripts/ProxmoxVED issue 2047). Builds before it (torch 2.8 and older: vLLM 0.11.0 and
earlier, issue 27228) ran 5 against Llama's RoPE in 2 (q and k head counts differ: vLLM issue 22293;
V1 runs RoPE through Inductor, issue 22453): 3 more, which their result files state
(`qk-norm-kernels`). Cross-check, not a fit: vLLM PR 27018 saved 3.75 us a kernel fusing the norms
and RoPE (H20). Sources and caveats: docs/accuracy.md, Qwen3-8B."""


@dataclass(frozen=True)
class KvLayout:
    """How the KV cache's blocks are counted, as vLLM 0.33's hybrid KV cache manager groups layers
    (vllm/v1/core/kv_cache_utils.py, `_get_kv_cache_groups_uniform_page_size`): a block is one
    group of `group_layers` layers' KV for block_size tokens. A model whose layers all attend to
    the whole context is one group of every layer: a request holds one block per block_size
    tokens. With sliding-window layers too (gpt-oss: 18 of 36), the layers of each kind are split
    into groups of the smaller kind's count (the larger's when it is under 1.5 times it), and a
    request holds its tokens' blocks in the full-attention group plus, in each of
    `window_groups` sliding groups, at most `window_blocks` (its window, cdiv(window - 1,
    block_size) + 1: SlidingWindowManager frees the blocks that fall out of it). Models whose
    full-attention layers would fill several groups, and those with no full-attention layer, are
    held as full attention (every token's blocks in every layer), as vLLM holds the first with the
    hybrid manager disabled; for the second (Mistral 7B v0.1) vLLM frees the blocks out of the
    window, which this leaves out. The blocks a request holds are counted by `sim.kv.blocks_for`."""

    group_layers: int
    window_groups: int = 0
    window_blocks: int = 0

    def token_capacity(self, blocks: int, block_size: int) -> int:
        """The most tokens one request can hold in `blocks` blocks."""
        g, w = self.window_groups, self.window_blocks
        if not g:
            return blocks * block_size
        return (blocks - g * w if blocks >= (1 + g) * w else blocks // (1 + g)) * block_size


@dataclass(frozen=True)
class GpuProfile:
    """One GPU type: its bandwidths, tensor-core peak, memory, and the efficiencies it reaches."""

    id: str
    name: str
    hbm_bandwidth: float
    """Memory bandwidth, bytes/s: HBM on most GPUs, GDDR6 on the L40S (the name is historical)."""
    bf16_peak_flops: float
    """Dense bf16 tensor-core peak, FLOP/s."""
    memory_bytes: float
    """Total memory as CUDA reports it (what vLLM sizes the KV cache from)."""
    interconnect_bandwidth: float
    """GPU-to-GPU bandwidth each way, bytes/s (NVLink, or PCIe)."""
    eta_bw: float = 0.80
    """Share of HBM bandwidth that weight-streaming GEMMs achieve."""
    eta_mfu: float = 0.68
    """Share of tensor-core peak that large GEMMs and prefill attention achieve."""
    eta_attn: float = 0.85
    """Share of HBM bandwidth that decode attention achieves reading the KV cache."""
    overhead_s: float = 0.00002
    """Fixed cost of every iteration: kernel launches, sampling, scheduling."""
    overhead_per_seq_s: float = 0.00005
    """The engine core's host cost of every iteration for each sequence in it (scheduling,
    preparing its inputs, sampling, sending its output to the API server): 50 us by default
    (sources in sim/data/profiles.toml), hidden behind the forward pass with async scheduling;
    fitted by `batchtui calibrate`. The API server's work is apart (`frontend_*`)."""
    frontend_request_s: float = 0.0005
    """The API server's own work for each request (read and check it, render the chat template,
    hand it to the engine core, close its stream): `sim.frontend`."""
    frontend_prompt_token_s: float = 0.000002
    """The API server's time to tokenize one prompt token."""
    frontend_output_token_s: float = 0.00005
    """The API server's time to detokenize one output token and stream it to its client."""
    allreduce_latency_s: float = 0.000005
    """Fixed cost of one tensor-parallel all-reduce, on top of its transfer time."""
    moe_layer_latency_s: float = 0.000025
    """Fixed cost of one mixture-of-experts layer's expert kernels on vLLM's Triton fused-MoE path
    (routing, sorting tokens by expert, the grouped GEMMs, combining: FUSED_MOE_KERNELS kernels),
    on top of their weights read and compute (sources in sim/data/profiles.toml); a format with a
    path of more kernels pays in proportion (`Deployment.moe_kernels`)."""
    moe_tile_overhead_k: float = 0.0
    """A fused-MoE GEMM tile's fixed part, in elements of its reduction (`sim.cost.expert_compute_share`)."""
    block_fp8_gemm_s: float = 0.0
    """Fixed time of one block-scaled FP8 GEMM of the linear layers, beyond reading and multiplying
    its weights (sources in sim/data/profiles.toml); 0 where no benchmark gives it."""
    nvidia_smi_names: tuple[str, ...] = ()
    """The names `nvidia-smi --query-gpu=name` prints for this GPU (what `--gpu auto` matches)."""
    aliases: tuple[str, ...] = ()
    """Other names `--gpu` takes for it: a vendor's plain name where one form of the GPU is the
    usual one (sim/data/profiles.toml says why)."""
    fp8_peak_flops: float = 0.0
    """Dense fp8 tensor-core peak, FLOP/s; 0 where the GPU has no fp8 tensor cores (Ampere)."""
    fp4_peak_flops: float = 0.0
    """Dense fp4 tensor-core peak, FLOP/s; 0 where the GPU has none (before Blackwell)."""
    compute_capability: float = 0.0
    """CUDA compute capability (8.0 A100, 8.9 Ada, 9.0 Hopper, 10.0 data-centre Blackwell; 0:
    unknown): which kernels vLLM picks (`mixed_input_compute_share`) and its CUDA graph ceiling."""
    price_per_hour: float | None = None
    """USD per GPU-hour, on demand (what `batchtui search` costs a deployment at); None: unknown."""

    @property
    def small_kernel_s(self) -> float:
        """The fixed time of one small kernel of a forward pass (a few kilobytes at decode sizes, so
        its launch and tail, not its bytes): a sixth of `moe_layer_latency_s`, whose six fused-MoE
        kernels (FUSED_MOE_KERNELS) measured it; about 4 us on Hopper, 7.5 us on the A100s."""
        return self.moe_layer_latency_s / FUSED_MOE_KERNELS

    @property
    def cudagraph_ceiling(self) -> int:
        """vLLM 0.33's default ceiling on CUDA graph capture sizes, in tokens: 1024 on data-centre
        Blackwell (compute capability 10.x), else 512 (vllm/config/vllm.py, `_set_cudagraph_sizes`)."""
        return 1024 if 10 <= self.compute_capability < 11 else 512

    @property
    def mixed_input_compute_share(self) -> float:
        """Share of the bf16 tensor-core peak that weight-only formats (4-bit AWQ and GPTQ, fp8
        without fp8 tensor cores) reach once compute-bound: their GEMMs dequantize the weights on
        the fly. vLLM 0.33 runs them with Machete on Hopper (compute capability 9.0), which matches
        fp16's compute-bound speed, else with Marlin, about 10% slower than fp16 at large batch
        (MIXED_INPUT_SHARES, sources there)."""
        return MIXED_INPUT_SHARES["machete" if self.compute_capability == 9.0 else "marlin"]


@dataclass(frozen=True)
class ModelProfile:
    """One model's shape. Efficiencies left as None fall back to the GPU's."""

    id: str
    name: str
    kind: str
    """"decoder" (generates tokens, keeps a KV cache) or "encoder" (one pass, no KV cache)."""
    params: float
    layers: int
    kv_heads: int
    q_heads: int
    head_dim: int
    hidden: int
    max_model_len: int
    bytes_per_param: float = 2.0
    input_len: int | None = None
    """Fixed input length of an encoder request; None for decoders."""
    hf_id: str = ""
    """The model's Hugging Face id, for the `vllm serve` line a plan prints."""
    eta_bw: float | None = None
    eta_mfu: float | None = None
    eta_attn: float | None = None
    overhead_s: float | None = None
    overhead_per_seq_s: float | None = None
    frontend_request_s: float | None = None
    frontend_prompt_token_s: float | None = None
    frontend_output_token_s: float | None = None
    vocab_size: int = 0
    """Tokens in the vocabulary (0: unknown, every parameter counted as a linear layer's)."""
    tie_word_embeddings: bool = False
    """The output head shares the embedding's weights."""
    intermediate_size: int = 0
    """The MLP's inner size (0: unknown; a profile from a config.json has it)."""
    aliases: tuple[str, ...] = ()
    """Other Hugging Face ids of the same shape (the base model, older names)."""
    mtp_layers: int = 0
    """Multi-token-prediction layers shipped beside the model (config.json's num_nextn_predict_layers):
    what `--speculative-config`'s method mtp drafts with (0: none)."""
    description: str = ""
    """One line on what the model is, for lists of models (`ProfileSet.catalog`)."""
    expert_count: int = 0
    """Mixture of experts: routed experts in each MoE layer (0: a dense model)."""
    expert_top_k: int = 0
    """The router's top-k: routed experts each token goes to."""
    expert_params: float = 0.0
    """One routed expert's parameters, added over every MoE layer (all experts: expert_count x this);
    the rest of `params` (attention, dense layers, shared experts, routers, embedding) is read for
    every iteration."""
    expert_layers: int = 0
    kv_latent_dim: int = 0
    """Multi-head latent attention (DeepSeek): values cached a token a layer, the compressed KV and
    the RoPE key, shared by every head, so each tensor-parallel GPU holds all of it (0: K and V of
    kv_heads heads of head_dim)."""
    attn_qk_dim: int = 0
    """Query/key width of a head in prefill attention (MLA's nope + rope dims); 0: head_dim."""
    attn_v_dim: int = 0
    """Value width of a head in prefill attention; 0: head_dim."""
    window_tokens: int = 0
    """Tokens a sliding-window layer attends to (0: none)."""
    window_layers: int = 0
    """Layers that attend only within `window_tokens` (gpt-oss: every other one)."""
    quantization: str | None = None
    """The checkpoint's own weight format (a WEIGHT_FORMATS key, from its quantization_config):
    used unless `--quantization` names the same; None: bf16 weights."""
    replicated_params: float = 0.0
    """Parameters every tensor-parallel GPU holds whole (MLA's down-projections); the rest split."""
    fp8_block_scales: bool = False
    """The checkpoint's fp8 weights carry block scales (its quantization_config's weight_block_size):
    vLLM multiplies them with block-scaled FP8 GEMMs (`Deployment.block_fp8_gemms_s`)."""
    linear_gemms: int = 0
    """GEMMs a forward pass runs through the linear layers outside the routed experts, router and
    output head (`sim.hf_config.ModelShape.linear_gemms`); 0: four a layer, a dense model's."""
    qk_norm: bool = False
    """Its attention normalises queries and keys per head (an RMSNorm over each head, before the
    rotary embedding: Qwen3's q_norm and k_norm, and the others of `sim.hf_config.QK_NORM_MODEL_TYPES`),
    which vLLM runs as small kernels of their own (`Deployment.qk_norm_s`)."""

    @property
    def gemms_per_pass(self) -> int:
        """`linear_gemms`, or four a layer where it is not given."""
        return self.linear_gemms or 4 * self.layers

    @property
    def embedding_params(self) -> float:
        """Parameters outside the linear layers that quantization leaves in bf16: the embedding,
        and the output head unless tied (0 when the vocabulary is unknown)."""
        return float(self.vocab_size * self.hidden * (1 if self.tie_word_embeddings else 2))

    @property
    def has_kv_cache(self) -> bool:
        return self.kind == "decoder"


# --------------------------------------------------------------------------------------------
# Reading and checking profile files
# --------------------------------------------------------------------------------------------


class _BadValue(Exception):
    """A value that does not fit its key; the message completes "<key> = <value> ...": why."""


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _BadValue("it must be a non-empty string")
    return value


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _BadValue("it must be a number")
    if not math.isfinite(value):
        raise _BadValue("it must be a finite number")
    return float(value)


def _positive(value: Any) -> float:
    number = _number(value)
    if number <= 0:
        raise _BadValue("it must be a positive number")
    return number


def _non_negative(value: Any) -> float:
    number = _number(value)
    if number < 0:
        raise _BadValue("it must be zero or a positive number")
    return number


def _positive_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _BadValue("it must be a whole number")
    if value <= 0:
        raise _BadValue("it must be a positive whole number")
    return value


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _BadValue("it must be a whole number >= 0")
    return value


def _format(value: Any) -> str:
    if value not in WEIGHT_FORMATS:
        raise _BadValue(f"it must be one of {', '.join(WEIGHT_FORMATS)}")
    return value


def _efficiency(value: Any) -> float:
    number = _number(value)
    if not 0 < number <= 1:
        raise _BadValue("an efficiency must be in (0, 1]")
    return number


def _names(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise _BadValue("it must be a list of non-empty strings")
    return tuple(value)


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _BadValue("it must be true or false")
    return value


def _any(value: Any) -> Any:
    return value  # a config.json field: checked with the rest of the config (`sim.hf_config.shape`)


def _model_kind(value: Any) -> str:
    if value not in MODEL_KINDS:
        raise _BadValue(f"kind must be one of {', '.join(repr(k) for k in MODEL_KINDS)}")
    return value


_Checker = Callable[[Any], Any]

_EFFICIENCY_KEYS: dict[str, _Checker] = {
    "eta_bw": _efficiency,
    "eta_mfu": _efficiency,
    "eta_attn": _efficiency,
    "overhead_s": _non_negative,
    "overhead_per_seq_s": _non_negative,
    "frontend_request_s": _non_negative,
    "frontend_prompt_token_s": _non_negative,
    "frontend_output_token_s": _non_negative,
}
_DEFAULTS_KEYS: dict[str, _Checker] = {**_EFFICIENCY_KEYS, "allreduce_latency_s": _non_negative,
                                        "moe_layer_latency_s": _non_negative, "moe_tile_overhead_k": _non_negative,
                                        "block_fp8_gemm_s": _non_negative}
_GPU_KEYS: dict[str, _Checker] = {
    "name": _text,
    "hbm_bandwidth": _positive,
    "bf16_peak_flops": _positive,
    "memory_bytes": _positive,
    "interconnect_bandwidth": _positive,
    "fp8_peak_flops": _non_negative,
    "fp4_peak_flops": _non_negative,
    "compute_capability": _positive,
    "nvidia_smi_names": _names,
    "aliases": _names,
    "price_per_hour": _positive,
    **_DEFAULTS_KEYS,
}
_MODEL_KEYS: dict[str, _Checker] = {
    "name": _text,
    "kind": _model_kind,
    "params": _positive,
    "layers": _positive_int,
    "kv_heads": _positive_int,
    "q_heads": _positive_int,
    "head_dim": _positive_int,
    "hidden": _positive_int,
    "max_model_len": _positive_int,
    "bytes_per_param": _positive,
    "input_len": _positive_int,
    "hf_id": _text,
    "vocab_size": _positive_int,
    "tie_word_embeddings": _bool,
    "intermediate_size": _positive_int,
    "aliases": _names,
    "mtp_layers": _count,
    "description": _text,
    "expert_count": _count,
    "expert_top_k": _count,
    "expert_params": _non_negative,
    "expert_layers": _count,
    "kv_latent_dim": _count,
    "attn_qk_dim": _count,
    "attn_v_dim": _count,
    "window_tokens": _count,
    "window_layers": _count,
    "quantization": _format,
    "fp8_block_scales": _bool,
    "linear_gemms": _count,
    "qk_norm": _bool,
    "replicated_params": _non_negative,
    # The model's Hugging Face config.json, a file beside the profile file (a path relative to it).
    "hf_config": _text,
    **_EFFICIENCY_KEYS,
    # A model table may instead spell the model as its Hugging Face config.json does.
    **{key: _any for key in (*hf_config.CONFIG_ONLY, "head_dim")},
}
_GPU_REQUIRED = ("name", "hbm_bandwidth", "bf16_peak_flops", "memory_bytes",
                 "interconnect_bandwidth")
_MODEL_REQUIRED = ("name", "kind", "params", "layers", "kv_heads", "q_heads", "head_dim",
                   "hidden", "max_model_len")
_SECTIONS = {"gpus": _GPU_KEYS, "models": _MODEL_KEYS}


@dataclass
class _RawProfiles:
    """Checked key/value tables before they become profiles, so a later file can override
    single keys of an earlier one. `origin` remembers which file last touched each profile, so
    an error found only once the tables are merged still names a file."""

    defaults: dict[str, Any] = dataclasses.field(default_factory=dict)
    gpus: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    models: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    origin: dict[tuple[str, str], str] = dataclasses.field(default_factory=dict)

    def merge(self, other: _RawProfiles) -> _RawProfiles:
        merged = _RawProfiles(dict(self.defaults), {}, {}, dict(self.origin))
        merged.defaults.update(other.defaults)
        for section in ("gpus", "models"):
            mine, theirs = getattr(self, section), getattr(other, section)
            target = getattr(merged, section)
            for profile_id in [*mine, *(i for i in theirs if i not in mine)]:
                target[profile_id] = {**mine.get(profile_id, {}), **theirs.get(profile_id, {})}
        merged.origin.update(other.origin)
        return merged


def _syntax_error_line(error: tomllib.TOMLDecodeError) -> int | None:
    # Python 3.14 gives the line as an attribute; earlier versions only put it in the message.
    line = getattr(error, "lineno", None)
    if line is None:
        match = re.search(r"at line (\d+)", str(error))
        line = int(match.group(1)) if match else None
    return line


def _read_document(text: str, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise ProfileError(f"{source}: the profile file is nested too deeply.") from None
    except tomllib.TOMLDecodeError as error:
        line = _syntax_error_line(error)
        where = f"{source}:{line}" if line is not None else source
        raise ProfileError(f"{where}: the profile file is not valid TOML: {error}.") from None


def _check_document(document: Mapping[str, Any], source: str, base: Path) -> _RawProfiles:
    """The checked tables of a profile file; `base`: its folder, which a model's `hf_config` path is
    relative to."""
    raw = _RawProfiles()
    for top_key, value in document.items():
        if top_key == "defaults":
            raw.defaults = _check_table(value, "[defaults]", _DEFAULTS_KEYS, source)
        elif top_key in _SECTIONS:
            if not isinstance(value, dict):
                raise ProfileError(
                    f"{source}: {top_key} must be a set of tables such as [{top_key}.<id>]."
                )
            for profile_id, table in value.items():
                label = f"[{top_key}.{profile_id}]"
                checked = _check_table(table, label, _SECTIONS[top_key], source)
                if "hf_config" in checked:
                    checked["hf_config"] = str(base / checked["hf_config"])
                getattr(raw, top_key)[profile_id] = checked
                raw.origin[(top_key, profile_id)] = source
        else:
            raise ProfileError(
                f"{source}: unknown table or key {top_key!r}; a profile file holds only "
                f"[defaults], [gpus.<id>] and [models.<id>] tables."
            )
    return raw


def _check_table(
    table: Any, label: str, checkers: Mapping[str, _Checker], source: str
) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise ProfileError(f"{source}: {label} must be a table of keys and values.")
    checked: dict[str, Any] = {}
    for key, value in table.items():
        if key not in checkers:
            hint = " (the table name is the id)" if key == "id" else ""
            if isinstance(value, dict) and "." in label:  # [models.llama-3.1-8b]: TOML split the id at its dots
                section, _, head = label.strip("[]").partition(".")
                hint = f' (an id with a dot in it is quoted: [{section}."{head}.{key}"])'
            raise ProfileError(
                f"{source}: {label} has an unknown key {key!r}{hint}; known keys are "
                f"{', '.join(checkers)}."
            )
        try:
            checked[key] = checkers[key](value)
        except _BadValue as why:
            raise ProfileError(f"{source}: {label} {key} = {value!r} is not allowed: {why}.")
    return checked


def _build_gpu(gpu_id: str, values: Mapping[str, Any], defaults: Mapping[str, Any],
               source: str) -> GpuProfile:
    missing = [key for key in _GPU_REQUIRED if key not in values]
    if missing:
        raise ProfileError(f"{source}: [gpus.{gpu_id}] is missing {', '.join(missing)}.")
    return GpuProfile(id=gpu_id, **{**defaults, **values})


def _build_model(model_id: str, values: Mapping[str, Any], source: str) -> ModelProfile:
    label = f"{source}: [models.{model_id}]"
    config_path = values.get("hf_config")
    own = [k for k in values if k in hf_config.CONFIG_ONLY]
    if own or config_path:
        # Spelled as a config.json (its file, and any of its fields in the table, which win).
        spelled = {k: v for k, v in values.items() if k in hf_config.CONFIG_ONLY or k in hf_config.FIELDS}
        config = {**(hf_config.read(config_path) if config_path else {}), **spelled}
        derived = hf_config.model_values(config, label)
        values = {**derived, **{k: v for k, v in values.items() if k not in spelled and k != "hf_config"}}
    if "aliases" in values:
        values = {**values, "aliases": tuple(values["aliases"])}
    missing = [key for key in _MODEL_REQUIRED if key not in values]
    if missing:
        raise ProfileError(f"{label} is missing {', '.join(missing)}.")
    model = ModelProfile(id=model_id, **values)
    if model.expert_count and not 0 < model.expert_top_k <= model.expert_count:
        raise ProfileError(f"{label} expert_top_k = {model.expert_top_k} must be from 1 to expert_count = "
                           f"{model.expert_count}.")
    if model.expert_count * model.expert_params > model.params:
        raise ProfileError(f"{label} expert_count x expert_params is more than params = {model.params:g}.")
    if model.window_layers > model.layers or (model.window_layers and not model.window_tokens):
        raise ProfileError(f"{label} window_layers = {model.window_layers} needs window_tokens and at most "
                           f"layers = {model.layers}.")
    if model.q_heads % model.kv_heads != 0:
        raise ProfileError(
            f"{label} q_heads = {model.q_heads} must be a multiple of "
            f"kv_heads = {model.kv_heads}."
        )
    if model.kind == "encoder":
        if model.input_len is None:
            raise ProfileError(f"{label} is an encoder and needs input_len.")
        if model.input_len > model.max_model_len:
            raise ProfileError(
                f"{label} input_len = {model.input_len} is longer than "
                f"max_model_len = {model.max_model_len}."
            )
    return model


def _build(raw: _RawProfiles) -> ProfileSet:
    gpus = {
        gpu_id: _build_gpu(gpu_id, values, raw.defaults, raw.origin[("gpus", gpu_id)])
        for gpu_id, values in raw.gpus.items()
    }
    models = {
        model_id: _build_model(model_id, values, raw.origin[("models", model_id)])
        for model_id, values in raw.models.items()
    }
    return ProfileSet(MappingProxyType(gpus), MappingProxyType(models))


def _builtin_raw() -> _RawProfiles:
    source = "sim/data/profiles.toml"
    # Beside this file (importlib.resources would cost the app's first frame a hundredth of a second).
    text = Path(__file__).with_name("data").joinpath("profiles.toml").read_text(encoding="utf-8")
    return _check_document(_read_document(text, source), source, Path(__file__).with_name("data"))


_BUILTIN_RAW = _builtin_raw()


# --------------------------------------------------------------------------------------------
# Profile sets
# --------------------------------------------------------------------------------------------


def folded(name: str) -> str:
    """A GPU name for matching: lower case, letters and digits only ("NVIDIA A100-SXM4-40GB" and
    "nvidia a100 sxm4 40gb" are the same GPU)."""
    return re.sub(r"[^0-9a-z]", "", name.lower())


@dataclass(frozen=True)
class ProfileSet:
    """Every GPU and model profile one run can choose from, by id."""

    gpus: Mapping[str, GpuProfile]
    models: Mapping[str, ModelProfile]

    def gpu(self, gpu_id: str = DEFAULT_GPU_ID) -> GpuProfile:
        try:
            return self.gpus[gpu_id]
        except KeyError:
            raise ProfileError(self.unknown_gpu(gpu_id)) from None

    def unknown_gpu(self, name: str) -> str:
        """Why `name` names no GPU profile, naming the choices: the profiles whose id or display
        name begins with it (a vendor's plain name for several forms, "a100"), else every one."""
        wanted = folded(name)
        begun = [gpu_id for gpu_id, gpu in self.gpus.items()
                 if wanted and any(folded(n).startswith(wanted) for n in (gpu_id, gpu.name))]
        if len(begun) > 1:
            return f"unknown GPU profile {name!r}: it could be {', '.join(begun[:-1])} or {begun[-1]}; name one."
        return f"unknown GPU profile {name!r}; known GPU profiles are {self.gpu_names()}."

    def gpu_names(self) -> str:
        """The GPU profiles' ids, each with its `aliases` ("h100-sxm (or h100), h100-pcie, ...")."""
        return ", ".join(f"{gpu_id} (or {', '.join(gpu.aliases)})" if gpu.aliases else gpu_id
                         for gpu_id, gpu in self.gpus.items())

    def model(self, model_id: str = DEFAULT_MODEL_ID) -> ModelProfile:
        try:
            return self.models[model_id]
        except KeyError:
            raise ProfileError(
                f"unknown model profile {model_id!r}; known model profiles are "
                f"{', '.join(self.models)}."
            ) from None

    def with_config_model(self, model_id: str, config: Mapping[str, Any], source: str) -> ProfileSet:
        """These profiles and one more model (or a replaced one): the model a Hugging Face
        config.json describes (`sim.hf_config`), named `model_id` (its Hugging Face id too when it
        looks like one)."""
        values = {**hf_config.model_values(config, source), "name": model_id}
        if "/" in model_id:
            values["hf_id"] = model_id
        model = _build_model(model_id, values, source)
        return ProfileSet(self.gpus, MappingProxyType({**self.models, model_id: model}))

    def with_host_costs(self, model_id: str, **costs: float | None) -> ProfileSet:
        """These profiles with `model_id`'s `overhead_s` and `overhead_per_seq_s` set where given
        (not None; checked as a scenario's): a run's own engine's host costs, winning over its GPU's."""
        model = dataclasses.replace(self.model(model_id), **{k: float(v) for k, v in costs.items() if v is not None})
        return ProfileSet(self.gpus, MappingProxyType({**self.models, model_id: model}))

    def catalog(self) -> list[tuple[str, str, str]]:
        """Every model as (id, Hugging Face id, one line on what it is), in profile order: what a
        model picker or a cheat sheet lists (`batchtui sim --model ID` takes either id)."""
        return [(m.id, m.hf_id, m.description or m.name) for m in self.models.values()]

    def deployment(
        self, gpu_id: str = DEFAULT_GPU_ID, model_id: str = DEFAULT_MODEL_ID, **dials: Any
    ) -> Deployment:
        """A validated deployment of `model_id` on `gpu_id`; `dials` are Deployment fields."""
        unknown = sorted(set(dials) - set(DEPLOYMENT_DIALS))
        if unknown:
            raise ConfigError(
                unknown[0], dials[unknown[0]],
                f"it is not a deployment dial; known dials are {', '.join(DEPLOYMENT_DIALS)}",
            )
        return Deployment(self.gpu(gpu_id), self.model(model_id), **dials)


def load_profiles(path: str | Path | None = None) -> ProfileSet:
    """The built-in profiles, extended or overridden by the TOML file at `path` if given.

    The file uses the built-in layout: [defaults] efficiencies, [gpus.<id>] and [models.<id>]
    tables. A table for a built-in id overrides only the keys it sets.
    """
    if path is None:
        return BUILTIN_PROFILES  # (immutable: frozen profiles in read-only mappings)
    source = str(path)
    from .userfiles import FileRefused, read_text

    try:
        text = read_text(path, "profiles")
    except FileRefused as error:
        raise ProfileError(f"{error}.") from None
    user = _check_document(_read_document(text, source), source, Path(path).parent)
    return _build(_BUILTIN_RAW.merge(user))


BUILTIN_PROFILES = _build(_BUILTIN_RAW)
BUILTIN_GPUS: Mapping[str, GpuProfile] = BUILTIN_PROFILES.gpus
BUILTIN_MODELS: Mapping[str, ModelProfile] = BUILTIN_PROFILES.models


# --------------------------------------------------------------------------------------------
# Deployments
# --------------------------------------------------------------------------------------------


_SIZE_UNITS = (("GB", 1e9), ("TB", 1e12), ("PB", 1e15), ("EB", 1e18))
"""Decimal units, as GPU makers state memory (an H100's 80 GB)."""


def _gb(num_bytes: float) -> str:
    """A size in a message: in GB to a tenth, in the next decimal unit from a thousand of one (1.5
    TB, not 1500.0 GB), and past a thousand of the largest in bytes with an exponent (1e+30 bytes:
    a size no GPU holds reads as its magnitude, not as twenty digits)."""
    for unit, scale in _SIZE_UNITS:
        if round(num_bytes / scale, 1) < 1000:
            return f"{num_bytes / scale:.1f} {unit}"
    return f"{num_bytes:.3g} bytes"


def _bytes(num_bytes: float) -> str:
    """GB when it is a tenth of one or more, else the bytes (a sum in GB of 0.0 explains nothing)."""
    return _gb(num_bytes) if num_bytes >= 0.1e9 else f"{num_bytes:,.0f} byte{'' if num_bytes == 1 else 's'}"


@dataclass(frozen=True)
class Deployment:
    """One model served on `tensor_parallel_size` GPUs of one type, with vLLM's memory dials.

    Per-GPU quantities are what one GPU holds or reads; with tensor parallelism weights, KV heads
    and FLOPs split evenly across the GPUs. Constructing one checks the dials (ConfigError) and
    that the model fits with room for a KV cache (ProfileError, suggesting a tensor-parallel
    size that would fit).
    """

    gpu: GpuProfile
    model: ModelProfile
    tensor_parallel_size: int = 1
    kv_cache_dtype: str = "auto"
    gpu_memory_utilization: float = 0.92
    block_size: int = 16
    num_gpu_blocks_override: int | None = None
    reserve_bytes: float = 3.4e9
    """Memory vLLM keeps outside weights and KV cache: activations, CUDA graphs, context."""
    quantization: str | None = None
    """`--quantization`: a key of WEIGHT_FORMATS, or None for the model's bf16 weights."""
    kv_cache_memory_bytes: float | None = None
    """`--kv-cache-memory-bytes`: the KV cache per GPU, instead of sizing it from memory."""
    enforce_eager: bool | None = None
    """`--enforce-eager`: no CUDA graphs, so the host launches every kernel of every forward pass
    (`eager_launch_s`), and no batch is padded to a graph's size."""
    draft: Any = None
    """Speculative decoding's drafter on the GPU (`sim.speculative.DraftShape`), or None: its
    weights and its KV (kept in the same blocks as the target's) take room from the KV cache, and
    `sim.cost` prices its passes."""
    enable_expert_parallel: bool | None = None
    """`--enable-expert-parallel`: a mixture of experts' routed experts placed whole on the GPUs
    (each holds expert_count / TP of them) instead of a slice of every one (`expert_parallel`)."""
    qk_norm_kernels: int | None = None
    """The small kernels each layer of a model with per-head query and key norms
    (`ModelProfile.qk_norm`) runs beyond a Llama layer in the vLLM build served (`qk_norm_s`);
    None: today's, QK_NORM_KERNELS (a result file of an older build states its own)."""

    def __post_init__(self) -> None:
        self._check_dials()
        self._check_fits()

    # -- model memory --------------------------------------------------------------------

    @property
    def weight_format_name(self) -> str | None:
        """The weight format in force: `--quantization`'s, else the checkpoint's own (None: bf16)."""
        return self.quantization or self.model.quantization

    @property
    def weight_format(self) -> WeightFormat | None:
        """The format of the linear layers other than the routed experts (None: the model's bf16)."""
        fmt = WEIGHT_FORMATS[self.weight_format_name] if self.weight_format_name else None
        return None if fmt is None or fmt.experts_only else fmt

    @property
    def expert_weight_format(self) -> WeightFormat | None:
        """The routed experts' format (None: the model's bf16)."""
        return WEIGHT_FORMATS[self.weight_format_name] if self.weight_format_name else None

    @property
    def weight_bytes(self) -> float:
        """All weights, across every GPU: quantized linear layers at their format's bytes (the
        routed experts at theirs), the embedding and output head at the model's own."""
        m, fmt, expert_fmt = self.model, self.weight_format, self.expert_weight_format
        if fmt is None and expert_fmt is None:
            return m.params * m.bytes_per_param
        other = min(m.embedding_params, m.params)
        linear = fmt.bytes_per_param if fmt is not None else m.bytes_per_param
        if not m.expert_count:
            return (m.params - other) * linear + other * m.bytes_per_param
        experts = m.expert_count * m.expert_params
        return (m.params - other - experts) * linear + self.routed_expert_bytes + other * m.bytes_per_param

    @property
    def expert_bytes(self) -> float:
        """One routed expert's weights in every MoE layer, across every GPU (0: a dense model)."""
        m, fmt = self.model, self.expert_weight_format
        return m.expert_params * (fmt.bytes_per_param if fmt is not None else m.bytes_per_param)

    @property
    def routed_expert_bytes(self) -> float:
        """Every routed expert's weights, across every GPU."""
        return self.model.expert_count * self.expert_bytes

    def _peak_for(self, fmt: WeightFormat | None) -> float:
        if fmt is None:
            return self.gpu.bf16_peak_flops
        if fmt.fp4_compute and self.gpu.fp4_peak_flops > 0:
            return self.gpu.fp4_peak_flops
        if fmt.fp8_compute and self.gpu.fp8_peak_flops > 0:
            return self.gpu.fp8_peak_flops
        return self.gpu.bf16_peak_flops * self.gpu.mixed_input_compute_share  # weight-only: dequantized in the GEMM

    @property
    def linear_peak_flops(self) -> float:
        """The tensor-core peak the linear layers run at: bf16's for bf16 weights, fp8's for a W8A8
        format on a GPU with fp8 tensor cores, fp4's for W4A4 on one with fp4 tensor cores, else
        (weight-only formats) bf16's times the share the GPU's mixed-input kernel reaches
        (`GpuProfile.mixed_input_compute_share`)."""
        return self._peak_for(self.weight_format)

    @property
    def expert_peak_flops(self) -> float:
        """The tensor-core peak the routed experts run at (as `linear_peak_flops`, in their format)."""
        return self._peak_for(self.expert_weight_format)

    @property
    def replicated_bytes(self) -> float:
        """The weights every GPU holds whole (`ModelProfile.replicated_params`, linear layers)."""
        fmt = self.weight_format
        return self.model.replicated_params * (fmt.bytes_per_param if fmt is not None else self.model.bytes_per_param)

    def weight_bytes_on(self, tensor_parallel_size: int) -> float:
        """One GPU's weights split that many ways: its share, and the replicated ones whole."""
        whole = self.replicated_bytes
        return (self.weight_bytes - whole) / tensor_parallel_size + whole

    @property
    def weight_bytes_per_gpu(self) -> float:
        return self.weight_bytes_on(self.tensor_parallel_size)

    @property
    def params_per_gpu(self) -> float:
        whole = self.model.replicated_params
        return (self.model.params - whole) / self.tensor_parallel_size + whole

    @property
    def expert_parallel(self) -> bool:
        """Experts placed whole on the GPUs (`--enable-expert-parallel`, a mixture of experts on
        several GPUs): EP = TP x DP, and one data-parallel rank is simulated, so EP = TP."""
        return bool(self.enable_expert_parallel) and self.model.expert_count > 0 and self.tensor_parallel_size > 1

    # -- KV cache per token and per block --------------------------------------------------

    @property
    def kv_dtype_bytes(self) -> int:
        return KV_CACHE_DTYPE_BYTES[self.kv_cache_dtype]

    @property
    def kv_heads_per_gpu(self) -> float:
        # With more GPUs than KV heads, vLLM replicates heads so each GPU still holds one.
        return max(1.0, self.model.kv_heads / self.tensor_parallel_size)

    def _layer_kv_bytes(self, tensor_parallel_size: int) -> float:
        """One layer's KV for one token on each GPU: K and V of its share of the KV heads, or
        MLA's latent, which every GPU holds whole (vLLM's MLA backends replicate it)."""
        m = self.model
        if m.kv_latent_dim:
            return m.kv_latent_dim * self.kv_dtype_bytes
        return 2 * max(1.0, m.kv_heads / tensor_parallel_size) * m.head_dim * self.kv_dtype_bytes

    @property
    def kv_bytes_per_token(self) -> int:
        """Every layer's KV for one token, across every GPU (a window's layers counted as full); 0 for
        encoders."""
        m = self.model
        if not m.has_kv_cache:
            return 0
        if m.kv_latent_dim:
            return m.layers * m.kv_latent_dim * self.kv_dtype_bytes
        return 2 * m.layers * m.kv_heads * m.head_dim * self.kv_dtype_bytes

    @property
    def kv_bytes_per_token_per_gpu(self) -> float:
        """Every layer's KV for one token on each GPU."""
        m = self.model
        if not m.has_kv_cache:
            return 0.0
        if m.kv_latent_dim:
            return m.layers * m.kv_latent_dim * self.kv_dtype_bytes
        return 2 * m.layers * self.kv_heads_per_gpu * m.head_dim * self.kv_dtype_bytes

    @property
    def full_kv_bytes_per_token_per_gpu(self) -> float:
        """The KV one context token costs to read on each GPU in the layers that attend to the whole
        context (every layer but the sliding-window ones)."""
        m = self.model
        if not m.window_layers:
            return self.kv_bytes_per_token_per_gpu
        return (m.layers - m.window_layers) * self._layer_kv_bytes(self.tensor_parallel_size)

    @property
    def window_kv_bytes_per_token_per_gpu(self) -> float:
        """The sliding-window layers' KV for one token on each GPU (0: no window)."""
        m = self.model
        return m.window_layers * self._layer_kv_bytes(self.tensor_parallel_size) if m.has_kv_cache else 0.0

    @property
    def kv_layout(self) -> KvLayout:
        """How vLLM 0.33's KV cache manager groups the layers into blocks (`KvLayout`)."""
        m = self.model
        full, sliding = m.layers - m.window_layers, m.window_layers
        if not sliding or not full or not m.has_kv_cache:
            return KvLayout(m.layers)
        small, large = min(full, sliding), max(full, sliding)
        group = large if large < 1.5 * small else small  # kv_cache_utils: the n:1 pattern's "1"
        if -(-full // group) != 1:
            return KvLayout(m.layers)  # full layers in several groups: held as full attention (see KvLayout)
        window_blocks = -(-(m.window_tokens - 1) // self.block_size) + 1
        return KvLayout(group, -(-sliding // group), window_blocks)

    @property
    def bytes_per_block(self) -> float:
        """Size of one KV-cache block on each GPU (the unit the cache is counted in): its group's
        layers' KV for `block_size` tokens, the drafter's KV for its tokens included."""
        return self._block_bytes(self.tensor_parallel_size)

    def _block_bytes(self, tensor_parallel_size: int) -> float:
        m = self.model
        layers = self.kv_layout.group_layers
        if layers == m.layers and not m.kv_latent_dim:  # (as it always was: every layer's K and V)
            kv_heads = max(1.0, m.kv_heads / tensor_parallel_size)
            block = 2 * m.layers * kv_heads * m.head_dim * self.kv_dtype_bytes * self.block_size
        else:
            block = layers * self._layer_kv_bytes(tensor_parallel_size) * self.block_size
        if self.draft is not None:  # (a block holds the drafter's KV for its tokens too)
            block += self.draft_kv_bytes_per_token_per_gpu * self.block_size
        return block

    @property
    def draft_weight_bytes_per_gpu(self) -> float:
        """The drafter's weights on each GPU (all of them at a draft tensor-parallel size of 1)."""
        d = self.draft
        return d.weight_bytes / d.tensor_parallel_size if d is not None else 0.0

    @property
    def draft_kv_bytes_per_token_per_gpu(self) -> float:
        d = self.draft
        return d.kv_bytes_per_token / d.tensor_parallel_size if d is not None else 0.0

    # -- KV cache size -----------------------------------------------------------------------

    @property
    def kv_memory_bytes_per_gpu(self) -> float:
        """Memory left for the KV cache on each GPU once weights and the reserve are placed (or
        --kv-cache-memory-bytes, when given)."""
        if self.kv_cache_memory_bytes is not None:
            return float(self.kv_cache_memory_bytes)
        return (self.gpu_memory_utilization * self.gpu.memory_bytes
                - self.weight_bytes_per_gpu - self.draft_weight_bytes_per_gpu - self.reserve_bytes)

    @property
    def num_gpu_blocks(self) -> int:
        """Blocks in the KV cache, including the one vLLM reserves; 0 for encoders."""
        if not self.model.has_kv_cache:
            return 0
        if self.num_gpu_blocks_override is not None:
            return self.num_gpu_blocks_override
        return self._blocks_with(self.tensor_parallel_size)

    @property
    def usable_blocks(self) -> int:
        """Blocks requests can hold: one block is reserved (vLLM's null block)."""
        return max(0, self.num_gpu_blocks - 1)

    @property
    def kv_cache_tokens(self) -> int:
        """The most tokens the cache holds for one request (with sliding windows, less each
        further request's window blocks: `KvLayout.token_capacity`)."""
        return self.kv_layout.token_capacity(self.usable_blocks, self.block_size)

    # -- efficiencies, the model's override winning over the GPU's ---------------------------

    @property
    def eta_bw(self) -> float:
        return self.model.eta_bw if self.model.eta_bw is not None else self.gpu.eta_bw

    @property
    def eta_mfu(self) -> float:
        return self.model.eta_mfu if self.model.eta_mfu is not None else self.gpu.eta_mfu

    @property
    def eta_attn(self) -> float:
        return self.model.eta_attn if self.model.eta_attn is not None else self.gpu.eta_attn

    @property
    def overhead_s(self) -> float:
        """The host's fixed cost of every iteration (scheduling, preparing inputs, sampling)."""
        return self.model.overhead_s if self.model.overhead_s is not None else self.gpu.overhead_s

    @property
    def eager_launch_s(self) -> float:
        """The host's time to launch one forward pass's kernels without CUDA graphs
        (EAGER_LAUNCH_S_PER_LAYER a layer); the forward pass takes at least this long under
        --enforce-eager (`sim.cost`)."""
        return EAGER_LAUNCH_S_PER_LAYER * self.model.layers

    @property
    def overhead_per_seq_s(self) -> float:
        m = self.model
        return m.overhead_per_seq_s if m.overhead_per_seq_s is not None else self.gpu.overhead_per_seq_s

    def _host(self, name: str) -> float:
        """A host cost: the model's own value wins over its GPU's."""
        own = getattr(self.model, name)
        return own if own is not None else getattr(self.gpu, name)

    @property
    def frontend_request_s(self) -> float:
        return self._host("frontend_request_s")

    @property
    def frontend_prompt_token_s(self) -> float:
        return self._host("frontend_prompt_token_s")

    @property
    def frontend_output_token_s(self) -> float:
        return self._host("frontend_output_token_s")

    @property
    def allreduce_latency_s(self) -> float:
        return self.gpu.allreduce_latency_s

    @property
    def block_fp8_gemms_s(self) -> float:
        """`GpuProfile.block_fp8_gemm_s` for each of the model's `gemms_per_pass` when its linear layers
        are FP8 with block scales (the checkpoint's, or fp8_per_block) on fp8 tensor cores; else 0."""
        fmt = self.weight_format
        if fmt is None or not fmt.fp8_compute or self.gpu.fp8_peak_flops <= 0:
            return 0.0
        m = self.model
        scaled = fmt.block_scaled or (m.fp8_block_scales and self.weight_format_name == m.quantization)
        return self.model.gemms_per_pass * self.gpu.block_fp8_gemm_s if scaled else 0.0

    @property
    def moe_latency_s(self) -> float:
        """The fixed cost of an iteration's mixture-of-experts layers (0 for a dense model): each
        layer's `moe_kernels` small kernels (`GpuProfile.small_kernel_s`)."""
        if not self.model.expert_count:
            return 0.0
        return self.model.expert_layers * self.gpu.small_kernel_s * self.moe_kernels

    @property
    def qk_norm_s(self) -> float:
        """The fixed cost of an iteration's per-head query and key norms (`ModelProfile.qk_norm`; 0
        for a model without them): `qk_norm_time` of every layer."""
        return self.qk_norm_time(self.model.layers) if self.model.qk_norm else 0.0

    def qk_norm_time(self, layers: int) -> float:
        """The fixed cost of per-head query and key norms in `layers` layers of one forward pass
        (the target's, `qk_norm_s`, or a speculative drafter's, `sim.speculative.DraftShape`): each
        layer's `qk_norm_kernels` (QK_NORM_KERNELS unless given) small kernels
        (`GpuProfile.small_kernel_s`)."""
        kernels = QK_NORM_KERNELS if self.qk_norm_kernels is None else self.qk_norm_kernels
        return layers * kernels * self.gpu.small_kernel_s

    def _own_moe_path(self) -> WeightFormat | None:
        """The experts' format where vLLM runs it on a MoE kernel path of its own on this GPU
        (`WeightFormat.moe_kernel_capability`), else None (the Triton fused-MoE path)."""
        fmt = self.expert_weight_format
        if fmt is not None and fmt.moe_kernels:
            low, high = fmt.moe_kernel_capability
            if low <= self.gpu.compute_capability < high:
                return fmt
        return None

    @property
    def moe_kernels(self) -> int:
        """The kernels each mixture-of-experts layer runs: its experts' format's own path where it
        has one on this GPU (`WeightFormat.moe_kernels`), else the Triton fused-MoE path's."""
        own = self._own_moe_path()
        return own.moe_kernels if own is not None else FUSED_MOE_KERNELS

    @property
    def moe_read_share(self) -> float:
        """The share of `eta_bw` the routed experts are read at: their format's own MoE path's
        (`WeightFormat.moe_read_share`) where it runs on this GPU, else their format's on Marlin
        (`WeightFormat.marlin_read_share`; 1 for bf16 experts and formats not measured)."""
        own, fmt = self._own_moe_path(), self.expert_weight_format
        return own.moe_read_share if own is not None else fmt.marlin_read_share if fmt is not None else 1.0

    # -- checks ------------------------------------------------------------------------------

    def _blocks_with(self, tensor_parallel_size: int) -> int:
        """KV-cache blocks (floor, as vLLM divides) if the model were split over that many GPUs."""
        weights = self.weight_bytes_on(tensor_parallel_size) + self.draft_weight_bytes_per_gpu
        free = self.gpu_memory_utilization * self.gpu.memory_bytes - weights - self.reserve_bytes
        if self.kv_cache_memory_bytes is not None:
            free = self.kv_cache_memory_bytes
        return max(0, math.floor(free / self._block_bytes(tensor_parallel_size)))

    def _heads_split(self, tensor_parallel_size: int) -> bool:
        m = self.model
        kv_ok = (m.kv_heads % tensor_parallel_size == 0
                 or tensor_parallel_size % m.kv_heads == 0)
        return m.q_heads % tensor_parallel_size == 0 and kv_ok

    def _weights_fit(self, tensor_parallel_size: int) -> bool:
        weights = self.weight_bytes_on(tensor_parallel_size) + self.draft_weight_bytes_per_gpu
        room = self.gpu_memory_utilization * self.gpu.memory_bytes - self.reserve_bytes
        if self.kv_cache_memory_bytes is not None:  # vLLM then places weights, reserve and cache in all of it
            room = self.gpu.memory_bytes - self.reserve_bytes - self.kv_cache_memory_bytes
        return weights < room

    def _fits(self, tensor_parallel_size: int) -> bool:
        if not self._weights_fit(tensor_parallel_size):
            return False
        if not self.model.has_kv_cache or self.num_gpu_blocks_override is not None:
            return True
        # The reserved null block plus at least one block a request can hold.
        return self._blocks_with(tensor_parallel_size) >= 2

    def _check_dials(self) -> None:
        tp = self.tensor_parallel_size
        if isinstance(tp, bool) or tp not in TENSOR_PARALLEL_SIZES:
            raise ConfigError("tensor_parallel_size", tp,
                              f"one of {', '.join(map(str, TENSOR_PARALLEL_SIZES))}")
        if not self._heads_split(tp):
            raise ConfigError(
                "tensor_parallel_size", tp, "a size that splits the model's heads evenly",
                f"{self.model.name} has {self.model.q_heads} query heads and "
                f"{self.model.kv_heads} KV heads",
            )
        if self.kv_cache_dtype not in KV_CACHE_DTYPE_BYTES:
            raise ConfigError("kv_cache_dtype", self.kv_cache_dtype,
                              f"one of {', '.join(KV_CACHE_DTYPE_BYTES)}")
        util = self.gpu_memory_utilization
        if (isinstance(util, bool) or not isinstance(util, (int, float))
                or not 0 < util <= 1):
            raise ConfigError("gpu_memory_utilization", util, "a fraction in (0, 1]")
        bs = self.block_size
        if (isinstance(bs, bool) or not isinstance(bs, int) or not 1 <= bs <= MAX_BLOCK_SIZE
                or bs & (bs - 1)):
            raise ConfigError("block_size", bs,
                              f"a power of two from 1 to {MAX_BLOCK_SIZE} (usually 16)")
        override = self.num_gpu_blocks_override
        if override is not None and (isinstance(override, bool) or not isinstance(override, int)
                                     or override < 2):
            raise ConfigError("num_gpu_blocks_override", override,
                              "unset, or a whole number of at least 2 (one block is reserved)")
        if self.quantization is not None and self.quantization not in WEIGHT_FORMATS:
            raise ConfigError("quantization", self.quantization,
                              f"one of {', '.join(WEIGHT_FORMATS)} (a weight format the simulator prices; others "
                              "are not modelled)")
        own = self.model.quantization
        if self.quantization is not None and own is not None and self.quantization != own:
            # vLLM: "Quantization method specified in the model config (...) does not match the
            # quantization method specified in the `quantization` argument (...)".
            raise ConfigError("quantization", self.quantization, f"{own} (the checkpoint's own) or unset",
                              f"{self.model.name}'s config.json gives its weights in {own}")
        kernels = self.qk_norm_kernels
        if kernels is not None and (isinstance(kernels, bool) or not isinstance(kernels, int) or kernels < 0):
            raise ConfigError("qk_norm_kernels", kernels, "unset, or a whole number of kernels >= 0")
        kv = self.kv_cache_memory_bytes
        if kv is not None and (isinstance(kv, bool) or not isinstance(kv, (int, float)) or not math.isfinite(kv)
                               or kv <= 0):
            raise ConfigError("kv_cache_memory_bytes", kv, "unset, or a number of bytes > 0")
        reserve = self.reserve_bytes
        if (isinstance(reserve, bool) or not isinstance(reserve, (int, float))
                or not math.isfinite(reserve) or reserve < 0):
            raise ConfigError("reserve_bytes", reserve, "zero or a positive number of bytes")

    def _check_fits(self) -> None:
        tp = self.tensor_parallel_size
        if self._fits(tp):
            return
        m, g = self.model, self.gpu
        on = f"one {g.name}" if tp == 1 else f"{tp} x {g.name}"
        left = self.kv_memory_bytes_per_gpu
        blocks_short = self._weights_fit(tp)  # there is room for all: the cache holds too few blocks
        if self.kv_cache_memory_bytes is not None and blocks_short:
            kv, block = self.kv_cache_memory_bytes, self.bytes_per_block
            why = (f"the KV cache {{kv_cache_memory_bytes}} asks for, {_bytes(kv)}, holds {self._blocks_with(tp)} "
                   f"block(s) of {self.block_size} tokens ({_bytes(block)} each per GPU), and vLLM needs at least 2 "
                   "(one is reserved)")
        elif self.kv_cache_memory_bytes is not None:
            why = (f"its weights ({_gb(self.weight_bytes_per_gpu)} per GPU), the {_gb(self.reserve_bytes)} reserve "
                   f"and the {_bytes(self.kv_cache_memory_bytes)} KV cache {{kv_cache_memory_bytes}} asks for need "
                   f"more than its {_gb(g.memory_bytes)}")
        elif left > 0:
            why = (f"after its weights ({_gb(self.weight_bytes_per_gpu)} per GPU) and the "
                   f"{_gb(self.reserve_bytes)} reserve, {{gpu_memory_utilization}} {self.gpu_memory_utilization:g} x "
                   f"{_gb(g.memory_bytes)} leaves {_gb(left)}, not enough for the KV cache")
        else:
            why = (f"its weights take {_gb(self.weight_bytes_per_gpu)} per GPU, but "
                   f"{{gpu_memory_utilization}} {self.gpu_memory_utilization:g} x {_gb(g.memory_bytes)} minus the "
                   f"{_gb(self.reserve_bytes)} reserve leaves only "
                   f"{_gb(self.gpu_memory_utilization * g.memory_bytes - self.reserve_bytes)}")
        larger = [n for n in TENSOR_PARALLEL_SIZES
                  if n > tp and self._heads_split(n) and self._fits(n)]
        # With {kv_cache_memory_bytes} given: the fewest GPUs whose weights and reserve leave room
        # for a cache of two blocks, and the room (less than it is what the dial may ask for).
        rooms = [(n, math.floor(g.memory_bytes - self.reserve_bytes - self.weight_bytes_on(n)
                                - self.draft_weight_bytes_per_gpu))
                 for n in TENSOR_PARALLEL_SIZES if n >= tp and (n == tp or self._heads_split(n))]
        roomy = [(n, room) for n, room in rooms if room > 2 * self.bytes_per_block]
        if self.kv_cache_memory_bytes is not None and blocks_short:
            fix = f"Give {{kv_cache_memory_bytes}} at least {2 * math.ceil(self.bytes_per_block):,} bytes."
        elif self.kv_cache_memory_bytes is not None and roomy:
            n, room = roomy[0]
            fix = f"Give {{kv_cache_memory_bytes}} less than {room:,} bytes ({_gb(room)})"
            if n != tp:
                fix += f" and set {{tensor_parallel_size}} to {n}"
            if larger and larger[0] != n:
                fix += f", or set {{tensor_parallel_size}} to {larger[0]}."
            else:  # (vLLM's --kv-cache-memory-bytes is each GPU's cache: more GPUs do not split it)
                fix += (f"; it is each GPU's cache, so no {{tensor_parallel_size}} holds the "
                        f"{_bytes(self.kv_cache_memory_bytes)} asked.")
        elif larger:
            fix = f"Set {{tensor_parallel_size}} to {larger[0]} to split it over {larger[0]} GPUs."
        else:
            fix = (f"It does not fit even with {{tensor_parallel_size}} at "
                   f"{TENSOR_PARALLEL_SIZES[-1]}; choose a GPU with more memory.")
        raise ProfileError(f"{m.name} does not fit on {on}: {why}. {fix}")


DEPLOYMENT_DIALS: tuple[str, ...] = tuple(
    f.name for f in dataclasses.fields(Deployment) if f.name not in ("gpu", "model")
)
