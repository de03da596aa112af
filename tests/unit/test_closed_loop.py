"""The closed loop without a GPU (benchmarks/closed_loop.py): `batchtui serve` runs a GPU the test
does not tell batchtui (other efficiencies and host costs), `batchtui bench` runs the manual's
calibration recipe against it (each line's requests cut to 6 %, at time scale 1: what a time scale
does to the client's figures is in the module's doc), `batchtui calibrate` fits, and the profile it
writes predicts a held-out rate of the served engine within 15 % on TTFT p50, TPOT p50 and output
throughput. `pytest -m thorough` runs the recipe whole (at time scale 2, on a quiet machine), with
two held-out runs. A TTFT miss that the client's own delays account for (they changed between
the recipe and the held-out run: the machine's load did) skips the test, saying so; so does a
weight-read efficiency moved by the machine's delays on TTFT (the same runs with the served
engine's own TTFTs, from `batchtui bench`'s simulated column on the served GPU, fit the truth)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import closed_loop

pytestmark = pytest.mark.wall_clock("servers")


def check(loop: closed_loop.Loop, time_scale: float) -> None:
    # Every run of the recipe was measured by batchtui bench and kept.
    script, _ = closed_loop.recipe()
    assert len(loop.results) == len(closed_loop.sent_lines(script, loop.directory)) == 8
    for path in loop.results:
        data = json.loads(open(path, encoding="utf-8").read())
        assert data["backend"] == "openai" and data["batchtui"]["time_scale"] == time_scale and data["failed"] == 0
    # The fit found the served GPU's weight reads (it is not told them). (Its tensor cores take the
    # client's share of every TTFT for prefill: how much depends on the machine's load.)
    late = []
    truth = closed_loop.TRUTH["eta_bw"]
    if loop.fit.values["eta_bw"] != pytest.approx(truth, rel=0.1):
        # On a busy machine the delays of the client and of the server on the wall clock lengthen
        # TTFT by up to a fifth, unevenly from run to run, and the fit can settle in another
        # minimum, a fixed host cost of ~7 ms with faster weight reads and slower KV reads, that
        # gives the same TPOTs and throughputs (eta_bw 0.87 at a load average of 10). The machine
        # is what missed only if the same runs, with TTFT as the served engine gave the traffic
        # sent (the result files' simulated column on the served GPU), fit the truth, and the
        # other figures the fit reads are the served engine's (the measurement is sound).
        moved = loop.moved()
        free = loop.machine_free_fit().values["eta_bw"]
        assert free == pytest.approx(truth, rel=0.1), (free, loop.fit_output)
        assert all(abs(e) <= 0.1 for (_, metric), e in moved.items() if metric != "median_ttft_ms"), moved
        worst = max((key for key in moved if key[1] == "median_ttft_ms"), key=lambda key: abs(moved[key]))
        late.append(f"the fit's eta_bw came out {loop.fit.values['eta_bw']:.2f} against {truth:g}: the machine moved "
                    f"TTFT p50 up to {moved[worst]:+.0%} from the served engine's ({worst[0]}; the client added "
                    f"{loop.added[worst[0]] * 1000:.1f} ms to its mean), and with the served engine's TTFTs the same "
                    f"runs fit {free:.2f}")
    errors = loop.errors
    assert len(errors) == 3 * len(loop.runs) and loop.runs
    for (name, metric), error in errors.items():
        if abs(error) > 0.15 and metric == "median_ttft_ms":
            # The client's own delays are in every TTFT it measures, and the fit took the recipe's
            # for slower prefill: when they changed between the recipe and this run (the machine's
            # load did), by enough to account for the miss, the machine is what missed.
            run = next(r for r in loop.runs if Path(r["file"]).stem == name)
            measured, simulated = run["measured"][metric] / 1000, run["simulated"][metric] / 1000
            drift = loop.added[name] - loop.added["recipe"]
            if abs(simulated / (measured - drift) - 1) <= 0.15:
                late.append(f"{name}: TTFT p50 {error:+.1%}, and the client added {loop.added[name] * 1000:.1f} ms "
                            f"to the engine's mean TTFT against {loop.added['recipe'] * 1000:.1f} ms in the recipe's runs")
                continue
        assert abs(error) <= 0.15, (name, metric, error, loop.added, loop.fit_output)
    if late:
        pytest.skip("the machine could not keep pace: " + "; ".join(late))


def test_bench_calibrate_and_predict_a_held_out_rate_of_the_served_engine(tmp_path):
    check(closed_loop.run(tmp_path, time_scale=1.0, short=True, jobs=1), 1.0)


@pytest.mark.thorough
def test_the_recipe_whole(tmp_path):
    check(closed_loop.run(tmp_path, time_scale=2.0, short=False, jobs=2), 2.0)
