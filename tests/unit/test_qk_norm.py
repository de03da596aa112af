"""Per-head query and key norms (Qwen3's q_norm and k_norm): the small kernels vLLM runs for them
beyond a Llama layer (`sim.profiles.QK_NORM_KERNELS`, `Deployment.qk_norm_s`), priced with the
forward pass's other fixed times in `sim.cost`, and the older builds' count a result file states
(`qk-norm-kernels`, tests/data/published)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from sim import hf_config
from sim.cost import CostModel
from sim.errors import ConfigError
from sim.profiles import BUILTIN_PROFILES as P
from sim.profiles import FUSED_MOE_KERNELS, QK_NORM_KERNELS, Deployment, load_profiles

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "tests" / "data" / "published"
CONFIGS = ROOT / "sim" / "data" / "hf-configs"
GRAPHS = (1, 2, 4, 8, 16, 32)


def _costs(deployment: Deployment) -> list[float]:
    """Iteration times of one deployment: decode steps by both paths, a mixed step, a prefill past
    the CUDA graphs, with and without async scheduling."""
    out = []
    for overlap in (False, True):
        cost = CostModel(deployment, overlap=overlap, graph_sizes=GRAPHS)
        out += [cost.decode_time(1, 640), cost.decode_time(24, 24 * 900), cost.iteration(3, 2000, [(0, 512)]).total,
                cost.iteration(0, 0, [(128, 2048)]).total,
                *cost.decode_times(np.array([1, 7, 40]), np.array([640.0, 5000.0, 40000.0])).tolist()]
    return out


@pytest.mark.parametrize("gpu, model, tp", [("h100-sxm", "qwen3-8b", 1), ("a100-80gb", "qwen3-30b-a3b", 1),
                                            ("h200", "qwen3-32b", 2), ("h100-sxm", "qwen3-235b-a22b", 8)])
def test_a_qk_norm_step_costs_layers_times_kernels_times_a_small_kernel_more(gpu, model, tp):
    """The same deployment without the norms runs every iteration faster by exactly its layers x
    the build's extra kernels x one small kernel (a sixth of the fused-MoE layer's fixed time):
    today's 1 a layer, an older build's 3."""
    with_norms = P.deployment(gpu, model, tensor_parallel_size=tp)
    assert with_norms.model.qk_norm
    without = Deployment(with_norms.gpu, dataclasses.replace(with_norms.model, qk_norm=False), tensor_parallel_size=tp)
    small = with_norms.gpu.moe_layer_latency_s / FUSED_MOE_KERNELS
    assert with_norms.gpu.small_kernel_s == small
    base = _costs(without)
    for kernels in (None, 3, 0):
        d = dataclasses.replace(with_norms, qk_norm_kernels=kernels)
        extra = with_norms.model.layers * (QK_NORM_KERNELS if kernels is None else kernels) * small
        assert d.qk_norm_s == pytest.approx(extra, rel=1e-12)
        assert [a - b for a, b in zip(_costs(d), base)] == pytest.approx([extra] * len(base), rel=1e-9, abs=1e-15)
    assert QK_NORM_KERNELS == 1


def test_a_llama_step_is_priced_to_the_bit_as_before():
    """No Llama layer normalises its queries and keys: its iterations are the figures the cost model
    gave before the norms were priced (main at 781e4d2), to the last bit, whatever count a build
    states; a mixture of experts' fixed time keeps its one rule (`small_kernel_s` each kernel)."""
    before = {("h100-sxm", "llama-3.1-8b", 1): ("0.0060220444489360635", "0.01387490161569397"),
              ("a100-80gb", "llama-3.1-8b", 1): ("0.0098942044383907", "0.040683444931307836"),
              ("h100-sxm", "llama-3.1-70b", 4): ("0.013998896730136018", "0.035555593929763006")}
    for (gpu, model, tp), figures in before.items():
        for kernels in (None, 3):
            d = P.deployment(gpu, model, tensor_parallel_size=tp, qk_norm_kernels=kernels)
            assert not d.model.qk_norm and d.qk_norm_s == 0.0
            cost = CostModel(d, overlap=True, graph_sizes=(1, 2, 4, 8, 16))
            assert (repr(cost.decode_time(1, 640)), repr(cost.iteration(3, 2000, [(0, 512)]).total)) == figures
    moe = P.deployment("h100-sxm", "gpt-oss-120b")
    assert moe.moe_latency_s == pytest.approx(moe.model.expert_layers * moe.moe_kernels * moe.gpu.small_kernel_s)


def test_the_hugging_face_import_marks_qwen3s_attention():
    """config.json's model_type qwen3 and qwen3_moe (vLLM's Qwen3ForCausalLM, Qwen3MoeForCausalLM)
    set `qk_norm`, as the presets read from them have it; Llama, Qwen2.5, gpt-oss, Mixtral and
    DeepSeek's MLA do not; a profile file may say it of a model of its own."""
    for name in ("Qwen--Qwen3-8B", "Qwen--Qwen3-30B-A3B", "Qwen--Qwen3-32B", "Qwen--Qwen3-235B-A22B"):
        values = hf_config.model_values(hf_config.read(CONFIGS / f"{name}.json"), name)
        assert values["qk_norm"] is True, name
    small = hf_config.read(ROOT / "tests" / "data" / "hf-configs" / "Qwen--Qwen3-0.6B.json")
    assert P.with_config_model("Qwen/Qwen3-0.6B", small, "qwen3-0.6b").model("Qwen/Qwen3-0.6B").qk_norm
    for name in ("openai--gpt-oss-120b", "mistralai--Mixtral-8x7B-Instruct-v0.1", "deepseek-ai--DeepSeek-V3"):
        assert "qk_norm" not in hf_config.model_values(hf_config.read(CONFIGS / f"{name}.json"), name), name
    flagged = {m.id for m in P.models.values() if m.qk_norm}
    assert flagged == {"qwen3-8b", "qwen3-30b-a3b", "qwen3-32b", "qwen3-235b-a22b"}


def test_a_profile_file_can_mark_a_model_of_its_own(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text('[models.mine]\nname = "Mine"\nkind = "decoder"\nparams = 8e9\nlayers = 32\nkv_heads = 8\n'
                    'q_heads = 32\nhead_dim = 128\nhidden = 4096\nmax_model_len = 8192\nqk_norm = true\n',
                    encoding="utf-8")
    d = load_profiles(path).deployment("h100-sxm", "mine")
    assert d.model.qk_norm and d.qk_norm_s == pytest.approx(32 * QK_NORM_KERNELS * 25e-6 / 6)
    with pytest.raises(ConfigError, match="qk_norm_kernels"):
        P.deployment("h100-sxm", "qwen3-8b", qk_norm_kernels=-1)


QWEN3_FILES = [f"gpustack-qwen3-8b-h100-c{c}" for c in (1, 2, 4, 8)] + [
    "vllm-pr23151-qwen3-30b-a3b-h100-c10", "tenstorrent-qwen3-30b-a3b-a100-c1"]


def test_a_published_file_of_an_older_build_states_its_count(tmp_path):
    """Every published Qwen3 run was of a build before vLLM PR 26682 (torch 2.8 and older): each
    file states 3 kernels a layer, with its source in its dials, and the replay prices them;
    without the entry the replay prices today's 1; a count that is not a whole number is refused."""
    from batchtui.cli.exits import UserError
    from batchtui.cli.measured import load_run
    from sim.scenario import Scenario

    for stem in QWEN3_FILES:
        data = json.loads((PUBLISHED / f"{stem}.json").read_text(encoding="utf-8"))
        assert data["qk-norm-kernels"] == "3" and "26682" in data["fidelity"]["dials"], stem
        measured = load_run(str(PUBLISHED / f"{stem}.json"), Scenario(), {}, str(tmp_path), 0, ("gpu", "model"))
        assert measured.scenario.qk_norm_kernels == 3, stem
        d = measured.scenario.deployment()
        assert d.qk_norm_s == pytest.approx(d.model.layers * 3 * d.gpu.small_kernel_s), stem
    data = json.loads((PUBLISHED / "gpustack-qwen3-8b-h100-c1.json").read_text(encoding="utf-8"))
    for name, entry in (("today", None), ("bad", "-1"), ("half", "1.5")):
        path = tmp_path / f"{name}.json"
        given = {k: v for k, v in data.items() if k != "qk-norm-kernels"}
        path.write_text(json.dumps({**given, **({"qk-norm-kernels": entry} if entry else {})}), encoding="utf-8")
        if entry is not None:
            with pytest.raises(UserError, match="qk-norm-kernels"):
                load_run(str(path), Scenario(), {}, str(tmp_path), 0, ("gpu", "model"))
            continue
        measured = load_run(str(path), Scenario(), {}, str(tmp_path), 0, ("gpu", "model"))
        assert measured.scenario.qk_norm_kernels is None
        assert measured.scenario.deployment().qk_norm_s == pytest.approx(36 * QK_NORM_KERNELS * 25e-6 / 6)
    # The scenario keeps the count through its own file (a saved replay replays the same).
    scenario = Scenario(model="qwen3-8b", qk_norm_kernels=3)
    assert Scenario.from_toml(scenario.to_toml()) == scenario
    assert "qk_norm_kernels" not in Scenario().to_dict()
    with pytest.raises(ConfigError, match="qk_norm_kernels"):
        Scenario.from_dict({"qk_norm_kernels": -1})


# -- a speculative drafter's own layers ------------------------------------------------------------

DRAFT_ARGS = [(1, 1003, (), 3, 1), (8, 8000, [(0, 512)], 24, 9), (24, 24 * 900, (), 72, 24),
              (64, 64 * 700, [(100, 900)], 192, 65)]


def _spec(**keys) -> "speculative.SpeculativeConfig":
    from sim import speculative

    text = json.dumps({"num_speculative_tokens": 3, "rejection_sample_method": "synthetic",
                       "synthetic_acceptance_length": 2.0, **keys})
    config = speculative.parse(text)
    assert config is not None
    return config


def _draft_times(deployment: Deployment) -> list[float]:
    cost = CostModel(deployment, overlap=True, graph_sizes=GRAPHS)
    return [cost.draft_time(*args) for args in DRAFT_ARGS]


def test_a_draft_model_with_q_k_norms_pays_them_every_pass():
    """Qwen3-8B drafting for Qwen3-32B on an H200: each of its K passes runs its 36 layers' norm kernels, the
    build's count of them at one small kernel each, as the target's own layers do; the same draft
    model without the norms is that much faster, pass for pass, and the target's part is unchanged."""
    from types import SimpleNamespace

    from sim import speculative

    config = _spec(method="draft_model", model="qwen3-8b")
    target, drafter = P.model("qwen3-32b"), P.model("qwen3-8b")
    shape = speculative.draft_shape(config, target, P, 1, 2)
    plain = speculative.draft_shape(config, target, SimpleNamespace(
        models={"qwen3-8b": dataclasses.replace(drafter, qk_norm=False)}), 1, 2)
    assert shape is not None and plain is not None and drafter.qk_norm
    for kernels in (None, 3):
        d = P.deployment("h200", "qwen3-32b", draft=shape, qk_norm_kernels=kernels)
        without = dataclasses.replace(d, draft=plain)
        extra = config.k * drafter.layers * (QK_NORM_KERNELS if kernels is None else kernels) * d.gpu.small_kernel_s
        assert [a - b for a, b in zip(_draft_times(d), _draft_times(without))] == pytest.approx(
            [extra] * len(DRAFT_ARGS), rel=1e-9)
        cost, plain_cost = CostModel(d, graph_sizes=GRAPHS), CostModel(without, graph_sizes=GRAPHS)
        for args in DRAFT_ARGS:
            a, b = cost.spec_iteration(*args), plain_cost.spec_iteration(*args)
            assert a.t_linear == b.t_linear and a.t_draft - b.t_draft == pytest.approx(extra, rel=1e-9)
    assert dataclasses.replace(shape, qk_norm_layers=0) == plain
    small = P.with_config_model("Qwen/Qwen3-0.6B", hf_config.read(ROOT / "tests" / "data" / "hf-configs" /
                                                                 "Qwen--Qwen3-0.6B.json"), "qwen3-0.6b")
    tiny = speculative.draft_shape(_spec(method="draft_model", model="Qwen/Qwen3-0.6B"), target, small, 1, 2)
    assert tiny is not None and tiny.qk_norm_layers == 28  # (a profile made from its config.json)
    # (docs/vllm-flags.md, Speculative decoding's cost: 0.15 ms a pass for Qwen3-8B's 36 layers on Hopper)
    assert P.deployment("h100-sxm", "qwen3-8b").qk_norm_time(36) == pytest.approx(0.15e-3, rel=0.01)


def test_an_eagle_head_pays_none_and_an_mtp_layer_pays_its_targets():
    """EAGLE and EAGLE-3 heads are Llama layers in vLLM (llama_eagle.py, llama_eagle3.py; Qwen3's
    published heads name LlamaForCausalLMEagle3), so a Qwen3 target's head pays no norm kernels; an
    MTP module is one of the target's layers: one layer's kernels a pass when the target has them
    (a GLM-4.5-shaped config with use_qk_norm), none when it does not (DeepSeek-V3's MLA)."""
    from sim import speculative

    for method in ("eagle", "eagle3"):
        head = speculative.draft_shape(_spec(method=method, model="some/head"), P.model("qwen3-32b"), P, 1, 2)
        assert head is not None and head.qk_norm_layers == 0
    glm = {"model_type": "glm4_moe", "hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8,
           "num_key_value_heads": 2, "head_dim": 128, "intermediate_size": 2048, "moe_intermediate_size": 256,
           "n_routed_experts": 16, "num_experts_per_tok": 4, "n_shared_experts": 1, "first_k_dense_replace": 1,
           "vocab_size": 32000, "max_position_embeddings": 8192, "num_nextn_predict_layers": 1,
           "use_qk_norm": True}
    profiles = P.with_config_model("glm-like", glm, "glm-like")
    target = profiles.model("glm-like")
    assert target.qk_norm and target.mtp_layers == 1
    mtp = speculative.draft_shape(_spec(method="mtp"), target, profiles, 1, 2)
    assert mtp is not None and mtp.qk_norm_layers == 1
    d = profiles.deployment("h100-sxm", "glm-like", draft=mtp)
    without = dataclasses.replace(d, draft=dataclasses.replace(mtp, qk_norm_layers=0))
    extra = 3 * QK_NORM_KERNELS * d.gpu.small_kernel_s
    assert [a - b for a, b in zip(_draft_times(d), _draft_times(without))] == pytest.approx(
        [extra] * len(DRAFT_ARGS), rel=1e-9)
    deepseek = speculative.draft_shape(_spec(method="mtp"), P.model("deepseek-v3"), P, 8, 2)
    assert deepseek is not None and deepseek.qk_norm_layers == 0


# -- which architectures ---------------------------------------------------------------------------

def _config(model_type: str, **more) -> dict:
    base = {"model_type": model_type, "hidden_size": 2048, "num_hidden_layers": 28, "num_attention_heads": 16,
            "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 6144, "vocab_size": 151936,
            "max_position_embeddings": 40960}
    return {**base, **more}


def test_each_architecture_with_per_head_q_k_norms_before_rope_is_flagged():
    """Every model type whose vLLM attention normalises each head's query and key before RoPE as
    Qwen3's does (hf_config.QK_NORM_MODEL_TYPES: Qwen3, Qwen3-VL's language models, Gemma 3; GLM-4.5's
    glm4_moe when its config says use_qk_norm) sets `qk_norm`, with the norms' weights, and pays the
    kernels; Llama does not, nor the types whose norms differ (Llama 4's after RoPE, OLMo 2's over the
    whole projection, Cohere's LayerNorm, Qwen3-Next's in one layer in four)."""
    moe = {"num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 768}
    flagged = [_config("qwen3"), _config("qwen3_moe", **moe), _config("qwen3_vl_text"),
               _config("qwen3_vl_moe_text", **moe), _config("gemma3_text"),
               {"model_type": "gemma3", "text_config": _config("gemma3_text")},
               {"model_type": "qwen3_vl", "text_config": _config("qwen3_vl_text")},
               _config("glm4_moe", use_qk_norm=True)]
    for config in flagged:
        name = config["model_type"]
        values = hf_config.model_values(config, name)
        assert values["qk_norm"] is True, name
        plain = hf_config.shape({**hf_config.text_part(config), "model_type": "llama"}, name)
        assert values["params"] == plain.params + 28 * 2 * 128, name  # (q_norm and k_norm: head_dim each)
        d = P.with_config_model(name, config, name).deployment("h100-sxm", name)
        assert d.qk_norm_s == pytest.approx(28 * QK_NORM_KERNELS * d.gpu.small_kernel_s), name
    for config in [_config("llama"), _config("qwen2"), _config("glm4_moe", use_qk_norm=False), _config("glm4_moe"),
                   _config("llama4_text", use_qk_norm=True), _config("olmo2"), _config("olmoe", **moe),
                   _config("cohere", use_qk_norm=True), _config("cohere2", use_qk_norm=True),
                   _config("qwen3_next", **moe), _config("gemma3n_text"), _config("gemma2")]:
        name = f"{config['model_type']} {config.get('use_qk_norm', '')}"
        assert "qk_norm" not in hf_config.model_values(config, name), name
    scout = hf_config.read(CONFIGS / "meta-llama--Llama-4-Scout-17B-16E-Instruct.json")
    assert hf_config.text_part(scout)["use_qk_norm"] is True and not P.model("llama-4-scout").qk_norm
