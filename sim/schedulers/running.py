"""The continuous scheduler's running requests: in admission order, most of them held compactly.

Most running requests are decoding: every iteration each gets one token and nothing else about
it changes but counts that grow by one. Such a request is a *decoder* here and its Request
fields are not touched iteration by iteration; the set keeps what the iterations need in a form
whose cost does not grow with the number of decoders:

- a decoder is stored with the tick (iteration count of this set) at which its fields were
  exact; at tick G it has `outputs + (G - tick)` output tokens;
- the decode context of an iteration, summed over the decoders, is `S + B * G` (S sums
  `prompt + outputs - tick` over the B decoders);
- a decoder needs a new KV block on the ticks where its computed tokens reach a multiple of the
  block size: decoders are counted by that residue, so the blocks an iteration takes are one
  lookup (`BlockPool.take`), and each one's holding is settled when its fields are brought up
  to date;
- finishes are known in advance and kept in a calendar of ticks;
- a decoder's largest gap between tokens is read off a log of the largest iteration time from
  each tick on (a stack of decreasing maxima).

The others — prefilling, preempted and resumed, or decoders that missed a token — are held
*explicitly*: their fields are always exact. `sync()` brings every decoder's fields (and its
block holding) up to date in place, for a view or a report; `flush()` makes every request
explicit, for the scheduler's one-by-one walk when the running requests do not all fit.

With async scheduling (`asynchronous`) a batch is always in flight: every decoder's token of the
batch on the GPU is counted (a placeholder, its computed token and its block) before that batch
is processed, and the scheduler takes the next batch's blocks before the tick that processes the
one in flight. `flights` counts the batches in flight that hold the decoders' tokens (1 between
engine calls, 2 from schedule() to the update); a decoder whose last token is in flight is not
in the next batch (`coming_batch`). A decoder that stops being held compactly while its token is
in flight is listed in `left`, so that the update processes that token explicitly. A new request
joins when its first decode is scheduled, its first token still its prefill row's in the batch in
flight (`join_first`): it is `fresh` until that row is processed (`took_first_token`).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left
from collections.abc import Iterable, Iterator

from ..kv import BlockPool
from ..request import Request

GAP_LOG_LIMIT = 4096
"""Entries in the gap log before every decoder is brought up to date and the log cleared."""


NO_FINISH = 1 << 60
"""`RunningSet.next_finish` with no decoder: a tick no run reaches (an int, as ticks are)."""


class RunningSet:
    """Running requests in admission order (iterating yields them so); see the module doc."""

    def __init__(self, pool: BlockPool, max_model_len: int, asynchronous: bool = False) -> None:
        self.pool = pool
        self.asynchronous = asynchronous
        self.flights = 0  # async: batches in flight holding the decoders' tokens (see the module doc)
        # async: decoders that became explicit with a token in flight, as (request, computed
        # tokens before that batch), for the update that processes it (`take_left`)
        self.left: list[tuple[Request, int]] = []
        self.max_model_len = max_model_len
        self.block_size = pool.block_size
        self.members: dict[Request, int] = {}  # request -> admission number, in admission order
        self.explicit: dict[Request, None] = {}  # members held explicitly, in admission order
        self.decoders: dict[Request, int] = {}  # members held compactly -> tick their fields are exact at
        self.tick = 0
        self.last_token_time = 0.0  # when the decoders got their last token (end of the last tick)
        self.blocks_taken = False  # the decoders' blocks for the coming tick are taken
        self._admissions = 0
        self._clear_compact_state()

    def _clear_compact_state(self) -> None:
        # async: decoders joined with their first token in flight as another batch's row (`join_first`)
        self.fresh: set[Request] = set()
        self._crossing = [0] * self.block_size  # decoders by the tick residue at which they need a block
        self._context = 0  # S
        # tick -> decoders that finish with it, as (request, its tick minus its outputs when it
        # joined: the same for as long as it stays compact, and the finish tick follows from it)
        self._calendar: dict[int, list[tuple[Request, int]]] = {}
        self._finish_ticks: list[int] = []  # heap of the calendar's ticks
        self.next_finish = NO_FINISH  # no decoder finishes before this tick
        self._gap_ticks: list[int] = []
        self._gap_values: list[float] = []  # strictly decreasing: largest gap from that tick on

    # -- membership
    def __len__(self) -> int:
        return len(self.members)

    def __bool__(self) -> bool:
        return bool(self.members)

    def __iter__(self) -> Iterator[Request]:
        return iter(list(self.members))

    def __contains__(self, request: Request) -> bool:
        return request in self.members

    def admission_number(self, request: Request) -> int:
        return self.members[request]

    def first_decoder_number(self, exclude: Iterable[Request] = ()) -> float:
        """Admission number of the earliest admitted decoder not in `exclude` (inf if none)."""
        decoders = self.decoders
        skip = set(map(id, exclude))
        return next((n for r, n in self.members.items() if r in decoders and id(r) not in skip), math.inf)

    def last(self) -> Request:
        """The most recently admitted request."""
        return next(reversed(self.members))

    def admit(self, request: Request) -> None:
        self.members[request] = self._admissions
        self._admissions += 1
        self.explicit[request] = None

    def remove(self, request: Request) -> int:
        """Take out an explicitly held request (finished or preempted); returns its admission
        number."""
        del self.explicit[request]
        return self.members.pop(request)

    def discard(self, request: Request) -> None:
        """Take out a member however it is held (an aborted request); its block holding is
        brought up to date first, so that freeing it frees what it really holds."""
        if request in self.decoders:
            self.make_explicit(request)
        self.remove(request)

    # -- compact decoders
    def steady(self, request: Request, outputs: int | None = None) -> bool:
        """Whether a decoder can be held compactly (with `outputs` tokens; by default those it
        has): from then on it needs one block each time its tokens pass a multiple of the block
        size (`BlockPool.steady`: a sliding window's blocks are at their most). Until then it
        stays explicit."""
        if outputs is None:
            outputs = request.num_output_tokens
        return self.pool.steady(request.prompt_len + outputs - 1)

    def join(self, request: Request) -> None:
        """`request` has just sampled a token and decodes from now on, one token a tick: hold it
        compactly. Its fields are exact as of now."""
        tick = self.tick
        outputs = request.num_output_tokens
        prompt = request.prompt_len
        del self.explicit[request]
        if self.asynchronous and not self.decoders:
            self.flights = 1  # (its next token is in the batch in flight)
        self.decoders[request] = tick
        self._crossing[(tick - prompt - outputs + 1) % self.block_size] += 1
        self._context += prompt + outputs - tick
        left = request.output_len - outputs
        if left > self.max_model_len - prompt - outputs:
            left = self.max_model_len - prompt - outputs
        end = tick + left
        slot = self._calendar.get(end)
        if slot is None:
            self._calendar[end] = [(request, tick - outputs)]
            heapq.heappush(self._finish_ticks, end)
            if end < self.next_finish:
                self.next_finish = end
        elif (request, tick - outputs) not in slot:
            # (a request back in the compact form with the offset it left with, e.g. preempted
            # with a token in flight under async, has its entry here already: one, or it would
            # be counted twice as finishing)
            slot.append((request, tick - outputs))

    def join_first(self, request: Request) -> None:
        """Async: `request`'s whole prompt is in the batch in flight, sampling its first token, and
        it decodes from the batch scheduled next: hold it compactly now, as if it had joined once
        that token was processed (the same block, context and finish counts). Its first token is
        its row's in that batch, not a compact one: `took_first_token` when it is processed."""
        self.join(request)
        self.fresh.add(request)

    def took_first_token(self, request: Request) -> None:
        """A decoder joined with `join_first` has had its first token processed (this tick): its
        outputs are counted as of now, so that no gap before it counts as its own, and the token
        is no longer in flight (one placeholder fewer, as for an explicit request)."""
        self.fresh.discard(request)
        since = self.decoders[request]
        request.num_output_tokens = self._outputs(request, since)
        request.num_output_placeholders -= 1
        self.decoders[request] = self.tick

    def context(self, request: Request) -> int:
        """A decoder's context now, its token in flight not counted (what `sync()` would make its
        `num_computed_tokens - num_output_placeholders`), without bringing its fields up to date:
        a report lists every decoder's each iteration."""
        return request.prompt_len + self._outputs(request, self.decoders[request]) - 1

    def _outputs(self, request: Request, since: int) -> int:
        """A decoder's output tokens now (its fields exact as of tick `since`): one a tick."""
        return request.num_output_tokens + (self.tick - since)

    def _bring_up_to_date(self, request: Request, since: int) -> None:
        """Set a decoder's fields (exact as of tick `since`) to their values now."""
        tick = self.tick
        if self.asynchronous:
            self._bring_up_to_date_async(request, since)
            return
        if since != tick:
            outputs = self._outputs(request, since)
            request.num_output_tokens = outputs
            request.num_computed_tokens = request.prompt_len + outputs - 1
            request.last_token_time = self.last_token_time
            i = bisect_left(self._gap_ticks, since)
            if i < len(self._gap_ticks) and self._gap_values[i] > request.max_gap:
                request.max_gap = self._gap_values[i]
            self.decoders[request] = tick
        # Between schedule() and the update its token for the coming tick is counted too.
        computed = request.num_computed_tokens + self.blocks_taken
        self.pool.settle(request, computed)

    def _bring_up_to_date_async(self, request: Request, since: int) -> int:
        """`_bring_up_to_date` under async scheduling: its tokens in flight (placeholders, computed
        tokens, blocks) are counted too, and its blocks hashed from the tokens known when the last
        batch holding it was scheduled (one batch was in flight then). Returns the tokens in
        flight."""
        tick = self.tick
        outputs = request.num_output_tokens
        prompt = request.prompt_len
        left = request.output_len - outputs
        if left > self.max_model_len - prompt - outputs:
            left = self.max_model_len - prompt - outputs
        in_flight = since + left - tick  # ticks to its finish
        if in_flight > self.flights:
            in_flight = self.flights
        if since != tick:
            outputs = self._outputs(request, since)
            request.num_output_tokens = outputs
            request.last_token_time = self.last_token_time
            i = bisect_left(self._gap_ticks, since)
            if i < len(self._gap_ticks) and self._gap_values[i] > request.max_gap:
                request.max_gap = self._gap_values[i]
            self.decoders[request] = tick
        computed = prompt + outputs - 1 + in_flight
        request.num_computed_tokens = computed
        request.num_output_placeholders = in_flight
        self.pool.settle(request, computed, prompt + outputs - 2 + in_flight)
        return in_flight

    def _release(self, request: Request, since: int, explicit: bool = True) -> None:
        """Bring a decoder (exact as of tick `since`) up to date and stop holding it compactly; it
        becomes explicit (or, if not `explicit`, leaves the compact form only: the caller takes
        it out of the set)."""
        self._bring_up_to_date(request, since)
        if request in self.fresh:  # (its token in flight is its own row's: processed as such)
            self.fresh.discard(request)
        elif explicit and self.asynchronous and request.num_output_placeholders:
            self.left.append((request, request.num_computed_tokens - 1))
        tick = self.decoders.pop(request)
        outputs = request.num_output_tokens
        prompt = request.prompt_len
        self._crossing[(tick - prompt - outputs + 1) % self.block_size] -= 1
        self._context -= prompt + outputs - tick
        if explicit:
            self.explicit[request] = None

    def make_explicit(self, request: Request) -> None:
        """Hold one decoder explicitly from now on (its fields brought up to date)."""
        self._release(request, self.decoders[request])

    def sync(self) -> None:
        """Bring every decoder's Request fields and block holding up to date (they stay
        compact)."""
        for request, since in self.decoders.items():
            self._bring_up_to_date(request, since)
        self._gap_ticks.clear()  # every decoder is exact as of now: no earlier gap is needed
        self._gap_values.clear()

    def flush(self) -> list[Request]:
        """Hold every request explicitly; returns them in admission order."""
        if self.decoders:
            asynchronous = self.asynchronous
            fresh = self.fresh
            for request, since in self.decoders.items():
                self._bring_up_to_date(request, since)
                if asynchronous and request.num_output_placeholders and request not in fresh:
                    self.left.append((request, request.num_computed_tokens - 1))
            self.decoders = {}
            self._clear_compact_state()
            self.explicit = dict.fromkeys(self.members)
        return list(self.members)

    # -- one tick
    def decode_blocks_needed(self, ahead: int = 0) -> int:
        """New blocks the decoders need for the coming tick (or the one `ahead` ticks after it)."""
        return self._crossing[(self.tick + ahead) % self.block_size]

    def decode_context(self) -> int:
        """Tokens the decoders' attention reads in the coming tick."""
        return self._context + len(self.decoders) * self.tick

    def take_decode_blocks(self, blocks: int) -> None:
        """schedule() runs the decoders for the coming tick: their new blocks (`blocks`, from
        `decode_blocks_needed`, or `coming_batch`) are taken now."""
        self.pool.take(blocks)
        if self.asynchronous:
            self.flights += 1
        else:
            self.blocks_taken = True

    def coming_batch(self) -> tuple[int, int, int]:
        """The decoders of the batch schedule() makes now: how many, the new blocks they need and
        the KV tokens their attention reads. With async scheduling that batch runs after the one
        in flight (one tick ahead), without the decoders whose last token is in flight."""
        decoders = self.decoders
        count = len(decoders)
        if not self.asynchronous:
            return count, self._crossing[self.tick % self.block_size], self._context + count * self.tick
        coming = self.tick + 1
        blocks = self._crossing[coming % self.block_size]
        context = self._context + count * coming
        if self.next_finish == coming:
            for _, final in self.finishing(coming):
                count -= 1
                context -= final
                if (final - 1) % self.block_size == 0:
                    blocks -= 1
        return count, blocks, context

    def finishing(self, tick: int) -> list[tuple[Request, int]]:
        """The decoders whose last token comes with `tick`, each with its prompt plus outputs
        then."""
        decoders = self.decoders
        found = []
        for request, offset in self._calendar.get(tick, ()):
            since = decoders.get(request)
            if since is None or since - request.num_output_tokens != offset:
                continue
            found.append((request, request.prompt_len + request.num_output_tokens + tick - since))
        return found

    def take_left(self) -> list[tuple[Request, int]]:
        """Async: the decoders that became explicit with a token in flight since the last update."""
        left, self.left = self.left, []
        return left

    def advance(self, ticks: int, end: float, largest_gap: float) -> list[tuple[int, Request]] | tuple:
        """`ticks` decode iterations ran back to back, the last ending at `end`, each decoder
        getting one token in each; `largest_gap` is the longest of them. The blocks the decoders
        need in them are taken here (unless schedule() took them for its one tick). Returns the
        decoders whose last token came with the last tick, as (admission number, request) in
        admission order, fields up to date (their finish reason too) and out of the set (the
        caller retires them; no decoder may finish before the last tick: `next_finish` says when
        the first does)."""
        decoders = self.decoders
        if self.asynchronous:
            self.flights -= ticks  # (the blocks were taken when the batches were scheduled)
        elif self.blocks_taken:
            self.blocks_taken = False
        elif decoders:
            blocks = self.decode_blocks_over(ticks)
            if blocks:
                self.pool.take(blocks)
        tick = self.tick
        if decoders:
            # The gap log: a stack of decreasing maxima, the largest gap from each tick on.
            log_ticks, values = self._gap_ticks, self._gap_values
            while values and values[-1] <= largest_gap:
                values.pop()
                log_ticks.pop()
            log_ticks.append(tick)
            values.append(largest_gap)
            overflow = len(log_ticks) > GAP_LOG_LIMIT
        else:
            overflow = False
        tick = self.tick = tick + ticks
        self.last_token_time = end
        if self.next_finish > tick:
            if overflow:
                self.sync()
            return ()
        finished = []
        members = self.members
        for request, offset in self._calendar.pop(tick, ()):
            since = decoders.get(request)
            if since is None or since - request.num_output_tokens != offset:
                continue  # left the compact form (and maybe came back) since it was entered
            self._release(request, since, explicit=False)
            request.finish_reason = "stop" if request.num_output_tokens >= request.output_len else "length"
            finished.append((members.pop(request), request))
        heap = self._finish_ticks
        while heap and heap[0] <= tick:
            heapq.heappop(heap)
        self.next_finish = heap[0] if heap else NO_FINISH
        if len(finished) > 1:
            finished.sort(key=_first)
        if overflow:
            self.sync()
        return finished

    def decode_blocks_over(self, ticks: int, ahead: int = 0) -> int:
        """New blocks the decoders need in the next `ticks` ticks (from `ahead` ticks on), all
        told (every decoder needs one each `block_size` ticks)."""
        size = self.block_size
        first = (self.tick + ahead) % size
        crossing = self._crossing
        if first + ticks <= size:  # (within one cycle of residues: most stretches)
            return crossing[first] if ticks == 1 else sum(crossing[first:first + ticks])
        cycles, rest = divmod(ticks, size)
        partial = sum(crossing[first:first + rest])
        if first + rest > size:
            partial += sum(crossing[:first + rest - size])
        return cycles * len(self.decoders) + partial

    def crossing_schedule(self, ticks: int, ahead: int = 0) -> list[int]:
        """New blocks the decoders need in each of the next `ticks` ticks (from `ahead` ticks on)."""
        crossing = self._crossing
        size = self.block_size
        tick = self.tick + ahead
        if ticks <= size:
            return [crossing[(tick + j) % size] for j in range(ticks)]
        cycle = [crossing[(tick + j) % size] for j in range(size)]
        return (cycle * (ticks // size + 1))[:ticks]


def _first(item):
    return item[0]
