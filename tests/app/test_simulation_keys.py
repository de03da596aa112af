"""Run, pause, single iteration, speed, reset and dials drive the live simulation."""

from __future__ import annotations

from batchtui.widgets.dial import DialControl
from batchtui.widgets.iteration import IterationView
from batchtui.widgets.key_bar import KeyBar
from batchtui.widgets.notice_line import NoticeLine
from batchtui.widgets.seats import SeatsView
from batchtui.widgets.sim_view import SimView


async def test_full_stop_runs_exactly_one_iteration_and_the_views_show_it(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        sim = app.screen.sim
        assert sim.engine.iteration == 0
        await pilot.press("full_stop")
        await pilot.pause()
        assert sim.engine.iteration == 1
        await pilot.press("full_stop", "full_stop")
        await pilot.pause()
        assert sim.engine.iteration == 3
        seats = app.screen.query_one(SeatsView)
        assert seats.snapshot is not None and seats.snapshot.iteration == 3


async def test_space_toggles_run_and_the_footer_says_which(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        sim = app.screen.sim
        keys = app.screen.query_one(KeyBar)
        assert sim.running  # a step without a prediction starts running
        assert keys.labels.get("sim.run_pause") == "pause"
        await pilot.press("space")
        assert not sim.running
        assert keys.labels.get("sim.run_pause", "run") == "run"
        await pilot.press("space")
        assert sim.running
        assert keys.labels.get("sim.run_pause") == "pause"


async def test_speed_keys_change_the_time_scale(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        sim = app.screen.sim
        before = sim.time_scale
        await pilot.press("plus")
        assert sim.time_scale > before
        await pilot.press("minus", "minus")
        assert sim.time_scale < before


async def test_the_chosen_speed_lasts_through_the_steps_restarts_and_not_into_the_next_step(make_app):
    """A learner at 30x who resets, or whose guess starts a prediction's run, stays at 30x (the
    guess used to start its run at 1x: a `+` pressed just before it was lost)."""
    from tests import shared_steps

    lessons = shared_steps.lessons()
    app = make_app(lessons, start_step=1)  # a prediction: its run starts with the guess
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*["plus"] * 8)
        assert app.screen.sim.time_scale == 30.0
        old = app.screen.sim
        await pilot.press("1")  # the guess
        await pilot.pause()
        assert app.screen.sim is not old and app.screen.sim.time_scale == 30.0
        old = app.screen.sim
        await pilot.press("r")
        await pilot.pause()
        assert app.screen.sim is not old and app.screen.sim.time_scale == 30.0
        await pilot.press("n")
        await pilot.pause()
        assert app.screen.step.number == 2 and app.screen.sim.time_scale == 1.0


async def test_reset_starts_the_scenario_over(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("full_stop", "full_stop")
        old = app.screen.sim
        await pilot.press("r")
        await pilot.pause()
        assert app.screen.sim is not old
        assert app.screen.sim.engine.iteration == 0


async def test_a_dial_moved_with_arrows_applies_to_the_live_engine(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        engine = app.screen.sim.engine
        assert app.screen.focused.id == "lesson-pane"  # focused at start, so arrows scroll it
        await pilot.press("tab")  # the first dial: request rate 20 req/s, step 1
        assert isinstance(app.screen.focused, DialControl)
        await pilot.press("right", "right")
        assert engine.scenario.workload.request_rate == 22.0
        await pilot.press("shift+left")
        assert engine.scenario.workload.request_rate == 12.0
        await pilot.press("down", "end")  # the seats, to their maximum
        assert engine.config.max_num_seqs == 256
        assert app.screen.focused.value == 256


async def test_an_out_of_range_typed_value_is_refused_with_a_message(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        engine = app.screen.sim.engine
        await pilot.press("tab", "enter")
        await pilot.press(*"999", "enter")  # the entry box starts with "20"; now "20999"
        await pilot.pause()
        notice = app.screen.query_one(NoticeLine)
        assert notice.message.startswith("Refused")
        assert "between 1 and 60" in notice.message
        assert engine.scenario.workload.request_rate == 20.0
        assert app.screen.query_one(DialControl).value == 20


async def test_a_typed_value_in_range_applies(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        engine = app.screen.sim.engine
        await pilot.press("tab", "enter", "ctrl+a", "ctrl+k", *"35", "enter")
        await pilot.pause()
        assert engine.scenario.workload.request_rate == 35.0
        assert isinstance(app.screen.focused, DialControl)  # back on the dial


async def test_a_refused_engine_value_is_shown_not_raised(make_app):
    """The dial allows it but the engine does not: the engine's own sentence is shown."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        dial = screen.query(DialControl)[1]
        screen.sim.engine.set_dial("engine.max_num_batched_tokens", 128)
        dial.post_message(DialControl.Changed(dial, 200))  # 200 seats > a budget of 128 tokens
        await pilot.pause()
        # in the app's words: each dial by its label in the table of dials
        assert screen.query_one(NoticeLine).message.startswith(
            "Refused: token budget = 128 is not allowed: at least seats (200)")
        assert screen.sim.engine.config.max_num_seqs == 64


async def test_a_refused_choice_is_stepped_past_both_ways_saying_why(make_app):
    """The cheat sheet's GPU dial with Qwen2.5 14B at half the memory: the L40S cannot hold it.
    ← from the B200 (and → from the A100) was refused there, again at every press, a wall only
    End and Home jumped: each arrow now steps past the refused choice, and the notice says why."""
    from tests import shared_steps

    app = make_app(shared_steps.lessons(), start_step=19)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        dials = {d.spec.name: d for d in screen.query(DialControl)}
        for name, value in (("model", "qwen2.5-14b"), ("gpu_memory_utilization", 0.5), ("gpu", "a100-80gb")):
            dials[name].post_message(DialControl.Changed(dials[name], value))
            await pilot.pause()
        dials["gpu"].focus()
        for key, gpu in (("right", "b200"), ("left", "a100-80gb")):
            await pilot.press(key)
            await pilot.pause()
            assert screen.sim.scenario.gpu == gpu and dials["gpu"].value == gpu
            assert screen.query_one(NoticeLine).message.startswith(
                "Passed l40s: Qwen2.5 14B does not fit on one L40S 48 GB")
        await pilot.press("end")
        await pilot.pause()
        assert screen.sim.scenario.gpu == "b200" and not screen.query_one(NoticeLine).message
        # End (and Home) whose own end is refused stop at the farthest choice the run takes: the
        # model dial on the L40S at memory 0.78, Qwen2.5 14B (its last) refused, was refused,
        # kept at Llama 3.1 8B
        for name, value in (("model", "llama-3.1-8b"), ("gpu_memory_utilization", 0.78), ("gpu", "l40s")):
            dials[name].post_message(DialControl.Changed(dials[name], value))
            await pilot.pause()
        await pilot.press("down")  # from the GPU dial
        await pilot.press("end")
        await pilot.pause()
        assert screen.sim.scenario.model == "llama-3.2-3b" and dials["model"].value == "llama-3.2-3b"
        assert screen.query_one(NoticeLine).message.startswith("Passed qwen2.5-14b: max model length = 32,768 is not")


async def test_home_and_end_take_the_accepted_choice_nearest_their_end(make_app):
    """Home and End jumped to the first or last choice and, when the run refused it, were refused
    at every press (tmux 80x23, step 20 with Qwen3 32B at memory 0.6: Home on the GPU dial from
    the B200, "Refused: ... H100"): they now take the nearest choice from their end the run
    accepts, by the rule the arrows step past a refused choice by, saying why. Step 19 at memory
    0.8 on the L40S: End on the model dial (Qwen2.5 14B's 32k context refused) lands on Llama 3.2 3B; step 20
    on the L40S at memory 0.3 with Qwen2.5 14B at TP 8: Home on the GPUs dial passes 1 and 2."""
    from tests import shared_steps

    for step, settings, dial, key, lands, notice in (
            (19, (("gpu", "l40s"), ("gpu_memory_utilization", 0.8)), "model", "end", "llama-3.2-3b",
             "Passed qwen2.5-14b: "),
            (20, (("gpu", "l40s"), ("model", "qwen2.5-14b"), ("tensor_parallel_size", 8),
                  ("gpu_memory_utilization", 0.3)), "tensor_parallel_size", "home", 4,
             "Passed 1: Qwen2.5 14B does not fit on one L40S 48 GB")):
        app = make_app(shared_steps.lessons(), start_step=step)
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.screen
            dials = {d.spec.name: d for d in screen.query(DialControl)}
            for name, value in settings:
                dials[name].post_message(DialControl.Changed(dials[name], value))
                await pilot.pause()
                assert dials[name].value == value
            dials[dial].focus()
            await pilot.press(key)
            await pilot.pause()
            assert dials[dial].value == lands and dials[dial].spec.value(screen.sim.scenario) == lands
            assert screen.query_one(NoticeLine).message.startswith(notice)


async def test_views_follow_the_step(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        def shown():
            return [type(view) for view in app.screen.stack.shown() if view.display]

        assert IterationView not in shown()  # step 1 shows seats + metrics
        await pilot.press("n")
        assert IterationView in shown()


async def test_a_step_makes_only_the_views_it_shows_and_keeps_them(make_app):
    """Views are made when first shown (their parts were three quarters of the nodes a start
    styled), then kept: a step that shows none of a view's kind makes none, going back makes
    nothing new, and every view made is in the DOM once, in its own column."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        stack = app.screen.stack

        def made():
            return {(view.view_name, view.parent.id) for view in stack.query(SimView)}

        first = made()
        assert {name for name, _ in first} == {view.view_name for view in stack.shown()}
        assert "iteration" not in {name for name, _ in first}
        await pilot.press("n")
        second = made()
        assert first < second and "iteration" in {name for name, _ in second}
        await pilot.press("p")
        assert made() == second
        assert len(list(stack.query(SimView))) == len(second)


async def test_a_view_asked_for_while_the_app_closes_is_made_but_not_mounted(make_app):
    """A quit read with the step change: the step's start (its run, the KV view's block size)
    comes after the app began to close, when Textual refuses to mount (this crashed on exit)."""
    app = make_app()
    async with app.run_test(size=(80, 24)):
        stack = app.screen.stack
        app.exit()
        views = stack.views("iteration")
        assert len(views) == 2 and not any(view.is_mounted for view in views)


async def test_the_status_line_says_when_the_run_falls_behind_its_speed(make_app):
    from batchtui.widgets.sim_status import SimStatus

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        sim = app.screen.sim
        for _ in range(8):
            await pilot.press("plus")
        assert sim.time_scale == 30.0 and sim.running
        status = app.screen.query_one(SimStatus)
        sim.publish()
        await pilot.pause()
        assert "running 30x" in str(status.render())
        sim.driver.speed = 2.6  # what the driver measured: the frames' work was cut short
        sim.publish()
        await pilot.pause()
        assert "running 2.6x (CPU busy)" in str(status.render())
        sim.driver.speed = 29.0  # keeping up again
        sim.publish()
        await pilot.pause()
        assert "running 30x" in str(status.render())


async def test_the_running_simulation_sees_each_key_the_app_reads(make_app):
    """A frame's engine work stops for a key (sim/driver.py): the driver's reading moves with
    every key the app reads, whichever widget takes it."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        driver = app.screen.sim.driver
        assert driver.keys is not None
        before = driver.keys()
        await pilot.press("tab")
        await pilot.pause()
        middle = driver.keys()
        await pilot.press("escape", "question_mark")
        await pilot.pause()
        assert before != middle != driver.keys()


async def test_step_6_opens_paused_for_one_iteration_at_a_time(make_app):
    """Step 6 opens an iteration up: its run waits, paused, for `.` (one iteration) or space
    (issue 37: it opened running); the steps around it start running."""
    from tests import shared_steps

    lessons = shared_steps.lessons()
    assert lessons[5].paused and lessons[5].number == 6 and not lessons[4].paused
    app = make_app(lessons, start_step=6)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        sim = app.screen.sim
        assert not sim.running and "paused" in str(app.screen.query_one("#sim-status").render())
        await pilot.press("full_stop")
        await pilot.pause()
        assert sim.engine.iteration == 1 and not sim.running
        await pilot.press("space")
        assert sim.running
        await pilot.press("p", "p")  # step 4: a step with nothing to ask first opens running
        await pilot.pause()
        await pilot.pause()
        assert app.screen.step.number == 4 and app.screen.sim.running
