"""Worker processes end with their command and say why (issue 38): `batchtui.cli.workers.Workers`,
the one pool every command runs its workers in.

The commands run for real (`sweep`, `plan`, `search`, `calibrate` with `--jobs 2`), each started
in a session of its own, so its process group holds the command, the fork server, the resource
tracker and the workers and nothing else: the processes are found by that group only. Each
case: the pool cannot start (the workers' interpreter cannot be run), or SIGTERM, SIGKILL or
SIGINT reaches the command's PID, Ctrl-C reaches its whole group (as from a terminal), or one of
its workers is SIGKILLed (what the out-of-memory killer does). Then within 5 s no process of the group is left and standard output is closed (so
`$(batchtui search ...)` returns), the exit status is the documented one, and standard error
says why in one line.

One case per command runs by default, covering each way once; `pytest -m thorough` runs every
command with every way."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from batchtui.cli import main
from batchtui.cli.exits import EXIT_FAILURE, EXIT_HUNG_UP, EXIT_INTERRUPTED, EXIT_TERMINATED, WorkerError
from batchtui.cli.workers import Workers

GONE_WITHIN_S = 5.0
BUSY_CPU_S = 0.3  # CPU time each worker has used when it is surely running a task

# Each task seconds of work (sweep's over ten on an idle machine: a worker that outlived its
# command would be seen), so the workers are busy when the signal comes.
COMMANDS = {
    "sweep": ["sweep", "--max-num-seqs-values", "64,128,256,512,1024,2048", "--num-prompts", "200000",
              "--request-rate", "20", "--input-len", "256", "--output-len", "32"],
    "plan": ["plan", "--tpot-p99", "30", "--ttft-p99", "500", "--seeds", "2"],
    "search": ["search", "--offline", "200000", "--max-num-seqs-values", "8,16,32,64,128,256", "--output", "s.jsonl"],
    "calibrate": ["calibrate", "{runs}/low.json", "{runs}/loaded.json", "--gpu", "h100-sxm", "--output", "fitted.toml"],
}
SEARCH_KEPT = "the points finished are kept in s.jsonl"


@pytest.fixture(scope="module")
def measured_runs(tmp_path_factory) -> Path:
    """Two measured runs for calibrate (one request at a time, a loaded one big enough that each
    simulation of the fit takes seconds), made once for the module."""
    folder = tmp_path_factory.mktemp("runs")
    for name, rate, n in (("low", "0.5", "200"), ("loaded", "20", "20000")):
        assert main(["sim", "--request-rate", rate, "--num-prompts", n, "--save-result",
                     "--result-filename", str(folder / f"{name}.json"), "--json"]) == 0
    return folder


def command_line(command: str, request) -> list[str]:
    argv = COMMANDS[command]
    if command == "calibrate":
        runs = request.getfixturevalue("measured_runs")
        argv = [word.replace("{runs}", str(runs)) for word in argv]
    return argv


# -- the process group ---------------------------------------------------------------------------------

def _stat(pid: int) -> tuple[str, int, int, float] | None:
    """(state, parent, process group, CPU seconds) of a process, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return fields[0], int(fields[1]), int(fields[2]), (int(fields[11]) + int(fields[12])) / ticks


def group(pgid: int) -> dict[int, tuple[str, int, int, float]]:
    """The live processes of a process group (zombies are dead: they are left out)."""
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(int(entry))
            if st is not None and st[2] == pgid and st[0] != "Z":
                out[int(entry)] = st
    return out


def workers_of(proc: subprocess.Popen) -> list[int]:
    """The command's workers: the processes of its group forked by another of its processes (the
    fork server), not by the command itself."""
    members = group(proc.pid)
    return [pid for pid, st in members.items() if pid != proc.pid and st[1] in members and st[1] != proc.pid]


def start(argv: list[str], cwd: Path, executable: str | None = None) -> subprocess.Popen:
    """`batchtui ARGV --jobs 2` in a session (and process group) of its own; with `executable`,
    the workers' interpreter is that path (multiprocessing.set_executable)."""
    code = "import sys\n"
    if executable is not None:
        code += f"import multiprocessing\nmultiprocessing.set_executable({executable!r})\n"
    code += "from batchtui.start import main\nsys.exit(main())\n"
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("BATCHTUI_TRACEBACK", None)
    return subprocess.Popen([sys.executable, "-c", code, *argv, "--jobs", "2"], cwd=cwd, env=env,
                            start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_busy(proc: subprocess.Popen, timeout: float = 180.0) -> list[int]:
    """Wait until two workers are running tasks; their pids."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        busy = [pid for pid in workers_of(proc) if (_stat(pid) or ("", 0, 0, 0.0))[3] >= BUSY_CPU_S]
        if len(busy) >= 2:
            return busy
        time.sleep(0.1)
    _kill_group(proc)
    pytest.fail(f"the workers never got busy (exit {proc.poll()}): {proc.stderr.read()[-800:]}")


def _kill_group(proc: subprocess.Popen) -> None:
    for pid in group(proc.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    """The command's end: its standard output and error closed and the group empty within
    GONE_WITHIN_S, or the test fails (and kills what is left). (exit status, stdout, stderr)."""
    try:
        out, err = proc.communicate(timeout=GONE_WITHIN_S)  # every holder of the pipes has ended
    except subprocess.TimeoutExpired:
        left = group(proc.pid)
        _kill_group(proc)
        proc.communicate()
        pytest.fail(f"standard output still open {GONE_WITHIN_S:g} s on; left: {left}")
    deadline = time.monotonic() + GONE_WITHIN_S
    while group(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = group(proc.pid)
    _kill_group(proc)
    assert not left, f"processes of the command left after {GONE_WITHIN_S:g} s: {left}"
    return proc.returncode, out, err


def said(err: str) -> list[str]:
    """What the command said on stderr, less calibrate's progress lines (indented)."""
    return [line for line in err.splitlines() if line.strip() and not line.startswith("  ")]


# -- each way a pool ends ------------------------------------------------------------------------------

def _sigterm(proc):
    os.kill(proc.pid, signal.SIGTERM)


def _sigkill(proc):
    os.kill(proc.pid, signal.SIGKILL)


def _sigint(proc):
    os.kill(proc.pid, signal.SIGINT)  # the PID only, as `kill -INT PID` sends it


def _ctrl_c(proc):
    os.killpg(proc.pid, signal.SIGINT)  # the whole group, as a terminal's Ctrl-C sends it


def _worker_killed(proc):
    os.kill(wait_busy(proc)[0], signal.SIGKILL)


def _sighup(proc):
    os.killpg(proc.pid, signal.SIGHUP)  # its terminal or SSH connection went away: the whole group


WAYS = {"SIGTERM": _sigterm, "SIGKILL": _sigkill, "SIGINT": _sigint, "Ctrl-C": _ctrl_c,
        "worker SIGKILL": _worker_killed, "SIGHUP": _sighup}


def expected(command: str, way: str) -> tuple[int, list[str] | None]:
    """The documented exit status and line (None: SIGKILL, nothing can be said)."""
    if way == "SIGKILL":
        return -signal.SIGKILL, []
    if way == "worker SIGKILL":
        line = ("batchtui: error: a worker process was killed by SIGKILL (the kernel's "
                "out-of-memory killer sends SIGKILL: fewer --jobs, or a smaller run?)")
        if command == "search":
            line += f"; {SEARCH_KEPT}: run the same command again to resume"
        return EXIT_FAILURE, [line]
    # once: not again by each worker
    word, status = {"SIGTERM": ("terminated", EXIT_TERMINATED), "SIGHUP": ("hung up", EXIT_HUNG_UP)}.get(
        way, ("interrupted", EXIT_INTERRUPTED))
    if command == "search":
        return status, [f"{word}: {SEARCH_KEPT}; run the same command again to resume"]
    return status, [f"batchtui: {word}"]


def check_way(command: str, way: str, folder: Path, request) -> None:
    proc = start(command_line(command, request), folder)
    wait_busy(proc)
    WAYS[way](proc)
    code, out, err = finish(proc)
    status, lines = expected(command, way)
    assert code == status, err[-800:]
    assert said(err) == lines and "Traceback" not in err
    assert not (folder / "fitted.toml").exists()
    if command == "search":
        assert not (folder / "s.json").exists()  # no table: the search did not end


# One of each way by default, each on another command; all of them under -m thorough.
DEFAULT_CASES = [("sweep", "SIGKILL"), ("plan", "SIGINT"), ("plan", "Ctrl-C"), ("search", "SIGTERM"),
                 ("calibrate", "worker SIGKILL")]
THOROUGH_CASES = [(c, w) for c in COMMANDS for w in WAYS if (c, w) not in DEFAULT_CASES]


@pytest.mark.parametrize("command, way", DEFAULT_CASES)
def test_a_signal_or_a_dead_worker_ends_every_process_of_the_command(command, way, tmp_path, request, capsys):
    check_way(command, way, tmp_path, request)


@pytest.mark.thorough
@pytest.mark.parametrize("command, way", THOROUGH_CASES)
def test_every_command_ends_all_its_processes_on_every_signal(command, way, tmp_path, request, capsys):
    check_way(command, way, tmp_path, request)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_pool_that_cannot_start_fails_in_one_line(command, tmp_path, request, capsys):
    """The workers' interpreter cannot be run: exit 1, one line saying so (never a silent 0, as
    when a broken pipe of multiprocessing's was taken for `| head`), calibrate's --output not
    written, nothing left running."""
    folder = tmp_path
    missing = str(folder / "no-such-python")
    proc = start(command_line(command, request), folder, executable=missing)
    code, out, err = finish(proc)
    assert code == EXIT_FAILURE, err[-800:]
    reason = f"could not start worker processes: cannot run the interpreter {missing}; --jobs 1 runs in this process"
    if command == "search":
        reason += f"; {SEARCH_KEPT}: run the same command again to resume"
    assert said(err) == [f"batchtui: error: {reason}"], err
    assert not (folder / "fitted.toml").exists()


# -- the pool itself, in this process ------------------------------------------------------------------

def square(x):
    return x * x


def fail_on_three(x):
    if x == 3:
        raise ValueError("three is refused")
    return x


def unpicklable(x):
    return lambda: x


def nap(seconds):
    time.sleep(seconds)
    return seconds


def our_workers() -> list:
    import multiprocessing

    return [p for p in multiprocessing.active_children() if p.name == "batchtui-worker"]


def test_the_pool_gives_each_result_in_order_and_a_task_error_as_itself():
    with Workers(2) as pool:
        assert pool.map(square, range(7)) == [i * i for i in range(7)]
        assert pool.map(square, [5]) == [25]  # the workers already started run it
        with pytest.raises(ValueError, match="three is refused") as caught:
            pool.map(fail_on_three, range(6))
        assert "fail_on_three" in str(caught.value.__cause__)  # the worker's traceback
        with pytest.raises(Exception, match="pickle"):  # a result that cannot cross: why, as itself
            pool.map(unpicklable, [1, 2])
        assert pool.map(square, range(3)) == [0, 1, 4]  # still works after failures
    assert our_workers() == []


def echo_after(task):
    seconds, word = task
    time.sleep(seconds)
    return word


def test_an_answer_no_longer_wanted_never_reaches_the_next_call():
    """A loop over the answers left early (an error, Ctrl-C) ends the worker still running a
    task nobody wants: its answer would be taken for the next call's."""
    with Workers(2) as pool:
        pool.map(echo_after, [(0.5, "x"), (0.5, "y")])  # both workers up
        started = time.monotonic()
        answers = pool.imap_unordered(echo_after, [(0, "a"), (2, "b")])
        assert next(answers) == (0, "a")
        answers.close()
        assert pool.map(echo_after, [(0, "c"), (0, "d")]) == ["c", "d"]
        assert time.monotonic() - started < 2  # nobody waited for "b"
    assert our_workers() == []


def ignored_by_the_worker(signum):
    return signal.getsignal(signum) == signal.SIG_IGN


def test_a_worker_leaves_ctrl_c_and_a_hang_up_to_its_command():
    """A terminal sends SIGINT (Ctrl-C) and SIGHUP (hung up) to the command's whole group: the
    workers leave both to the command, which ends them and says so once. A worker SIGHUP
    killed could be seen dead before the command's own handler ran: "a worker process was
    killed by SIGHUP", exit 1, for a hang-up."""
    with Workers(2) as pool:
        assert pool.map(ignored_by_the_worker, [signal.SIGINT, signal.SIGHUP]) == [True, True]


def test_one_job_runs_in_this_process():
    with Workers(1) as pool:
        assert pool.map(square, [2, 3]) == [4, 9]
        assert our_workers() == []


def test_a_worker_killed_is_an_error_naming_its_signal():
    import threading

    def kill_one():
        deadline = time.monotonic() + 60
        while pool.running < 2 and time.monotonic() < deadline:  # both running a task
            time.sleep(0.05)
        os.kill(our_workers()[0].pid, signal.SIGKILL)

    with Workers(2) as pool:
        killer = threading.Thread(target=kill_one)
        killer.start()
        with pytest.raises(WorkerError, match="a worker process was killed by SIGKILL"):
            pool.map(nap, [60, 60])
        killer.join()
    assert our_workers() == []


def note_pid_then_sleep(task):
    path, seconds = task
    Path(path).write_text(str(os.getpid()))
    time.sleep(seconds)
    return seconds


def test_a_worker_killed_while_it_waits_for_work_is_seen_at_once(tmp_path):
    """The other worker's long task is not waited for (calibrate's fit left a worker idle while
    the other ran: its death went unseen until that task ended)."""
    import threading

    noted = tmp_path / "busy.pid"
    with Workers(2) as pool:
        pool.map(echo_after, [(0.5, "x"), (0.5, "y")])  # both workers up
        workers = [p.pid for p in our_workers()]

        def kill_the_idle_one():
            deadline = time.monotonic() + 60
            while not noted.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.2)
            busy = int(noted.read_text())
            os.kill(next(pid for pid in workers if pid != busy), signal.SIGKILL)

        killer = threading.Thread(target=kill_the_idle_one)
        started = time.monotonic()
        killer.start()
        with pytest.raises(WorkerError, match="a worker process was killed by SIGKILL"):
            pool.map(note_pid_then_sleep, [(str(noted), 60)])
        killer.join()
        assert time.monotonic() - started < 20
    assert our_workers() == []


def _collatz_chain(start: int, steps: int):
    """A chain whose every item depends on the answer before it (plan's search of one seed)."""
    def chain(run):
        seen = [start]
        for _ in range(steps):
            seen.append(run((seen[-1], 0.02)))
        return seen

    return chain


def collatz_after(task):
    value, seconds = task
    time.sleep(seconds)
    return value // 2 if value % 2 == 0 else 3 * value + 1


def test_chains_share_the_workers_and_give_each_chain_its_own_answers():
    """Three chains on two workers: each gets the answers of its own items, as run one after
    another; a task's error is raised as itself and the pool still works after it."""
    starts = (7, 12, 27)
    alone = [_collatz_chain(s, 6)(lambda task: collatz_after((task[0], 0))) for s in starts]
    with Workers(2) as pool:
        assert pool.chains(collatz_after, [_collatz_chain(s, 6) for s in starts]) == alone
        with pytest.raises(ValueError, match="three is refused"):
            pool.chains(fail_on_three, [lambda run: run(1), lambda run: run(3)])
        assert pool.chains(square, [lambda run: run(run(2))]) == [16]
        # several items of a chain at once, their answers in order, beside a chain of one at a time
        assert pool.chains(collatz_after, [lambda run: run.all([(s, 0.02) for s in starts] + [(6, 0.0)]),
                                           _collatz_chain(7, 3)]) == [[22, 6, 82, 3], alone[0][:4]]
        assert pool.chains(square, [lambda run: run.all([])]) == [[]]
    assert our_workers() == []
    with Workers(1) as pool:  # in this process
        assert pool.chains(collatz_after, [_collatz_chain(s, 3) for s in starts]) == [a[:4] for a in alone]
        assert pool.chains(square, [lambda run: run.all([1, 2, 3])]) == [[1, 4, 9]]


def test_many_chains_run_on_a_few_threads_with_the_same_answers():
    import threading

    """A chain a thread made `plan --seeds 1000000` fail ("can't start new thread"): the chains
    now run CHAIN_THREADS_PER_JOB a worker at a time, each starting as another ends, and each
    still gets its own answers, as run alone."""
    import threading

    from batchtui.cli.workers import CHAIN_THREADS_PER_JOB

    starts = list(range(1, 201))
    alone = [_collatz_chain(s, 3)(lambda task: collatz_after((task[0], 0))) for s in starts]
    most = []

    def counted(chain):
        def run(r):
            most.append(sum(t.name == "batchtui-chain" for t in threading.enumerate()))
            return chain(r)
        return run

    for jobs in (1, 2):
        most.clear()
        with Workers(jobs) as pool:
            chains = [counted(_collatz_chain(s, 3)) for s in starts]
            assert pool.chains(collatz_after, [lambda run, c=c: c(lambda t: run((t[0], 0))) for c in chains]) == alone
        assert max(most) <= CHAIN_THREADS_PER_JOB * jobs
    started = []

    def one(run):
        started.append(1)
        return run(1)

    with Workers(1) as pool:  # a failed task stops the chains: those not started never start
        with pytest.raises(ValueError, match="three is refused"):
            pool.chains(fail_on_three, [lambda run: run(3)] + [one] * 200)
        assert len(started) < CHAIN_THREADS_PER_JOB * 2
    assert our_workers() == []


def test_sighup_stops_a_command_as_sigterm_does_and_leaves_no_temporary_file(tmp_path):
    """A hang-up (the terminal or SSH connection gone) killed the command where it stood: exit
    129 with nothing said, and `sim --per-request keep.csv` left its `.keep.csv.*.tmp` beside
    the file. It stops as SIGTERM stops it: one line, 129, the temporary file removed, keep.csv
    as it was."""
    keep = tmp_path / "keep.csv"
    keep.write_text("mine\n")
    code = "import sys\nfrom batchtui.start import main\nsys.exit(main())\n"
    proc = subprocess.Popen([sys.executable, "-c", code, "sim", "--num-prompts", "2000000", "--request-rate", "inf",
                             "--input-len", "16", "--output-len", "4", "--per-request", str(keep)],
                            cwd=tmp_path, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".keep.csv.*")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, proc.stderr.read()[-800:]
    _sighup(proc)
    code, _, err = finish(proc)
    assert code == EXIT_HUNG_UP and said(err) == ["batchtui: hung up"], err[-800:]
    assert keep.read_text() == "mine\n" and sorted(p.name for p in tmp_path.iterdir()) == ["keep.csv"]
