"""A scenario file's relative paths (a model's config, a dataset, a trace, a profiles file) are
relative to the file's own folder, as a config file's are, not to the directory batchtui runs in;
absolute ones are kept as they are; and a saved scenario names its files so that loading it
again, from anywhere, finds the same files."""

from __future__ import annotations

import json
import os
import shutil
import tomllib
from pathlib import Path

from batchtui.cli import main
from sim.scenario import FILE_KEYS, Scenario

CONFIG = Path(__file__).resolve().parents[2] / "sim" / "data" / "hf-configs" / "Qwen--Qwen3-8B.json"

SCENARIO = """model = "my-qwen3"
hf_config_path = "models/config.json"
profiles_path = "{profiles}"
[workload]
arrival = "poisson"
request_rate = 4.0
num_prompts = 12
dataset = "custom"
dataset_path = "prompts.jsonl"
dataset_output_len = 8
trace_path = "../traces/t.jsonl"
"""


def folder_with_files(root: Path, profiles: str = "profiles.toml") -> Path:
    """root/scen/s.toml naming files beside it, below it and beside its folder."""
    scen = root / "scen"
    (scen / "models").mkdir(parents=True)
    (root / "traces").mkdir()
    shutil.copy(CONFIG, scen / "models" / "config.json")
    (scen / "prompts.jsonl").write_text("".join(f'{{"prompt": "question {i} about a bill"}}\n' for i in range(12)))
    (scen / "profiles.toml").write_text("")
    (root / "traces" / "t.jsonl").write_text("")
    (scen / "s.toml").write_text(SCENARIO.format(profiles=profiles))
    return scen


def same(a: str, b: Path) -> bool:
    return os.path.samefile(a, b)


def test_a_relative_path_is_relative_to_the_files_folder_and_an_absolute_one_kept(tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    absolute = str(tmp_path / "scen" / "profiles.toml")
    scen = folder_with_files(tmp_path, profiles=absolute)
    monkeypatch.chdir(elsewhere)
    for name in (scen / "s.toml", os.path.relpath(scen / "s.toml")):
        named = Scenario.load(name).named_files()
        assert set(named) == set(FILE_KEYS)
        assert same(named["hf_config_path"], scen / "models" / "config.json")
        assert same(named["workload.dataset_path"], scen / "prompts.jsonl")
        assert same(named["workload.trace_path"], tmp_path / "traces" / "t.jsonl")
        assert named["profiles_path"] == absolute  # as written


def test_a_scenario_file_runs_from_another_directory(tmp_path, monkeypatch, capsys):
    """The symptom: `batchtui sim --scenario scen/s.toml` said "models/config.json: cannot read
    the model config" unless run inside scen/."""
    scen = folder_with_files(tmp_path)
    text = (scen / "s.toml").read_text().replace('trace_path = "../traces/t.jsonl"\n', "")
    (scen / "s.toml").write_text(text)
    monkeypatch.chdir(tmp_path)
    assert main(["sim", "--scenario", "scen/s.toml"]) == 0, capsys.readouterr().err
    assert "Simulated my-qwen3" in capsys.readouterr().out


def test_a_saved_scenario_loads_again_with_the_same_files_from_anywhere(tmp_path, monkeypatch):
    scen = folder_with_files(tmp_path)
    (tmp_path / "work" / "data").mkdir(parents=True)
    (tmp_path / "work" / "data" / "flagged.jsonl").write_text("")
    monkeypatch.chdir(tmp_path / "work")
    loaded = Scenario.load(scen / "s.toml")
    # a path given in memory (a flag's, the playground's) is relative to the current directory
    loaded = loaded.with_workload(dataset_path="data/flagged.jsonl")
    beside, away = scen / "again.toml", tmp_path / "state" / "playground.toml"
    loaded.save(beside)
    loaded.save(away)
    # inside the file's folder: written relative to it; outside it: absolute
    written = tomllib.loads(beside.read_text())
    assert written["hf_config_path"] == "models/config.json" and written["profiles_path"] == "profiles.toml"
    assert os.path.isabs(written["workload"]["trace_path"]) and os.path.isabs(written["workload"]["dataset_path"])
    assert tomllib.loads(away.read_text())["workload"]["dataset_path"] == str(
        (tmp_path / "work" / "data" / "flagged.jsonl").resolve())
    monkeypatch.chdir(tmp_path / "state")
    for saved in (beside, away):
        again = Scenario.load(saved).named_files()
        assert set(again) == set(FILE_KEYS)
        for key, name in loaded.named_files().items():
            assert same(again[key], tmp_path / "work" / name if key == "workload.dataset_path" else Path(name))


def test_a_scenario_files_trace_is_replayed_by_the_command_line(tmp_path, monkeypatch, capsys):
    """`sim --scenario s.toml` with `arrival = "trace"` ran Poisson traffic at the file's
    request_rate instead (the trace, found from the file's folder, was never read); a flag that
    names other traffic still replaces it, and --request-rate rescales it as it does a --workload."""
    scen = tmp_path / "scen"
    scen.mkdir()
    (scen / "t.jsonl").write_text("".join(f'{{"arrival_time": {i / 2}, "prompt_len": {100 + i}, "output_len": 5}}\n'
                                          for i in range(3)))
    (scen / "s.toml").write_text('[workload]\narrival = "trace"\ntrace_path = "t.jsonl"\nrequest_rate = 4.0\n')
    monkeypatch.chdir(tmp_path)
    assert main(["sim", "--scenario", "scen/s.toml", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["completed"] == 3 and result["total_input_tokens"] == 303
    assert main(["sim", "--scenario", "scen/s.toml", "--request-rate", "10", "--num-prompts", "6", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["completed"] == 6
    assert main(["sim", "--scenario", "scen/s.toml", "--dataset-name", "random", "--num-prompts", "2",
                 "--input-len", "64", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total_input_tokens"] == 128
