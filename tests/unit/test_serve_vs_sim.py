"""`batchtui serve` loaded at 4, 16 and 40 requests/s (512/256 random prompts, Poisson arrivals as
sim draws them) by a client that streams raw server-sent events with aiohttp, against
`batchtui sim` replaying what the server recorded (`--record`: the same arrivals and lengths):
TTFT and TPOT p50 within 5 %, p99 within 10 %, output throughput within 3 % (issue 26).

Where wall-clock jitter enters, and what keeps it out: the engine's simulated clock never moves
with the wall clock's (an iteration starts where the last one ended, whenever the loop wakes),
so the server's engine makes exactly the decisions the simulator makes on the recorded arrivals;
what jitter still adds is the client's own overhead on each TTFT (sending, the server process
waking, the client reading: milliseconds on a busy machine). The time scale is slow enough
(1/8: a simulated millisecond lasts 8 real ones) that this stays within the tolerance, and
`--stream-interval 16` keeps the writes, and so the CPU a busy machine has to spare, few. The
three rates run side by side (each its own server and client) to keep the test's wall time near
one run's. BATCHTUI_SERVE_TEST_SCALE sets another time scale.
"""

from __future__ import annotations

import os
import threading

import pytest

pytest.importorskip("aiohttp")

from benchmarks import serve_benchmark as bench  # noqa: E402

SCALE = float(os.environ.get("BATCHTUI_SERVE_TEST_SCALE", "0.125"))
RUNS = ((4.0, 32), (16.0, 64), (40.0, 128))  # (requests/s, requests)
# The three rates share one module fixture (three servers side by side): one worker runs them,
# first, so the minute they wait on the wall clock overlaps the CPU-bound tests (tests/conftest.py).
# Real clients against a served engine on the wall clock: their percentiles hold within the
# tolerances on a quiet machine only (p99 TTFT 66 % off with three other test workers busy, at load
# 3), so this runs with the thorough tests (BATCHTUI_THOROUGH=1 .ci/run), not as a gate of every
# run; tests/unit/test_serve.py checks the endpoints themselves in every run.
pytestmark = [pytest.mark.xdist_group("serve_vs_sim"), pytest.mark.wall_clock("servers"), pytest.mark.thorough]
TOLERANCE = {"median_ttft_ms": 0.05, "p99_ttft_ms": 0.10, "median_tpot_ms": 0.05, "p99_tpot_ms": 0.10,
             "output_throughput": 0.03}


@pytest.fixture(scope="module")
def runs():
    results: dict[float, tuple] = {}
    errors = []

    def one(rate: float, n: int) -> None:
        try:
            results[rate] = bench.compare(rate, n, SCALE, 512, 256, stream_interval=16, seed=int(rate))
        except Exception as exc:  # reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=one, args=run) for run in RUNS]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


@pytest.mark.parametrize("rate", [rate for rate, _ in RUNS])
def test_client_figures_match_the_simulator(runs, rate):
    client, sim = runs[rate]
    n = dict(RUNS)[rate]
    assert client["completed"] == n and client["total_output_tokens"] == n * 256
    assert sim["completed"] == n
    table = bench.table([(rate, client, sim)])
    for key, tolerance in TOLERANCE.items():
        assert abs(client[key] - sim[key]) <= tolerance * sim[key], f"{key}\n{table}\nload {os.getloadavg()}"
