"""The curve view: a batch sweep and a rate sweep, the one knee, rates with no steady state,
the saturated rate and an SLO drawn where a learner reads them."""

from __future__ import annotations

from textual.app import App

from batchtui.simulation import SweepResult, batch_sweep, rate_sweep
from batchtui.widgets.curve import CurveView, curve_panel
from sim.curves import find_knee
from sim.reports import EngineSnapshot, MetricsView
from steps import load_step, lessons_dir


def snapshot(**metrics) -> EngineSnapshot:
    return EngineSnapshot(time=1.0, iteration=5, batching="continuous", seats=(), max_num_seqs=256, queue_len=0,
                          running=2, kv_blocks_used=5, kv_blocks_usable=100, kv_blocks_by_request=(), last=None,
                          metrics=MetricsView(completed=3, **metrics))


class ViewApp(App):
    def __init__(self, view) -> None:
        super().__init__()
        self.view = view

    def compose(self):
        yield self.view


BATCH = SweepResult(((1, 166, 0.006), (16, 2500, 0.0065), (64, 7900, 0.0081), (128, 12200, 0.0105),
                     (256, 15900, 0.0161), (512, 17600, 0.029)), "time/token", "tpot_p50", "batch")
RATE = SweepResult(((5, 1200, 0.03), (20, 5000, 0.04), (30, 7500, 0.08), (34, 8300, 0.1), (38, 8900, 0.9),
                    (42, 8900, 1.5)), "TTFT p99", "ttft_p99", "req/s",
                   bounded=(True, True, True, True, False, False), saturated=35.25, slo=0.5)


def test_the_knee_is_sim_curves_knee():
    """The widget has no knee of its own: it marks the one `sim.curves.find_knee` finds."""
    panel = curve_panel(RATE)
    expected = find_knee([5, 20, 30, 34, 38, 42], [1200, 5000, 7500, 8300, 8900, 8900],
                         [30, 40, 80, 100, 900, 1500], bounded=[True, True, True, True, False, False])
    assert panel.knee == expected and (expected.index, expected.reason) == (3, "unbounded")
    batch = curve_panel(BATCH)
    assert batch.knee.index == 4 and batch.knee.reason == "latency"  # 29 ms > 4 x 6 ms at batch 512


async def test_a_batch_sweep_and_a_rate_sweep_one_under_the_other():
    view = CurveView()
    async with ViewApp(view).run_test(size=(34, 40)) as pilot:
        view.update_curves([BATCH], pending=True)
        await pilot.pause()
        assert "rate sweep: running" in view.render().plain
        view.update_curves([BATCH, RATE])
        view.update_snapshot(snapshot(output_tokens_per_s=5000, requests_per_s=20.0, tpot_p50=0.0081, ttft_p99=0.04))
        await pilot.pause()
        text = view.render().plain
        assert "batch 1-512: time/token vs tok/s" in text and "TTFT p99 vs req/s" in text
        assert "◆ knee: batch 256" in text and "◆ knee: 34 req/s" in text
        assert "running" not in text
        assert sum(line.count("◉") for line in text.split("\n") if "│" in line) == 2  # a marker on each plot
        assert all(len(line) <= 34 for line in text.split("\n")), text


async def test_rates_past_saturation_are_arrows_at_the_top_with_the_lines_explained():
    view = CurveView()
    async with ViewApp(view).run_test(size=(34, 20)) as pilot:
        view.update_curves([RATE])
        await pilot.pause()
        lines = view.render().plain.split("\n")
        plot = lines[1:7]
        assert plot[0].count("↑") == 2  # 38 and 42 req/s: no steady TTFT to draw
        assert "0.9" not in "".join(lines) and "1.5" not in "".join(lines)  # their run-length latencies
        assert all("┆" in row for row in plot)  # the saturated rate, top to bottom
        assert plot[1].startswith("500 ms│") and "╌" in plot[1]  # the SLO line, at 500 ms on the axis
        notes = "\n".join(lines[8:])
        assert "↑ queue grows without bound" in notes and "┆ saturated 35.2 req/s" in notes
        assert "╌ SLO 500 ms" in notes
        assert lines[7].endswith(" 42 req/s")  # a req/s axis


async def test_the_live_marker_follows_the_live_run():
    view = CurveView()
    async with ViewApp(view).run_test(size=(34, 20)) as pilot:
        view.update_curves([RATE])
        view.update_snapshot(snapshot(requests_per_s=5.0, ttft_p99=0.03))
        await pilot.pause()
        low = [line.find("◉") for line in view.render().plain.split("\n") if "◉" in line]
        view.update_snapshot(snapshot(requests_per_s=35.0, ttft_p99=20.0))  # past saturation: TTFT 20 s
        await pilot.pause()
        lines = view.render().plain.split("\n")
        high = [(i, line.find("◉")) for i, line in enumerate(lines) if "◉" in line]
        assert high[-1][0] == 1 and high[-1][1] > low[-1]  # above the scale, further right


def test_the_app_sweeps_step_7_at_steady_states():
    """The app's rate sweep is `sim.curves`' steady-state measure: step 7's rates past saturation
    come back unbounded, the others with their window's TTFT p99."""
    step = load_step(lessons_dir() / "07-throughput-versus-latency.md")
    result = rate_sweep(step.scenario, step.sweep.rates, step.sweep.num_prompts)
    by_rate = dict(zip(step.sweep.rates, result.bounded))
    assert 30 < result.saturated < 40
    assert all(not ok for rate, ok in by_rate.items() if rate >= result.saturated)
    assert all(ok for rate, ok in by_rate.items() if rate <= 0.9 * result.saturated)
    assert len(batch_sweep(step.scenario, step.sweep.batch_sizes, step.sweep.context).points) == 10


async def test_a_point_above_the_slo_is_drawn_above_its_line():
    """Step 16 at 64 seats: the 22 req/s point (TTFT p99 565 ms) was drawn on the 500 ms SLO
    line, that row labelled "565 ms", so the point the SLO rate stops before read as inside it."""
    over = SweepResult(((4, 1000, 0.03), (16, 4000, 0.07), (20, 5000, 0.2), (22, 5500, 0.565), (26, 5600, 2.0)),
                       "TTFT p99", "ttft_p99", "req/s", bounded=(True, True, True, True, False), saturated=24.0,
                       slo=0.5)
    view = CurveView()
    async with ViewApp(view).run_test(size=(34, 20)) as pilot:
        view.update_curves([over])
        await pilot.pause()
        plot = view.render().plain.split("\n")[1:7]
        line = next(i for i, row in enumerate(plot) if "╌" in row)
        above = [row.split("│", 1)[1] for row in plot[1:line]]
        assert line > 1 and any(mark in row for row in above for mark in "•◆"), "\n".join(plot)
        below = [row.split("│", 1)[1] for row in plot[line:]]
        assert sum(row.count("•") + row.count("◆") for row in below) == 3, "\n".join(plot)  # 4, 16, 20 req/s
