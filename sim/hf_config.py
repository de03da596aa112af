"""A dense transformer from its Hugging Face `config.json`: parameters, weight bytes, KV bytes.

A model is its config's fields: hidden size, layers, attention and KV heads, head dim, MLP
(intermediate) size, vocabulary, tied embeddings and max positions. From them:

- parameters: the embedding (vocabulary x hidden, twice when the output head is not tied to it),
  and per layer the Q, K, V and O projections (with Q/K/V biases where the architecture has them:
  Qwen2's), the gated MLP's three matrices (gate, up, down: 3 x hidden x intermediate) and two
  RMSNorm weights, then the final norm;
- KV bytes per token: 2 (K and V) x layers x KV heads x head dim x the cache's bytes per element.

A mixture-of-experts config (num_local_experts, num_experts, n_routed_experts) is refused until MoE
is modelled. `model_values` turns a config into a model profile table (`sim.profiles`).
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
MOE_FIELDS = ("num_local_experts", "num_experts", "n_routed_experts")
# Fields only a config.json has (a model profile's own keys are head_dim, intermediate_size, ...):
# a [models.*] table with any of them is read as a config.
CONFIG_ONLY = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
               "max_position_embeddings", "model_type", "attention_bias", *MOE_FIELDS)
# Architectures whose Q, K and V projections carry a bias although their config does not say so.
QKV_BIAS_MODEL_TYPES = ("qwen2",)
MAX_CONFIG_BYTES = 4 << 20  # a config.json is a few kB; anything this large is not one


@dataclass(frozen=True)
class DenseShape:
    """The fields of a dense decoder's config.json that decide its size."""

    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool
    max_position_embeddings: int
    qkv_bias: bool = False

    @property
    def embedding_params(self) -> int:
        """The token embedding, and the output head when it is not tied to it."""
        return self.vocab_size * self.hidden_size * (1 if self.tie_word_embeddings else 2)

    @property
    def layer_params(self) -> int:
        h, d = self.hidden_size, self.head_dim
        q, kv = self.num_attention_heads * d, self.num_key_value_heads * d
        attention = h * q + 2 * h * kv + q * h + ((q + 2 * kv) if self.qkv_bias else 0)
        mlp = 3 * h * self.intermediate_size
        return attention + mlp + 2 * h

    @property
    def params(self) -> int:
        return self.embedding_params + self.num_hidden_layers * self.layer_params + self.hidden_size

    def kv_bytes_per_token(self, bytes_per_element: float = 2) -> float:
        return 2 * self.num_hidden_layers * self.num_key_value_heads * self.head_dim * bytes_per_element


def _whole(config: Mapping[str, Any], key: str, source: str) -> int:
    value = config[key]
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ProfileError(f"{source}: {key} = {value!r} is not allowed: it must be a positive whole number.")
    return value


def shape(config: Mapping[str, Any], source: str) -> DenseShape:
    """The dense shape a config describes; ProfileError naming the field when it is missing, wrong,
    or describes a mixture of experts."""
    if not isinstance(config, Mapping):
        raise ProfileError(f"{source}: a model config must be a JSON object of fields such as hidden_size.")
    text = config.get("text_config")
    if isinstance(text, Mapping) and "hidden_size" not in config:
        config = {**text, **{k: v for k, v in config.items() if k in ("tie_word_embeddings",)}}
    experts = [k for k in MOE_FIELDS if config.get(k) not in (None, 0, 1)]
    if experts:
        raise ProfileError(f"{source}: a mixture-of-experts model ({experts[0]} = {config[experts[0]]}) is not "
                           "modelled yet; only dense transformers are.")
    missing = [k for k in REQUIRED if k not in config]
    if missing:
        raise ProfileError(f"{source}: the model config is missing {', '.join(missing)} (a Hugging Face "
                           "config.json of a dense transformer has them).")
    hidden = _whole(config, "hidden_size", source)
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
    bias = config.get("attention_bias")
    if bias is None:
        bias = config.get("model_type") in QKV_BIAS_MODEL_TYPES
    return DenseShape(hidden, _whole(config, "num_hidden_layers", source), heads, kv_heads, head_dim,
                      _whole(config, "intermediate_size", source), _whole(config, "vocab_size", source), tie,
                      _whole(config, "max_position_embeddings", source), bool(bias))


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
    """The model profile fields (`sim.profiles.ModelProfile`) of a dense config."""
    s = shape(config, source)
    return {"kind": "decoder", "params": float(s.params), "layers": s.num_hidden_layers,
            "kv_heads": s.num_key_value_heads, "q_heads": s.num_attention_heads, "head_dim": s.head_dim,
            "hidden": s.hidden_size, "max_model_len": s.max_position_embeddings, "bytes_per_param": 2.0,
            "vocab_size": s.vocab_size, "tie_word_embeddings": s.tie_word_embeddings,
            "intermediate_size": s.intermediate_size,
            "mtp_layers": _mtp_layers(config, source)}


def _mtp_layers(config: Mapping[str, Any], source: str) -> int:
    """The multi-token-prediction layers the checkpoint ships (num_nextn_predict_layers)."""
    value = config.get("num_nextn_predict_layers", 0) or 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ProfileError(f"{source}: num_nextn_predict_layers must be a whole number >= 0, got {value!r}")
    return value
