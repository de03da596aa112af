"""The views draw what a snapshot says, in a few bytes per cell."""

from __future__ import annotations

from textual.app import App

from batchtui.widgets.curve import CurvePoint, CurveView, find_knee
from batchtui.widgets.seats import SeatsView
from batchtui.widgets.sparklines import spark_cells
from sim.reports import EngineSnapshot, MetricsView, SeatView


def snapshot(**changes) -> EngineSnapshot:
    seats = (SeatView("decode", "a", 0.5, 3), SeatView("prefill", "b", 0.5, 2), SeatView("padded", "c"),
             SeatView("preempted", "d"), SeatView("idle"))
    values = dict(time=1.0, iteration=5, batching="static", seats=seats, max_num_seqs=5, queue_len=7,
                  running=2, kv_blocks_used=5, kv_blocks_usable=100, kv_blocks_by_request=(("a", 3), ("b", 2)),
                  last=None, metrics=MetricsView(completed=1))
    values.update(changes)
    return EngineSnapshot(**values)


def test_knee_is_where_latency_turns_up():
    flat_then_steep = [CurvePoint(r, t, l) for r, t, l in
                       [(1, 100, 1.0), (2, 200, 1.05), (4, 400, 1.1), (8, 780, 1.3), (16, 800, 5.0), (32, 810, 20.0)]]
    assert find_knee(flat_then_steep) == 3
    assert find_knee(flat_then_steep[:2]) is None


def test_sparkline_scales_to_its_maximum_and_pads_left():
    assert spark_cells([0, 5, 10], 5, ("a", "b", "c")) == "  abc"
    assert spark_cells(list(range(100)), 3, ("a", "b")) == "bbb"  # only the latest values fit


class ViewApp(App):
    def __init__(self, view) -> None:
        super().__init__()
        self.view = view

    def compose(self):
        yield self.view


async def test_seats_show_each_state_with_its_own_glyph_and_the_queue():
    view = SeatsView()
    async with ViewApp(view).run_test(size=(40, 10)) as pilot:
        view.update_snapshot(snapshot())
        await pilot.pause()
        lines = view.render().plain.split("\n")
        assert lines[0].startswith("static 2/5 busy") and lines[0].endswith("queue 7")
        assert lines[1] == "█▄░×·"
        assert "padded 1" in lines[2]


async def test_curve_marks_the_knee_and_the_live_load():
    view = CurveView()
    async with ViewApp(view).run_test(size=(50, 14)) as pilot:
        view.update_curve([(1, 100, 0.001), (2, 200, 0.0011), (4, 390, 0.0013), (8, 420, 0.01)],
                          "TPOT p50", "tpot_p50", "batch")
        view.update_snapshot(snapshot(metrics=MetricsView(completed=3, output_tokens_per_s=250, tpot_p50=0.0012)))
        await pilot.pause()
        text = view.render().plain
        assert "◆" in text and "◉" in text
        assert "knee: batch 4" in text
