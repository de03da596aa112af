"""One table of dials (`sim.dials`): every setting is in it once, and a dial set in a scenario
file follows the same rules as one set live."""

from __future__ import annotations

import dataclasses
import math

import pytest

from sim import dials
from sim.config import EngineConfig
from sim.engine import Engine
from sim.errors import ConfigError
from sim.scenario import DEPLOYMENT_KEYS, Scenario
from sim.workload import LengthSpec, WorkloadSpec


def test_every_setting_of_a_scenario_is_a_dial_and_every_dial_a_setting():
    expected = {f"engine.{name}" for name in EngineConfig.field_names()}
    expected |= set(DEPLOYMENT_KEYS) | {"seed"}
    for f in dataclasses.fields(WorkloadSpec):
        if f.type in ("LengthSpec", LengthSpec):
            expected |= {f"workload.{f.name}.{g.name}" for g in dataclasses.fields(LengthSpec)}
        else:
            expected.add(f"workload.{f.name}")
    assert set(dials.BY_PATH) == expected
    scenario = Scenario()
    for spec in dials.DIALS:
        value = dials.get_value(scenario, spec.path)
        assert spec.coerce(value) == value or value is None, spec.path  # defaults are in range


def test_flags_are_unique_and_vllms_own_where_vllm_has_the_setting():
    flags = [d.flag for d in dials.DIALS if d.flag]
    assert len(flags) == len(set(flags)) and all(f.startswith("--") for f in flags)
    assert dials.find("engine.max_num_seqs").flag == "--max-num-seqs"
    assert dials.find("engine.async_scheduling").flag == "--async-scheduling"
    assert dials.find("workload.request_rate").vllm == "bench"
    assert dials.find("workload.max_concurrency").flag == "--max-concurrency"
    assert all(d.vllm in ("serve", "bench", "") and d.applies in dials.APPLIES for d in dials.DIALS)


@pytest.mark.parametrize("path, value, kept", [
    ("engine.max_num_seqs", 64.0, 64),
    ("engine.max_num_seqs", 6.5, None),
    ("engine.max_num_seqs", True, None),
    ("engine.max_num_seqs", 0, None),
    ("engine.enable_chunked_prefill", 1, None),
    ("engine.watermark", 1, None),
    ("engine.watermark", 0, 0.0),
    ("workload.request_rate", 5, 5.0),
    ("workload.request_rate", math.inf, None),  # endless traffic (the base's) needs a finite rate
    ("workload.request_rate", -1.0, None),
    ("workload.input.mean", 300.0, 300),
    ("workload.max_concurrency", 8, 8),
    ("gpu_memory_utilization", 0.5, 0.5),
    ("gpu_memory_utilization", 0, None),
    ("block_size", 24, None),
    ("engine.scheduling_policy", "lifo", None),
])
def test_a_dial_set_in_a_file_follows_the_rules_of_one_set_live(path, value, kept):
    base = Scenario(workload=WorkloadSpec(request_rate=4.0, num_prompts=0))
    data = base.to_dict()
    node = data
    *parents, leaf = path.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = value
    engine = Engine(base, live=True)
    if kept is None:
        with pytest.raises(ConfigError):
            Scenario.from_dict(data)
        with pytest.raises(ConfigError):
            engine.set_dial(path, value)
        assert engine.scenario == base  # a refused value changes nothing
        return
    loaded = dials.get_value(Scenario.from_dict(data), path)
    engine.set_dial(path, value)
    live = dials.get_value(engine.scenario, path)
    assert loaded == live == kept and type(loaded) is type(live) is type(kept)


def test_what_moving_a_dial_does_to_a_live_run():
    engine = Engine(Scenario(workload=WorkloadSpec(request_rate=20, num_prompts=0)), live=True)
    engine.advance_until(1.0)
    before = engine.iteration
    engine.set_dial("engine.max_num_seqs", 8)  # from the next iteration
    assert engine.iteration == before and engine.config.max_num_seqs == 8
    engine.set_dial("workload.request_rate", 2.0)  # arrivals from now on
    assert engine.iteration == before and engine.scenario.workload.request_rate == 2.0
    engine.set_dial("engine.async_scheduling", True)  # the engine's structure: starts over
    assert engine.iteration == 0 and engine.config.async_scheduling
    engine.advance_until(0.5)
    engine.set_dial("seed", 3)
    assert engine.iteration == 0 and engine.scenario.seed == 3


def test_parse_reads_what_a_learner_or_a_command_line_types():
    assert dials.find("workload.request_rate").parse("inf") == math.inf
    assert dials.find("engine.max_num_seqs").parse("1,024") == 1024
    assert dials.find("engine.max_queue_delay").parse("10") == pytest.approx(0.010)  # the flag is in ms
    assert dials.find("engine.enable_chunked_prefill").parse("off") is False
    assert dials.find("num_gpu_blocks_override").parse("unset") is None
    with pytest.raises(ConfigError, match="a whole number >= 1"):
        dials.find("engine.max_num_seqs").parse("many")
    with pytest.raises(ConfigError, match="dial path"):
        dials.find("engine.warp_speed")


def test_differing_names_the_dials_two_scenarios_set_differently():
    a = Scenario(engine={"max_num_seqs": 64}, workload=WorkloadSpec(request_rate=8.0))
    b = Scenario(workload=WorkloadSpec(request_rate=8.0, output=LengthSpec(mean=512)))
    assert dials.differing(a, b) == {"engine.max_num_seqs", "workload.output.mean"}
    assert dials.differing(a, a) == set()


def test_read_spells_a_value_in_the_dials_unit_for_the_box_and_the_flags_for_the_command_line():
    delay = dials.find("engine.max_queue_delay")
    assert delay.read("0.005", flag_units=False) == 0.005  # the dial box: seconds, as the dial shows
    assert delay.parse("5") == 0.005  # --max-queue-delay-ms 5
    seats = dials.find("engine.max_num_seqs").read("1,024", flag_units=False)
    assert seats == 1024 and isinstance(seats, int)
    assert dials.find("engine.enable_prefix_caching").read(" Off ", flag_units=False) is False
    assert dials.find("engine.max_num_seqs").read("-3", flag_units=False) == -3  # the range is the caller's
    with pytest.raises(ConfigError):
        dials.find("engine.max_num_seqs").read("lots", flag_units=False)


def test_a_lesson_dial_takes_its_label_and_unit_from_the_dial_table_unless_it_words_them():
    from tests import shared_steps

    step = shared_steps.by_number()[12]
    by_name = {d.name: d for d in step.dials}
    budget = by_name["engine.max_num_batched_tokens"]  # no label or unit in the lesson
    assert (budget.label, budget.unit) == ("Token budget", dials.find(budget.name).unit) == ("Token budget", "tokens")
    assert by_name["gpu_memory_utilization"].label == "GPU memory for vLLM"  # the lesson's own words
