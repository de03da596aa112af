"""The playground runs the helpdesk as a chat: its dials turn prefix caching off and on and make
the traffic multi-turn with a shared system prompt; the KV and metrics views follow."""

from __future__ import annotations

import steps
from batchtui.formatting import percent
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
    app = make_app(steps.load_steps(), start_step=20)
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
