"""A scenario's traffic sent to a real server on the wall clock.

The requests are the ones the simulator serves for the same scenario: `sim.arrivals.Arrivals`
plans them (the same arrival times, lengths and shared prefixes for the same seed), and it is also
the client: under `max_concurrency` it holds a request whose time has come until one in flight
finishes (vllm bench serve's semaphore; the wait is the request's client queue time), and a
conversation's next turn is sent its think time after the answer ends, with the answer the server
gave. Its times are the served GPU's seconds: at a server's time scale X (`batchtui serve
--time-scale`), a request planned at t is sent t / X real seconds after the start.

`send_traffic` returns when every request has finished, or when `stop` is set (Ctrl-C): then the
requests in flight are cancelled (their connections closed, so the server aborts them) and only
the finished ones are returned.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..crash import short_error
from .client import Outcome


@dataclass
class Sent:
    """One request as sent: its plan, when it left (seconds from the start, in the served GPU's
    time), and what came back (None while in flight)."""

    spec: object
    """The planned request (`sim.workload.RequestSpec`), its prompt_len and output_len planned."""
    sent: float
    outcome: Outcome | None = None

    @property
    def late(self) -> float:
        """How long after its time (planned, or when a slot freed up) the client sent it."""
        return max(0.0, self.sent - self.spec.arrival_time)

    @property
    def queue_time(self) -> float:
        """How long it waited at the client for a free slot under the cap (vLLM's
        client_queue_time: the client's own lateness in sending is not in it)."""
        return self.spec.client_queue_time


@dataclass
class Traffic:
    """What `send_traffic` saw, in the order the requests were sent."""

    sent: list[Sent]
    duration: float
    """Real seconds from the start to the last answer (or to the stop)."""
    start: float
    """perf_counter at the start."""
    stopped: bool = False
    """Stopped before the end (`stop` was set): `unfinished` requests were in flight."""
    unfinished: int = 0

    @property
    def finished(self) -> list[Sent]:
        return [s for s in self.sent if s.outcome is not None]


async def send_traffic(client, arrivals, prompts, *, time_scale: float = 1.0, stop: asyncio.Event | None = None,
                       on_finish: Callable[[int], None] | None = None, request_id_prefix: str = "",
                       on_answer: Callable[[Sent], None] | None = None, keep_sent: bool = True) -> Traffic:
    """Send `arrivals`' requests (a `sim.arrivals.Arrivals`) with `client`, their prompts made by
    `prompts` (`loadgen.prompts.Prompts`); `on_finish(n)` after each answer (n finished so far),
    `on_answer(sent)` with it. `keep_sent` False: the requests are not kept in the `Traffic`
    returned (an endless run keeps what it needs through `on_answer`, in bounded memory)."""
    loop = asyncio.get_running_loop()
    stop = stop or asyncio.Event()
    chat = client.endpoint.api == "chat"
    wake = asyncio.Event()
    in_flight: dict[asyncio.Task, Sent] = {}
    sent: list[Sent] = []
    finished = 0
    start = time.perf_counter()

    def now() -> float:
        return (time.perf_counter() - start) * time_scale

    def done(task: asyncio.Task) -> None:
        nonlocal finished
        record = in_flight.pop(task, None)
        if record is None or task.cancelled():
            return
        error = task.exception()
        out = task.result() if error is None else Outcome(error=short_error(error, limit=300))
        record.outcome = out
        finished += 1
        spec = record.spec
        if out.success:
            prompts.answered(spec, out.generated_text)
        arrivals.on_done(spec.request_id, now(), served=out.success, answered=out.output_tokens or None)
        if on_finish is not None:
            on_finish(finished)
        if on_answer is not None:
            on_answer(record)
        wake.set()

    stopper = loop.create_task(stop.wait())
    try:
        while not stop.is_set():
            t = now()
            while (spec := arrivals.pop_due(t)) is not None:
                record = Sent(spec, t)
                if keep_sent:
                    sent.append(record)
                task = loop.create_task(client.send(prompts.prompt(spec, chat), spec.output_len,
                                                    request_id_prefix + spec.request_id if request_id_prefix else None))
                in_flight[task] = record
                task.add_done_callback(done)
            if not in_flight and arrivals.exhausted:
                break
            wait = (arrivals.next_at - now()) / time_scale if math.isfinite(arrivals.next_at) else None
            wake.clear()
            if wait is None or wait > 0:
                waiter = loop.create_task(wake.wait())
                await asyncio.wait({waiter, stopper}, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
            else:
                await asyncio.sleep(0)  # let answers that came in be read before sending more
    finally:
        stopper.cancel()
        unfinished = len(in_flight)
        for task in list(in_flight):
            task.cancel()
        if in_flight:
            await asyncio.gather(*in_flight, return_exceptions=True)
        in_flight.clear()
    duration = time.perf_counter() - start
    return Traffic(sent, duration, start, stopped=stop.is_set(), unfinished=unfinished)
