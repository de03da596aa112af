"""Dynamic batching: wait up to `max_queue_delay` for `max_batch_size` requests, then run them as
one batch. Right for fixed-cost requests (embedders, classifiers): the whole batch is one forward
pass. On generation it is static batching with a wait in front.
"""

from __future__ import annotations

from .base import SchedulerOutput, UpdateResult
from .static import StaticScheduler
from ..request import FINISHED, RUNNING


class DynamicScheduler(StaticScheduler):
    name = "dynamic"

    def __init__(self, config, pool, encoder: bool = False, lazy_queue: bool = False) -> None:
        super().__init__(config, pool, lazy_queue)
        self.encoder = encoder

    def ready_to_form(self) -> tuple[bool, float | None]:
        if not self.waiting:
            return False, None
        if len(self.waiting) >= self.batch_size:
            return True, None
        deadline = self.waiting.peek_request().arrival_time + self.config.max_queue_delay
        if self.now >= deadline - 1e-12:
            return True, None
        return False, deadline

    def schedule(self) -> SchedulerOutput:
        if not self.encoder:
            return super().schedule()
        out = SchedulerOutput()
        ready, wake_at = self.ready_to_form()
        if not ready:
            out.wake_at = wake_at
            return out
        while self.waiting and len(self.batch) < self.batch_size:
            req = self.waiting.pop_request()
            req.status = RUNNING
            self.batch.append(req)
            self.running.append(req)
            out.admitted.append(req)
            out.scheduled.append((req, req.prompt_len, 0, False))
        out.encoder_batch = len(self.batch)
        out.encoder_input_len = max(r.prompt_len for r in self.batch)
        if self.waiting:
            out.binding_limit = "max_num_seqs"
        return out

    def tokens_out(self, output: SchedulerOutput) -> int:
        # (An encoder pass answers every input of its batch.)
        return len(output.scheduled) if self.encoder else super().tokens_out(output)

    def update_from_output(self, output: SchedulerOutput, start: float = 0.0,
                           end: float = 0.0) -> UpdateResult:
        if not self.encoder:
            return super().update_from_output(output, start, end)
        # One pass serves every input of the batch completely (its embedding is its output).
        result = UpdateResult()
        for req, n, _, _ in output.scheduled:
            req.num_computed_tokens += n
            req.num_output_tokens = 1
            req.finish_reason = "stop"
            req.status = FINISHED
            req.first_token_time = req.last_token_time = end
            result.first_tokens.append(req)
            output.sampling.append(req)
            result.finished.append(req)
        result.num_emitted = len(output.sampling)
        self.batch = []
        self.running = []
        result.num_waiting = self.num_waiting
        return result
