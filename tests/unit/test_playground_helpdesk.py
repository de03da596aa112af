"""The playground's `m`: the multi-turn helpdesk's traffic (`sim.workload.MULTI_TURN_HELPDESK`)
as dial settings the engine takes one by one, and back to single turns."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sim import dials
from sim.engine import Engine
from sim.errors import ConfigError
from sim.workload import MULTI_TURN_HELPDESK, LengthSpec
from steps.activities import helpdesk_switch
from tests import shared_steps


@pytest.fixture(scope="module")
def playground():
    return shared_steps.lessons()[-1]


def applied(current, settings):
    """The scenario an engine ends with after `set_dial` of each setting, in order."""
    engine = Engine(current, live=True)
    for path, value in settings.items():
        engine.set_dial(path, value)
    return engine.scenario


def test_single_turn_traffic_becomes_the_helpdesk_chat_and_nothing_else_moves(playground):
    current = dials.set_value(playground.scenario, "engine.max_num_seqs", 64)
    current = dials.set_value(current, "workload.batch_pool_share", 0.2)
    switch = helpdesk_switch(playground, current)
    assert switch.multi_turn and switch.scenario.workload == MULTI_TURN_HELPDESK
    # Only what differs, each a dial of the simulator's table; the engine's dials untouched.
    assert set(switch.settings) == {"workload.request_rate", "workload.input.mean", "workload.turns",
                                    "workload.prefix_len", "workload.think_time", "workload.batch_pool_share"}
    assert switch.scenario.engine == current.engine and switch.scenario.gpu == current.gpu
    assert applied(current, switch.settings) == switch.scenario
    # The playground's own dials show every setting it makes (none is left to a hidden one).
    assert set(switch.settings) <= {d.name for d in playground.dials}


def test_back_to_the_traffic_the_learner_left_else_the_step_s_own(playground):
    mine = dials.set_value(playground.scenario, "workload.request_rate", 22.0)
    chat = helpdesk_switch(playground, mine).scenario
    back = helpdesk_switch(playground, chat, before=mine)
    assert not back.multi_turn and back.scenario.workload == mine.workload
    # Nothing remembered (a file opened as a chat, say): the step's starting traffic, one turn.
    assert helpdesk_switch(playground, chat).scenario.workload == playground.scenario.workload
    as_chat = replace(playground, scenario=chat)
    assert helpdesk_switch(as_chat, chat).scenario.workload == replace(MULTI_TURN_HELPDESK, turns=1)


def test_settings_that_depend_on_each_other_are_ordered_so_each_is_accepted(playground):
    # A ramp-up needs its rates before its strategy; a dataset its file before its name.
    ramp = replace(playground.scenario.workload, arrival="gamma", ramp_up_strategy="linear",
                   ramp_up_start_rps=2.0, ramp_up_end_rps=8.0, input=LengthSpec(dist="uniform", mean=300, low=100))
    ramp.validate()
    chat = helpdesk_switch(playground, playground.scenario).scenario
    back = helpdesk_switch(playground, chat, before=replace(playground.scenario, workload=ramp))
    assert back.scenario.workload == ramp
    assert applied(chat, back.settings) == back.scenario
    order = list(back.settings)
    assert order.index("workload.ramp_up_start_rps") < order.index("workload.ramp_up_strategy")


def test_traffic_no_dial_can_reach_is_refused_with_the_reason(playground):
    chat = helpdesk_switch(playground, playground.scenario).scenario
    unreachable = replace(playground.scenario.workload, dataset="sharegpt", dataset_path="")
    with pytest.raises(ConfigError, match="dataset"):
        helpdesk_switch(playground, chat, before=replace(playground.scenario, workload=unreachable))
