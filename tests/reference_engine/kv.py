"""The paged KV cache: a pool of fixed-size blocks handed to sequences as they grow."""

from __future__ import annotations

from sim.errors import ConfigError


class BlockPool:
    """Blocks of `block_size` tokens. Block 0 is reserved (vLLM's null block), so a pool of
    `num_blocks` can hand out `num_blocks - 1`."""

    __slots__ = ("num_blocks", "block_size", "usable", "free", "_held")

    def __init__(self, num_blocks: int, block_size: int) -> None:
        if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size <= 0 \
                or block_size & (block_size - 1):
            raise ConfigError("block_size", block_size, "a power of two (16 is vLLM's default)")
        if isinstance(num_blocks, bool) or not isinstance(num_blocks, int) or num_blocks < 2:
            raise ConfigError("num_gpu_blocks", num_blocks, "at least 2 (one is reserved)")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.usable = num_blocks - 1
        self.free = self.usable
        self._held: dict[str, int] = {}

    @property
    def used(self) -> int:
        return self.usable - self.free

    def blocks_for(self, num_tokens: int) -> int:
        return -(-num_tokens // self.block_size)

    def held(self, request_id: str) -> int:
        return self._held.get(request_id, 0)

    def blocks_needed(self, request_id: str, total_tokens: int) -> int:
        """New blocks a sequence needs to hold `total_tokens` tokens."""
        return max(0, self.blocks_for(total_tokens) - self._held.get(request_id, 0))

    def try_allocate(self, request_id: str, total_tokens: int, reserve: int = 0) -> bool:
        """Grow a sequence to hold `total_tokens`; fails (taking nothing) unless `reserve` blocks
        would still be free afterwards."""
        need = -(-total_tokens // self.block_size) - self._held.get(request_id, 0)
        if need <= 0:
            return True
        if need + reserve > self.free:
            return False
        self.free -= need
        self._held[request_id] = self._held.get(request_id, 0) + need
        return True

    def free_request(self, request_id: str) -> int:
        n = self._held.pop(request_id, 0)
        self.free += n
        return n

    def holdings(self) -> dict[str, int]:
        return dict(self._held)
