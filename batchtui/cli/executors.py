"""Where `batchtui search` runs its points: the standard process pool (the default), or Ray (an
optional extra, `pip install "batchtui[ray]"`; RAY_ADDRESS picks a cluster). Both hand results
back as they finish with the index of their task; a result depends only on its task, so which
executor ran it, and how many workers, changes nothing but the time. `forkserver_pool` is also
how the other commands make their process pools."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence

from .exits import UserError


class InProcess:
    """One job: the tasks run here, one after another (what --jobs 1 means)."""

    running = 0

    def imap_unordered(self, func: Callable, items: Sequence) -> Iterator[tuple[int, object]]:
        for i, item in enumerate(items):
            self.running = 1
            result = func(item)
            self.running = 0
            yield i, result

    def stop(self) -> None:
        pass

    def close(self) -> None:
        pass


def _quiet_sigint() -> None:
    """Ctrl-C reaches the workers too (the terminal signals the whole process group): a worker
    ends at once and without a traceback; the search keeps what finished."""
    import signal

    signal.signal(signal.SIGINT, lambda *_: os._exit(130))


FORKSERVER_PRELOAD = ("numpy", "sim.engine", "sim.curves", "sim.rate_plan", "sim.search", "sim.fit")
"""What the fork server imports once, so a worker forked from it starts in milliseconds with the
simulator loaded and holds nothing of the parent but what it is handed. A process has one fork
server, started by its first pool with the list set then: every pool gives this same list (and
the module of the function it runs)."""


def forkserver_pool(jobs: int, module: str, initializer: Callable | None = None):
    """A `concurrent.futures.ProcessPoolExecutor` of `jobs` processes forked from the fork server
    (`FORKSERVER_PRELOAD`, and `module`, where the jobs' function lives): the one way the
    commands make their process pools (search, plan's and sweep's runs, calibrate's fit)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([*FORKSERVER_PRELOAD, module])
    return ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=initializer)


class ProcessPool:
    """A pool of `jobs` processes forked from a fork server that has imported the simulator once
    (as `batchtui.cli.runner.map_jobs` runs plan's seeds)."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self.pool = None
        self.running = 0

    def _start(self, func: Callable) -> None:
        self.pool = forkserver_pool(self.jobs, func.__module__, initializer=_quiet_sigint)

    def imap_unordered(self, func: Callable, items: Sequence) -> Iterator[tuple[int, object]]:
        from concurrent.futures import FIRST_COMPLETED, wait

        if not items:
            return
        if self.pool is None:
            self._start(func)
        futures = {self.pool.submit(func, item): i for i, item in enumerate(items)}
        pending = set(futures)
        while pending:
            self.running = min(self.jobs, len(pending))
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            self.running = min(self.jobs, len(pending))
            for f in sorted(finished, key=futures.get):
                yield futures[f], f.result()

    def stop(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = None

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True)
            self.pool = None


class RayTasks:
    """Each point a Ray task on the cluster RAY_ADDRESS names, the Ray this process has already
    started, or a local Ray of `jobs` CPUs; at most two tasks a CPU in flight."""

    def __init__(self, jobs: int) -> None:
        try:
            import ray
        except ImportError:
            raise UserError('argument --executor: ray is not installed; pip install "batchtui[ray]"') from None
        self.ray = ray
        self.started_here = False
        if not ray.is_initialized():
            address = os.environ.get("RAY_ADDRESS") or None
            ray.init(address=address, num_cpus=None if address else jobs, include_dashboard=False,
                     log_to_driver=False, configure_logging=False)
            self.started_here = True
        self.slots = max(1, int(ray.cluster_resources().get("CPU", jobs)))
        self.running = 0
        self.inflight: list = []

    def imap_unordered(self, func: Callable, items: Sequence) -> Iterator[tuple[int, object]]:
        ray = self.ray
        remote = ray.remote(num_cpus=1)(func)
        index = {}
        queue = list(enumerate(items))
        queue.reverse()
        while queue or index:
            while queue and len(index) < 2 * self.slots:
                i, item = queue.pop()
                index[remote.remote(item)] = i
            self.running = min(self.slots, len(index))
            self.inflight = list(index)
            ready, _ = ray.wait(list(index), num_returns=1)
            for ref in ready:
                i = index.pop(ref)
                yield i, ray.get(ref)
        self.running = 0

    def stop(self) -> None:
        for ref in self.inflight:
            try:
                self.ray.cancel(ref, force=True)
            except Exception:  # already finished or gone
                pass
        self.close()

    def close(self) -> None:
        if self.started_here and self.ray.is_initialized():
            self.ray.shutdown()
            self.started_here = False


EXECUTORS = {"process": ProcessPool, "ray": RayTasks}


def make_executor(name: str, jobs: int):
    if name == "process" and jobs <= 1:
        return InProcess()
    return EXECUTORS[name](jobs)
