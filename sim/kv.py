"""The paged KV cache: a pool of fixed-size blocks handed to sequences as they grow, with vLLM's
automatic prefix cache.

Blocks are counted, not named, wherever names change nothing: a block nobody can look up (no
hash) is one of `free` or one of a request's `held`. With prefix caching (`caching`), a full
block gets a hash when its tokens are scheduled, chained with the previous block's, and keeps it
after its holder lets go, free but reusable until it is evicted. Such blocks need identities only
where another request could hit them:

- a block of a request's named tokens (`Request.block_hashes`: a prompt with `prompt_segments`,
  then, if its output has a name — a conversation's answer, which the next turn's prompt repeats —
  its generated tokens) is a `Block` in the index (hash -> blocks with that hash, first cached
  first), shared and reference-counted, as vLLM hashes every full block of a request's tokens;
- any other hashed block (a unique prompt's, or one completed by tokens generated for an output
  no prompt repeats) can only be hit by its own request when it resumes after a preemption: it
  is counted, and once freed it sits in the free queue as part of a `Run` of its owner's blocks.

The free queue is vLLM's `FreeKVCacheBlockQueue`. Freeing walks a request's blocks from the tail:
unhashed blocks go to the front, hashed ones to the back; new blocks are taken from the front,
evicting the hash of a cached block taken. So the queue is always some unhashed blocks (a count:
`free - evictable`) followed by the evictable ones in order (`_queue`), and eviction is LRU by
time of freeing, tail blocks first.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING

from .errors import ConfigError
from .profiles import KvLayout

if TYPE_CHECKING:  # (sim.request imports this module; typed, the compiled core reads its fields directly)
    from .request import Request


class Block:
    """A cached block another request may hit: its hash and how many requests hold it."""

    __slots__ = ("hash", "ref")

    def __init__(self, block_hash: int) -> None:
        self.hash = block_hash
        self.ref = 1


class Run:
    """Freed hashed blocks only their owner can hit: blocks `start` .. `start + count - 1` of
    its sequence. In the free queue the last block comes first, so eviction shortens the run
    from its end. Blocks nobody can hit any more (their owner finished) are runs without an
    owner."""

    __slots__ = ("owner", "start", "count")

    def __init__(self, owner: Request | None, start: int, count: int) -> None:
        self.owner = owner
        self.start = start
        self.count = count


class Hit:
    """What a lookup found (nothing is taken until `admit`)."""

    __slots__ = ("blocks", "own", "evictable", "num_blocks")

    def __init__(self, blocks: list[Block], own: int, evictable: int) -> None:
        self.blocks = blocks
        self.own = own  # blocks of the request's own Run, after `blocks`
        self.evictable = evictable  # of all of them, those in the free queue
        self.num_blocks = len(blocks) + own


NO_HIT = Hit([], 0, 0)


def prompt_block_hashes(segments, block_size: int) -> list[int]:
    """The chained hash of each full block of a prompt given as (name, length) segments: a token
    is its segment's name and its position in it, so equal token blocks (after equal heads) get
    equal hashes. Nothing is materialised token by token."""
    hashes: list[int] = []
    parent = 0
    pieces: list[tuple[str, int, int]] = []
    filled = 0
    for name, length in segments:
        pos = 0
        while pos < length:
            take = min(length - pos, block_size - filled)
            pieces.append((name, pos, pos + take))
            pos += take
            filled += take
            if filled == block_size:
                parent = hash((parent, tuple(pieces)))
                hashes.append(parent)
                pieces = []
                filled = 0
    return hashes


NO_WINDOWS = KvLayout(0)


def blocks_for(tokens: int, block_size: int, window_groups: int = 0, window_blocks: int = 0) -> int:
    """Blocks a request holds for `tokens` tokens: one for each `block_size` tokens begun (vLLM's
    cdiv) in the full-attention group, plus, in each of `window_groups` sliding-window groups, as
    many up to `window_blocks` (`KvLayout`). The one count of it: the pool's (`BlockPool.blocks_for`,
    which `sim.request.check_request` asks of a request's peak) is this."""
    blocks = -(-tokens // block_size)
    if window_groups:
        blocks += window_groups * (blocks if blocks < window_blocks else window_blocks)
    return blocks


class BlockPool:
    """Blocks of `block_size` tokens. Block 0 is reserved (vLLM's null block), so a pool of
    `num_blocks` can hand out `num_blocks - 1`.

    Blocks are handed out one request at a time (`try_allocate`, or `admit` with a prefix-cache
    hit), or in bulk (`take`) for the scheduler's compactly held decoders, which grow by one
    token an iteration: their blocks are counted as used at once and attributed to each request
    later (`settle`). Until then they are `unattributed`, and, without caching,
    `used == sum(holdings) + unattributed` (a shared block is held by each of its holders).

    `free` counts every block in the free queue, evictable cached ones included (vLLM's
    get_num_free_blocks); `evictable` those of them that hold a hash; `cached` every block that
    holds a hash, held or not.

    With sliding-window layers in groups of their own (`layout`, a `KvLayout`), a request holds,
    besides one block per `block_size` tokens, at most `window_blocks` in each window group
    (`blocks_for`); the prefix cache's hashed blocks are those of the full-attention group."""

    __slots__ = ("num_blocks", "block_size", "usable", "free", "unattributed", "_held", "caching",
                 "_evictable", "_cached", "_queue", "_index", "_hashed", "_evicted", "_tail",
                 "layout", "window_groups", "window_blocks")

    def __init__(self, num_blocks: int, block_size: int, caching: bool = False,
                 layout: KvLayout = NO_WINDOWS) -> None:
        if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size <= 0 \
                or block_size & (block_size - 1):
            raise ConfigError("block_size", block_size, "a power of two (16 is vLLM's default)")
        if isinstance(num_blocks, bool) or not isinstance(num_blocks, int) or num_blocks < 2:
            raise ConfigError("num_gpu_blocks", num_blocks, "at least 2 (one is reserved)")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.layout = layout
        self.window_groups = layout.window_groups
        self.window_blocks = layout.window_blocks
        self.usable = num_blocks - 1
        self.free = self.usable
        self.unattributed = 0
        self._held: dict[str, int] = {}
        self.caching = bool(caching)
        self._evictable = 0  # (read `evictable` and `cached`: evictions are counted when read)
        self._cached = 0
        self._queue: OrderedDict = OrderedDict()  # evictable Blocks and Runs, front first
        self._index: dict[int, list[Block]] = {}  # hash -> cached Blocks with it, first cached first
        # Held requests with hashed blocks (caching only), by id. A request's hashed head is
        # pool-owned state on the Request: `kv_shared` Blocks (None: none), then `kv_own`
        # counted ones; the rest of what it holds has no hash yet. A request nobody can share
        # with keeps only a count, so caching costs it a few integer updates.
        self._hashed: dict[str, Request] = {}
        # Blocks at the front of `_queue` already taken (counted out of `evictable` and `cached`)
        # that the queue and the index still list: they are let go of before either is read.
        self._evicted = 0
        self._tail: Run | None = None  # the ownerless Run at the back of `_queue`, if one is

    @property
    def used(self) -> int:
        return self.usable - self.free

    def blocks_for(self, num_tokens: int) -> int:
        """Blocks a request holds for `num_tokens` tokens, its window groups' included (the
        module's `blocks_for`)."""
        return blocks_for(num_tokens, self.block_size, self.window_groups, self.window_blocks)

    @property
    def token_capacity(self) -> int:
        """The most tokens one request can hold in the whole cache."""
        return self.layout.token_capacity(self.usable, self.block_size)

    def steady(self, tokens: int) -> bool:
        """A request of `tokens` computed tokens needs exactly one more block each time its tokens
        pass a multiple of the block size (its window groups hold their most)."""
        return not self.window_groups or tokens > (self.window_blocks - 1) * self.block_size

    def held(self, request_id: str) -> int:
        return self._held.get(request_id, 0)

    def blocks_needed(self, request_id: str, total_tokens: int) -> int:
        """New blocks a sequence needs to hold `total_tokens` tokens."""
        need = self.blocks_for(total_tokens) - self._held.get(request_id, 0)
        return need if need > 0 else 0

    def try_allocate(self, request_id: str, total_tokens: int, reserve: int = 0) -> bool:
        """Grow a sequence to hold `total_tokens`; fails (taking nothing) unless `reserve` blocks
        would still be free afterwards."""
        need = self.blocks_for(total_tokens) - self._held.get(request_id, 0)
        if need <= 0:
            return True
        if need + reserve > self.free:
            return False
        self.free -= need
        self._held[request_id] = self._held.get(request_id, 0) + need
        return True

    def take(self, blocks: int) -> None:
        """Hand out `blocks` free blocks to requests named later with `settle` (the caller has
        checked that they are free)."""
        self.free -= blocks
        self.unattributed += blocks

    def settle(self, request: Request, tokens: int, known: int | None = None) -> None:
        """`request` holds the blocks for `tokens` computed tokens (those scheduled included):
        those beyond what it was known to hold come out of the blocks handed out with `take`.
        With caching its full blocks get their hashes (`cache_blocks`; `known`: as there)."""
        rid = request.request_id
        blocks = self.blocks_for(tokens)
        self.unattributed -= blocks - self._held.get(rid, 0)
        self._held[rid] = blocks
        if self.caching:
            self.cache_blocks(request, tokens, known)

    def free_request(self, request_id: str) -> int:
        """A request lets go of its blocks (finished or preempted); returns how many it held.
        With caching they are walked from the tail: unhashed ones to the front of the free
        queue, hashed ones (a shared one once its last holder lets go) to the back."""
        n = self._held.pop(request_id, 0)
        if not self.caching:
            self.free += n
            return n
        if self._evictable > self.free:
            self._count_evictions()  # (before the free queue grows)
        owner = self._hashed.pop(request_id, None)
        if owner is None:
            self.free += n
            return n
        own = owner.kv_own
        shared = owner.kv_shared
        self.free += n if shared is None else n - len(shared)  # unhashed to the front, own to the back
        if own:
            owner.kv_own = 0
            self._evictable += own
            if owner.status == "finished":
                # Nobody can hit them any more: they only keep their place in the queue, so they
                # join an ownerless run at its back if there is one.
                tail = self._tail
                if tail is None:
                    tail = self._tail = Run(None, 0, own)
                    self._queue[tail] = None
                else:
                    tail.count += own
            else:
                self._tail = None
                run = owner.kv_run = Run(owner, len(shared) if shared else 0, own)
                self._queue[run] = None
        if shared is not None:
            owner.kv_shared = None
            queue = self._queue
            for block in reversed(shared):
                block.ref -= 1
                if block.ref == 0:
                    queue[block] = None
                    self._tail = None
                    self.free += 1
                    self._evictable += 1
        return n

    def holdings(self) -> dict[str, int]:
        return dict(self._held)

    # -- the prefix cache
    def find_cached(self, request: Request) -> Hit:
        """The longest run of cached full blocks from the start of `request`'s tokens, capped so
        that its last token is computed (vLLM's get_computed_blocks); nothing is taken."""
        if not self.caching or (request.kv_run is None and not request.named):
            return NO_HIT  # (nothing it could hit)
        self._count_evictions()
        if self._evicted:
            self._drop_evicted()
        cap = (request.num_tokens - 1) // self.block_size
        blocks: list[Block] = []
        evictable = 0
        hashes = request.block_hashes(self.block_size) if request.named else ()
        index = self._index
        for h in hashes[:cap]:
            found = index.get(h)
            if not found:
                break
            block = found[0]
            blocks.append(block)
            if block.ref == 0:
                evictable += 1
        own = 0
        run = request.kv_run
        if run is not None and len(blocks) == len(hashes) and run.start == len(blocks):
            own = min(run.count, cap - len(blocks))
            evictable += own
        if not blocks and not own:
            return NO_HIT
        return Hit(blocks, own, evictable)

    def admit(self, request: Request, hit: Hit, total_tokens: int, reserve: int = 0) -> bool:
        """A waiting request takes its cache hit and grows to `total_tokens` (hit included);
        fails, taking nothing, unless `reserve` blocks would still be free afterwards (the hit
        blocks that are evictable leave the free queue too)."""
        rid = request.request_id
        self._count_evictions()
        if self._evicted:
            self._drop_evicted()
        hit_blocks = hit.num_blocks
        need = self.blocks_for(total_tokens) - hit_blocks - self._held.get(rid, 0)
        if need < 0:
            need = 0
        if need + hit.evictable + reserve > self.free:
            return False
        self._hashed[rid] = request
        queue = self._queue
        for block in hit.blocks:
            if block.ref == 0:
                del queue[block]
            block.ref += 1
        if hit.blocks:
            if request.kv_shared is None:
                request.kv_shared = []
            request.kv_shared.extend(hit.blocks)
        if hit.own:
            run = request.kv_run
            assert run is not None  # (find_cached gives `own` only from the request's own Run)
            if hit.own == run.count:
                del queue[run]
            else:  # the rest of the run stays, as blocks nobody can hit any more
                run.start += hit.own
                run.count -= hit.own
            request.kv_run = None
            request.kv_own += hit.own
        self.free -= hit.evictable
        self._evictable -= hit.evictable
        self._held[rid] = self._held.get(rid, 0) + hit_blocks
        return self.try_allocate(rid, total_tokens)

    def cache_blocks(self, request: Request, tokens: int, known: int | None = None) -> None:
        """The request's first `tokens` tokens are scheduled: its full blocks among those known
        get their hashes (vLLM's cache_blocks; with async scheduling tokens in flight are not
        known yet, so their block is hashed a call later). A block of its named tokens
        (`Request.block_hashes`: its prompt's segments, then a named output's) joins the index,
        where another request may hit it; a second block with a hash already cached is kept
        beside the first. The others only their owner can hit: they are counted (`kv_own`).
        `known`: the tokens known when they were scheduled, if fewer than known now (a decoder
        held compactly under async scheduling is hashed late, as its last schedule would have)."""
        if known is None:
            known = request.prompt_len + request.num_output_tokens
        full = (tokens if tokens < known else known) // self.block_size
        own = request.kv_own
        shared = request.kv_shared
        done = own + len(shared) if shared else own
        if full <= done:
            return
        if not done:
            self._hashed[request.request_id] = request
        self._cached += full - done
        if not own and request.named:
            hashes = request.block_hashes(self.block_size)
            if shared is None:
                shared = request.kv_shared = []
            index = self._index
            while done < full and done < len(hashes):
                block = Block(hashes[done])
                shared.append(block)
                found = index.get(block.hash)
                if found is None:
                    index[block.hash] = [block]
                else:
                    found.append(block)
                done += 1
        request.kv_own = own + full - done

    @property
    def evictable(self) -> int:
        self._count_evictions()
        return self._evictable

    @property
    def cached(self) -> int:
        self._count_evictions()
        return self._cached

    def _count_evictions(self) -> None:
        """Blocks are taken from the front of the free queue: once the unhashed ones are gone,
        each one taken was an evictable block and lost its hash. They are counted here, when
        the free queue is next read or grows (taking blocks costs the same with caching as
        without), and let go of by the queue and the index when those are next read
        (`_drop_evicted`)."""
        over = self._evictable - self.free
        if over > 0:
            self._evictable -= over
            self._cached -= over
            self._evicted += over

    def _drop_evicted(self) -> None:
        """The queue and the index let go of the blocks counted as evicted, front first."""
        queue = self._queue
        index = self._index
        count = self._evicted
        self._evicted = 0
        while count:
            entry = next(iter(queue))
            if type(entry) is Block:
                del queue[entry]
                found = index[entry.hash]
                if len(found) == 1:
                    del index[entry.hash]
                else:
                    found.remove(entry)
                count -= 1
            else:
                k = min(count, entry.count)
                entry.count -= k
                count -= k
                if not entry.count:
                    del queue[entry]
                    if entry is self._tail:
                        self._tail = None
                    if entry.owner is not None and entry.owner.kv_run is entry:
                        entry.owner.kv_run = None

    def check(self) -> None:
        """Assert the pool's invariants (for tests): counts add up, references are positive
        exactly for held blocks, a free block is never referenced."""
        self._count_evictions()
        if self._evicted:
            self._drop_evicted()
        assert 0 <= self.evictable <= self.free <= self.usable, (self.evictable, self.free)
        queued = 0
        for entry in self._queue:
            if type(entry) is Block:
                assert entry.ref == 0, "a block in the free queue is referenced"
                assert any(b is entry for b in self._index.get(entry.hash, ())), "an evictable block lost its hash"
                queued += 1
            else:
                assert entry.count > 0
                queued += entry.count
        assert queued == self.evictable, (queued, self.evictable)
        if self._tail is not None:
            assert self._tail.owner is None and next(reversed(self._queue)) is self._tail, "the tail run is not last"
        refs: dict[int, int] = {}
        held_hashed = 0
        for rid, holder in self._hashed.items():
            shared = holder.kv_shared or ()
            assert holder.request_id == rid and 0 < len(shared) + holder.kv_own <= self._held.get(rid, 0), rid
            held_hashed += holder.kv_own
            for block in shared:
                refs[id(block)] = refs.get(id(block), 0) + 1
        blocks = {id(b): b for found in self._index.values() for b in found}
        for key, block in blocks.items():
            assert block.ref >= 0, "a negative reference count"
            assert block.ref == refs.get(key, 0), "a reference count differs from its holders"
        held_hashed += sum(1 for b in blocks.values() if b.ref > 0)
        assert self.cached == held_hashed + self.evictable, (self.cached, held_hashed, self.evictable)
        # Conservation: the blocks in use are those held, a shared one once, and those taken for
        # decoders not yet attributed.
        distinct = sum(self._held.values()) - sum(b.ref - 1 for b in blocks.values() if b.ref > 1)
        assert distinct + self.unattributed == self.usable - self.free, (distinct, self.unattributed, self.free)
        if not self.caching:
            assert not self._queue and not self._index
