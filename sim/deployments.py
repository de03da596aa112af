"""The deployments a model picker offers: each chat model with the fewest GPUs of a kind that
serve it under a scenario's other settings (its memory share, KV cache type, max_model_len...),
or why no count up to eight does."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import SimError
from .profiles import TENSOR_PARALLEL_SIZES


@dataclass(frozen=True)
class ModelChoice:
    """One model as a picker lists it, on one kind of GPU."""

    model_id: str
    name: str
    description: str
    experts: int
    """Routed experts in each MoE layer (0: a dense model)."""
    experts_per_token: int
    mtp_layers: int
    gpus: int | None
    """The fewest GPUs (a tensor-parallel size) that serve it; None when none up to eight do."""
    why_not: str = ""
    """Why eight do not (the simulator's refusal at eight GPUs), when `gpus` is None."""


def fewest_gpus(scenario, profiles=None) -> tuple[int | None, str]:
    """The fewest GPUs of the scenario's kind (a tensor-parallel size: 1, 2, 4, 8) whose engine
    the simulator builds for `scenario` with its other settings, and "" ; or None and why the
    largest size is refused."""
    from .search import cannot_run

    profiles = profiles or scenario.profiles()
    why = ""
    for size in TENSOR_PARALLEL_SIZES:
        why = cannot_run(scenario.replace(tensor_parallel_size=size), profiles)
        if why is None:
            return size, ""
    return None, why


def model_choices(scenario, profiles=None) -> list[ModelChoice]:
    """Every chat model of the profiles (encoders left out) on the scenario's GPU kind, in
    profile order, with the GPUs each needs; speculative decoding left off for the count (the
    drafter's weights are checked when the choice is applied)."""
    profiles = profiles or scenario.profiles()
    plain = scenario.replace(speculative_config=None)
    out = []
    for model_id, _, description in profiles.catalog():
        model = profiles.model(model_id)
        if model.kind != "decoder":
            continue
        try:
            gpus, why = fewest_gpus(plain.replace(model=model_id), profiles)
        except SimError as exc:
            gpus, why = None, str(exc)
        out.append(ModelChoice(model_id, model.name, description, model.expert_count, model.expert_top_k,
                               model.mtp_layers, gpus, why))
    return out
