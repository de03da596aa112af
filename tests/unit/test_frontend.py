"""The API server in front of the engine (sim/frontend.py, issue 36): a serial server whose jobs
are each request's own work and tokenizing, and each iteration's tokens streamed; what a client
sees is what it delivers. Checked on headless runs against the costs it is given."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from sim.client import build_factors
from sim.engine import Engine, run_scenario
from sim.frontend import TRANSIT_S
from sim.scenario import Scenario
from sim.workload import LengthSpec, RequestSpec, WorkloadSpec


def _profile(tmp_path, request_s: float, prompt_token_s: float, output_token_s: float) -> str:
    path = tmp_path / "front.toml"
    path.write_text(f"[gpus.h100-sxm]\nfrontend_request_s = {request_s!r}\nfrontend_prompt_token_s = {prompt_token_s!r}\n"
                    f"frontend_output_token_s = {output_token_s!r}\n", encoding="utf-8")
    return str(path)


def _wave(n: int, prompt: int = 512, output: int = 128, **kw) -> Scenario:
    return Scenario(workload=WorkloadSpec(arrival="all-at-once", request_rate=math.inf, num_prompts=n,
                                          input=LengthSpec("fixed", prompt), output=LengthSpec("fixed", output)), **kw)


def test_a_request_alone_waits_for_the_servers_work_and_its_prefill():
    """TTFT alone is the API server's job on the request (its own work, its prompt tokenized),
    the request's transit to the engine core, the prefill, and the first token streamed; E2E ends
    when the last token is streamed."""
    sc = _wave(1)
    d = sc.deployment()
    engine = Engine(sc)
    prefill = engine.step()
    (rec,) = engine.run().records
    arrives = d.frontend_request_s + d.frontend_prompt_token_s * 512 + TRANSIT_S
    assert prefill.start_time == pytest.approx(arrives, rel=1e-12)
    assert rec.ttft == pytest.approx(arrives + prefill.duration + d.frontend_output_token_s, rel=1e-9)
    assert rec.ttft * 1e3 == pytest.approx(18.5, abs=0.05)  # (docs/vllm-flags.md, The API server)
    alone = run_scenario(_wave(1, engine={"api_server_count": 0})).records[0]
    assert rec.ttft - alone.ttft == pytest.approx(arrives + d.frontend_output_token_s, rel=1e-6)
    assert rec.tpot == pytest.approx(alone.tpot, rel=1e-9)  # the same delay on every token


def test_a_wave_reaches_the_engine_spread_over_the_servers_time():
    """Sixteen requests sent at once: without an API server all are prefilled in the first
    iteration; through one, they reach the engine a tokenizing apart, and the first is prefilled
    alone."""
    direct = Engine(_wave(16, engine={"api_server_count": 0}))
    assert len(direct.step().admitted) == 16
    served = Engine(_wave(16))
    first = served.step()
    assert first.admitted == ("0",)
    d = served.deployment
    assert first.start_time == pytest.approx(d.frontend_request_s + d.frontend_prompt_token_s * 512 + TRANSIT_S,
                                             rel=1e-12)
    ttfts = sorted(r.ttft for r in served.run().records)
    assert ttfts[0] < ttfts[-1]


def test_the_transit_delays_the_engine_not_the_servers_turns():
    """A wave of sixteen: each request reaches the engine core TRANSIT_S after the API server has
    done its job on it, yet the server takes the next request at once (the transit is not its
    turn): the requests stay a job apart, in the order they were sent."""
    import numpy as np

    from sim.arrivals import Arrivals
    from sim.frontend import Frontend, FrontendCosts

    def reached(transit: float) -> list[float]:
        arrivals = Arrivals(_wave(16).workload, np.random.default_rng(0))
        front = Frontend(arrivals, FrontendCosts(request_s=5e-4, transit_s=transit))
        front.advance(0.0)
        times = []
        while front.next_at < math.inf:
            times.append(front.next_at)
            front.pop_due(front.next_at)
        return times

    plain, late = reached(0.0), reached(TRANSIT_S)
    assert plain == pytest.approx([5e-4 * (i + 1) for i in range(16)], rel=1e-9)
    assert late == pytest.approx([t + TRANSIT_S for t in plain], rel=1e-9)


def test_a_busy_server_caps_the_tokens_its_clients_see_and_more_servers_lift_it(tmp_path):
    """With 400 us of work a token, one API server streams at most 2,500 tokens/s whatever the
    engine makes: every client's gap between tokens is the batch's share of that. Two servers
    take half the tokens each."""
    profile = _profile(tmp_path, 0.0, 0.0, 4e-4)
    one = run_scenario(_wave(64, prompt=64, output=200, profiles_path=profile)).metrics
    two = run_scenario(_wave(64, prompt=64, output=200, profiles_path=profile, engine={"api_server_count": 2})).metrics
    engine_only = run_scenario(_wave(64, prompt=64, output=200, engine={"api_server_count": 0})).metrics
    assert one["output_throughput"] == pytest.approx(2500, rel=0.05)
    assert one["median_itl_ms"] == pytest.approx(64 * 0.4, rel=0.01)
    assert two["output_throughput"] == pytest.approx(5000, rel=0.05)
    assert two["median_itl_ms"] == pytest.approx(32 * 0.4, rel=0.01)
    assert engine_only["output_throughput"] > 1.2 * two["output_throughput"]


def test_the_ceiling_is_the_request_rate_a_busy_server_streams(tmp_path):
    """`RunSummary.api_server_ceiling`: requests/s the servers sustain, each busy all the time,
    at the run's lengths (1 / (request_s + output_token_s x tokens a request) on one server,
    twice that on two; the tokenizer thread when it is the slower); a wave the server binds
    completes at it, and a run with no server in front has none."""
    profile = _profile(tmp_path, 2e-3, 1e-6, 4e-4)
    one = run_scenario(_wave(64, prompt=64, output=200, profiles_path=profile))
    assert one.api_server_ceiling == pytest.approx(1 / (2e-3 + 200 * 4e-4), rel=1e-12)
    assert one.metrics["request_throughput"] == pytest.approx(one.api_server_ceiling, rel=0.05)
    two = run_scenario(_wave(64, prompt=64, output=200, profiles_path=profile, engine={"api_server_count": 2}))
    assert two.api_server_ceiling == pytest.approx(2 * one.api_server_ceiling, rel=1e-12)
    tokenizing = run_scenario(_wave(8, prompt=4000, output=2, profiles_path=_profile(tmp_path, 1e-4, 1e-5, 0.0)))
    assert tokenizing.api_server_ceiling == pytest.approx(1 / (4000 * 1e-5), rel=1e-12)
    assert run_scenario(_wave(8, engine={"api_server_count": 0})).api_server_ceiling == math.inf


def test_tokenizing_a_long_prompt_does_not_stall_the_streams():
    """The tokenizer has a thread of its own: a 100,000-token prompt takes it 200 ms, during which
    the event loop keeps streaming the running requests' tokens. Their worst gap is the one the
    long prompt's prefill makes in the engine, as without an API server, not 200 ms more."""

    def worst_gap(servers: int) -> tuple[float, float]:
        sc = Scenario(engine={"api_server_count": servers},
                      workload=WorkloadSpec(arrival="all-at-once", request_rate=math.inf, num_prompts=4,
                                            input=LengthSpec("fixed", 64), output=LengthSpec("fixed", 200)))
        engine = Engine(sc)
        engine.run(until_time=0.3)
        engine.submit(RequestSpec("long", engine.time, 100_000, 2))
        engine.run()
        long = next(r for r in engine.metrics.records if r.request_id == "long")
        return max(r.max_itl for r in engine.metrics.records if r.request_id != "long"), long.ttft

    served, long_ttft = worst_gap(1)
    direct, direct_ttft = worst_gap(0)
    assert long_ttft > direct_ttft + 0.19  # its tokenizing (2 us a token) delays its own first token
    assert served < direct + 0.005


def test_no_api_server_is_zero_costs_and_the_other_policies_have_none(tmp_path):
    """An API server whose work costs nothing still hands its requests on to the engine core (the
    transit is not a cost of the profile's): a wave then runs as with no API server, every request
    TRANSIT_S later, so each TTFT and E2E is TRANSIT_S longer and the rest the same."""
    zero = _profile(tmp_path, 0.0, 0.0, 0.0)
    wave = _wave(8, output=20)
    direct = run_scenario(wave.with_engine(api_server_count=0)).records
    served = run_scenario(Scenario(profiles_path=zero, workload=wave.workload)).records
    assert [r.request_id for r in served] == [r.request_id for r in direct]
    for a, b in zip(direct, served):
        assert b.ttft == pytest.approx(a.ttft + TRANSIT_S, rel=1e-9)
        assert b.e2e == pytest.approx(a.e2e + TRANSIT_S, rel=1e-9)
        assert (b.tpot, b.max_itl, b.output_len) == pytest.approx((a.tpot, a.max_itl, a.output_len), rel=1e-9)
    for batching in ("sequential", "static"):
        sc = wave.with_engine(batching=batching)
        assert run_scenario(sc).metrics == run_scenario(sc.with_engine(api_server_count=0)).metrics


def test_a_submitted_request_goes_through_the_server_and_is_refused_at_once():
    """A request handed to the engine by hand passes the API server too; one vLLM refuses is
    refused when submitted (the server checks it as it comes in), and so is an id a request on its
    way still holds."""
    sc = Scenario(engine={"max_model_len": 4096}, workload=WorkloadSpec(arrival="all-at-once", num_prompts=0))
    engine = Engine(sc)
    engine.submit(RequestSpec("a", 0.0, 512, 4))
    assert "a" not in engine.requests  # on its way
    with pytest.raises(Exception, match="already used"):
        engine.submit(RequestSpec("a", 0.0, 512, 4))
    with pytest.raises(Exception, match="max_model_len"):
        engine.submit(RequestSpec("b", 0.0, 5000, 4))
    engine.run()
    (rec,) = engine.metrics.records
    d = engine.deployment
    assert rec.ttft > d.frontend_request_s + d.frontend_prompt_token_s * 512


def _client(n: int, request_s: float, token_s: float, **kw) -> Scenario:
    sc = _wave(n, **kw)
    return replace(sc, workload=replace(sc.workload, client_request_s=request_s, client_token_s=token_s))


def test_a_client_with_work_of_its_own_is_one_core_its_threads_share():
    """A client that spends 2 ms on a request before it leaves (on average: each build's own time
    drawn around it, sim/client.py's BUILD_SPREAD) and 0.4 ms on each token it reads: alone, a
    request's TTFT is its build and its first token's 0.4 ms more, its TPOT unchanged (the client
    keeps up with 6 ms iterations); 64 streams read by its threads on one core at most 1 / 0.4 ms =
    2,500 tokens/s, each stream's TPOT the 64 streams' reads, 25.6 ms."""
    free = run_scenario(_wave(1)).records[0]
    sc = _client(1, 0.002, 4e-4)
    busy = run_scenario(sc).records[0]
    assert busy.ttft - free.ttft == pytest.approx(0.002 * next(build_factors(sc.seed)) + 4e-4, rel=1e-6)
    assert busy.tpot == pytest.approx(free.tpot, rel=1e-9)
    many = run_scenario(_client(64, 0.0, 4e-4, prompt=64, output=200)).metrics
    assert many["output_throughput"] == pytest.approx(2500, rel=0.05)
    assert many["median_tpot_ms"] == pytest.approx(64 * 0.4, rel=0.02)
    assert run_scenario(_wave(64, prompt=64, output=200)).metrics["output_throughput"] > 3 * 2500


def test_a_client_of_threads_reads_a_new_first_token_after_a_turn_of_the_others():
    """Issue 36: InferenceBench's 16 LiteLLM threads (2.5 ms to build a request, 0.57 ms to read a
    chunk, sim/client.py) read slower than the engine streams, so each stream's chunks queue. A
    new request's first chunk is read after a turn of the other threads (2 chunks each), not after
    every chunk queued before it (first come first served: over 100 ms at these figures): TTFT
    stays within two rounds of turns of the free client's, and the waves stagger, p50 under
    0.8 x p99; each stream's TPOT is the 16 threads' reads, 16 x 0.57 ms."""
    def capped(token_s: float) -> Scenario:
        sc = _client(160, 0.0025, token_s, prompt=47, output=128)
        return replace(sc, workload=replace(sc.workload, max_concurrency=16))

    threads = run_scenario(capped(5.7e-4)).metrics
    free = run_scenario(capped(0.0)).metrics
    assert threads["median_ttft_ms"] < 0.8 * threads["p99_ttft_ms"]
    assert threads["median_ttft_ms"] - free["median_ttft_ms"] < 2 * 16 * 2 * 0.57
    assert threads["median_tpot_ms"] == pytest.approx(16 * 0.57, rel=0.02)


def test_a_capped_client_sends_its_next_request_once_it_has_read_the_last_answer():
    """One request at a time: each is sent when the client has parsed the last token of the one
    before (its E2E), and reaches the engine its build later (2 ms on average, each its own)."""
    sc = _client(3, 0.002, 4e-4, output=20)
    sc = replace(sc, workload=replace(sc.workload, max_concurrency=1))
    engine = Engine(sc)
    engine.run()
    recs = sorted(engine.metrics.records, key=lambda r: r.arrival_time)
    for before, after in zip(recs, recs[1:]):
        assert after.arrival_time == pytest.approx(before.arrival_time + before.e2e, rel=1e-9)
    # the same path each time but for the builds' own times
    f = build_factors(sc.seed)
    first, second = next(f), next(f)
    assert recs[1].ttft - recs[0].ttft == pytest.approx(0.002 * (second - first), abs=1e-9)
    assert second != first


def test_a_client_costing_nothing_is_no_client():
    assert run_scenario(_client(8, 0.0, 0.0, output=20)).metrics == run_scenario(_wave(8, output=20)).metrics
    with pytest.raises(Exception, match="client_token_s"):
        _client(1, 0.0, -1.0).workload.validate()


def test_a_capped_fixed_length_replay_staggers_through_the_api_server():
    """Issue 36's reproduction (`sim --input-len 512 --output-len 128 --max-concurrency 16
    --num-prompts 320 --request-rate inf`): through the API server a wave's requests reach the
    engine a request's work apart, its answers reach the clients apart, and the waves come back
    in groups: TTFT p50 131 ms, p99 206 ms, p50 under 0.8 x p99 (docs/vllm-flags.md, The API
    server). The engine alone (`--api-server-count 0`, as before the frontend was modelled)
    replays in lockstep: every TTFT 197 ms."""
    def capped(**kw) -> Scenario:
        sc = _wave(320, **kw)
        return replace(sc, workload=replace(sc.workload, max_concurrency=16))

    served = run_scenario(capped()).metrics
    assert served["median_ttft_ms"] < 0.8 * served["p99_ttft_ms"]
    assert served["median_ttft_ms"] == pytest.approx(131, abs=0.5)
    assert served["p99_ttft_ms"] == pytest.approx(206, abs=0.5)
    alone = run_scenario(capped(engine={"api_server_count": 0})).metrics
    assert alone["median_ttft_ms"] == pytest.approx(alone["p99_ttft_ms"], rel=1e-9)
    assert alone["median_ttft_ms"] == pytest.approx(197, abs=0.5)


@pytest.mark.parametrize("servers", [1, 2])
@pytest.mark.parametrize("step_s", [0.006, 1e-4])
def test_output_jobs_in_bulk_are_the_jobs_one_at_a_time(servers, step_s):
    """`outputs` (a stretch's iterations: a list of ends, or an array for a long one) gives the
    numbers `output` gives one iteration at a time, to the float: when each iteration's tokens
    reach their clients, the gaps between them, and the servers' state after (the next job's
    time). Stretches among arrivals (requests sent while they run) and past them, iterations
    quicker than the servers' work (`step_s` 0.1 ms: the servers are busy) and slower."""
    import numpy as np

    from sim.arrivals import Arrivals
    from sim.frontend import Frontend, FrontendCosts

    workload = WorkloadSpec(request_rate=50.0, num_prompts=40)
    costs = FrontendCosts(request_s=5e-4, prompt_token_s=1e-6, output_token_s=2e-5, servers=servers,
                          transit_s=TRANSIT_S)
    for start, count in ((0.0, 5), (0.05, 40), (0.3, 200), (2.0, 30)):
        ends = [start + step_s * (j + 1) for j in range(count)]
        fronts = [Frontend(Arrivals(workload, np.random.default_rng(0)), costs) for _ in range(3)]
        for front in fronts:
            front.output(start, 7)  # (a job before: the first gap starts at it)
        one = fronts[0]
        before = one.last_seen
        seen = [one.output(e, 7) for e in ends]
        gaps = [b - a for a, b in zip([before, *seen], seen)]
        listed = fronts[1].outputs(ends, 7)
        arrayed = fronts[2].outputs(np.array(ends), 7)
        assert listed == (seen, gaps)
        assert arrayed[0].tolist() == seen and arrayed[1].tolist() == gaps
        nxt = ends[-1] + 1e-3
        assert one.output(nxt, 3) == fronts[1].output(nxt, 3) == fronts[2].output(nxt, 3)
        assert one.streamed == fronts[1].streamed == fronts[2].streamed
        assert one.taken == fronts[1].taken == fronts[2].taken
