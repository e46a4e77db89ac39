"""benchmarks/spot_revocation_sweep.py: it runs (it had stopped when the cluster file's
gpus_per_host began to be checked against the caller's), and each market's cheapest plan
at confidence 0.9 keeps its promise in the seeded simulator."""

from __future__ import annotations

import pytest

from benchmarks import spot_revocation_sweep as sweep
from cotune.models import fit_models
from cotune.profile import load_profile


@pytest.mark.parametrize("rate", [0.1, 1.0, 4.0])
def test_each_markets_plan_misses_the_deadline_no_more_often_than_promised(tmp_path, rate):
    models = fit_models(load_profile("cifar10-resnet18"), n_bootstrap=8)
    path = tmp_path / "c.toml"
    path.write_text(sweep.CLUSTER.format(rate=rate), encoding="utf-8")
    best, plan = sweep.best_per_market(models, path)
    assert best["on_demand"] is not None
    for market in ("spot", "mixed"):
        p = best[market]
        if p is None:
            continue
        assert p["promised"] <= sweep.DEADLINE_S
        miss_at_mean, miss_at_quantile = sweep.miss_rate(p, market, plan)
        assert miss_at_mean <= miss_at_quantile + 0.01
        assert miss_at_quantile <= 1 - sweep.Q + 0.02, (market, miss_at_quantile)
