"""The host's cost per sequence (`overhead_per_seq_s`): one rule, every pricing path, 50 us by default
(sourced in sim/data/profiles.toml), hidden behind the forward pass by async scheduling."""

from __future__ import annotations

import numpy as np
import pytest

from sim.cost import CostModel
from sim.engine import Engine
from sim.profiles import load_profiles
from sim.scenario import Scenario
from sim.workload import LengthSpec, WorkloadSpec

PER_SEQ = 30e-6


@pytest.fixture(scope="module")
def profiles(tmp_path_factory):
    path = tmp_path_factory.mktemp("host") / "host.toml"
    path.write_text(f"[gpus.h100-sxm]\noverhead_per_seq_s = {PER_SEQ}\n", encoding="utf-8")
    return load_profiles(path)


@pytest.fixture(scope="module")
def zero(tmp_path_factory):
    """The built-in profiles without a host cost per sequence."""
    path = tmp_path_factory.mktemp("host") / "zero.toml"
    path.write_text("[gpus.h100-sxm]\noverhead_per_seq_s = 0.0\n", encoding="utf-8")
    return load_profiles(path)


def test_the_default_is_50_us_and_a_lone_request_hides_it():
    """The lesson's lone request decodes at the GPU's 6.02 ms with async scheduling (the default);
    one after the other it would pay 0.02 ms + 50 us more a step."""
    builtin = load_profiles()
    assert builtin.deployment().overhead_per_seq_s == 50e-6
    overlapped = CostModel(builtin.deployment(), overlap=True).iteration(1, 640).total * 1e3
    assert overlapped == pytest.approx(6.02, abs=0.005)
    assert CostModel(builtin.deployment()).iteration(1, 640).total * 1e3 == pytest.approx(overlapped + 0.07, abs=1e-9)


def test_each_sequence_in_an_iteration_adds_its_cost(profiles, zero):
    base, host = CostModel(zero.deployment()), CostModel(profiles.deployment())
    for decode, chunks in ((1, ()), (64, ()), (10, [(0, 300), (0, 0)]), (0, [(0, 512)])):
        seqs = decode + sum(1 for _, n in chunks if n)
        ctx = decode * 640
        extra = host.iteration(decode, ctx, chunks).total - base.iteration(decode, ctx, chunks).total
        assert extra == pytest.approx(PER_SEQ * seqs, rel=1e-9)
        assert host.iteration(decode, ctx, chunks).t_overhead == pytest.approx(2e-5 + PER_SEQ * seqs)
    assert host.encoder_pass(8, 256).t_overhead == pytest.approx(2e-5 + 8 * PER_SEQ)


def test_the_fast_paths_price_it_the_same(profiles):
    cost = CostModel(profiles.deployment())
    batches = np.array([1, 7, 64, 300])
    contexts = batches * 900
    for b, c, fast in zip(batches.tolist(), contexts.tolist(), cost.decode_times(batches, contexts).tolist()):
        assert cost.decode_time(b, c) == cost.iteration(b, c).total == fast


def test_a_model_table_may_set_it(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text('[models."llama-3.1-8b"]\noverhead_per_seq_s = 1e-5\n', encoding="utf-8")
    assert load_profiles(path).deployment().overhead_per_seq_s == 1e-5


def _tpot(p, rate, asynchronous):
    sc = Scenario(engine={"async_scheduling": asynchronous},
                  workload=WorkloadSpec(arrival="poisson", request_rate=rate, num_prompts=150,
                                        input=LengthSpec(mean=512), output=LengthSpec(mean=64)))
    return Engine(sc, profiles=p).run().metrics["median_tpot_ms"]


def test_runs_feel_it_more_at_larger_batches(profiles, zero):
    """Synchronous scheduling: the host's work adds to every iteration."""
    low = _tpot(profiles, 0.2, False) / _tpot(zero, 0.2, False)
    high = _tpot(profiles, 30, False) / _tpot(zero, 30, False)
    assert 1.0 < low < 1.02 < high


def test_async_scheduling_hides_it_behind_the_forward_pass(profiles, zero):
    """Async scheduling overlaps the host's work with the GPU's: an iteration costs the larger
    of the two, so a host cost shorter than the forward pass changes nothing, and one longer
    than it sets the pace."""
    assert _tpot(profiles, 0.2, True) == _tpot(zero, 0.2, True) == _tpot(load_profiles(), 0.2, True)
    assert _tpot(profiles, 0.2, True) < _tpot(profiles, 0.2, False)
    cost = CostModel(profiles.deployment(), overlap=True)
    serial = CostModel(profiles.deployment())
    for decode, chunks in ((1, ()), (64, ()), (10, [(0, 300)]), (0, [(0, 512)]), (4000, ()), (1024, [(0, 1)] * 8)):
        seqs = decode + len(chunks)
        host = 2e-5 + PER_SEQ * seqs
        both = serial.iteration(decode, decode * 640, chunks)
        over = cost.iteration(decode, decode * 640, chunks)
        assert over.total == pytest.approx(max(both.total - host, host), rel=1e-12)
        assert over.t_overhead == host
        assert sum(share for _, share in over.parts()) == pytest.approx(over.total, rel=1e-12)
        assert (over.binding == "overhead") == (host > both.total - host)
    many = cost.iteration(1024, 1024 * 100)  # 31 ms of host work per iteration, more than the GPU's
    assert many.binding == "overhead" and many.total == 2e-5 + PER_SEQ * 1024


@pytest.mark.parametrize("asynchronous", [False, True])
def test_decode_stretches_agree_with_one_iteration_at_a_time(profiles, asynchronous):
    """run() prices long decode stretches in bulk (CostModel.decode_ends); step() prices one
    iteration at a time: with a per-sequence host cost the two must still agree exactly, with
    async scheduling off and on."""
    sc = Scenario(engine={"async_scheduling": asynchronous},
                  workload=WorkloadSpec(arrival="poisson", request_rate=20, num_prompts=120,
                                        input=LengthSpec(mean=256), output=LengthSpec(mean=64)))
    fast = Engine(sc, profiles=profiles).run().metrics
    assert Engine(sc, profiles=profiles).config.runs_async == asynchronous
    stepped = Engine(sc, profiles=profiles)
    while stepped.step() is not None:
        pass
    slow = stepped.summary().metrics
    for key in ("median_ttft_ms", "median_tpot_ms", "duration"):
        assert fast[key] == slow[key]
