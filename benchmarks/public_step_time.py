"""Step time on public throughput data the step-time model was never calibrated on.

``KAPPA_STEP`` (:mod:`cotune.models._step_time`) was measured on the bundled Pollux T4
profiles alone. This benchmark checks the step-time model where it has never looked:

* **Sia SOSP'23** (``sia-sosp23/traces/<model>/placements-<cluster>.csv`` and
  ``scalability-<cluster>.csv``): six models on Azure V100 (8/node, up to 40 GPUs),
  DGX-A100 (8/node, two batch grids), Quadro RTX 6000 (4, one node) and RTX 2080 Ti
  (8/node, up to 24 GPUs). Per-GPU ``local_bsz``, ``step_time`` in seconds per
  iteration; a ``placement`` string's digit count is the node count, its digit sum the
  GPU count.
* **ElasticFlow ASPLOS'23** (``elasticflow-asplos23/throughputs_A100/<model>.csv``):
  strong scaling on 1–64 A100 (8 per VM), iterations per second at a fixed *global*
  batch: ``step_time_s = 1 / value``, ``local_batch = global / GPUs``, ``hosts =
  ceil(GPUs / 8)``.
* **Gavel OSDI'20** (``gavel_simulation_throughputs_flat.csv``) K80, P100 and V100,
  1/2/4/8 GPUs in one server or spread across servers, and the **Shockwave NSDI'23**
  re-measured V100 rows (TACC and WISR clusters): worker-steps per second summed over
  the workers, so ``step_time_s = num_gpus / throughput``; batch per worker.

Each trace becomes what a user would have paid for — probes on ≤ 2 workers, on ≤ 4
workers, or on one host (every local batch of the trace at those placements) — and is
fitted exactly as :func:`cotune.models.fit_models` fits a GPU type (outlier records
left out, then ``StepTimeModel(interval=0.9, n_bootstrap=16, random_state=0)``).
Every other measured row is predicted; reported per dataset and per distance (whole
doublings of workers beyond the largest probed worker count, 0 = within it, on more
hosts): n, median |log error| and the share of truths inside the 90 % interval.

Rows that are not measurements are skipped and counted (see :data:`SKIPPED` in the
output): zero or empty cells (not run / infeasible), copies of another file's rows,
job types measured on one GPU only, and Shockwave rows inherited from Gavel.

    python -m benchmarks.public_step_time [--json FILE] [--data DIR] [--reference] [--held-out]

``--reference`` adds the Pollux T4 traces (the calibration data) as a separate row.
Some priors *were* measured on these clusters (``--calibrate`` prints them):
``--held-out`` fits each cluster with those recalibrated without it
(:func:`held_out_priors`), so its coverage is on data the priors never saw. The last
lines weigh each cluster equally (the pooled figures are mostly Sia's).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

__all__ = [
    "CUTS",
    "DataError",
    "Trace",
    "elasticflow_rows",
    "evaluate",
    "gavel_step_time_s",
    "load_all",
    "load_elasticflow",
    "load_gavel",
    "load_pollux_t4",
    "host_crossing_samples",
    "calibrate_kappa_hosts",
    "growth_ratio_samples",
    "calibrate_growth_ratio",
    "constant_share_samples",
    "sync_constant_samples",
    "calibrate_sync_constant",
    "few_probe_design",
    "few_probe_samples",
    "calibrate_few_probe_kappa",
    "calibrate_constant_share",
    "load_sia",
    "main",
    "predictions",
    "sia_placement",
    "summarise",
]

# GPUs per node of each Sia cluster suffix (sia-sosp23/SOURCE.md, from simulator_config.py).
SIA_GPUS_PER_NODE = {"azure": 8, "dgx": 8, "dgx-ext": 8, "quad": 4, "rtx": 8}
SIA_HARDWARE = {
    "azure": "V100 32 GB (Azure ND40rs_v2)",
    "dgx": "A100 40 GB (DGX, limited batch grid)",
    "dgx-ext": "A100 40 GB (DGX, extended batch grid)",
    "quad": "Quadro RTX 6000",
    "rtx": "RTX 2080 Ti",
}
ELASTICFLOW_GPUS_PER_VM = 8  # Azure Standard_ND96asr_A100 (elasticflow-asplos23/SOURCE.md)
# Probe sets a user pays for: (label, rows of a trace that are probed).
CUTS: tuple[tuple[str, str], ...] = (("<=2 workers", "w2"), ("<=4 workers", "w4"), ("one host", "h1"))
_GAVEL_MODELS = ("ResNet-18", "ResNet-50", "Transformer", "LM")


class DataError(ValueError):
    """A throughput file that is not what its name says (unknown layout, missing columns, bad cells)."""


@dataclass(frozen=True)
class Trace:
    """Every measured step time of one model on one GPU type and cluster."""

    dataset: str  # e.g. "sia-azure", "elasticflow-a100", "gavel-k80", "shockwave-tacc-v100"
    model: str
    workers: np.ndarray
    hosts: np.ndarray
    local_batch: np.ndarray
    step_time_s: np.ndarray
    source: str  # file(s) the rows came from

    @property
    def name(self) -> str:
        return f"{self.dataset}/{self.model}"


@dataclass
class Skipped:
    """Rows left out of the benchmark, counted by reason."""

    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def add(self, reason: str, n: int = 1) -> None:
        if n:
            self.counts[reason] += int(n)


# -- unit conversion (pure) -------------------------------------------------------------
def sia_placement(placement: str | int, *, gpus_per_node: int) -> tuple[int, int]:
    """``(workers, hosts)`` of a Sia placement string: one digit per node, the GPUs used on it."""
    text = str(placement).strip()
    if not re.fullmatch(r"[1-9]+", text) or any(int(c) > gpus_per_node for c in text):
        raise DataError(
            f"placement {text!r} is not one digit 1..{gpus_per_node} per node: "
            "expected e.g. '88' (two nodes of eight GPUs); check the file's placement column"
        )
    return sum(int(c) for c in text), len(text)


def elasticflow_rows(global_batch: float, gpus: int, iterations_per_s: float, *, gpus_per_host: int) -> tuple[int, int, float, float] | None:
    """``(workers, hosts, local_batch, step_time_s)`` of one ElasticFlow cell, None when it is no measurement.

    The cell is iterations per second at a fixed global batch (strong scaling); an empty
    or zero cell was not run, and a global batch that does not split into whole
    per-GPU batches cannot have been run either.
    """
    if not math.isfinite(iterations_per_s) or iterations_per_s <= 0:
        return None
    local = global_batch / gpus
    if local < 1 or local != int(local):
        return None
    return gpus, math.ceil(gpus / gpus_per_host), float(local), 1.0 / iterations_per_s


def gavel_step_time_s(worker_steps_per_s: float, num_gpus: int) -> float:
    """Seconds per synchronous iteration from Gavel's throughput, summed over the workers."""
    return num_gpus / worker_steps_per_s


# -- loaders ---------------------------------------------------------------------------
_TEXT_COLUMNS = ("placement", "gpu_type", "model")


def _read_csv(path: Path, needed: tuple[str, ...], what: str):
    import pandas as pd

    try:
        frame = pd.read_csv(path)
    except (OSError, ValueError, UnicodeDecodeError) as exc:  # pandas' ParserError is a ValueError
        raise DataError(f"cannot read {path}: {type(exc).__name__}: {exc}; expected {what}") from None
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise DataError(
            f"{path}: missing column(s) {', '.join(missing)} (has {', '.join(map(str, frame.columns)) or 'none'}); "
            f"expected {what}"
        )
    for c in needed:
        if c in _TEXT_COLUMNS or pd.api.types.is_numeric_dtype(frame[c]):
            continue
        numbers = pd.to_numeric(frame[c], errors="coerce")
        bad = numbers.isna() & frame[c].notna()
        if bad.any():
            raise DataError(f"{path}: column {c} has non-numeric value {frame[c][bad].iloc[0]!r}; expected {what}")
        frame[c] = numbers
    return frame


_SIA_FILE = re.compile(r"(placements|scalability)-([a-z0-9-]+)\.csv")


def _read_placement_layout(path: Path, *, kind: str, gpus_per_node: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(workers, hosts, local_batch, step_time_s)`` of a Pollux/Sia ``placements`` or ``scalability`` file."""
    if kind == "placements":
        f = _read_csv(path, ("placement", "local_bsz", "step_time"), "columns placement, local_bsz, step_time")
        wh = [sia_placement(p, gpus_per_node=gpus_per_node) for p in f["placement"]]
        workers = np.array([w for w, _ in wh], float)
        hosts = np.array([h for _, h in wh], float)
    else:
        f = _read_csv(path, ("local_bsz", "step_time", "num_nodes", "num_replicas"), "columns local_bsz, step_time, num_nodes, num_replicas")
        workers = f["num_replicas"].to_numpy(float)
        hosts = f["num_nodes"].to_numpy(float)
        if np.any(workers > hosts * gpus_per_node) or np.any(hosts < 1) or np.any(workers < hosts):
            raise DataError(f"{path}: num_replicas must lie in [num_nodes, {gpus_per_node} × num_nodes]; check the file's columns")
    return workers, hosts, f["local_bsz"].to_numpy(float), f["step_time"].to_numpy(float)


def load_sia_file(path: Path) -> tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(cluster, workers, hosts, local_batch, step_time_s)`` of one Sia trace file."""
    m = _SIA_FILE.fullmatch(path.name)
    if not m or m.group(2) not in SIA_GPUS_PER_NODE:
        raise DataError(
            f"unknown Sia throughput file {path.name!r}: expected placements-<cluster>.csv or scalability-<cluster>.csv "
            f"with cluster one of {', '.join(SIA_GPUS_PER_NODE)}"
        )
    kind, cluster = m.groups()
    return (cluster, *_read_placement_layout(path, kind=kind, gpus_per_node=SIA_GPUS_PER_NODE[cluster]))


def _keep_measured(workers, hosts, batch, step, skipped: Skipped, where: str):
    ok = np.isfinite(step) & (step > 0) & np.isfinite(batch) & (batch > 0)
    skipped.add(f"{where}: step time or batch missing, zero or negative (not measured)", int(np.count_nonzero(~ok)))
    return workers[ok], hosts[ok], batch[ok], step[ok]


def _dedupe(cols: list[np.ndarray], skipped: Skipped, reason: str) -> list[np.ndarray]:
    """Drop rows identical in (workers, hosts, local batch, step time): one measurement in two files."""
    key = np.column_stack([cols[0], cols[1], cols[2], np.round(cols[3], 12)])
    _, first = np.unique(key, axis=0, return_index=True)
    first = np.sort(first)
    skipped.add(reason, len(key) - len(first))
    return [c[first] for c in cols]


def load_sia(root: Path, skipped: Skipped) -> list[Trace]:
    base = root / "sia-sosp23" / "traces"
    if not base.is_dir():
        return []
    traces: dict[tuple[str, str], Trace] = {}
    for model_dir in sorted(p for p in base.iterdir() if p.is_dir()):
        per_cluster: dict[str, list] = defaultdict(list)
        files: dict[str, list[str]] = defaultdict(list)
        for path in sorted(model_dir.glob("*.csv")):
            if not _SIA_FILE.fullmatch(path.name):
                continue
            cluster, w, h, b, s = load_sia_file(path)
            w, h, b, s = _keep_measured(w, h, b, s, skipped, f"sia {path.name}")
            per_cluster[cluster].append((w, h, b, s))
            files[cluster].append(path.name)
        for cluster, parts in per_cluster.items():
            cols = [np.concatenate([p[i] for p in parts]) for i in range(4)]
            cols = _dedupe(cols, skipped, "sia: scalability rows repeating a placements row (same measurement, other layout)")
            traces[(model_dir.name, cluster)] = Trace(
                f"sia-{cluster}", model_dir.name, *cols, source=f"sia-sosp23/traces/{model_dir.name}/{{{','.join(files[cluster])}}}"
            )
    # DGX measured twice (two batch grids); where the limited grid is only a copy of the
    # extended one (ncf), it is the same measurement and counts once.
    for (model, cluster), t in list(traces.items()):
        ext = traces.get((model, "dgx-ext"))
        if cluster == "dgx" and ext is not None:
            ka = set(zip(t.workers, t.hosts, t.local_batch, np.round(t.step_time_s, 12)))
            kb = set(zip(ext.workers, ext.hosts, ext.local_batch, np.round(ext.step_time_s, 12)))
            if ka <= kb:
                skipped.add("sia: dgx trace that repeats its dgx-ext rows exactly (ncf)", len(ka))
                del traces[(model, cluster)]
    return list(traces.values())


def load_elasticflow(root: Path, skipped: Skipped) -> list[Trace]:
    base = root / "elasticflow-asplos23" / "throughputs_A100"
    if not base.is_dir():
        return []
    out = []
    for path in sorted(base.glob("*.csv")):
        f = _read_csv(path, ("global_batch_size",), "ElasticFlow columns global_batch_size,1,2,4,...")
        gpu_cols = [c for c in f.columns if c != "global_batch_size"]
        if not gpu_cols or not all(str(c).isdigit() for c in gpu_cols):
            raise DataError(f"{path}: GPU-count columns must be integers, got {gpu_cols}; expected global_batch_size,1,2,4,...")
        rows = []
        for _, r in f.iterrows():
            for c in gpu_cols:
                v = float(r[c]) if r[c] == r[c] else math.nan
                got = elasticflow_rows(float(r["global_batch_size"]), int(c), v, gpus_per_host=ELASTICFLOW_GPUS_PER_VM)
                if got is None:
                    skipped.add("elasticflow: empty or zero cell (not run or infeasible)")
                else:
                    rows.append(got)
        if rows:
            w, h, b, s = (np.array(v, float) for v in zip(*rows))
            out.append(Trace("elasticflow-a100", path.stem, w, h, b, s, source=f"elasticflow-asplos23/throughputs_A100/{path.name}"))
    return out


def _gavel_frame(path: Path):
    return _read_csv(
        path,
        ("gpu_type", "consolidated", "model", "per_worker_batch_size", "num_gpus", "throughput_worker_steps_per_s"),
        "the flattened Gavel/Shockwave columns (see gavel-osdi20/SOURCE.md)",
    )


def load_gavel(root: Path, skipped: Skipped) -> list[Trace]:
    """Gavel's K80/P100/V100 tables and Shockwave's re-measured V100 rows.

    Spread-across-servers (``consolidated == 0``) rows get one GPU per server (hosts =
    GPUs): the source does not record the server count.
    """
    out = []
    specs = [
        ("gavel", root / "gavel-osdi20" / "gavel_simulation_throughputs_flat.csv", None),
        ("shockwave-tacc", root / "shockwave-nsdi23" / "tacc_throughputs_flat.csv", "v100"),
        ("shockwave-wisr", root / "shockwave-nsdi23" / "wisr_throughputs_flat.csv", "v100"),
    ]
    for label, path, only in specs:
        if not path.is_file():
            continue
        f = _gavel_frame(path)
        if only is not None:
            # Only the consolidated v100 rows were re-measured; the rest are Gavel's, counted there.
            new = (f.gpu_type == only) & (f.consolidated == 1)
            skipped.add(f"{label}: rows inherited from Gavel (not re-measured)", int(np.count_nonzero(~new)))
            f = f[new]
        single = ~f.model.isin(_GAVEL_MODELS)
        skipped.add(f"{label}: job types measured on one GPU only (A3C, CycleGAN, Recommendation): nothing to extrapolate", int(single.sum()))
        f = f[~single]
        for (gpu, model), g in f.groupby(["gpu_type", "model"], sort=True):
            thr = g.throughput_worker_steps_per_s.to_numpy(float)
            ok = np.isfinite(thr) & (thr > 0)
            skipped.add(f"{label}: zero throughput (did not run, e.g. out of memory)", int(np.count_nonzero(~ok)))
            g = g[ok]
            n = g.num_gpus.to_numpy(float)
            hosts = np.where(g.consolidated.to_numpy() == 1, 1.0, n)
            cols = [n, hosts, g.per_worker_batch_size.to_numpy(float), gavel_step_time_s(g.throughput_worker_steps_per_s.to_numpy(float), n)]
            # The 1-GPU row appears under both placement modes: one measurement.
            cols = _dedupe(cols, skipped, f"{label}: 1-GPU rows repeated under both placement modes")
            out.append(Trace(f"{label}-{gpu}", str(model), *cols, source=str(path.relative_to(root))))
    return out


def load_pollux_t4(root: Path, skipped: Skipped) -> list[Trace]:
    """The Pollux T4 traces (4 per g4dn.12xlarge node): the data ``KAPPA_STEP`` was calibrated on, a reference row."""
    base = root / "pollux-osdi21" / "traces"
    out = []
    for model_dir in sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []:
        parts = []
        for name in ("placements.csv", "scalability.csv"):
            path = model_dir / name
            if path.is_file():
                w, h, b, s = _read_placement_layout(path, kind=name.split(".")[0], gpus_per_node=4)
                parts.append(_keep_measured(w, h, b, s, skipped, f"pollux {name}"))
        if parts:
            cols = [np.concatenate([p[i] for p in parts]) for i in range(4)]
            cols = _dedupe(cols, skipped, "pollux: scalability rows repeating a placements row")
            out.append(Trace("pollux-t4", model_dir.name, *cols, source=f"pollux-osdi21/traces/{model_dir.name}"))
    return out


def load_all(root: Path) -> tuple[list[Trace], dict[str, int]]:
    """Every public trace with measured step times the model was not calibrated on, and the skipped rows."""
    if not root.is_dir():
        raise DataError(f"data folder {root} does not exist: pass --data pointing at shared/data")
    skipped = Skipped()
    traces = load_sia(root, skipped) + load_elasticflow(root, skipped) + load_gavel(root, skipped)
    if not traces:
        raise DataError(
            f"no throughput traces under {root}: expected sia-sosp23/traces, elasticflow-asplos23/throughputs_A100 "
            "or gavel-osdi20 / shockwave-nsdi23 flat CSVs"
        )
    return traces, dict(skipped.counts)


# -- evaluation ------------------------------------------------------------------------
def _probed(t: Trace, cut: str) -> np.ndarray:
    if cut == "w2":
        return t.workers <= 2
    if cut == "w4":
        return t.workers <= 4
    if cut == "h1":
        return t.hosts == 1
    raise ValueError(f"unknown probe set {cut!r}: expected one of {', '.join(c for _, c in CUTS)}")


def fit_like_library(
    workers: np.ndarray, hosts: np.ndarray, local_batch: np.ndarray, step_time_s: np.ndarray, **overrides: Any
):
    """The step-time model of one GPU type exactly as :func:`cotune.models.fit_models` fits it.

    ``overrides`` replace the library's priors for what-if runs (``kappa_step=``, the prior
    growth ``KAPPA_STEP``; ``growth_range=``, ``SYNC_GROWTH_RANGE``); none keeps them.
    """
    from cotune.models import StepTimeModel
    from cotune.models._outliers import find_step_outliers

    found = find_step_outliers(workers=workers, hosts=hosts, local_batch=local_batch, step_time_s=step_time_s)
    keep = ~found.mask
    return StepTimeModel(interval=0.9, n_bootstrap=16, random_state=0, **overrides).fit(
        workers[keep], hosts[keep], local_batch[keep], step_time_s[keep]
    )


def predictions(t: Trace, cut: str, **overrides: Any) -> list[dict]:
    """One row per measured configuration outside the probe set: truth, prediction, interval, distance."""
    train = _probed(t, cut)
    test = ~train
    if np.count_nonzero(train) < 2 or not np.any(test) or np.unique(t.workers[train]).size < 2:
        return []
    model = fit_like_library(t.workers[train], t.hosts[train], t.local_batch[train], t.step_time_s[train], **overrides)
    p = model.predict(t.workers[test], t.hosts[test], t.local_batch[test])
    w_max = float(t.workers[train].max())
    truth = t.step_time_s[test]
    rows = []
    for i in range(truth.size):
        w = float(t.workers[test][i])
        rows.append(
            dict(
                dataset=t.dataset,
                model=t.model,
                cut=cut,
                workers=int(w),
                hosts=int(t.hosts[test][i]),
                local_batch=float(t.local_batch[test][i]),
                step_time_s=float(truth[i]),
                predicted_s=float(p.step_time_s[i]),
                lower_s=float(p.lower_s[i]),
                upper_s=float(p.upper_s[i]),
                log_error=float(math.log(truth[i] / p.step_time_s[i])),
                covered=bool(p.lower_s[i] <= truth[i] <= p.upper_s[i]),
                doublings=max(0, math.ceil(math.log2(w / w_max) - 1e-9)),
                width=float(math.log(p.upper_s[i] / p.lower_s[i])),
                # super-linear in the probes: more workers were faster per step at some batch
                superlinear_probes=bool(len(model.departures_) > 0),
            )
        )
    return rows


def _stats(rows: list[dict]) -> dict:
    e = np.abs([r["log_error"] for r in rows])
    return dict(
        n=len(rows),
        median_abs_log_error=float(np.median(e)),
        mape=float(np.mean(np.abs(np.expm1([r["log_error"] for r in rows])))),
        coverage_90=float(np.mean([r["covered"] for r in rows])),
        below=float(np.mean([r["step_time_s"] < r["lower_s"] for r in rows])),
        above=float(np.mean([r["step_time_s"] > r["upper_s"] for r in rows])),
        median_log_width=float(np.median([r["width"] for r in rows])),
    )


def summarise(rows: list[dict]) -> dict:
    """Coverage and error pooled, per dataset, per distance, per probe set and per (dataset, distance)."""
    if not rows:
        raise DataError("no configuration to predict: every trace was entirely probed or too small to fit")
    out: dict = {"pooled": _stats(rows)}
    for name, keys in (("by_dataset", ("dataset",)), ("by_doublings", ("doublings",)), ("by_cut", ("cut",)), ("by_dataset_doublings", ("dataset", "doublings"))):
        groups: dict[str, list] = defaultdict(list)
        for r in rows:
            groups["/".join(str(r[k]) for k in keys)].append(r)
        order = sorted(groups, key=lambda g: [int(x) if x.isdigit() else x for x in g.split("/")])
        out[name] = {g: _stats(groups[g]) for g in order}
    return out


def cluster_weighted_coverage(rows: list[dict], cut: str) -> dict[int, tuple[float, int]]:
    """``{doublings: (coverage, clusters)}`` for the probe set ``cut``: the mean over clusters of
    each cluster's coverage (doublings of four and more pooled), so one large trace set does not
    speak for all."""
    by: dict[int, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r["cut"] == cut:
            by[min(int(r["doublings"]), 4)][r["dataset"]].append(bool(r["covered"]))
    return {d: (float(np.mean([np.mean(v) for v in by[d].values()])), len(by[d])) for d in sorted(by)}


def evaluate(
    traces: list[Trace], *, overrides_for: Callable[[str], dict[str, Any]] | None = None, **overrides: Any
) -> tuple[list[dict], dict]:
    """Every trace fitted on each probe set of :data:`CUTS`: the prediction rows and their summary.

    ``overrides`` go to every fit (:func:`fit_like_library`); ``overrides_for(dataset)``, when
    given, adds per-cluster ones (a prior calibrated without that cluster: :func:`held_out_priors`).
    """
    rows = [r for t in traces for _, cut in CUTS
            for r in predictions(t, cut, **overrides, **(overrides_for(t.dataset) if overrides_for else {}))]
    return rows, summarise(rows)


def held_out_priors(every: list[Trace]) -> Callable[[str], dict[str, Any]]:
    """Per cluster, the priors measured on public data recalibrated *without* that cluster
    (today ``growth_range``, :data:`cotune.models.SYNC_GROWTH_RANGE`): coverage measured
    with them is coverage on data the prior never saw."""
    samples = growth_ratio_samples(every)

    def overrides(dataset: str) -> dict[str, Any]:
        others = [r for r in samples if r[0] != dataset]
        return {"growth_range": tuple(_weighted_quantiles(others, (0.05, 0.95)))}

    return overrides


def host_crossing_samples(traces: list[Trace]) -> list[tuple[str, float, float]]:
    """``(cluster, |log error|, σ without κ_h)`` of multi-host rows predicted from one-host probes.

    Fitted with ``kappa_hosts=0`` and no bootstrap (as ``KAPPA_STEP``'s samples are), so σ
    is everything else the interval already carries there: ``σ_cv`` and ``κ_t · d``.
    """
    from cotune.models import StepTimeModel

    out = []
    for t in traces:
        train = _probed(t, "h1")
        test = ~train
        if not np.any(test) or np.unique(t.workers[train]).size < 2:
            continue
        m = StepTimeModel(n_bootstrap=0, kappa_hosts=0.0).fit(t.workers[train], t.hosts[train], t.local_batch[train], t.step_time_s[train])
        p = m.predict(t.workers[test], t.hosts[test], t.local_batch[test])
        err = np.abs(np.log(t.step_time_s[test] / p.step_time_s))
        out += [(t.dataset, float(e), float(s)) for e, s in zip(err, p.log_sigma)]
    return out


def calibrate_kappa_hosts(samples: list[tuple[str, float, float]], *, level: float = 0.9) -> dict[str, float]:
    """κ_h at which the interval covers ``level`` of the samples, each cluster weighing one in
    total (Sia's big tables would otherwise speak for all), and its value with each cluster left out."""
    from cotune.models._step_time import growth_for_coverage

    def kappa(rows: list) -> float:
        e, s = (np.array([r[i] for r in rows]) for i in (1, 2))
        return growth_for_coverage(e, s, np.ones(e.shape), level=level, weights=_cluster_weights(rows))

    return _leave_one_cluster_out("KAPPA_HOSTS", kappa, samples)


def _cluster_weights(rows: list) -> np.ndarray:
    """One weight per sample (its cluster is ``row[0]``) so that each cluster weighs one in total."""
    count: dict[str, int] = defaultdict(int)
    for r in rows:
        count[r[0]] += 1
    return np.array([1.0 / count[r[0]] for r in rows])


def _leave_one_cluster_out(name: str, estimate, samples: list) -> dict[str, float]:
    """``estimate`` on every sample (as ``name``), with each cluster left out, and on each alone."""
    out = {name: estimate(samples)}
    for c in sorted({r[0] for r in samples}):
        out[f"without {c}"] = estimate([r for r in samples if r[0] != c])
        out[f"{c} alone"] = estimate([r for r in samples if r[0] == c])
    return out


def growth_ratio_samples(traces: list[Trace]) -> list[tuple[str, str, float]]:
    """``(cluster, model, β_r / α_r)`` of the backbone fitted on every row of each trace whose
    one-host rows reach more than two workers (intra-host growth identified).

    Outlier records are left out and repeats averaged as :class:`cotune.models.StepTimeModel`
    does before it fits the backbone.
    """
    from cotune.models import fit_backbone
    from cotune.models._outliers import find_step_outliers

    out = []
    for t in traces:
        if not np.any((t.workers > 2) & (t.hosts == 1)):
            continue
        keep = ~find_step_outliers(workers=t.workers, hosts=t.hosts, local_batch=t.local_batch, step_time_s=t.step_time_s).mask
        keys = np.column_stack([t.workers[keep], t.hosts[keep], t.local_batch[keep]])
        points, inverse, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
        mean_log = np.bincount(inverse.ravel(), weights=np.log(t.step_time_s[keep])) / counts
        p = fit_backbone(points[:, 0], points[:, 1], points[:, 2], mean_log, counts)
        out.append((t.dataset, t.model, float(p[3] / max(p[2], 1e-12))))
    return out


def calibrate_growth_ratio(samples: list[tuple[str, str, float]]) -> dict[str, float]:
    """``SYNC_GROWTH_RATIO``: the median over clusters of each cluster's median β_r / α_r (each
    cluster weighing one), its value with each cluster left out, and each cluster's own."""

    return _leave_one_cluster_out("SYNC_GROWTH_RATIO", _median_of_cluster_medians, samples)


def _covered_by_the_others_range(samples: list[tuple[str, str, float]]) -> dict[str, float]:
    """With each cluster left out, the share of its values inside the 5–95 % range the other
    clusters give (each weighing one): an honest check, as the range never saw them."""
    out: dict[str, float] = {}
    clusters = sorted({r[0] for r in samples})
    for c in clusters if len(clusters) > 1 else ():
        lo, hi = _weighted_quantiles([r for r in samples if r[0] != c], (0.05, 0.95))
        own = np.array([r[2] for r in samples if r[0] == c])
        out[f"{c}: covered by the others' range"] = float(np.mean((own >= lo) & (own <= hi)))
    return out


def calibrate_growth_range(samples: list[tuple[str, str, float]]) -> dict[str, float]:
    """``SYNC_GROWTH_RANGE``: the 5 % and 95 % quantiles of β_r / α_r over every trace, each
    cluster weighing one; with each cluster left out, the share of its traces inside the
    range the other clusters give (it never saw them)."""
    out = dict(zip(("SYNC_GROWTH_RANGE low", "SYNC_GROWTH_RANGE high"), _weighted_quantiles(samples, (0.05, 0.95))))
    return {**out, **_covered_by_the_others_range(samples)}


def _median_of_cluster_medians(rows: list[tuple[str, str, float]]) -> float:
    """Each cluster's median value, then the median over clusters (each weighing one)."""
    by: dict[str, list[float]] = defaultdict(list)
    for c, _, r in rows:
        by[c].append(r)
    return float(np.median([np.median(v) for v in by.values()]))


def constant_share_samples(traces: list[Trace], *, min_ratio: float = 2.0) -> list[tuple[str, str, float]]:
    """``(cluster, model, c)``: the constant share of one-worker step time implied by every
    ordered pair of measured local batches ``b₀ → b₁`` at least ``min_ratio`` apart.

    With one batch probed the backbone splits the step time ``t₀`` at ``b₀`` into a
    constant ``c·t₀`` and per-sample compute ``(1 − c)·t₀``, so it predicts
    ``t₁ = t₀·(c + (1 − c)·r)`` at ``r = b₁/b₀``; the measured pair implies
    ``c = (r − t₁/t₀) / (r − 1)`` (medians of repeats; pairs closer than ``min_ratio``
    are left out, their implied share is mostly noise).
    """
    out = []
    for t in traces:
        one = (t.workers == 1) & (t.hosts == 1)
        b, st = t.local_batch[one], t.step_time_s[one]
        ub = np.unique(b)
        med = np.array([np.median(st[b == x]) for x in ub])
        for i in range(ub.size):
            for j in range(ub.size):
                r = ub[j] / ub[i]
                if i != j and (r >= min_ratio or r <= 1.0 / min_ratio):
                    out.append((t.dataset, t.model, float((r - med[j] / med[i]) / (r - 1.0))))
    return out


def _weighted_quantiles(rows: list[tuple[str, str, float]], qs: tuple[float, ...]) -> list[float]:
    """Quantiles of the shares, each cluster weighing one in total."""
    c = np.array([r[2] for r in rows])
    w = _cluster_weights(rows)
    order = np.argsort(c)
    cum = np.cumsum(w[order]) - 0.5 * w[order]
    return [float(np.interp(q, cum / w.sum(), c[order])) for q in qs]


def calibrate_constant_share(samples: list[tuple[str, str, float]]) -> dict[str, float]:
    """``ONE_BATCH_CONSTANT_SHARE`` (median) and ``ONE_BATCH_SHARE_RANGE`` (5 % and 95 %) of the
    implied shares, each cluster weighing one; with each cluster left out, the coverage of
    that cluster's pairs by the range the other clusters give (an honest check: the range
    never saw them)."""
    out: dict[str, float] = {}
    for name, q in (("ONE_BATCH_CONSTANT_SHARE", 0.5), ("ONE_BATCH_SHARE_RANGE low", 0.05), ("ONE_BATCH_SHARE_RANGE high", 0.95)):
        out[name] = _weighted_quantiles(samples, (q,))[0]
    return {**out, **_covered_by_the_others_range(samples)}


def sync_constant_samples(traces: list[Trace]) -> list[tuple[str, str, float]]:
    """``(cluster, model, t₂/t₁ − 1)``: how much slower a step on two workers of one host is
    than on one worker at the same local batch (medians of repeats), every batch both ran."""
    out = []
    for t in traces:
        for b in np.unique(t.local_batch):
            one = (t.workers == 1) & (t.local_batch == b)
            two = (t.workers == 2) & (t.hosts == 1) & (t.local_batch == b)
            if np.any(one) and np.any(two):
                out.append((t.dataset, t.model, float(np.median(t.step_time_s[two]) / np.median(t.step_time_s[one]) - 1.0)))
    return out


def calibrate_sync_constant(samples: list[tuple[str, str, float]]) -> dict[str, float]:
    """``SYNC_CONSTANT_RATIO``: the median over clusters of each cluster's median two-worker
    slowdown (each cluster weighing one), with each cluster left out, and each cluster's own."""

    return _leave_one_cluster_out("SYNC_CONSTANT_RATIO", _median_of_cluster_medians, samples)


def few_probe_design(t: Trace, k: int) -> np.ndarray:
    """``k`` distinct measured configurations of ``t``, farthest-point in (log₂ workers,
    hosts ≤ 2, log₂ local batch) from the smallest worker count at the median batch — the
    benchmark's seed design (``benchmarks.policies.seed_design``) on a trace's rows."""
    from benchmarks.policies import farthest_points

    keys = np.unique(np.column_stack([t.workers, t.hosts, t.local_batch]), axis=0)
    coords = np.column_stack([np.log2(keys[:, 0]), np.minimum(keys[:, 1], 2), np.log2(keys[:, 2])])
    small = np.flatnonzero(keys[:, 0] == keys[:, 0].min())
    start = int(small[np.argmin(np.abs(coords[small, 2] - np.median(coords[:, 2])))])
    return keys[farthest_points(coords, start=start, k=k)]


def few_probe_samples(traces: list[Trace], ks: tuple[int, ...] = (1, 2, 3, 4, 5)) -> list[tuple[str, int, float, float, float]]:
    """``(cluster, k, |log error|, σ without the few-probe term, doublings to the nearest
    probe)`` of every other row of each trace predicted from ``k`` probes
    (:func:`few_probe_design`; no bootstrap)."""
    from cotune.models import StepTimeModel
    from cotune.models._step_time import nearest_probe_doublings

    out = []
    for t in traces:
        for k in ks:
            design = few_probe_design(t, k)
            if len(design) < k:
                continue
            train = np.zeros(t.workers.size, bool)
            for w, h, b in design:
                train |= (t.workers == w) & (t.hosts == h) & (t.local_batch == b)
            test = ~train
            m = StepTimeModel(n_bootstrap=0, few_probe_kappa=None).fit(
                t.workers[train], t.hosts[train], t.local_batch[train], t.step_time_s[train])
            p = m.predict(t.workers[test], t.hosts[test], t.local_batch[test])
            err = np.abs(np.log(t.step_time_s[test] / p.step_time_s))
            near = nearest_probe_doublings(design.astype(float), t.workers[test], t.hosts[test], t.local_batch[test])
            out += [(t.dataset, k, float(e), float(sg), float(d)) for e, sg, d in zip(err, p.log_sigma, near)]
    return out


def calibrate_few_probe_kappa(samples: list[tuple[str, int, float, float, float]], *, level: float = 0.9) -> dict[str, float]:
    """``FEW_PROBE_KAPPA[k − 1]``: the σ per doubling from the nearest probe that, added to
    the rest, makes the interval cover ``level`` of the k-probe samples, each cluster weighing
    one in total; with each cluster left out, that cluster's coverage by the others' values."""
    from cotune.models._step_time import growth_for_coverage, z_for

    def kappa(rows: list) -> float:
        e, sg, d = (np.array([r[i] for r in rows]) for i in (2, 3, 4))
        return growth_for_coverage(e, sg, d, level=level, weights=_cluster_weights(rows))

    out: dict[str, float] = {}
    ks = sorted({r[1] for r in samples})
    for k in ks:
        out[f"FEW_PROBE_KAPPA k={k}"] = kappa([r for r in samples if r[1] == k])
    z = z_for(level)
    clusters = sorted({r[0] for r in samples})
    for c in clusters if len(clusters) > 1 else ():
        hits = []
        for k in ks:
            k_c = kappa([r for r in samples if r[1] == k and r[0] != c])
            hits += [r[2] <= z * math.hypot(r[3], k_c * r[4]) for r in samples if r[1] == k and r[0] == c]
        out[f"{c}: covered with the others' values"] = float(np.mean(hits))
    return out


# Distance bins (doublings, see cotune.solver.config_doublings) of the pairwise error correlations.
CORRELATION_BINS = ((0.0, 0.6), (0.6, 1.1), (1.1, 2.1), (2.1, 3.1), (3.1, 4.1), (4.1, 8.1))


def per_configuration(t: Trace) -> Trace:
    """``t`` with one row per (workers, hosts, local batch): the median of its measurements
    (the step time a plan runs at; placements of the same shape differ by noise)."""
    keys, inverse = np.unique(np.column_stack([t.workers, t.hosts, t.local_batch]), axis=0, return_inverse=True)
    inverse = inverse.ravel()
    step = np.array([float(np.median(t.step_time_s[inverse == k])) for k in range(len(keys))])
    return Trace(t.dataset, t.model, keys[:, 0], keys[:, 1], keys[:, 2], step, t.source)


def error_correlation_samples(traces: list[Trace]) -> list[tuple[str, float, float, int]]:
    """``(cluster, mean distance, correlation, pairs)`` of the step-time model's errors at
    pairs of predicted configurations, by distance bin (:data:`CORRELATION_BINS`).

    Each trace (one row per configuration, :func:`per_configuration`) is fitted on what a
    user would have probed — ≤ 2 and ≤ 4 workers, one
    host, and 3 and 5 farthest-point probes — and every other row is predicted; ``u`` is
    its log error over the predicted σ. A bin's correlation is ``Σ u_i u_k / Σ ½(u_i² + u_k²)``
    over the pairs of every fit of the cluster (each fit weighing by its pairs).
    """
    from cotune.models import StepTimeModel
    from cotune.solver import config_doublings

    sums: dict[tuple[str, int], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for t in traces:
        t = per_configuration(t)
        designs = [_probed(t, cut) for _, cut in CUTS]
        for k in (3, 5):
            train = np.zeros(t.workers.size, bool)
            for w, h, b in few_probe_design(t, k):
                train |= (t.workers == w) & (t.hosts == h) & (t.local_batch == b)
            designs.append(train)
        for train in designs:
            test = ~train
            if np.count_nonzero(train) < 2 or np.count_nonzero(test) < 2 or np.unique(t.workers[train]).size < 2:
                continue
            m = StepTimeModel(n_bootstrap=0).fit(t.workers[train], t.hosts[train], t.local_batch[train], t.step_time_s[train])
            p = m.predict(t.workers[test], t.hosts[test], t.local_batch[test])
            u = np.log(t.step_time_s[test] / p.step_time_s) / np.maximum(p.log_sigma, 1e-6)
            w, h, b = (np.asarray(a, float) for a in (t.workers[test], t.hosts[test], t.local_batch[test]))
            d = config_doublings(w[:, None], h[:, None], b[:, None], w[None, :], h[None, :], b[None, :])
            iu = np.triu_indices(u.size, 1)
            dd, prod, sq = d[iu], u[iu[0]] * u[iu[1]], 0.5 * (u[iu[0]] ** 2 + u[iu[1]] ** 2)
            for n, (lo, hi) in enumerate(CORRELATION_BINS):
                sel = (dd > lo) & (dd <= hi)
                if np.any(sel):
                    acc = sums[(t.dataset, n)]
                    acc[0] += float(prod[sel].sum())
                    acc[1] += float(sq[sel].sum())
                    acc[2] += float(dd[sel].sum())
                    acc[3] += float(sel.sum())
    return [(c, acc[2] / acc[3], acc[0] / acc[1], int(acc[3])) for (c, _), acc in sorted(sums.items()) if acc[1] > 0]


def calibrate_correlation_length(samples: list[tuple[str, float, float, int]]) -> dict[str, float]:
    """``STEP_CORRELATION_DOUBLINGS``: the length ``ℓ`` of ``ρ(d) = exp(−d/ℓ)`` fitted by least
    squares to every (cluster, bin) correlation, each cluster weighing one in total; then
    ``ℓ`` with each cluster left out, and each bin's median correlation over the clusters."""
    from scipy.optimize import minimize_scalar

    def length(rows: list) -> float:
        counts: dict[str, int] = defaultdict(int)
        for r in rows:
            counts[r[0]] += 1
        d = np.array([r[1] for r in rows])
        rho = np.array([r[2] for r in rows])
        wt = np.array([1.0 / counts[r[0]] for r in rows])
        return float(minimize_scalar(lambda ell: float(np.sum(wt * (rho - np.exp(-d / ell)) ** 2)),
                                     bounds=(0.1, 20.0), method="bounded").x)

    out = {"STEP_CORRELATION_DOUBLINGS": length(samples)}
    for n, (lo, hi) in enumerate(CORRELATION_BINS):
        rows = [r for r in samples if lo < r[1] <= hi]
        if rows:
            out[f"bin {lo:g}-{hi:g}: median correlation"] = float(np.median([r[2] for r in rows]))
            out[f"bin {lo:g}-{hi:g}: exp(-d/l) at its mean distance"] = math.exp(
                -float(np.mean([r[1] for r in rows])) / out["STEP_CORRELATION_DOUBLINGS"])
    clusters = sorted({r[0] for r in samples})
    for c in clusters if len(clusters) > 1 else ():
        out[f"{c}: length without it"] = length([r for r in samples if r[0] != c])
    return out


def _fmt(s: dict) -> str:
    return f"{s['coverage_90']:.1%} / {s['median_abs_log_error']:.3f} ({s['n']})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.public_step_time", description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="the shared data folder (default: ../shared/data beside the repo)")
    parser.add_argument("--json", metavar="FILE", default=None, help="also write the summary, rows skipped and every prediction here")
    parser.add_argument(
        "--reference", action="store_true", help="also the Pollux T4 traces KAPPA_STEP was calibrated on, the same way (a separate row; a few seconds more)"
    )
    parser.add_argument(
        "--held-out", action="store_true", help="fit each cluster with the priors measured on public data recalibrated without it"
    )
    parser.add_argument(
        "--calibrate", action="store_true", help="print KAPPA_HOSTS (one-host probes), SYNC_GROWTH_RATIO (every row), the one-batch constant share (one-worker rows), FEW_PROBE_KAPPA (1-5 probes) and STEP_CORRELATION_DOUBLINGS (pairs of predicted rows) from every cluster, Pollux T4 included, and exit"
    )
    args = parser.parse_args(argv)
    try:
        if args.data:
            root = Path(args.data)
        else:
            from benchmarks.traces import data_root

            root = data_root()
        traces, skipped = load_all(root)
        if args.calibrate:
            every = traces + load_pollux_t4(root, Skipped())
            for got in (calibrate_kappa_hosts(host_crossing_samples(every)), calibrate_growth_ratio(growth_ratio_samples(every)),
                        calibrate_growth_range(growth_ratio_samples(every)),
                        calibrate_sync_constant(sync_constant_samples(every)),
                        calibrate_constant_share(constant_share_samples(every)),
                        calibrate_few_probe_kappa(few_probe_samples(every)),
                        calibrate_correlation_length(error_correlation_samples(every))):
                for name, value in got.items():
                    print(f"{name:34s} {value:.4f}")
            return 0
        held = held_out_priors(traces + load_pollux_t4(root, Skipped())) if args.held_out else None
        rows, summary = evaluate(traces, overrides_for=held)
        reference = evaluate(load_pollux_t4(root, Skipped()))[1] if args.reference else None
    except (DataError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        payload = dict(summary=summary, reference_pollux_t4=reference, skipped=skipped, traces=[dict(name=t.name, rows=int(t.workers.size), source=t.source) for t in traces], rows=rows)
        Path(args.json).write_text(json.dumps(payload, indent=1) + "\n")
    datasets = list(summary["by_dataset"])
    dists = list(summary["by_doublings"])
    print(f"{len(traces)} traces, {len(rows)} predictions (probes: {', '.join(l for l, _ in CUTS)})")
    print("coverage of the 90 % interval / median |log error| (n), by doublings of workers beyond the probes")
    print(f"{'dataset':22s} " + " ".join(f"{'d=' + d:>24s}" for d in dists) + f" {'all':>24s}")
    for ds in datasets:
        cells = [summary["by_dataset_doublings"].get(f"{ds}/{d}") for d in dists]
        print(f"{ds:22s} " + " ".join(f"{_fmt(c) if c else '':>24s}" for c in cells) + f" {_fmt(summary['by_dataset'][ds]):>24s}")
    print(f"{'all':22s} " + " ".join(f"{_fmt(summary['by_doublings'][d]):>24s}" for d in dists) + f" {_fmt(summary['pooled']):>24s}")
    if reference is not None:
        cells = [reference["by_doublings"].get(d) for d in dists]
        print(f"{'pollux-t4 (calibration)':22s} " + " ".join(f"{_fmt(c) if c else '':>24s}" for c in cells) + f" {_fmt(reference['pooled']):>24s}")
    for label, cut in CUTS:
        if cut in summary["by_cut"]:
            ref = f"   pollux-t4 {_fmt(reference['by_cut'][cut])}" if reference is not None else ""
            print(f"probes on {label:12s} {_fmt(summary['by_cut'][cut])}{ref}")
    for label, cut in CUTS:
        cells = cluster_weighted_coverage(rows, cut)
        if cells:
            print(f"probes on {label:12s} each cluster weighing one, by doublings: "
                  + ", ".join(f"d={d} {c:.1%} ({k})" for d, (c, k) in cells.items()))
    print("skipped rows (not measurements):")
    for reason, n in sorted(skipped.items()):
        print(f"  {n:5d}  {reason}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
