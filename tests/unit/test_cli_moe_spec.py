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
            "--output-len", "32", "--seeds", "1", "--jobs", "1", "--tpot-p99", "10", "--ttft-p99", "300"]
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


# -- calibrate: the acceptance per draft position -----------------------------------------------------

TRUTH_RATES = [0.85, 0.6, 0.3]
SERVED = {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}
ALL_BUT_ETA_BW = "eta_mfu,eta_attn,overhead_s,overhead_per_seq_s"


@pytest.fixture(scope="module")
def spec_runs(tmp_path_factory):
    """Two runs `batchtui sim --save-result` made with EAGLE-3 accepting drafts at TRUTH_RATES
    (vLLM's synthetic rejection sampling), at 1 and 6 req/s on seeds 0 and 1; each file then
    names the config as served (the head and K, not the rates), as vllm bench serve's --metadata
    would: the rates are hidden from calibrate but for the spec_decode keys."""
    folder = tmp_path_factory.mktemp("spec-runs")
    truth = json.dumps({**SERVED, "rejection_sample_method": "synthetic", "synthetic_acceptance_rates": TRUTH_RATES})
    paths = []
    for seed, rate in ((0, "1"), (1, "6")):
        path = folder / f"eagle3-{rate}qps.json"
        assert main(["sim", "--speculative-config", truth, "--num-prompts", "50", "--request-rate", rate, "--seed",
                     str(seed), "--input-len", "256", "--output-len", "128", "--save-result", "--result-filename",
                     str(path), "--json"]) == 0
        data = json.loads(path.read_text())
        data["speculative_config"] = json.dumps(SERVED)
        path.write_text(json.dumps(data))
        paths.append(path)
    return paths


def _calibrate(capsys, tmp_path, paths):
    out = tmp_path / "cal.toml"
    code, text, err = run(capsys, "calibrate", *paths, "--gpu", "h100-sxm", "--output", out, "--fix",
                          ALL_BUT_ETA_BW, "--jobs", "1")
    return code, text, err, out


def test_calibrate_fits_the_hidden_acceptance_per_position_back(capsys, tmp_path, spec_runs):
    """The stated tolerance: each position within 0.03 of the truth (about 4 standard errors of
    the ~4,600 drafts these runs make)."""
    code, out, err, profile = _calibrate(capsys, tmp_path, spec_runs)
    assert code == 0, err
    rows = [line.split() for line in out.splitlines() if line.startswith("  ") and line.split()[0] in "012"]
    assert [row[0] for row in rows] == ["0", "1", "2"]
    given = [float(row[1]) for row in rows]
    fitted = [float(row[2]) for row in rows]
    assert given == [0.74, 0.54, 0.41]  # EAGLE-3's default (vLLM issue 26191), what the config alone says
    assert fitted == pytest.approx(TRUTH_RATES, abs=0.03)
    assert max(abs(f - g) for f, g in zip(fitted, given)) > 0.08  # far from the default: the fit moved them
    config = json.loads(out.split("Use it with: --speculative-config '")[1].split("'")[0])
    assert config["synthetic_acceptance_rates"] == pytest.approx(fitted, abs=0.001)
    assert "per position fitted to" in profile.read_text() and "synthetic_acceptance_rates" in profile.read_text()
    # the GPU's fit saw the runs replayed with the fitted acceptance: their TPOT is matched
    tpot = [line for line in out.splitlines() if "TPOT p50 ms" in line]
    assert len(tpot) == 2 and all(abs(float(line.split()[-1].rstrip("%"))) < 2.5 for line in tpot), tpot
    # and the GPU comes back as the one the runs were made on (replayed with EAGLE-3's default
    # acceptance, its weight reads would look slower to make up for the drafts it misses)
    import tomllib

    assert tomllib.loads(profile.read_text())["gpus"]["h100-sxm-calibrated"]["eta_bw"] == pytest.approx(0.80, rel=0.01)


def test_runs_without_spec_decode_keys_leave_the_acceptance_as_given_and_say_so(capsys, tmp_path, spec_runs):
    paths = []
    for path in spec_runs:
        data = {k: v for k, v in json.loads(path.read_text()).items() if not k.startswith("spec_decode_")}
        paths.append(tmp_path / path.name)
        paths[-1].write_text(json.dumps(data))
    code, out, err, profile = _calibrate(capsys, tmp_path, paths)
    assert code == 0, err
    words = " ".join(out.split())
    assert "no run carries vllm bench serve's spec_decode keys, so its acceptance is left as given: 0.740, " \
           "0.540, 0.410 per position (vLLM issue 26191" in words
    assert "--speculative-config" not in out and "speculative decoding" not in profile.read_text()


def test_a_run_measured_with_drafts_but_no_config_is_refused(capsys, tmp_path, spec_runs):
    data = json.loads(spec_runs[0].read_text())
    del data["speculative_config"]
    path = tmp_path / "no-config.json"
    path.write_text(json.dumps(data))
    code, _, err, profile = _calibrate(capsys, tmp_path, [path, spec_runs[1]])
    assert code == 2 and err.count("\n") == 1 and "measured with speculative decoding" in err
    assert "add --speculative-config JSON" in err and not profile.exists()


def test_the_acceptance_fit_pools_drafts_and_falls_back_to_a_constant_rate():
    from sim.speculative import MeasuredDrafts, fit_acceptance

    a = MeasuredDrafts(1000, 1500, (0.8, 0.5, 0.2))
    b = MeasuredDrafts(3000, 3900, (0.6, 0.4, 0.3))
    fit = fit_acceptance([a, b], 3)
    assert fit.per_position and fit.drafts == 4000
    assert fit.rates == pytest.approx([0.65, 0.425, 0.275])  # weighted by drafts
    assert fit.sigma[0] == pytest.approx((0.65 * 0.35 / 4000) ** 0.5)
    # without per-position rates: a constant acceptance a with a + a^2 + a^3 = accepted per draft
    alone = fit_acceptance([MeasuredDrafts(1000, 1500), MeasuredDrafts(3000, 3900)], 3)
    assert not alone.per_position and sum(alone.rates) == pytest.approx(5400 / 4000)
    ratio = alone.rates[1] / alone.rates[0]
    assert alone.rates == pytest.approx([ratio, ratio ** 2, ratio ** 3])
    with pytest.raises(ValueError, match="2 positions, its speculative config 3"):
        fit_acceptance([MeasuredDrafts(10, 5, (0.5, 0.0))], 3)


def test_the_setup_line_says_expert_parallelism_and_the_kv_dtype(capsys):
    """The line saying what was simulated read "Qwen3 30B-A3B on 2 x H100 SXM 80 GB" with or
    without --enable-expert-parallel, and "KV cache 56,017 blocks" for an fp8 cache as for a
    bf16 one: which was run showed only in the vllm serve line at the end of a plan. It says both."""
    argv = ["sim", "--model", "qwen3-30b-a3b", "--tensor-parallel-size", "2", "--num-prompts", "20",
            "--input-len", "64", "--output-len", "8"]
    _, plain, _ = run(capsys, *argv)
    _, ep, _ = run(capsys, *argv, "--enable-expert-parallel", "--kv-cache-dtype", "fp8")
    plain, ep = " ".join(plain.split()), " ".join(ep.split())
    assert "on 2 x H100 SXM 80 GB: continuous batching" in plain and "; KV cache " in plain
    assert "on 2 x H100 SXM 80 GB with expert parallelism: continuous batching" in ep and "; fp8 KV cache " in ep
