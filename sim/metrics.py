"""Serving metrics as `vllm bench serve` defines them, plus what only a simulator can see.

- TTFT: arrival → first output token. TPOT: (E2E − TTFT) ÷ (outputs − 1), per request, leaving
  out one-token requests. ITL: every gap between consecutive tokens of a request, pooled over all
  requests. E2E: arrival → last token. A token's time is the end of the iteration that sampled it.
- Percentiles with numpy's default (linear) interpolation. ITL gaps are stored as (gap, count)
  pairs — many requests share one iteration's gap — and the weighted percentile equals numpy's
  percentile of the expanded list exactly.
- Rolling series for sparklines are ring buffers, so a run left going all day does not grow.
- A headless run keeps its finished requests as columns of compact arrays (`RecordTable`, about
  60 bytes a request) and its gaps as two flat arrays, so a million-request run fits in a couple
  of hundred MB; `finish_sink` sees each record as it finishes (a CSV written as the run goes).
- Requests refused before the engine saw them (`on_failed`) count as vLLM's failed requests.
"""

from __future__ import annotations

import math
import struct
from array import array
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from itertools import repeat
from operator import attrgetter

import numpy as np

from .reports import BINDING_LIMITS, RATE_WINDOW_S, MetricsView, PoolView

PERCENTILES = (50, 90, 99)
_POOL_KEYS = ("median_ttft_ms", "p99_ttft_ms", "median_tpot_ms", "p99_tpot_ms")  # `pool_summary`'s, as `summary` names them
RECENT_ITERATIONS = 4096
"""Iterations the live rates look back over at most."""
ITL_BATCH = 4096
"""Gaps between tokens held as lists before they are packed into the collector's arrays."""


def largest(values: list[float]) -> float:
    """max() of a non-empty list of floats, in one typed pass (the compiled core compares them
    unboxed)."""
    top = values[0]
    for value in values:
        if value > top:
            top = value
    return top


def _integrated(integral: float, busy: float, running: int, gaps: list[float]) -> tuple[float, float]:
    """The running integral and busy time after iterations of `running` requests lasting `gaps`,
    added one gap at a time, in order (as per-iteration booking adds them)."""
    for gap in gaps:
        integral += running * gap
        busy += gap
    return integral, busy


SORT_ALL = 1 << 17
"""Gaps up to this many (a sweep point's from 4 req/s up, a short run's) are sorted once for all
the percentiles asked (`weighted_percentiles`); more (a long run's millions) are narrowed to each
rank by the weighted selection, which copies little. Measured, the three percentiles a summary
asks for (load 8): 79,236 gaps 2.8 ms sorted against 3.6 ms selected, 22,990 gaps 0.37 against
1.27 ms; 155,386 gaps 10.6 ms sorted against 7.2 ms selected."""


def weighted_percentile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """numpy.percentile(np.repeat(values, weights), q) without building the repeated array."""
    return weighted_percentiles(values, weights, (q,))[0]


def weighted_percentiles(values: np.ndarray, weights: np.ndarray, qs) -> list[float]:
    """`weighted_percentile` of each of `qs`: the values at the ranks each needs are the same
    whichever way they are found (the k-th smallest of the multiset), from one sort of `values`
    (at most SORT_ALL of them) or else a weighted selection for each (which narrows to the two
    ranks it needs without sorting all of `values`)."""
    n = int(weights.sum(dtype=np.int64)) if len(values) else 0
    if n == 0:
        return [0.0 for _ in qs]
    ranks = []
    for q in qs:
        rank = q / 100.0 * (n - 1)
        lo = int(math.floor(rank))
        ranks.append((rank, lo, min(lo + 1, n - 1)))
    if len(values) <= SORT_ALL:
        order = np.argsort(values)
        cum = np.cumsum(weights[order], dtype=np.int64)
        ranked = values[order]
        at = ranked[np.searchsorted(cum, [k + 1 for _, lo, hi in ranks for k in (lo, hi)])].tolist()
        found = [(at[2 * i], at[2 * i + 1]) for i in range(len(ranks))]
    else:
        found = [_weighted_ranks(values, weights, lo, hi) for _, lo, hi in ranks]
    out = []
    for (rank, lo, _), (v_lo, v_hi) in zip(ranks, found):
        out.append(float(v_lo + (v_hi - v_lo) * (rank - lo)))
    return out


def _weighted_ranks(values: np.ndarray, weights: np.ndarray, k: int, k2: int) -> tuple[float, float]:
    """The k-th and k2-th smallest (0-based, k <= k2) of the multiset where values[i] appears
    weights[i] times.

    Each round brackets the ranks between two values read off a weighted sample (about 2 % of
    the weight on either side of them) and keeps only what lies between them, so the copies it
    makes are small; counting the weight below reads the arrays in place. Two ranks on either
    side of a bracket's edge are looked for one at a time."""
    while len(values) > 4096:
        stride = max(1, len(values) // 4096)
        sv, sw = values[::stride], weights[::stride]
        order = np.argsort(sv, kind="stable")
        sv = sv[order]
        cum = np.cumsum(sw[order], dtype=np.float64)
        share = k / max(1, int(weights.sum(dtype=np.int64)))
        lo = sv[min(len(sv) - 1, int(np.searchsorted(cum, (share - 0.02) * cum[-1])))]
        hi = sv[min(len(sv) - 1, int(np.searchsorted(cum, (share + 0.02) * cum[-1])))]
        below = values < lo
        w_below = int(np.sum(weights, where=below, dtype=np.int64))
        if k2 < w_below:
            values, weights = values[below], weights[below]
            continue
        inside = ~below
        inside &= values <= hi
        w_inside = int(np.sum(weights, where=inside, dtype=np.int64))
        if w_below <= k and k2 < w_below + w_inside:
            if inside.all():  # one value, or a bracket that holds everything: sort what is left
                break
            values, weights = values[inside], weights[inside]
            k -= w_below
            k2 -= w_below
            continue
        if w_below + w_inside <= k:
            above = values > hi
            k -= w_below + w_inside
            k2 -= w_below + w_inside
            values, weights = values[above], weights[above]
            continue
        return _weighted_ranks(values, weights, k, k)[0], _weighted_ranks(values, weights, k2, k2)[0]
    order = np.argsort(values, kind="stable")
    cum = np.cumsum(weights[order], dtype=np.int64)
    ranked = values[order]
    return float(ranked[np.searchsorted(cum, k + 1)]), float(ranked[np.searchsorted(cum, k2 + 1)])


@dataclass
class RequestRecord:
    request_id: str
    pool: str
    arrival_time: float
    prompt_len: int
    output_len: int
    ttft: float
    e2e: float
    tpot: float | None
    num_preemptions: int
    max_itl: float
    finish_reason: str
    num_cached_tokens: int = 0  # prompt tokens found in the prefix cache when first admitted
    client_queue_time: float = 0.0  # s waited at the client (max_concurrency) before it was sent


_record_row = attrgetter(*(f.name for f in fields(RequestRecord)))
"""A record's fields as a tuple, in their order (a row of the RecordTable)."""


def _id_numbers(rids) -> list[int]:
    """Request ids as numbers where str() gives the id back (ids are kept that way), -1 for the
    others."""
    try:
        numbers = list(map(int, rids))
    except (ValueError, TypeError):  # some are not numbers: which, one at a time
        return [_id_numbers((rid,))[0] for rid in rids] if len(rids) > 1 else [-1]
    # The usual batch (every id a number, written plainly) is told whole, at C speed.
    if numbers and max(numbers) < 1 << 63 and _written_plainly(rids):
        return numbers
    return [n if 0 <= n < 1 << 63 and text == rid else -1
            for n, text, rid in zip(numbers, map(str, numbers), rids)]


def _written_plainly(rids) -> bool:
    """Whether each id is a number as str() writes it: ASCII digits only, the first not 0 unless
    the id is "0" (told with C-speed string methods: "," + a plain id + "," starts ",0" only when
    it is ",0,", each id between separators of its own)."""
    try:
        digits = "".join(rids)
    except TypeError:
        return False
    if not (digits.isascii() and digits.isdigit()):
        return False
    framed = ",," + ",,".join(rids) + ",,"
    return framed.count(",0") == framed.count(",0,")


def _packed(code: str, values: tuple | list) -> array:
    """array(code, values) for the float ("d") and int ("i") columns, packed by struct: it reads
    each number without the argument parsing array does per item (2,000 floats 13 us against 88,
    ints 26 against 130, Debian's python3 3.11.2; both read a number the same way). A value struct
    refuses is given to array, which raises its own error for it (a one-token answer's tpot, None;
    an int the column cannot hold)."""
    try:
        return array(code, struct.pack(f"{len(values)}{code}", *values))
    except struct.error:
        return array(code, values)


class RecordTable:
    """Finished requests as columns of compact arrays, in order of finishing: a sequence of
    RequestRecord (each made when read) whose columns numpy reads whole (`column`). Rows come
    in as tuples of a record's fields (`add`) and are made into columns a batch at a time."""

    _FLOAT = ("arrival_time", "ttft", "e2e", "tpot", "max_itl", "client_queue_time")
    _INT = ("prompt_len", "output_len", "num_preemptions", "num_cached_tokens")
    _BATCH = 4096  # rows held as tuples before they go into the columns

    def __init__(self) -> None:
        self._float = {name: array("d") for name in self._FLOAT}
        self._int = {name: array("i") for name in self._INT}
        self._ids = array("q")  # a numeric id as its number (`_id_numbers`); -1: the text is in _other_ids
        self._other_ids: dict[int, str] = {}
        self._pool = array("b")
        self._reason = array("b")
        self._codes: dict[str, dict[str, int]] = {"pool": {}, "reason": {}}
        self._names: dict[str, list[str]] = {"pool": [], "reason": []}
        self._rows: list[tuple] = []  # added, not yet in the columns

    def _code(self, kind: str, name: str) -> int:
        codes = self._codes[kind]
        code = codes.get(name)
        if code is None:
            code = codes[name] = len(self._names[kind])
            self._names[kind].append(name)
        return code

    def _codes_of(self, kind: str, names) -> array:
        """The codes of these names (new names coded in order of first appearance)."""
        codes = {name: self._code(kind, name) for name in dict.fromkeys(names)}
        if len(codes) == 1:  # (the usual batch: one pool, one finish reason)
            return array("b", codes.values()) * len(names)
        return array("b", map(codes.__getitem__, names))

    def add(self, row: tuple) -> None:
        """One finished request: its RequestRecord's fields, in their order."""
        rows = self._rows
        rows.append(row)
        if len(rows) >= self._BATCH:
            self._fold()

    def append(self, rec: RequestRecord) -> None:
        self.add(_record_row(rec))

    def _fold(self) -> None:
        """The rows added so far into the columns (each column made whole before any grows, so a
        value a column cannot hold leaves the table as it was)."""
        rows = self._rows
        if not rows:
            return
        (rids, pools, arrival, prompt, output, ttft, e2e, tpot, preemptions, max_itl, reasons,
         cached, queued) = zip(*rows)
        try:
            tpots = _packed("d", tpot)
        except TypeError:  # one-token answers have none: NaN
            tpots = array("d", [math.nan if x is None else x for x in tpot])
        floats = {"arrival_time": _packed("d", arrival), "ttft": _packed("d", ttft), "e2e": _packed("d", e2e),
                  "tpot": tpots, "max_itl": _packed("d", max_itl), "client_queue_time": _packed("d", queued)}
        ints = {"prompt_len": _packed("i", prompt), "output_len": _packed("i", output),
                "num_preemptions": _packed("i", preemptions), "num_cached_tokens": _packed("i", cached)}
        numbers = _id_numbers(rids)
        ids = array("q", numbers)
        first = len(self._ids)
        other = {first + k: rid for k, rid in enumerate(rids) if numbers[k] < 0} if min(numbers) < 0 else {}
        pool_codes = self._codes_of("pool", pools)
        reason_codes = self._codes_of("reason", reasons)
        for name, column in floats.items():
            self._float[name].extend(column)
        for name, column in ints.items():
            self._int[name].extend(column)
        self._ids.extend(ids)
        self._other_ids.update(other)
        self._pool.extend(pool_codes)
        self._reason.extend(reason_codes)
        rows.clear()

    def __len__(self) -> int:
        return len(self._ids) + len(self._rows)

    def _record(self, k: int) -> RequestRecord:
        f, i = self._float, self._int
        tpot = f["tpot"][k]
        rid = self._ids[k]
        return RequestRecord(
            request_id=self._other_ids[k] if rid < 0 else str(rid), pool=self._names["pool"][self._pool[k]],
            arrival_time=f["arrival_time"][k], prompt_len=i["prompt_len"][k], output_len=i["output_len"][k],
            ttft=f["ttft"][k], e2e=f["e2e"][k], tpot=None if math.isnan(tpot) else tpot,
            num_preemptions=i["num_preemptions"][k], max_itl=f["max_itl"][k],
            finish_reason=self._names["reason"][self._reason[k]], num_cached_tokens=i["num_cached_tokens"][k],
            client_queue_time=f["client_queue_time"][k])

    def __getitem__(self, index):
        self._fold()
        if isinstance(index, slice):
            return [self._record(k) for k in range(*index.indices(len(self)))]
        n = len(self)
        if not -n <= index < n:
            raise IndexError("record index out of range")
        return self._record(index % n)

    def __iter__(self) -> Iterator[RequestRecord]:
        self._fold()
        return (self._record(k) for k in range(len(self)))

    def __eq__(self, other) -> bool:
        try:
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        except TypeError:
            return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # (unhashable, as a list)

    def column(self, name: str) -> np.ndarray:
        """A copy of one column: a RequestRecord field (tpot is NaN for one-token answers)."""
        self._fold()
        if name in self._float:
            return np.frombuffer(self._float[name], dtype=np.float64).copy()
        if name in self._int:
            return np.frombuffer(self._int[name], dtype=np.int32).astype(np.int64)
        if name in ("pool", "finish_reason"):
            kind = "pool" if name == "pool" else "reason"
            codes = np.frombuffer(self._pool if kind == "pool" else self._reason, dtype=np.int8).copy()
            return np.array(self._names[kind], dtype=object)[codes] if len(codes) else np.array([], dtype=object)
        raise KeyError(name)

    def pool_codes(self) -> tuple[np.ndarray, list[str]]:
        """Each record's pool as a small code, and the pool names the codes index."""
        self._fold()
        return np.frombuffer(self._pool, dtype=np.int8).copy(), list(self._names["pool"])

    def select(self, mask: np.ndarray) -> list[RequestRecord]:
        self._fold()
        return [self._record(int(k)) for k in np.flatnonzero(mask)]

    def id_numbers(self) -> np.ndarray:
        """Each record's request id as a number (the workloads number their requests in the
        order they are sent), -1 where the id is not a plain number."""
        self._fold()
        return np.frombuffer(self._ids, dtype=np.int64).copy()


@dataclass
class FailedRequest:
    """A request refused before the engine served it, and why (vLLM counts it as failed)."""

    request_id: str
    arrival_time: float
    prompt_len: int
    output_len: int
    error: str


@dataclass
class MetricsCollector:
    """Accumulates a run's metrics. `keep_records=False` keeps only bounded recent windows (the
    live app); the command line keeps everything."""

    keep_records: bool = True
    window: int = 512  # recent finished requests for live percentiles
    series_len: int = 240
    series_interval: float | None = None  # seconds of simulated time between series points

    records: RecordTable = field(default_factory=RecordTable)
    itl_values: array = field(default_factory=lambda: array("d"))
    itl_counts: array = field(default_factory=lambda: array("i"))
    """The gaps between tokens and how many requests had each, in booking order: read them
    through `itl()`, which first adds those still held as lists (`_itl_gaps`, `_itl_weights`)."""
    failed: list[FailedRequest] = field(default_factory=list)
    finish_sink: Callable[[RequestRecord], None] | None = None
    """Called with each finished request's record as it finishes (a CSV written as the run goes)."""
    output_tokens: int = 0
    prompt_tokens: int = 0
    completed: int = 0
    rejected: int = 0
    num_preemptions: int = 0
    running_integral: float = 0.0  # ∫ running dt, for the time-weighted mean batch
    busy_time: float = 0.0
    max_running: int = 0
    peak_kv_used: int = 0
    kv_usable: int = 1
    seat_iterations: int = 0
    padded_seat_iterations: int = 0
    # Iterations by binding limit (a plain dict: a Counter's item update costs twice as much).
    binding_counts: dict = field(default_factory=lambda: dict.fromkeys(BINDING_LIMITS, 0))
    first_arrival: float | None = None
    last_token_time: float = 0.0
    max_itl: float = 0.0

    def __post_init__(self) -> None:
        self._recent: deque[RequestRecord] = deque(maxlen=self.window)
        self._recent_tokens: deque[tuple[float, int, int]] = deque(maxlen=RECENT_ITERATIONS)  # (t, tokens, done)
        # Iterations booked since, not yet in _recent_tokens (made into its entries when read; see
        # _trim_recent for the entries' forms).
        self._recent_booked: list[tuple] = []
        # Iterations booked in all (_recent_total), the total after each booked entry
        # (_recent_ends_at, ascending), and the total before the first booked entry (_recent_base).
        self._recent_total = 0
        self._recent_ends_at: list[int] = []
        self._recent_base = 0
        self.series_throughput: deque[float] = deque(maxlen=self.series_len)
        self.series_ttft: deque[float] = deque(maxlen=self.series_len)
        self.series_tpot: deque[float] = deque(maxlen=self.series_len)
        self.series_itl: deque[float] = deque(maxlen=self.series_len)
        self._next_sample: float | None = None
        self._sample_tokens = 0
        self._sample_itl_max = 0.0
        # Output tokens per second of the run (second k counts tokens sampled in [t0 + k, t0 + k + 1)
        # after the first arrival t0): vllm bench serve's peak output token throughput. Only
        # seconds in which a token was sampled are held (a dict), so memory follows the iterations
        # run, not the simulated time they span (a day of think time between turns costs nothing).
        self._tokens_per_s: dict[int, int] = {}
        # Gaps booked and their counts not yet in itl_values and itl_counts: a list takes a
        # stretch's gaps for a copy of pointers, where an array parses each item as a call
        # argument; they are packed into the arrays ITL_BATCH at a time (`_fold_itl`).
        self._itl_gaps: list[float] = []
        self._itl_weights: list[int] = []

    # -- recording
    def on_arrival(self, t: float) -> None:
        if self.first_arrival is None or t < self.first_arrival:
            self.first_arrival = t

    def on_gaps(self, gap: float, count: int) -> None:
        """`count` requests got a token `gap` seconds after their previous one."""
        if self.keep_records:
            gaps = self._itl_gaps
            gaps.append(gap)
            self._itl_weights.append(count)
            if len(gaps) >= ITL_BATCH:
                self._fold_itl()
        if gap > self.max_itl:
            self.max_itl = gap
        if gap > self._sample_itl_max:
            self._sample_itl_max = gap

    def on_iteration(self, start: float, end: float, running: int, kv_used: int, binding: str,
                     tokens: int, completions: int, seats: int = 0, padded: int = 0,
                     seen: float | None = None) -> None:
        """Book one iteration from `start` to `end`: `running` requests in it, `kv_used` blocks
        in use after it, its binding limit, the tokens it emitted and the requests that
        finished with it, the seats it filled (`padded` of them with padding); `seen`: when its
        tokens reached their clients (through the API server; None: at `end`), which is when
        the run's clients count them."""
        dt = end - start
        self.running_integral += running * dt
        self.busy_time += dt
        if running > self.max_running:
            self.max_running = running
        if kv_used > self.peak_kv_used:
            self.peak_kv_used = kv_used
        try:
            self.binding_counts[binding] += 1
        except KeyError:
            self.binding_counts[binding] = 1
        self.seat_iterations += seats
        if padded:
            self.padded_seat_iterations += padded
        if tokens:
            self.output_tokens += tokens
            if seen is None:
                seen = end
            if seen > self.last_token_time:
                self.last_token_time = seen
            if self.keep_records:  # counted in its second of the run (see _tokens_per_s)
                second = int(seen - (self.first_arrival or 0.0))
                if second < 0:
                    second = 0
                counts = self._tokens_per_s
                counts[second] = counts.get(second, 0) + tokens
        self._recent_booked.append((end, tokens, completions))
        total = self._recent_total = self._recent_total + 1
        self._recent_ends_at.append(total)
        if total - self._recent_base > 2 * RECENT_ITERATIONS:
            self._trim_recent()
        if self.series_interval is not None:
            self._sample_tokens += tokens
            interval = self.series_interval
            next_sample = self._next_sample
            if next_sample is None:
                next_sample = start + interval
            while end >= next_sample:
                self._push_series()
                next_sample += interval
            self._next_sample = next_sample

    def on_decode_iterations(self, start: float, ends, gaps, running: int, kv_used: int,
                             binding: str, completions: int = 0, kv_used_last: int = 0,
                             seen_ends=None, itl=None) -> None:
        """Book alike decode iterations back to back from `start` (the fast path): iteration j
        ends at ends[j], `gaps[j]` after the one before; in each, `running` requests each got one
        token and nobody finished, but `completions` in the last one (after which `kv_used_last`
        blocks were in use); `kv_used` is the highest KV use among the others. The tokens reached
        their clients at `seen_ends[j]`, `itl[j]` after their previous ones (through the API
        server; None: at `ends`, `gaps` after): the clients' gaps are the inter-token latencies
        and their times count the tokens, the engine's gaps its busy time. (With series sampling,
        the caller books those finished requests before the last iteration, as one iteration at a
        time would.) Books the same numbers, to the last bit, as one on_gaps and one on_iteration
        call per iteration: the running integral and busy time are added up one gap at a time, in
        order (a loop, or numpy's cumsum, which also goes left to right)."""
        k = len(ends)
        seen = seen_ends is not None
        if gaps.__class__ is not list:
            if not seen and isinstance(gaps, np.ndarray) and self.series_interval is None and self.keep_records:
                self._fold_itl()  # (the gaps held as lists go first: the arrays keep booking order)
                self.itl_values.frombytes(gaps.tobytes())
                self.itl_counts.frombytes(np.full(k, running, dtype=np.int32).tobytes())
                self._count_tokens_in(ends, running)
                self.running_integral = float(np.cumsum(np.concatenate(((self.running_integral,),
                                                                        running * gaps)))[-1])
                self.busy_time = float(np.cumsum(np.concatenate(((self.busy_time,), gaps)))[-1])
                top = float(gaps.max())
                last_seen = float(ends[-1])
                ends_tail = ends[-RECENT_ITERATIONS:].tolist()
                gaps = None
            elif isinstance(gaps, np.ndarray):
                ends, gaps = ends.tolist(), gaps.tolist()
            else:
                ends, gaps = list(ends), list(gaps)
        if gaps is not None:
            if not seen:
                seen_ends, itl = ends, gaps
            elif itl.__class__ is not list:
                seen_ends, itl = seen_ends.tolist(), itl.tolist()
            if self.series_interval is not None:
                prev = start
                last = k - 1 if completions else k
                for j in range(k):
                    self.on_gaps(itl[j], running)
                    if j == last:
                        self.on_iteration(prev, ends[j], running, kv_used_last, binding, running, completions, running,
                                          0, seen_ends[j])
                    else:
                        self.on_iteration(prev, ends[j], running, kv_used, binding, running, 0, running, 0,
                                          seen_ends[j])
                    prev = ends[j]
                return
            if self.keep_records:
                held = self._itl_gaps
                held += itl
                self._itl_weights += [running] * k
                if len(held) >= ITL_BATCH:
                    self._fold_itl()
                if running:
                    # Counted in their second of the run as on_iteration counts one (most
                    # stretches lie within one second).
                    t0 = self.first_arrival or 0.0
                    second = int(seen_ends[0] - t0)
                    counts = self._tokens_per_s
                    if second == int(seen_ends[-1] - t0) and second >= 0:
                        counts[second] = counts.get(second, 0) + running * k
                    else:
                        self._count_tokens_in(seen_ends, running)
            # The same float additions in the same order as per-iteration booking (dt is the gap).
            self.running_integral, self.busy_time = _integrated(self.running_integral, self.busy_time, running, gaps)
            top = largest(itl)
            last_seen = seen_ends[-1]
            ends_tail = ends if k <= RECENT_ITERATIONS else ends[k - RECENT_ITERATIONS:]
        # (No series is sampled here: the per-sample figures are left alone.)
        if top > self.max_itl:
            self.max_itl = top
        if running > self.max_running:
            self.max_running = running
        if kv_used > self.peak_kv_used:
            self.peak_kv_used = kv_used
        if kv_used_last > self.peak_kv_used:
            self.peak_kv_used = kv_used_last
        try:
            self.binding_counts[binding] += k
        except KeyError:
            self.binding_counts[binding] = k
        tokens = running * k
        self.output_tokens += tokens
        self.seat_iterations += tokens
        if running and last_seen > self.last_token_time:
            self.last_token_time = last_seen
        # Kept as given (only the last RECENT_ITERATIONS are ever made into entries).
        self._recent_booked.append((ends_tail, running, completions))
        total = self._recent_total = self._recent_total + len(ends_tail)
        self._recent_ends_at.append(total)
        if total - self._recent_base > 2 * RECENT_ITERATIONS:
            self._trim_recent()

    # The iterations booked since the recent entries were last made (`_recent_booked`) are
    # (end, tokens, completions) for one iteration, (ends, tokens, completions in the last) for
    # alike decode iterations (`ends` a list).
    def _trim_recent(self) -> None:
        """Drop the booked iterations the newest RECENT_ITERATIONS push out anyway (and the
        entries made before them)."""
        ends_at = self._recent_ends_at
        # The entries that end at or before the newest RECENT_ITERATIONS begin.
        i = bisect_right(ends_at, self._recent_total - RECENT_ITERATIONS)
        if i:
            self._recent_base = ends_at[i - 1]
            del self._recent_booked[:i]
            del ends_at[:i]
        self._recent_tokens.clear()

    def _recent_iterations(self) -> deque[tuple[float, int, int]]:
        """(end, tokens, completions) of the last RECENT_ITERATIONS iterations, oldest first."""
        recent = self._recent_tokens
        if self._recent_booked:
            for entry in self._recent_booked:
                ends = entry[0]
                if ends.__class__ is list:
                    recent.extend(zip(ends, repeat(entry[1]), repeat(0)))
                    if entry[2]:
                        recent[-1] = (ends[-1], entry[1], entry[2])
                else:
                    recent.append(entry)
            self._recent_booked.clear()
            self._recent_ends_at.clear()
            self._recent_base = self._recent_total
        return recent

    def _count_tokens_in(self, ends, running: int) -> None:
        """`running` tokens at each of `ends` (ascending; a list or a numpy array), counted per
        second as `on_iteration` counts one."""
        if not running or not len(ends):
            return
        t0 = self.first_arrival or 0.0
        lo = max(0, int(ends[0] - t0))
        hi = max(0, int(ends[-1] - t0))
        counts = self._tokens_per_s
        if lo == hi:
            counts[lo] = counts.get(lo, 0) + running * len(ends)
        elif isinstance(ends, np.ndarray):
            seconds = (ends - t0).astype(np.int64)
            np.clip(seconds, 0, None, out=seconds)
            held, n = np.unique(seconds, return_counts=True)  # only the seconds that hold an end
            for second, m in zip(held.tolist(), n.tolist()):
                counts[second] = counts.get(second, 0) + m * running
        else:
            # ends[i] falls in second s while ends[i] - t0 < s + 1 (int() truncates as numpy's
            # cast does): the first end of each later second is found by bisection, one step per
            # second that holds an end (an idle stretch between them costs nothing).
            i, k = 0, len(ends)
            while i < k:
                second = max(0, int(ends[i] - t0))
                j = bisect_left(ends, second + 1, i, key=lambda end: end - t0)
                if j == i:  # (an end before t0, counted in second 0)
                    j = i + 1
                counts[second] = counts.get(second, 0) + (j - i) * running
                i = j

    def _push_series(self) -> None:
        interval = self.series_interval
        assert interval is not None  # (called only when series are sampled)
        self.series_throughput.append(self._sample_tokens / interval)
        self._sample_tokens = 0
        recent = self._recent_records(32)
        self.series_ttft.append(float(np.median([r.ttft for r in recent])) if recent else 0.0)
        tp = [r.tpot for r in recent if r.tpot is not None]
        self.series_tpot.append(float(np.median(tp)) if tp else 0.0)
        self.series_itl.append(self._sample_itl_max)
        self._sample_itl_max = 0.0

    def on_finish(self, rec: RequestRecord) -> None:
        """A request finished: its record."""
        self.on_finish_row(_record_row(rec), rec)

    def on_finish_row(self, row: tuple, rec: RequestRecord | None = None) -> None:
        """A request finished: `row` is its RequestRecord's fields, in their order (the record,
        `rec` if given, is made only when something needs it now: the finish sink, or the live
        window when records are not kept)."""
        self.completed += 1
        self.prompt_tokens += row[3]  # prompt_len
        keep = self.keep_records
        if keep:
            self.records.add(row)
            if self.finish_sink is None:
                return  # (the recent window is read off the records)
        if rec is None:
            rec = RequestRecord(*row)
        if self.finish_sink is not None:
            self.finish_sink(rec)
        if not keep:
            self._recent.append(rec)

    def _recent_records(self, n: int | None = None) -> list[RequestRecord]:
        """The last `window` finished requests (at most the last `n`), oldest first."""
        n = self.window if n is None else min(n, self.window)
        if n <= 0:
            return []
        if self.keep_records:
            return self.records[-n:]
        return list(self._recent)[-n:]

    def on_failed(self, request_id: str, arrival_time: float, prompt_len: int, output_len: int,
                  error: str) -> None:
        """A request refused before the engine saw it (as vLLM's API server refuses one)."""
        self.failed.append(FailedRequest(request_id, arrival_time, prompt_len, output_len, error))

    # -- reading
    def summary(self, duration: float, percentiles=PERCENTILES, goodput: dict | None = None) -> dict:
        """The result block, under `vllm bench serve`'s key names where it has them: for TTFT,
        TPOT, ITL and E2EL the mean, median, std and each of `percentiles` (p90 and p99 always);
        `goodput` ({"ttft"|"tpot"|"e2el": ms}) adds request_goodput, as vLLM counts it."""
        recs = self.records
        d: dict = {
            "completed": self.completed,
            "failed": len(self.failed),
            "duration": duration,
            "total_input_tokens": self.prompt_tokens,
            "total_output_tokens": self.output_tokens,
            "request_throughput": self.completed / duration if duration > 0 else 0.0,
            "request_goodput": None,
            "output_throughput": self.output_tokens / duration if duration > 0 else 0.0,
            "total_token_throughput": (self.output_tokens + self.prompt_tokens) / duration if duration > 0 else 0.0,
            "max_output_tokens_per_s": float(max(self._tokens_per_s.values())) if self._tokens_per_s else 0.0,
            "max_concurrent_requests": _peak_concurrency(recs),
        }
        if goodput:
            d["request_goodput"] = _goodput(goodput, recs) / duration if duration > 0 else 0.0
        qs = sorted(set(percentiles) | {90, 99})
        # One column at a time (each a copy of a million values in a long run), in ms.
        for name, column in (("ttft", "ttft"), ("tpot", "tpot"), ("e2el", "e2e")):
            arr = recs.column(column)
            if name == "tpot":
                arr = arr[~np.isnan(arr)]
            arr *= 1000.0
            d[f"mean_{name}_ms"] = float(arr.mean()) if len(arr) else 0.0
            median, values = _median_and_percentiles(arr, qs)
            d[f"median_{name}_ms"] = median
            d[f"std_{name}_ms"] = float(arr.std()) if len(arr) else 0.0
            for q, value in zip(qs, values):
                d[f"p{_pword(q)}_{name}_ms"] = value
            del arr
        d.update(self._itl_stats(qs))
        d["max_itl_ms"] = self.max_itl * 1000.0
        d["mean_running"] = self.running_integral / self.busy_time if self.busy_time > 0 else 0.0
        d["max_running"] = self.max_running
        d["peak_kv_usage"] = self.peak_kv_used / self.kv_usable if self.kv_usable else 0.0
        d["num_preemptions"] = self.num_preemptions
        d["padding_share"] = (self.padded_seat_iterations / self.seat_iterations
                              if self.seat_iterations else 0.0)
        d["binding_limit_counts"] = {k: int(self.binding_counts.get(k, 0)) for k in BINDING_LIMITS}
        d["rejected"] = self.rejected
        return d

    def _fold_itl(self) -> None:
        """The gaps and counts held as lists into itl_values and itl_counts, in order."""
        gaps = self._itl_gaps
        if gaps:
            self.itl_values.extend(_packed("d", gaps))
            self.itl_counts.extend(_packed("i", self._itl_weights))
            gaps.clear()
            self._itl_weights.clear()

    def itl(self) -> tuple[array, array]:
        """(itl_values, itl_counts) with every gap booked so far."""
        self._fold_itl()
        return self.itl_values, self.itl_counts

    def _itl_stats(self, qs) -> dict:
        """Mean, median, std and percentiles of the pooled gaps, in ms. The stored gaps are read in
        place and in slices: a million-request run holds millions of them, and copies of the whole
        array would cost more memory than the run itself."""
        out = {"mean_itl_ms": 0.0, "median_itl_ms": 0.0, "std_itl_ms": 0.0, **{f"p{_pword(q)}_itl_ms": 0.0 for q in qs}}
        itl_values, itl_counts = self.itl()
        if not len(itl_values):
            return out
        values = np.frombuffer(itl_values, dtype=np.float64)
        weights = np.frombuffer(itl_counts, dtype=np.int32)
        total = int(weights.sum(dtype=np.int64))
        if not total:
            return out
        step = 1 << 20
        # (einsum, not np.dot: the BLAS dot wakes its threads, which costs more than the sum on
        # a busy machine.)
        mean = sum(float(np.einsum("i,i->", values[i:i + step], weights[i:i + step]))
                   for i in range(0, len(values), step)) / total
        var = sum(float(np.einsum("i,i->", (values[i:i + step] - mean) ** 2, weights[i:i + step]))
                  for i in range(0, len(values), step)) / total
        out["mean_itl_ms"] = mean * 1000.0
        out["std_itl_ms"] = math.sqrt(var) * 1000.0
        asked = sorted(set(qs) | {50})
        for q, value in zip(asked, weighted_percentiles(values, weights, asked)):
            out[f"p{_pword(q)}_itl_ms"] = value * 1000.0
        out["median_itl_ms"] = out["p50_itl_ms"]
        if 50 not in qs:
            del out["p50_itl_ms"]
        # The views must go before the arrays can grow again (set, not deleted: the sums'
        # generators refer to them, and Cython cannot compile deleting those).
        values = weights = None  # type: ignore[assignment]
        return out

    def pool_summary(self, summary: dict | None = None) -> dict[str, dict]:
        """TTFT and TPOT percentiles per pool (chat, batch, ...); a lone pool's are the run's, read
        off `summary` (this collector's `summary` of the same records) when it is given."""
        recs = self.records
        if not len(recs):
            return {}
        codes, names = recs.pool_codes()
        if summary is not None and len(names) == 1:
            return {names[0]: {"completed": len(recs), **{key: summary[key] for key in _POOL_KEYS}}}
        ttft_all, tpot_all = recs.column("ttft") * 1000.0, recs.column("tpot") * 1000.0
        out = {}
        for code, name in sorted(enumerate(names), key=lambda cn: cn[1]):
            mask = codes == code
            figures: dict = {"completed": int(mask.sum())}
            for column, arr in (("ttft", ttft_all[mask]), ("tpot", tpot_all[mask & ~np.isnan(tpot_all)])):
                figures[f"median_{column}_ms"], (figures[f"p99_{column}_ms"],) = _median_and_percentiles(arr, (99,))
            out[name] = figures
        return out

    def view(self, now: float, window_s: float = RATE_WINDOW_S) -> MetricsView:
        """Headline numbers over the recent past, for the live view."""
        recent = self._recent_records()
        lo = now - window_s
        booked = self._recent_iterations()
        if len(booked) == booked.maxlen and booked[0][0] > lo:
            # More iterations ran in the window than the buffer keeps: the rates are over the
            # span it still holds (from the end of its oldest iteration), not the whole window.
            lo = booked[0][0]
        toks = sum(t for (end, t, _) in booked if end > lo)
        done = sum(c for (end, _, c) in booked if end > lo)
        span = min(now - lo, max(now - (self.first_arrival or 0.0), 1e-9))
        ttft = [r.ttft for r in recent]
        tpot = [r.tpot for r in recent if r.tpot is not None]
        e2e = [r.e2e for r in recent]
        return MetricsView(
            output_tokens_per_s=toks / span if span > 0 else 0.0,
            requests_per_s=done / span if span > 0 else 0.0,
            ttft_p50=float(np.median(ttft)) if ttft else 0.0,
            ttft_p99=float(np.percentile(ttft, 99)) if ttft else 0.0,
            tpot_p50=float(np.median(tpot)) if tpot else 0.0,
            tpot_p99=float(np.percentile(tpot, 99)) if tpot else 0.0,
            itl_max=self.max_itl,
            e2e_p50=float(np.median(e2e)) if e2e else 0.0,
            mean_running=self.running_integral / self.busy_time if self.busy_time > 0 else 0.0,
            completed=self.completed,
            padding_share=(self.padded_seat_iterations / self.seat_iterations if self.seat_iterations else 0.0),
            num_preemptions=self.num_preemptions,
            pools=_pool_views(recent),
        )


def _pool_views(records) -> tuple[PoolView, ...]:
    """Percentiles per pool of these records; () when they are all one pool."""
    pools: dict[str, list[RequestRecord]] = {}
    for r in records:
        pools.setdefault(r.pool, []).append(r)
    if len(pools) < 2:
        return ()
    views = []
    for name, recs in sorted(pools.items()):
        ttft = [r.ttft for r in recs]
        tpot = [r.tpot for r in recs if r.tpot is not None]
        views.append(PoolView(
            name, len(recs), float(np.median(ttft)), float(np.percentile(ttft, 99)),
            float(np.median(tpot)) if tpot else 0.0, float(np.percentile(tpot, 99)) if tpot else 0.0))
    return tuple(views)


def _median_and_percentiles(arr: np.ndarray, qs) -> tuple[float, list[float]]:
    """`arr`'s median and `qs` percentiles (0 if empty; the percentiles in one partition, as one call each)."""
    if not len(arr):
        return 0.0, [0.0 for _ in qs]
    return float(np.median(arr)), [float(value) for value in np.percentile(arr, qs)]


def _pword(q: float) -> str:
    """A percentile as vLLM names its key: p99, p99.9."""
    return str(int(q)) if int(q) == q else str(q)


def _peak_concurrency(recs: RecordTable) -> int:
    """The most requests in flight at once, over half-open intervals [arrival, arrival + E2E)
    (a departure comes before an arrival at the same instant), as vllm bench serve counts it."""
    if not len(recs):
        return 0
    starts = recs.column("arrival_time")
    ends = recs.column("e2e")
    ends += starts
    starts.sort()
    ends.sort()
    departed = np.searchsorted(ends, starts, side="right")
    in_flight = np.searchsorted(starts, starts, side="right")
    in_flight -= departed
    return int(in_flight.max())


def _goodput(slo_ms: dict, recs: RecordTable) -> int:
    """Requests meeting every objective in `slo_ms` (a one-token answer's TPOT counts as 0)."""
    good = np.ones(len(recs), dtype=bool)
    for name, column in (("ttft", "ttft"), ("tpot", "tpot"), ("e2el", "e2e")):
        if name in slo_ms:
            values = np.nan_to_num(recs.column(column)) * 1000.0
            good &= values <= slo_ms[name]
    return int(good.sum())
