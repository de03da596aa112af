"""The playground beside a real server (`s`, `batchtui --server URL`, `f`), against `batchtui serve`
on a loopback port (a served twin at a time scale: its seconds pass 4 times faster than the wall
clock's).

What it must do: send the playground's own traffic (the arrivals `sim.arrivals` plans for its
scenario), show what the server measured beside the simulated figures (their values checked
against the served engine's own record: the requests it recorded, replayed by `batchtui sim`),
say a server that goes away in one line and go on simulating, refuse a bad address in one line,
leave no task or process behind, and calibrate to what it measured."""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from batchtui.app import BatchApp
from batchtui.progress import Progress, ProgressStore
from batchtui.settings import AppSettings
from batchtui.widgets.server_view import ServerView, gap_words
from benchmarks.closed_loop import Server
from manual_clock import ManualClock
from tests import shared_steps

ROOT = Path(__file__).resolve().parents[2]
SCALE = 4
wall_clock = pytest.mark.wall_clock("servers")


def playground(state: Path, clock=None, **settings) -> BatchApp:
    if not (state / "progress.json").exists():
        ProgressStore(state).save(Progress())
    options = {"cursor_blink": False, "state_dir": state, "start_step": 20, **settings}
    if clock is not None:
        options["clock"] = clock
    return BatchApp(list(shared_steps.lessons()), AppSettings(**options))


async def until(pilot, condition, timeout: float = 60.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        await pilot.pause(0.1)


def notice(app) -> str:
    return app.tutorial.query_one("#notice").message


def server_view(app) -> ServerView:
    return app.tutorial.stack.views("server")[0]


def our_tasks() -> list:
    """Tasks still pending whose coroutine is the live session's or its client's, in this loop,
    and the session's thread (its client's loop) while it lives."""
    out = [t for t in threading.enumerate() if t.name.startswith("batchtui-live-")]
    for task in asyncio.all_tasks():
        code = getattr(task.get_coro(), "cr_code", None)
        where = code.co_filename if code is not None else ""
        if not task.done() and (f"batchtui{os.sep}loadgen" in where or where.endswith("screens/live_server.py")):
            out.append(task)
    return out


@pytest.fixture(scope="module")
def served():
    s = Server("--time-scale", str(SCALE), "--stream-interval", "4")
    yield s
    s.stop()


# -- the measured pane against the served engine's own record (issue 42, item 4's second test) -----

@wall_clock
def test_the_measured_pane_reads_what_the_served_engine_recorded(tmp_path):
    """`--server` against `batchtui serve --record`: the requests the server recorded are the
    playground's planned traffic, one for one; the pane's TTFT and TPOT p50 are the served
    engine's (`batchtui sim` replaying the record) within the client's overhead (TOLERANCE), its
    tokens/s the server's generation counter over the last 10 s."""
    from sim.arrivals import Arrivals

    record = tmp_path / "served.jsonl"
    generated = []
    server = Server("--time-scale", str(SCALE), "--stream-interval", "4", "--record", str(record))
    app = playground(tmp_path / "state", server_url=server.url)
    try:
        async def drive():
            async with app.run_test(size=(80, 23)) as pilot:
                await until(pilot, lambda: app.tutorial.live.measured is not None
                            and app.tutorial.live.measured.time >= 30, what="30 server seconds measured")
                shown = server_view(app)
                m = shown.measured
                session = app.tutorial.live.session  # (its answers' E2E p50, as its result file has it)
                e2el = session.result(session.segment, {})["median_e2el_ms"] / 1000
                read_at = time.monotonic()
                text = shown.build(60).plain
                await pilot.press("s")  # disconnect
                await until(pilot, lambda: not our_tasks(), what="the session's end")
                generated.append(server.metric("vllm:generation_tokens_total"))
                generated.append(time.monotonic() - read_at)
                return m, text, e2el
        measured, text, client_e2el = asyncio.run(drive())
    finally:
        server.stop()
    from batchtui.formatting import count, ms

    # The pane draws these figures.
    assert ms(measured.ttft_p50) in text and ms(measured.tpot_p50) in text and count(measured.tokens_per_s) in text
    rows = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    assert measured.completed >= 100 and len(rows) >= measured.completed
    # The traffic the server recorded is the playground's plan, request for request.
    scenario = shared_steps.lessons()[19].scenario
    arrivals = Arrivals.for_scenario(scenario)
    planned = [arrivals.pop_due(1e9) for _ in rows]
    assert [(r["prompt_len"], r["output_len"]) for r in rows] == [(p.prompt_len, p.output_len) for p in planned]
    # The served engine's own figures: its record replayed (the same arrivals, lengths, engine).
    served = tmp_path / "answered.jsonl"
    served.write_text("".join(json.dumps(r) + "\n" for r in rows[:measured.completed]), encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "batchtui", "sim", "--workload", str(served), "--json",
                          "--api-server-count", "0"], capture_output=True, text=True, cwd=ROOT, check=True,
                         timeout=300)
    engine = json.loads(out.stdout)
    tpot, ttft = engine["median_tpot_ms"] / 1000, engine["median_ttft_ms"] / 1000
    machine = []  # the checks the machine, not the pane, missed, in words
    # What the client added to the engine's TTFT p50 and E2E p50 (server seconds): a request
    # carried to the engine, and its first token, then its last, read back. Over CLIENT_OVERHEAD_S,
    # the machine was late (the first, checked below against the record), and a client that reads
    # late stretches or squeezes the streams between the two.
    added = measured.ttft_p50 - ttft
    added_last = client_e2el - engine["median_e2el_ms"] / 1000
    output_len = statistics.median(r["output_len"] for r in rows[:measured.completed])
    late = max(added, added_last)
    assert tpot_explained(measured.tpot_p50, tpot, late, output_len), (measured.tpot_p50, tpot, added, added_last)
    if abs(measured.tpot_p50 / tpot - 1) >= TPOT_TOLERANCE:
        machine.append(f"the client read the first tokens {added * 1000:.0f} ms and the last {added_last * 1000:.0f} ms "
                       f"(server time) after the engine gave them on median, and the pane's TPOT p50 is "
                       f"{measured.tpot_p50 * 1000:.2f} ms against the engine's {tpot * 1000:.2f} (within "
                       f"{TPOT_TOLERANCE:.0%} checked)")
    assert ttft * 0.95 <= measured.ttft_p50, (measured.ttft_p50, ttft)
    # Tokens/s is the server's generation counter, which the record bounds: the pane's window and
    # its series read the rate the counter rose at over the run (its first seconds lower).
    counted = generated[0]
    answered = sum(r["output_len"] for r in rows[:measured.completed])
    assert answered <= counted <= sum(r["output_len"] for r in rows)
    average = counted / (measured.time + generated[1] * SCALE)
    series = measured.series_throughput
    assert abs(sum(series) / len(series) / average - 1) < 0.25, (sum(series) / len(series), average)
    missed = measured.tokens_per_s / average - 1
    if abs(missed) >= TOKENS_TOLERANCE:
        # The pane's window is the last 10 s: what the served engine generated there is the traffic
        # that reached it then, which the record holds (each request's arrival on the server's
        # clock). Replayed, the record and the plan give the engine's tokens/s over that window for
        # the traffic that came and for the traffic sent on time.
        end = measured.time - planned[0].arrival_time  # (the record's clock starts at the first arrival)
        came = _window_tokens_per_s(tmp_path / "came.jsonl", rows, end)
        sent = _window_tokens_per_s(tmp_path / "sent.jsonl", [
            {"arrival_time": p.arrival_time - planned[0].arrival_time, "prompt_len": p.prompt_len,
             "output_len": p.output_len} for p in planned], end)
        assert machine_explains_tokens(measured.tokens_per_s, average, came, sent), (
            measured.tokens_per_s, average, came, sent)
        machine.append(f"the requests reached the served engine so late that over the pane's window it generated "
                       f"{came:,.0f} tokens/s (the traffic sent on time: {sent:,.0f}), and the pane read "
                       f"{measured.tokens_per_s:,.0f} against the run's {average:,.0f}")
    # How late the machine carried the requests to the engine is in the record: each one's arrival
    # on the server's clock against the plan's (less the earliest's offset).
    if added > CLIENT_OVERHEAD_S * SCALE:
        offsets = [r["arrival_time"] - (p.arrival_time - planned[0].arrival_time) for r, p in zip(rows, planned)]
        late = statistics.median(offsets) - min(offsets)
        assert added <= 2 * late, (measured.ttft_p50, ttft, late)
        machine.append(f"the requests reached the served engine {late * 1000:.0f} ms (its time) later than planned on "
                       f"median, and the pane's TTFT p50 is {added * 1000:.0f} ms over the engine's (at most "
                       f"{CLIENT_OVERHEAD_S * SCALE * 1000:.0f} checked)")
    if machine:
        pytest.skip("the machine could not keep pace: " + "; ".join(machine))


def machine_explains_tokens(pane: float, average: float, came: float, sent: float) -> bool:
    """Whether the machine explains the pane's tokens/s straying from the run's `average`: the
    served engine generated over the pane's window, for the traffic that reached it (`came`, the
    record replayed), what the pane read, within TOKENS_TOLERANCE, and the traffic sent on time
    (`sent`, the plan replayed) would have brought back at least half the miss."""
    missed = pane / average - 1
    return abs(pane / came - 1) < TOKENS_TOLERANCE and (came - sent) / average / missed >= 0.5


TOKENS_TOLERANCE = 0.25
"""How far the pane's tokens/s (the server's counter over the last 10 s of its time) may stray from
the counter's rate over the whole run: traffic of one rate, its first seconds lower. Measured -14 %
with sixteen busy loops beside the test. A machine that delivered the requests to the engine so
late or bunched that the engine itself generated, over the pane's window, what the pane read
(within this tolerance), while the traffic sent on time would have brought at least half the miss
back, skips the check, saying so: the record, replayed, holds what the engine generated; a pane
that reads something else, or a served engine off its profile, still fails."""


def _window_tokens_per_s(path: Path, rows: list[dict], end: float) -> float:
    """Output tokens/s the served engine generated over the RATE_WINDOW_S before `end` (seconds on
    the record's clock), for the traffic `rows` (a record: arrival, prompt and output lengths)
    replayed by the simulator, each request's tokens after its first spread evenly to its end."""
    from sim.engine import run_scenario
    from sim.reports import RATE_WINDOW_S
    from sim.scenario import Scenario
    from sim.workload import WorkloadSpec

    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    scenario = Scenario(workload=WorkloadSpec(arrival="trace", trace_path=str(path), num_prompts=len(rows)))
    records = run_scenario(scenario.with_engine(api_server_count=0), keep_records=True).records
    start, tokens = end - RATE_WINDOW_S, 0.0
    for r in records:
        first, last = r.arrival_time + r.ttft, r.arrival_time + r.e2e
        tokens += start <= first < end
        if r.output_len > 1 and last > first:
            tokens += (r.output_len - 1) * max(0.0, min(last, end) - max(first, start)) / (last - first)
    return tokens / RATE_WINDOW_S


TPOT_TOLERANCE = 0.10
"""The gaps between streamed chunks are the engine's, give or take the wall clock's jitter (times 4,
spread over the 4 tokens of a chunk)."""


def tpot_explained(pane: float, engine: float, late: float, output_len: float) -> bool:
    """Whether the pane's TPOT p50 (`pane`, seconds) reads the served engine's (`engine`): within
    TPOT_TOLERANCE when the client kept up (it read the first and the last tokens at most
    CLIENT_OVERHEAD_S, real, after the engine gave them, on median: `late` the later of the two);
    when it read late, within what reading that late can move it. A client that reads each token
    of an answer up to `late` after the engine gave it moves the answer's last read against its
    first by at most `late`, its TPOT by at most late / (output_len - 1), and the median of such
    TPOTs no more than each. Seen under load: 3.97 ms against the engine's 7.73, the first tokens
    read about 2 s late and the rest in a bunch; 10.48 against 7.63, with a TTFT p50 of 3.05 s
    (eight busy loops beside the test); 10.32 against 7.27 with the first tokens read 180 ms late
    (the test's process stopped 0.6 s in every 0.75: a request sent, its first token read, in the
    same run, its last after a stop)."""
    allowed = TPOT_TOLERANCE * engine
    if late > CLIENT_OVERHEAD_S * SCALE:
        allowed = max(allowed, late / (output_len - 1))
    return abs(pane - engine) < allowed


CLIENT_OVERHEAD_S = 0.15
"""What the client may add to every TTFT in real seconds: sending the request, the server process
waking to read it, the answer read back in a busy process. Measured 29 ms with this test alone at
load 17 on two cores (the pane read 151 ms of server time against the engine's 34), 101 ms with
three test processes beside it (461 against 57). The engine's own TTFT is a lower bound the pane
never goes under; this upper one only catches a pane that reads something else. A machine so busy
that the requests themselves reached the engine late by half the excess (on median, against the
plan: 4 ms of server time alone, 211 ms with sixteen busy loops beside the test, where the pane's
TTFT was 170 ms over) skips the check, saying so."""


# -- keys, a bad address, a server that goes away ----------------------------------------------------

@wall_clock
def test_l_asks_for_the_address_and_each_key_lands_where_it_should(tmp_path, served):
    """l opens the prompt; the keys typed at once after it land in the prompt (none reaches the
    playground: `m`, a playground key, is a letter of the address here); Enter connects."""
    app = playground(tmp_path / "state", clock=ManualClock())

    async def drive():
        async with app.run_test(size=(80, 23)) as pilot:
            await pilot.pause()
            box_keys = ["ctrl+u", *"localhost:1", "m"]
            await pilot.press("s", *box_keys)
            prompt = app.screen
            assert type(prompt).__name__ == "ServerPromptScreen"
            assert prompt.query_one("#file-prompt-input").value == "localhost:1m"
            assert app.tutorial.sim.scenario.workload.turns == 1  # m stayed in the box
            await pilot.press("enter")  # refused in one line, the prompt kept
            status = str(prompt.query_one("#file-prompt-status").render())
            assert app.screen is prompt and "'1m' is not a port" in status and "\n" not in status
            running = app.tutorial.sim.running
            await pilot.press("ctrl+u", *served.url, "enter", "space")
            # space landed on the playground (its run paused or ran), not in the prompt
            assert app.screen is app.tutorial and app.tutorial.sim.running is not running
            if not app.tutorial.sim.running:
                await pilot.press("space")  # (paused, the server waits: both start when it runs)
            await until(pilot, lambda: app.tutorial.live.measured is not None, what="a first figure")
            assert app.tutorial.stack.page_names(app.tutorial.stack.page)[0] == "server"
            await pilot.press("s")
            await until(pilot, lambda: not our_tasks(), what="the session's end")
            assert "Disconnected from 127.0.0.1" in notice(app)
            assert "server" not in app.tutorial.stack.names
    asyncio.run(drive())


@wall_clock
def test_nothing_there_is_one_line_and_the_playground_goes_on(tmp_path):
    import socket

    # A port held bound and never listened on: it refuses connections, and nothing else can
    # take it and listen there while the test runs.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        app = playground(tmp_path / "state", clock=ManualClock(), server_url=f"http://127.0.0.1:{port}")

        async def drive():
            async with app.run_test(size=(80, 23)) as pilot:
                await until(pilot, lambda: "Not connected" in notice(app), what="the refusal")
                assert notice(app) == f"Not connected: cannot connect to 127.0.0.1:{port} (connection refused)."
                assert app.tutorial.sim is not None and "server" not in app.tutorial.stack.names
        asyncio.run(drive())


@wall_clock
def test_a_server_that_goes_away_mid_run_is_one_line_and_the_simulation_goes_on(tmp_path):
    server = Server("--time-scale", str(SCALE))
    app = playground(tmp_path / "state", server_url=server.url)
    try:
        async def drive():
            async with app.run_test(size=(80, 23)) as pilot:
                await until(pilot, lambda: (app.tutorial.live.measured or None) is not None
                            and app.tutorial.live.measured.completed > 5, what="answers")
                sim = app.tutorial.sim
                server.stop()
                await until(pilot, lambda: "went away" in notice(app), timeout=30, what="the line")
                line = notice(app)
                assert line.startswith("The server went away (") and "goes on simulating" in line
                assert len(line) < 200 and "Traceback" not in line
                t = sim.time
                await pilot.pause(0.5)
                assert app.tutorial.sim is sim and sim.running and sim.time > t  # still simulating
                assert not app.tutorial.live.connected and not our_tasks()
        asyncio.run(drive())
    finally:
        server.stop()


@wall_clock
def test_no_task_or_process_outlives_the_app(tmp_path, served, monkeypatch):
    """Quitting mid-run (a session sending, a calibration running) ends the session's tasks, its
    connections and the calibration's process (here one that would run two minutes)."""
    from batchtui.screens import live_server

    monkeypatch.setattr(live_server, "CALIBRATE", (sys.executable, "-c", "import time; time.sleep(120)", "calibrate"))
    app = playground(tmp_path / "state", server_url=served.url)
    seen = {}

    async def drive():
        async with app.run_test(size=(80, 23)) as pilot:
            await until(pilot, lambda: app.tutorial.live.measured is not None
                        and app.tutorial.live.measured.completed > 20, what="answers")
            assert our_tasks()
            await pilot.press("f")
            await until(pilot, lambda: _calibrate_pids(), timeout=20, what="batchtui calibrate")
            seen["pids"] = _calibrate_pids()
            seen["threads"] = set(threading.enumerate())
            await pilot.press("q")
        seen["left"] = our_tasks()
    before = {t.ident for t in threading.enumerate()}
    asyncio.run(drive())
    assert seen["left"] == []
    assert {t.ident for t in threading.enumerate()} <= before  # (no thread of the session's left)
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in seen["pids"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in seen["pids"])
    running = served.metric("vllm:num_requests_running")
    assert running == 0  # the server aborted what was in flight: its connections closed


@wall_clock
def test_closing_and_ending_at_once_share_one_shutdown_and_leave_nothing_pending(served):
    """The app closing while a session disconnects: `close` (the screen's worker) and `end_now`
    (the screen going) at once. Both wait for one shutdown: `close` returns, the client is closed,
    and the session's loop is closed with no task left on it (aiohttp's closing task included).
    (Each once ran a shutdown of its own, which cancelled the other's: `close` never returned.)"""
    from batchtui.loadgen.live import LiveSession

    async def drive():
        session = LiveSession(served.url)
        await session.open()
        loop, client = session._loop, session.client
        run = asyncio.create_task(session.run(shared_steps.lessons()[-1].scenario, lambda measured: None))
        deadline = time.monotonic() + 20
        while (session.segment is None or session.segment.completed < 3) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        closing = asyncio.create_task(session.close())
        await asyncio.sleep(0)  # (close has asked for the shutdown)
        session.end_now()
        done, pending = await asyncio.wait({closing, run}, timeout=10)
        for task in pending:  # (hung on a loop that stopped under them: let go, the test fails)
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        return closing in done, loop, client

    closed, loop, client = asyncio.run(drive())
    assert closed, "close did not return"
    assert loop.is_closed() and asyncio.all_tasks(loop) == set()
    assert client.session is None


def _calibrate_pids() -> list[int]:
    out = subprocess.run(["pgrep", "-f", f"-P{os.getpid()}", "batchtui calibrate"], capture_output=True, text=True)
    pids = [int(p) for p in out.stdout.split()]
    mine = subprocess.run(["pgrep", "-P", str(os.getpid())], capture_output=True, text=True).stdout.split()
    return [p for p in map(int, mine) if "calibrate" in _cmdline(p)] or pids


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "State:\tZ" not in status


def test_only_traffic_the_machine_delivered_late_excuses_a_tokens_per_s_miss():
    """The pane read 1,700 tokens/s against the run's 2,356 (-28 %). The machine explains it when
    the served engine, replayed on the record, generated about that over the window while the
    plan, sent on time, brought about the average; not when the engine generated the average
    (the pane reads something else), nor when the plan itself was that low there."""
    assert machine_explains_tokens(1700, 2356, came=1750, sent=2300)
    assert machine_explains_tokens(3000, 2356, came=2900, sent=2350)  # (bunched: more, not less)
    assert not machine_explains_tokens(1700, 2356, came=2224, sent=2231)
    assert not machine_explains_tokens(1700, 2356, came=1750, sent=1760)
    assert not machine_explains_tokens(1700, 2356, came=2900, sent=2300)  # (late the other way)


def test_only_a_client_that_read_late_excuses_a_tpot_miss():
    """A client that kept up (it read the first and last tokens at most CLIENT_OVERHEAD_S late) is
    held to TPOT_TOLERANCE; one that read them 2 s (server time) late may be off by up to 2 s / 255
    gaps, either way, and no more."""
    kept_up = CLIENT_OVERHEAD_S * SCALE
    assert tpot_explained(7.7e-3, 7.73e-3, kept_up, 256) and tpot_explained(8.4e-3, 7.73e-3, 0.05, 256)
    assert not tpot_explained(3.97e-3, 7.73e-3, kept_up, 256)  # (as strict as before when it kept up)
    assert not tpot_explained(8.6e-3, 7.73e-3, 0.05, 256)
    assert tpot_explained(3.97e-3, 7.73e-3, 2.0, 256) and tpot_explained(10.48e-3, 7.63e-3, 3.0, 256)
    assert not tpot_explained(3.97e-3, 7.73e-3, 0.9, 256)  # (late, but not by enough to squeeze it so)
    assert not tpot_explained(20e-3, 7.73e-3, 2.0, 256)  # (a pane reading something else)
    assert tpot_explained(6.5e-3, 7.73e-3, 2.0, 2) and not tpot_explained(6.5e-3, 7.73e-3, 2.0, 2000)


def test_the_gap_is_the_measured_figures_distance_from_the_simulated():
    assert gap_words(110, 100) == "+10%" and gap_words(88, 100) == "-12%"
    assert gap_words(None, 100) == gap_words(5, None) == gap_words(5, 0) == ""
    assert gap_words(1e6, 1) == ">+999%"


# -- f: calibrate to what was measured ---------------------------------------------------------------

@wall_clock
def test_f_writes_vllm_result_files_and_says_calibrates_answer_in_a_line(tmp_path, served):
    """One run at one rate: its result file is vllm bench serve's (its keys, the per-request arrays
    calibrate replays, the playground's engine as --metadata), written into the state folder; what
    one rate cannot pin calibrate refuses, said in a line, and the playground stays as it was."""
    from tests.unit.test_bench import assert_vllm_keys, expected_keys

    state = tmp_path / "state"
    app = playground(state, server_url=served.url)

    def answers_with_a_tpot() -> bool:
        """30 answers, and the result file f writes of them has its TPOT p50 (its TTFT p50 and
        output throughput it always has): a client whose process stalled while an answer streamed
        read it whole, a TPOT of 0, which calibrate cannot use (a file of most such answers gives
        2 figures, not 3); the answers read as they streamed bring the median back. (The file's
        answers, not the pane's: the pane's TPOT p50 is over the last PERCENTILE_WINDOW answers,
        the file's over the last KEPT_REQUESTS, batchtui.loadgen.live's.)"""
        live = app.tutorial.live
        m, session = live.measured, live.session
        if m is None or m.completed < 30 or session is None or session.segment is None:
            return False
        return session.result(session.segment, {})["median_tpot_ms"] > 0

    async def drive():
        async with app.run_test(size=(80, 23)) as pilot:
            await until(pilot, answers_with_a_tpot, timeout=120, what="30 answers, their file's TPOT p50 measured")
            await pilot.press("f")
            await until(pilot, lambda: notice(app).startswith(("Calibration failed", "Calibrated to")),
                        timeout=120, what="calibrate's answer")
            return notice(app), app.tutorial.sim.scenario
    line, scenario = asyncio.run(drive())
    files = sorted((state / "measured").glob("live-*.json"))
    assert len(files) == 1
    data = json.loads(files[0].read_text(encoding="utf-8"))
    meta = ["batching", "max-num-seqs", "max-num-batched-tokens", "max-model-len"]
    assert_vllm_keys(data, expected_keys(metadata=meta, detailed=True, metrics=("ttft", "tpot", "itl", "e2el")))
    assert data["completed"] >= 30 and data["model_id"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert len(data["input_lens"]) == len(data["start_times"]) == data["completed"] + data["failed"]
    # Calibrate counts the figures the file measured: its TTFT p50, output throughput and TPOT p50,
    # unless the answers that came after the wait were read whole (the client's process stalled
    # while they streamed) so often that most of the file's were: every gap 0, a TPOT p50 of 0.
    assert data["median_ttft_ms"] > 0 and data["output_throughput"] > 0
    given = 3
    if data["median_tpot_ms"] == 0:
        streamed = [gaps for gaps, n, error in zip(data["itls"], data["output_lens"], data["errors"])
                    if n > 1 and not error]
        whole = sum(not any(gaps) for gaps in streamed)
        assert 2 * whole > len(streamed), (whole, len(streamed))
        given = 2
    assert line.startswith(f"Calibration failed: 1 run(s) give {given} measured number(s) to fit 5 parameter(s)"), (
        line, {k: data[k] for k in ("completed", "median_ttft_ms", "median_tpot_ms", "output_throughput")})
    assert "\n" not in line and scenario.gpu == "h100-sxm"
    assert "Calibrating" in (state / "measured" / "calibrate.txt").read_text(encoding="utf-8")


@wall_clock
@pytest.mark.thorough
def test_f_after_runs_at_two_rates_reopens_the_playground_on_the_fitted_profile(tmp_path):
    """A low rate, then the playground's own: each rate set on the dial is a run of its own; f fits
    the GPU's parameters to them and the playground runs on the fitted profile, the line saying
    what moved."""
    state = tmp_path / "state"
    server = Server("--time-scale", str(SCALE), "--stream-interval", "4")
    app = playground(state, server_url=server.url)
    try:
        async def drive():
            async with app.run_test(size=(80, 23)) as pilot:
                screen = app.tutorial
                await until(pilot, lambda: screen.live.measured is not None, what="connected")
                applied, error = screen.sim_pane.dials.set({"workload.request_rate": 0.5})
                assert error is None
                screen.dials_moved(applied)
                await until(pilot, lambda: screen.live.measured is not None and screen.live.measured.completed >= 20
                            and screen.sim.scenario.workload.request_rate == 0.5, timeout=120, what="a low rate")
                applied, error = screen.sim_pane.dials.set({"workload.request_rate": 10.0})
                screen.dials_moved(applied)
                await until(pilot, lambda: len(screen.live.session.segments) >= 2
                            and screen.live.measured.completed >= 100, timeout=120, what="the playground's rate")
                await pilot.press("f")
                await until(pilot, lambda: notice(app).startswith(("Calibration failed", "Calibrated to")),
                            timeout=600, what="calibrate's answer")
                return notice(app), screen.sim.scenario
        line, scenario = asyncio.run(drive())
    finally:
        server.stop()
    assert line.startswith("Calibrated to") and "→" in line, line
    assert scenario.gpu == "h100-sxm-measured" and scenario.profiles_path.endswith("calibrated.toml")


@pytest.mark.parametrize("typed, expected", [
    ("127.0.0.1:8000", "http://127.0.0.1:8000"), ("http://gpu-box:8000/v1/", "http://gpu-box:8000"),
    ("https://[::1]:8443", "https://[::1]:8443"),
])
def test_an_address_is_read_as_a_learner_types_it(typed, expected):
    from batchtui.loadgen.live import base_url

    assert base_url(typed) == expected


@pytest.mark.parametrize("typed, words", [
    ("ftp://x:1", "is not an http:// or https:// address"), ("http://:8000", "names no server"),
    ("http://host:99999", "'99999' is not a port"), ("http://host:8000/v1/completions", "without a path"),
])
def test_a_bad_address_is_one_line_in_the_prompt_and_on_the_command_line(typed, words, capsys):
    from batchtui.loadgen.live import LiveError, base_url
    from batchtui.tui import main

    with pytest.raises(LiveError, match=words):
        base_url(typed)
    assert main(["--server", typed]) == 2
    err = capsys.readouterr().err
    assert err.startswith("batchtui: --server: ") and words in err and err.count("\n") == 1


@wall_clock
def test_leaving_the_playground_disconnects(tmp_path, served):
    app = playground(tmp_path / "state", clock=ManualClock(), server_url=served.url)

    async def drive():
        async with app.run_test(size=(80, 23)) as pilot:
            await until(pilot, lambda: app.tutorial.live.measured is not None, what="a first figure")
            await pilot.press("p")
            await until(pilot, lambda: not our_tasks(), what="the session's end")
            assert notice(app).startswith("Disconnected from 127.0.0.1") and not app.tutorial.live.connected
            assert app.tutorial.step.number == 19 and "server" not in app.tutorial.stack.names
            await pilot.press("n")
            await pilot.pause()
            assert app.tutorial.step.number == 20 and "server" not in app.tutorial.stack.names
    asyncio.run(drive())
