"""Build cotune's bundled example profiles from the Pollux (OSDI'21) traces.

Source: petuum/adaptdl, branch osdi21-artifact, ``simulator/traces/<model>/``
(Apache License 2.0), measured on AWS g4dn.12xlarge nodes (4 × NVIDIA T4 each).
See ``cotune/data/profiles/NOTICE.md``.

Mapping (the traces' ``progress`` column is *not* epochs):

* ``placements.csv`` / ``scalability.csv`` rows → ``step`` records; workers = sum of
  the placement's digits, hosts = number of digits;
* ``validation-<B>.csv`` rows → ``eval`` records with
  ``epoch = iteration × B / dataset_size`` (real passes over the data), plus the
  trace's gradient statistics ``grad_sqr``/``grad_var`` measured at the reference batch.

Usage::

    python examples/make_pollux_profiles.py ../shared/data/pollux-osdi21/traces cotune/data/profiles
    python examples/make_pollux_profiles.py --sweep examples/logs/sweep.csv   # a table for `cotune import records`

The same mapping reads any AdaptDL trace from the command line: ``cotune import adaptdl
TRACE_DIR --gpu t4 --dataset-size N --metric NAME --out PROFILE`` (docs/logs.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

from cotune.logs import read_adaptdl
from cotune.profile import EvalRecord, Profile, StepRecord, WorkloadRecord, write_profile

# name, trace folder, dataset size (training samples), metric, goal
WORKLOADS = [
    ("cifar10-resnet18", "cifar10", 50_000, "top1", "max"),
    ("imagenet-resnet50", "imagenet", 1_281_167, "top1", "max"),
    ("yolov3-voc", "yolov3", 16_551, "val_loss", "min"),
]

SOURCE = "Pollux OSDI'21 traces (petuum/adaptdl@c793c70, Apache-2.0), 4x T4 per node"


def convert(trace_dir: Path, name: str, dataset_size: int, metric: str, goal: str) -> Profile:
    # The trace's own reader (`cotune import adaptdl` behind it): the mapping above.
    records, _ = read_adaptdl(trace_dir, dataset_size=dataset_size, gpu="t4")
    workload = WorkloadRecord(name=name, dataset_size=dataset_size, metric=metric, goal=goal, source=SOURCE)  # type: ignore[arg-type]
    return Profile(workload=workload, steps=tuple(r for r in records if isinstance(r, StepRecord)),
                   evals=tuple(r for r in records if isinstance(r, EvalRecord)))


SWEEP_WORKERS = (1, 2, 4, 8)


def write_sweep(path: Path) -> int:
    """A sweep's export, as a team keeps one: the bundled cifar10-resnet18 step times at 1, 2,
    4 and 8 T4 (packed: 4 a host), one measurement per (workers, local batch), as a CSV
    table of step records for ``cotune import records``. Returns the rows written."""
    import cotune

    frame = cotune.load_profile("cifar10-resnet18").to_frame("steps")
    packed = frame["hosts"] == -(-frame["workers"] // 4)
    rows = frame[frame["workers"].isin(SWEEP_WORKERS) & packed].drop_duplicates(["workers", "local_batch"])
    rows = rows[["gpu", "workers", "hosts", "local_batch", "step_time_s", "sync_time_s"]].sort_values(["workers", "local_batch"])
    rows.to_csv(path, index=False, float_format="%.6g")
    return len(rows)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--sweep"]:
        print(f"{argv[1]}: {write_sweep(Path(argv[1]))} step records")
        return 0
    traces, out = Path(argv[0]), Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, folder, size, metric, goal in WORKLOADS:
        profile = convert(traces / folder, name, size, metric, goal)
        write_profile(profile, out / f"{name}.jsonl")
        print(f"{name}: {len(profile.steps)} step records, {len(profile.evals)} eval records")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
