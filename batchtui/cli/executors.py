"""Where `batchtui search` runs its points: worker processes (`workers.Workers`, the default;
in this process with --jobs 1), or Ray (an optional extra, `pip install "batchtui[ray]"`;
RAY_ADDRESS picks a cluster). Both are context managers that hand results back as they finish
with the index of their task (`imap_unordered`), say how many run (`running`), and end their
work on leaving (at once when leaving on an exception: Ctrl-C, SIGTERM, a dead worker); a result
depends only on its task, so which executor ran it, and how many workers, changes nothing but
the time."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence

from .exits import UserError
from .workers import Workers


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
            handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
            ray.init(address=address, num_cpus=None if address else jobs, include_dashboard=False,
                     log_to_driver=False, configure_logging=False)
            if threading.current_thread() is threading.main_thread():
                for sig, handler in handlers.items():  # Ray's own abort the command: ours stop it
                    if handler is not None:
                        signal.signal(sig, handler)
            self.started_here = True
        self.slots = max(1, int(ray.cluster_resources().get("CPU", jobs)))
        self.running = 0
        self.inflight: list = []

    def __enter__(self) -> "RayTasks":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.stop()
        else:
            self.close()

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


EXECUTORS = {"process": Workers, "ray": RayTasks}


def make_executor(name: str, jobs: int):
    return EXECUTORS[name](jobs)
