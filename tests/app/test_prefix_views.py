"""The playground runs the helpdesk as a chat: its dials turn prefix caching off and on and make
the traffic multi-turn with a shared system prompt; the KV and metrics views follow."""

from __future__ import annotations

from dataclasses import replace

from tests import shared_steps
from batchtui.formatting import percent
from screen_text import screen_text
from sim import dials
from sim.workload import MULTI_TURN_HELPDESK
from standin import make_steps
from batchtui.widgets.dial import DialControl
from batchtui.widgets.kv_cache import KVCacheView
from batchtui.widgets.metrics import MetricsView


async def turn(pilot, dial_name: str, value) -> None:
    dial = next(d for d in pilot.app.screen.query(DialControl) if d.spec.name == dial_name)
    dial.post_message(DialControl.Changed(dial, value))
    await pilot.pause()


def shown(app, kind) -> str:
    """What the view of this kind on show draws (each view exists once per column)."""
    return next(v for v in app.screen.query(kind) if v.snapshot is not None and v.display).render().plain


async def run_for(pilot, seconds: float) -> None:
    for _ in range(int(seconds)):
        pilot.app.screen.sim.fast_forward(1.0)
        await pilot.pause()


async def test_the_playground_runs_a_multi_turn_chat_with_and_without_prefix_caching(make_app):
    app = make_app(shared_steps.lessons(), start_step=20)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        await turn(pilot, "workload.turns", 3)
        await turn(pilot, "workload.prefix_len", 192)
        await turn(pilot, "workload.think_time", 2.0)
        await run_for(pilot, 20)
        engine = app.screen.sim.engine
        assert engine.scenario.workload.turns == 3 and engine.scenario.engine_config().enable_prefix_caching
        snap = engine.snapshot()
        assert snap.prefix_caching and snap.prefix_cache_hits > 0.3 * snap.prefix_cache_queries
        metrics = shown(app, MetricsView)
        rate = snap.prefix_cache_hits / snap.prefix_cache_queries
        assert f"prefix hits {percent(rate)}" in metrics
        kv = shown(app, KVCacheView)
        assert "cached" in kv and snap.evictable_blocks > 0

        await turn(pilot, "engine.enable_prefix_caching", False)
        await run_for(pilot, 5)
        snap = app.screen.sim.engine.snapshot()
        assert not snap.prefix_caching and snap.evictable_blocks == 0 and snap.prefix_cache_hits == 0
        assert "prefix hits" not in shown(app, MetricsView)
        assert "cached" not in shown(app, KVCacheView)


def dial_values(app) -> dict:
    return {d.spec.name: d.value for d in app.screen.query(DialControl)}


async def test_m_loads_the_multi_turn_helpdesk_on_the_dials_and_m_again_goes_back(make_app):
    lessons = shared_steps.lessons()
    playground = lessons[-1]
    app = make_app(lessons, start_step=20)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert " m multi-turn " in screen_text(app).splitlines()[-1]
        # The learner's own settings first: an engine dial and the traffic.
        await turn(pilot, "engine.max_num_seqs", 128)
        await turn(pilot, "workload.request_rate", 12.0)
        await pilot.press("m")
        engine = app.screen.sim.engine
        # The engine runs the simulator's helpdesk chat, exactly; the dials show its values.
        assert engine.scenario.workload == MULTI_TURN_HELPDESK
        helpdesk = replace(engine.scenario, workload=MULTI_TURN_HELPDESK)
        shown_values = dial_values(app)
        for name, value in shown_values.items():
            if name.startswith("workload."):
                assert value == dials.get_value(helpdesk, name), name
        assert shown_values["workload.turns"] == MULTI_TURN_HELPDESK.turns > 1
        assert shown_values["workload.prefix_len"] == MULTI_TURN_HELPDESK.prefix_len > 0
        # Nothing else moved: the seats the learner set stay.
        assert shown_values["engine.max_num_seqs"] == 128 == engine.scenario.engine["max_num_seqs"]
        text = screen_text(app)
        assert f"Turns per chat 1 → {MULTI_TURN_HELPDESK.turns}" in " ".join(text.split())
        assert "Traffic 12 → 4" in text
        assert " m single-turn " in text.splitlines()[-1]

        await run_for(pilot, 20)
        snap = app.screen.sim.engine.snapshot()
        assert snap.prefix_cache_hits > 0
        await pilot.press("z")  # the playground opens on its things to try: the views zoomed
        await pilot.pause()
        assert f"prefix hits {percent(snap.prefix_cache_hits / snap.prefix_cache_queries)}" in shown(app, MetricsView)

        # Back to single turns: the traffic the learner had, their seats still set.
        await pilot.press("m")
        engine = app.screen.sim.engine
        assert engine.scenario.workload == replace(playground.scenario.workload, request_rate=12.0)
        assert dial_values(app)["workload.turns"] == 1 and dial_values(app)["workload.request_rate"] == 12.0
        assert engine.scenario.engine["max_num_seqs"] == 128
        assert "Single-turn traffic: Traffic 4 → 12" in screen_text(app)
        assert " m multi-turn " in screen_text(app).splitlines()[-1]


async def test_m_with_prefix_caching_off_says_so_and_leaves_it_off(make_app):
    app = make_app(shared_steps.lessons(), start_step=20)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        await turn(pilot, "engine.enable_prefix_caching", False)
        await pilot.press("m")
        scenario = app.screen.sim.engine.scenario
        assert scenario.workload == MULTI_TURN_HELPDESK and not scenario.engine_config().enable_prefix_caching
        assert "Prefix caching is off" in " ".join(screen_text(app).split())


async def test_m_does_nothing_outside_the_playground(make_app):
    app = make_app(make_steps(3))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        before = app.screen.sim.engine.scenario
        await pilot.press("m")
        assert app.screen.sim.engine.scenario is before
        assert "multi-turn" not in screen_text(app)
