"""The twenty lesson files load, validate, and hold what the tutorial promises."""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import pytest

import steps
from sim.scenario import Scenario
from steps import StepError, load_step, load_steps
from tests import shared_steps

OUTLINE_TITLES = [
    "A support bot, one request at a time",
    "Drill: the single-stream ceiling",
    "Break it: static batches at peak",
    "Dynamic batching for classic models",
    "Same 64 slots, refilled every step",
    "Inside one engine iteration",
    "Throughput versus latency",
    "Break it: past the knee",
    "Drill: sequences in flight",
    "Break it: long prompts stall the stream",
    "A smaller token budget",
    "The scheduler's three dials",
    "Capping the batch for speed",
    "Break it: the cache caps the batch",
    "Drill: the batch the cache allows",
    "Settings for a chat SLO",
    "Settings for an offline job",
    "Reading TTFT and TPOT percentiles",
    "Cheat sheet",
    "Playground",
]
SECTIONS = {
    "One request at a time": (1, 2),
    "Batching that waits": (3, 4),
    "Iteration-level batching": (5, 9),
    "Prefill against decode": (10, 12),
    "What caps the batch": (13, 15),
    "Choosing settings": (16, 18),
    "Recap & playground": (19, 20),
}


@pytest.fixture(scope="module")
def all_steps():
    """`load_steps()`, as the run's first process to ask computed it (tests/shared_steps.py): this
    module's tests run spread over the test processes, and each loaded the lessons again."""
    return shared_steps.lessons()


def test_twenty_steps_in_the_outline_order(all_steps):
    assert [s.number for s in all_steps] == list(range(1, 21))
    assert [s.title for s in all_steps] == OUTLINE_TITLES


def test_sections_follow_the_outline(all_steps):
    for section, (first, last) in SECTIONS.items():
        assert {s.section for s in all_steps[first - 1:last]} == {section}


def test_the_whole_lesson_takes_about_35_minutes(all_steps):
    assert 32 <= sum(s.minutes for s in all_steps) <= 38
    for s in all_steps:
        assert len(s.body_md.split()) <= steps.MAX_WORDS, s.source


def test_lesson_text_suits_a_terminal(all_steps):
    for s in all_steps:
        assert "![" not in s.body_md and "<img" not in s.body_md, s.source
        for line in s.body_md.splitlines():
            if line.startswith("|"):
                assert line.count("|") <= 5, f"{s.source}: tables of at most four columns fit 80 columns"


def test_activities_where_steps_md_puts_them(all_steps):
    kinds = {s.number: s.activity.kind for s in all_steps}
    # Step 16's replicas are a drill too (issue 9): the learner reads the SLO rate off the curve.
    assert [n for n, k in kinds.items() if k == "drill"] == [2, 9, 15, 16]
    assert [n for n, k in kinds.items() if k == "break_it"] == [3, 8, 10, 14]
    assert kinds[18] == "read" and kinds[19] == "cheat_sheet" and kinds[20] == "playground"


def test_every_scenario_runs_and_every_dial_resolves(all_steps):
    for s in all_steps:
        assert isinstance(s.scenario, Scenario)
        s.scenario.engine_config()
        for dial in s.dials:
            value = dial.value(s.scenario)
            assert dial.check(value) == value
        for view in s.views:
            assert view in steps.VIEWS


def test_a_playground_dial_some_policies_ignore_names_those_that_read_it(all_steps):
    """The playground offers every batching policy, and its seat, batch and wait dials each act
    on some of them only: the label says which ("Seats", shortened to fit 80 columns, had
    stopped saying that only continuous batching reads it). Which policy reads a dial is found
    by running a short job with the dial at two values (about 50 ms in all)."""
    from sim.engine import run_scenario
    from sim.workload import LengthSpec

    policies = ("sequential", "static", "dynamic", "continuous")
    playground = all_steps[19]
    job = playground.scenario.with_workload(num_prompts=24, request_rate=40.0, input=LengthSpec("fixed", 64),
                                            output=LengthSpec("fixed", 16))
    dials = {d.name: d for d in playground.dials}
    for path, values in (("engine.max_num_seqs", (4, 16)), ("engine.max_batch_size", (4, 16)),
                         ("engine.max_queue_delay", (0.0, 0.05))):
        runs = {policy: [run_scenario(job.with_engine(batching=policy, **{path.split(".")[1]: v})).metrics
                         for v in values] for policy in policies}
        readers = [policy for policy, (a, b) in runs.items() if a != b]
        label = dials[path].label
        assert readers and [p for p in policies if p in label] == readers, (label, readers)


def test_live_scenarios_are_endless_except_the_offline_job(all_steps):
    for s in all_steps:
        if s.number == 17:
            assert s.scenario.workload.num_prompts >= 1000
        else:
            assert s.scenario.workload.num_prompts == 0, s.source


def test_step_1_is_the_running_example(all_steps):
    sc = all_steps[0].scenario
    assert (sc.gpu, sc.model) == ("h100-sxm", "llama-3.1-8b")
    assert sc.engine["batching"] == "sequential"
    assert (sc.workload.input.mean, sc.workload.output.mean) == (512, 256)


def test_lessons_say_when_they_use_smaller_values_than_vllm(all_steps):
    for s in all_steps:
        seats = s.scenario.engine.get("max_num_seqs")
        if s.scenario.engine.get("batching") == "continuous" and seats and seats < 1024 and not s.scenario.offline:
            text = s.body_md.lower()
            assert "lesson" in text or s.number in (19, 20), s.source


def test_dial_apply_checks_the_range(all_steps):
    step = all_steps[0]
    dial = step.dial("workload.request_rate")
    moved = dial.apply(step.scenario, 1.0)
    assert moved.workload.request_rate == 1.0
    with pytest.raises(ValueError, match="between 0.1 and 1.5 req/s"):
        dial.apply(step.scenario, 9.0)
    with pytest.raises(ValueError, match="a number"):
        dial.check("fast")
    choice = all_steps[1].dial("gpu")
    assert choice.apply(all_steps[1].scenario, "h200").gpu == "h200"
    with pytest.raises(ValueError, match="one of"):
        choice.check("tpu")


def test_get_path_reads_defaults_and_nested_values(all_steps):
    sc = all_steps[0].scenario
    assert steps.get_path(sc, "workload.input.mean") == 512
    assert steps.get_path(sc, "engine.max_num_batched_tokens") == 8192  # vLLM's H100 default
    assert math.isinf(steps.get_path(all_steps[16].scenario, "workload.request_rate"))


def test_compare_and_sweep_tables(all_steps):
    five = all_steps[4]
    assert five.compare.scenario.engine["batching"] == "static"
    assert five.compare.scenario.workload == five.scenario.workload
    assert five.compare.scenario.seed == five.scenario.seed
    seven = all_steps[6]
    assert seven.sweep.batch_sizes[0] == 1 and seven.sweep.batch_sizes[-1] == 512
    assert seven.sweep.context == 640


# -- the loader's errors name the file and the problem --------------------------------------------


def _copy_lessons(tmp_path: Path) -> Path:
    folder = tmp_path / "lessons"
    shutil.copytree(steps.lessons_dir(), folder)
    return folder


def _edit(folder: Path, name: str, old: str, new: str) -> None:
    p = folder / name
    text = p.read_text(encoding="utf-8")
    assert old in text
    p.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.mark.parametrize("old,new,message", [
    ("+++\nnumber = 1", "number = 1", "must start with a '+++' line"),
    ('title = "A support bot', 'title = A support bot', "not valid TOML"),
    ('views = ["seats"', 'views = ["radar"', "unknown view 'radar'"),
    ('batching = "sequential"', 'batching = "magic"', "batching = 'magic' is not allowed"),
    ('name = "workload.request_rate"', 'name = "workload.speed"', "no such setting"),
    ("min = 0.1\nmax = 1.5", "min = 0.6\nmax = 1.5", "outside the dial"),
    ('kind = "predict"', 'kind = "quiz"', "kind = 'quiz' must be one of"),
    ("answer = 2", "answer = 7", "answer must be the number of the right choice"),
    ("minutes = 2", "minutes = 2\ncolour = 'red'", "unknown key 'colour'"),
])
def test_bad_lesson_files_are_named_with_the_problem(tmp_path, old, new, message):
    folder = _copy_lessons(tmp_path)
    _edit(folder, "01-one-request-at-a-time.md", old, new)
    with pytest.raises(StepError) as info:
        load_steps(folder)
    assert "01-one-request-at-a-time.md" in str(info.value)
    assert message in str(info.value)


def test_missing_and_misnamed_steps(tmp_path):
    folder = _copy_lessons(tmp_path)
    (folder / "07-throughput-versus-latency.md").unlink()
    with pytest.raises(StepError, match="missing step 7"):
        load_steps(folder)
    folder = _copy_lessons(tmp_path / "b")
    (folder / "08-break-past-the-knee.md").rename(folder / "8-break-past-the-knee.md")
    with pytest.raises(StepError, match="8-break-past-the-knee.md: a lesson file must be named NN-slug.md"):
        load_steps(folder)


def test_a_missing_step_is_said_before_any_figure_is_filled(tmp_path, monkeypatch):
    """Every file is validated and the numbering checked before the simulator fills figures."""
    folder = _copy_lessons(tmp_path)
    (folder / "20-playground.md").unlink()

    def filled(text, lab):
        raise AssertionError("a figure filled before the numbering was checked")

    monkeypatch.setattr(steps.figures, "fill", filled)
    with pytest.raises(StepError, match="missing step 20"):
        load_steps(folder)


def test_number_must_match_the_file_name(tmp_path):
    folder = _copy_lessons(tmp_path)
    _edit(folder, "03-break-static-batches.md", "number = 3", "number = 4")
    with pytest.raises(StepError, match="03-break-static-batches.md: number = 4 does not match"):
        load_step(folder / "03-break-static-batches.md")


# -- the app's lazy view of the lessons ----------------------------------------------------------


def test_open_lessons_reads_headers_now_and_builds_a_step_when_asked(all_steps):
    lessons = steps.open_lessons()
    assert len(lessons) == 20
    assert [(s.number, s.title, s.section, s.minutes) for s in lessons.summaries] == \
        [(s.number, s.title, s.section, s.minutes) for s in all_steps]
    assert not lessons._built  # nothing validated yet: the app's first frame does not wait
    assert lessons[6].title == all_steps[6].title and lessons[-1].number == 20
    assert set(lessons._built) == {6, 19}


def test_open_lessons_names_a_broken_file_when_that_step_is_opened(tmp_path):
    folder = _copy_lessons(tmp_path)
    _edit(folder, "05-continuous-batching.md", "answer = 2", "answer = 9")
    lessons = steps.open_lessons(folder)  # headers are fine
    assert lessons[3].number == 4
    with pytest.raises(StepError, match="05-continuous-batching.md"):
        lessons[4]
    folder = _copy_lessons(tmp_path / "b")
    (folder / "07-throughput-versus-latency.md").unlink()
    with pytest.raises(StepError, match="missing step 7"):
        steps.open_lessons(folder)


def test_a_predict_runs_with_dials_of_its_own_step_only(tmp_path):
    folder = _copy_lessons(tmp_path)
    _edit(folder, "01-one-request-at-a-time.md", '"workload.request_rate" = 1.0', '"engine.max_num_seqs" = 8')
    with pytest.raises(StepError, match="'engine.max_num_seqs' is not one of the step's dials"):
        load_steps(folder)
    folder = _copy_lessons(tmp_path / "b")
    _edit(folder, "01-one-request-at-a-time.md", '"workload.request_rate" = 1.0', '"workload.request_rate" = 9.0')
    with pytest.raises(StepError, match="Traffic must be between"):
        load_steps(folder)


def test_a_reveal_marker_holds_back_the_answer(tmp_path):
    """Text after `<!-- reveal -->` is the answer: kept out of body_md, shown after answering."""
    folder = _copy_lessons(tmp_path)
    name = "03-break-static-batches.md"
    text = (folder / name).read_text(encoding="utf-8")
    (folder / name).write_text(text.rstrip("\n") + "\n\n<!-- reveal -->\n\nThe queue grew without bound.\n",
                               encoding="utf-8")
    step = load_step(folder / name)
    assert "The queue grew without bound." in step.reveal_md
    assert "reveal" not in step.body_md and "The queue grew" not in step.body_md
    (folder / name).write_text(text + "\n<!-- reveal -->\none\n<!-- reveal -->\ntwo\n", encoding="utf-8")
    with pytest.raises(StepError, match="at most one is allowed"):
        load_step(folder / name)



def test_step_15_says_why_an_80_gb_h100_has_85_gb(all_steps):
    """The sum starts from the memory CUDA reports, 85 GB, for a GPU sold as "80 GB": the text
    says it is the name's GiB in decimal GB (issue 37: never explained)."""
    import re

    step = all_steps[14]
    gpu = step.scenario.deployment().gpu
    text = " ".join(step.body_md.split())
    gb, gib = f"{gpu.memory_bytes / 1e9:.3g}", f"{gpu.memory_bytes / 2**30:.3g}"
    assert re.search(rf"{gb} GB is what CUDA reports|CUDA's count: the {re.escape(gpu.name)}'s {gib} GiB", text), text
    assert "80 GB" in gpu.name and f"× {gb} " in text


def test_step_6_says_which_of_its_limits_are_set_small(all_steps):
    """Step 6 shrinks the token budget and the seats below vLLM's defaults, not the KV cache
    (about 28,000 blocks, the whole cache): its text said all three limits were set small.
    Its hint names the limit as the panel does ("seats", not max_num_seqs)."""
    import re

    step = all_steps[5]
    engine, dep = step.scenario.engine_config(), step.scenario.deployment()
    vllm = step.scenario.replace(engine={"batching": "continuous"}).engine_config()
    assert engine.max_num_batched_tokens < vllm.max_num_batched_tokens and engine.max_num_seqs < vllm.max_num_seqs
    assert step.scenario.gpu_memory_utilization is None or step.scenario.gpu_memory_utilization >= 0.9
    assert dep.kv_cache_tokens > 100 * step.scenario.workload.input.mean
    text = " ".join(step.body_md.split())
    assert re.search(r"Three limits decide what fits; the first two are set small", text), text
    assert "limit becomes seats" in step.hints[1]


def test_a_lesson_that_points_at_another_steps_table_points_at_one_that_step_shows():
    """"step N's table" names a table step N's lesson shows as it opens (a table in its text
    before the reveal): step 8 once cited "step 7's table" for a figure, where step 7 shows
    curves and its table only once its question is answered."""
    files = {int(p.name.split("-")[0]): p for p in steps.lesson_files()}
    shown_tables = {}
    for number, path in files.items():
        body = path.read_text(encoding="utf-8").split("+++")[-1]
        before_reveal = re.split(r"^[ \t]*<!-- reveal -->[ \t]*$", body, flags=re.M)[0]
        shown_tables[number] = bool(re.search(r"^\|[-:| ]+\|$", before_reveal, flags=re.M))
    cited = [(number, int(n)) for number, path in files.items()
             for n in re.findall(r"[Ss]tep (\d+)'s table", path.read_text(encoding="utf-8"))]
    assert [(number, n) for number, n in cited if not shown_tables.get(n)] == []


def test_open_lessons_reads_only_the_top_level_keys_the_summaries_need(tmp_path):
    """Before the app's first frame only each front matter's top-level keys are read (a fifth of
    its text): a table broken is named when its step is opened, like any other mistake in it."""
    folder = _copy_lessons(tmp_path)
    _edit(folder, "05-continuous-batching.md", "[activity]", "[activity]\nkind = = 'oops'")
    lessons = steps.open_lessons(folder)
    assert [s.title for s in lessons.summaries] == OUTLINE_TITLES
    with pytest.raises(StepError, match="05-continuous-batching.md.*not valid TOML"):
        lessons.draft(4)
    # A line opening with "[" inside a top-level value: the whole front matter is read instead.
    _edit(folder, "06-inside-one-iteration.md", "minutes = ", 'note = """\n[not a table]\n"""\nminutes = ')
    assert steps.open_lessons(folder).summaries[5].title == OUTLINE_TITLES[5]
