"""Calibration when the truth departs from cotune's model: P(success), intervals and plans by truth family.

The other calibration figures replay published traces or draw truths inside the model's
family. This draws seeded synthetic jobs whose truth is *inside* the model's family
(``control``) or departs from it in one named way (a warm-up phase, a plateau that falls
with the batch, more run-to-run scatter than the prior, …; :data:`FAMILIES`), and for each
job builds the profile a user has — step probes at workers 1, 2, 4 and local batches 32,
64, 128 on one 4-GPU host with noise, ONE learning curve at the reference batch 512, a
gradient-noise record — through the documented profile format
(:func:`cotune.profile.parse_profile`), asks :func:`cotune.recommend` at confidence 0.9 over
a fixed grid (1–16 T4 workers × local batches 32–256, 64 candidates), draws one fresh run
per candidate from the truth and scores what was promised against what happened::

    python -m benchmarks.misspecified --jobs 2 --out /tmp/misspecified    # 60 jobs per family (2–9 min on 2 cores)
    python -m benchmarks.misspecified --quick                             # 4 jobs per family (under 1 min)
    python -m benchmarks.misspecified --families control,warmup --n-jobs 20

Scored per family, over every candidate of every job: P(success) promised against
delivered in bins; candidates promised P(reach) ≥ 0.9 against how many reach; the 90 %
intervals' coverage of the true step time, of a fresh run's epochs (where it reaches) and of
its time (where it reaches and the interval is finite, i.e. P(reach) ≥ ½); and the plans:
cotune's chosen plan at q = 0.9, and at q = 0.5 the cheapest candidate with P(success) ≥ 0.5
(the recommend() near-tie rule, which may pick a safer candidate close in cost, is ignored
there). The families are hand-chosen stress tests, not a sample of real jobs.

Job ``k`` of every family draws the same base truth and the same noise (paired across
families); the family's own departure draws come from a stream of its own. Jobs share
nothing else. A job that raises is counted and listed under ``errors``, never dropped
silently. ``--out DIR`` writes ``results.json`` and ``report.md``; the table goes to stdout,
progress to stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import zlib
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

__all__ = [
    "Family",
    "FAMILIES",
    "Truth",
    "JobResult",
    "make_truth",
    "run_job",
    "score_family",
    "run",
    "markdown",
    "main",
]

DATASET_SIZE = 50_000
GPU = "t4"
PRICES = {GPU: 0.526}
GPUS_PER_HOST = 4
MAX_WORKERS = 16
LOCAL_BATCHES = (32, 64, 128, 256)
PROBE_WORKERS = (1, 2, 4)  # the user's probes: one 4-GPU host
PROBE_BATCHES = (32, 64, 128)
REF_BATCH = 512  # the one learning curve's global batch
CURVE_POINTS = 25
EVAL_NOISE = 0.003
PROBE_NOISE = 0.03  # log step-time noise of a probe
RUN_SCATTER = 0.049  # cotune's prior on a run's log-epochs scatter (docs/models.md § 2)
NOISE_RECORD_SCATTER = 0.2  # log error of the user's gradient-noise-scale record
CONFIDENCE = 0.9
PLAN_QUANTILES = (0.9, 0.5)
BINS = (0.0, 0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 1.0)
MIN_BIN = 20  # candidates a bin needs to be the "worst bin"
FULL_JOBS = 60
QUICK_JOBS = 4
BOOTSTRAP = 1000
# The mixture nodes of cotune's plateau walk, per doubling, as docs/models.md § 2 lists them
# (copied, not imported: the truth stays independent of the implementation).
PLATEAU_NODES = (0.0027, 0.0004, 0.0145, 0.0136, 0.0781, 0.0191)
_Z95 = 1.6448536269514722


# --------------------------------------------------------------------------- the truth


@dataclass(frozen=True)
class Truth:
    """One synthetic job inside cotune's model family; subclasses depart from it.

    Step time is the Pollux backbone (docs/models.md § 1) written out here. Accuracy: a
    run's metric rises as ``top − (top − start)·exp(−epochs / scale(B))`` with
    ``scale(B) = s0·(1 + B / b_noise)`` (the McCandlish law), so a run at batch ``B`` reaches
    the target at ``scale(B)·p*``, ``p* = ln((top − start) / (top − target))``, times its
    own log-normal factor ``exp(run_scatter·z)``.
    """

    step_params: tuple[float, float, float, float, float, float, float]  # α_c β_c α_r β_r α_n β_n γ
    start: float
    top: float
    target: float
    s0: float
    b_noise: float
    run_scatter: float = RUN_SCATTER
    probe_noise: float = PROBE_NOISE
    compute_gain: float = 1.0  # compute time × compute_gain ** log2(workers)

    def step_time(self, workers: np.ndarray, hosts: np.ndarray, local_batch: np.ndarray) -> np.ndarray:
        """Seconds per step: ``(compute^γ + sync^γ)^(1/γ)``, sync 0 on one worker."""
        a_c, b_c, a_r, b_r, a_n, b_n, gamma = self.step_params
        n, h, b = (np.asarray(x, float) for x in (workers, hosts, local_batch))
        compute = (a_c + b_c * b) * self.compute_gain ** np.log2(n)
        growth = np.log2(np.maximum(n - 1.0, 1.0))
        sync = np.where(h > 1, a_n + b_n * growth, a_r + b_r * growth)
        sync = np.where(n > 1, sync, 0.0)
        return (compute**gamma + sync**gamma) ** (1.0 / gamma)

    @property
    def progress_at_target(self) -> float:
        return math.log((self.top - self.start) / (self.top - self.target))

    def scale(self, global_batch: np.ndarray) -> np.ndarray:
        return self.s0 * (1.0 + np.asarray(global_batch, float) / self.b_noise)

    def epochs(self, global_batch: np.ndarray) -> np.ndarray:
        """Median epochs to the target at each batch, where it is reached."""
        return self.scale(global_batch) * self.progress_at_target

    def plateau(self, global_batch: np.ndarray) -> np.ndarray:
        return np.full(np.shape(global_batch), self.top, float)

    def reaches(self, global_batch: np.ndarray) -> np.ndarray:
        return self.plateau(global_batch) > self.target

    def reference_curve(self, epochs: np.ndarray, run_factor: float) -> np.ndarray:
        """The metric of one run at the reference batch whose epochs are ``run_factor`` times
        the median's (it reaches the target at ``epochs(REF_BATCH) · run_factor``)."""
        e = np.asarray(epochs, float)
        return self.top - (self.top - self.start) * np.exp(-e / (self.scale(REF_BATCH) * run_factor))


@dataclass(frozen=True)
class Warmup(Truth):
    """A flat start of a fixed number of steps (``warmup_epochs`` at the reference batch)."""

    warmup_epochs: float = 0.0

    def epochs(self, global_batch: np.ndarray) -> np.ndarray:
        b = np.asarray(global_batch, float)
        return self.warmup_epochs * b / REF_BATCH + super().epochs(b)

    def reference_curve(self, epochs: np.ndarray, run_factor: float) -> np.ndarray:
        e = np.maximum(np.asarray(epochs, float) - self.warmup_epochs * run_factor, 0.0)
        return super().reference_curve(e, run_factor)


@dataclass(frozen=True)
class LrStep(Truth):
    """A step decay of the learning rate at a fixed epoch; the target only after it."""

    decay_epoch: float = 0.0

    def epochs(self, global_batch: np.ndarray) -> np.ndarray:
        return np.maximum(self.decay_epoch, super().epochs(global_batch))

    def reference_curve(self, epochs: np.ndarray, run_factor: float) -> np.ndarray:
        e = np.asarray(epochs, float)
        m = super().reference_curve(e, run_factor)
        return np.where(e < self.decay_epoch * run_factor, np.minimum(m, self.target - 0.02), m)


@dataclass(frozen=True)
class FallingPlateau(Truth):
    """The plateau falls by ``fall`` (score units) per doubling above the reference batch;
    the nearer the target to it, the longer the run takes."""

    fall: float = 0.0

    def plateau(self, global_batch: np.ndarray) -> np.ndarray:
        b = np.asarray(global_batch, float)
        return self.top - self.fall * np.maximum(np.log2(b / REF_BATCH), 0.0)

    def epochs(self, global_batch: np.ndarray) -> np.ndarray:
        frac = np.clip((self.target - self.start) / (self.plateau(global_batch) - self.start), 0.0, 0.999)
        return self.scale(global_batch) * np.log(1.0 / (1.0 - frac))


@dataclass(frozen=True)
class Steep(Truth):
    """``E ∝ 1 + (B / B_noise)²``: near-perfect scaling, then a wall; equal to the law at the
    reference batch."""

    def epochs(self, global_batch: np.ndarray) -> np.ndarray:
        b = np.asarray(global_batch, float)
        r = REF_BATCH / self.b_noise
        return self.s0 * self.progress_at_target * (1.0 + (b / self.b_noise) ** 2) * (1.0 + r) / (1.0 + r**2)


@dataclass(frozen=True)
class Diverge(Truth):
    """No run reaches the target above ``limit`` (it diverges)."""

    limit: float = math.inf

    def reaches(self, global_batch: np.ndarray) -> np.ndarray:
        return super().reaches(global_batch) & (np.asarray(global_batch, float) <= self.limit)


def base_truth(rng: np.random.Generator) -> Truth:
    """A job inside the model's family, drawn from ``rng``."""
    a_c, b_c = rng.uniform(0.005, 0.02), rng.uniform(1e-4, 5e-4)
    t1 = a_c + b_c * 64
    a_r = rng.uniform(0.05, 0.2) * t1
    b_r = rng.uniform(0.2, 0.5) * a_r
    gamma = rng.uniform(1.0, 3.0)
    b_noise = math.exp(rng.uniform(math.log(500), math.log(4000)))
    s0 = rng.uniform(3.0, 10.0)
    start, top = 0.1, rng.uniform(0.85, 0.95)
    target = start + rng.uniform(0.8, 0.93) * (top - start)
    return Truth(step_params=(a_c, b_c, a_r, b_r, 1.1 * a_r, 1.1 * b_r, gamma), start=start, top=top, target=target,
                 s0=s0, b_noise=b_noise)


# --------------------------------------------------------------------------- the families


@dataclass(frozen=True)
class Family:
    """A truth family: how its truth departs from the model, and the departure itself
    (``make(base, rng)``: the job's base truth and the family's own random stream)."""

    name: str
    description: str
    make: Callable[[Truth, np.random.Generator], Truth]


def _control(t: Truth, rng: np.random.Generator) -> Truth:
    return t


def _warmup(t: Truth, rng: np.random.Generator) -> Truth:
    w = float(rng.uniform(0.5, 1.0) * t.epochs(REF_BATCH))
    return Warmup(**_fields(t), warmup_epochs=w)


def _lrstep(t: Truth, rng: np.random.Generator) -> Truth:
    return LrStep(**_fields(t), decay_epoch=float(rng.uniform(1.3, 2.0) * t.epochs(REF_BATCH)))


def _plateau(t: Truth, rng: np.random.Generator) -> Truth:
    return FallingPlateau(**_fields(t), fall=(t.top - t.target) * rng.uniform(0.5, 1.5))


def _plateau_prior(t: Truth, rng: np.random.Generator) -> Truth:
    return FallingPlateau(**_fields(t), fall=float(rng.choice(PLATEAU_NODES)) * (t.top - t.start))


def _seednoise15(t: Truth, rng: np.random.Generator) -> Truth:
    return replace(t, run_scatter=0.153)


def _seednoise(t: Truth, rng: np.random.Generator) -> Truth:
    return replace(t, run_scatter=0.25)


def _steep(t: Truth, rng: np.random.Generator) -> Truth:
    return Steep(**_fields(t))


def _diverge(t: Truth, rng: np.random.Generator) -> Truth:
    return Diverge(**_fields(t), limit=4.0 * REF_BATCH)


def _hosts(t: Truth, rng: np.random.Generator) -> Truth:
    a_c, b_c, a_r, b_r, _, _, gamma = t.step_params
    return replace(t, step_params=(a_c, b_c, a_r, b_r, 3.0 * a_r, 3.0 * b_r, gamma))


def _noisyprobes(t: Truth, rng: np.random.Generator) -> Truth:
    return replace(t, probe_noise=0.25)


def _superlinear(t: Truth, rng: np.random.Generator) -> Truth:
    return replace(t, compute_gain=0.85)


def _fields(t: Truth) -> dict[str, Any]:
    return {f: getattr(t, f) for f in Truth.__dataclass_fields__}


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("control", "inside the model's family (backbone step time, E = E_min(1 + B/B_noise), flat plateau, "
               "run scatter 0.049)", _control),
        Family("warmup", "a flat start of a fixed number of steps (0.5-1x the reference run's epochs at B_ref) before "
               "the curve rises: more epochs at larger batches than the law", _warmup),
        Family("lrstep", "a step LR decay at a fixed epoch (1.3-2x the law's epochs at B_ref); the target only after "
               "it, so small batches gain nothing", _lrstep),
        Family("plateau", "the plateau falls below the target 0.7-2 doublings above the reference batch", _plateau),
        Family("plateau_prior", "the plateau falls at a rate drawn from cotune's own plateau-walk nodes", _plateau_prior),
        Family("seednoise15", "run-to-run scatter 0.153 (CIFAR-10's) in log epochs against the prior 0.049",
               _seednoise15),
        Family("seednoise", "run-to-run scatter 0.25 in log epochs against the prior 0.049", _seednoise),
        Family("steep", "E proportional to 1 + (B/B_noise)^2: flat, then a wall", _steep),
        Family("diverge", "no run reaches the target above 4x the reference batch", _diverge),
        Family("hosts", "inter-host sync 3x intra-host (the probes see one host; the prior says 1.1x)", _hosts),
        Family("noisyprobes", "step probes with 0.25 log noise instead of 0.03", _noisyprobes),
        Family("superlinear", "compute 15 % faster per doubling of workers (the shard fits in cache)", _superlinear),
    )
}


def make_truth(family: str, job: int) -> tuple[Truth, np.random.Generator]:
    """Job ``job`` of ``family``: its truth and the noise stream its profile and fresh runs
    draw from. The base truth and the noise are job ``job``'s in every family."""
    base_rng, noise_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(job).spawn(2))
    family_rng = np.random.default_rng([job, zlib.crc32(family.encode())])
    return FAMILIES[family].make(base_truth(base_rng), family_rng), noise_rng


# --------------------------------------------------------------------------- one job


@dataclass(frozen=True)
class JobResult:
    """One job's candidates: what cotune promised and what the fresh runs did (arrays as
    lists, aligned). ``error`` is set, and the rest empty, when the job raised."""

    family: str
    job: int
    error: str | None = None
    warnings: int = 0
    p_success: list[float] = field(default_factory=list)
    p_reach: list[float] = field(default_factory=list)
    cost: list[float] = field(default_factory=list)
    success: list[bool] = field(default_factory=list)
    reached: list[bool] = field(default_factory=list)
    step_covered: list[bool] = field(default_factory=list)
    epochs_covered: list[bool] = field(default_factory=list)  # meaningful where reached
    time_covered: list[bool] = field(default_factory=list)  # where reached and time_finite
    time_finite: list[bool] = field(default_factory=list)  # the time interval is finite (P(reach) ≥ ½)
    global_batch: list[int] = field(default_factory=list)
    chosen: int = -1  # index of cotune's plan at confidence 0.9, -1 when infeasible


def candidate_grid() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(workers, hosts, local batch) of the search grid."""
    n, b = (g.ravel().astype(float) for g in np.meshgrid(np.arange(1, MAX_WORKERS + 1), LOCAL_BATCHES, indexing="ij"))
    return n, np.ceil(n / GPUS_PER_HOST), b


def profile_lines(truth: Truth, rng: np.random.Generator, *, name: str) -> list[str]:
    """The JSON Lines a user's profiler would write: noisy step probes on one host, one
    learning curve at the reference batch (one run, its own scatter), a noise record."""
    lines = [json.dumps({"record": "workload", "name": name, "dataset_size": DATASET_SIZE, "metric": "top1",
                         "goal": "max"})]
    for n in PROBE_WORKERS:
        for b in PROBE_BATCHES:
            t = float(truth.step_time(n, 1, b)) * math.exp(rng.normal(0.0, truth.probe_noise))
            lines.append(json.dumps({"record": "step", "gpu": GPU, "workers": n, "hosts": 1, "local_batch": b,
                                     "step_time_s": t}))
    run_factor = math.exp(rng.normal(0.0, truth.run_scatter))
    crossing = float(truth.epochs(REF_BATCH)) * run_factor
    schedule = crossing * rng.uniform(1.5, 2.0)
    epochs = np.linspace(schedule / CURVE_POINTS, schedule, CURVE_POINTS)
    metric = truth.reference_curve(epochs, run_factor) + rng.normal(0.0, EVAL_NOISE, CURVE_POINTS)
    lines += [json.dumps({"record": "eval", "global_batch": REF_BATCH, "epoch": float(e), "metric": float(m), "seed": 0})
              for e, m in zip(epochs, metric)]
    b_noise = truth.b_noise * math.exp(rng.normal(0.0, NOISE_RECORD_SCATTER))
    lines.append(json.dumps({"record": "noise", "b_noise": b_noise, "global_batch": REF_BATCH}))
    return lines


def deadline_for(truth: Truth, rng: np.random.Generator) -> float:
    """A deadline between the 5th and 60th percentile of the grid's true median times
    (log-uniform), so the candidates spread over both sides of it."""
    n, h, b = candidate_grid()
    gb = n * b
    t = truth.epochs(gb) * DATASET_SIZE / gb * truth.step_time(n, h, b)
    lo, hi = np.quantile(t, [0.05, 0.6])
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def run_job(family: str, job: int) -> JobResult:
    """Job ``job`` of ``family`` end to end; an exception is returned as ``error``."""
    import warnings

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            return replace(_score_job(family, job), warnings=len(caught))
    except Exception as exc:  # counted and reported by the caller, never dropped
        return JobResult(family=family, job=job, error=f"{type(exc).__name__}: {exc}")


def _score_job(family: str, job: int) -> JobResult:
    import cotune
    from cotune.profile import parse_profile

    truth, rng = make_truth(family, job)
    prof = parse_profile("\n".join(profile_lines(truth, rng, name=f"misspecified-{family}-{job}")) + "\n")
    deadline = deadline_for(truth, rng)
    models = cotune.fit_models(prof)
    rec = cotune.recommend(prof, models=models, target=truth.target, deadline_s=deadline, max_workers=MAX_WORKERS,
                           gpus_per_host=GPUS_PER_HOST, prices=PRICES, local_batches=LOCAL_BATCHES,
                           confidence=CONFIDENCE)
    fr = rec.candidates_frame()
    fr = fr[fr["market"] == "on_demand"].reset_index(drop=True)
    n, h, b, gb = (fr[c].to_numpy(float) for c in ("workers", "hosts", "local_batch", "global_batch"))
    step = truth.step_time(n, h, b)
    pred = models.predict_step(GPU, n, h, b)
    step_cov = (step >= pred.lower_s) & (step <= pred.upper_s)
    epochs = truth.epochs(gb) * np.exp(truth.run_scatter * rng.normal(size=gb.size))  # one fresh run each
    reached = truth.reaches(gb)
    t_run = epochs * DATASET_SIZE / gb * step
    t_lo, t_hi = fr["time_lower_s"].to_numpy(float), fr["time_upper_s"].to_numpy(float)
    e_lo, e_hi = fr["epochs_lower"].to_numpy(float), fr["epochs_upper"].to_numpy(float)
    chosen = np.flatnonzero(fr["chosen"].to_numpy(bool))
    return JobResult(
        family=family, job=job,
        p_success=fr["p_success"].to_numpy(float).tolist(), p_reach=fr["p_reach"].to_numpy(float).tolist(),
        cost=fr["cost"].to_numpy(float).tolist(),
        success=(reached & (t_run <= deadline)).tolist(), reached=reached.tolist(),
        step_covered=step_cov.tolist(),
        epochs_covered=((epochs >= e_lo) & (epochs <= e_hi)).tolist(),
        time_covered=((t_run >= t_lo) & (t_run <= t_hi)).tolist(),
        time_finite=(np.isfinite(t_lo) & np.isfinite(t_hi)).tolist(),
        global_batch=gb.astype(int).tolist(),
        chosen=int(chosen[0]) if chosen.size else -1,
    )


# --------------------------------------------------------------------------- scoring


def _mean(x: np.ndarray) -> float | None:
    return float(np.mean(x)) if np.size(x) else None


def _bootstrap(per_job: Sequence[tuple[float, float]], *, seed: int = 0) -> tuple[float, float] | None:
    """90 % interval of Σ delivered / Σ count over jobs resampled with replacement
    (``per_job``: (delivered, count) each; the candidates of one job are not independent)."""
    arr = np.array([p for p in per_job if p[1] > 0], float)
    if not arr.size:
        return None
    idx = np.random.default_rng(seed).integers(0, len(arr), size=(BOOTSTRAP, len(arr)))
    sums = arr[idx].sum(axis=1)
    ratio = sums[:, 0] / np.maximum(sums[:, 1], 1e-12)
    lo, hi = np.quantile(ratio, [0.05, 0.95])
    return float(lo), float(hi)


def _plans(jobs: list[JobResult], q: float) -> dict[str, Any]:
    """Plans at ``q``: cotune's chosen one at the benchmark's confidence, else the cheapest
    candidate with P(success) ≥ q (no near-tie rule)."""
    promised, delivered = [], []
    for j in jobs:
        if q == CONFIDENCE:
            i = j.chosen
        else:
            p, c = np.array(j.p_success), np.array(j.cost)
            ok = np.flatnonzero(p >= q)
            i = int(ok[np.argmin(c[ok])]) if ok.size else -1
        if i >= 0:
            promised.append(j.p_success[i])
            delivered.append(float(j.success[i]))
    ci = _bootstrap([(d, 1.0) for d in delivered])
    return {"q": q, "rule": "cotune's chosen plan" if q == CONFIDENCE else "cheapest candidate with P(success) >= q",
            "plans": len(promised), "no_plan": len(jobs) - len(promised), "promised": _mean(np.array(promised)),
            "delivered": _mean(np.array(delivered)), "delivered_90": ci}


def score_family(jobs: Iterable[JobResult], *, min_bin: int = MIN_BIN) -> dict[str, Any]:
    """Every figure of one family from its jobs (errors counted, not scored)."""
    jobs = list(jobs)
    errors = [{"job": j.job, "error": j.error} for j in jobs if j.error]
    ok = [j for j in jobs if not j.error]

    def cat(key: str) -> np.ndarray:
        return np.concatenate([np.asarray(getattr(j, key)) for j in ok]) if ok else np.zeros(0)

    p, s = cat("p_success").astype(float), cat("success").astype(bool)
    pr, r = cat("p_reach").astype(float), cat("reached").astype(bool)
    bins = []
    for k, (lo, hi) in enumerate(zip(BINS[:-1], BINS[1:])):
        last = k == len(BINS) - 2
        sel = (p >= lo) & ((p <= hi) if last else (p < hi))
        per_job = []
        for j in ok:
            pj = np.array(j.p_success)
            m = (pj >= lo) & ((pj <= hi) if last else (pj < hi))
            per_job.append((float(np.sum(np.array(j.success)[m])), float(m.sum())))
        bins.append({"lo": lo, "hi": hi, "n": int(sel.sum()), "jobs": sum(1 for _, c in per_job if c),
                     "promised": _mean(p[sel]), "delivered": _mean(s[sel].astype(float)),
                     "delivered_90": _bootstrap(per_job)})
    def worst(lowest: float) -> dict[str, Any] | None:
        counted = [b_ for b_ in bins if b_["n"] >= min_bin and b_["lo"] >= lowest]
        w = max(counted, key=lambda b_: b_["promised"] - b_["delivered"], default=None)
        return None if w is None else {"lo": w["lo"], "hi": w["hi"], "n": w["n"],
                                       "over_confidence": w["promised"] - w["delivered"]}

    hi_reach = pr >= 0.9
    finite = cat("time_finite").astype(bool)
    return {
        "jobs": len(jobs), "scored_jobs": len(ok), "errors": errors,
        "warnings": int(sum(j.warnings for j in ok)),
        "candidates": int(p.size),
        "bins": bins,
        # the bin (of at least min_bin candidates) with the largest promised − delivered:
        # over every bin, and over those where plans are made (P(success) ≥ ½)
        "worst_bin": worst(0.0),
        "worst_bin_plans": worst(0.5),
        "reach_90": {"n": int(hi_reach.sum()), "promised": _mean(pr[hi_reach]),
                     "delivered": _mean(r[hi_reach].astype(float))},
        "coverage": {
            "step": _mean(cat("step_covered").astype(float)),
            "epochs": _mean(cat("epochs_covered").astype(bool)[r].astype(float)),
            "time": _mean(cat("time_covered").astype(bool)[r & finite].astype(float)),
            "n_step": int(p.size), "n_epochs": int(r.sum()), "n_time": int((r & finite).sum()),
        },
        "plans": {str(q): _plans(ok, q) for q in PLAN_QUANTILES},
    }


# --------------------------------------------------------------------------- running and reporting


def run(families: Sequence[str], *, n_jobs: int, jobs: int = 1,
        progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Every job of every family (``jobs`` worker processes), scored per family."""
    tasks = [(f, k) for f in families for k in range(n_jobs)]
    results: dict[str, list[JobResult]] = {f: [] for f in families}
    t0 = time.perf_counter()

    def done(res: JobResult) -> None:
        results[res.family].append(res)
        if progress is not None and (res.error or len(results[res.family]) == n_jobs):
            what = f"job {res.job} failed: {res.error}" if res.error else f"{n_jobs} jobs done"
            progress(f"{res.family}: {what} ({time.perf_counter() - t0:.0f} s so far)")

    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for res in pool.map(run_job, *zip(*tasks), chunksize=1):
                done(res)
    else:
        for f, k in tasks:
            done(run_job(f, k))
    return {
        "n_jobs": n_jobs,
        "wall_s": time.perf_counter() - t0,
        "families": {f: {"description": FAMILIES[f].description, **score_family(results[f])} for f in families},
        # every candidate of every job, to re-score without re-running (JobResult(**row))
        "job_results": [asdict(r) for f in families for r in sorted(results[f], key=lambda r: r.job)],
    }


def _f(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _promise(d: dict[str, Any], *, n_key: str = "plans") -> str:
    if not d[n_key]:
        return "— (none)"
    ci = d.get("delivered_90")
    spread = "" if ci is None else f" [{ci[0]:.2f}, {ci[1]:.2f}]"
    return f"{_f(d['promised'])} → {_f(d['delivered'])}{spread} (n={d[n_key]})"


def _worst(w: dict[str, Any] | None) -> str:
    if w is None:
        return "—"
    close = "]" if w["hi"] == 1.0 else ")"
    return f"{w['over_confidence']:+.3f} in [{w['lo']:.2f}, {w['hi']:.2f}{close} (n={w['n']})"


def table_rows(data: dict[str, Any]) -> tuple[list[str], list[list[object]]]:
    """The report's table: one row per family."""
    headers = ["family", "candidates (jobs, errors)", "plans q=0.9: promised → delivered",
               "plans q=0.5: promised → delivered", "worst bin: promised − delivered",
               "worst bin at P ≥ 0.5", "P(reach) ≥ 0.9: promised → delivered", "90 % coverage step / epochs / time"]
    rows = []
    for name, fam in data["families"].items():
        cov = fam["coverage"]
        rows.append([
            name, f"{fam['candidates']} ({fam['scored_jobs']}, {len(fam['errors'])})",
            _promise(fam["plans"]["0.9"]), _promise(fam["plans"]["0.5"]), _worst(fam["worst_bin"]),
            _worst(fam["worst_bin_plans"]),
            _promise(fam["reach_90"], n_key="n"),
            f"{_f(cov['step'])} / {_f(cov['epochs'])} / {_f(cov['time'])}",
        ])
    return headers, rows


def markdown(data: dict[str, Any]) -> str:
    """report.md: the table, then per family its description, bins and errors."""
    from benchmarks._common import markdown_table

    out = [f"# cotune under misspecified truths\n\n`{data.get('command', '')}` — {data['n_jobs']} jobs per family, "
           f"{data.get('date', '')}, {data['wall_s']:.0f} s.\n",
           "Hand-chosen stress tests, not a measure of how common such jobs are. Plans: promised → delivered [90 % "
           "interval of delivered, jobs resampled] (n plans); at q = 0.5 the cheapest candidate with P(success) ≥ 0.5 "
           "(recommend()'s near-tie rule ignored). Worst bin: the P(success) bin of at least "
           f"{MIN_BIN} candidates with the largest promised − delivered, over all bins and over those at P ≥ 0.5 "
           "(negative: under-confident in every such bin). "
           "Coverage: step time over every candidate; epochs over candidates whose truth reaches the target; time over "
           "those with a finite interval (P(reach) ≥ ½) too.\n",
           markdown_table(*table_rows(data)), ""]
    for name, fam in data["families"].items():
        out.append(f"## {name}\n\n{fam['description']}. {fam['scored_jobs']} of {fam['jobs']} jobs scored, "
                   f"{fam['candidates']} candidates, {fam['warnings']} warnings.\n")
        rows = [[f"[{b['lo']:.2f}, {b['hi']:.2f}{']' if b['hi'] == 1.0 else ')'}", b["n"], b["jobs"], _f(b["promised"]),
                 _f(b["delivered"]),
                 "—" if b["delivered_90"] is None else f"{b['delivered_90'][0]:.3f}–{b['delivered_90'][1]:.3f}"]
                for b in fam["bins"] if b["n"]]
        out.append(markdown_table(["P(success) bin", "candidates", "jobs", "promised", "delivered",
                                   "delivered 90 % (jobs resampled)"], rows))
        for q, pl in fam["plans"].items():
            ci = pl["delivered_90"]
            out.append(f"\nplans at q = {q} ({pl['rule']}): {pl['plans']} ({pl['no_plan']} jobs without one), "
                       f"promised {_f(pl['promised'])}, delivered {_f(pl['delivered'])}"
                       + ("" if ci is None else f" (90 %: {ci[0]:.3f}–{ci[1]:.3f})"))
        for e in fam["errors"]:
            out.append(f"\n- job {e['job']}: {e['error']}")
        out.append("")
    return "\n".join(out)


def _families(arg: str | None) -> list[str] | None:
    names = [n for n in arg.split(",") if n] if arg else list(FAMILIES)
    unknown = [n for n in names if n not in FAMILIES]
    if unknown or not names:
        print(f"error: unknown famil{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown) or '(none named)'}; "
              f"choose from {', '.join(FAMILIES)}", file=sys.stderr)
        return None
    return names


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.misspecified", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"{QUICK_JOBS} jobs per family instead of {FULL_JOBS}")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="worker processes (default 2)")
    ap.add_argument("--families", help=f"comma-separated (default: all {len(FAMILIES)}, control first)")
    ap.add_argument("--n-jobs", type=int, help="jobs per family (overrides --quick)")
    ap.add_argument("--out", type=Path, help="also write results.json and report.md into this folder")
    args = ap.parse_args(argv)
    names = _families(args.families)
    if names is None:
        return 2
    n_jobs = args.n_jobs if args.n_jobs is not None else (QUICK_JOBS if args.quick else FULL_JOBS)
    if n_jobs < 1:
        print(f"error: --n-jobs must be at least 1, got {n_jobs}", file=sys.stderr)
        return 2
    if args.out is not None:
        try:  # before the run (minutes of it), not after
            args.out.mkdir(parents=True, exist_ok=True)
            import tempfile

            with tempfile.TemporaryFile(dir=args.out):
                pass
        except OSError as exc:
            print(f"error: --out {args.out}: {exc.strerror or exc}; name a folder you can write to", file=sys.stderr)
            return 2
    data = run(names, n_jobs=n_jobs, jobs=max(1, args.jobs),
               progress=lambda m: print(f"[misspecified] {m}", file=sys.stderr, flush=True))
    data["command"] = "python -m benchmarks.misspecified" + "".join(
        " " + a for a in (argv if argv is not None else sys.argv[1:]))
    data["date"] = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    data["mode"] = "quick" if args.quick else "full"
    from benchmarks._common import markdown_table

    print(markdown_table(*table_rows(data)))
    if args.out is not None:
        from benchmarks.report import write_json, write_text

        write_json(args.out / "results.json", data)
        write_text(args.out / "report.md", markdown(data))
        print(f"wrote {args.out}/results.json and report.md", file=sys.stderr)
    errors = sum(len(f["errors"]) for f in data["families"].values())
    if errors:
        print(f"[misspecified] {errors} job(s) raised; they are listed in the report", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
