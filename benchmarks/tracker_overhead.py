"""Tracker overhead on a real training step: the digits CNN of ``examples/digits_cnn.py``.

A plain PyTorch loop (one CPU worker, local batch 32, SGD) trains for ``--epochs``
epochs ``--repeats`` times with a :class:`cotune.track.Tracker` and as many times
without, interleaved so drift on a shared machine hits both alike. The defaults are the
settings ``examples/closed_loop.py`` tracks with — the step the tracker is meant to cost
under 1 % of: a window of 20 steps, 3 warm-up steps, four evaluations per epoch (one
fsync'ed record per window and per evaluation). It reports:

* ``direct`` — seconds spent *inside* the tracker calls on the training path
  (``step``, ``eval`` and the record writes they trigger) over the seconds of
  training steps of the tracked runs: the overhead itself, measured precisely.
  ``close`` (once per run, after training: last window, wait for the last fsync)
  is reported on its own;
* ``direct (CPU)`` — the same ratio in this thread's CPU time (``time.thread_time``):
  on a shared machine a call can be descheduled midway, which the wall clock counts;
* ``a/b`` — median tracked step time over median untracked step time, minus one:
  the end-to-end view (noisy on a busy machine: read its spread beside it).

    PYTHONPATH=. python benchmarks/tracker_overhead.py --repeats 5    # ~10 s on 2 cores
    PYTHONPATH=. python benchmarks/tracker_overhead.py --window 100 --evals-per-epoch 1   # a sparser tracker

Results also go to ``benchmarks/results/tracker_overhead.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from cotune.profile import WorkloadRecord  # noqa: E402
from cotune.track import Tracker  # noqa: E402
from examples.digits_cnn import _tensors, make_model  # noqa: E402


class _Timed:
    """A tracker whose calls are timed (perf_counter around each one)."""

    def __init__(self, tracker: Tracker) -> None:
        self.tracker = tracker
        self.inside_s = 0.0
        self.parts_s = {"step": 0.0, "eval": 0.0, "close": 0.0}
        self.cpu_s = {"step": 0.0, "eval": 0.0, "close": 0.0}

    def step(self, step_time_s: float) -> None:
        t, c = time.perf_counter(), time.thread_time()
        self.tracker.step(step_time_s=step_time_s)
        self._add("step", time.perf_counter() - t, time.thread_time() - c)

    def eval(self, metric: float) -> None:
        t, c = time.perf_counter(), time.thread_time()
        self.tracker.eval(metric=metric)
        self._add("eval", time.perf_counter() - t, time.thread_time() - c)

    def close(self) -> None:
        t, c = time.perf_counter(), time.thread_time()
        self.tracker.close()
        self._add("close", time.perf_counter() - t, time.thread_time() - c)

    def _add(self, part: str, seconds: float, cpu_s: float) -> None:
        self.inside_s += seconds
        self.parts_s[part] += seconds
        self.cpu_s[part] += cpu_s


# examples/closed_loop.py's Tracker(..., window=20, warmup_steps=3) and --evals-per-epoch 4:
# the overhead that matters is the one of the example the aim is stated for.
EXAMPLE_WINDOW = 20
EXAMPLE_WARMUP_STEPS = 3
EXAMPLE_EVALS_PER_EPOCH = 4


def train(*, epochs: int, local_batch: int, tracker: _Timed | None, seed: int, evals_per_epoch: int = 1,
          cpu: list[float] | None = None) -> tuple[list[float], float]:
    """One training run, evaluated ``evals_per_epoch`` times an epoch (evenly spaced in
    steps; untracked runs evaluate too, so both runs alike pay the evaluations' effect on
    caches); returns the step times (s) and the accuracy at the end; the steps' CPU seconds
    of this thread are appended to ``cpu``."""
    torch.manual_seed(abs(seed))
    train_set, held_out = _tensors(train=True), _tensors(train=False)
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    loader = torch.utils.data.DataLoader(train_set, batch_size=local_batch, shuffle=True, drop_last=True)
    steps: list[float] = []
    acc = 0.0
    per_epoch = len(loader)
    eval_after = {max(1, round(k * per_epoch / evals_per_epoch)) for k in range(1, evals_per_epoch + 1)}
    for _ in range(epochs):
        model.train()
        for i, (xb, yb) in enumerate(loader, start=1):
            began, began_cpu = time.perf_counter(), time.thread_time()
            opt.zero_grad(set_to_none=True)
            loss_fn(model(xb), yb).backward()
            opt.step()
            took = time.perf_counter() - began
            if tracker is not None:
                tracker.step(step_time_s=took)
            steps.append(time.perf_counter() - began)  # the step as the loop sees it, tracker call included
            if cpu is not None:
                cpu.append(time.thread_time() - began_cpu)
            if i not in eval_after:
                continue
            model.eval()
            with torch.no_grad():
                x, y = held_out.tensors
                acc = float((model(x).argmax(1) == y).float().mean())
            model.train()
            if tracker is not None:
                tracker.eval(metric=acc)
    if tracker is not None:
        tracker.close()
    return steps, acc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--local-batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--window", type=int, default=EXAMPLE_WINDOW,
                        help=f"steps per step record (default {EXAMPLE_WINDOW}, as examples/closed_loop.py)")
    parser.add_argument("--warmup-steps", type=int, default=EXAMPLE_WARMUP_STEPS,
                        help=f"steps the tracker leaves out first (default {EXAMPLE_WARMUP_STEPS}, as the example)")
    parser.add_argument("--evals-per-epoch", type=int, default=EXAMPLE_EVALS_PER_EPOCH,
                        help=f"evaluations (tracker.eval calls) per epoch (default {EXAMPLE_EVALS_PER_EPOCH}, as the example)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/tracker_overhead.json"))
    args = parser.parse_args(argv)
    for name in ("epochs", "local_batch", "repeats", "window", "evals_per_epoch"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be a whole number of at least 1, got {getattr(args, name)}")
    if args.warmup_steps < 0:
        parser.error(f"--warmup-steps must be 0 or more, got {args.warmup_steps}")
    torch.set_num_threads(1)  # one worker on one core: the step the example runs, steadier on a shared box

    tracked: list[float] = []
    plain: list[float] = []
    parts: dict[str, float] = {}
    cpu_parts: dict[str, float] = {}
    step_cpu: list[float] = []
    records = 0
    load_before = os.getloadavg()[0]  # the machine is shared: the load is part of the result
    with tempfile.TemporaryDirectory() as tmp:
        train(epochs=1, local_batch=args.local_batch, tracker=None, seed=-1)  # warm caches and the allocator
        for r in range(args.repeats):
            steps, _ = train(epochs=args.epochs, local_batch=args.local_batch, tracker=None, seed=r,
                             evals_per_epoch=args.evals_per_epoch)
            plain += steps
            tr = Tracker(Path(tmp) / f"run{r}.jsonl", gpu="cpu", workers=1, local_batch=args.local_batch,
                         workload=WorkloadRecord(name="digits-cnn", dataset_size=1437), window=args.window,
                         warmup_steps=args.warmup_steps)
            timed = _Timed(tr)
            steps, _ = train(epochs=args.epochs, local_batch=args.local_batch, tracker=timed, seed=r,
                             evals_per_epoch=args.evals_per_epoch, cpu=step_cpu)
            tracked += steps
            for k, v in timed.parts_s.items():
                parts[k] = parts.get(k, 0.0) + v
            for k, v in timed.cpu_s.items():
                cpu_parts[k] = cpu_parts.get(k, 0.0) + v
            records += tr.records_written
            print(f"repeat {r + 1}/{args.repeats} done", file=sys.stderr)
    # On the training path: step() and eval() calls. close() runs once, after training
    # (it writes the last window and waits for the last fsync): reported on its own.
    on_path_s = parts["step"] + parts["eval"]
    direct = on_path_s / sum(tracked)
    # The same in this thread's CPU time: immune to the process being descheduled mid-call
    # on a shared machine, which inflates the wall-clock view.
    direct_cpu = (cpu_parts["step"] + cpu_parts["eval"]) / sum(step_cpu)
    med_t, med_p = statistics.median(tracked), statistics.median(plain)
    q = lambda xs: statistics.quantiles(xs, n=4)  # noqa: E731
    result = {
        "workload": "examples/digits_cnn.py (1 CPU worker)", "local_batch": args.local_batch, "epochs": args.epochs,
        "repeats": args.repeats, "window": args.window, "warmup_steps": args.warmup_steps,
        "evals_per_epoch": args.evals_per_epoch, "load_average_1min_before": load_before,
        "load_average_1min_after": os.getloadavg()[0], "tracked_steps": len(tracked), "records_written": records,
        "median_step_s_tracked": med_t, "median_step_s_plain": med_p,
        "iqr_step_s_tracked": q(tracked)[2] - q(tracked)[0], "iqr_step_s_plain": q(plain)[2] - q(plain)[0],
        "tracker_s_per_step": on_path_s / len(tracked),
        "close_s_per_run": parts["close"] / args.repeats, "direct_overhead": direct, "ab_overhead": med_t / med_p - 1.0,
        "inside_s_by_call": parts, "inside_cpu_s_by_call": cpu_parts, "direct_overhead_cpu": direct_cpu,
        "tracker_cpu_s_per_step": (cpu_parts["step"] + cpu_parts["eval"]) / len(tracked),
    }
    print(f"digits CNN, local batch {args.local_batch}, window {args.window}, evaluations per epoch "
          f"{args.evals_per_epoch}, {len(tracked)} tracked steps, {records} records written; 1-min load average "
          f"{load_before:.2f} before, {result['load_average_1min_after']:.2f} after")
    print(f"median step: {med_t * 1e3:.3f} ms tracked, {med_p * 1e3:.3f} ms plain "
          f"(IQR {result['iqr_step_s_tracked'] * 1e3:.3f} / {result['iqr_step_s_plain'] * 1e3:.3f} ms)")
    print(f"inside the tracker: {result['tracker_s_per_step'] * 1e6:.1f} us per step = {direct:.3%} of the step time "
          f"(direct); a/b median difference {result['ab_overhead']:+.2%}")
    print(f"in CPU time of this thread: {result['tracker_cpu_s_per_step'] * 1e6:.1f} us per step = {direct_cpu:.3%} "
          "of the steps' CPU time")
    print("inside the tracker by call, all runs: " + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in parts.items())
          + f" (close: once per run, {result['close_s_per_run'] * 1e3:.1f} ms each)")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
