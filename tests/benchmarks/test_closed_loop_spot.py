"""The closed-loop replay on spot: the revocation sampler, the spot truth and the spot policies."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.traces import data_root

try:
    data_root()
except FileNotFoundError:  # pragma: no cover - CI and dev check shared/ out beside the repo
    pytest.skip("shared/data not found beside the repository", allow_module_level=True)

from benchmarks import _registry as reg
from benchmarks.closed_loop import CONTINUE, TrueRun, simulate
from benchmarks.closed_loop_spot import (
    DEFAULT_CLUSTER,
    RevocationStream,
    SpotReplay,
    SpotSpace,
    sample_revocations,
    scenario_seed,
    spot_controller,
    spot_plan,
    use_cluster,
)
from benchmarks.regret import run_scenario, summarize
from benchmarks.scenarios import scenarios, workloads
from cotune.errors import InputError
from cotune.spot import parse_cluster

reg.load()


def _scenario(name: str = "cifar10-hetero", target: str = "all", deadline: float | None = None):
    return next(scenarios(workloads(names=(name,)), target_labels=(target,), deadline_factors=(deadline,)))


def _cluster(rate_per_hour: float, *, replacement_s: float = 120.0):
    """The bundled replay cluster's shape at another revocation rate (every GPU of both families)."""
    gpu = lambda price: {  # noqa: E731
        "on_demand": 64, "spot": 64, "on_demand_price_per_hour": price, "spot_price_per_hour": 0.3 * price,
        "revocation_rate_per_hour": rate_per_hour, "replacement_delay_s": replacement_s,
    }
    return parse_cluster({"checkpoint": {"write_s": 20, "restart_s": 30},
                          "gpu": {g: gpu(1.0) for g in ("t4", "k80", "p100", "v100")}}, source="test")


def _runs(scn, cluster, *, seed: int = 7):
    """(the on-demand run, its spot twin's run) of the scenario's cheapest true configuration, run as planned."""
    space = SpotSpace.of(scn, cluster)
    sol = scn.oracle.solve(scn.target, scn.deadline_s)
    i = sol.index
    twin = int(np.flatnonzero((space.base == i) & space.candidates.in_market("spot"))[0])
    truth = TrueRun(scn)
    od = simulate(scn, index=i, planned_time_s=sol.time_s, controller=lambda p: CONTINUE, truth=truth)
    replay = SpotReplay.create(space, seed=seed, planned_work_s=sol.time_s)
    sp = simulate(scn, index=twin, planned_time_s=sol.time_s, controller=lambda p: CONTINUE, truth=truth, spot=replay)
    return od, sp, space, twin


def test_the_revocation_sampler_reproduces_with_its_seed() -> None:
    a = sample_revocations(rate_per_server_hour=0.5, servers=4, hours=10.0, seed=3)
    b = sample_revocations(rate_per_server_hour=0.5, servers=4, hours=10.0, seed=3)
    c = sample_revocations(rate_per_server_hour=0.5, servers=4, hours=10.0, seed=4)
    assert a.size > 0 and np.array_equal(a, b) and not np.array_equal(a, c)
    assert np.all(np.diff(a) > 0) and a.max() <= 10.0
    assert scenario_seed("cifar10-t4/all/none") == scenario_seed("cifar10-t4/all/none") != scenario_seed("cifar10-t4/all/3x_fastest")


@pytest.mark.parametrize("rate,servers,hours", [(0.1, 16, 2.0), (0.5, 1, 3.0), (2.0, 4, 0.5)])
def test_the_mean_revocation_count_is_rate_times_server_hours(rate: float, servers: int, hours: float) -> None:
    n = 4000
    counts = np.array([sample_revocations(rate_per_server_hour=rate, servers=servers, hours=hours, seed=s).size
                       for s in range(n)])
    mean = rate * servers * hours
    # Poisson: the variance equals the mean, so the sample mean's standard error is sqrt(mean / n).
    assert abs(counts.mean() - mean) <= 4.0 * math.sqrt(mean / n)


def test_the_stream_stays_poisson_when_the_rate_changes_mid_run() -> None:
    # Exposures alternate between two rates (servers added and removed): the count over the
    # run is Poisson with the summed hazard.
    n, pieces = 3000, [(1.0 / 3600, 1800.0), (4.0 / 3600, 900.0), (0.5 / 3600, 3600.0)]
    hazard = sum(r * s for r, s in pieces)
    counts = []
    for seed in range(n):
        stream, k = RevocationStream(seed), 0
        for r, s in pieces:
            left = s
            while (x := stream.expose(rate_per_s=r, seconds=left)) is not None:
                k, left = k + 1, left - x
        counts.append(k)
    assert abs(np.mean(counts) - hazard) <= 4.0 * math.sqrt(hazard / n)


def test_a_spot_run_without_revocations_costs_the_spot_price_times_the_on_demand_time() -> None:
    scn = _scenario()
    od, sp, space, twin = _runs(scn, _cluster(0.0))
    assert od["reached"] and sp["reached"] and sp["revocations"] == 0
    assert sp["time_s"] == pytest.approx(od["time_s"], rel=1e-12)
    usd_per_s = space.candidates.workers[twin] * space.usd_per_hour[twin] / 3600.0
    assert space.usd_per_hour[twin] == pytest.approx(0.3 * scn.workload.prices[space.candidates.gpus[space.candidates.gpu[twin]]])
    assert sp["train_cost"] == pytest.approx(usd_per_s * od["time_s"], rel=1e-12)


def test_revocations_make_a_spot_run_longer_by_at_least_their_waits() -> None:
    scn = _scenario()
    od, sp, space, twin = _runs(scn, _cluster(6.0))
    assert sp["revocations"] >= 1 and sp["reached"]
    wait = float(space.revocation_restart_s[twin])
    assert wait == 150.0  # replacement 120 s + reload 30 s
    assert sp["time_s"] >= od["time_s"] + sp["revocations"] * wait
    # the same seed replays the same revocations
    again = _runs(scn, _cluster(6.0))[1]
    assert again["time_s"] == sp["time_s"] and again["revocations"] == sp["revocations"]


def test_a_revocation_loses_the_work_since_the_last_checkpoint() -> None:
    scn = _scenario()
    space = SpotSpace.of(scn, _cluster(1.0))
    j = int(np.flatnonzero(space.candidates.in_market("spot"))[0])

    class RevokeAt:  # the first revocation after `at` exposed seconds, none after it
        def __init__(self, at: float) -> None:
            self.left = at

        def expose(self, *, rate_per_s: float, seconds: float) -> float | None:
            if self.left is not None and seconds > self.left:
                x, self.left = self.left, None
                return x
            if self.left is not None:
                self.left -= seconds
            return None

    tau = np.full(len(space.candidates), 100.0)
    replay = SpotReplay(space=space, stream=RevokeAt(250.0), checkpoint_interval_s=tau)  # type: ignore[arg-type]
    seg = replay.advance(j, work_s=1000.0, final=False)
    # 100 s + 20 s write, 100 s + 20 s write, then 10 s into the third stretch
    assert seg.revoked and not seg.finished
    assert seg.work_s == pytest.approx(210.0) and seg.lost_s == pytest.approx(10.0)
    assert seg.wall_s == pytest.approx(250.0 + 150.0)
    # after the restart nothing is at risk; the rest runs clean and the final stretch writes no checkpoint
    rest = replay.advance(j, work_s=150.0, final=True)
    assert rest.finished and not rest.revoked and rest.wall_s == pytest.approx(150.0 + 20.0)


def test_the_closed_loop_spot_policies_produce_summary_rows() -> None:
    scn = _scenario(deadline=1.5)
    names = ("cotune_closed_spot_q90", "cotune_open_spot_q90")
    assert set(names) <= set(reg.policies_for("closed-loop"))
    result = run_scenario(scn, budgets=(6,), settings=("closed-loop",), policies=names, closed_loop_budgets=(6,))
    assert not result.errors
    rows = {r["policy"]: r for r in summarize([result])}
    assert set(rows) == set(names)
    for r in rows.values():
        assert r["setting"] == "closed-loop" and r["probes"] == 6 and r["scenarios"] == 1
        assert r["mean_revocations"] >= 0 and 0.0 <= r["miss_rate"] <= 1.0
    o = next(o for o in result.outcomes if o.policy == "cotune_closed_spot_q90")
    assert o.market in ("on_demand", "spot") and o.revocations >= 0


def test_the_bundled_cluster_is_read_by_cotunes_parser_and_a_bad_one_is_refused(tmp_path) -> None:
    cl = use_cluster(None)
    assert cl.source == str(DEFAULT_CLUSTER) and set(cl.gpus) == {"t4", "k80", "p100", "v100"}
    for o in cl.gpus.values():  # examples/cluster.toml's ratios
        assert o.spot_price_per_hour / o.on_demand_price_per_hour == pytest.approx(0.158 / 0.526, rel=1e-4)
        assert o.revocation_rate_per_hour == 0.1 and o.replacement_delay_s == 120.0
    bad = tmp_path / "c.toml"
    bad.write_text('[checkpoint]\nwrite_s = 1\n[gpu.t4]\nspot = 4\nspot_price_per_hour = 0.1\n'
                   'revocation_rate_per_hour = 0.1\nreplacement_delay_s = 60\n')
    with pytest.raises(InputError, match="on_demand_price_per_hour"):
        use_cluster(bad)
    from benchmarks.__main__ import main

    assert main(["--cluster", str(tmp_path / "missing.toml"), "--settings", "closed-loop"]) == 2
    use_cluster(None)


_SPACES: dict[float, SpotSpace] = {}


def _space(rate: float) -> SpotSpace:
    if rate not in _SPACES:
        _SPACES[rate] = SpotSpace.of(_scenario(), _cluster(rate))
    return _SPACES[rate]


@settings(max_examples=60, deadline=None)
@given(
    rate=st.sampled_from([0.0, 1.0, 20.0]),
    tau=st.floats(min_value=10.0, max_value=5000.0),
    pieces=st.lists(st.floats(min_value=0.0, max_value=3000.0), min_size=1, max_size=8),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_spot_segments_never_gain_time_and_lose_only_unsaved_work(rate: float, tau: float, pieces: list[float], seed: int) -> None:
    space = _space(rate)
    j = int(np.flatnonzero(space.candidates.in_market("spot"))[0])
    replay = SpotReplay(space=space, stream=RevocationStream(seed), checkpoint_interval_s=np.full(len(space.candidates), tau))
    saved = 0.0  # training since the last checkpoint, tracked from the outside
    wait = float(space.revocation_restart_s[j])
    for k, want in enumerate(pieces):
        seg = replay.advance(j, work_s=want, final=k == len(pieces) - 1)
        assert 0.0 <= seg.work_s <= want + 1e-9 and seg.wall_s >= seg.work_s - 1e-9
        if seg.revoked:
            assert rate > 0 and not seg.finished and seg.wall_s >= wait
            assert seg.lost_s <= min(tau, saved + seg.work_s) + 1e-6  # never more than one interval, never saved work
            saved = 0.0
        else:
            assert seg.lost_s == 0.0 and seg.finished == (k == len(pieces) - 1)
            saved = (saved + seg.work_s) % tau if math.isfinite(tau) else saved + seg.work_s
        if rate == 0.0:  # no revocation: the wall time is the work plus whole 20 s checkpoint writes
            writes = (seg.wall_s - seg.work_s) / 20.0
            assert not seg.revoked and abs(writes - round(writes)) < 1e-6 and round(writes) <= want / tau + 1


def test_the_spot_controller_charges_revocations_to_spot_options_only() -> None:
    scn = _scenario(deadline=3.0)
    ev = scn.evidence("closed-loop")
    out = {}
    for rate in (0.0, 2.0):
        space = SpotSpace.of(scn, _cluster(rate))
        plan = spot_plan(scn, 6, planner="cotune_q90", confidence=0.9, name="t", space=space)
        ctrl = spot_controller(scn, ev, plan, 0.9, space)
        usable, _, p, cost, t = ctrl.assess(None, target=scn.target, deadline_s=scn.deadline_s)
        wrapped = super(type(ctrl), ctrl).assess(None, target=scn.target, deadline_s=scn.deadline_s)
        out[rate] = (space.candidates.in_market("spot")[usable], p, cost, t, wrapped)
    spot, p0, c0, t0, w0 = out[0.0]
    assert spot.any() and (~spot).any()
    # no revocations: exactly the wrapped assessment (spot rows priced at the spot price)
    assert np.array_equal(p0, w0[2]) and np.array_equal(c0, w0[3]) and np.array_equal(t0, w0[4])
    spot2, p2, c2, t2, w2 = out[2.0]
    fin = spot2 & np.isfinite(c2) & np.isfinite(w2[3])
    assert fin.any()
    assert np.all(c2[fin] > w2[3][fin]) and np.all(t2[fin] > w2[4][fin]) and np.all(p2[spot2] <= w2[2][spot2] + 1e-12)
    assert np.array_equal(p2[~spot2], w2[2][~spot2]) and np.array_equal(c2[~spot2], w2[3][~spot2])
