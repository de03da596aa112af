"""An error names a dial by its path in the table of dials (`sim.dials`), and each face spells it
its own way: a scenario file by its key (the path), the command line by its flag, the app by its
label. For every dial: a value out of its range, refused by the table's check and by the
simulator's own checks below it, names that dial, and each face's one line says it in that
face's spelling."""

from __future__ import annotations

import dataclasses
import re

import pytest

from batchtui.cli.setup import flag_message
from batchtui.formatting import in_app_words
from sim import dials
from sim.engine import Engine
from sim.errors import ConfigError, SimError
from sim.scenario import Scenario
from sim.workload import WorkloadSpec

from tests.unit.cli_run import run

# Dials the simulator does not check again below the table: names (a profile id is looked up,
# a file read), the seed (any whole number seeds the generator) and the switches (enforce_eager,
# enable_expert_parallel).
NO_CHECK_BELOW = {"gpu", "model", "seed", "enforce_eager", "enable_expert_parallel", "workload.trace_path",
                  "workload.pool",
                  "workload.dataset_path"}


def out_of_range(spec: dials.DialSpec):
    """A value the dial does not take."""
    if spec.type == "bool":
        return "maybe"
    if spec.type == "text":
        return 3
    if spec.type == "choice":
        return "no-such-choice"
    if spec.choices:
        return next(v for v in range(1, 10_000) if v not in spec.choices)
    if spec.minimum is not None:
        return spec.minimum if spec.above else spec.minimum - 1
    return spec.maximum + 1


def checked_below(spec: dials.DialSpec) -> ConfigError:
    """The error the simulator's own checks (the engine's config, the deployment, the traffic)
    give for the dial out of range, the table's check bypassed."""
    bad = out_of_range(spec)
    head, _, rest = spec.path.partition(".")
    scenario = Scenario(workload=WorkloadSpec(num_prompts=10, request_rate=10.0))
    with pytest.raises(ConfigError) as refused:
        if head == "engine":
            scenario.with_engine(**{rest: bad}).engine_config()
        elif head == "workload":
            w = scenario.workload
            parts = rest.split(".")
            if len(parts) == 2:  # a length: the distribution that reads it, checked
                side, field = parts
                length = dataclasses.replace(getattr(w, side), **{field: bad})
                if field == "long_len":
                    length = dataclasses.replace(length, dist="mixed")
                w = dataclasses.replace(w, **{side: length}, batch_pool_share=0.5 if "batch" in side else 0.0)
            else:
                if rest.startswith("ramp_up_") and rest != "ramp_up_strategy":
                    w = dataclasses.replace(w, ramp_up_strategy="linear", ramp_up_start_rps=1.0, ramp_up_end_rps=2.0)
                w = dataclasses.replace(w, **{rest: bad})
            w.validate()
        else:
            dataclasses.replace(scenario, **{spec.path: bad}).deployment()
    return refused.value


def assert_faces_spell(error: ConfigError, spec: dials.DialSpec) -> None:
    """The file's message names the dial by its path, the command line's by its flag (the path
    where it has none), the app's by its label; every other dial the message names, too."""
    file_words, cli_words, app_words = str(error), flag_message(error), in_app_words(error)
    assert all("\n" not in words for words in (file_words, cli_words, app_words))
    assert file_words.startswith(f"{spec.path} = ")
    assert cli_words.startswith(f"{spec.flag or spec.path} = ")
    assert app_words.startswith(f"{spec.label} = ")
    assert flag_message(error, {spec.path}).startswith(f"argument {spec.flag}: " if spec.flag else spec.path)
    named = error.dials()
    assert named[0] == spec.path
    for path in named[1:]:
        other = dials.find(path)  # a reference is to a dial of the table
        assert path in file_words and (other.flag or path) in cli_words and other.label in app_words
    for path in named:  # no dial left in its path's spelling where the face has its own
        other = dials.find(path)
        assert not (other.flag and says(cli_words, path)) and not (path not in other.label and says(app_words, path))
    assert "{" not in file_words + cli_words + app_words


def says(words: str, path: str) -> bool:
    """Whether `words` name `path` as a word of its own (not inside a flag or another path)."""
    return re.search(rf"(?<![-\w.]){re.escape(path)}(?![\w.])", words) is not None


@pytest.mark.parametrize("spec", dials.DIALS, ids=lambda s: s.path)
def test_a_value_out_of_range_names_the_dial_in_each_faces_spelling(spec):
    with pytest.raises(ConfigError) as refused:
        spec.coerce(out_of_range(spec))
    assert refused.value.dial == spec.path
    assert_faces_spell(refused.value, spec)
    if spec.path not in NO_CHECK_BELOW:
        below = checked_below(spec)
        assert below.dial == spec.path, below
        assert_faces_spell(below, spec)


@pytest.mark.parametrize("spec", dials.DIALS, ids=lambda s: s.path)
def test_a_scenario_file_refuses_a_dial_by_its_key(spec):
    """A scenario file names a dial by its dotted key, which is its path (`engine.max_num_seqs =
    0`, or `max_num_seqs = 0` under `[engine]`)."""
    bad = out_of_range(spec)
    text = f"{spec.path} = {bad!r}".replace("'", '"')
    with pytest.raises(SimError) as refused:
        Scenario.from_toml(text, "mine.toml")
    said = str(refused.value)
    assert said.startswith(f"mine.toml: {spec.path} = ") and " is not allowed: " in said and "\n" not in said


@pytest.mark.parametrize("text", ['hf_config_path = 5', 'profiles_path = true', 'offline = "no"', 'offline = 1'])
def test_a_scenario_files_other_settings_of_the_wrong_kind_are_refused_by_key(text, tmp_path, capsys):
    """The settings that are no dial: a file's path that is not text was an internal error
    (TypeError, joining it to the file's folder), and `offline = "no"` ran offline."""
    (tmp_path / "s.toml").write_text(text + "\n")
    with pytest.raises(SimError) as refused:
        Scenario.load(tmp_path / "s.toml")
    key = text.split(" = ")[0]
    assert str(refused.value).startswith(f"{tmp_path / 's.toml'}: {key} = ") and " is not allowed: " in str(refused.value)
    code, _, err = run(capsys, "sim", "--scenario", tmp_path / "s.toml", "--num-prompts", 2)
    assert code == 2 and err.count("\n") == 1 and f"{key} = " in err, err


@pytest.mark.parametrize(("text", "flags", "said"), [
    # a dial the file sets against another's default: the file's refusal, in its keys
    ("[engine]\nmax_num_seqs = 16384\n", (), "{f}: engine.max_num_batched_tokens = 8192 is not allowed: at least "
                                              "engine.max_num_seqs (16,384) (vLLM requires"),
    ("[engine]\nmax_num_batched_tokens = 100\n", (), "{f}: engine.max_num_batched_tokens = 100 is not allowed: "
                                                      "at least engine.max_num_seqs (1,024)"),
    # the command line gave one of the dials: its own words, as before
    ("[engine]\nmax_num_seqs = 16384\n", ("--max-num-batched-tokens", 1000),
     "argument --max-num-batched-tokens: 1000 is not allowed: at least --max-num-seqs (16,384)"),
])
def test_a_scenario_files_refusal_of_two_dials_names_them_by_its_keys(text, flags, said, tmp_path, capsys):
    """`[engine] max_num_seqs = 16384` was refused as "--max-num-batched-tokens = 8192 is not
    allowed: at least --max-num-seqs (16,384)", flags the command line never had; a refusal of
    one dial in the file names the file and its key, and so does one of two."""
    path = tmp_path / "s.toml"
    path.write_text(text)
    code, _, err = run(capsys, "sim", "--scenario", path, "--num-prompts", 2, *flags)
    assert code == 2 and err.startswith(f"batchtui: error: {said.format(f=path)}"), err
    assert err.count("\n") == 1


@pytest.mark.parametrize("spec", dials.DIALS, ids=lambda s: s.path)
def test_the_app_refuses_a_dial_with_its_label(spec):
    """The app sets a dial on the live engine (`LiveSimulation.set_dial` -> `Engine.set_dial`);
    a refusal it shows names the dial by the label its dial box shows."""
    engine = Engine(Scenario(workload=WorkloadSpec(num_prompts=0, request_rate=10.0)), live=True)
    with pytest.raises(ConfigError) as refused:
        engine.set_dial(spec.path, out_of_range(spec))
    assert in_app_words(refused.value).startswith(f"{spec.label} = ")


def test_cross_references_are_spelled_by_each_face():
    """A message that names a second dial names it in the face's spelling too."""
    with pytest.raises(ConfigError) as refused:
        Scenario().with_engine(max_num_seqs=4096, max_num_batched_tokens=2048).engine_config()
    error = refused.value
    assert error.dials() == ["engine.max_num_batched_tokens", "engine.max_num_seqs"]
    assert str(error).startswith("engine.max_num_batched_tokens = 2048 is not allowed: at least "
                                 "engine.max_num_seqs (4,096)")
    assert flag_message(error).startswith("--max-num-batched-tokens = 2048 is not allowed: at least "
                                          "--max-num-seqs (4,096)")
    assert in_app_words(error).startswith("token budget = 2,048 is not allowed: at least seats (4,096)")


def test_the_app_refusal_shows_numbers_as_its_dials_show_them():
    """The seats dial shows 16,384 (`formatting.number`); its refusal said "(16384)"."""
    from batchtui.formatting import number

    with pytest.raises(ConfigError) as refused:
        Scenario().with_engine(max_num_seqs=16384, max_num_batched_tokens=8192).engine_config()
    assert in_app_words(refused.value).startswith(
        f"token budget = {number(8192)} is not allowed: at least seats ({number(16384)})")
    assert number(16384) == "16,384"


def test_a_value_in_a_flags_own_unit_is_shown_in_it():
    error = ConfigError("engine.max_queue_delay", 2.5, "a wait in seconds up to 1")
    assert flag_message(error, {"engine.max_queue_delay"}).startswith("argument --max-queue-delay-ms: 2500 is")


CLI_FLAGS = [s for s in dials.DIALS if s.flag and s.type in ("int", "float", "choice")
             and s.path not in ("gpu", "model")]


@pytest.mark.parametrize("spec", CLI_FLAGS, ids=lambda s: s.flag)
def test_the_command_line_refuses_a_flag_naming_it(capsys, spec):
    bad = out_of_range(spec)
    if isinstance(bad, (int, float)) and spec.flag_scale != 1.0:
        bad = bad * spec.flag_scale
    code, _, err = run(capsys, "sim", "--num-prompts", "5", spec.flag, bad)
    assert code == 2 and err.count("\n") == 1
    assert f"argument {spec.flag}" in err, err  # (argparse adds an alias after a slash)


def test_each_spelling_names_one_dial():
    """A label or a flag names one dial, so that a message in the app's or the command line's
    words says which."""
    labels = [s.label for s in dials.DIALS]
    flags = [s.flag for s in dials.DIALS if s.flag]
    assert len(set(labels)) == len(labels) and len(set(flags)) == len(flags)


def test_a_trace_case_names_the_dial_by_its_config_key():
    """A trace case's config is a file of its own, with its own keys (`policy` for the
    scheduling policy): its refusals name them."""
    from sim.trace import config_from_case

    config = {"block_size": 16, "num_blocks": 20, "max_num_batched_tokens": 4, "max_num_seqs": 8,
              "max_model_len": 128}
    with pytest.raises(SimError) as refused:
        config_from_case(config)
    assert str(refused.value).startswith("config: max_num_batched_tokens = 4 is not allowed: at least "
                                         "max_num_seqs (8)")
    with pytest.raises(SimError) as refused:
        config_from_case({**config, "max_num_batched_tokens": 64, "policy": "lifo"})
    assert str(refused.value).startswith("config: policy = 'lifo' is not allowed")


def test_the_error_crosses_a_process_whole():
    """A pool's worker sends its error back pickled: it arrives with its dial, still spellable."""
    import pickle

    error = ConfigError("engine.max_num_batched_tokens", 2048, "at least {engine.max_num_seqs} (4096)", "why")
    again = pickle.loads(pickle.dumps(error))
    assert (again.dial, again.value, again.allowed, again.why) == (error.dial, 2048, error.allowed, "why")
    assert in_app_words(again) == in_app_words(error) and str(again) == str(error)


def test_a_request_refusal_names_the_limit_in_each_faces_spelling():
    """A request too long for the context: the dial it runs into, as each face says it."""
    import pickle

    from sim.errors import RequestRejected

    engine = Engine(Scenario(workload=WorkloadSpec(num_prompts=0, request_rate=10.0))
                    .with_engine(max_model_len=300), live=False)
    with pytest.raises(RequestRejected) as refused:
        from sim.request import check_request

        check_request("huge", 400, 10, engine.config, engine.pool)
    error = refused.value
    assert "not shorter than engine.max_model_len (300)" in str(error)
    assert "not shorter than --max-model-len (300)" in flag_message(error)
    assert "not shorter than max model length (300)" in in_app_words(error)
    assert error.spelled_reason(dials.flag_of).endswith("--max-model-len (300)")
    again = pickle.loads(pickle.dumps(error))
    assert flag_message(again) == flag_message(error)


def test_a_model_that_does_not_fit_names_the_dials_in_each_faces_spelling():
    from sim.errors import ProfileError
    from sim.profiles import load_profiles

    with pytest.raises(ProfileError) as refused:
        load_profiles().deployment(model_id="llama-3.1-70b")
    error = refused.value
    assert "Set tensor_parallel_size to 2" in str(error)
    assert "Set --tensor-parallel-size to 2" in flag_message(error)
    assert f"Set {dials.BY_PATH['tensor_parallel_size'].label} to 2" in in_app_words(error)
    assert "{" not in str(error) + flag_message(error) + in_app_words(error)


def test_braces_that_name_no_dial_are_kept():
    error = SimError("a line must be a JSON object such as {prompt} or {engine.max_num_seqs}")
    assert str(error) == "a line must be a JSON object such as {prompt} or engine.max_num_seqs"
    assert flag_message(error).endswith("{prompt} or --max-num-seqs")


def test_a_message_knows_every_dial_whichever_module_was_imported():
    """The errors never import the table of dials (it imports them): the table declares its paths
    in `sim.dial_paths`, and the package loads it first, so a process that imported only the
    errors (or the profiles, which raise errors naming dials) spells them alike."""
    import subprocess
    import sys

    from sim import dial_paths

    assert dial_paths.PATHS == set(dials.BY_PATH)
    code = ("from sim.errors import SimError, RequestRejected\n"
            "print(SimError('{engine.max_num_seqs} {gpu} {prompt}'))\n"
            "print(RequestRejected('r', 'over {engine.max_model_len}').spelled_reason(str.upper))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["engine.max_num_seqs gpu {prompt}", "over ENGINE.MAX_MODEL_LEN"]


def test_a_restart_dial_refused_leaves_the_run_as_it_was():
    """The engine's word is "a refused value changes nothing": a restart dial refused by the
    build (the KV cache too small for max_model_len) had already set the engine's scenario, model,
    GPU and deployment, the old run going on under them. The app then read the refused GPU from
    the run while its dial showed the old one, and refused the next move on the wrong GPU (step
    19: "Qwen2.5 14B does not fit on one L40S" beside a GPU dial reading b200)."""
    engine = Engine(Scenario(workload=WorkloadSpec(num_prompts=0, request_rate=10.0)), live=True)
    for _ in range(50):
        engine.step()
    scenario, deployment, config = engine.scenario, engine.deployment, engine.config
    with pytest.raises(ConfigError) as refused:
        engine.set_dial("gpu_memory_utilization", 0.3)
    assert refused.value.dial == "engine.max_model_len"
    assert engine.scenario is scenario and engine.deployment is deployment and engine.config is config
    assert engine.iteration == 50 and engine.step() is not None and engine.iteration == 51
