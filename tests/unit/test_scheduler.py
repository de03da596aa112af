"""vLLM V1 rules the reference cases do not exercise, each worked out by hand."""

import pytest

from sim.config import EngineConfig, vllm_defaults
from sim.errors import ConfigError, RequestRejected
from sim.trace import run_case


def case(reqs, **cfg):
    base = dict(block_size=16, num_blocks=5, max_num_batched_tokens=64, max_num_seqs=4,
                enable_chunked_prefill=True, long_prefill_token_threshold=0, policy="fcfs",
                watermark=0.0, scheduler_reserve_full_isl=True, enable_prefix_caching=False,
                async_scheduling=False, max_model_len=256)
    base.update(cfg)
    return run_case({"config": base, "requests": reqs})


def r(rid, step, prompt, output, priority=0):
    return dict(id=rid, arrival_step=step, prompt_len=prompt, output_len=output, priority=priority)


class TestPriorityPolicy:
    def test_victim_is_lowest_priority_even_when_it_is_the_request_itself(self):
        # A (priority 1) runs first; B (priority 0) joins. When A needs a third block, A is the
        # lowest-priority request: it preempts itself, and B, which ranks higher, goes on in the
        # blocks A freed (vLLM 0.33's scheduler.py: "The requests after it have higher priority and
        # may still fit"; no waiting request is admitted after a preemption).
        t = case([r("A", 1, 30, 10, 1), r("B", 2, 30, 10, 0)], policy="priority")
        assert t["steps"][3]["scheduled_tokens"] == {"B": 1}
        assert t["steps"][3]["preempted"] == ["A"]
        assert t["finish_step"] == {"B": 11, "A": 18}  # (one iteration sooner than if B waited too)
        # FCFS instead evicts the most recently admitted request.
        t = case([r("A", 1, 30, 10, 1), r("B", 2, 30, 10, 0)], policy="fcfs")
        assert t["steps"][3]["preempted"] == ["B"] and t["steps"][3]["scheduled_tokens"] == {"A": 1}

    def test_scheduled_victim_gives_its_tokens_back(self):
        # B (low priority) is scheduled first in iteration 5; A then needs a block: B is evicted
        # after the fact and its token leaves the batch.
        t = case([r("B", 1, 20, 10, 1), r("A", 2, 30, 10, 0)], policy="priority")
        assert t["steps"][4]["scheduled_tokens"] == {"A": 1}
        assert t["steps"][4]["preempted"] == ["B"]
        assert t["num_preemptions"] == {"B": 1, "A": 0}

    def test_waiting_queue_orders_by_priority_then_arrival(self):
        t = case([r("A", 1, 10, 2, 2), r("B", 1, 10, 2, 1), r("C", 1, 10, 2, 1)], policy="priority",
                 max_num_seqs=1, num_blocks=50)
        assert t["steps"][0]["scheduled_tokens"] == {"B": 10}
        assert t["steps"][0]["waiting_end_of_step"] == ["C", "A"]


def test_watermark_keeps_blocks_free_when_admitting_beside_others():
    reqs = [r("A", 1, 100, 2), r("B", 1, 30, 2)]
    # int(0.2 x 11) = 2 blocks must stay free: B needs 2 of the 3 left, so it waits.
    assert case(reqs, num_blocks=11, watermark=0.2, max_num_batched_tokens=256)["steps"][0]["scheduled_tokens"] == {"A": 100}
    assert case(reqs, num_blocks=11, max_num_batched_tokens=256)["steps"][0]["scheduled_tokens"] == {"A": 100, "B": 30}


def test_chunked_prefill_off_stops_admission_at_a_prompt_that_does_not_fit():
    reqs = [r("A", 1, 40, 2), r("B", 1, 40, 2), r("C", 1, 10, 2)]
    off = case(reqs, enable_chunked_prefill=False, max_model_len=64, num_blocks=20)
    assert off["steps"][0]["scheduled_tokens"] == {"A": 40}  # C would fit, but waits behind B
    on = case(reqs, max_model_len=64, num_blocks=20)
    assert on["steps"][0]["scheduled_tokens"] == {"A": 40, "B": 24}


def test_full_prompt_admission_check_against_first_chunk_only():
    reqs = [r("A", 1, 56, 1), r("B", 1, 56, 1)]
    full = case(reqs, max_num_batched_tokens=32, long_prefill_token_threshold=16)
    assert full["steps"][0]["scheduled_tokens"] == {"A": 16}
    first_chunk = case(reqs, max_num_batched_tokens=32, long_prefill_token_threshold=16,
                       scheduler_reserve_full_isl=False)
    assert first_chunk["steps"][0]["scheduled_tokens"] == {"A": 16, "B": 16}
    # Admitting on the first chunk over-commits the cache: the two thrash but both finish.
    assert sum(first_chunk["num_preemptions"].values()) > 0
    assert set(first_chunk["finish_step"]) == {"A", "B"}


def test_long_prefill_threshold_applies_only_when_sharing():
    assert case([r("A", 1, 100, 2)], long_prefill_token_threshold=32, max_num_batched_tokens=256,
                num_blocks=50)["steps"][0]["scheduled_tokens"] == {"A": 100}
    both = case([r("A", 1, 100, 2), r("B", 1, 100, 2)], long_prefill_token_threshold=32,
                max_num_batched_tokens=256, num_blocks=50)
    assert both["steps"][0]["scheduled_tokens"] == {"A": 32, "B": 32}


def test_request_stops_at_max_model_len():
    t = case([r("A", 1, 60, 10)], max_model_len=64, num_blocks=6)
    assert t["finish_step"] == {"A": 4}
    assert t["steps"][-1]["num_output_tokens_end_of_step"] == {"A": 4}


def test_prompt_not_shorter_than_max_model_len_is_rejected():
    with pytest.raises(RequestRejected, match="not shorter than max_model_len"):
        case([r("A", 1, 64, 2)], max_model_len=64, num_blocks=20)


@pytest.mark.parametrize("changes, dial", [
    (dict(max_num_seqs=0), "max_num_seqs"),
    (dict(max_num_batched_tokens=-1), "max_num_batched_tokens"),
    (dict(max_num_seqs=128, max_num_batched_tokens=64), "max_num_batched_tokens"),
    (dict(enable_chunked_prefill=False, max_num_batched_tokens=2048, max_model_len=4096), "max_num_batched_tokens"),
    (dict(long_prefill_token_threshold=5000, max_model_len=4096), "long_prefill_token_threshold"),
    (dict(watermark=1.5), "watermark"),
    (dict(scheduling_policy="lifo"), "scheduling_policy"),
    (dict(batching="magic"), "batching"),
])
def test_config_validation_names_the_dial_value_and_range(changes, dial):
    with pytest.raises(ConfigError) as info:
        EngineConfig(**changes).validate()
    assert info.value.dial == f"engine.{dial}"  # its path in the table of dials
    msg = str(info.value)
    assert f"engine.{dial}" in msg and repr(changes.get(dial, changes.get("max_num_batched_tokens"))) in msg


def test_block_size_must_be_a_power_of_two():
    with pytest.raises(ConfigError, match="block_size = 12"):
        case([r("A", 1, 10, 2)], block_size=12)


def test_vllm_defaults_by_gpu():
    gib = 1024**3
    assert vllm_defaults("h100-sxm", 85.0e9) == {"max_num_seqs": 1024, "max_num_batched_tokens": 8192}
    assert vllm_defaults("h100-sxm", 85.0e9, offline=True)["max_num_batched_tokens"] == 16384
    assert vllm_defaults("a100-80gb", 85.0e9) == {"max_num_seqs": 256, "max_num_batched_tokens": 2048}
    assert vllm_defaults("l40s", 48.3e9, offline=True) == {"max_num_seqs": 256, "max_num_batched_tokens": 8192}
    assert vllm_defaults("b200", 192.0e9) == {"max_num_seqs": 1024, "max_num_batched_tokens": 16384}
    assert vllm_defaults("h200", 150.0e9)["max_num_batched_tokens"] == 8192 and 150.0e9 / gib < 160


class TestAsyncScheduling:
    """vLLM's AsyncScheduler: batch k is scheduled before batch k-1's output is processed. Worked
    out by hand from vLLM 0.33.0's rules (placeholders, the skip of a request whose last token is
    in flight, stale outputs delivered to a request preempted meanwhile)."""

    def test_preempted_while_its_token_is_in_flight_it_still_gets_that_token(self):
        t = case([r("A", 1, 30, 6), r("B", 2, 30, 6)], async_scheduling=True)
        step4 = t["steps"][3]
        # A needs a third block; B, the latest admitted, is preempted in call 4's schedule...
        assert step4["scheduled_tokens"] == {"A": 1} and step4["preempted"] == ["B"]
        # ...and batch 3's output, processed later in the same call, still gives B its token.
        assert step4["num_output_tokens_end_of_step"] == {"A": 3, "B": 2}
        assert step4["num_computed_tokens_end_of_step"]["B"] == 0
        assert step4["waiting_end_of_step"] == ["B"]
        # B resumes once A's finish is processed (call 7) and recomputes prompt + 2 outputs.
        assert t["steps"][7]["scheduled_tokens"] == {"B": 32}
        assert t["finish_step"] == {"A": 6, "B": 11} and t["last_step"] == 12
        assert t["num_preemptions"] == {"A": 0, "B": 1}

    def test_a_stale_last_token_finishes_a_preempted_request(self):
        t = case([r("A", 1, 30, 6), r("B", 2, 30, 2)], async_scheduling=True)
        step4 = t["steps"][3]
        assert step4["preempted"] == ["B"] and step4["finish_processed_in_this_call"] == ["B"]
        assert step4["waiting_end_of_step"] == [] and step4["running_end_of_step"] == ["A"]
        assert t["finish_step"] == {"A": 6, "B": 3} and t["last_step"] == 7

    def test_a_request_whose_last_token_is_in_flight_is_not_scheduled_again(self):
        t = case([r("A", 1, 20, 3)], async_scheduling=True, num_blocks=20)
        assert [s["scheduled_tokens"] for s in t["steps"]] == [{"A": 20}, {"A": 1}, {"A": 1}, {}]
        assert t["finish_step"] == {"A": 3} and t["last_step"] == 4
        sync = case([r("A", 1, 20, 3)], num_blocks=20)
        assert sync["finish_step"] == {"A": 3} and sync["last_step"] == 3

    def test_a_finished_seat_is_reused_one_call_later_than_synchronously(self):
        reqs = [r("A", 1, 20, 3), r("B", 1, 20, 6), r("C", 2, 20, 2)]
        asynchronous = case(reqs, async_scheduling=True, num_blocks=20, max_num_seqs=2)
        synchronous = case(reqs, num_blocks=20, max_num_seqs=2)
        assert synchronous["first_token_step"]["C"] == 4 and asynchronous["first_token_step"]["C"] == 5


class TestVllm033Budgets:
    """vLLM 0.33's scheduler dials (vllm/v1/core/sched/scheduler.py), worked out by hand."""

    def test_max_num_scheduled_tokens_caps_the_iteration_below_the_batched_budget(self):
        reqs = [r("A", 1, 40, 2), r("B", 1, 40, 2)]
        assert case(reqs, num_blocks=20)["steps"][0]["scheduled_tokens"] == {"A": 40, "B": 24}
        assert case(reqs, num_blocks=20, max_num_scheduled_tokens=48)["steps"][0]["scheduled_tokens"] == {
            "A": 40, "B": 8}
        # Above max_num_batched_tokens it changes nothing: both budgets are spent, the lower binds.
        assert case(reqs, num_blocks=20, max_num_scheduled_tokens=4096)["steps"][0]["scheduled_tokens"] == {
            "A": 40, "B": 24}
        assert EngineConfig(max_num_batched_tokens=8192, max_num_scheduled_tokens=512).token_budget == 512
        assert EngineConfig(max_num_batched_tokens=8192, max_num_scheduled_tokens=9000).token_budget == 8192

    def test_max_num_active_seqs_admits_fewer_than_the_seats(self):
        reqs = [r("A", 1, 10, 2), r("B", 1, 10, 2), r("C", 1, 10, 2)]
        assert case(reqs, num_blocks=20)["steps"][0]["scheduled_tokens"] == {"A": 10, "B": 10, "C": 10}
        assert case(reqs, num_blocks=20, max_num_active_seqs=2)["steps"][0]["scheduled_tokens"] == {"A": 10, "B": 10}
        with pytest.raises(ConfigError, match="at most engine.max_num_seqs"):
            EngineConfig(max_num_seqs=4, max_num_active_seqs=5).validate()

    def test_adaptive_long_prefill_cap_is_floored_at_a_fair_share_of_the_budget(self):
        reqs = [r("A", 1, 40, 2), r("B", 1, 40, 2)]
        # Two requests share 64 tokens: the cap of 8 is floored at 64 // 2 = 32.
        assert case(reqs, num_blocks=20, long_prefill_token_threshold=8)["steps"][0]["scheduled_tokens"] == {
            "A": 8, "B": 8}
        assert case(reqs, num_blocks=20, long_prefill_token_threshold=8, long_prefill_token_threshold_adaptive=True
                    )["steps"][0]["scheduled_tokens"] == {"A": 32, "B": 32}

    def test_a_scheduled_token_cap_below_a_whole_prompt_is_refused_without_chunked_prefill(self):
        with pytest.raises(ConfigError, match="max_num_scheduled_tokens"):
            EngineConfig(enable_chunked_prefill=False, max_model_len=4096, max_num_batched_tokens=8192,
                         max_num_scheduled_tokens=1024).validate()


def test_the_priority_queue_removes_requests_that_stopped_while_waiting():
    # (It once iterated its own requests as if they were heap entries: a TypeError, found by
    # tests/unit/test_engine_agrees.py when a multi-turn request stopped while queued.)
    from sim.request import Request
    from sim.schedulers.queues import PriorityQueue

    queue = PriorityQueue()
    a, b, c = (Request(rid, 0.0, 10, 2, priority, seq=seq) for seq, (rid, priority) in
               enumerate([("A", 1), ("B", 0), ("C", 2)]))
    for req in (a, b, c):
        queue.add_request(req)
    queue.remove_requests([a])
    assert list(queue) == [b, c] and queue.pop_request() is b and queue.pop_request() is c
