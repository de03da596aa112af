"""Lessons ask before they tell, each step says what it still wants, and a run can be kept as
"before" beside the live "now" (issue 9, the screen's side)."""

from __future__ import annotations

import re
from functools import partial

import pytest

from batchtui.progress import Progress, ProgressStore
from batchtui.widgets.compare import CompareView
from batchtui.widgets.dial import DialControl
from batchtui.widgets.activities.predict import PredictView
from batchtui.widgets.goal_bar import GoalBar
from batchtui.widgets.seats import SeatsView
from screen_text import screen_text
from tests import shared_steps


@pytest.fixture(scope="module")
def lessons():
    return shared_steps.lessons()


def goal(app) -> GoalBar:
    return app.screen.query_one(GoalBar)


async def run_for(pilot, seconds: float, step: float = 0.5) -> None:
    """Simulated time in frames, as the app's clock would deliver them."""
    sim = pilot.app.screen.sim
    for _ in range(round(seconds / step)):
        sim.fast_forward(step)
        await pilot.pause()


async def result_in(pilot) -> None:
    """Run a prediction's run to the moment its result shows (the line under the guess says
    when: `wait_words`), one frame past it."""
    view = pilot.app.screen.query_one(PredictView)
    await run_for(pilot, 1.0)
    pilot.app.screen.sim.fast_forward(view.predict.watch_seconds)
    await pilot.pause()
    await pilot.pause()
    assert view.revealed


async def turn(pilot, dial_name: str, value) -> None:
    """Set a dial the way the learner's keys do (the screen checks and applies it)."""
    dial = next(d for d in pilot.app.screen.query(DialControl) if d.spec.name == dial_name)
    dial.post_message(DialControl.Changed(dial, value))
    await pilot.pause()


# -- predictions before reveals
async def test_a_prediction_comes_before_its_reveal(make_app, lessons):
    step = lessons[4]
    assert step.number == 5 and step.reveal_md
    hidden_words = "moves to throughput"  # from the text after the reveal marker
    assert hidden_words in step.reveal_md and hidden_words not in step.body_md
    app = make_app(list(lessons), start_step=5)
    async with app.run_test(size=(80, 24)) as pilot:
        reveal = app.screen.query_one("#reveal")
        assert not reveal.display
        assert hidden_words not in screen_text(app)
        await pilot.press("end")  # the whole lesson pane: not there either
        assert hidden_words not in screen_text(app)
        assert hidden_words not in app.screen.query_one("#lesson").source
        await pilot.press("2")  # the guess
        await pilot.pause()
        await pilot.pause()
        assert not reveal.display and hidden_words not in screen_text(app)  # its result is not in yet
        await result_in(pilot)
        assert reveal.display and hidden_words in reveal.source
        pane = app.screen.query_one("#lesson-pane")
        assert pane.region.y <= reveal.region.y < pane.region.bottom  # its start brought into sight


async def test_a_step_answered_before_asks_again_with_its_answer_hidden(make_app, lessons, state_dir):
    """Asked again, its answer hidden; the goal line says done, as the table of contents does
    (issue 37: it said "open"). A wrong guess this time gets its line, and the right one after it
    the reveal."""
    ProgressStore(state_dir).save(Progress(current_step=5, answers={5: "2"}, completed={5}))
    app = make_app(list(lessons), start_step=5)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        reveal = app.screen.query_one("#reveal")
        assert not reveal.display
        assert goal(app).state == "done" and goal(app).note == "done before"
        await pilot.press("end")  # down to the question: it says the earlier guess, not the answer
        await pilot.pause()
        assert "Last time you guessed 2" in screen_text(app)
        assert "moves to throughput" not in screen_text(app)
        await pilot.press("3")
        await pilot.pause()
        await pilot.pause()
        assert not reveal.display
        await result_in(pilot)
        assert not reveal.display and goal(app).state == "done"  # wrong this time: guess again
        await pilot.press("2")
        await pilot.pause()
        await pilot.pause()
        assert reveal.display


async def test_a_drill_reveals_once_answered_or_given_up(make_app, lessons):
    drills = [s for s in lessons if s.activity.kind == "drill" and s.reveal_md]
    if not drills:
        pytest.skip("no drill lesson holds back text")
    app = make_app(list(lessons), start_step=drills[0].number)
    async with app.run_test(size=(80, 24)) as pilot:
        assert not app.screen.query_one("#reveal").display
        await pilot.press("ctrl+d")
        await pilot.pause()
        assert app.screen.query_one("#reveal").display


# -- the goal line
@pytest.mark.parametrize("right", [True, False])
async def test_a_guess_counts_when_made_and_a_wrong_one_guesses_again_in_place(make_app, lessons, right):
    """The guess is kept (a right one done) as it is made, whether or not the learner stays for
    the result; the goal line gives the result only when the run does. After a wrong one the
    number keys guess again at once, against the run already seen, until the right one."""
    app = make_app(list(lessons), start_step=1)
    async with app.run_test(size=(80, 24)) as pilot:
        activity = app.screen.step.activity.params
        assert goal(app).state == "open" and "Predict" in goal(app).ask
        guess = activity["answer"] if right else 1 + activity["answer"] % len(activity["choices"])
        await pilot.press(str(guess))
        await pilot.pause()
        assert goal(app).state == "open" and goal(app).note == f"guess {guess}"  # the result: not yet
        assert app.progress.answers[1] == str(guess) and (1 in app.progress.completed) is right
        await run_for(pilot, float(activity.get("watch_s", 20)) + 1, step=5.0)
        assert goal(app).state == ("done" if right else "open")
        if not right:
            assert goal(app).note == f"tried {guess}" and "guess again or ^d for the answer" in goal(app).ask
            assert not app.screen.query_one("#reveal").display
            await pilot.press(str(activity["answer"]))
            await pilot.pause()
            assert goal(app).state == "done" and goal(app).note == "right on try 2"
            assert "Right this time." in str(app.screen.query_one("#predict-status").render())
        assert 1 in app.progress.completed and app.progress.answers[1] == str(activity["answer"])


async def test_step_17_names_its_runs_by_the_seats_the_dial_holds(make_app, lessons):
    """Step 17's table columns and seat captions said "512 seats" after the learner turned the
    seats dial to 640 (the pane beside it read "512 seats 0/640 busy"); keys that turn the dial
    land on it, and the names follow it."""
    app = make_app(list(lessons), start_step=17)
    async with app.run_test(size=(80, 23)) as pilot:
        await run_for(pilot, 1.0)
        assert re.search(r"512 seats\s+64 seats", screen_text(app))
        await pilot.press("tab", "right", "right")  # the seats dial: 512 -> 640
        await pilot.pause()
        assert app.screen.sim.scenario.engine_config().max_num_seqs == 640
        await run_for(pilot, 1.0)
        text = screen_text(app)
        table = app.screen.query_one(CompareView)
        assert table.headers == ("640 seats", "64 seats"), table.headers
        assert re.search(r"640 seats\s+64 seats", text) and re.search(r"640 seats \d+/640 busy", text), text
        seat_panes = [view.caption for view in app.screen.query(SeatsView) if view.display]
        assert "640 seats" in seat_panes and "512 seats" not in seat_panes, seat_panes


async def test_each_wrong_choice_gets_its_own_line_and_ctrl_d_shows_the_answer(make_app, lessons):
    """Step 17's four choices: each wrong one, guessed in turn, is told why it tempts and why it
    is wrong (its own line from the lesson); ctrl+d ("answer" in the footer) then shows the
    answer, its explanation and the run's reading, and the reveal; the step stays undone."""
    step = lessons[16]
    params = step.activity.params
    answer, feedback = params["answer"], params["feedback"]
    assert step.number == 17 and len(params["choices"]) == 4
    wrong = [n for n in range(1, 5) if n != answer]
    app = make_app(list(lessons), start_step=17)
    async with app.run_test(size=(80, 24)) as pilot:
        status = app.screen.query_one("#predict-status")
        await pilot.press(str(wrong[0]))
        await result_in(pilot)
        for n in wrong:
            if n != wrong[0]:
                await pilot.press(str(n))
                await pilot.pause()
            said = " ".join(str(status.render()).split())
            assert f"Not {n}: {feedback[n - 1]}" in said, said
            assert all(feedback[m - 1] not in said for m in wrong if m != n)
        assert "^d answer" in screen_text(app).splitlines()[-1]
        assert not app.screen.query_one("#reveal").display
        await pilot.press("ctrl+d")
        await pilot.pause()
        await pilot.pause()
        said = " ".join(str(status.render()).split())
        assert said.startswith(f"Your guesses: {', '.join(map(str, wrong))}. The answer is {answer}:")
        reveal = " ".join(app.screen.query_one("#predict-reveal").source.split())
        assert reveal.startswith(" ".join(params["explain"].split())) and "In the simulation at t" in reveal
        assert app.screen.query_one("#reveal").display and goal(app).state == "answered"
        assert 17 not in app.progress.completed
        await pilot.press(str(answer))  # the answer is out: number keys pick nothing more
        await pilot.pause()
        assert goal(app).state == "answered"


def goal_on_screen(app) -> str:
    return next(line for line in screen_text(app).split("\n") if line.startswith(" Goal "))


async def test_a_drill_goes_from_try_again_to_done(make_app, lessons):
    """At 80 columns the goal line keeps the drill's keys, its note and its state's word: a
    shorter form of the ask goes in (the note "try again" was cut and "open" dropped)."""
    from batchtui.widgets.activities.drill import DrillView

    app = make_app(list(lessons), start_step=2)
    async with app.run_test(size=(80, 23)) as pilot:
        drill = app.screen.query_one(DrillView)
        await pilot.press("tab", "1", "enter")
        assert (goal(app).state, goal(app).note) == ("open", "try again")
        line = goal_on_screen(app)
        assert "(tab), Enter · try again" in line and line.rstrip().endswith("○ open")
        await pilot.press("ctrl+a", "ctrl+k", *f"{drill.question.answer:.1f}", "enter")
        await pilot.pause()
        assert (goal(app).state, goal(app).note) == ("done", "right")
        await pilot.press("escape")  # the next key puts the goal line back in place of the notice
        line = goal_on_screen(app)
        assert "(tab), Enter · right" in line and line.rstrip().endswith("✓ done")


def test_the_goal_line_keeps_a_drill_s_keys_and_state_at_80_columns():
    """The widest drill and reading goals (answers in sequences, a worked answer shown, under
    --ascii) still show their keys, their note and their state's word on a goal line 80 columns
    wide."""
    from types import SimpleNamespace

    from batchtui.widgets.activities.drill import DrillView
    from batchtui.widgets.activities.read import ReadView
    from batchtui.widgets.goal_bar import GoalBar

    question = SimpleNamespace(unit="sequences", over=True, solved=False, choices=(1, 2, 3))
    goals = {"(tab), Enter": DrillView.goal(SimpleNamespace(question=question, last_wrong=False)),
             "press 1-3": ReadView.goal(SimpleNamespace(question=question, outcome="shown"))}
    for keys, goal in goals.items():
        assert goal.state == "answered"
        for ascii_only, sep, mark in ((False, " · ", "◐"), (True, " | ", "[~]")):
            bar = GoalBar()
            bar.set_marks(ascii_only, sep)
            bar.show(*goal)
            width = 78  # 80 columns less the line's padding
            line = "".join(bar.parts(width))
            assert len(line) <= width and line.endswith(f"{mark} answered"), line
            assert f"{keys}{sep}{goal.note}" in line, line


def _goal_lines(lessons):
    """(what, view or None, step goal or None, keys the line must keep) for the widest goal line
    of each prediction, break-it and checklist step, in each state a learner meets."""
    from types import SimpleNamespace

    from batchtui import goals
    from batchtui.keys import shown
    from batchtui.widgets.activities.break_it import BreakItView
    from steps import activities as act

    wide = SimpleNamespace(time=10.0, queue_len=12_345, kv_blocks_used=28_008, kv_blocks_usable=28_008,
                           metrics=SimpleNamespace(ttft_p99=123.4, itl_max=9.99, tpot_p50=0.008, completed=99))
    for step in lessons:
        kind = step.activity.kind
        if kind == "predict":
            n = len(step.activity.params["choices"])
            for state in ("guess", "waiting", "wrong", "right", "shown"):
                p = act.build(step)
                if state != "guess":
                    p.commit(1)
                    for guess in range(2, n):
                        p.again(guess)
                view = SimpleNamespace(predict=p, revealed=state not in ("guess", "waiting"), watched=0.0,
                                       outcome=state if state in ("wrong", "right", "shown") else "",
                                       done_before=False)
                view.goal = partial(PredictView.goal, view)
                keys = {"guess": (f"1-{n}",), "waiting": ("+",), "wrong": (shown("answer.give_up"),)}
                yield f"{step.number} {state}", view, None, keys.get(state, ())
        elif kind == "break_it":
            view = BreakItView(act.build(step))
            view.snapshot = wide
            yield f"{step.number} open", view, None, ()
            view = BreakItView(act.build(step), done_before=True)
            yield f"{step.number} done before", view, None, ()
        else:
            goal = goals.goal_for(step)
            if isinstance(goal, goals.Checklist):
                keys = tuple(re.findall(r"\(\w\)", " ".join(goal.items.values())))
                yield f"{step.number} checklist", None, goal, keys


def test_every_goal_line_keeps_its_keys_and_state_at_80_columns(lessons):
    """Predictions, break-it challenges and checklists had no shorter forms: at 80 columns, under
    --ascii, a wrong guess's line lost its state's word, step 17's wait was cut to "...", step 8's
    note pushed "open" off, the playground's checklist too. Each line now fits whole: its
    state's word at the end, the keys it names kept, a note (or its shorter form) after the ask."""
    from batchtui.glyphs import ascii_text
    from batchtui.widgets.goal_bar import goal_line

    checked = 0
    for what, view, step_goal, keys in _goal_lines(lessons):
        (ask, state, note, shorter, shorter_notes), _ = goal_line(view, step_goal, False)
        for ascii_only, sep in ((False, " · "), (True, " | ")):
            words = ascii_text if ascii_only else (lambda text: text)
            bar = GoalBar()
            bar.set_marks(ascii_only, sep)
            bar.show(words(ask), state, words(note), tuple(map(words, shorter)), tuple(map(words, shorter_notes)))
            width = 78  # 80 columns less the line's padding
            line = "".join(bar.parts(width))
            assert len(line) <= width and line.endswith(f"{bar.marks[state]} {state}"), (what, line)
            assert "..." not in line and all(key in line for key in keys), (what, line)
            assert not note or any(words(f) in line for f in (note, *shorter_notes)), (what, line)
            checked += 1
    assert checked >= 2 * (5 * 6 + 2 * 4 + 4), checked  # six predictions, four break-its, four checklists


async def test_a_break_it_goal_says_how_far_the_run_is(make_app, lessons):
    app = make_app(list(lessons), start_step=3)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_for(pilot, 2.0)
        assert goal(app).ask.startswith("Break it: TTFT p99 past")
        assert goal(app).note.startswith("now ") and goal(app).state == "open"


async def test_a_break_it_goal_reads_a_dash_until_a_request_finishes(make_app, lessons):
    """Step 3's first seconds: nothing has finished, the metrics read "-", and so does the goal
    line (it read "now 0.00 ms", a TTFT nobody had measured); once requests finish it reads
    the TTFT p99 the metrics show."""
    app = make_app(list(lessons), start_step=3)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_for(pilot, 0.5)
        assert app.screen.sim.snapshot().metrics.completed == 0
        assert goal(app).note == "now -"
        await run_for(pilot, 8.0)
        metrics = app.screen.sim.snapshot().metrics
        assert metrics.completed > 0 and goal(app).note != "now -"


async def test_step_12_is_done_when_each_of_its_limits_binds(make_app, lessons):
    app = make_app(list(lessons), start_step=12)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_for(pilot, 3.0)
        assert goal(app).ask == "Make each limit bind:"
        # The traffic outgrows the seats at the step's own settings: not the learner's doing.
        assert app.screen.sim.engine.snapshot().last.binding_limit == "max_num_seqs"
        assert goal(app).note == "budget ○ seats ○ KV cache ○"
        assert 12 not in app.progress.completed
        await turn(pilot, "engine.max_num_batched_tokens", 64)  # far below one prompt
        await run_for(pilot, 3.0)
        assert goal(app).note.startswith("budget ✓") and goal(app).note.endswith("KV cache ○")
        await turn(pilot, "engine.max_num_batched_tokens", 2048)
        await run_for(pilot, 3.0)
        assert goal(app).note == "budget ✓ seats ✓ KV cache ○"
        await turn(pilot, "engine.max_num_seqs", 512)
        await turn(pilot, "gpu_memory_utilization", 0.25)
        await run_for(pilot, 10.0)
        assert goal(app).state == "done", goal(app).note
        assert 12 in app.progress.completed


async def test_step_6_is_done_when_the_budget_and_the_seats_bind(make_app, lessons):
    app = make_app(list(lessons), start_step=6)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_for(pilot, 5.0)
        # Whatever binds at the step's own settings, nothing is ticked before a dial moves.
        assert goal(app).note == "budget ○ seats ○"
        await run_for(pilot, 2.0)
        # At the lesson's traffic the seats never fill; the budget may bind by chance when two
        # prompts arrive in one iteration (it does with this seed's arrivals), so only the seats
        # are known to be open.
        assert goal(app).note.endswith("seats ○") and goal(app).state == "open"
        await turn(pilot, "engine.max_num_batched_tokens", 64)
        await run_for(pilot, 3.0)
        await turn(pilot, "engine.max_num_batched_tokens", 1024)
        await turn(pilot, "engine.max_num_seqs", 8)
        await run_for(pilot, 3.0)
        assert goal(app).state == "done"


async def test_step_4_is_done_when_one_traffic_beats_a_batch_size_but_not_a_bigger_one(make_app, lessons):
    app = make_app(list(lessons), start_step=4)
    async with app.run_test(size=(80, 24)) as pilot:
        assert goal(app).note == "a batch size falls behind ○ a bigger one keeps up ○"
        await turn(pilot, "workload.request_rate", 3000)  # between what batches of 1 and 32 serve
        await turn(pilot, "engine.max_batch_size", 1)
        await run_for(pilot, 4.0)
        assert goal(app).note == "a batch size falls behind ✓ a bigger one keeps up ○"
        await turn(pilot, "engine.max_batch_size", 32)
        await run_for(pilot, 4.0)
        assert goal(app).state == "done"
        assert 4 in app.progress.completed


async def test_the_cheat_sheet_is_done_for_another_gpu(make_app, lessons):
    app = make_app(list(lessons), start_step=19)
    async with app.run_test(size=(80, 24)) as pilot:
        assert goal(app).state == "open"
        await turn(pilot, "gpu", "h200")
        assert goal(app).state == "done"


async def test_the_playground_is_done_after_a_dial_a_save_and_an_open(make_app, lessons):
    app = make_app(list(lessons), start_step=20)
    async with app.run_test(size=(80, 24)) as pilot:
        await turn(pilot, "gpu", "b200")
        assert goal(app).note == "move a dial ✓ save it (w) ○ open it again (o) ○"
        await pilot.press("w", "enter")  # the prompt suggests the state folder's playground.toml
        await pilot.press("o", "enter")  # and opens the file just written
        await pilot.pause()
        assert goal(app).state == "done"


# -- before and after
async def test_b_pins_the_run_as_before_beside_the_live_now(make_app, lessons):
    app = make_app(list(lessons), start_step=16)  # a chat SLO: what do fewer seats cost?
    async with app.run_test(size=(80, 24)) as pilot:
        await run_for(pilot, 5.0)
        assert "b pin" in screen_text(app)
        await pilot.press("b")
        table = next(v for v in app.screen.stack.shown() if isinstance(v, CompareView))
        pinned = table.left
        assert table.headers == ("before", "now") and pinned.time == pytest.approx(5.0, abs=0.1)
        await turn(pilot, "engine.max_num_seqs", 64)
        await run_for(pilot, 3.0)
        assert table.left is pinned  # before stays as it was
        assert table.right.time > pinned.time and table.right.max_num_seqs == 64
        assert table.title == "Seats 256 → 64"
        assert "before" in screen_text(app) and "b unpin" in screen_text(app)
        await pilot.press("b")
        assert not any(isinstance(v, CompareView) for v in app.screen.stack.shown())
        assert "metrics" in app.screen.stack.names and "compare" not in app.screen.stack.names


async def test_step_13_runs_uncapped_beside_capped(make_app, lessons):
    app = make_app(list(lessons), start_step=13)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")  # the guess: the run starts with the cap of 32 seats
        await run_for(pilot, 20.0, step=2.0)
        table = next(v for v in app.screen.stack.shown() if isinstance(v, CompareView))
        before, now = table.left, table.right
        assert table.title == "Seats 256 → 32"
        assert before.max_num_seqs == 256 and now.max_num_seqs == 32
        assert now.metrics.tpot_p50 < before.metrics.tpot_p50  # tokens come faster...
        assert now.metrics.ttft_p99 > 10 * before.metrics.ttft_p99  # ...but users wait far longer
        assert now.queue_len > before.queue_len


async def test_step_4_comparison_keeps_running_after_a_dial_change(make_app, lessons):
    app = make_app(list(lessons), start_step=4)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_for(pilot, 3.0)
        await turn(pilot, "engine.max_batch_size", 1)  # the embedder's run starts over
        await run_for(pilot, 2.0)
        sim = app.screen.sim
        assert sim.compare_engine.time == pytest.approx(sim.engine.time, abs=0.2)
        for view in app.screen.stack.shown():
            if isinstance(view, SeatsView) and view.snapshot is not None:
                head = view.render().plain.split("\n")[0]
                busy, seats = re.search(r"(\d+)/(\d+)", head).groups()
                assert int(busy) <= int(seats), head


async def test_a_loaded_scenario_s_block_size_is_the_kv_view_s(make_app, lessons, state_dir):
    from batchtui.widgets.kv_cache import KVCacheView

    app = make_app(list(lessons), start_step=20)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("w", "enter")
        path = state_dir / "playground.toml"
        text = path.read_text()
        assert "block_size = 16" in text
        path.write_text(text.replace("block_size = 16", "block_size = 32"))
        await pilot.press("o", "enter")
        await run_for(pilot, 2.0)
        kv = next(v for v in app.screen.stack.shown() if isinstance(v, KVCacheView))
        assert app.screen.sim.engine.scenario.block_size == 32
        assert "448k tok" in kv.render().plain  # not 224k: blocks of 32 tokens, not the lesson's 16


async def test_a_long_wait_for_the_answer_counts_down_and_names_the_fast_forward_key(make_app, lessons):
    step = lessons[0]
    wait = step.activity.params.get("watch_s")
    assert wait and wait >= 30, "step 1 makes the learner watch its run before the answer"
    app = make_app(list(lessons), start_step=1)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        app.screen.sim.fast_forward(0.1)
        await pilot.pause()
        assert goal(app).ask == f"Predict: answer in {wait:.0f} simulated s; + fast-forwards"
        await run_for(pilot, 20.0, step=5.0)
        assert goal(app).ask == f"Predict: answer in {wait - 20:.0f} simulated s; + fast-forwards"
        lesson_column = " ".join(line[2:44] for line in screen_text(app).splitlines())  # past the bar "▎ "
        assert "press + to fast-forward" in " ".join(lesson_column.split())


async def test_a_plot_that_answers_a_prediction_shows_only_with_its_result(make_app, lessons):
    step = lessons[6]
    assert step.number == 7 and step.activity.params.get("hides") == ["batch"]
    app = make_app(list(lessons), start_step=7)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.pause()
        text = screen_text(app)
        assert "shows with the answer" in text and "knee: batch" not in text, text
        assert "TTFT p99 vs req/s" in text  # the rate curve answers nothing asked: it stays
        answer = step.activity.params["answer"]
        wrong = 1 if answer != 1 else 2
        await pilot.press(str(wrong))
        await pilot.pause()
        await pilot.pause()
        assert "knee: batch" not in screen_text(app)  # guessed: the result is not in yet
        await result_in(pilot)
        # A wrong guess's result is in, the answer is not: the plot waits, and says for what
        # (it said "shows with your guess's result", which had just come).
        text = screen_text(app)
        assert "knee: batch" not in text and "shows with the answer" in text, text
        await pilot.press(str(answer))
        await pilot.pause()
        await pilot.pause()
        text = screen_text(app)
        assert "knee: batch" in text and "shows with the answer" not in text


@pytest.mark.parametrize("number", [1, 5, 7, 11, 13, 17])
async def test_nothing_answers_a_prediction_before_the_guess(make_app, lessons, number):
    """Every prediction: before the guess, neither its reveal, nor its explanation, nor a plot it
    hides is on the screen, wherever the learner scrolls the lesson."""
    step = lessons[number - 1]
    assert step.activity.kind == "predict"
    reveal = [line.strip() for line in step.reveal_md.splitlines() if len(line.strip()) > 20 and "|" not in line]
    reveal += [line for line in step.activity.params["feedback"] if line]  # each wrong choice's line
    explain = step.activity.params["explain"]
    app = make_app(list(lessons), start_step=number)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.pause()
        for key in ("home", "end"):
            await pilot.press(key)
            await pilot.pause()
            text = " ".join(screen_text(app).split())
            for line in reveal[:2]:
                assert " ".join(line.split()[:4]) not in text, f"step {number}: {line!r} shows before the guess"
            assert " ".join(explain.split()[:5]) not in text
            if "batch" in step.activity.params.get("hides", ()):
                assert "knee: batch" not in text


@pytest.mark.parametrize("number", [1, 5, 7, 11, 13, 17])
async def test_a_predictions_reveal_comes_when_the_line_under_the_guess_says(make_app, lessons, number):
    """One rule for the prediction's result and the lesson's reveal: the line under the guess
    says when the answer shows; until that moment neither the reveal nor a plot that answers the
    question is on screen, and at that moment both are, for a right guess; a wrong one (1, where
    the answer is another) gets its own line then, and the right guess after it the reveal."""
    step = lessons[number - 1]
    reveal_line = next((line.strip() for line in step.reveal_md.splitlines() if len(line.strip()) > 20
                        and "|" not in line), step.activity.params["explain"])
    app = make_app(list(lessons), start_step=number)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        view = app.screen.query_one(PredictView)
        await pilot.press("1")
        await pilot.pause()
        status = " ".join(str(app.screen.query_one("#predict-status").render()).split())
        assert f"The answer shows {view.predict.wait_words()}" in status
        await run_for(pilot, 1.0)
        app.screen.sim.fast_forward(view.predict.watch_seconds * 0.9 - 1.0)
        await pilot.pause()
        await pilot.pause()
        reveal = app.screen.query_one("#reveal")
        if not view.revealed:  # (a job that ends sooner ends the wait sooner: "when the job ends or")
            assert not reveal.display
            for key in ("home", "end"):
                await pilot.press(key)
                await pilot.pause()
                text = " ".join(screen_text(app).split())
                assert " ".join(reveal_line.split()[:4]) not in text
                if "batch" in step.activity.params.get("hides", ()):
                    assert "knee: batch" not in text
            app.screen.sim.fast_forward(view.predict.watch_seconds * 0.1 + 0.5)
            await pilot.pause()
            await pilot.pause()
        assert view.revealed
        answer = step.activity.params["answer"]
        if answer != 1:
            said = " ".join(str(app.screen.query_one("#predict-status").render()).split())
            assert said.startswith("Your guess: 1. Not 1: ") and not reveal.display
            assert "knee: batch" not in screen_text(app)
            await pilot.press(str(answer))
            await pilot.pause()
            await pilot.pause()
        shown = reveal.source if step.reveal_md else app.screen.query_one("#predict-reveal").source
        assert (reveal.display or not step.reveal_md) and " ".join(reveal_line.split()[:4]) in " ".join(shown.split())
        if "batch" in step.activity.params.get("hides", ()):
            assert "knee: batch" in screen_text(app)
