"""Static batching: a batch is formed when the engine is idle and runs until its slowest member
ends. A member that finished early keeps its seat as padding: it still runs a decode token
(compute and KV reads are paid) and produces nothing. Arrivals wait for the whole batch.

Sequential serving is the same policy with a batch of one.
"""

from __future__ import annotations

from ..request import FINISHED, RUNNING, Request
from .base import Scheduler, SchedulerOutput, UpdateResult, is_decode
from .queues import make_queue


class StaticScheduler(Scheduler):
    name = "static"

    def __init__(self, config, pool, lazy_queue: bool = False) -> None:
        super().__init__(config, pool)
        self.waiting = make_queue("fcfs", lazy=lazy_queue)  # first come, first served
        self.batch: list[Request] = []  # members, finished ones included (they are padding)
        self.running: list[Request] = []  # members not finished

    @property
    def batch_size(self) -> int:
        return self.config.max_batch_size

    def add_request(self, request) -> None:
        self.waiting.add_request(request)

    def extend_run(self, run, accepted: bool) -> None:
        run.extend(accepted)
        self.waiting.extended(run, accepted)

    @property
    def num_waiting(self) -> int:
        return len(self.waiting)

    def has_work(self) -> bool:
        return bool(self.batch) or bool(self.waiting)

    def seated(self) -> list[Request]:
        return list(self.batch)  # finished members keep their seats as padding

    def ready_to_form(self) -> tuple[bool, float | None]:
        """Static batching forms a batch as soon as the engine is idle."""
        return True, None

    def _form_batch(self, out: SchedulerOutput) -> None:
        # Static servers reserve each member's full length up front, so a batch never preempts.
        while self.waiting and len(self.batch) < self.batch_size:
            req = self.waiting.peek_request()
            peak = min(req.prompt_len + req.output_len - 1, self.config.max_model_len - 1)
            if not self.pool.try_allocate(req.request_id, peak):
                out.binding_limit = "kv_cache"
                break
            self.waiting.pop_request()
            req.status = RUNNING
            self.batch.append(req)
            self.running.append(req)
            out.admitted.append(req)

    def schedule(self) -> SchedulerOutput:
        out = SchedulerOutput()
        if not self.batch:
            ready, wake_at = self.ready_to_form()
            if not ready:
                out.wake_at = wake_at
                return out
            self._form_batch(out)
            if not self.batch:
                return out
            longest = max(r.prompt_len for r in self.batch)
            for req in self.batch:
                n = req.num_tokens - req.num_computed_tokens
                out.scheduled.append((req, n, req.num_computed_tokens, is_decode(req, n, req.num_computed_tokens)))
            out.padded_prefill_tokens = sum(longest - r.prompt_len for r in self.batch)
        else:
            for req in self.batch:
                if req.status == FINISHED:
                    out.padded += 1
                    out.padded_context += req.num_computed_tokens
                else:
                    out.scheduled.append((req, 1, req.num_computed_tokens, is_decode(req, 1, req.num_computed_tokens)))
        if self.waiting and out.binding_limit == "none":
            # Arrivals wait for the whole batch: the seats are what holds them back.
            out.binding_limit = "max_num_seqs"
        return out

    def update_from_output(self, output: SchedulerOutput, start: float = 0.0,
                           end: float = 0.0) -> UpdateResult:
        result = self._sample(output, end)
        if result.finished:
            self._retire(result.finished)
        result.num_running = len(self.running)
        result.num_waiting = self.num_waiting
        return result

    def _retire(self, finished: list[Request]) -> None:
        for req in finished:
            req.status = FINISHED
        done = set(map(id, finished))
        self.running = [r for r in self.running if id(r) not in done]
        if all(r.status == FINISHED for r in self.batch):
            for req in self.batch:
                self.pool.free_request(req.request_id)
            self.batch = []


class SequentialScheduler(StaticScheduler):
    """One request at a time: prefill, decode to the end, then the next."""

    name = "sequential"

    @property
    def batch_size(self) -> int:
        return 1
