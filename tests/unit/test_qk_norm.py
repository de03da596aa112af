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
