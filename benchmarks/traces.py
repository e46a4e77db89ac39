"""Ground truth from published measurements: step-time tables and learning curves.

Nothing here is fitted. A :class:`Workload` holds, for one model and one set of GPU
types, every measured step time (``(gpu, workers, hosts, local_batch) → seconds``) and
every measured learning curve (``global_batch → (epochs, metric)``), read from the
public artifacts under ``<repo>/../shared/data`` (see each ``SOURCE.md`` there):

* Pollux OSDI'21 (Apache-2.0): T4 step times from ``placements.csv`` (1–16 GPUs) and
  ``scalability.csv`` (6–64 GPUs), learning curves ``validation-<B>.csv``, six models.
* Gavel OSDI'20 (MIT): K80 and P100 iteration times of ResNet-18 (CIFAR-10) and
  ResNet-50 (ImageNet), one server, 1/2/4/8 GPUs (``gavel_simulation_throughputs_flat.csv``).
* Shockwave NSDI'23 (MIT): the re-measured V100 rows of the same jobs
  (``tacc_throughputs_flat.csv``); Gavel's own consolidated V100 rows are
  non-monotone in GPUs (its ``SOURCE.md`` flags them), so V100 comes from here.

Several placements of one ``(workers, hosts)`` (e.g. ``13``, ``31``, ``22``) are
combined by their median step time: the benchmark's configurations are
``(gpu, workers, hosts, local_batch)``, and a replayed probe answers with that median.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import numpy as np

__all__ = [
    "POLLUX_MODELS",
    "HETERO_PRICES",
    "T4_PRICE_PER_HOUR",
    "Curve",
    "Workload",
    "data_root",
    "load_pollux",
    "load_hetero",
    "derived_dataset_size",
]

# Training-set sizes (samples per epoch). cifar10, imagenet and yolov3 are the public
# dataset sizes; bert is SQuAD v1.1 features at max_seq_len 384 (~88.6k); deepspeech2 and
# ncf are derived from the traces themselves (see :func:`derived_dataset_size`): the
# `progress` column counts reference-batch iterations and each row is one reference
# epoch, so N ≈ progress_per_row × B_ref. For ncf that gives 4,970,854 ≈ 994,169
# MovieLens-1M training ratings (1,000,209 minus one held-out rating per 6,040 users)
# × (1 positive + 4 sampled negatives) = 4,970,845, which we use; for deepspeech2
# (VoxForge CMU-US subset, no published count) the trace gives 7,134 utterances.
POLLUX_MODELS: Mapping[str, dict] = {
    "cifar10": dict(dataset_size=50_000, metric="top1", goal="max", initial_local_batch=128),
    "imagenet": dict(dataset_size=1_281_167, metric="top1", goal="max", initial_local_batch=200),
    "deepspeech2": dict(dataset_size=7_134, metric="wer", goal="min", initial_local_batch=20),
    "yolov3": dict(dataset_size=16_551, metric="val_loss", goal="min", initial_local_batch=8),
    "bert": dict(dataset_size=88_641, metric="f1", goal="max", initial_local_batch=12),
    "ncf": dict(dataset_size=4_970_845, metric="hr10", goal="max", initial_local_batch=256),
}

# USD per GPU-hour, on demand. T4: AWS g4dn.12xlarge (4 × T4, the Pollux testbed)
# $3.912/h ÷ 4. K80/P100/V100: Google Cloud's published per-GPU list prices
# (us-central1, on demand, GPU only): $0.45, $1.46, $2.48. One provider for the three
# types keeps their ratios consistent; AWS has no P100 instance.
T4_PRICE_PER_HOUR = 3.912 / 4
HETERO_PRICES: Mapping[str, float] = {"k80": 0.45, "p100": 1.46, "v100": 2.48}

# Gavel/Shockwave job names of the two Pollux models they also measured.
_GAVEL_JOBS = {"cifar10": "ResNet-18", "imagenet": "ResNet-50"}


def data_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    """``shared/data`` beside the repository (CI and dev layout), or an explicit path.

    Order: the argument, ``$COTUNE_SHARED_DATA``, ``<repo root>/../shared/data``.
    """
    candidates = []
    if explicit:
        candidates.append(Path(explicit))
    if os.environ.get("COTUNE_SHARED_DATA"):
        candidates.append(Path(os.environ["COTUNE_SHARED_DATA"]))
    repo_root = Path(__file__).resolve().parent.parent
    candidates.append(repo_root.parent / "shared" / "data")
    for path in candidates:
        if (path / "pollux-osdi21" / "traces").is_dir():
            return path
    raise FileNotFoundError(
        "published traces not found: expected pollux-osdi21/traces under "
        + " or ".join(str(p) for p in candidates)
        + "; check out shared/ beside the repository or set COTUNE_SHARED_DATA"
    )


@dataclass(frozen=True)
class Curve:
    """One measured learning curve at a fixed global batch (real epochs, raw metric)."""

    global_batch: int
    epochs: np.ndarray
    metric: np.ndarray
    grad_sqr: np.ndarray
    grad_var: np.ndarray


@dataclass(frozen=True)
class Workload:
    """Everything measured about one model on one set of GPU types.

    ``steps`` maps ``(gpu, workers, hosts, local_batch)`` to seconds per step.
    ``curves`` are keyed by global batch, ascending. ``reference_batch`` is the
    smallest measured global batch (Pollux's reference; gradient statistics are
    measured at it).
    """

    name: str
    model: str
    family: str
    dataset_size: int
    metric: str
    goal: str
    gpus: tuple[str, ...]
    gpus_per_host: int
    prices: Mapping[str, float]
    steps: Mapping[tuple[str, int, int, int], float]
    curves: Mapping[int, Curve]
    initial_local_batch: int
    source: str = ""
    notes: tuple[str, ...] = field(default=())

    @property
    def batches(self) -> tuple[int, ...]:
        return tuple(sorted(self.curves))

    @property
    def reference_batch(self) -> int:
        return self.batches[0]

    def score(self, metric: np.ndarray | float) -> np.ndarray:
        """Metric as a higher-is-better score (negated for ``goal == 'min'``)."""
        m = np.asarray(metric, float)
        return m if self.goal == "max" else -m

    def noise_rows(self, global_batch: int | None = None) -> np.ndarray:
        """The gradient statistics a curve logged (default: the reference curve's) as the
        accuracy model's ``noise_trace``: rows ``(global_batch, epoch, grad_var / grad_sqr ×
        B_ref)`` — AdaptDL measures them at the reference batch — where both are finite and
        positive (the rows a run's noise records would hold)."""
        b = self.reference_batch if global_batch is None else global_batch
        c = self.curves[b]
        with np.errstate(all="ignore"):
            ok = np.isfinite(c.grad_sqr) & np.isfinite(c.grad_var) & (c.grad_sqr > 0) & (c.grad_var > 0)
            value = c.grad_var / c.grad_sqr * self.reference_batch
        return np.column_stack([np.full(int(ok.sum()), float(b)), c.epochs[ok], value[ok]])

    def noise_scale(self, global_batch: int | None = None) -> float | None:
        """The whole curve's noise scale (default: the reference curve's), as a profile holding
        :meth:`noise_rows` as noise records reads it (:meth:`cotune.profile.Profile.noise_scale`:
        their median); None without usable gradient statistics."""
        rows = self.noise_rows(global_batch)
        return float(np.median(rows[:, 2])) if len(rows) else None


def _read_csv(path: Path) -> dict[str, np.ndarray]:
    import pandas as pd

    frame = pd.read_csv(path)
    return {c: frame[c].to_numpy() for c in frame.columns}


def _median_table(rows: list[tuple[tuple[str, int, int, int], float]]) -> dict[tuple[str, int, int, int], float]:
    grouped: dict[tuple[str, int, int, int], list[float]] = {}
    for key, value in rows:
        grouped.setdefault(key, []).append(value)
    return {k: float(np.median(v)) for k, v in sorted(grouped.items())}


def _pollux_curves(trace_dir: Path, dataset_size: int) -> dict[int, Curve]:
    curves = {}
    for path in trace_dir.glob("validation-*.csv"):
        batch = int(path.stem.split("-")[1])
        c = _read_csv(path)
        # `iteration` counts steps at this global batch: real epochs = steps × B / N.
        curves[batch] = Curve(
            global_batch=batch,
            epochs=c["iteration"].astype(float) * batch / dataset_size,
            metric=c["metric"].astype(float),
            grad_sqr=c["grad_sqr"].astype(float),
            grad_var=c["grad_var"].astype(float),
        )
    return dict(sorted(curves.items()))


def derived_dataset_size(trace_dir: Path) -> float:
    """Training samples per epoch implied by a Pollux validation trace.

    Row *k* of ``validation-<B_ref>.csv`` is where progress first reaches *k* reference
    epochs of ``B_ref``-sample steps, so ``N ≈ progress[-1] / rows × B_ref``.
    """
    files = sorted(trace_dir.glob("validation-*.csv"), key=lambda p: int(p.stem.split("-")[1]))
    ref = files[0]
    c = _read_csv(ref)
    return float(c["progress"][-1]) / len(c["progress"]) * int(ref.stem.split("-")[1])


def load_pollux(model: str, *, root: Path | None = None) -> Workload:
    """One Pollux model on T4 (4 per host), 1–64 workers, all measured curves."""
    root = data_root(root)
    spec = POLLUX_MODELS[model]
    trace_dir = root / "pollux-osdi21" / "traces" / model
    rows = []
    p = _read_csv(trace_dir / "placements.csv")
    for placement, b, t in zip(p["placement"], p["local_bsz"], p["step_time"]):
        digits = [int(d) for d in str(placement)]
        rows.append((("t4", sum(digits), len(digits), int(b)), float(t)))
    s = _read_csv(trace_dir / "scalability.csv")
    for n, h, b, t in zip(s["num_replicas"], s["num_nodes"], s["local_bsz"], s["step_time"]):
        rows.append((("t4", int(n), int(h), int(b)), float(t)))
    return Workload(
        name=f"{model}-t4",
        model=model,
        family="pollux-t4",
        dataset_size=spec["dataset_size"],
        metric=spec["metric"],
        goal=spec["goal"],
        gpus=("t4",),
        gpus_per_host=4,
        prices={"t4": T4_PRICE_PER_HOUR},
        steps=_median_table(rows),
        curves=_pollux_curves(trace_dir, spec["dataset_size"]),
        initial_local_batch=spec["initial_local_batch"],
        source="Pollux OSDI'21 traces (petuum/adaptdl@c793c70, Apache-2.0)",
    )


def load_hetero(model: str, *, root: Path | None = None) -> Workload:
    """ResNet-18/CIFAR-10 or ResNet-50/ImageNet on K80, P100 (Gavel) and V100 (Shockwave TACC).

    One server, 1/2/4/8 GPUs; learning curves from the Pollux traces of the same model
    (the curves depend on the global batch, not on the GPU type).
    """
    import pandas as pd

    root = data_root(root)
    job = _GAVEL_JOBS[model]
    spec = POLLUX_MODELS[model]
    gavel = pd.read_csv(root / "gavel-osdi20" / "gavel_simulation_throughputs_flat.csv")
    tacc = pd.read_csv(root / "shockwave-nsdi23" / "tacc_throughputs_flat.csv")
    parts = [
        gavel[gavel.gpu_type.isin(["k80", "p100"])],
        tacc[tacc.gpu_type == "v100"],
    ]
    rows = []
    for frame in parts:
        sel = frame[(frame.model == job) & (frame.consolidated == 1) & (frame.throughput_worker_steps_per_s > 0)]
        for g, n, b, t in zip(sel.gpu_type, sel.num_gpus, sel.per_worker_batch_size, sel.sync_iteration_time_s):
            rows.append(((str(g), int(n), 1, int(b)), float(t)))
    trace_dir = root / "pollux-osdi21" / "traces" / model
    return Workload(
        name=f"{model}-hetero",
        model=model,
        family="gavel-hetero",
        dataset_size=spec["dataset_size"],
        metric=spec["metric"],
        goal=spec["goal"],
        gpus=("k80", "p100", "v100"),
        gpus_per_host=8,
        prices=dict(HETERO_PRICES),
        steps=_median_table(rows),
        curves=_pollux_curves(trace_dir, spec["dataset_size"]),
        initial_local_batch=min(spec["initial_local_batch"], 128),
        source="Gavel OSDI'20 (K80, P100; MIT) + Shockwave NSDI'23 TACC (V100; MIT); curves from Pollux OSDI'21",
    )


# -- registry entries: one per replayable workload ------------------------------------
def _register() -> None:
    from functools import partial

    from benchmarks._registry import TRACES, trace

    if TRACES:
        return
    for model in POLLUX_MODELS:
        trace(f"{model}-t4", family="pollux-t4", description=f"Pollux OSDI'21 {model} on 1–64 T4")(partial(load_pollux, model))
    for model in _GAVEL_JOBS:
        trace(f"{model}-hetero", family="gavel-hetero", description=f"{_GAVEL_JOBS[model]} on K80/P100 (Gavel) and V100 (Shockwave)")(
            partial(load_hetero, model)
        )


_register()
