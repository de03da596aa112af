"""Waiting queues as vLLM has them (`vllm/v1/core/sched/request_queue.py`): one interface, one
class per policy, and a factory.

- FCFS: arrival order; a preempted request goes back to the front.
- Priority: lowest `priority` value first, then earliest arrival (then submission order); a
  preempted request re-enters at its rank.

Each is a builtin container underneath (a deque, a heap list), so `len()` and truth tests cost
nothing extra in the scheduler's loops.
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
        self[:] = [entry for entry in self if id(entry[3]) not in gone]
        heapq.heapify(self)

    def __iter__(self) -> Iterator[Request]:
        return (entry[3] for entry in sorted(list.__iter__(self), key=_key))


def _key(entry: tuple) -> tuple:
    return entry[:3]


QUEUES = {"fcfs": FCFSQueue, "priority": PriorityQueue}


def make_queue(policy: str, requests: Iterable[Request] = ()) -> RequestQueue:
    """An empty queue for a scheduling policy (holding `requests`, added in their order)."""
    queue = QUEUES[policy]()
    for request in list(requests):
        queue.add_request(request)
    return queue
