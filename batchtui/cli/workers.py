"""Worker processes: `Workers` is the one way a command runs work in other processes (search's
points, sweep's and plan's runs, calibrate's fit, compare's runs).

A `Workers` context owns its processes from start to end:

- **Start.** Up to `jobs` processes, started as work arrives and forked from the process's one
  fork server, which imports `PRELOAD` (and the module of the function run) once, so a worker
  starts in milliseconds with the simulator loaded and holds nothing of the command but what it
  is handed. Each says it is ready before it is given work: a process that cannot be started,
  or that ends before it is ready, is a `WorkerError` saying why ("could not start worker
  processes: ..."), never a silent success.
- **Signals.** A worker ignores Ctrl-C and a hang-up: a terminal sends SIGINT, and SIGHUP when
  it goes away, to the whole process group, and the command handles each (one line, what
  finished kept) and ends the workers. SIGTERM and SIGHUP reach the command as
  `exits.Terminated` (`exits.stop_signals`), which ends them the same way.
- **A dead worker.** A worker that ends, running a task or waiting for one (the kernel's
  out-of-memory killer, a kill), is a `WorkerError` naming the signal, raised as soon as it is
  seen: at once while the command waits for answers, else when it next hands out work.
- **Shutdown.** Leaving the context ends every worker: told to stop when all went well, killed
  at once otherwise (Ctrl-C, SIGTERM, an error). A worker whose answer is no longer wanted (the
  loop over the answers was left early) is killed too.
- **Death with the command.** Each worker watches its parent's sentinel (`multiprocessing`'s
  pipe whose only writer is the command) and ends the moment the command ends, however it ends
  (SIGKILL included); the fork server and multiprocessing's resource tracker then see their
  last client gone and end too. Nothing outlives the command or holds its standard output open.

With `jobs` 1 (or a single task before any worker started) the work runs in this process.
Results come back as (index, result) in the order they finish (`imap_unordered`) or as a list in
the order given (`map`); a result depends only on its task, so the number of workers changes
nothing but the time.
"""

from __future__ import annotations

import os
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence

from .exits import WorkerError

PRELOAD = ("numpy", "sim.engine", "sim.curves", "sim.rate_plan", "sim.search", "sim.fit")
"""What the fork server imports once (with this module and the module of the function run). A
process has one fork server, started by its first pool with the list given then."""

STOP_WAIT_S = 2.0
"""How long a worker told to stop may take before it is killed."""

_READY = "ready"
_DONE = "done"
_FAILED = "failed"


class _Worker:
    """One worker process and the command's end of its pipe."""

    def __init__(self, process, conn) -> None:
        self.process = process
        self.conn = conn
        self.ready = False
        self.task: int | None = None  # the index of the task it is running


class Workers:
    """Up to `jobs` worker processes (see the module's docstring); a context manager."""

    def __init__(self, jobs: int) -> None:
        self.jobs = max(1, int(jobs))
        self.running = 0
        """Tasks running now (a progress display reads it)."""
        self._workers: list[_Worker] = []

    def __enter__(self) -> "Workers":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(kill=exc_type is not None)

    # -- running work

    def map(self, func: Callable, items: Iterable, each: Callable[[object], None] | None = None) -> list:
        """[func(item) for item in items], in the order given; `each(result)` is called as each
        comes back (a progress bar's step)."""
        items = list(items)
        out: list = [None] * len(items)
        for i, result in self.imap_unordered(func, items):
            out[i] = result
            if each is not None:
                each(result)
        return out

    def imap_unordered(self, func: Callable, items: Sequence) -> Iterator[tuple[int, object]]:
        """(index, func(item)) for each item, as each finishes. `func` is a module's top-level
        function (a worker imports it by name). A task's exception is raised here, with the
        worker's traceback as its cause."""
        items = list(items)
        if not items:
            return
        if self.jobs == 1 or (not self._workers and len(items) == 1):
            for i, item in enumerate(items):
                self.running = 1
                try:
                    result = func(item)
                finally:
                    self.running = 0
                yield i, result
            return
        self._start(min(self.jobs, len(items)), func.__module__)
        todo = deque(enumerate(items))
        try:
            while todo or any(w.task is not None for w in self._workers):
                yield from self._round(func, todo)
        finally:
            self.running = 0
            # A task still running is no longer wanted (the caller stopped early, or a task
            # failed): its worker is ended, so no stale answer reaches the next call.
            for w in [w for w in self._workers if w.task is not None]:
                self._end(w)

    def chains(self, func: Callable, chains: Sequence[Callable[[Callable], object]]) -> list:
        """[chain(run) for chain in chains], the chains at once. A chain makes its work one item
        after another, each `run(item)` returning `func(item)` from a worker, the next item
        depending on the answers before it (plan's search of one seed: each rate from the runs
        before). Each chain runs in a thread of this process and waits only for its own items;
        the workers take whichever chain's item is ready, so three chains keep two workers busy
        to the end of the last instead of leaving one idle while it runs alone. `run.all(items)`
        hands out several independent items at once and returns their answers in order (the
        workers may take them side by side). A chain's answers depend only on its items: the
        results are those of the chains run one after another. A chain's exception is raised
        once every chain has ended; a failed task's, or the pool's (a dead worker, Ctrl-C), at
        once, the chains waiting for answers ended."""
        import queue
        import threading

        # (chain, [items]) as a chain asks for answers, or (chain, _CHAIN_END) as it ends
        wanted: queue.Queue = queue.Queue()
        answers: dict[int, queue.Queue] = {}  # chain -> where its answers come, while it runs
        results: list = [None] * len(chains)
        errors: list = [None] * len(chains)
        unstarted: queue.Queue = queue.Queue()  # (chain, its function) for the threads to take
        for i, c in enumerate(chains):
            unstarted.put((i, c))
        stopping = threading.Event()  # the pool failed: no chain starts

        def take() -> None:  # a thread's life: chains one after another, until none is left
            while not stopping.is_set():
                try:
                    i, chain = unstarted.get_nowait()
                except queue.Empty:
                    return
                body(i, chain)

        def body(i: int, chain: Callable) -> None:
            answers[i] = box = queue.Queue(maxsize=1)
            if stopping.is_set():  # (checked once its box is seen: one seen before the failure is answered "stop")
                del answers[i]
                return

            def run_all(items) -> list:
                items = list(items)
                if not items:
                    return []
                wanted.put((i, items))
                ok, values = box.get()
                if not ok:
                    raise _ChainStopped
                return values

            def run(item):
                return run_all([item])[0]

            run.all = run_all
            try:
                results[i] = chain(run)
            except BaseException as exc:  # (raised below, once every chain has ended)
                errors[i] = exc
            finally:
                wanted.put((i, _CHAIN_END))

        # A chain's thread waits for its worker most of the time; CHAIN_THREADS_PER_JOB chains a
        # worker keep it busy while each works out its next item, and more threads only cost
        # memory (one a chain, --seeds 1000000 could not start them). A chain starts as another
        # ends: its answers are the same whenever it runs.
        threads = [threading.Thread(target=take, name="batchtui-chain", daemon=True)
                   for _ in range(min(len(chains), CHAIN_THREADS_PER_JOB * self.jobs))]
        for t in threads:
            t.start()
        waiting = len(chains) - len(threads)  # chains no thread has taken yet
        live, computing = len(chains), len(threads)  # chains not ended; those started, neither queued nor running
        ready: deque = deque()  # ((chain, its item's place), item)
        got: dict[int, list] = {}  # chain -> the answers to its items so far
        left: dict[int, int] = {}  # chain -> its items not yet answered
        try:
            while live:
                while computing:  # every live chain is then queued or running
                    i, items = _next(wanted)
                    computing -= 1
                    if items is _CHAIN_END:
                        live -= 1
                        del answers[i]
                        if waiting:  # its thread takes the next chain
                            waiting -= 1
                            computing += 1
                    else:
                        got[i], left[i] = [None] * len(items), len(items)
                        ready.extend(((i, k), item) for k, item in enumerate(items))
                if not live:
                    break
                for (i, k), answer in self._run_ready(func, ready, max(len(chains), len(ready))):
                    got[i][k] = answer
                    left[i] -= 1
                    if not left[i]:
                        answers[i].put((True, got.pop(i)))
                        computing += 1
        except BaseException:
            for w in [w for w in self._workers if w.task is not None]:
                self._end(w)  # (an answer no longer wanted)
            stopping.set()  # (no chain starts after a failure)
            for box in list(answers.values()):
                if box.empty():
                    box.put((False, None))  # a chain waiting for one ends (daemon threads: none is awaited)
            raise
        finally:
            self.running = 0
        for t in threads:
            t.join()
        for exc in errors:
            if exc is not None and not isinstance(exc, _ChainStopped):
                raise exc
        return results

    def _run_ready(self, func: Callable, ready: deque, most: int) -> Iterator[tuple[int, object]]:
        """Hand the ready items to free workers (run here with `jobs` 1) and give back the
        answers that come before the next free worker (chain, answer)."""
        if self.jobs == 1:
            while ready:
                i, item = ready.popleft()
                self.running = 1
                yield i, func(item)
            return
        self._start(min(self.jobs, most), func.__module__)
        while ready or any(w.task is not None for w in self._workers):
            answered = False
            for answer in self._round(func, ready):
                answered = True
                yield answer
            if answered:
                return

    def _round(self, func: Callable, todo: deque) -> Iterator[tuple[int, object]]:
        """One round of the pool: the free workers handed items of `todo` ((index, item) pairs),
        then the answers that come next as (index, answer); a worker saying it is ready is noted,
        a task's exception raised with the worker's traceback as its cause."""
        for w in self._workers:
            if w.ready and w.task is None and todo:
                i, item = todo.popleft()
                self._send(w, (i, func, item))
        self.running = sum(w.task is not None for w in self._workers)
        for w in self._answering():
            message = self._receive(w)
            if message[0] == _READY:
                w.ready = True
                continue
            kind, i, payload = message[:3]
            w.task = None
            if kind == _FAILED:
                payload.__cause__ = _RemoteTraceback(message[3])
                raise payload
            yield i, payload

    # -- the processes

    def _start(self, count: int, module: str) -> None:
        import multiprocessing
        import warnings

        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload([*PRELOAD, __name__, module])
        while len(self._workers) < count:
            ours, theirs = ctx.Pipe()
            process = ctx.Process(target=run_worker, args=(theirs,), name="batchtui-worker", daemon=True)
            try:
                with warnings.catch_warnings():  # its own words for a failure said below in one line
                    warnings.filterwarnings("ignore", "resource_tracker", UserWarning)
                    process.start()
            except Exception as exc:  # the interpreter cannot be run, the fork server died, no memory
                ours.close()
                raise WorkerError(f"could not start worker processes: {_reason(exc)}; --jobs 1 runs "
                                  "in this process") from None
            finally:
                theirs.close()  # the worker's end is the worker's alone: its death reads as EOF here
            self._workers.append(_Worker(process, ours))

    def _answering(self) -> list[_Worker]:
        """The workers with something to read, waiting for one: an answer, a worker saying it is
        ready, or the end of a worker's pipe (an idle one's too: a worker killed while it waited
        for work is seen at once, not when it is next handed a task)."""
        from multiprocessing.connection import wait

        waiting = {w.conn: w for w in self._workers}
        return [waiting[c] for c in wait(list(waiting))]

    def _send(self, w: _Worker, task: tuple) -> None:
        w.task = task[0]
        try:
            w.conn.send(task)
        except OSError:  # it died: its end reads as EOF, and _receive says why
            pass

    def _receive(self, w: _Worker) -> tuple:
        try:
            return w.conn.recv()
        except (EOFError, OSError):
            pass
        started = w.ready
        self._end(w)
        code = w.process.exitcode
        if not started:
            raise WorkerError(f"could not start worker processes: a worker {_ending(code)} as it started; "
                              "--jobs 1 runs in this process")
        raise WorkerError(f"a worker process {_ending(code)}"
                          + (" (the kernel's out-of-memory killer sends SIGKILL: fewer --jobs, or a smaller "
                             "run?)" if code == -signal.SIGKILL else ""))

    def _end(self, w: _Worker) -> None:
        """Kill a worker now and forget it."""
        self._workers.remove(w)
        w.process.kill()
        w.process.join()
        w.conn.close()

    def close(self, kill: bool = False) -> None:
        """End every worker: told to stop and given STOP_WAIT_S, or (`kill`) killed at once."""
        import time

        workers, self._workers = self._workers, []
        for w in workers:
            if kill or w.task is not None:
                w.process.kill()
            else:
                try:
                    w.conn.send(None)
                except OSError:
                    w.process.kill()
        deadline = time.monotonic() + STOP_WAIT_S
        for w in workers:
            w.process.join(max(0.0, deadline - time.monotonic()))
            if w.process.exitcode is None:
                w.process.kill()
                w.process.join()
            w.conn.close()

    def stop(self) -> None:
        """Kill every worker now (an executor's stop, as search calls it)."""
        self.close(kill=True)


def _reason(exc: BaseException) -> str:
    """Why a worker could not be started, in a few words."""
    from multiprocessing import spawn

    exe = os.fsdecode(spawn.get_executable())
    if not os.access(exe, os.X_OK):  # what the fork server and every worker run
        return f"cannot run the interpreter {exe}"
    if isinstance(exc, (EOFError, ConnectionError)):  # its socket or pipe had nobody at the other end
        return f"the fork server ended as it started ({getattr(exc, 'strerror', None) or 'no answer'})"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror + (f": {exc.filename}" if exc.filename else "")
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _ending(code: int | None) -> str:
    if code is None:
        return "ended"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


_CHAIN_END = object()  # a chain's last word (`Workers.chains`)
CHAIN_THREADS_PER_JOB = 2  # chains running at once per worker (`Workers.chains`): one waits while the other's item runs


class _ChainStopped(Exception):
    """A chain's wait for an answer that will not come (the pool failed)."""


def _next(wanted):
    """The next word from the chains, waking each second (so Ctrl-C and SIGTERM are seen)."""
    import queue

    while True:
        try:
            return wanted.get(timeout=1.0)
        except queue.Empty:
            continue


class _RemoteTraceback(Exception):
    """A worker's traceback, shown as the cause of the exception it raised."""

    def __init__(self, text: str) -> None:
        super().__init__(text)

    def __str__(self) -> str:
        return "\n\n" + str(self.args[0])


# -- in the worker ------------------------------------------------------------------------------------

def run_worker(conn) -> None:
    """A worker's life: say it is ready, then run each task it is handed and send back its
    answer, until told to stop (None) or its command is gone."""
    import multiprocessing
    import threading

    for sig in (signal.SIGINT, signal.SIGHUP):  # the command handles Ctrl-C and a hang-up (each sent to
        signal.signal(sig, signal.SIG_IGN)       # the whole group) and ends us: said once, not by each
    from batchtui import gc_policy

    gc_policy.settle()  # (what the fork server imported is frozen: full collections skip it)
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_end_with, args=(parent.sentinel,), daemon=True,
                         name="batchtui-lifeline").start()
    conn.send((_READY,))
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):  # the command is gone
            return
        if task is None:
            return
        index, func, item = task
        try:
            answer = (_DONE, index, func(item))
        except Exception as exc:
            answer = _failure(index, exc)
        try:
            conn.send(answer)
        except (EOFError, OSError):
            return
        except Exception as exc:  # the result does not pickle
            conn.send(_failure(index, exc))


def _failure(index: int, exc: Exception) -> tuple:
    """A task's exception as it can cross to the command: itself when it pickles back the same,
    else a RuntimeError saying what it was."""
    import pickle
    import traceback

    text = "".join(traceback.format_exception(exc))
    try:
        back = pickle.loads(pickle.dumps(exc))
        if type(back) is not type(exc) or str(back) != str(exc):
            raise TypeError("changed on the way")
    except Exception:
        exc = RuntimeError(f"{type(exc).__name__}: {exc}")
    return (_FAILED, index, exc, text)


def _end_with(sentinel) -> None:
    """End this worker the moment its command ends (the sentinel reads as EOF then)."""
    from multiprocessing.connection import wait

    wait([sentinel])
    os._exit(1)
