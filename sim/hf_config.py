"""A model from its Hugging Face `config.json`: parameters, experts, attention layout, weight format.

A model is its config's fields. From them:

- parameters: the embedding (vocabulary x hidden, twice when the output head is not tied to it),
  and per layer the attention projections, the MLP and the norms, then the final norm;
- attention: grouped-query (Q, K, V and O projections, with the biases the architecture has:
  Qwen2's on Q/K/V, gpt-oss's on all four, its per-head sinks, Qwen3's Q/K norms), or DeepSeek's
  multi-head latent attention (MLA: `q_lora_rank`, `kv_lora_rank`, `qk_nope_head_dim`,
  `qk_rope_head_dim`, `v_head_dim`), whose KV cache holds the compressed latent and the RoPE key,
  `kv_lora_rank + qk_rope_head_dim` values a token a layer, shared by every head (vLLM's MLA
  backends cache exactly that);
- the MLP: gated (gate, up, down: 3 x hidden x intermediate) on dense layers; on a
  mixture-of-experts layer a router (hidden x experts), the routed experts (each a gated MLP of
  the expert size) and any shared experts, read for every token. Which layers are MoE follows the
  architecture's own fields: Mixtral and gpt-oss all of them (`num_local_experts`); Qwen2/3-MoE
  (`num_experts`, `moe_intermediate_size`) all but `mlp_only_layers`, every `decoder_sparse_step`;
  DeepSeek V2/V3 (`n_routed_experts`, `n_shared_experts`) from `first_k_dense_replace` on, every
  `moe_layer_freq`; Llama 4 (`num_local_experts` in `text_config`, one shared expert,
  `intermediate_size_mlp` on dense layers) every `interleave_moe_layer_step`;
- sliding-window layers: `layer_types` ("sliding_attention"), Gemma 3's `sliding_window_pattern`,
  Gemma 2's alternation, or, for a `sliding_window` with no pattern (Mistral 7B v0.1), every layer;
  Llama 4's chunked local attention (`attention_chunk_size`) is read as full attention (vLLM
  0.33 disables its hybrid KV cache manager for it by default; within one 8,192-token chunk
  the two are the same);
- the weight format the checkpoint ships in (`quantization_config.quant_method`): `mxfp4`
  (gpt-oss: the experts only, the rest bf16, as vLLM's Mxfp4Config quantizes only MoE layers),
  `fp8` (DeepSeek-V3's and Qwen3's FP8 checkpoints: 128x128 block scales, every linear layer).

`model_values` turns a config into a model profile table (`sim.profiles`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim.errors import ProfileError

FIELDS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
          "intermediate_size", "vocab_size", "tie_word_embeddings", "max_position_embeddings")
REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size",
            "max_position_embeddings")
EXPERT_COUNT_FIELDS = ("num_local_experts", "num_experts", "n_routed_experts")
EXPERTS_PER_TOKEN_FIELDS = ("num_experts_per_tok", "experts_per_token")
MOE_FIELDS = (*EXPERT_COUNT_FIELDS, *EXPERTS_PER_TOKEN_FIELDS, "moe_intermediate_size", "n_shared_experts",
              "shared_expert_intermediate_size", "first_k_dense_replace", "moe_layer_freq", "mlp_only_layers",
              "decoder_sparse_step", "interleave_moe_layer_step", "intermediate_size_mlp", "moe_layers")
MLA_FIELDS = ("kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
WINDOW_FIELDS = ("sliding_window", "layer_types", "sliding_window_pattern", "use_sliding_window", "max_window_layers")
# Fields only a config.json has (a model profile's own keys are head_dim, intermediate_size, ...):
# a [models.*] table with any of them is read as a config.
CONFIG_ONLY = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
               "max_position_embeddings", "model_type", "attention_bias", "quantization_config",
               *MOE_FIELDS, *MLA_FIELDS, *WINDOW_FIELDS)
# Architectures whose Q, K and V projections carry a bias although their config does not say so.
QKV_BIAS_MODEL_TYPES = ("qwen2", "qwen2_moe")
# Architectures with a per-head RMSNorm on queries and keys (head_dim weights each, per layer, in
# every layer) before the rotary embedding, which vLLM compiles with Inductor as Qwen3's, so they run
# the same small kernels beyond a Llama layer (sim.profiles.QK_NORM_KERNELS). config.json's
# model_type (a multimodal config's text_config's) for, in vllm/model_executor/models/:
# - qwen3, qwen3_moe: Qwen3ForCausalLM, Qwen3MoeForCausalLM (qwen3.py, qwen3_moe.py: q_norm and k_norm
#   on each head's view of q and k, then rotary_emb);
# - qwen3_vl_text, qwen3_vl_moe_text: Qwen3-VL's language models (qwen3_vl.py's Qwen3LLMModel is a
#   Qwen3Model, qwen3_vl_moe.py's Qwen3MoeLLMModel a Qwen3MoeModel: the same layers);
# - gemma3_text: Gemma 3 (gemma3.py, Gemma3Attention: q_norm and k_norm, GemmaRMSNorm(head_dim), on
#   each head, then rotary_emb, in every layer, sliding or global).
# Not flagged, each for a reason in its vLLM file: llama4 (use_qk_norm: a weightless RMSNorm after
# RoPE, in the RoPE layers only, llama4.py: Inductor can fold RoPE's pointwise work into the norm's
# reduction, which Qwen3's order, norm then RoPE across the head's halves, does not allow; no trace
# counts it); olmo2 and olmo3, olmoe (olmo2.py, olmoe.py: one RMSNorm over the whole q and k
# projections, gathered across tensor-parallel GPUs first: not per head); cohere and cohere2 with
# use_qk_norm (commandr.py: a per-head LayerNorm, mean and variance, not an RMSNorm); qwen3_next
# (qwen3_next.py: the norms only in its full-attention layers, one in four, beside Gated DeltaNet
# layers this shape does not model); gemma3n (gemma3n.py: a v_norm too); DeepSeek's MLA (its
# q_a_layernorm and kv_a_layernorm normalise the latents, not each head).
QK_NORM_MODEL_TYPES = ("qwen3", "qwen3_moe", "qwen3_vl_text", "qwen3_vl_moe_text", "gemma3_text")
# Architectures whose config.json turns the same per-head norms on (use_qk_norm: true): glm4_moe
# (glm4_moe.py, Glm4MoeAttention: q_norm and k_norm, RMSNorm(head_dim), on each head, then
# rotary_emb, when config.use_qk_norm).
QK_NORM_OPTIONAL_MODEL_TYPES = ("glm4_moe",)
# The checkpoint formats vLLM reads from quantization_config.quant_method, as `--quantization` spells
# them (sim.profiles.WEIGHT_FORMATS prices each).
CHECKPOINT_FORMATS = {"mxfp4": "mxfp4", "fp8": "fp8", "modelopt_fp4": "modelopt_fp4", "awq": "awq", "gptq": "gptq"}
MAX_CONFIG_BYTES = 4 << 20  # a config.json is a few kB; anything this large is not one


@dataclass(frozen=True)
class ModelShape:
    """What a decoder's config.json says about its size, its experts and its KV cache."""

    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool
    max_position_embeddings: int
    params: int
    """Every parameter: embedding, output head, attention, MLPs and experts, norms."""
    num_experts: int = 0
    """Routed experts in each MoE layer (0: a dense model)."""
    experts_per_token: int = 0
    """Routed experts each token goes to (the router's top-k)."""
    expert_params: int = 0
    """One routed expert's parameters, added over every MoE layer."""
    moe_layers: int = 0
    kv_latent_dim: int = 0
    """MLA: values cached a token a layer (kv_lora_rank + qk_rope_head_dim), shared by every head."""
    qk_head_dim: int = 0
    """Query/key width a head (prefill attention's first matmul); 0: head_dim."""
    v_head_dim: int = 0
    """Value width a head (its second matmul); 0: head_dim."""
    sliding_window: int = 0
    sliding_layers: int = 0
    """Layers that attend only to the last `sliding_window` tokens."""
    quantization: str | None = None
    """The checkpoint's weight format (a `--quantization` name), None for bf16."""
    replicated_params: int = 0
    """Weights every tensor-parallel GPU holds whole: MLA's down-projections, which vLLM's
    deepseek_v2.py builds unsplit (fused_qkv_a_proj with disable_tp=True; kv_a_proj_with_mqa as a
    ReplicatedLinear without a q_lora_rank)."""
    fp8_block_scales: bool = False
    """The checkpoint's fp8 weights carry block scales (`quantization_config.weight_block_size`:
    DeepSeek-V3's 128 x 128), which vLLM multiplies with its block-scaled FP8 GEMMs."""
    qk_norm: bool = False
    """Queries and keys normalised per head before the rotary embedding (QK_NORM_MODEL_TYPES, or
    QK_NORM_OPTIONAL_MODEL_TYPES with use_qk_norm)."""
    linear_gemms: int = 0
    """GEMMs one forward pass runs through the linear layers outside the routed experts: per layer
    the attention's (Q/K/V fused and the output; MLA's fused Q-and-KV down-projection, Q
    up-projection and output, its K/V up-projection folded into bf16 batched matmuls in decode) and
    the dense or shared-expert MLP's (gate-and-up fused, down). Not counted: the router and the
    output head (kept in bf16 by vLLM's FP8 checkpoints' loaders) and the routed experts (the
    fused-MoE kernels, `moe_layer_latency_s`)."""

    def kv_bytes_per_token(self, bytes_per_element: float = 2) -> float:
        """Every layer's KV for one token (all of it, as a cache without windows would hold it)."""
        if self.kv_latent_dim:
            return self.num_hidden_layers * self.kv_latent_dim * bytes_per_element
        return 2 * self.num_hidden_layers * self.num_key_value_heads * self.head_dim * bytes_per_element


def _whole(config: Mapping[str, Any], key: str, source: str) -> int:
    value = config[key]
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ProfileError(f"{source}: {key} = {value!r} is not allowed: it must be a positive whole number.")
    return value


def _count(config: Mapping[str, Any], key: str, source: str, default: int = 0) -> int:
    """A field that may be absent, null or 0."""
    value = config.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ProfileError(f"{source}: {key} = {value!r} is not allowed: it must be a whole number >= 0.")
    return value


def _layer_list(config: Mapping[str, Any], key: str, source: str, layers: int) -> list[int] | None:
    value = config.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < layers
                                               for i in value):
        raise ProfileError(f"{source}: {key} must be a list of layer numbers from 0 to {layers - 1}.")
    return value


def text_part(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The language model's fields: a multimodal config's `text_config` (Llama 4, Gemma 3), with the
    top level's quantization and tied embeddings, or the config itself."""
    text = config.get("text_config")
    if isinstance(text, Mapping) and "hidden_size" not in config:
        top = {k: v for k, v in config.items() if k in ("tie_word_embeddings", "quantization_config")}
        return {**text, **top}
    return config


def _moe_layout(config: Mapping[str, Any], source: str, layers: int, experts: int) -> list[bool]:
    """Which layers are mixture-of-experts layers, by the architecture's own fields."""
    if experts == 0:
        return [False] * layers
    listed = _layer_list(config, "moe_layers", source, layers)
    if listed is not None:
        return [i in listed for i in range(layers)]
    if "interleave_moe_layer_step" in config:  # Llama 4
        step = _count(config, "interleave_moe_layer_step", source, 1)
        return [step > 0 and (i + 1) % step == 0 for i in range(layers)]
    first = _count(config, "first_k_dense_replace", source)  # DeepSeek V2/V3
    freq = _count(config, "moe_layer_freq", source, 1) or 1
    sparse = _count(config, "decoder_sparse_step", source, 1) or 1  # Qwen2/3-MoE
    dense_only = set(_layer_list(config, "mlp_only_layers", source, layers) or ())
    return [i >= first and i % freq == 0 and (i + 1) % sparse == 0 and i not in dense_only for i in range(layers)]


def _sliding_layout(config: Mapping[str, Any], source: str, layers: int) -> tuple[int, int]:
    """(window, sliding layers): the layers that attend only to their last `window` tokens."""
    window = config.get("sliding_window")
    if window is None or config.get("use_sliding_window") is False:
        return 0, 0
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        raise ProfileError(f"{source}: sliding_window = {window!r} is not allowed: it must be a positive whole "
                           "number or null.")
    types = config.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != layers or not all(isinstance(t, str) for t in types):
            raise ProfileError(f"{source}: layer_types must list one attention type for each of the {layers} "
                               "layers.")
        return window, sum(t == "sliding_attention" for t in types)
    pattern = config.get("sliding_window_pattern")
    if pattern is not None:  # Gemma 3: every pattern-th layer is global
        if isinstance(pattern, bool) or not isinstance(pattern, int) or pattern <= 0:
            raise ProfileError(f"{source}: sliding_window_pattern = {pattern!r} must be a positive whole number.")
        return window, sum((i + 1) % pattern != 0 for i in range(layers))
    if config.get("model_type") == "gemma2":  # even layers slide, odd ones attend to everything
        return window, (layers + 1) // 2
    return window, layers  # Mistral 7B v0.1: every layer


def _quantization(config: Mapping[str, Any], source: str) -> str | None:
    q = config.get("quantization_config")
    if q is None:
        return None
    method = q.get("quant_method") if isinstance(q, Mapping) else None
    if method not in CHECKPOINT_FORMATS:
        raise ProfileError(f"{source}: quantization_config's quant_method {method!r} is not a weight format the "
                           f"simulator reads from a config ({', '.join(CHECKPOINT_FORMATS)}): take quantization_config "
                           "out of the file and give the format with {quantization}.")
    return CHECKPOINT_FORMATS[method]


def _block_scaled(config: Mapping[str, Any]) -> bool:
    """The checkpoint's fp8 weights carry block scales (quantization_config.weight_block_size)."""
    q = config.get("quantization_config")
    return isinstance(q, Mapping) and q.get("quant_method") == "fp8" and bool(q.get("weight_block_size"))


def shape(config: Mapping[str, Any], source: str) -> ModelShape:
    """The shape a config describes; ProfileError naming the field when it is missing or wrong."""
    if not isinstance(config, Mapping):
        raise ProfileError(f"{source}: a model config must be a JSON object of fields such as hidden_size.")
    config = text_part(config)
    missing = [k for k in REQUIRED if k not in config]
    if missing:
        raise ProfileError(f"{source}: the model config is missing {', '.join(missing)} (a Hugging Face "
                           "config.json of a decoder has them).")
    hidden = _whole(config, "hidden_size", source)
    layers = _whole(config, "num_hidden_layers", source)
    heads = _whole(config, "num_attention_heads", source)
    kv_heads = _whole(config, "num_key_value_heads", source) if "num_key_value_heads" in config else heads
    head_dim = (_whole(config, "head_dim", source) if config.get("head_dim") is not None
                else hidden // heads)
    if heads % kv_heads:
        raise ProfileError(f"{source}: num_attention_heads = {heads} is not a multiple of "
                           f"num_key_value_heads = {kv_heads}.")
    tie = config.get("tie_word_embeddings", False)
    if not isinstance(tie, bool):
        raise ProfileError(f"{source}: tie_word_embeddings = {tie!r} is not allowed: it must be true or false.")
    model_type = config.get("model_type")
    inter = _whole(config, "intermediate_size", source)
    vocab = _whole(config, "vocab_size", source)

    # -- attention, one layer
    kv_latent = qk_dim = v_dim = replicated = 0
    qk_norm = False
    if config.get("kv_lora_rank"):  # DeepSeek's multi-head latent attention
        for key in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            if key not in config:
                raise ProfileError(f"{source}: an MLA config (kv_lora_rank) needs {key}.")
        rank, nope = _whole(config, "kv_lora_rank", source), _whole(config, "qk_nope_head_dim", source)
        rope, v_dim = _whole(config, "qk_rope_head_dim", source), _whole(config, "v_head_dim", source)
        q_rank = _count(config, "q_lora_rank", source)
        qk_dim = nope + rope
        q = (hidden * q_rank + q_rank + q_rank * heads * qk_dim) if q_rank else hidden * heads * qk_dim
        attention = q + hidden * (rank + rope) + rank + rank * heads * (nope + v_dim) + heads * v_dim * hidden
        replicated = layers * hidden * (q_rank + rank + rope)  # (the down-projections, unsplit)
        kv_latent, kv_heads, head_dim = rank + rope, 1, rank + rope
    else:
        qd, kvd = heads * head_dim, kv_heads * head_dim
        attention = hidden * qd + 2 * hidden * kvd + qd * hidden
        bias = config.get("attention_bias")
        if bias is None:
            bias = model_type in QKV_BIAS_MODEL_TYPES
        if bias:
            attention += qd + 2 * kvd
            if model_type not in QKV_BIAS_MODEL_TYPES:
                attention += hidden  # Llama's and gpt-oss's attention_bias is on the output projection too
        qk_norm = model_type in QK_NORM_MODEL_TYPES or (model_type in QK_NORM_OPTIONAL_MODEL_TYPES
                                                         and config.get("use_qk_norm") is True)
        if qk_norm:
            attention += 2 * head_dim
        if model_type == "gpt_oss":
            attention += heads  # attention sinks, one a head

    # -- MLPs and experts
    experts_key = next((k for k in EXPERT_COUNT_FIELDS if config.get(k) not in (None, 0)), None)
    experts = _count(config, experts_key, source) if experts_key else 0
    top_k = expert = shared = router = 0
    if experts:
        k_key = next((k for k in EXPERTS_PER_TOKEN_FIELDS if config.get(k) is not None), None)
        if k_key is None:
            raise ProfileError(f"{source}: a mixture-of-experts config ({experts_key} = {experts}) needs "
                               "num_experts_per_tok, the experts each token is routed to.")
        top_k = _whole(config, k_key, source)
        if top_k > experts:
            raise ProfileError(f"{source}: {k_key} = {top_k} is more than the {experts} experts.")
        expert_size = (_whole(config, "moe_intermediate_size", source) if config.get("moe_intermediate_size")
                       else inter)
        expert = 3 * hidden * expert_size
        if model_type == "gpt_oss":
            expert += 2 * expert_size + hidden  # gate/up and down biases
        router = hidden * experts + (experts if model_type in ("gpt_oss", "deepseek_v3") else 0)
        shared = _count(config, "n_shared_experts", source) * 3 * hidden * expert_size
        if config.get("shared_expert_intermediate_size"):  # Qwen2-MoE: one shared expert and its gate
            shared += 3 * hidden * _whole(config, "shared_expert_intermediate_size", source) + hidden
        if model_type in ("llama4_text", "llama4"):
            shared += 3 * hidden * expert_size  # one shared expert of the expert size
    is_moe = _moe_layout(config, source, layers, experts)
    moe_layers = sum(is_moe)
    dense_inter = (_whole(config, "intermediate_size_mlp", source) if config.get("intermediate_size_mlp")
                   else inter)
    norms = 2 * hidden + (config["kv_lora_rank"] + (config.get("q_lora_rank") or 0) if kv_latent else 0)
    per_layer = layers * (attention + norms) + (layers - moe_layers) * 3 * hidden * dense_inter
    per_layer += moe_layers * (router + shared + experts * expert)
    embedding = vocab * hidden * (1 if tie else 2)
    # GEMMs a forward pass runs outside the routed experts (ModelShape.linear_gemms): MLA's three in
    # vLLM's deepseek_v2.py (fused_qkv_a_proj, q_b_proj and o_proj; without a q_lora_rank q_proj,
    # kv_a_proj_with_mqa and o_proj), else QKV and O; two for each dense MLP and for shared experts.
    attention_gemms = 3 if kv_latent else 2
    gemms = layers * attention_gemms + (layers - moe_layers) * 2 + (moe_layers * 2 if shared else 0)
    window, sliding = _sliding_layout(config, source, layers)
    return ModelShape(hidden, layers, heads, kv_heads, head_dim, inter, vocab, tie,
                      _whole(config, "max_position_embeddings", source), params=embedding + per_layer + hidden,
                      num_experts=experts if moe_layers else 0, experts_per_token=top_k if moe_layers else 0,
                      expert_params=expert * moe_layers, moe_layers=moe_layers, kv_latent_dim=kv_latent,
                      qk_head_dim=qk_dim, v_head_dim=v_dim, sliding_window=window, sliding_layers=sliding,
                      replicated_params=replicated,
                      quantization=_quantization(config, source), fp8_block_scales=_block_scaled(config),
                      qk_norm=qk_norm, linear_gemms=gemms)


def read(path: str | Path) -> dict:
    """A config.json read from a file, or from a directory holding one (as vLLM's
    --hf-config-path takes either); ProfileError in one line when it cannot be."""
    target = Path(path)
    if target.is_dir():
        target = target / "config.json"
    try:
        with open(target, "rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read the model config: {exc.strerror or exc}.") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ProfileError(f"{path}: too large for a model config (over {MAX_CONFIG_BYTES >> 20} MB).")
    try:
        config = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProfileError(f"{path}: the model config is not JSON ({exc}).") from None
    except RecursionError:
        raise ProfileError(f"{path}: the model config is not JSON (nested too deeply).") from None
    if not isinstance(config, dict):
        raise ProfileError(f"{path}: a model config must be a JSON object of fields such as hidden_size.")
    return config


def model_values(config: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The model profile fields (`sim.profiles.ModelProfile`) of a config."""
    s = shape(config, source)
    values = {"kind": "decoder", "params": float(s.params), "layers": s.num_hidden_layers,
              "kv_heads": s.num_key_value_heads, "q_heads": s.num_attention_heads, "head_dim": s.head_dim,
              "hidden": s.hidden_size, "max_model_len": s.max_position_embeddings, "bytes_per_param": 2.0,
              "vocab_size": s.vocab_size, "tie_word_embeddings": s.tie_word_embeddings,
              "intermediate_size": s.intermediate_size, "mtp_layers": _mtp_layers(config, source)}
    optional = {"expert_count": s.num_experts, "expert_top_k": s.experts_per_token,
                "expert_params": float(s.expert_params), "expert_layers": s.moe_layers,
                "kv_latent_dim": s.kv_latent_dim, "attn_qk_dim": s.qk_head_dim, "attn_v_dim": s.v_head_dim,
                "window_tokens": s.sliding_window, "window_layers": s.sliding_layers,
                "replicated_params": float(s.replicated_params),
                "quantization": s.quantization, "fp8_block_scales": s.fp8_block_scales,
                "linear_gemms": s.linear_gemms, "qk_norm": s.qk_norm}
    values.update({k: v for k, v in optional.items() if v})
    return values


def _mtp_layers(config: Mapping[str, Any], source: str) -> int:
    """The multi-token-prediction layers the checkpoint ships (num_nextn_predict_layers)."""
    value = config.get("num_nextn_predict_layers", 0) or 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ProfileError(f"{source}: num_nextn_predict_layers must be a whole number >= 0, got {value!r}")
    return value
