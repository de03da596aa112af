"""The 2026 deployments (issue 39) through the commands that plan and check them: `plan` and
`compare` with the mixture-of-experts models by name (gpt-oss-120b on one H100, DeepSeek-V3 on
eight H200 with TP 8) and --speculative-config; `calibrate` fitting the acceptance per draft
position from vllm bench serve's spec_decode keys. Speculative runs take the engine's stepped
path: the runs here are small."""

from __future__ import annotations

import json

import pytest

from batchtui.cli import main
from sim import rate_plan
from tests.unit.cli_run import run

GPT_OSS = ["--model", "openai/gpt-oss-120b", "--gpu", "h100-sxm"]
DEEPSEEK = ["--model", "deepseek-ai/DeepSeek-V3", "--gpu", "h200", "--tensor-parallel-size", "8"]
EAGLE3 = '{"method": "eagle3", "model": "nvidia/gpt-oss-120b-Eagle3", "num_speculative_tokens": 3}'
MTP = '{"method": "deepseek_mtp", "num_speculative_tokens": 1}'


@pytest.fixture
def small_plan(monkeypatch):
    """Shorter windows and confirmation runs (the search and the confirmation are the real ones)."""
    monkeypatch.setattr(rate_plan, "PLAN_MIN_WINDOW", 40)
    monkeypatch.setattr(rate_plan, "PLAN_MIN_WINDOW_S", 0.0)
    monkeypatch.setattr(rate_plan, "PLAN_MIN_PROMPTS", 50)
    monkeypatch.setattr(rate_plan, "PLAN_CONFIRM_PROMPTS", 300)
    monkeypatch.setattr(rate_plan, "PLAN_CONFIRM_NEW_SEEDS", 1)


# -- plan ---------------------------------------------------------------------------------------------

def test_plan_takes_gpt_oss_on_one_h100_with_an_eagle3_head_and_deepseek_on_eight_h200_with_mtp(
        capsys, small_plan):
    argv = ["plan", *GPT_OSS, "--speculative-config", EAGLE3, "--num-prompts", "60", "--input-len", "256",
            "--output-len", "32", "--seeds", "1", "--jobs", "1", "--tpot-p99", "8", "--ttft-p99", "300"]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    words = " ".join(out.split())
    assert "Simulated gpt-oss 120B on one H100 SXM 80 GB" in words and "speculative decoding eagle3" in words
    assert "vllm serve openai/gpt-oss-120b" in out and f"--speculative-config '{EAGLE3}'" in out
    d = json.loads(run(capsys, *argv, "--json")[1])
    plain = json.loads(run(capsys, *[a for a in argv if a not in ("--speculative-config", EAGLE3)], "--json")[1])
    assert d["feasible"] and plain["feasible"]
    # at this tight TPOT the drafts let a replica take more traffic
    assert d["max_rate"] > plain["max_rate"]
    code, out, err = run(capsys, "plan", *DEEPSEEK, "--speculative-config", MTP, "--offline", "100",
                         "--input-len", "512", "--output-len", "64")
    assert code == 0, err
    assert "Simulated DeepSeek-V3 on 8 x H200 141 GB" in out and "speculative decoding mtp, K=1" in " ".join(out.split())
    assert "LLM(model='deepseek-ai/DeepSeek-V3', tensor_parallel_size=8" in out
    assert "speculative_config={'method': 'deepseek_mtp', 'num_speculative_tokens': 1}" in out


# -- compare ------------------------------------------------------------------------------------------

def _sim_result(path, *argv) -> dict:
    assert main(["sim", *argv, "--num-prompts", "40", "--request-rate", "4", "--input-len", "256",
                 "--output-len", "48", "--save-result", "--result-filename", str(path), "--json"]) == 0
    return json.loads(path.read_text())


@pytest.mark.parametrize("hardware, spec", [(GPT_OSS, EAGLE3), (DEEPSEEK, MTP)], ids=["gpt-oss-eagle3", "deepseek-mtp"])
def test_compare_replays_a_speculative_run_with_its_config_and_shows_its_acceptance(capsys, tmp_path, hardware, spec):
    path = tmp_path / "spec.json"
    data = _sim_result(path, *hardware, "--speculative-config", spec)
    assert json.loads(data["speculative_config"]) == json.loads(spec)  # kept as --metadata would keep it
    capsys.readouterr()
    code, out, err = run(capsys, "compare", str(path), "--gpu", hardware[3])
    assert code == 0, err
    rows = {line[:40].strip(): line[40:].split() for line in out.splitlines() if len(line) > 40}
    for row in ("Median TPOT (ms)", "Output token throughput (tok/s)", "Draft acceptance rate (%)",
                "Acceptance length"):
        assert rows[row][2] == "+0.0%", (row, rows[row])  # the same run: the same figures
    assert float(rows["Acceptance length"][0]) == pytest.approx(data["spec_decode_acceptance_length"], abs=0.01)
    # A vllm bench serve file keeps no config unless --metadata did: it is simulated without
    # drafts, and says so.
    del data["speculative_config"]
    path.write_text(json.dumps(data))
    code, out, _ = run(capsys, "compare", str(path), "--gpu", hardware[3])
    assert code == 0 and "measured with speculative decoding, simulated without" in out
    rows = {line[:40].strip(): line[40:].split() for line in out.splitlines() if len(line) > 40}
    assert rows["Acceptance length"][1:] == ["-", "-"]
    code, out, _ = run(capsys, "compare", str(path), "--gpu", hardware[3], "--speculative-config", spec)
    assert code == 0 and "simulated without" not in out
    assert [line for line in out.splitlines() if line.startswith("Median TPOT")][0].endswith("+0.0%")
