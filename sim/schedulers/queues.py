"""Waiting queues as vLLM has them (`vllm/v1/core/sched/request_queue.py`): one interface, one
class per policy, and a factory.

- FCFS: arrival order; a preempted request goes back to the front.
- Priority: lowest `priority` value first, then earliest arrival (then submission order); a
  preempted request re-enters at its rank.

Each is a builtin container underneath (a deque, a heap list), so `len()` and truth tests cost
nothing extra in the scheduler's loops. The live engine's queues may also hold runs of requests
in compact form (`sim.arrivals.LazyRun`): the `Lazy*` variants, whose length is kept apart.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable, Iterator

from ..request import Request


class RequestQueue:
    """What the continuous scheduler needs of its waiting queue (also `len()`, truth and
    iteration in admission order)."""

    policy = ""

    def add_request(self, request: Request) -> None:
        """A request that has just arrived."""
        raise NotImplementedError

    def prepend_request(self, request: Request) -> None:
        """A preempted request going back."""
        raise NotImplementedError

    def peek_request(self) -> Request:
        raise NotImplementedError

    def pop_request(self) -> Request:
        raise NotImplementedError

    def remove_requests(self, requests: Iterable[Request]) -> None:
        """Take these requests out wherever they are (a preempted request that finished)."""
        raise NotImplementedError

    def items(self) -> list:
        """What it holds, in admission order (requests, and runs of them in the lazy variants)."""
        return list(self)

    # (The queue classes get these from the builtin they extend, or define them.)
    def __len__(self) -> int:
        raise NotImplementedError

    def __iter__(self) -> Iterator[Request]:
        raise NotImplementedError

    def can_extend(self, run) -> bool:
        """Whether `run` (a lazy queue's run of requests) is its last item and may grow."""
        raise NotImplementedError

    def extended(self, run, accepted: bool) -> None:
        """`run` grew by one request (`accepted`: not refused)."""
        raise NotImplementedError


class FCFSQueue(deque, RequestQueue):
    policy = "fcfs"

    add_request = deque.append
    prepend_request = deque.appendleft
    pop_request = deque.popleft

    def peek_request(self) -> Request:
        return self[0]

    def remove_requests(self, requests: Iterable[Request]) -> None:
        gone = set(map(id, requests))
        kept = [r for r in self if id(r) not in gone]
        self.clear()
        self.extend(kept)


class PriorityQueue(list, RequestQueue):
    """A heap of (priority, arrival time, submission order, request); `seq` is unique, so the
    key never compares two requests."""

    policy = "priority"

    def add_request(self, request: Request) -> None:
        heapq.heappush(self, (request.priority, request.arrival_time, request.seq, request))

    prepend_request = add_request

    def peek_request(self) -> Request:
        return self[0][3]

    def pop_request(self) -> Request:
        return heapq.heappop(self)[3]

    def remove_requests(self, requests: Iterable[Request]) -> None:
        gone = set(map(id, requests))
        # The heap's entries, not `__iter__`'s requests in priority order.
        self[:] = [entry for entry in list.__iter__(self) if id(entry[3]) not in gone]
        heapq.heapify(self)

    def __iter__(self) -> Iterator[Request]:
        return (entry[3] for entry in sorted(list.__iter__(self), key=_key))


def _key(entry: tuple) -> tuple:
    return entry[:3]


class LazyFCFSQueue(FCFSQueue):
    """FCFS holding requests and runs of them (`LazyRun`, at most `len(run)` requests each)."""

    def __init__(self) -> None:
        super().__init__()
        self.size = 0

    def __len__(self) -> int:
        return self.size

    def add_request(self, item) -> None:
        self.append(item)
        self._added(item)

    def prepend_request(self, request: Request) -> None:
        self.appendleft(request)
        self.size += 1

    def peek_request(self) -> Request:
        item = self[0]
        return item if isinstance(item, Request) else item.peek()

    def pop_request(self) -> Request:
        item = self[0]
        self.size -= 1
        if isinstance(item, Request):
            return self.popleft()
        request = item.pop()
        if not len(item):
            self.popleft()
            item.queued = False
        return request

    def can_extend(self, run) -> bool:
        """`run` is where the next arrival of its stream goes (the last thing queued)."""
        items = deque.__len__(self)  # (a negative index would go through the overridden len())
        return items > 0 and deque.__getitem__(self, items - 1) is run

    def extended(self, run, accepted: bool) -> None:
        self.size += accepted

    def remove_requests(self, requests: Iterable[Request]) -> None:
        gone = set(map(id, requests))
        kept = [item for item in deque.__iter__(self) if id(item) not in gone]
        self.size -= sum(1 for item in deque.__iter__(self) if id(item) in gone)
        self.clear()
        self.extend(kept)

    def items(self) -> list:
        return list(deque.__iter__(self))

    def __iter__(self) -> Iterator[Request]:
        for item in deque.__iter__(self):
            if isinstance(item, Request):
                yield item
            else:
                yield from item.requests()

    def _added(self, item) -> None:
        if isinstance(item, Request):
            self.size += 1
        else:
            self.size += len(item)
            item.queued = True


class LazyPriorityQueue(PriorityQueue):
    """Priority holding requests and runs of them; a run is keyed by its next request (its
    requests come in key order: the same priority, later arrivals)."""

    def __init__(self) -> None:
        super().__init__()
        self.size = 0

    def __len__(self) -> int:
        return self.size

    def add_request(self, item) -> None:
        if isinstance(item, Request):
            self.size += 1
            super().add_request(item)
            return
        self.size += len(item)
        item.queued = True
        self._push_run(item)

    prepend_request = add_request

    def _push_run(self, run) -> None:
        head = run.peek()
        heapq.heappush(self, (head.priority, head.arrival_time, head.seq, run))

    def peek_request(self) -> Request:
        item = self[0][3]
        return item if isinstance(item, Request) else item.peek()

    def pop_request(self) -> Request:
        item = heapq.heappop(self)[3]
        self.size -= 1
        if isinstance(item, Request):
            return item
        request = item.pop()
        if len(item):
            self._push_run(item)
        else:
            item.queued = False
        return request

    def can_extend(self, run) -> bool:
        return run.queued

    def extended(self, run, accepted: bool) -> None:
        self.size += accepted

    def remove_requests(self, requests: Iterable[Request]) -> None:
        gone = set(map(id, requests))
        self.size -= sum(1 for entry in list.__iter__(self) if id(entry[3]) in gone)
        self[:] = [entry for entry in list.__iter__(self) if id(entry[3]) not in gone]
        heapq.heapify(self)

    def items(self) -> list:
        return [entry[3] for entry in sorted(list.__iter__(self), key=_key)]

    def __iter__(self) -> Iterator[Request]:
        requests = []
        for entry in list.__iter__(self):
            item = entry[3]
            requests += [item] if isinstance(item, Request) else list(item.requests())
        return iter(sorted(requests, key=lambda r: (r.priority, r.arrival_time, r.seq)))


QUEUES = {"fcfs": FCFSQueue, "priority": PriorityQueue}
LAZY_QUEUES = {"fcfs": LazyFCFSQueue, "priority": LazyPriorityQueue}


def make_queue(policy: str, items: Iterable = (), lazy: bool = False) -> RequestQueue:
    """An empty queue for a scheduling policy (holding `items`, added in their order: requests,
    or a lazy queue's `items()`)."""
    queue = (LAZY_QUEUES if lazy else QUEUES)[policy]()
    for item in items:
        queue.add_request(item)
    return queue
