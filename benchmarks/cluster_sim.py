"""Cluster simulation: does cotune's sizing help a gang scheduler? (seed: DRAGON)

A stream of jobs from the Pollux OSDI'21 artifact (``jobs/workloads-realistic/``: arrival
times and the user's GPU count and batch, drawn from the Microsoft Philly trace), each
training one of the six Pollux workloads to a fixed target, on a fixed cluster of
16 nodes × 4 NVIDIA T4 (the Pollux testbed). Three schedulers:

(a) ``fifo``  — user-fixed sizes, strict FIFO, pods spread over nodes (the default
    Kubernetes scheduler's least-allocated scoring), no gang, no packing;
(b) ``gang``  — user-fixed sizes, gang start (all pods or none), workers packed on the
    fewest nodes, backfill of later jobs that fit;
(c) ``cotune`` — cotune sizes each job on arrival (cheapest configuration meeting its
    deadline, ``cotune.recommend``), gang + packing + backfill, and load-aware resizing
    inside the plan's elastic range: shrink running jobs that stay on schedule when the
    queue waits, grow them when GPUs idle; each resize costs a restart.
    ``cotune-static`` is (c) without resizing, to separate the two effects.

Ground truth. Job time at (workers, hosts, local batch) is cotune's model fitted to the
*full* Pollux traces (isotonic inside the measured grid, Pollux-style backbone outside),
and a job's progress is the fraction of its time-to-target done (``dt / T(config)``
per step, so a resize changes the rate from then on). The same model sizes the jobs in
(c): this measures the value of sizing and scheduling with an accurate model, not model
error (``benchmarks/`` on the model side measures that).

Each job's deadline is its arrival plus ``--slack`` × the time its user-chosen
configuration needs on an empty cluster. Cost is GPU-hours held × ``--price`` USD.

    PYTHONPATH=. python benchmarks/cluster_sim.py            # workload-6, ~1 min on 2 cores
    PYTHONPATH=. python benchmarks/cluster_sim.py --workload 1 --slack 2
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import cotune  # noqa: E402
from cotune.solver import SearchSpace, enumerate_candidates, estimate  # noqa: E402

DATA = REPO.parent / "shared" / "data" / "pollux-osdi21"
NODES, GPUS_PER_NODE = 16, 4
RESTART_S = 60.0  # checkpoint + restart of a resized job
# app → (bundled example or None, dataset size, metric, goal, target). Extra apps are built
# from the traces like examples/make_pollux_profiles.py; their dataset size is the trace's
# own: iterations to the first reference epoch × the reference batch.
APPS = {
    "cifar10": ("cifar10-resnet18", 50_000, "top1", "max", 0.93),
    "imagenet": ("imagenet-resnet50", 1_281_167, "top1", "max", 0.74),
    "yolov3": ("yolov3-voc", 16_551, "val_loss", "min", 12.5),
    "deepspeech2": (None, 357 * 20, "wer", "min", 25.0),
    "bert": (None, 7387 * 12, "f1", "max", 88.0),
    "ncf": (None, 19418 * 256, "hr10", "max", 0.685),
}
SEED = {"utilisation": "+20–30 %", "job time": "−65 %"}  # DRAGON vs the default scheduler


@dataclass
class App:
    name: str
    models: cotune.FittedModels
    target: float
    batches: np.ndarray  # probed local batches
    packed_s: np.ndarray  # [workers 1..64, batch] time to target, fewest hosts
    spread_s: np.ndarray  # [workers 1..64, batch] time to target, one pod per node while nodes last

    def time_s(self, workers: int, b_idx: int, *, spread: bool = False) -> float:
        return float((self.spread_s if spread else self.packed_s)[workers - 1, b_idx])

    def b_index(self, local_batch: float) -> int:
        return int(np.argmin(np.abs(np.log(self.batches) - math.log(local_batch))))


def load_app(name: str) -> App:
    example, size, metric, goal, target = APPS[name]
    if example is not None:
        profile = cotune.load_profile(example)
    else:
        from examples.make_pollux_profiles import convert

        profile = convert(DATA / "traces" / name, name, size, metric, goal)
    models = cotune.fit_models(profile)
    batches = np.array(sorted({int(v) for v in models.time_models["t4"].points_[:, 2]}), dtype=float)
    limit = models.max_local_batch.get("t4")
    if limit is not None:
        batches = batches[batches <= limit]
    tables = []
    for hosts_of in (lambda w: -(-w // GPUS_PER_NODE), lambda w: min(w, NODES)):
        space = SearchSpace(gpus=("t4",), max_workers={"t4": NODES * GPUS_PER_NODE}, local_batches={"t4": tuple(int(b) for b in batches)}, gpus_per_host=GPUS_PER_NODE)
        c = enumerate_candidates(space)
        hosts = np.array([hosts_of(int(w)) for w in c.workers], dtype=np.int64)
        c = type(c)(gpus=c.gpus, markets=c.markets, gpu=c.gpu, market=c.market, workers=c.workers, hosts=hosts, local_batch=c.local_batch)
        est = estimate(c, models, target=target, price_per_hour=np.ones((1, 1)))
        tables.append(est.time_s.reshape(NODES * GPUS_PER_NODE, batches.size))
    return App(name, models, target, batches, tables[0], tables[1])


@dataclass
class Job:
    name: str
    app: App
    arrival_s: float
    workers: int  # current size (user's, or cotune's)
    b_idx: int
    deadline_s: float
    min_workers: int = 0
    max_workers: int = 0
    done: float = 0.0  # fraction of the time-to-target done
    start_s: float | None = None
    end_s: float | None = None
    pause_s: float = 0.0  # restart time still to sit out
    nodes: dict[int, int] = field(default_factory=dict)  # node → GPUs held
    gpu_s: float = 0.0


def read_jobs(workload: int) -> list[tuple[str, float, str, int, int]]:
    path = DATA / "jobs" / "workloads-realistic" / f"workload-{workload}.csv"
    with path.open(newline="") as fh:
        return [(r["name"], float(r["time"]), r["application"], int(r["num_replicas"]), int(r["batch_size"])) for r in csv.DictReader(fh)]


class Cluster:
    def __init__(self) -> None:
        self.free = np.full(NODES, GPUS_PER_NODE, dtype=int)

    def place(self, workers: int, *, packed: bool) -> dict[int, int] | None:
        """Take ``workers`` GPUs: packed on the fewest nodes (best fit), or spread one at a time
        onto the least-allocated node (the default Kubernetes scoring). None if they do not fit."""
        if self.free.sum() < workers:
            return None
        free = self.free.copy()
        take: dict[int, int] = {}
        left = workers
        while left:
            if not packed:
                n, k = int(np.argmax(free)), 1
            else:
                fits = np.flatnonzero(free >= min(left, GPUS_PER_NODE))
                # a chunk of a whole node: the emptiest; a remainder: the tightest node it fits in
                n = int(fits[np.argmax(free[fits])] if left >= GPUS_PER_NODE else fits[np.argmin(free[fits])]) if fits.size else int(np.argmax(free))
                k = int(min(free[n], left))
            free[n] -= k
            take[n] = take.get(n, 0) + k
            left -= k
        self.free = free
        return take

    def release(self, nodes: dict[int, int]) -> None:
        for n, k in nodes.items():
            self.free[n] += k


def simulate(policy: str, jobs_in: list[tuple[str, float, str, int, int]], apps: dict[str, App], *, slack: float, dt_s: float, resize_every_s: float) -> list[Job]:
    jobs: list[Job] = []
    for name, t, app_name, n, batch in jobs_in:
        app = apps[app_name]
        b = app.b_index(batch / n)
        user_s = app.time_s(n, b)
        jobs.append(Job(name, app, t, n, b, t + slack * user_s, n, n))
    cluster = Cluster()
    pending = sorted(jobs, key=lambda j: j.arrival_s)
    queue: list[Job] = []
    running: list[Job] = []
    now = 0.0
    next_resize = 0.0
    while pending or queue or running:
        while pending and pending[0].arrival_s <= now:
            job = pending.pop(0)
            if policy.startswith("cotune"):
                size_with_cotune(job, now)
            queue.append(job)
        # admissions
        started = True
        while started and queue:
            started = False
            for job in list(queue):
                if policy.startswith("cotune"):
                    free = int(cluster.free.sum())
                    want = job.workers if free >= job.workers else (max(job.min_workers, free) if free >= job.min_workers else 0)
                else:
                    want = job.workers
                nodes = cluster.place(want, packed=policy != "fifo") if want else None
                if nodes is None:
                    if policy == "fifo":
                        break  # strict FIFO: the head blocks everyone
                    continue
                job.workers, job.nodes, job.start_s = want, nodes, now
                queue.remove(job)
                running.append(job)
                started = True
                if policy == "fifo":
                    break
        if policy == "cotune" and now >= next_resize:
            resize(running, queue, cluster, now)
            next_resize = now + resize_every_s
        # progress
        now += dt_s
        for job in list(running):
            held = sum(job.nodes.values())
            job.gpu_s += held * dt_s
            run = dt_s
            if job.pause_s > 0:
                used = min(job.pause_s, dt_s)
                job.pause_s -= used
                run -= used
            spread = policy == "fifo"
            t_full = job.app.time_s(job.workers, job.b_idx, spread=spread) if not spread else float(job.app.spread_s[job.workers - 1, job.b_idx])
            job.done += run / t_full
            if job.done >= 1.0:
                over = (job.done - 1.0) * t_full
                job.end_s = now - over
                job.gpu_s -= held * over
                cluster.release(job.nodes)
                running.remove(job)
        if not running and not queue and pending:
            now = max(now, pending[0].arrival_s)
    return jobs


def size_with_cotune(job: Job, now: float) -> None:
    """The scheduler's call: one cotune.recommend per arriving job, with the remaining deadline."""
    app = job.app
    kw = dict(target=app.target, max_workers=NODES * GPUS_PER_NODE, gpus_per_host=GPUS_PER_NODE, local_batches=[int(b) for b in app.batches], top=0, pareto_limit=1)
    rec = cotune.recommend(app.name, models=app.models, deadline_s=max(job.deadline_s - now, 1.0), **kw)
    if not rec.feasible:  # the deadline cannot be met: run fast but not greedy
        rec = cotune.recommend(app.name, models=app.models, objective="time", **(kw | {"max_workers": 16}))
    plan = rec.plan
    assert plan is not None
    job.workers, job.b_idx = plan.workers, app.b_index(plan.local_batch)
    job.min_workers, job.max_workers = plan.min_workers, plan.max_workers


def _remaining_s(job: Job, workers: int) -> float:
    return (1.0 - job.done) * job.app.time_s(workers, job.b_idx)


def resize(running: list[Job], queue: list[Job], cluster: Cluster, now: float) -> None:
    """Load-aware resizing inside each job's elastic range (design §9: only when it pays)."""
    if queue:
        need = queue[0].min_workers - int(cluster.free.sum())
        # shrink the jobs furthest ahead of their deadline, never below their range or off schedule
        for job in sorted(running, key=lambda j: _remaining_s(j, j.workers) - (j.deadline_s - now)):
            if need <= 0:
                break
            for w in range(job.min_workers, job.workers):
                if now + RESTART_S + _remaining_s(job, w) <= job.deadline_s:
                    freed = job.workers - w
                    cluster.release(job.nodes)
                    job.nodes = cluster.place(w, packed=True) or {}
                    job.workers, job.pause_s = w, RESTART_S
                    need -= freed
                    break
        return
    for job in sorted(running, key=lambda j: j.start_s or 0.0):
        free = int(cluster.free.sum())
        if free <= 0:
            break
        best, gain = job.workers, 0.0
        for w in range(job.workers + 1, min(job.max_workers, job.workers + free) + 1):
            g = _remaining_s(job, job.workers) - _remaining_s(job, w) - RESTART_S
            if g > gain:
                best, gain = w, g
        if best > job.workers and gain > 0.1 * _remaining_s(job, job.workers):  # margin: avoid churn
            cluster.release(job.nodes)
            nodes = cluster.place(best, packed=True)
            if nodes is None:
                job.nodes = cluster.place(job.workers, packed=True) or {}
                continue
            job.nodes, job.workers, job.pause_s = nodes, best, RESTART_S


def report(policy: str, jobs: list[Job], price: float) -> dict[str, float]:
    jct = np.array([j.end_s - j.arrival_s for j in jobs])
    first = min(j.arrival_s for j in jobs)
    makespan = max(j.end_s for j in jobs) - first
    gpu_s = sum(j.gpu_s for j in jobs)
    return {
        "policy": policy,
        "utilisation": gpu_s / (NODES * GPUS_PER_NODE * makespan),
        "mean_jct_h": jct.mean() / 3600,
        "p95_jct_h": float(np.percentile(jct, 95)) / 3600,
        "makespan_h": makespan / 3600,
        "deadline_misses": int(sum(j.end_s > j.deadline_s + 1e-6 for j in jobs)),
        "gpu_hours": gpu_s / 3600,
        "cost_usd": gpu_s / 3600 * price,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="cluster simulation: FIFO vs gang vs cotune sizing")
    ap.add_argument("--workload", type=int, default=6, help="Pollux workload file 1..8 (default 6, the testbed one)")
    ap.add_argument("--slack", type=float, default=1.5, help="deadline = arrival + slack × the user config's time alone")
    ap.add_argument("--dt", type=float, default=60.0, help="simulation step, seconds")
    ap.add_argument("--resize-every", type=float, default=300.0, help="seconds between resize decisions (cotune)")
    ap.add_argument("--price", type=float, default=0.526, help="USD per T4 GPU-hour")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    stream = read_jobs(args.workload)
    apps = {a: load_app(a) for a in sorted({j[2] for j in stream})}
    fit_s = time.perf_counter() - t0
    rows = []
    for policy in ("fifo", "gang", "cotune-static", "cotune"):
        jobs = simulate(policy, stream, apps, slack=args.slack, dt_s=args.dt, resize_every_s=args.resize_every)
        rows.append(report(policy, jobs, args.price))
    base = rows[0]
    print(f"cluster_sim: Pollux workloads-realistic/workload-{args.workload}.csv, {len(stream)} jobs "
          f"({', '.join(f'{a} {sum(j[2] == a for j in stream)}' for a in apps)}), {NODES}x{GPUS_PER_NODE} T4, "
          f"deadline slack {args.slack}, step {args.dt:g}s")
    head = f"{'policy':<13} {'util':>6} {'mean JCT':>9} {'p95 JCT':>9} {'makespan':>9} {'missed':>7} {'GPU-h':>8} {'cost $':>8}   vs fifo: util / mean JCT"
    print(head)
    print("-" * len(head))
    for r in rows:
        du = (r["utilisation"] / base["utilisation"] - 1) * 100
        dj = (r["mean_jct_h"] / base["mean_jct_h"] - 1) * 100
        print(f"{r['policy']:<13} {r['utilisation']:>6.1%} {r['mean_jct_h']:>8.2f}h {r['p95_jct_h']:>8.2f}h {r['makespan_h']:>8.2f}h "
              f"{r['deadline_misses']:>7d} {r['gpu_hours']:>8.1f} {r['cost_usd']:>8.2f}   {du:+.0f} % / {dj:+.0f} %")
    print(f"seed (DRAGON vs the default scheduler): utilisation {SEED['utilisation']}, job time {SEED['job time']}")
    print(f"(models fitted in {fit_s:.1f}s; total {time.perf_counter() - t0:.1f}s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
