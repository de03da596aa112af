"""How long one engine iteration takes on a deployment (SIMULATOR.md section 2).

An iteration is one forward pass over one token per decoding sequence plus this step's prefill
chunks. Its time is a sum of per-operator-class rooflines, each on one GPU of the deployment:

- linear layers over all T tokens: weights streamed once (`t_mem`) against GEMM compute
  (`t_cmp`), joined smoothly as sqrt(t_mem^2 + t_cmp^2). A mixture of experts reads, besides its
  always-read weights (attention, dense layers, shared experts, routers, embedding), only the
  routed experts its T tokens go to (`ExpertReads`), at the share of the weight-read bandwidth
  their format's MoE kernels reach (`Deployment.moe_read_share`), and computes 2 FLOPs per
  active parameter per token (the router's top-k experts' parameters, not all of them), the
  experts' at the share of `eta_mfu` their kernels reach (`expert_compute_share`); plus fixed
  times: expert kernels', block-scaled FP8 GEMMs' and per-head query and key norms' small kernels
  (`moe_latency_s`, `block_fp8_gemms_s`, `qk_norm_s`);
- decode attention: every decoding sequence reads its whole KV cache (a sliding-window layer
  only its window);
- prefill attention: each chunk attends to its prefix and (causally) to itself (a sliding-window
  layer to at most its window);
- tensor-parallel all-reduces: two per layer, ring algorithm, when split over several GPUs;
- a host overhead per iteration: a fixed part (launches, scheduling) plus a part for each
  sequence in the iteration (sampling, detokenising, the API server's share), `host_overhead`.
- CUDA graphs (vLLM's default): an iteration of T tokens up to the largest capture size runs the
  graph captured for the next size up (`sim.config.cudagraph_capture_sizes`), so its linear layers
  and all-reduces work on the padded count; without graphs (`--enforce-eager`) nothing is padded,
  and the host launches each kernel itself while the GPU runs the ones launched: the forward pass
  takes the longer of the two (`Deployment.eager_launch_s`, sourced in sim/profiles.py).

The host's work and the GPU's are joined by one rule, `iteration_total`: one after the other
(synchronous scheduling), or overlapped (`overlap`, vLLM's async scheduling: the host schedules and
prepares step n+1 and processes step n's output while the GPU runs a forward pass), so that an
iteration costs the larger of the two, not their sum.

Conventions:

- `decode_context_tokens` is the sum, over decoding sequences, of the tokens whose keys and
  values attention reads this iteration: the sequence's computed tokens plus the one being
  processed. A request with a 512-token prompt decoding its 129th output token contributes 640.
- Times, FLOPs and bytes are for one GPU; with tensor parallelism every GPU does an equal share
  at the same time, so one GPU's time is the iteration's time.
- An iteration with no tokens runs nothing and costs 0 s (binding "idle").
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sim.profiles import EAGER_LAUNCH_S_PER_LAYER, Deployment
from sim.speculative import DRAFT_PASS_OVERHEAD_S
from sim.reports import IterationCostParts

ACTIVATION_BYTES = 2
"""Activations travel between GPUs in bf16."""
ALLREDUCES_PER_LAYER = 2
"""Megatron-style tensor parallelism: one after attention, one after the MLP."""

BINDINGS = ("weights", "compute", "kv_read", "prefill_attention", "allreduce", "overhead", "idle")
"""Every value `IterationCost.binding` can take."""
EXPERT_TABLE_MAX_TOKENS = 8192
"""Tokens up to which the experts an iteration reads are tabulated; a larger one reads as many as
this many (under uniform routing every expert is read well before, but for a router of 512+ experts
and top-1)."""


def fused_moe_compute_share(hidden: float, width: float, tile_overhead_k: float) -> float:
    """The share of `eta_mfu` the Triton fused-MoE kernel's two GEMMs reach on experts `width` wide
    (on one GPU) over a hidden size of `hidden`: each reducing over K (the gate-and-up GEMM, two
    thirds of the FLOPs, over `hidden`; the down GEMM over `width`) at K / (K + `tile_overhead_k`)."""
    return 1.0 / (1.0 + tile_overhead_k * (2.0 / (3.0 * hidden) + 1.0 / (3.0 * width)))


def expert_compute_share(deployment: Deployment) -> float:
    """The share of `eta_mfu` a deployment's routed experts' FLOPs run at: bf16 experts on the
    Triton fused-MoE path, by their width on one GPU (a slice with tensor parallelism, whole with
    expert parallelism) and the GPU's `moe_tile_overhead_k`; 1 for other formats (kernels of their
    own, or not measured) and a dense model."""
    m, k0 = deployment.model, deployment.gpu.moe_tile_overhead_k
    if not m.expert_count or deployment.expert_weight_format is not None or not k0:
        return 1.0
    width = m.expert_params / (3.0 * m.hidden * m.expert_layers)  # (gate, up and down: 3 matrices)
    return fused_moe_compute_share(m.hidden, width if deployment.expert_parallel
                                   else width / deployment.tensor_parallel_size, k0)


class ExpertReads:
    """The routed experts one iteration of T tokens reads, under uniform routing: each token goes to
    top_k of the E experts of every MoE layer, every expert equally likely, tokens independently.
    An expert is then left unread with probability (1 - top_k / E)^T, so an MoE layer reads
    E (1 - (1 - top_k / E)^T) distinct experts on average: top_k for one token, nearly all of them
    once T is large (for Qwen3-30B-A3B, 128 experts and top 8: 8 at T = 1, 65 at T = 11, 127 at
    T = 75). Real routers are skewed, so a real batch reads somewhat fewer (a sourced calibration
    of that skew is not modelled).

    Split over GPUs by tensor parallelism, every GPU reads its slice of each expert read: `per_gpu`
    is `distinct` / TP whole experts. With expert parallelism (EP = TP, whole experts on each GPU)
    the iteration waits for the GPU that reads the most: the largest of EP counts, each the experts
    read among its E / EP, taken as independent binomials of that probability (an approximation:
    a token's top_k experts are drawn without replacement, so the GPUs' counts are not quite
    independent)."""

    def __init__(self, experts: int, top_k: int, tensor_parallel_size: int, expert_parallel: bool) -> None:
        miss = 1.0 - top_k / experts
        cap = 1
        if miss > 0:  # (tokens past which every expert is read, to double precision)
            cap = min(EXPERT_TABLE_MAX_TOKENS, max(1, math.ceil(-37.5 / math.log(miss))))
        tokens = np.arange(cap + 1, dtype=np.float64)
        read = 1.0 - miss ** tokens
        self.cap = cap
        self.distinct = experts * read
        """Experts an MoE layer reads, by tokens (up to `cap`)."""
        if expert_parallel:
            local = -(-experts // tensor_parallel_size)
            j = np.arange(local + 1)
            comb = np.array([math.comb(local, int(i)) for i in j], dtype=np.float64)
            p = read[:, None]
            pmf = comb * p ** j * (1.0 - p) ** (local - j)
            below = np.cumsum(pmf, axis=1)[:, :local]  # P(count <= m - 1) for m = 1..local
            self.per_gpu = np.sum(1.0 - np.minimum(below, 1.0) ** tensor_parallel_size, axis=1)
        else:
            self.per_gpu = self.distinct / tensor_parallel_size
        """Whole experts' worth of weights the busiest GPU reads in an MoE layer, by tokens."""


@dataclass(frozen=True)
class IterationCost:
    """The time of one iteration, split by operator class (seconds, on one GPU)."""

    t_weights: float
    """Linear layers if memory-bound: weights streamed from HBM once (t_mem)."""
    t_compute: float
    """Linear layers if compute-bound: 2 FLOPs per parameter per token (t_cmp)."""
    t_linear: float
    """Linear layers, sqrt(t_weights^2 + t_compute^2), plus the fixed times of expert kernels, block-scaled
    FP8 GEMMs and per-head q/k norms (`Deployment.moe_latency_s`, `block_fp8_gemms_s`, `qk_norm_s`)."""
    t_kv_read: float
    """Decode attention reading each decoding sequence's KV cache."""
    t_prefill_attn: float
    """Prefill (or encoder) attention compute."""
    t_allreduce: float
    """Tensor-parallel all-reduces; 0 on one GPU."""
    t_overhead: float
    """The host's work for the iteration (`host_overhead`)."""
    total: float
    flops: float
    """Tensor-core work this iteration: linear layers plus prefill attention."""
    bytes_read: float
    """HBM traffic this iteration: weights plus the decode KV cache."""
    tokens: int
    """T: decode tokens plus prefill tokens."""
    binding: str
    """The largest term: "weights" or "compute" (for the linear part, whichever of t_weights
    and t_compute is larger, valued at t_linear), "kv_read", "prefill_attention", "allreduce",
    "overhead", or "idle" when nothing ran."""
    linear_binding: str
    """"weights" or "compute", whichever of t_weights and t_compute is larger."""
    overhead_exposed: float = -1.0
    """The share of `total` the host adds to the GPU's time: all of t_overhead one after the
    other, what exceeds the GPU's time when they overlap (-1: t_overhead)."""

    t_launch_wait: float = 0.0
    """Without CUDA graphs: how much longer the host's kernel launches take than the GPU's work
    (the GPU idles that long); 0 with graphs, or when the GPU's work is longer."""
    t_draft: float = 0.0
    """Speculative decoding: the drafter's passes after the target's forward pass (`draft_time`)."""
    experts_read: float = 0.0
    """A mixture of experts: the routed experts each MoE layer reads this iteration, on average
    over uniform routing (`ExpertReads`); 0 for a dense model."""

    @property
    def host_share(self) -> float:
        """The seconds of `total` the host adds on top of the GPU's work."""
        return self.t_overhead if self.overhead_exposed < 0 else self.overhead_exposed

    def parts(self) -> list[tuple[str, float]]:
        """The iteration's time as labelled shares that add up to `total`, for the UI.

        The linear time is split between "weights read" and "compute" in proportion to the
        squares of t_weights and t_compute, since that is how they combine into t_linear.
        """
        weights_squared = self.t_weights * self.t_weights
        squares = weights_squared + self.t_compute * self.t_compute
        weights_share = self.t_linear * (weights_squared / squares) if squares else 0.0
        compute_share = self.t_linear - weights_share
        parts = [
            ("weights read", weights_share),
            ("KV read", self.t_kv_read),
            ("compute", compute_share + self.t_prefill_attn),
            ("all-reduce", self.t_allreduce),
            ("overhead", self.host_share + self.t_launch_wait),
        ]
        if self.t_draft:
            parts.append(("draft", self.t_draft))
        return parts


_IDLE = IterationCost(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0, "idle", "weights")


class CostModel:
    """Iteration times for one deployment. Constants are worked out once, at construction."""

    def __init__(self, deployment: Deployment, overlap: bool = False, graph_sizes: Sequence[int] = ()) -> None:
        self.deployment = deployment
        self.overlap = overlap  # async scheduling: the host's work overlaps the forward pass
        # CUDA graph capture sizes (none: no padding); with --enforce-eager there are none, and
        # every forward pass takes at least the host's kernel launches.
        eager = bool(deployment.enforce_eager)
        self._launch = deployment.eager_launch_s if eager else 0.0
        self._graph_max = 0 if eager or not graph_sizes else max(graph_sizes)
        self._pad = np.zeros(self._graph_max + 1, dtype=np.int64)  # tokens -> the graph's size
        if self._graph_max:
            sizes = np.array(sorted(set(graph_sizes)), dtype=np.int64)
            self._pad[1:] = sizes[np.searchsorted(sizes, np.arange(1, self._graph_max + 1))]
        self._pad_ints = self._pad.tolist()  # (the same, as ints: read once an iteration)
        # `iteration_total` on two floats (a C builtin: the stretches call it once an iteration)
        self._join_floats = max if overlap else operator.add
        gpu, model = deployment.gpu, deployment.model
        tp = deployment.tensor_parallel_size
        self._bandwidth = gpu.hbm_bandwidth
        self._peak = gpu.bf16_peak_flops
        self._weight_bytes = deployment.weight_bytes_per_gpu
        self._kv_bytes_per_token = deployment.full_kv_bytes_per_token_per_gpu
        self._flops_per_token = 2.0 * deployment.params_per_gpu
        effective_peak = self._peak * deployment.eta_mfu
        self._effective_peak = effective_peak

        # Linear layers: t_mem is the same whatever the batch (a mixture of experts': by T, below);
        # t_cmp grows with T.
        self._t_mem = self._weight_bytes / (self._bandwidth * deployment.eta_bw)
        self._t_mem_squared = self._t_mem * self._t_mem
        # The linear layers run at the tensor-core peak of their weight format (fp8 for W8A8).
        self._t_cmp_per_token = self._flops_per_token / (deployment.linear_peak_flops * deployment.eta_mfu)
        self._experts: ExpertReads | None = None
        self._linear_fixed = (deployment.moe_latency_s + deployment.block_fp8_gemms_s  # (0.0: adds nothing)
                              + deployment.qk_norm_s)
        if model.expert_count:
            self._price_experts(deployment)
        # Decode attention: seconds per token of context read (the layers that attend to all of it),
        # and per decoding sequence, its window (sliding-window layers: each reads at most its
        # window; a sequence shorter than the window is charged all of it).
        self._kv_bandwidth = self._bandwidth * deployment.eta_attn
        self._t_kv_per_token = self._kv_bytes_per_token / self._kv_bandwidth
        window = model.window_tokens if model.window_layers else 0
        self._t_kv_window = deployment.window_kv_bytes_per_token_per_gpu * window / self._kv_bandwidth
        # Prefill attention: FLOPs = this x chunk x (prefix + chunk / 2). QK^T and PV are two
        # matmuls of 2 FLOPs per multiply-add; causal masking halves the chunk's own square. MLA
        # prefills with its heads' own widths (nope + rope for QK, v_head_dim for PV).
        full_layers = model.layers - model.window_layers
        widths = (model.attn_qk_dim or model.head_dim) + (model.attn_v_dim or model.head_dim)
        per_layer = 2.0 * model.q_heads * widths / tp
        if full_layers == model.layers and widths == 2 * model.head_dim:
            self._attn_flops_coeff = 4.0 * model.layers * model.q_heads * model.head_dim / tp
        else:
            self._attn_flops_coeff = per_layer * full_layers
        self._window = window
        self._window_attn_coeff = per_layer * model.window_layers if window else 0.0
        # All-reduce: a ring moves 2 (tp - 1) / tp of the buffer each way per GPU; each layer
        # reduces the T x hidden activations twice. Each all-reduce also pays a fixed latency.
        if tp > 1:
            count = ALLREDUCES_PER_LAYER * model.layers
            ring = 2.0 * (tp - 1) / tp
            self._t_ar_per_token = (count * ring * model.hidden * ACTIVATION_BYTES
                                    / gpu.interconnect_bandwidth)
            self._t_ar_fixed = count * deployment.allreduce_latency_s
        else:
            self._t_ar_per_token = 0.0
            self._t_ar_fixed = 0.0
        self._t_overhead = deployment.overhead_s
        self._t_overhead_per_seq = deployment.overhead_per_seq_s
        self._decode_parts: dict[int, tuple[float, float, float]] = {}  # batch -> decode_ends' fixed parts
        self._draft = _DraftRoofline(self, deployment) if deployment.draft is not None else None

    def graph_tokens(self, tokens: int) -> int:
        """The tokens a forward pass of `tokens` tokens runs: padded to the CUDA graph captured for
        the next size up (none above the largest, or without graphs)."""
        return self._pad_ints[tokens] if tokens <= self._graph_max else tokens

    def _price_experts(self, deployment: Deployment) -> None:
        """A mixture of experts' weights read and FLOPs: the always-read weights plus the experts
        the tokens go to (`ExpertReads`), tabulated by tokens so that every path reads the same
        float; compute is 2 FLOPs per active parameter (top-k experts), the experts at their
        format's peak and the share of `eta_mfu` their kernels reach (`expert_compute_share`)."""
        model, tp = deployment.model, deployment.tensor_parallel_size
        experts = ExpertReads(model.expert_count, model.expert_top_k, tp, deployment.expert_parallel)
        self._experts = experts
        whole, kept = deployment.replicated_bytes, model.replicated_params  # (whole on every GPU)
        always = (deployment.weight_bytes - deployment.routed_expert_bytes - whole) / tp + whole
        routed = experts.per_gpu * deployment.expert_bytes
        bytes_read = always + routed
        self._weights_read = bytes_read
        self._weight_bytes = float(bytes_read[1])  # (one token's: the single-stream ceiling's)
        bandwidth = self._bandwidth * deployment.eta_bw
        share = deployment.moe_read_share
        # (the routed experts at their kernels' share of it: one division where that is 1)
        t_mem = bytes_read / bandwidth if share == 1.0 else always / bandwidth + routed / (bandwidth * share)
        self._t_mem_table = t_mem
        self._t_mem_sq_table = t_mem * t_mem
        self._t_mem = float(t_mem[1])
        self._t_mem_squared = self._t_mem * self._t_mem
        dense = (model.params - model.expert_count * model.expert_params - kept) / tp + kept
        active = model.expert_top_k * model.expert_params / tp
        self._flops_per_token = 2.0 * (dense + active)
        self._t_cmp_per_token = (2.0 * dense / (deployment.linear_peak_flops * deployment.eta_mfu)
                                 + 2.0 * active / (deployment.expert_peak_flops * deployment.eta_mfu
                                                   * expert_compute_share(deployment)))

    def _expert_index(self, tokens: int) -> int:
        experts = self._experts
        assert experts is not None  # (a mixture of experts' only)
        cap = experts.cap
        return tokens if tokens < cap else cap

    def weights_read(self, tokens: int) -> float:
        """Bytes of weights one GPU reads in an iteration of `tokens` tokens (all of them for a
        dense model)."""
        if self._experts is None:
            return self.deployment.weight_bytes_per_gpu
        return float(self._weights_read[self._expert_index(tokens)])

    def experts_read(self, tokens: int) -> float:
        """Routed experts each MoE layer reads in an iteration of `tokens` tokens (0: dense)."""
        if self._experts is None or tokens <= 0:
            return 0.0
        return float(self._experts.distinct[self._expert_index(tokens)])

    def host_overhead(self, num_seqs):
        """The host's share of one iteration running `num_seqs` sequences (decoding, and
        prefilling a chunk): the fixed `overhead_s` plus `overhead_per_seq_s` for each. Every
        path that prices an iteration takes its overhead from here (`num_seqs` may be a numpy
        array)."""
        return self._t_overhead + self._t_overhead_per_seq * num_seqs

    def iteration_total(self, gpu, host):
        """An iteration's time from its GPU work and its host work (`host_overhead`): their sum,
        or with `overlap` the larger of the two. The one place they are joined (`gpu` and `host`
        may be numpy arrays)."""
        if isinstance(gpu, np.ndarray) or isinstance(host, np.ndarray):
            return np.maximum(gpu, host) if self.overlap else gpu + host
        return self._join_floats(gpu, host)

    # -- the full breakdown --------------------------------------------------------------------

    def iteration(
        self,
        num_decode: int,
        decode_context_tokens: int,
        prefill_chunks: Sequence[tuple[int, int]] = (),
    ) -> IterationCost:
        """The cost of one iteration: `num_decode` decoding sequences whose contexts sum to
        `decode_context_tokens`, plus prefill chunks given as (prefix_len, chunk_len)."""
        return self.spec_iteration(num_decode, decode_context_tokens, prefill_chunks, 0, 0)

    def kv_read_time(self, num_decode: int, decode_context_tokens: int) -> float:
        """Decode attention's time: every context token's KV in the layers that attend to all of
        it, and each decoding sequence's window in the sliding-window layers."""
        t = decode_context_tokens * self._t_kv_per_token
        if self._window:
            t += num_decode * self._t_kv_window
        return t

    def _kv_read_bytes(self, num_decode: int, decode_context_tokens: int) -> float:
        """The bytes `kv_read_time` reads, at the bandwidth it reads them at."""
        return self.kv_read_time(num_decode, decode_context_tokens) * self._kv_bandwidth

    def _tokens(self, num_decode: int, decode_context_tokens: int, prefill_chunks: Sequence[tuple[int, int]],
                verify_tokens: int = 0, rows: int = 0) -> tuple[int, float, int, float]:
        """What every path that prices an iteration starts from: its tokens (decoding, verifying
        `verify_tokens` drafts, prefilling), the FLOPs of its prefill attention, the sequences it
        runs (decoding, or prefilling a chunk: each costs the host `overhead_per_seq_s`), and the
        drafter's time over `rows` requests (`draft_time`; 0 with no rows or no drafter)."""
        if num_decode < 0 or decode_context_tokens < 0:
            raise ValueError("num_decode and decode_context_tokens must not be negative")
        prefill_tokens = 0
        prefilling = 0
        attn_flops = 0.0
        draft = self._draft if rows else None
        units = 0.0  # (the drafter's first pass: its prefill attention, chunk x (prefix + chunk / 2) summed)
        ends = 0  # (and the tokens the chunks end at)
        for prefix_len, chunk_len in prefill_chunks:
            if prefix_len < 0 or chunk_len < 0:
                raise ValueError(f"bad prefill chunk ({prefix_len}, {chunk_len})")
            prefill_tokens += chunk_len
            prefilling += chunk_len > 0
            attn_flops += self._attn_flops_coeff * chunk_len * (prefix_len + chunk_len / 2)
            if self._window:
                attn_flops += self._window_attn_coeff * windowed(prefix_len, chunk_len, self._window)
            if draft is not None:
                units += chunk_len * (prefix_len + chunk_len / 2)
                ends += prefix_len + chunk_len
        tokens = num_decode + prefill_tokens + verify_tokens
        seconds = draft.time(tokens, rows, decode_context_tokens, units, ends) if draft is not None and tokens else 0.0
        return tokens, attn_flops, num_decode + prefilling, seconds

    def encoder_pass(self, batch: int, input_len: int) -> IterationCost:
        """One forward pass of an encoder over `batch` inputs of `input_len` tokens each.

        Linear layers over batch x input_len tokens; attention is bidirectional, charged like a
        prefill of the whole input with no prefix (4 x layers x heads x head_dim x L x L/2 FLOPs
        per input); no KV cache is read. For a decoder model it equals prefilling the same
        prompts from scratch.
        """
        if batch < 0 or input_len < 0:
            raise ValueError("batch and input_len must not be negative")
        tokens = batch * input_len
        if tokens == 0:
            return _IDLE
        attn_flops = batch * (self._attn_flops_coeff * input_len * (input_len / 2))
        return self._assemble(tokens, 0.0, 0.0, attn_flops, batch)

    def _terms(self, tokens: int, t_kv_read: float, attn_flops: float,
               num_seqs: int, t_draft: float = 0.0) -> tuple[float, float, float, float, float, float]:
        """(t_cmp, t_linear, t_prefill_attn, t_allreduce, t_overhead, total): the one place the
        time of an iteration is added up (`decode_times` does the same operations on arrays).
        `t_draft`: a drafter's passes, run on the GPU after the target's forward pass."""
        run = self._pad_ints[tokens] if tokens <= self._graph_max else tokens  # padded to its graph
        t_cmp = self._t_cmp_per_token * run
        if self._experts is None:
            t_linear = math.sqrt(self._t_mem_squared + t_cmp * t_cmp) + self._linear_fixed
        else:  # (the experts read by T)
            t_linear = (math.sqrt(float(self._t_mem_sq_table[self._expert_index(tokens)]) + t_cmp * t_cmp)
                        + self._linear_fixed)
        t_prefill_attn = attn_flops / self._effective_peak
        t_allreduce = self._t_ar_per_token * run + self._t_ar_fixed
        t_overhead = self.host_overhead(num_seqs)
        gpu = t_linear + t_kv_read + t_prefill_attn + t_allreduce
        if gpu < self._launch:
            gpu = self._launch
        if t_draft:
            gpu += t_draft
        # (iteration_total's join of two floats)
        return (t_cmp, t_linear, t_prefill_attn, t_allreduce, t_overhead, self._join_floats(gpu, t_overhead))

    def _assemble(self, tokens: int, t_kv_read: float, kv_bytes: float,
                  attn_flops: float, num_seqs: int, t_draft: float = 0.0) -> IterationCost:
        t_mem = self._t_mem if self._experts is None else float(self._t_mem_table[self._expert_index(tokens)])
        t_cmp, t_linear, t_prefill_attn, t_allreduce, t_overhead, total = self._terms(
            tokens, t_kv_read, attn_flops, num_seqs, t_draft)

        linear_binding = "weights" if t_mem >= t_cmp else "compute"
        exposed = -1.0
        host = t_overhead
        gpu = t_linear + t_kv_read + t_prefill_attn + t_allreduce
        launch_wait = self._launch - gpu if self._launch > gpu else 0.0
        gpu += t_draft
        if self.overlap:
            # The host binds only when it takes longer than the whole forward pass it overlaps.
            forward = gpu + launch_wait
            exposed = total - forward if t_overhead > forward else 0.0
            host = t_overhead if t_overhead > forward else 0.0
        candidates = (
            (linear_binding, t_linear),
            ("kv_read", t_kv_read),
            ("prefill_attention", t_prefill_attn),
            ("allreduce", t_allreduce),
            ("overhead", host + launch_wait),
        )
        binding = max(candidates, key=lambda item: item[1])[0]  # first wins a tie
        return IterationCost(
            t_weights=t_mem,
            t_compute=t_cmp,
            t_linear=t_linear,
            t_kv_read=t_kv_read,
            t_prefill_attn=t_prefill_attn,
            t_allreduce=t_allreduce,
            t_overhead=t_overhead,
            total=total,
            flops=self._flops_per_token * tokens + attn_flops,
            bytes_read=self.weights_read(tokens) + kv_bytes,
            tokens=tokens,
            binding=binding,
            linear_binding=linear_binding,
            overhead_exposed=exposed,
            t_launch_wait=launch_wait,
            t_draft=t_draft,
            experts_read=self.experts_read(tokens),
        )

    # -- speculative decoding ------------------------------------------------------------------

    def spec_iteration(self, num_decode: int, decode_context_tokens: int,
                       prefill_chunks: Sequence[tuple[int, int]], verify_tokens: int, rows: int) -> IterationCost:
        """`iteration` with speculative decoding: each decoding row also verifies its drafts
        (`verify_tokens` in all, linear-layer tokens and attention queries over a context the row
        reads once, so `decode_context_tokens` counts each row's computed tokens plus all its
        scheduled ones), and the drafter's passes follow the target's on the GPU (`draft_time`;
        `rows`: the requests in the batch)."""
        tokens, attn_flops, num_seqs, draft = self._tokens(num_decode, decode_context_tokens, prefill_chunks,
                                                           verify_tokens, rows)
        if tokens == 0:
            return _IDLE
        return self._assemble(tokens, self.kv_read_time(num_decode, decode_context_tokens),
                              self._kv_read_bytes(num_decode, decode_context_tokens), attn_flops, num_seqs, draft)

    def iteration_time(self, num_decode: int, decode_context_tokens: int,
                       prefill_chunks: Sequence[tuple[int, int]] = (), verify_tokens: int = 0,
                       rows: int = 0) -> float:
        """`spec_iteration(...).total` (with no drafts, `iteration(...).total`: the engine's every
        iteration), without building the breakdown."""
        tokens, attn_flops, num_seqs, draft = self._tokens(num_decode, decode_context_tokens, prefill_chunks,
                                                           verify_tokens, rows)
        if tokens == 0:
            return 0.0
        return self._terms(tokens, self.kv_read_time(num_decode, decode_context_tokens), attn_flops, num_seqs,
                           draft)[5]

    def spec_iteration_time(self, num_decode: int, decode_context_tokens: int,
                            prefill_chunks: Sequence[tuple[int, int]] = (), verify_tokens: int = 0,
                            rows: int = 0) -> float:
        """`iteration_time` of an iteration verifying drafts (the same sum)."""
        return self.iteration_time(num_decode, decode_context_tokens, prefill_chunks, verify_tokens, rows)

    def draft_time(self, num_decode: int, decode_context_tokens: int,
                   prefill_chunks: Sequence[tuple[int, int]], verify_tokens: int, rows: int) -> float:
        """The drafter's GPU time in the iteration `spec_iteration` prices (0 without a drafter on
        the GPU, n-gram looking up on the CPU, or with no row that could use drafts, `rows` 0).
        Its K passes run one after another: the first over every token the target ran (its own
        KV for them; prefill chunks included), each of the others over one token a request
        (`_DraftRoofline`)."""
        return self._tokens(num_decode, decode_context_tokens, prefill_chunks, verify_tokens, rows)[3]

    # -- fast paths for the engine ---------------------------------------------------------------

    def decode_time(self, batch: int, total_context: int) -> float:
        """`iteration(batch, total_context).total` for a decode-only iteration, without
        building the breakdown (the first iteration of `decode_ends`)."""
        return self.decode_ends(batch, total_context, 0.0, 1)[1][0]

    def decode_ends(self, batch: int, total_context: int, start: float, count: int,
                    limit: float = math.inf) -> tuple[list[float], list[float]]:
        """A stretch of decode iterations run back to back from `start`, each sequence's context
        one token longer every time: when each ends and how long it took, the j-th (from 0)
        taking `iteration(batch, total_context + batch * j).total`. At most `count` of them, and
        only those that start before `limit` (none after the first that ends at or after it).
        The same sum as `_terms` (no prefill: adding its 0.0 does not change a float), joined to
        the host's work by `iteration_total`, with the parts that do not change with the context
        worked out once for each batch size; each end
        is the previous end plus the iteration's time, as a clock advanced one iteration at a
        time, and each duration is the difference of the two ends (as that clock measures it)."""
        if start >= limit:
            return [], []
        if batch <= 0:
            return [start] * count, [0.0] * count  # an empty batch takes no time
        parts = self._decode_parts.get(batch)
        if parts is None:
            parts = self._decode_batch_parts(batch)
        t_linear, t_allreduce, overhead = parts
        per_token = self._t_kv_per_token
        window = batch * self._t_kv_window if self._window else 0.0  # (kv_read_time's sum, in its order)
        launch = self._launch
        ends: list[float] = []
        gaps: list[float] = []
        end = start
        overlap = self.overlap  # (iteration_total's join, written out on floats: max or sum)
        context = total_context
        for _ in range(count):
            gpu = t_linear + (context * per_token + window) + t_allreduce  # (+ 0.0 without a window)
            context += batch
            if gpu < launch:
                gpu = launch
            new = end + ((gpu if gpu >= overhead else overhead) if overlap else gpu + overhead)
            ends.append(new)
            gaps.append(new - end)
            if new >= limit:
                break
            end = new
        return ends, gaps

    def _decode_batch_parts(self, batch: int) -> tuple[float, float, float]:
        """(t_linear, t_allreduce, host overhead) of a decode iteration of `batch` sequences, the
        parts that do not change with the context, from `_terms` (kept by batch size)."""
        _, t_linear, _, t_allreduce, overhead, _ = self._terms(batch, 0.0, 0.0, batch)
        parts = self._decode_parts[batch] = (t_linear, t_allreduce, overhead)
        return parts

    def decode_times(self, batch: int | np.ndarray, total_context: np.ndarray) -> np.ndarray:
        """`decode_time` over arrays (numpy broadcasting); 0 where the batch is empty. The same
        operations in the same order as `_terms`, so each element equals `decode_time`. A batch
        given as an int (a decode stretch's) takes the parts that do not change with the context
        from `_decode_batch_parts`, as `decode_ends` does."""
        context = np.asarray(total_context, dtype=np.float64)
        batch_array: int | np.ndarray
        t_linear: float | np.ndarray
        t_allreduce: float | np.ndarray
        overhead: float | np.ndarray
        if batch.__class__ is int:
            if batch <= 0:
                return np.zeros(context.shape)
            parts = self._decode_parts.get(batch)
            if parts is None:
                parts = self._decode_batch_parts(batch)
            t_linear, t_allreduce, overhead = parts
            batch_array = batch
        else:
            batch_array = np.asarray(batch, dtype=np.float64)
            top = self._graph_max
            run = np.where(batch_array <= top, self._pad[np.minimum(batch_array, top).astype(np.int64)], batch_array)
            t_cmp = self._t_cmp_per_token * run
            if self._experts is None:
                t_linear = np.sqrt(self._t_mem_squared + t_cmp * t_cmp) + self._linear_fixed
            else:
                tokens = np.minimum(batch_array, self._experts.cap).astype(np.int64)
                t_linear = np.sqrt(self._t_mem_sq_table[tokens] + t_cmp * t_cmp) + self._linear_fixed
            t_allreduce = self._t_ar_per_token * run + self._t_ar_fixed
            overhead = self.host_overhead(batch_array)
        t_kv_read = context * self._t_kv_per_token
        if self._window:
            t_kv_read = t_kv_read + batch_array * self._t_kv_window
        gpu = t_linear + t_kv_read + t_allreduce
        if self._launch:
            gpu = np.maximum(gpu, self._launch)
        total = self.iteration_total(gpu, overhead)
        return total if batch_array.__class__ is int else np.where(batch_array > 0, total, 0.0)

    # -- figures the lessons quote -------------------------------------------------------------

    @property
    def single_stream_ceiling_tokens_per_s(self) -> float:
        """Tokens/s one sequence could reach if each token only had to stream the weights once
        at full HBM bandwidth: bandwidth / weight bytes (per GPU; a mixture of experts': those one
        token reads)."""
        return self._bandwidth / self._weight_bytes

    def report_parts(self, cost: IterationCost) -> IterationCostParts:
        """The breakdown the iteration report carries, with the gauges' shares."""
        seconds = cost.total
        return IterationCostParts(
            weights=cost.t_weights, compute=cost.t_compute, kv_read=cost.t_kv_read,
            prefill_attention=cost.t_prefill_attn, allreduce=cost.t_allreduce,
            overhead=cost.host_share, total=seconds, binding=cost.binding,
            linear_binding=cost.linear_binding, linear=cost.t_linear, draft=cost.t_draft,
            experts_read=cost.experts_read, experts=self.deployment.model.expert_count,
            bandwidth_share=cost.bytes_read / seconds / self._bandwidth if seconds > 0 else 0.0,
            tensor_core_share=cost.flops / seconds / self._peak if seconds > 0 else 0.0)

    def tensor_core_utilization(self, num_tokens: float, seconds: float) -> float:
        """Share of dense bf16 peak that the linear layers of `num_tokens` tokens use when an
        iteration takes `seconds`."""
        return self._flops_per_token * num_tokens / seconds / self._peak

    def bandwidth_utilization(self, bytes_read: float, seconds: float) -> float:
        """Share of HBM bandwidth used to read `bytes_read` bytes in `seconds` (for example an
        IterationCost's bytes_read and total)."""
        return bytes_read / seconds / self._bandwidth


class _DraftRoofline:
    """The drafter's passes, on the rooflines `CostModel` prices the target's with (this GPU's
    bandwidth, peaks and efficiencies, CUDA graph padding, tensor-parallel all-reduces, the
    kernel-launch floor without graphs), from its `sim.speculative.DraftShape`: a pass streams
    the drafter's weights once and computes 2 FLOPs per weight per token (its output head only
    for the rows that sample), and its attention reads its KV of every row's context; its layers'
    per-head query and key norms (`DraftShape.qk_norm_layers`) cost what the target's do."""

    def __init__(self, cost: CostModel, deployment: Deployment) -> None:
        d = deployment.draft
        gpu = deployment.gpu
        tp = d.tensor_parallel_size
        self.passes = d.passes
        self._cost = cost
        bandwidth = gpu.hbm_bandwidth * deployment.eta_bw
        flops = deployment.linear_peak_flops * deployment.eta_mfu
        self._mem_first = (d.body_params + d.first_params + d.head_params) * d.bytes_per_param / tp / bandwidth
        self._mem_rest = (d.body_params + d.head_params) * d.bytes_per_param / tp / bandwidth
        self._cmp_first = 2.0 * (d.body_params + d.first_params) / tp / flops
        self._cmp_rest = 2.0 * d.body_params / tp / flops
        self._cmp_head = 2.0 * d.head_params / tp / flops
        self._kv = d.kv_bytes_per_token / tp / (gpu.hbm_bandwidth * deployment.eta_attn)
        self._attn_coeff = 4.0 * d.layers * d.q_heads * d.head_dim / tp
        self._peak = gpu.bf16_peak_flops * deployment.eta_mfu
        if tp > 1:
            count = ALLREDUCES_PER_LAYER * d.layers
            self._ar_per_token = count * 2.0 * (tp - 1) / tp * d.hidden * ACTIVATION_BYTES / gpu.interconnect_bandwidth
            self._ar_fixed = count * deployment.allreduce_latency_s
        else:
            self._ar_per_token = self._ar_fixed = 0.0
        self._launch = EAGER_LAUNCH_S_PER_LAYER * d.layers if deployment.enforce_eager else 0.0
        self._fixed = deployment.qk_norm_time(d.qk_norm_layers)  # (0.0 without them: adds nothing)

    def _pass(self, tokens: int, rows: int, kv_tokens: float, attn_flops: float, first: bool) -> float:
        pad = self._cost.graph_tokens
        run, heads = pad(tokens), pad(rows)
        if first:
            t_mem, t_cmp = self._mem_first, self._cmp_first * run + self._cmp_head * heads
        else:
            t_mem, t_cmp = self._mem_rest, self._cmp_rest * run + self._cmp_head * heads
        gpu = (math.sqrt(t_mem * t_mem + t_cmp * t_cmp) + kv_tokens * self._kv + attn_flops / self._peak
               + self._ar_per_token * run + self._ar_fixed + self._fixed)
        return (gpu if gpu >= self._launch else self._launch) + DRAFT_PASS_OVERHEAD_S

    def time(self, tokens: int, rows: int, decode_context: int, chunk_units: float, chunk_ends: int) -> float:
        """The K passes' time: the first over the target's `tokens` (its prefill chunks' attention
        `chunk_units` x (prefix + chunk / 2) summed, as `CostModel._tokens` walks them), the
        others over one token a row, each row's context `chunk_ends` (the chunks' last
        positions) plus `decode_context` longer by a token each pass."""
        context = decode_context + chunk_ends
        total = self._pass(tokens, rows, decode_context, self._attn_coeff * chunk_units, True)
        for step in range(1, self.passes):
            total += self._pass(rows, rows, context + step * rows, 0.0, False)
        return total


def windowed(prefix: int, chunk: int, window: int) -> float:
    """Prefill attention's work in a sliding-window layer, in the units a full layer's is
    `chunk x (prefix + chunk / 2)`: the chunk's tokens, at positions prefix to prefix + chunk, each
    attend to at most `window` keys (the integral of min(position, window) over the chunk)."""
    end = prefix + chunk
    if end <= window:
        return chunk * (prefix + chunk / 2)
    if prefix >= window:
        return float(window * chunk)
    return (window * window - prefix * prefix) / 2 + window * (end - window)
