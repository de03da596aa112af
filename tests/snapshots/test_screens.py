"""What the learner sees, screen by screen. Update with --snapshot-update after looking at the
new SVGs (tests/snapshots/__snapshots__/)."""

from __future__ import annotations

import pytest

from sim.deployments import model_choices
from sim.scenario import Scenario
from snapshot_steps import advance

SECONDS_SHOWN = 20.0  # simulated seconds run before each screenshot: queues and batches formed
GPT_OSS_ROW = [c.model_id for c in model_choices(Scenario())].index("gpt-oss-120b")
"""gpt-oss 120B's row in the playground's model picker (`l`), counted from the top."""


@pytest.mark.parametrize("number", range(1, 21))
def test_every_step_at_80x24(snap_compare, tutorial, number):
    assert snap_compare(tutorial(number), terminal_size=(80, 24), run_before=advance(SECONDS_SHOWN))


@pytest.mark.parametrize("number", range(1, 21))
def test_every_step_at_80x23(snap_compare, tutorial, number):
    # An 80x24 terminal in tmux: the status line leaves the program 23 lines.
    assert snap_compare(tutorial(number), terminal_size=(80, 23), run_before=advance(SECONDS_SHOWN))


@pytest.mark.parametrize("number", [1, 6, 7, 14])
def test_some_steps_at_120x40(snap_compare, tutorial, number):
    assert snap_compare(tutorial(number), terminal_size=(120, 40), run_before=advance(SECONDS_SHOWN))


def test_step_6_at_200x60(snap_compare, tutorial):
    assert snap_compare(tutorial(6), terminal_size=(200, 60), run_before=advance(SECONDS_SHOWN))


class TestOverlays:
    def test_help(self, snap_compare, tutorial):
        # ? opens the orientation and the key table over the lesson.
        assert snap_compare(tutorial(1), terminal_size=(80, 24), press=["question_mark"])

    def test_orientation_on_first_launch(self, snap_compare, tutorial):
        assert snap_compare(tutorial(1, first_launch=True), terminal_size=(80, 24))

    def test_table_of_contents(self, snap_compare, tutorial):
        # t opens the contents with the current step (5) highlighted.
        assert snap_compare(tutorial(5), terminal_size=(80, 24), press=["t"])

    def test_too_small(self, snap_compare, tutorial):
        assert snap_compare(tutorial(1), terminal_size=(60, 20))

    def test_glossary(self, snap_compare, tutorial):
        # d opens the glossary at step 10's term, in a tmux pane of an 80x24 terminal.
        assert snap_compare(tutorial(10), terminal_size=(80, 23), press=["d"])


class TestPredictions:
    def test_a_wrong_guess_gets_its_line_and_may_guess_again(self, snap_compare, tutorial):
        # Step 13: guess 1 (the answer is 2); once the run's result is in, choice 1's own line,
        # the run's reading dated, and the keys to guess again or see the answer.
        async def run_before(pilot) -> None:
            await pilot.press("1")
            await advance(1.0)(pilot)
            await advance(SECONDS_SHOWN + 1.0)(pilot)
            await pilot.press("end")
            await pilot.pause()

        assert snap_compare(tutorial(13), terminal_size=(80, 24), run_before=run_before)


class TestLayout:
    def test_zoomed(self, snap_compare, tutorial):
        # z: step 12's views on the whole screen, in two columns.
        async def run_before(pilot) -> None:
            await advance(SECONDS_SHOWN)(pilot)
            await pilot.press("z")
            await pilot.pause()

        assert snap_compare(tutorial(12), terminal_size=(80, 24), run_before=run_before)

    def test_second_page_of_views(self, snap_compare, tutorial):
        # v: step 1's views that did not fit the first page (the iteration).
        async def run_before(pilot) -> None:
            await pilot.press("1")  # the prediction starts the run
            await advance(SECONDS_SHOWN)(pilot)
            await pilot.press("v")
            # The guess's feedback is scrolled into view after a refresh (`bring_into_view`), to
            # the lesson's end here: a clean-clone run at load 5-7 shot the lesson a few lines
            # higher (as test_ascii_step_5's once did).
            pane = pilot.app.screen.query_one("#lesson-pane")
            for _ in range(100):
                if 0 < pane.max_scroll_y == pane.scroll_y:
                    break
                await pilot.pause(0.02)
            await pilot.pause()

        assert snap_compare(tutorial(1), terminal_size=(80, 24), run_before=run_before)

    def test_a_dial_focused(self, snap_compare, tutorial):
        # tab: the first dial marked, its range on the line under the dials.
        async def run_before(pilot) -> None:
            await advance(SECONDS_SHOWN)(pilot)
            await pilot.press("tab")
            await pilot.pause()

        assert snap_compare(tutorial(6), terminal_size=(80, 24), run_before=run_before)


class TestSpecialSteps:
    def test_cheat_sheet(self, snap_compare, tutorial):
        # c jumps to the cheat sheet from anywhere.
        assert snap_compare(tutorial(3), terminal_size=(80, 24), press=["c"])

    def test_playground(self, snap_compare, tutorial):
        # g jumps to the playground; it shows every view.
        assert snap_compare(tutorial(3), terminal_size=(120, 40), press=["g"], run_before=advance(SECONDS_SHOWN))

    def test_playground_at_80x24(self, snap_compare, tutorial):
        # Zoomed from the start: the dials in two columns, every view the issue names in sight.
        assert snap_compare(tutorial(20), terminal_size=(80, 24), run_before=advance(SECONDS_SHOWN))


    def test_playground_multi_turn_helpdesk_at_80x24(self, snap_compare, tutorial):
        # m: the multi-turn helpdesk's traffic, the notice saying what it changed; 20 s later the
        # KV view holds cached blocks and the metrics show the prefix cache's hits.
        async def run_before(pilot) -> None:
            await pilot.pause()
            await pilot.press("m")
            await advance(SECONDS_SHOWN)(pilot)

        assert snap_compare(tutorial(20), terminal_size=(80, 24), run_before=run_before)


    def test_playground_moe_with_eagle3_at_80x23(self, snap_compare, tutorial):
        # l, ↓ to gpt-oss 120B (MoE, one H100), s: EAGLE-3, Enter; 20 s later, zoomed: the experts
        # its batch read and the drafts its last iteration accepted, beside the other views.
        async def run_before(pilot) -> None:
            await pilot.pause()
            await pilot.press("l", "home", *["down"] * GPT_OSS_ROW, "s", "enter")
            await advance(SECONDS_SHOWN)(pilot)
            await pilot.press("z")
            await pilot.pause()

        assert snap_compare(tutorial(20), terminal_size=(80, 23), run_before=run_before)

    def test_model_picker_at_80x23(self, snap_compare, tutorial):
        # l: every chat model with the fewest H100s that hold it; gpt-oss 120B highlighted, EAGLE-3
        # chosen (its published head named), DeepSeek-V3 too big for eight.
        press = ["l", "home", *["down"] * GPT_OSS_ROW, "s"]
        assert snap_compare(tutorial(20), terminal_size=(80, 23), press=press)


class TestAscii:
    def test_ascii_step_6(self, snap_compare, tutorial):
        assert snap_compare(tutorial(6, ascii_only=True), terminal_size=(80, 24), run_before=advance(SECONDS_SHOWN))

    def test_ascii_step_5(self, snap_compare, tutorial):
        async def run_before(pilot) -> None:
            await pilot.press("2")
            await advance(SECONDS_SHOWN)(pilot)
            # The guess's line is scrolled into view after a refresh (`bring_into_view`): on a
            # loaded machine the shot was once taken before it (a CI run showed the lesson's top).
            pane = pilot.app.screen.query_one("#lesson-pane")
            for _ in range(100):
                if pane.scroll_y > 0:
                    break
                await pilot.pause(0.02)
            await pilot.pause()

        assert snap_compare(tutorial(5, ascii_only=True), terminal_size=(80, 24), run_before=run_before)

    def test_ascii_playground(self, snap_compare, tutorial):
        assert snap_compare(tutorial(20, ascii_only=True), terminal_size=(120, 40), run_before=advance(SECONDS_SHOWN))


class TestLiveServer:
    def test_playground_beside_a_served_twin_at_80x23(self, snap_compare, tutorial):
        # `batchtui --server URL` against `batchtui serve` on a loopback port: the server view
        # first, simulated over measured. The measured figures are the wall clock's, never the
        # same twice: they are masked (each figure one #, with its sign, the mark of a gap out of
        # range and the unit its size chooses: "<-999%", "950" against "2.4k", "980 ms" against
        # "1.02 s"; in its field's width) and their sparklines drawn as ~, every cell (the view's
        # `measured_face`); the simulated ones are the manual clock's, as in every snapshot. The
        # run then pauses (fast-forwarded), and with it the server's traffic, said on the notice
        # line. (A loaded CI run measured a TTFT over ten times the simulated one: ">+999%".)
        import re
        import time

        from batchtui.widgets.server_view import VALUE_WIDTH
        from benchmarks.closed_loop import Server

        def mask(text: str) -> str:
            if text.strip() and set(text) <= set("▁▂▃▄▅▆▇█ "):  # a sparkline, however many cells drawn yet
                return "~" * len(text)
            masked = re.sub(r"[<>]?[+-]?[0-9][0-9,.]*(?:[kM]|\s?m?s\b)?", "#", text)
            # A figure's field (right-aligned, VALUE_WIDTH or GAP_WIDTH wide, full when the gap reads
            # ">+999%") keeps its width; the longer line above them is as long as it reads.
            return masked.strip().rjust(len(text)) if len(text) <= VALUE_WIDTH else masked

        server = Server("--time-scale", "4", "--stream-interval", "4")
        try:
            app = tutorial(20, server_url=server.url)

            async def run_before(pilot) -> None:
                deadline = time.monotonic() + 60
                live = app.tutorial.live
                while live.measured is None or live.measured.time < 14 or not live.measured.completed:
                    assert time.monotonic() < deadline, "no figures from the server"
                    await pilot.pause(0.1)
                for view in app.tutorial.stack.views("server"):
                    view.measured_face = mask
                await advance(SECONDS_SHOWN)(pilot)
                while live.session is not None and live.session.segment is not None:
                    assert time.monotonic() < deadline, "the server's traffic did not stop"
                    await pilot.pause(0.1)
                await pilot.pause()

            assert snap_compare(app, terminal_size=(80, 23), run_before=run_before)
        finally:
            server.stop()
