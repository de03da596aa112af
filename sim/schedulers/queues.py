"""Waiting queues as vLLM has them: one interface, one class per policy, and a factory.

- FCFS: arrival order; a preempted request goes back to the front.
- Priority: lowest `priority` value first, then earliest arrival (then submission order); a
  preempted request re-enters at its rank.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable, Iterator

from ..request import Request


class RequestQueue:
    """What the continuous scheduler needs of its waiting queue."""

    policy = ""

    def add(self, request: Request) -> None:
        """A request that has just arrived."""
        raise NotImplementedError

    def prepend(self, request: Request) -> None:
        """A preempted request going back."""
        raise NotImplementedError

    def peek(self) -> Request:
        raise NotImplementedError

    def pop(self) -> Request:
        raise NotImplementedError

    def remove(self, requests: Iterable[Request]) -> None:
        """Take these requests out wherever they are (a preempted request that finished)."""
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def __bool__(self) -> bool:
        return len(self) > 0

    def __iter__(self) -> Iterator[Request]:
        """The requests in the order they would be admitted."""
        raise NotImplementedError


class FCFSQueue(RequestQueue):
    policy = "fcfs"

    def __init__(self) -> None:
        self._queue: deque[Request] = deque()

    def add(self, request: Request) -> None:
        self._queue.append(request)

    def prepend(self, request: Request) -> None:
        self._queue.appendleft(request)

    def peek(self) -> Request:
        return self._queue[0]

    def pop(self) -> Request:
        return self._queue.popleft()

    def remove(self, requests: Iterable[Request]) -> None:
        gone = set(map(id, requests))
        self._queue = deque(r for r in self._queue if id(r) not in gone)

    def __len__(self) -> int:
        return len(self._queue)

    def __bool__(self) -> bool:
        return bool(self._queue)

    def __iter__(self) -> Iterator[Request]:
        return iter(self._queue)


class PriorityQueue(RequestQueue):
    """A heap keyed by (priority, arrival time, submission order); `seq` is unique, so the key
    never compares two requests."""

    policy = "priority"

    def __init__(self) -> None:
        self._heap: list[tuple[int, float, int, Request]] = []

    def add(self, request: Request) -> None:
        heapq.heappush(self._heap, (request.priority, request.arrival_time, request.seq, request))

    prepend = add

    def peek(self) -> Request:
        return self._heap[0][3]

    def pop(self) -> Request:
        return heapq.heappop(self._heap)[3]

    def remove(self, requests: Iterable[Request]) -> None:
        gone = set(map(id, requests))
        self._heap = [entry for entry in self._heap if id(entry[3]) not in gone]
        heapq.heapify(self._heap)

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)

    def __iter__(self) -> Iterator[Request]:
        return (entry[3] for entry in sorted(self._heap, key=_key))


def _key(entry: tuple) -> tuple:
    return entry[:3]


QUEUES = {"fcfs": FCFSQueue, "priority": PriorityQueue}


def make_queue(policy: str, requests: Iterable[Request] = ()) -> RequestQueue:
    """An empty queue for a scheduling policy (holding `requests`, added in their order)."""
    queue = QUEUES[policy]()
    for request in requests:
        queue.add(request)
    return queue
