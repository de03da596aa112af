"""Drills, break-it challenges, predictions, the reading exercise, the cheat sheet and the
playground's files, as a learner meets them."""

from __future__ import annotations

import re

import math

import pytest

from sim.engine import Engine
from sim.profiles import BUILTIN_PROFILES
from sim.reports import EngineSnapshot, MetricsView
from sim.scenario import Scenario
from steps import activities as act
from steps import numbers

from batchtui.scenario_files import Unusable, read_scenario
from tests import shared_steps


@pytest.fixture(scope="module")
def lesson():
    return shared_steps.by_number()


def snap(queue_len=0, running=10, max_num_seqs=256, kv_used=100, kv_usable=28008, **metrics) -> EngineSnapshot:
    metrics.setdefault("completed", 100)
    return EngineSnapshot(time=10.0, iteration=100, batching="continuous", seats=(), max_num_seqs=max_num_seqs,
                          queue_len=queue_len, running=running, kv_blocks_used=kv_used,
                          kv_blocks_usable=kv_usable, kv_blocks_by_request=(), last=None,
                          metrics=MetricsView(**metrics))


# -- answers typed in many ways ---------------------------------------------------------------------


@pytest.mark.parametrize("text,value", [
    ("209", 209.0), ("209 tok/s", 209.0), ("2.1e2", 210.0), ("≈ 1,209 tokens/s", 1209.0),
    ("  166.5", 166.5), ("7.9k", 7900.0), (".5", 0.5), ("about 48 sequences", 48.0), ("2.1E+2", 210.0),
])
def test_answers_are_read_tolerantly(text, value):
    assert act.parse_number(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["", "fast", "tokens", "∞", "one hundred"])
def test_garbage_is_not_a_number(text):
    assert act.parse_number(text) is None


@pytest.mark.parametrize("text", ["1e400", "2.5E+309", "1e" + "9" * 5000], ids=["1e400", "2.5E+309", "1e9999..."])
def test_an_exponent_past_a_float_is_not_a_crash(text):
    """"1e400" typed in a drill's box stopped the app (10.0 ** 400: OverflowError), and an
    exponent of 5,000 digits did too (int()'s digit limit): both are read as float() reads
    them, too large to be an answer, and the learner is asked for a number."""
    assert act.parse_number(text) is None
    fb = act.SingleStreamCeilingDrill().new_question(3).check(text)
    assert not fb.correct and fb.message.startswith("Type a number")
    assert act.parse_number("1e-400") == 0.0 and act.parse_number("1e" + "-" + "9" * 5000) == 0.0


@pytest.mark.parametrize("text,said", [("1e99", "1e+99"), ("1e-12", "1e-12"), ("2090", "2,090")])
def test_a_wild_answer_is_said_back_short(text, said):
    """1e99 was said back as a hundred digits over five lines of the lesson pane."""
    message = act.SingleStreamCeilingDrill().new_question(3).check(text).message
    assert f"Not quite: {said} is too" in message and len(message) < 100


@pytest.mark.parametrize("number,quantity", [(2, "A rate"), (9, "A count of sequences"), (15, "A count of sequences"),
                                             (16, "A count of replicas")])
def test_a_negative_answer_is_impossible_not_too_low(lesson, number, quantity):
    """A rate, a count or a time is never below zero: "-209" was told it was "too low". Each
    drill's quantity is read off its unit, so a drill says it without a line of its own."""
    if number == 16:  # its questions read a rate sweep (seconds): one of its unit stands in
        assert act.build(lesson[16]).__class__ is act.ReplicasDrill
        q = act.Question("?", 3.0, "replicas", 0.03, ("a", "b"), "", whole_number=True)
    else:
        q = act.build(lesson[number]).new_question(0)
    for text in ("-5", f"-{q.answer:.0f}", "\u22123"):
        fb = q.check(text)
        assert not fb.correct and fb.message.startswith(f"{quantity} cannot be negative"), (text, fb.message)
        assert "too low" not in fb.message and q.unit in fb.message
    assert "cannot be negative" not in q.check(f"{q.answer / 3:.3f}").message  # a positive miss: measured
    with pytest.raises(ValueError, match="unit"):
        act.Question("?", 1.0, "furlongs", 0.03, ("a", "b"), "")


# -- step 2: the single-stream ceiling --------------------------------------------------------------


def test_ceiling_drill_is_seeded_and_varied():
    drill = act.SingleStreamCeilingDrill()
    a, b = drill.new_question(3), drill.new_question(3)
    assert a.prompt_md == b.prompt_md and a.answer == b.answer
    questions = [drill.new_question(seed) for seed in range(30)]
    assert len({q.prompt_md for q in questions}) >= 10
    assert {q.facts["gpu"] for q in questions} >= {"h200", "a100-80gb", "l40s", "b200"}
    assert {q.facts["model"] for q in questions} >= {"llama-3.2-3b", "qwen2.5-14b"}
    assert {q.facts["realistic"] for q in questions} == {True, False}


def test_ceiling_answer_is_bandwidth_over_weight_bytes():
    drill = act.SingleStreamCeilingDrill()
    for seed in range(20):
        q = drill.new_question(seed)
        gpu, model = BUILTIN_PROFILES.gpu(q.facts["gpu"]), BUILTIN_PROFILES.model(q.facts["model"])
        ceiling = gpu.hbm_bandwidth / (model.params * 2)
        assert q.answer == pytest.approx(ceiling * (0.8 if q.facts["realistic"] else 1.0))
        assert q.unit == "tokens/s" and q.tolerance == 0.03
        assert gpu.name in q.prompt_md and fmt_in(gpu.hbm_bandwidth / 1e12, q.prompt_md)
        assert len(q.hints) == 2


def test_ceiling_worked_answer_gives_the_token_time_the_run_beside_shows():
    """Once answered, the run beside decodes the question's GPU and model: the worked answer's
    "one token every ... ms" said the ceiling's time (2.01 ms on a B200) beside a TPOT of
    2.52 ms. It now ends on a real server's time, which the run's TPOT matches within 3%."""
    from sim.engine import run_scenario
    from tests import shared_steps

    step = shared_steps.by_number()[2]
    drill = act.SingleStreamCeilingDrill()
    seen = set()
    for seed in range(12):
        q = drill.new_question(seed)
        said = float(re.findall(r"([\d.]+) ms: about the TPOT beside", q.derivation_md)[-1])
        key = (q.facts["gpu"], q.facts["model"])
        if key in seen:
            continue
        seen.add(key)
        run = run_scenario(step.scenario.replace(**q.run_dials).with_workload(num_prompts=1))
        assert said == pytest.approx(run.records[0].tpot * 1000, rel=0.03), (key, q.derivation_md)
    assert len(seen) >= 5


def fmt_in(value: float, text: str) -> bool:
    return act.fmt(value, 4) in text


def _ceiling_question(realistic: bool) -> act.Question:
    drill = act.SingleStreamCeilingDrill()
    for seed in range(100):
        q = drill.new_question(seed)
        if q.facts["realistic"] == realistic and q.facts["gpu"] == "a100-80gb" and q.facts["model"] == "llama-3.2-3b":
            return q
    raise AssertionError("no such question in 100 seeds")


def test_ceiling_right_answer_within_three_percent_then_derivation():
    q = _ceiling_question(realistic=False)
    assert q.answer == pytest.approx(2.039e12 / 6.42e9)  # ≈ 317.6
    assert not q.check("330 tok/s").correct  # 3.9% off
    fb = q.check("310 tokens/s")  # 2.4% off
    assert fb.correct and fb.show_derivation and q.over
    assert "6.42 GB" in q.derivation_md and "318 tokens/s" in q.derivation_md


@pytest.mark.parametrize("factor,phrase", [
    (2**30 / 1e9, "GiB"),
    (2.0, "bf16 takes 2 bytes"),
    (0.5, "not 4"),
])
def test_ceiling_slips_are_recognised(factor, phrase):
    q = _ceiling_question(realistic=False)
    fb = q.check(f"{q.answer * factor:.1f}")
    assert not fb.correct and phrase in fb.message


def test_ceiling_ms_instead_of_tokens_per_second():
    q = _ceiling_question(realistic=False)
    fb = q.check(f"{1000 / q.answer:.2f}")
    assert not fb.correct and "milliseconds" in fb.message
    fb = q.check("3.1 ms")
    assert "time in ms" in fb.message


@pytest.mark.parametrize("unit,kind", [("GiB", "a size"), ("GB", "a size"), ("ms", "a time"), ("tok/s", "a rate")])
def test_a_unit_of_another_quantity_is_named_not_judged(unit, kind):
    """Step 15 asks for sequences: "37.6 GiB" was "too low" and the right number with GiB after it
    was right. A unit of another quantity is said so, whatever the number; the question's own
    unit, or a count's word, is fine."""
    q = act.CacheBatchDrill().new_question(0)
    assert q.unit == "sequences"
    fb = q.check(f"{q.answer:.1f} {unit}")
    assert not fb.correct and not q.over and fb.message == f"That is {kind} in {unit}; the question asks for sequences."
    assert q.check(f"{q.answer:.1f} seqs").correct
    ceiling = _ceiling_question(realistic=False)
    assert ceiling.check(f"{ceiling.answer:.1f} tok/s").correct


def test_ceiling_forgetting_the_80_percent():
    q = _ceiling_question(realistic=True)
    fb = q.check(f"{q.answer / 0.8:.1f}")
    assert not fb.correct and "80%" in fb.message
    assert q.check(f"{q.answer:.0f}").correct


def test_garbage_answer_asks_for_a_number_and_does_not_count():
    q = _ceiling_question(realistic=False)
    fb = q.check("no idea")
    assert not fb.correct and fb.value is None and "Type a number" in fb.message
    assert q.attempts == 0


def test_give_up_shows_the_worked_derivation():
    q = _ceiling_question(realistic=True)
    text = q.give_up()
    assert q.over and not q.solved
    assert "0.8 ×" in text and act.fmt(q.answer) in text


# -- step 9: sequences in flight ----------------------------------------------------------------------


def test_in_flight_question_states_the_measured_seconds(lesson):
    drill = act.build(lesson[9])
    assert isinstance(drill, act.InFlightDrill)
    q = drill.new_question(1)
    rate, seconds = q.facts["rate"], q.facts["seconds"]
    assert q.answer == pytest.approx(rate * seconds)
    assert (f"**{act.fmt(seconds)} s**" in q.prompt_md) or (f"**{act.fmt(seconds * 1000)} ms**" in q.prompt_md)
    assert q.run_dials["workload.request_rate"] == rate
    # The stated time is what the simulation measures at that load (arrival to last token).
    assert 0.5 < seconds < 6.0
    assert q.check(f"{q.answer * 1.03:.1f}").correct
    again = drill.new_question(1)
    assert again.prompt_md == q.prompt_md


def test_in_flight_slips(lesson):
    drill = act.build(lesson[9])
    q = drill.new_question(2)
    rate, seconds = q.facts["rate"], q.facts["seconds"]
    assert "divided the rate" in q.check(f"{rate / seconds:.3f}").message
    assert "convert the time" in q.check(f"{rate * seconds * 1000:.0f}").message
    assert not q.check(f"{rate:.0f}").correct


def test_in_flight_keeps_below_saturation(lesson):
    drill = act.build(lesson[9])
    assert all(rate * out <= drill.MAX_OUTPUT_TOKENS_PER_S for rate, out in drill.cases)
    assert len(drill.cases) >= 8


# -- step 15: the batch the cache allows ------------------------------------------------------------


def test_cache_batch_answer_matches_the_simulated_cache():
    drill = act.CacheBatchDrill()
    seen = set()
    for seed in range(25):
        q = drill.new_question(seed)
        f = q.facts
        dep = BUILTIN_PROFILES.deployment(f["gpu"], f["model"], gpu_memory_utilization=f["util"])
        assert q.answer == pytest.approx(dep.kv_cache_tokens / (f["prompt"] + f["output"]))
        assert q.answer >= 4
        seen.add((f["gpu"], f["model"], f["util"], f["prompt"], f["output"]))
        assert q.check(str(math.floor(q.answer))).correct
    assert len(seen) >= 20


def _cache_question(**want) -> act.Question:
    drill = act.CacheBatchDrill()
    for seed in range(400):
        q = drill.new_question(seed)
        if all(q.facts[k] == v for k, v in want.items()):
            return q
    raise AssertionError(f"no question with {want}")


def test_cache_batch_paper_arithmetic_is_within_tolerance():
    q = _cache_question(gpu="h100-sxm", model="llama-3.1-8b")
    f = q.facts
    by_hand = (f["util"] * 85.0e9 - 16.06e9 - 3.4e9) / 131072 / (f["prompt"] + f["output"])
    assert q.check(f"{by_hand:.2f}").correct


@pytest.mark.parametrize("slip,phrase", [
    ("util", "--gpu-memory-utilization"),
    ("prompt_only", "prompt + output"),
    ("double", "both K and V"),
    ("query_heads", "KV heads"),
])
def test_cache_batch_slips(slip, phrase):
    q = _cache_question(gpu="h100-sxm", model="llama-3.1-8b")
    f = q.facts
    mem, w, kv, n = 85.0e9, 16.06e9, 131072, f["prompt"] + f["output"]
    wrong = {
        "util": (mem - w - 3.4e9) / kv / n,
        "prompt_only": (f["util"] * mem - w - 3.4e9) / kv / f["prompt"],
        "double": q.answer * 2,
        "query_heads": q.answer / 4,
    }[slip]
    fb = q.check(f"{wrong:.2f}")
    assert not fb.correct and phrase in fb.message, (wrong, q.answer, fb.message)


# -- break-it challenges notice the goal and explain with the numbers seen -----------------------------


def test_static_peak_challenge():
    c = act.StaticPeakChallenge(10.0)
    assert "10 s" in c.goal_md
    assert c.check(snap(ttft_p99=4.0, padding_share=0.47)) is None
    v = c.check(snap(queue_len=140, ttft_p99=12.5, padding_share=0.47, requests_per_s=11.6))
    assert v is not None and "12.5 s" in v.message_md and "47%" in v.message_md and "140" in v.message_md
    assert v.message_md.startswith("At t 10 s ")  # a reading of one moment, dated
    assert c.check(snap(ttft_p99=1.0)) is v  # once reached, it stays reached


def test_past_knee_challenge_takes_before_at_saturation_not_at_the_calm_rate():
    c = act.PastKneeChallenge(2.0, 50)
    # Below the knee (seats to spare): not the "before" the claim is about.
    assert c.check(snap(queue_len=0, running=90, output_tokens_per_s=6100.0, tpot_p50=0.0108, ttft_p99=0.06)) is None
    # The seats just filled, the queue still short: this is "before".
    assert c.check(snap(queue_len=10, running=256, output_tokens_per_s=8900.0, tpot_p50=0.0271, ttft_p99=3.0)) is None
    v = c.check(snap(queue_len=180, running=256, output_tokens_per_s=9000.0, tpot_p50=0.0273, ttft_p99=6.3))
    assert v is not None
    for figure in ("At t 10 s TTFT p99", "6.3 s", "180 requests waiting", "9,000 tokens/s", "27.3 ms",
                   "At t 10 s, the seats just full, it made 8,900 tokens/s", "27.1 ms", "256 of 256"):
        assert figure in v.message_md
    assert "6,100" not in v.message_md


def test_long_prompt_stall_challenge():
    c = act.LongPromptStallChallenge(20.0)
    assert c.check(snap(itl_max=0.105, tpot_p50=0.0073, tpot_p99=0.0147)) is None
    v = c.check(snap(itl_max=0.485, tpot_p50=0.0073, tpot_p99=0.0147))
    assert v is not None and "485 ms" in v.message_md and "66.4 times" in v.message_md
    assert v.message_md.startswith("At t 10 s ")


def test_cache_cap_challenge():
    c = act.CacheCapChallenge(16, 8192, 1024)
    assert c.check(snap(running=30, num_preemptions=0)) is None
    v = c.check(snap(running=51, kv_used=27990, num_preemptions=3))
    assert v is not None
    for figure in ("At t 10 s: **3 preemptions", "51 sequences", "256 seats", "448,128", "54.7 prompts",
                   "48.6 sequences"):
        assert figure in v.message_md


def _drive(engine: Engine, challenge, until: float, every: int = 40):
    n = 0
    while engine.time < until:
        if engine.step() is None:
            break
        n += 1
        if n % every == 0:
            verdict = challenge.check(engine.snapshot())
            if verdict:
                return verdict
    return None


@pytest.mark.parametrize("number,dial,value,until", [
    (3, "workload.request_rate", 20.0, 120.0),
    (8, "workload.request_rate", 45.0, 120.0),
    (10, "workload.input.long_len", 16000, 60.0),
    (14, "workload.request_rate", 3.0, 120.0),
])
def test_each_challenge_is_reached_by_pushing_its_dial(lesson, number, dial, value, until):
    step = lesson[number]
    challenge = act.build(step)
    engine = Engine(step.scenario, live=True)
    assert _drive(engine, challenge, until=15.0) is None, "the goal must not be met before the push"
    engine.set_dial(dial, value)
    verdict = _drive(engine, challenge, until=engine.time + until)
    assert verdict is not None, f"step {number}: pushing {dial} to {value} did not reach the goal"


BREAK_ITS = (3, 8, 10, 14)


@pytest.mark.parametrize("number", BREAK_ITS)
def test_show_me_settings_are_on_the_step_s_dials_and_break_it_from_the_start(lesson, number):
    from steps.figures import Lab

    step = lesson[number]
    challenge = act.build(step)
    show = challenge.show_me()
    assert show.words.startswith("Show me: ") and "\n" not in show.words
    lab = Lab(step.scenario, dials=step.dials)
    for path, value in show.dials.items():
        dial = step.dial(path)
        assert dial.min <= value <= dial.max
        assert abs((value - dial.min) / dial.step - round((value - dial.min) / dial.step)) < 1e-9  # a notch
        if path == "workload.request_rate":
            # Past what the engine can finish: by half as much again, or as far as the dial goes.
            assert value > lab.saturated and (value >= 1.5 * lab.saturated or value == dial.max)
        else:
            assert value == dial.max  # the longest prompt the dial allows
    engine = Engine(step.scenario, live=True)
    for path, value in show.dials.items():
        engine.set_dial(path, value)
    verdict = _drive(engine, challenge, until=120.0)
    assert verdict is not None, f"step {number}: {show.dials} did not break it within 120 simulated s"


def test_show_me_says_so_when_the_dials_cannot_break_it(lesson):
    import dataclasses

    step = lesson[8]
    capped = tuple(dataclasses.replace(d, max=20.0) if d.name == "workload.request_rate" else d for d in step.dials)
    with pytest.raises(ValueError, match="stops at 20 req/s"):
        act.build(dataclasses.replace(step, dials=capped)).show_me()


def test_a_setting_goes_up_to_the_dial_s_next_notch_within_its_range(lesson):
    rate = lesson[3].dial("workload.request_rate")  # 1 to 30, notches of 1
    assert act.dial_setting(rate, 19.4) == 20 and act.dial_setting(rate, 20.0) == 20
    assert act.dial_setting(rate, 45.0) == 30 and act.dial_setting(rate, 0.2) == 1
    cache = lesson[14].dial("workload.request_rate")  # 0.5 to 5, notches of 0.5
    assert act.dial_setting(cache, 1.95) == 2.0 and act.dial_setting(cache, 2.01) == 2.5
    length = lesson[10].dial("workload.input.long_len")  # whole tokens
    assert act.dial_setting(length, 15000.5) == 16000 and isinstance(act.dial_setting(length, 1200), int)


# -- predict-then-run ------------------------------------------------------------------------------


def test_predict_commit_and_reveal(lesson):
    p = act.build(lesson[13])
    assert isinstance(p, act.Predict) and len(p.choices) == 3
    assert "2" in p.commit(2)
    with pytest.raises(ValueError):
        p.commit(9)
    assert p.verdict() == "You called it."
    text = p.reveal(snap(tpot_p50=0.0081, ttft_p99=25.0, e2e_p50=28.0, requests_per_s=15.2))
    assert text.startswith(p.explain) and "TPOT p50 8.10 ms" in text and "15.2" in text
    assert p.verdict(1).startswith("The answer is 2: Tokens come faster")


def test_a_wrong_guess_gets_its_own_line_and_may_guess_again(lesson):
    p = act.build(lesson[13])
    p.commit(1)
    assert p.wrong_words(1) == f"Not 1: {p.feedback[0]}" and p.feedback[0] != p.feedback[2]
    assert p.feedback[p.answer - 1] == ""
    assert not p.again(3) and p.tried == [1, 3]
    assert p.again(2) and p.tried == [1, 3, 2] and p.verdict(2) == "Right this time."
    with pytest.raises(ValueError):
        p.again(0)


def test_every_prediction_tells_each_wrong_choice_why_it_tempts_and_fails(lesson):
    """Each wrong choice has a line of its own (none shared, none empty); the answer has none."""
    for step in lesson.values():
        if step.activity.kind != "predict":
            continue
        p = act.build(step)
        wrong = [line for n, line in enumerate(p.feedback, 1) if n != p.answer]
        assert len(p.feedback) == len(p.choices) and p.feedback[p.answer - 1] == "", step.number
        assert all(line.strip() for line in wrong) and len(set(wrong)) == len(wrong), step.number


def test_a_prediction_writes_numbers_as_the_panes_beside_it(lesson):
    """Step 11 offered "2048" and "8192" beside a table of "2,048" and "8,192": every number of
    four digits or more in a prediction's question, choices, explanation and feedback has its
    thousands separated, as the panes print it."""
    bare = re.compile(r"(?<![\d.,])\d{4,}(?![\d,])")
    for step in lesson.values():
        if step.activity.kind == "predict":
            p = act.build(step)
            for text in (p.question_md, *p.choices, p.explain, *p.feedback):
                assert not bare.search(text), (step.number, text)


def test_predict_runs_at_the_setting_it_asks_about_and_says_so(lesson):
    p = act.build(lesson[1])
    assert p.run_dials == {"workload.request_rate": 1.0} and p.watch_seconds == 60
    text = p.reveal(snap(queue_len=22, ttft_p99=19.5, requests_per_s=0.64))
    assert re.search(r"In the simulation, with Traffic 1 req/s at t [\d.]+ s: queue 22, TTFT p99 19.5 s", text)
    budget = act.build(lesson[11])
    gaps = snap(itl_max=0.273)
    gaps = EngineSnapshot(**{**{f: getattr(gaps, f) for f in gaps.__dataclass_fields__},
                             "series_itl": (0.27,) + (0.02,) * act.RECENT_GAP_SAMPLES})
    assert re.search(r"with Token budget 512 tokens at t [\d.]+ s: worst gap 20.0 ms", budget.reveal(gaps))  # not the stall before


def test_predict_beside_a_comparison_gives_both_runs(lesson):
    p = act.build(lesson[5])
    text = p.reveal(snap(requests_per_s=8.1, ttft_p50=0.018), snap(requests_per_s=7.9, ttft_p50=1.2))
    # The step's own run is named as its seat pane's caption names it, not "this server".
    assert "continuous batching: requests/s 8.1, TTFT p50 18.0 ms" in text and "this server" not in text
    assert lesson[5].compare.names(lesson[5].scenario) == ("batching", ("continuous", "static"))
    assert "static batches of 64: requests/s 7.9, TTFT p50 1.20 s" in text


def test_a_reveal_reads_each_figure_as_the_compare_table_beside_it(lesson):
    """Step 13's reveal said "TPOT p50 8 ms" beside the compare table's "8.00 ms": a reading
    of the run prints each figure with the panes' own rule (steps.numbers)."""
    from batchtui.widgets.compare import ROWS

    rows = {"queue_len": "queue", "requests_per_s": "req/s", "output_tokens_per_s": "tokens/s",
            "ttft_p50": "TTFT p50", "ttft_p99": "TTFT p99", "tpot_p50": "TPOT p50", "tpot_p99": "TPOT p99",
            "itl_max": "gap max", "padding_share": "padding", "num_preemptions": "preempted"}
    s = snap(queue_len=12_345, tpot_p50=0.008, tpot_p99=0.0110, ttft_p50=0.0125, ttft_p99=2.5, requests_per_s=16.0,
             output_tokens_per_s=3812.4, padding_share=0.508, num_preemptions=1234, itl_max=0.027)
    s = EngineSnapshot(**{**{f: getattr(s, f) for f in s.__dataclass_fields__}, "series_itl": (0.027,)})
    p = act.build(lesson[13])
    for key, row in rows.items():
        label = act.predict._SHOW[key][0]
        reading = act.Predict("?", ("a", "b"), 1, "", show=(key,)).reading(s)
        assert reading.endswith(f": {label} {ROWS[row].value(s)}."), (key, reading)
    assert "TPOT p50 8.00 ms" in p.reveal(s)


def test_figures_of_one_kind_keep_one_number_of_decimals_whole_or_not():
    """Step 13's compare table read "req/s 26.8" beside "16" (a rate of 16.0 printed as a count),
    and its reveal "requests/s 16."; a measured figure's digits follow its size, a count of
    things (an int, numpy's too) reads whole."""
    import numpy as np

    from batchtui.widgets.compare import ROWS

    assert [numbers.count(v) for v in (16.0, 30.4, 9.0, 1.0, 0.5)] == ["16.0", "30.4", "9.0", "1.0", "0.5"]
    assert [numbers.count(v) for v in (16, np.int64(16), 0, 0.0, 150.0, 1000.0)] == ["16", "16", "0", "0", "150", "1.0k"]
    whole, not_whole = snap(requests_per_s=16.0), snap(requests_per_s=30.4)
    assert [ROWS["req/s"].value(s) for s in (whole, not_whole)] == ["16.0", "30.4"]
    reading = act.Predict("?", ("a", "b"), 1, "", show=("requests_per_s",)).reading(whole)
    assert reading.endswith("requests/s 16.0.")


def test_predict_offline_gain_uses_both_panes(lesson):
    """Step 17's reveal names each run as its seat pane's caption does ("512 seats", "64
    seats"), not "this setting ... the other"; with the seats the run has when read."""
    p = act.build(lesson[17])
    assert lesson[17].compare.names(lesson[17].scenario) == ("seats", ("512 seats", "64 seats"))
    done = snap(completed=2000, max_num_seqs=512)
    done = EngineSnapshot(**{**{f: getattr(done, f) for f in done.__dataclass_fields__}, "finished": True})
    text = p.reveal(done, snap(completed=1152, max_num_seqs=64))
    assert "at t 10 s: 512 seats finished its 2,000 requests while 64 seats did 1,152" in text
    assert "64 seats take about 17.4 s for the same work, 1.74 times as long" in text
    assert "this setting" not in text and "the other" not in text
    # The learner moved the seats dial to 1,024 before guessing: the reading says so.
    moved = p.reveal(snap(completed=2000, max_num_seqs=1024), snap(completed=1152, max_num_seqs=64))
    assert "1,024 seats had done 2,000 requests while 64 seats did 1,152" in moved


# -- step 18: reading percentiles ------------------------------------------------------------------


def test_reading_exercise(lesson):
    reading = act.build(lesson[18])
    r = reading.new_question(4)
    assert r.table_md.startswith("Another server (not the live pane), before and after")
    assert "\n| per pool | before | after |" in r.table_md
    assert "chat TTFT p99" in r.table_md and "chat TPOT p99" in r.table_md
    # Each pool is named as the live metrics pane names it (sim.workload.pool_label): the batch
    # jobs are "jobs" in both, not "batch" (the running batch's name) in the table.
    assert "| jobs TTFT p50 |" in r.table_md and "| batch " not in r.table_md
    assert {pool for pool, _ in r.figures} == {"chat", "batch"}
    # Every cell as the metrics pane prints a latency, three digits kept: "11.0 ms" beside
    # "12.5 ms", not "11"; the explanation quotes the same cells.
    cells = re.findall(r"\| ([^|]+) \| ([^|]+) \|$", r.table_md, re.M)[1:]
    shown = {v for pair in cells for v in pair}
    assert shown == {numbers.ms(v / 1000) for pair in r.figures.values() for v in pair if v is not None}
    assert all(re.fullmatch(r"(\d\.\d\d|\d\d\.\d|\d{3}) m?s|\d+\.\d s", v) for v in shown), shown
    for b, a in (r.figures[("chat", "p99_ttft_ms")], r.figures[("chat", "p99_tpot_ms")]):
        assert f"from {numbers.ms(b / 1000)} to {numbers.ms(a / 1000)}" in r.explanation
    assert r.choices == act.READ_CHOICES
    wrong = 1 if r.answer != 1 else 2
    fb = r.check(wrong)
    assert not fb.correct and not r.done
    fb = r.check(r.answer)
    assert fb.correct and r.done and "What happened" in fb.message
    assert "Press a number" in r.check(7).message
    again = reading.new_question(4)
    assert again.table_md == r.table_md


def test_reading_exercise_draws_all_three_cases(lesson):
    reading = act.build(lesson[18])
    cases = {reading.new_question(seed).case for seed in (10, 11, 12)}
    assert cases == {"queueing", "heavier", "steady"}


# -- step 19: the cheat sheet -----------------------------------------------------------------------


def test_cheat_sheet_for_the_running_example(lesson):
    md = act.cheat_sheet_md(lesson[19].scenario)
    for figure in ("Llama 3.1 8B on H100 SXM 80 GB", "209 tok/s", "167", "448k", "584", "≈ **47**",
                   "Tuning order", "offline job"):
        assert figure in md, figure


def test_cheat_sheet_follows_the_profile(lesson):
    sc = lesson[19].scenario.replace(gpu="h200", model="llama-3.2-3b")
    md = act.cheat_sheet_md(sc)
    assert "Llama 3.2 3B on H200" in md and act.fmt(4.8e12 / 6.42e9) + " tok/s" in md
    slow = act.cheat_sheet_md(lesson[19].scenario.replace(gpu="l40s"))
    assert "L40S" in slow and "20 req/s is past this engine's saturated rate (11 req/s)" in slow


# -- step 20: saving and loading scenarios -----------------------------------------------------------


def test_playground_round_trip(tmp_path, lesson):
    sc = lesson[20].scenario.with_engine(max_num_seqs=128).with_workload(request_rate=12.5)
    path = tmp_path / "mine.toml"
    assert "Saved" in act.save_scenario(sc, path)
    assert read_scenario(path) == sc


@pytest.mark.parametrize("content,phrase", [
    ("this is [not toml", "not valid TOML"),
    ("gpu = \"tpu-v9\"\n", "unknown GPU profile"),
    ("[engine]\nmax_num_seqz = 3\n", "max_num_seqz"),
    ("[workload]\nrequest_rate = -1\n", "request_rate"),
])
def test_playground_bad_file_keeps_the_current_scenario(tmp_path, lesson, content, phrase):
    path = tmp_path / "bad.toml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(Unusable) as refused:
        read_scenario(path)
    assert phrase in str(refused.value)


@pytest.mark.parametrize("key", ["profiles_path", "hf_config_path", "workload.trace_path",
                                 "workload.dataset_path"])
def test_a_scenario_naming_a_pipe_is_refused_not_waited_on(tmp_path, key):
    """A scenario file whose trace, dataset, profiles or model config was a named pipe hung
    read_scenario (the playground's o, --scenario) on the pipe's open for ever, the app
    answering no key: the app reads regular files only. Checked in a process of its own, its
    time bounded, since the old code never returns."""
    import os
    import subprocess
    import sys

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    table, _, name = key.rpartition(".")
    extra = {"workload.trace_path": 'arrival = "trace"\n', "workload.dataset_path": 'dataset = "sharegpt"\n'}
    text = (f'{name} = "{fifo}"\n' if not table else f'[{table}]\n{extra[key]}{name} = "{fifo}"\n')
    path = tmp_path / "piped.toml"
    path.write_text(text, encoding="utf-8")
    code = ("import sys; from pathlib import Path; from batchtui.scenario_files import Unusable, read_scenario\n"
            "try:\n    read_scenario(Path(sys.argv[1]))\nexcept Unusable as e:\n    print(e)\n")
    try:
        proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("read_scenario waited on the pipe")
    assert proc.returncode == 0 and f"{key} {fifo} is not a regular file" in proc.stdout, proc.stdout + proc.stderr


def test_playground_missing_file(tmp_path, lesson):
    with pytest.raises(Unusable, match="cannot be read"):
        read_scenario(tmp_path / "nope.toml")


def test_build_returns_none_for_views_the_app_draws(lesson):
    assert act.build(lesson[19]) is None and act.build(lesson[20]) is None
    assert isinstance(act.build(lesson[2]), act.SingleStreamCeilingDrill)
    assert isinstance(act.build(lesson[15]), act.CacheBatchDrill)
    assert isinstance(act.build(lesson[14]), act.CacheCapChallenge)


# -- no drill's answer is on the screen before it is asked -------------------------------------------


@pytest.mark.parametrize("number", [2, 9, 15])
def test_no_drill_asks_the_example_its_lesson_works(lesson, number):
    step = lesson[number]
    drill = act.build(step)
    sc = step.scenario
    for seed in range(40):
        q = drill.new_question(seed)
        f = q.facts
        if number == 2:
            assert (f["gpu"], f["model"]) != (sc.gpu, sc.model)
        elif number == 9:
            assert (f["rate"], f["output_len"]) != (sc.workload.request_rate, sc.workload.output.mean)
        else:
            worked = (sc.gpu, sc.model, sc.gpu_memory_utilization, sc.workload.input.mean, sc.workload.output.mean)
            assert (f["gpu"], f["model"], f["util"], f["prompt"], f["output"]) != worked
        # Whatever it asks, its answer is not stated (in bold, as lessons state results) above it.
        for shown in {act.fmt(q.answer), act.fmt(q.answer, 2), str(round(q.answer))}:
            assert f"**{shown}**" not in step.body_md and f"**{shown} " not in step.body_md, (seed, shown)


def test_replicas_drill_reads_the_curve(lesson):
    drill = act.build(lesson[16])
    assert isinstance(drill, act.ReplicasDrill)
    q = next(q for q in (drill.new_question(s) for s in range(20)) if len(q.accepted) > 1)
    assert q.unit == "replicas" and q.whole_number and "a reading of the curve" in q.tolerance_text
    best, other = int(q.answer), next(int(a) for a in q.accepted if a != q.answer)
    right = q.check(str(other))
    assert right.correct and "for your reading of the curve" in right.message and right.show_derivation
    q2 = drill.new_question(0)
    peak, rate = q2.facts["peak"], q2.facts["slo_rate"]
    slip = q2.check(str(math.ceil(peak / rate)))
    if math.ceil(peak / rate) not in q2.accepted:
        assert not slip.correct and "headroom" in slip.message
    fb = q2.check("0.5")
    assert not fb.correct
    assert q2.check(str(int(q2.answer))).correct
    assert q2.run_dials == {"engine.max_num_seqs": q2.facts["seats"]}


def test_every_activity_file_declares_one_kind_and_the_registry_lists_it():
    import importlib
    import pkgutil

    from steps import ACTIVITY_KINDS

    modules = [m.name for m in pkgutil.iter_modules(act.__path__) if m.name != "base"]
    declared = [importlib.import_module(f"steps.activities.{name}").KIND for name in modules]
    assert sorted(declared, key=id) == sorted(act.KINDS, key=id)
    assert len({(k.kind, k.name) for k in act.KINDS}) == len(act.KINDS)
    assert {k.kind for k in act.KINDS} == set(ACTIVITY_KINDS) - {"none"}


def test_a_drill_writes_a_model_s_weights_as_its_lesson_does(lesson):
    """Step 2's worked answer read "16.1 GB" beside its lesson's "16.06 GB" (and 8,000 GB/s ÷
    16.1 GB "≈ 498"); step 15's sum, "16.1 GB" beside "0.92 × 85 − 16.06 − 3.4"."""
    assert "16.06 GB" in lesson[2].body_md
    for number in (2, 15):
        drill = act.build(lesson[number])
        said = [q.derivation_md for q in (drill.new_question(seed) for seed in range(40)) if "Llama 3.1 8B" in q.prompt_md]
        assert said and all("16.06 GB" in text and "16.1 GB" not in text for text in said), number


def test_the_cheat_sheet_says_which_line_a_setting_cannot_give_and_fills_the_rest():
    """Step 19 on the L40S with Llama 3.1 8B at memory 0.78: the run takes it, but EAGLE-3's
    head leaves the KV cache short of max_model_len, so the speculative line's figure raised and
    the app stopped ("batchtui stopped on an unexpected error (WorkerFailed)", tmux 80x23: memory
    typed 0.78, GPU → → →). The line says why it cannot be worked; the other lines are filled."""
    from steps.activities.cheat_sheet import cheat_sheet_md

    step = shared_steps.by_number()[19]
    sheet = cheat_sheet_md(step.scenario.replace(gpu="l40s", gpu_memory_utilization=0.78))
    assert "- **Speculative decoding**: cannot be worked for this setting: max model length = " in sheet
    assert "{{" not in sheet and "**Ceiling**" in sheet and "\n\n**Tuning order**" in sheet
