"""The step-time check on public throughput data (benchmarks/public_step_time.py)."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks.public_step_time import (
    DataError,
    Skipped,
    calibrate_growth_ratio,
    elasticflow_rows,
    evaluate,
    growth_ratio_samples,
    load_elasticflow,
    load_gavel,
    load_sia,
    main,
    sia_placement,
)
from benchmarks.traces import data_root

DATA = data_root()


def test_a_placement_has_one_digit_per_node_and_its_sum_is_the_gpu_count() -> None:
    assert sia_placement("88", gpus_per_node=8) == (16, 2)
    assert sia_placement(1111, gpus_per_node=4) == (4, 4)
    assert sia_placement("17", gpus_per_node=8) == (8, 2)
    for bad in ("9", "80", "1a"):
        with pytest.raises(DataError, match="one digit"):
            sia_placement(bad, gpus_per_node=4 if bad == "9" else 8)


def test_an_elasticflow_cell_becomes_seconds_per_step_at_the_per_gpu_batch() -> None:
    # resnet50.csv, global batch 64: 21.265357623184627 iterations/s on 8 A100 (one VM).
    frame = pd.read_csv(DATA / "elasticflow-asplos23" / "throughputs_A100" / "resnet50.csv")
    value = float(frame.loc[frame.global_batch_size == 64, "8"].iloc[0])
    assert value == pytest.approx(21.265357623184627)
    assert elasticflow_rows(64, 8, value, gpus_per_host=8) == (8, 1, 8.0, pytest.approx(1 / value))
    assert elasticflow_rows(64, 16, 21.5, gpus_per_host=8)[:3] == (16, 2, 4.0)  # two VMs of 8
    assert elasticflow_rows(64, 8, 0.0, gpus_per_host=8) is None  # not run
    assert elasticflow_rows(32, 64, 14.0, gpus_per_host=8) is None  # half a sample per GPU: never run
    traces = load_elasticflow(DATA, Skipped())
    r50 = next(t for t in traces if t.model == "resnet50")
    i = np.flatnonzero((r50.workers == 8) & (r50.local_batch == 8))
    assert r50.step_time_s[i] == pytest.approx([1 / value])


def test_gavel_throughput_summed_over_workers_becomes_one_iteration_time() -> None:
    # V100 ResNet-18, batch 16 per worker, 8 GPUs spread across servers: 0.1242 s per iteration.
    skipped = Skipped()
    traces = {t.name: t for t in load_gavel(DATA, skipped)}
    t = traces["gavel-v100/ResNet-18"]
    i = np.flatnonzero((t.workers == 8) & (t.hosts == 8) & (t.local_batch == 16))
    assert t.step_time_s[i] == pytest.approx([0.124204], rel=1e-4)
    # The 1-GPU row is one measurement under both placement modes, counted once.
    assert np.count_nonzero((t.workers == 1) & (t.local_batch == 16)) == 1
    assert skipped.counts["shockwave-tacc: rows inherited from Gavel (not re-measured)"] > 0


def _slice_root(tmp_path: Path, batches: tuple[int, ...] = (64, 128)) -> Path:
    src = DATA / "sia-sosp23" / "traces" / "cifar10" / "placements-rtx.csv"
    frame = pd.read_csv(src)
    dest = tmp_path / "sia-sosp23" / "traces" / "cifar10"
    dest.mkdir(parents=True)
    frame[frame.local_bsz.isin(batches)].to_csv(dest / "placements-rtx.csv", index=False)
    return tmp_path


def test_coverage_is_the_share_of_real_measurements_inside_real_intervals(tmp_path: Path) -> None:
    traces = load_sia(_slice_root(tmp_path), Skipped())
    assert [t.name for t in traces] == ["sia-rtx/cifar10"]
    t = traces[0]
    rows, summary = evaluate(traces)
    # Every unprobed row predicted once per probe set: > 2 workers, > 4 workers, several hosts.
    assert sum(r["cut"] == "w2" for r in rows) == np.count_nonzero(t.workers > 2)
    assert sum(r["cut"] == "h1" for r in rows) == np.count_nonzero(t.hosts > 1)
    for r in rows:
        assert r["lower_s"] <= r["predicted_s"] <= r["upper_s"]
        assert r["covered"] == (r["lower_s"] <= r["step_time_s"] <= r["upper_s"])
        assert r["log_error"] == pytest.approx(math.log(r["step_time_s"] / r["predicted_s"]))
    pooled = summary["pooled"]
    assert pooled["n"] == len(rows)
    assert 0.0 <= pooled["coverage_90"] <= 1.0
    assert pooled["coverage_90"] == pytest.approx(np.mean([r["covered"] for r in rows]))
    assert pooled["coverage_90"] + pooled["below"] + pooled["above"] == pytest.approx(1.0)
    assert sum(s["n"] for s in summary["by_doublings"].values()) == len(rows)
    # 16 GPUs from probes on <= 2: three doublings beyond the largest probed worker count.
    assert {r["doublings"] for r in rows if r["cut"] == "w2" and r["workers"] == 16} == {3}


def test_intervals_widen_with_the_distance_beyond_the_probes(tmp_path: Path) -> None:
    rows, _ = evaluate(load_sia(_slice_root(tmp_path), Skipped()))
    w2 = [r for r in rows if r["cut"] == "w2" and r["hosts"] == 1]
    near = np.median([r["width"] for r in w2 if r["doublings"] == 1])
    far = np.median([r["width"] for r in w2 if r["doublings"] == 2])
    assert far > near


def test_an_unknown_cluster_file_is_refused_with_exit_2(tmp_path: Path, capsys) -> None:
    root = _slice_root(tmp_path)
    shutil.copy(root / "sia-sosp23/traces/cifar10/placements-rtx.csv", root / "sia-sosp23/traces/cifar10/placements-tpu.csv")
    assert main(["--data", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown Sia throughput file 'placements-tpu.csv'") and err.count("\n") == 1


def test_a_file_without_its_columns_is_refused_naming_the_missing_one(tmp_path: Path, capsys) -> None:
    root = _slice_root(tmp_path)
    path = root / "sia-sosp23/traces/cifar10/placements-rtx.csv"
    pd.read_csv(path).drop(columns=["step_time"]).to_csv(path, index=False)
    assert main(["--data", str(root)]) == 2
    err = capsys.readouterr().err
    assert "missing column(s) step_time" in err and "Traceback" not in err


def test_a_non_numeric_cell_is_refused(tmp_path: Path) -> None:
    root = _slice_root(tmp_path)
    path = root / "sia-sosp23/traces/cifar10/placements-rtx.csv"
    frame = pd.read_csv(path).astype({"step_time": object})
    frame.loc[0, "step_time"] = "fast"
    frame.to_csv(path, index=False)
    with pytest.raises(DataError, match="non-numeric value 'fast'"):
        load_sia(root, Skipped())


def test_a_folder_without_traces_is_refused(tmp_path: Path, capsys) -> None:
    assert main(["--data", str(tmp_path)]) == 2
    assert "no throughput traces" in capsys.readouterr().err


def test_growth_ratio_weighs_each_cluster_once_whatever_its_trace_count() -> None:
    """Median over clusters of each cluster's median: ten traces of one cluster count as one."""
    samples = [("big", f"m{i}", 2.0) for i in range(10)] + [("a", "x", 0.1), ("b", "x", 0.3), ("b", "y", 0.5)]
    got = calibrate_growth_ratio(samples)
    assert got["SYNC_GROWTH_RATIO"] == pytest.approx(0.4)  # median of 0.1, 0.4 (b), 2.0
    assert got["without big"] == pytest.approx(0.25)
    assert got["b alone"] == pytest.approx(0.4)


def test_growth_ratio_samples_come_only_from_traces_whose_growth_is_identified(tmp_path: Path) -> None:
    traces = load_sia(_slice_root(tmp_path), Skipped())
    (cluster, model, ratio), = growth_ratio_samples(traces)
    assert (cluster, model) == ("sia-rtx", "cifar10") and ratio > 0
    t = traces[0]
    two = type(t)(t.dataset, t.model, *(c[t.workers <= 2] for c in (t.workers, t.hosts, t.local_batch, t.step_time_s)), source=t.source)
    assert growth_ratio_samples([two]) == []


def _one_worker_trace(shares: dict[str, float]):
    """Traces whose one-worker step time is ``c + (1 − c)·b/16`` (constant share ``c`` at batch 16)."""
    from benchmarks.public_step_time import Trace

    out = []
    b = np.array([16.0, 32.0, 64.0, 128.0])
    for cluster, c in shares.items():
        out.append(Trace(dataset=cluster, model="m", workers=np.ones(4), hosts=np.ones(4), local_batch=b,
                         step_time_s=0.1 * (c + (1 - c) * b / 16), source="synthetic"))
    return out


def test_constant_share_samples_recover_a_known_split_from_every_pair() -> None:
    from benchmarks.public_step_time import constant_share_samples

    got = constant_share_samples(_one_worker_trace({"a": 0.3}))
    assert len(got) == 12  # every ordered pair of the four batches is at least 2x apart
    alpha, beta = 0.03, 0.07 / 16
    expected = [alpha / (alpha + beta * b0) for b0 in (16.0, 32.0, 64.0, 128.0) for _ in range(3)]
    assert np.allclose([c for (_, _, c) in got], expected)


def test_the_share_range_weighs_each_cluster_once() -> None:
    from benchmarks.public_step_time import calibrate_constant_share, constant_share_samples

    # One cluster with ten traces of share 0.9, one with a single trace of share 0.1: the
    # median sits between them, not at the big cluster's value.
    samples = constant_share_samples(_one_worker_trace({"big": 0.9}) * 10 + _one_worker_trace({"small": 0.1}))
    got = calibrate_constant_share(samples)
    lo, hi = got["ONE_BATCH_SHARE_RANGE low"], got["ONE_BATCH_SHARE_RANGE high"]
    assert lo < 0.1 and hi > 0.6
    assert 0.1 < got["ONE_BATCH_CONSTANT_SHARE"] < 0.9


def test_few_probe_kappa_makes_few_probe_intervals_cover_the_rest_of_a_trace() -> None:
    from benchmarks.public_step_time import calibrate_few_probe_kappa, few_probe_design, few_probe_samples, load_pollux_t4
    from cotune.models._step_time import z_for

    traces = load_pollux_t4(DATA, Skipped())
    design = few_probe_design(traces[0], 3)
    assert len({tuple(r) for r in design}) == 3 and design[0][0] == traces[0].workers.min()
    samples = few_probe_samples(traces, ks=(2, 3))
    got = calibrate_few_probe_kappa(samples)
    z = z_for(0.9)
    for k in (2, 3):
        rows = [r for r in samples if r[1] == k]
        kappa = got[f"FEW_PROBE_KAPPA k={k}"]
        assert kappa > 0.0
        # Without the term the interval is far too narrow; with it, 90 % (one cluster here).
        assert np.mean([r[2] <= z * r[3] for r in rows]) < 0.6
        assert np.mean([r[2] <= z * math.hypot(r[3], kappa * r[4]) for r in rows]) == pytest.approx(0.9, abs=0.02)


def test_sync_constant_is_the_median_over_clusters_of_the_two_worker_slowdown() -> None:
    from benchmarks.public_step_time import Trace, calibrate_sync_constant, sync_constant_samples

    def trace(cluster: str, slowdown: float) -> Trace:
        return Trace(dataset=cluster, model="m", workers=np.array([1.0, 2.0]), hosts=np.ones(2), local_batch=np.full(2, 32.0),
                     step_time_s=np.array([0.1, 0.1 * (1 + slowdown)]), source="synthetic")

    samples = sync_constant_samples([trace("a", 0.05)] * 5 + [trace("b", 0.2), trace("c", 0.3)])
    got = calibrate_sync_constant(samples)
    assert got["SYNC_CONSTANT_RATIO"] == pytest.approx(0.2)  # a's five traces count once
    assert got["without b"] == pytest.approx(0.175)


def test_the_correlation_length_recovers_a_known_kernel_weighing_each_cluster_once() -> None:
    from benchmarks.public_step_time import calibrate_correlation_length

    d = np.array([0.5, 1.0, 2.0, 3.0, 5.0])
    # Cluster "a" follows ℓ = 1.5 in five traces' worth of rows, "b" ℓ = 3: a weighs as much as b.
    rows = [("a", float(x), math.exp(-x / 1.5), 10) for x in d] * 5 + [("b", float(x), math.exp(-x / 3.0), 10) for x in d]
    both = calibrate_correlation_length(rows)["STEP_CORRELATION_DOUBLINGS"]
    assert 1.5 < both < 3.0
    alone = calibrate_correlation_length([r for r in rows if r[0] == "a"])["STEP_CORRELATION_DOUBLINGS"]
    assert alone == pytest.approx(1.5, rel=1e-3)
    assert calibrate_correlation_length(rows)["a: length without it"] == pytest.approx(3.0, rel=1e-3)


def test_step_time_errors_of_nearby_configurations_correlate_more_than_far_ones() -> None:
    from benchmarks.public_step_time import error_correlation_samples

    # The Gavel clusters (K80, P100, V100: 1–8 GPUs, one or several servers).
    samples = error_correlation_samples(load_gavel(DATA, Skipped()))
    for cluster in {r[0] for r in samples}:
        rho = [r[2] for r in sorted(samples) if r[0] == cluster]
        assert rho[0] > 0.5 and rho[-1] < 0.3 and rho[-1] < rho[0], (cluster, rho)


def test_repeated_measurements_of_a_configuration_become_their_median() -> None:
    from benchmarks.public_step_time import Trace, per_configuration

    t = Trace("c", "m", workers=np.array([2.0, 1.0, 2.0, 2.0]), hosts=np.ones(4), local_batch=np.full(4, 32.0),
              step_time_s=np.array([0.2, 0.1, 0.4, 0.3]), source="synthetic")
    got = per_configuration(t)
    assert got.workers.tolist() == [1.0, 2.0] and got.step_time_s.tolist() == [0.1, 0.3]


def test_the_growth_range_weighs_each_cluster_once_and_says_what_each_left_out_cluster_keeps() -> None:
    from benchmarks.public_step_time import calibrate_growth_range

    # Ten traces of a slow-growing cluster and one of a fast one: the range reaches the fast
    # cluster's ratio (each cluster weighs one), and without it the others' range misses it.
    samples = [("slow", f"m{i}", 0.2 + 0.01 * i) for i in range(10)] + [("fast", "m", 2.0)]
    got = calibrate_growth_range(samples)
    assert got["SYNC_GROWTH_RANGE low"] < 0.25 and got["SYNC_GROWTH_RANGE high"] > 1.0
    assert got["fast: covered by the others' range"] == 0.0
    assert got["slow: covered by the others' range"] < 1.0  # "fast" alone spans one value


def test_held_out_priors_recalibrate_the_growth_range_without_the_cluster_fitted() -> None:
    from benchmarks.public_step_time import Trace, held_out_priors

    def trace(cluster: str, ratio: float) -> Trace:
        # A backbone with growth `ratio` x its sync constant on one host, 1-8 workers.
        from cotune.models import predict_log_step

        w, b = (a.ravel() for a in np.meshgrid([1.0, 2.0, 4.0, 8.0], [16.0, 64.0], indexing="ij"))
        theta = np.array([0.01, 2e-4, 0.02, ratio * 0.02, 0.022, 1.1 * ratio * 0.02, 1.0])
        return Trace(dataset=cluster, model="m", workers=w, hosts=np.ones_like(w), local_batch=b,
                     step_time_s=np.exp(predict_log_step(theta, w, np.ones_like(w), b)), source="synthetic")

    traces = [trace("a", 0.1), trace("a", 0.12), trace("b", 0.5), trace("c", 3.0)]
    priors = held_out_priors(traces)
    without_c, without_a = priors("c")["growth_range"], priors("a")["growth_range"]
    assert without_c[1] < 1.0 < without_a[1]  # c's fast growth only widens the others' range
    assert priors("unknown")["growth_range"][1] > 1.0  # a cluster not among them: every trace


def test_cluster_weighted_coverage_counts_each_cluster_once_per_distance() -> None:
    from benchmarks.public_step_time import cluster_weighted_coverage

    rows = ([dict(cut="w2", doublings=1, dataset="big", covered=True)] * 9
            + [dict(cut="w2", doublings=1, dataset="small", covered=False)]
            + [dict(cut="w2", doublings=6, dataset="big", covered=True), dict(cut="w4", doublings=1, dataset="big", covered=False)])
    got = cluster_weighted_coverage(rows, "w2")
    assert got == {1: (0.5, 2), 4: (1.0, 1)}  # 9 of 10 rows pooled, one cluster of two; d >= 4 together
