"""The views draw what a snapshot says, in a few bytes per cell."""

from __future__ import annotations

import pytest
from textual.app import App

from batchtui.formatting import count
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


def _report(**changes):
    from sim.reports import IterationCostParts, IterationReport, ScheduledWork

    values = dict(index=7, start_time=1.0, end_time=1.006, scheduled=(ScheduledWork("a", 1, False, 600),),
                  num_decode_tokens=1, num_prefill_tokens=0, token_budget=8192, max_num_seqs=1, admitted=(),
                  first_tokens=(), emitted=("a",), finished=(), preempted=(), running=1, waiting=3,
                  kv_blocks_used=40, kv_blocks_usable=28000, binding_limit="max_num_seqs",
                  cost=IterationCostParts(weights=0.00599, compute=0.00002, kv_read=0.00002, overhead=0.00002,
                                          total=0.00604, binding="weights", bandwidth_share=0.797,
                                          tensor_core_share=0.0027))
    values.update(changes)
    return IterationReport(**values)


async def test_gauges_show_bandwidth_near_80_and_tensor_cores_near_zero():
    from batchtui.widgets.gauges import GaugesView

    view = GaugesView()
    async with ViewApp(view).run_test(size=(34, 4)) as pilot:
        view.update_snapshot(snapshot(last=_report()))
        await pilot.pause()
        bandwidth, tensor = view.render().plain.split("\n")
        assert bandwidth.startswith("memory bandwidth") and bandwidth.endswith("80%") and len(bandwidth) == 34
        assert tensor.startswith("tensor cores") and tensor.endswith("0.3%") and "█" not in tensor


async def test_iteration_view_fits_80_columns_even_with_a_long_prefill():
    from batchtui.widgets.iteration import IterationView
    from sim.reports import ScheduledWork

    view = IterationView()
    long_prefill = _report(scheduled=tuple(ScheduledWork(f"d{i}", 1, False, 700) for i in range(40))
                           + (ScheduledWork("long", 16000, True, 16000),),
                           num_decode_tokens=40, num_prefill_tokens=16000, token_budget=16384,
                           binding_limit="token_budget")
    async with ViewApp(view).run_test(size=(34, 14)) as pilot:
        for lines_given in (None, 7):  # the full form, then the compact one
            view.set_max_lines(lines_given)
            for report in (_report(), long_prefill):
                view.update_snapshot(snapshot(last=report))
                await pilot.pause()
                lines = view.render().plain.split("\n")
                assert all(len(line) <= 34 for line in lines), lines
                assert len(lines) == (11 if lines_given is None else 7), lines
        view.set_max_lines(None)
        first, second = (view.build(34).plain.split("\n") for view.snapshot in
                         (snapshot(last=_report()), snapshot(last=long_prefill)))
        assert first[5] == "time: weights and compute overlap" and first[-2:] == \
            ["limit: seats", "all seats full, requests waiting"]
        assert second[1].startswith("█ decode 40 + ▓ prefill 16,000") and second[-2] == "limit: token budget"


@pytest.mark.parametrize("ascii_only", [False, True])
async def test_the_iteration_s_free_kv_blocks_say_they_include_the_cached_ones(ascii_only):
    """vLLM's free count includes the cached blocks nobody holds, which the KV view's legend
    counts apart from free ones: with the cache on the label says so, or, where only a few
    characters fit, shows both of the legend's glyphs."""
    from batchtui.glyphs import glyphs_for
    from batchtui.settings import AppSettings
    from batchtui.widgets.iteration import IterationView

    g = glyphs_for(ascii_only)
    view = IterationView()
    app = ViewApp(view)
    app.settings = AppSettings(ascii_only=ascii_only)
    async with app.run_test(size=(40, 14)) as pilot:
        for caching in (True, False):
            view.update_snapshot(snapshot(last=_report(), prefix_caching=caching))
            await pilot.pause()
            view.set_max_lines(None)
            wide, narrow = view.build(40).plain.split("\n"), view.build(34).plain.split("\n")
            view.set_max_lines(7)
            compact = view.build(34).plain.split("\n")
            if caching:
                assert wide[4] == "free KV blocks 27,960 (cached incl.)"
                assert narrow[4] == "free KV 27,960 (cached incl.)"
                assert compact[3] == f"seats 1/1{g.sep}waiting 3{g.sep}KV {g.bar_free}{g.bar_cached} 28k"
            else:
                assert wide[4] == narrow[4] == "free KV blocks 27,960"
                assert compact[3] == f"seats 1/1{g.sep}waiting 3{g.sep}KV 28k"
            assert all(len(line) <= 34 for line in narrow + compact)


async def test_iteration_time_adds_up_the_way_the_engine_adds_it():
    """sqrt(weights² + compute²) + KV + attention + other = the iteration's time: the learner's
    sum of the numbers shown is the engine's."""
    import math
    import re

    from batchtui.formatting import ms
    from batchtui.widgets.iteration import IterationView
    from sim.reports import IterationCostParts

    cost = IterationCostParts(weights=0.00599, compute=0.00613, kv_read=0.00137, prefill_attention=0.0004,
                              overhead=0.00002, binding="compute")
    total = math.sqrt(cost.weights ** 2 + cost.compute ** 2) + cost.kv_read + cost.prefill_attention + cost.overhead
    report = _report(end_time=1.0 + total, cost=cost)
    view = IterationView()
    async with ViewApp(view).run_test(size=(34, 14)) as pilot:
        for lines_given in (None, 7):
            view.set_max_lines(lines_given)
            view.update_snapshot(snapshot(last=report))
            await pilot.pause()
            text = view.render().plain
            assert "√(W 5.99² + C 6.13²) = 8.57 ms" in text, text
            numbers = re.search(r"\+ KV ([\d.]+) \+ attn ([\d.]+) \+ other ([\d.]+)", text)
            assert numbers, text
            shown = 8.57 + sum(float(x) for x in numbers.groups())
            assert abs(shown - total * 1000) < 0.02
            assert ms(total) in text  # the iteration's time, on its title line


async def test_seats_header_keeps_the_queue_in_sight_when_narrow():
    view = SeatsView()
    async with ViewApp(view).run_test(size=(34, 10)) as pilot:
        seats = tuple(SeatView("decode") for _ in range(512))
        view.update_snapshot(snapshot(batching="continuous", seats=seats, max_num_seqs=512, queue_len=1840,
                                      running=512))
        await pilot.pause()
        head = view.render().plain.split("\n")[0]
        assert head.startswith("continuous 512/512") and head.endswith("queue 1,840") and len(head) <= 34


def test_a_latency_sparkline_shows_its_climb_and_a_steady_one_is_a_line_not_a_block():
    from batchtui.glyphs import UNICODE

    levels = UNICODE.spark
    climb = [0.014 * 1.5 ** i for i in range(20)]  # 14 ms to 30 s: the queue of step 1
    cells = spark_cells(climb, 20, levels, True, log=True)
    assert cells[0] == levels[0] and cells[-1] == levels[-1]
    assert [levels.index(c) for c in cells] == sorted(levels.index(c) for c in cells)  # it climbs
    assert len(set(cells)) >= 6  # ...in steps, not one jump at the end
    steady = [0.020, 0.021, 0.019, 0.020, 0.022, 0.020]
    cells = spark_cells(steady, 6, levels, True, log=True)
    assert levels[-1] not in cells and levels[0] not in cells  # a line across the middle
    assert spark_cells([0, 0.02, 0], 3, levels, True, log=True)[0] == " "  # nothing measured


async def test_the_kv_view_counts_tokens_in_the_engine_s_block_size():
    from dataclasses import dataclass

    from batchtui.widgets.kv_cache import KVCacheView

    @dataclass(frozen=True, slots=True)
    class WithBlockSize(EngineSnapshot):  # the snapshot the engine hands out carries its block size
        block_size: int = 32

    view = KVCacheView()
    async with ViewApp(view).run_test(size=(40, 5)) as pilot:
        base = snapshot(kv_blocks_usable=14_000, kv_blocks_used=0)
        view.block_size = 16  # what the lesson said: not what the engine runs
        view.update_snapshot(WithBlockSize(**{f: getattr(base, f) for f in base.__dataclass_fields__
                                              if f != "block_size"}))
        await pilot.pause()
        assert "448k tok" in view.render().plain


@pytest.mark.parametrize("ascii_only", [False, True])
async def test_the_kv_view_draws_blocks_in_use_cached_but_free_and_free_apart(ascii_only):
    """With the prefix cache on: in use, then cached but free (vLLM's evictable blocks), then
    free, each its own glyph (also under --ascii), and a legend line with the counts."""
    from batchtui.glyphs import glyphs_for
    from batchtui.settings import AppSettings
    from batchtui.widgets.kv_cache import KVCacheView

    g = glyphs_for(ascii_only)
    assert len({g.bar_used, g.bar_used_alt, g.bar_cached, g.bar_free, g.bar_mark}) == 5
    view = KVCacheView()
    app = ViewApp(view)
    app.settings = AppSettings(ascii_only=ascii_only)
    async with app.run_test(size=(40, 6)) as pilot:
        view.update_snapshot(snapshot(kv_blocks_used=30, kv_blocks_usable=100, evictable_blocks=20, cached_blocks=45,
                                      prefix_caching=True, kv_blocks_by_request=()))
        await pilot.pause()
        lines = view.render().plain.split("\n")
        bar = lines[1]
        assert bar == g.bar_used * 12 + g.bar_cached * 8 + g.bar_free * 20
        assert lines[2] == f"{g.bar_used} 30 used {g.bar_cached} 20 cached {g.bar_free} 50 free"
        assert lines[3].startswith("2 seqs hold blocks")
        assert view.wanted_lines(40) == 4 and view.min_lines(40) == 3
        # Three lines only: the legend stays, who holds blocks gives way.
        view.set_max_lines(3)
        assert view.render().plain.split("\n")[2] == lines[2]
        # Caching off: no cached blocks, no legend, the three lines as before.
        view.set_max_lines(None)
        view.update_snapshot(snapshot(kv_blocks_used=30, kv_blocks_usable=100))
        await pilot.pause()
        lines = view.render().plain.split("\n")
        assert g.bar_cached not in lines[1] and len(lines) == 3 and view.wanted_lines(40) == 3


async def test_the_metrics_view_shows_the_prefix_cache_hit_rate_when_the_cache_is_on():
    from batchtui.widgets.metrics import MetricsView as MetricsWidget

    view = MetricsWidget()
    async with ViewApp(view).run_test(size=(60, 8)) as pilot:
        view.update_snapshot(snapshot(prefix_caching=True, prefix_cache_queries=1000, prefix_cache_hits=590))
        await pilot.pause()
        assert "prefix hits 59%" in view.render().plain
        view.update_snapshot(snapshot(prefix_caching=True))
        await pilot.pause()
        assert "prefix hits -" in view.render().plain  # nothing looked up yet
        view.update_snapshot(snapshot(prefix_caching=False))
        await pilot.pause()
        assert "prefix" not in view.render().plain


def test_a_view_s_tight_form_is_used_only_where_it_spares_a_page():
    from batchtui.widgets.view_stack import pack

    sizes = {"iteration": (7, 11, 11), "kv": (3, 4, 4), "metrics": (6, 6, 6)}
    tight = {"iteration": 6}

    def first_page(height):
        pages = pack(list(sizes), sizes, 1, height, tight)
        return len(pages), [(p.name, p.lines) for p in pages[0][0]]

    # Room for every view's fewest lines: the tight form is not needed.
    assert first_page(16) == (1, [("iteration", 7), ("kv", 3), ("metrics", 6)])
    # One line short: the tight form keeps all three on one page.
    assert first_page(15) == (1, [("iteration", 6), ("kv", 3), ("metrics", 6)])
    # Two lines short: tight does not help, the usual pages.
    assert first_page(14) == (2, [("iteration", 11), ("kv", 3)])


async def test_the_batch_jobs_pool_is_not_labelled_like_the_running_batch():
    from batchtui.widgets.metrics import MetricsView as MetricsWidget
    from sim.reports import PoolView

    pools = (PoolView("chat", 10, 0.02, 0.05, 0.008, 0.01), PoolView("batch", 5, 0.2, 0.5, 0.009, 0.012))
    view = MetricsWidget()
    async with ViewApp(view).run_test(size=(40, 12)) as pilot:
        view.update_snapshot(snapshot(running=59, metrics=MetricsView(completed=15, pools=pools)))
        await pilot.pause()
        lines = view.render().plain.splitlines()
        assert [line.split()[0] for line in lines[1:] if line.startswith(" ")] == ["chat", "jobs"] * 2
        # "batch" names one thing only: the running batch.
        assert [line for line in lines if "batch" in line] == [line for line in lines if "batch 59" in line]


async def test_a_frame_repaints_only_the_lines_of_a_view_that_changed():
    """A frame where only the queue moved repaints the header line, not the seat grid under it
    (Textual writes the lines refreshed: unchanged lines cost no bytes on the terminal)."""
    from textual.geometry import Region

    view = SeatsView()
    async with ViewApp(view).run_test(size=(40, 10)) as pilot:
        view.update_snapshot(snapshot())
        await pilot.pause()
        refreshed = []
        original = view.refresh

        def spy(*regions, **kwargs):
            refreshed.append((regions, kwargs))
            return original(*regions, **kwargs)

        view.refresh = spy
        view.update_snapshot(snapshot(queue_len=9))
        await pilot.pause()
        assert refreshed == [((Region(0, 0, 40, 1),), {})]
        painted = [strip.text for strip in view.render_lines(Region(0, 0, 40, 3))]
        assert painted[0].startswith("static 2/5 busy") and painted[0].rstrip().endswith("queue 9")
        assert painted[1].rstrip() == "█▄░×·"
        refreshed.clear()
        view.update_snapshot(snapshot(queue_len=9))  # nothing changed: nothing repainted
        await pilot.pause()
        assert refreshed == []


async def test_an_embedder_s_throughput_reads_as_requests_not_tokens(make_app):
    """Step 4's embedder makes no tokens: its rate was shown as req/s labelled tokens/s (issue
    37). Its metrics line, sparkline and compare column say req/s; the chat LLM beside it keeps
    its tokens/s, and both runs' req/s stay in the comparison."""
    from batchtui.widgets.compare import CompareView
    from batchtui.widgets.metrics import MetricsView as MetricsLine
    from batchtui.widgets.sparklines import SparklinesView
    from sim.engine import Engine
    from tests import shared_steps

    step = shared_steps.by_number()[4]
    engine = Engine(step.scenario.with_workload(num_prompts=400))
    engine.run(until_time=1.0)
    embedder = engine.snapshot()
    chat = Engine(step.compare.scenario.with_workload(num_prompts=50))
    chat.run(until_time=10.0)
    chat = chat.snapshot()
    assert embedder.encoder and not chat.encoder and embedder.metrics.requests_per_s > 0
    line, sparks, both = MetricsLine(), SparklinesView(), CompareView()
    async with ViewApp(line).run_test(size=(44, 10)):
        line.update_snapshot(embedder)
        text = line.build(44).plain
        assert "req/s" in text and "tokens/s" not in text
    async with ViewApp(sparks).run_test(size=(44, 10)):
        sparks.update_snapshot(embedder)
        first = sparks.build(44).plain.splitlines()[0]
        assert first.startswith("req/s") and first.split()[-1] == count(embedder.metrics.requests_per_s)
    async with ViewApp(both).run_test(size=(44, 20)):
        both.update_frame({"main": embedder, "compare": chat})

        def rows():
            return {line[:9].strip(): line[9:].split() for line in both.build(44).plain.splitlines()[1:]}

        assert rows()["tokens/s"][0] == "-" and rows()["tokens/s"][1] != "-"
        both.max_lines = 5  # (step 4 at 80x23): throughput as req/s, and the padding it is about
        assert {"req/s", "padding"} <= set(rows()) and "tokens/s" not in rows()


def _dial_values(spec):
    """Every value a dial takes by its keys: each choice, or each notch from min to max (the
    dial's own steps: the widest value may sit inside the range, "0.095 s")."""
    from batchtui.widgets.dial import DialControl

    if spec.choices:
        return list(spec.choices)
    dial, values = DialControl(spec, spec.min), [spec.min]
    while (value := dial.moved(1)) != dial.value:
        dial.value = value
        values.append(value)
    return values


def _crowded(width, dials, extra=()):
    """(label, value) of each dial value that leaves its dial no room for a track."""
    from batchtui.widgets.dial import DialControl, track_cells

    crowded = []
    for spec in dials:
        for value in [*_dial_values(spec), *dict(extra).get(spec.name, ())]:
            words = DialControl(spec, value).value_words()
            if not track_cells(width, spec.label, words):
                crowded.append((spec.label, words))
    return crowded


async def test_every_lesson_dial_shows_its_track_at_80_columns(make_app):
    """A dial whose label and value leave fewer than five cells shows no track: step 10's "Long
    prompt length 16,000 tokens" did at 80 columns, and the playground's "Seats (continuous)
    1,024 sequences" and five more, so the learner could not see where in its range the dial
    sat. Every dial of steps 1-19, and every dial of the playground (with any model or GPU of the
    built-in profiles, which `l` and --gpu put on its dials), at every value its keys reach, has
    room for its track at the width the simulation pane gives a dial at 80x23."""
    from batchtui.widgets.dial import DialControl
    from sim.profiles import BUILTIN_GPUS, BUILTIN_MODELS
    from tests import shared_steps

    lessons = shared_steps.lessons()
    widths = {}
    for start in (10, 20):
        app = make_app(list(lessons), start_step=start)
        async with app.run_test(size=(80, 23)) as pilot:
            await pilot.pause()
            on_screen = list(app.screen.query(DialControl))
            assert on_screen and all("●" in dial.render().plain for dial in on_screen)
            widths[start] = on_screen[0].outer_size.width - on_screen[0].styles.gutter.width
    crowded = [(step.number, *where) for step in lessons[:19]
               for where in _crowded(widths[10], step.dials)]
    playground = lessons[19]
    assert playground.title == "Playground"
    crowded += [(20, *where) for where in _crowded(
        widths[20], playground.dials, {"model": BUILTIN_MODELS, "gpu": BUILTIN_GPUS})]
    assert not crowded
