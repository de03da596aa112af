"""What every batching policy hands the engine, and what it gets back."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..kv import BlockPool
from ..request import FINISHED, Request


@dataclass(slots=True)
class SchedulerOutput:
    """One iteration's plan: who runs, with how many tokens, and why no more ran."""

    scheduled: list[tuple[Request, int]] = field(default_factory=list)  # running first, then admitted
    admitted: list[Request] = field(default_factory=list)
    preempted: list[Request] = field(default_factory=list)
    binding_limit: str = "none"
    padded: int = 0  # seats running a token that nobody will read (static batching)
    padded_context: int = 0  # KV tokens those padded seats still read
    padded_prefill_tokens: int = 0  # prompt padding when a batch prefills to its longest prompt
    encoder_batch: int = 0  # dynamic batching of an encoder: inputs in this forward pass
    encoder_input_len: int = 0  # tokens per input in that pass (padded to the longest)
    wake_at: float | None = None  # nothing to run until this time (dynamic batching's wait)

    @property
    def num_scheduled_tokens(self) -> int:
        return sum(n for _, n in self.scheduled)


@dataclass(slots=True)
class UpdateResult:
    emitted: list[Request] = field(default_factory=list)
    first_tokens: list[Request] = field(default_factory=list)
    finished: list[Request] = field(default_factory=list)


class Scheduler:
    """Shared plumbing: the block pool, the running list and the bookkeeping after a forward pass.

    Subclasses decide who runs (`schedule`)."""

    name = "base"

    def __init__(self, config, pool: BlockPool) -> None:
        self.config = config
        self.pool = pool
        self.running: list[Request] = []

    # -- queue interface, overridden where the order differs
    def add_request(self, request: Request) -> None:
        raise NotImplementedError

    def waiting_requests(self) -> list[Request]:
        raise NotImplementedError

    @property
    def num_waiting(self) -> int:
        return len(self.waiting_requests())

    def has_work(self) -> bool:
        return bool(self.running) or self.num_waiting > 0

    def schedule(self) -> SchedulerOutput:
        raise NotImplementedError

    def set_config(self, config) -> None:
        """Take new dials; they apply from the next schedule()."""
        self.config = config

    def update_from_output(self, output: SchedulerOutput) -> UpdateResult:
        """Advance computed counts, sample a token for every request whose tokens are all
        computed, and retire those that reached their length."""
        result = self._sample(output)
        if result.finished:
            self._retire(result.finished)
        return result

    def _retire(self, finished: list[Request]) -> None:
        """Finished requests leave the running list; their blocks return to the pool."""
        done = set(map(id, finished))
        self.running = [r for r in self.running if id(r) not in done]
        for req in finished:
            req.status = FINISHED
            self.pool.free_request(req.request_id)

    def _sample(self, output: SchedulerOutput) -> UpdateResult:
        result = UpdateResult()
        max_model_len = self.config.max_model_len
        emitted = result.emitted
        for req, n in output.scheduled:
            computed = req.num_computed_tokens + n
            req.num_computed_tokens = computed
            outputs = req.num_output_tokens
            if computed >= req.prompt_len + outputs:  # all of num_tokens computed
                if outputs == 0:
                    result.first_tokens.append(req)
                outputs += 1
                req.num_output_tokens = outputs
                emitted.append(req)
                if outputs >= req.output_len:
                    req.finish_reason = "stop"
                elif req.prompt_len + outputs >= max_model_len:
                    req.finish_reason = "length"
                else:
                    continue
                result.finished.append(req)
        return result
