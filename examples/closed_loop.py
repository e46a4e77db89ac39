"""Closed loop, end to end on a CPU: probe → plan → train with a tracker → re-plan once → finish.

A small CNN on scikit-learn's bundled digits (no download; see ``digits_cnn.py``) is

1. **probed** in-process: a few timed steps at four local batches and two short
   learning curves, written as a profile with :class:`cotune.profile.ProfileWriter`;
2. **planned** with :func:`cotune.recommend` (one CPU worker: the plan picks the batch);
3. **trained** for real at the planned batch, a :class:`cotune.track.Tracker` appending
   the job's step windows and evaluations to the same profile;
4. **re-planned once** with :func:`cotune.replan`, which reads the job's own curve and
   step time back from the profile; a switch is applied (new batch, learning rate scaled
   by the reported factor, ``tracker.reconfigure``);
5. trained on until the target is reached.

Exits 0 when the job re-planned once and reached the target by the deadline; 1 when it
missed the target or the deadline; 3 when it never re-planned (the target was reached,
or the run ended, before ``--replan-after`` epochs: lower it). About half a minute on
two CPU cores::

    python examples/closed_loop.py                    # profile in a temporary folder
    python examples/closed_loop.py --out job.jsonl    # keep it: cotune replan job.jsonl ... reads it
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the repository: cotune and the profiler's Workload used by digits_cnn

try:
    import torch  # noqa: E402
except ImportError:
    print("closed_loop.py: it trains a small CNN with torch, which is not installed: install the CPU build "
          "(docs/profiler.md), then run it again", file=sys.stderr)
    sys.exit(2)

import cotune  # noqa: E402
from cotune.profile import EvalRecord, ProfileWriter, StepRecord, WorkloadRecord  # noqa: E402
from cotune.track import Tracker  # noqa: E402
from examples.digits_cnn import HELD_OUT, _tensors, make_model  # noqa: E402

DATASET_SIZE = 1797 - HELD_OUT
PROBE_BATCHES = (16, 32, 64, 128)
CURVE_BATCHES = (32, 128)
BASE_LR, BASE_BATCH = 0.05, 32  # digits_cnn's recipe: sqrt learning-rate scaling from batch 32


def lr_for(batch: int) -> float:
    return BASE_LR * math.sqrt(batch / BASE_BATCH)


class Job:
    """The training job: model, optimizer and data at a local batch (one CPU worker)."""

    def __init__(self, *, local_batch: int, seed: int = 0) -> None:
        torch.manual_seed(seed)
        self.train_set, self.held_out = _tensors(train=True), _tensors(train=False)
        self.model = make_model()
        self.loss = torch.nn.CrossEntropyLoss()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=lr_for(local_batch), momentum=0.9)
        self.set_batch(local_batch)

    def set_batch(self, local_batch: int, *, lr: float | None = None) -> None:
        self.local_batch = local_batch
        self.loader = torch.utils.data.DataLoader(self.train_set, batch_size=local_batch, shuffle=True, drop_last=True)
        if lr is not None:
            for group in self.opt.param_groups:
                group["lr"] = lr

    def step(self, xb: torch.Tensor, yb: torch.Tensor) -> float:
        began = time.perf_counter()
        self.opt.zero_grad(set_to_none=True)
        self.loss(self.model(xb), yb).backward()
        self.opt.step()
        return time.perf_counter() - began

    def accuracy(self) -> float:
        x, y = self.held_out.tensors
        with torch.no_grad():
            return float((self.model(x).argmax(1) == y).float().mean())


def probe(path: Path, *, curve_epochs: int) -> None:
    """Step times at each probe batch and short curves at two batches, into a new profile."""
    with ProfileWriter(path) as out:
        out.write(WorkloadRecord(name="digits-cnn", dataset_size=DATASET_SIZE, metric="accuracy", goal="max",
                                 source="examples/closed_loop.py (in-process probes, 1 CPU worker)"))
        for b in PROBE_BATCHES:
            job = Job(local_batch=b)
            times = []
            for i, (xb, yb) in enumerate(job.loader):
                t = job.step(xb, yb)
                if i >= 3:  # warm-up left out
                    times.append(t)
                if len(times) == 15:
                    break
            out.write(StepRecord(gpu="cpu", workers=1, local_batch=b, step_time_s=statistics.median(times),
                                 timed_steps=len(times)))
        for b in CURVE_BATCHES:
            job = Job(local_batch=b)
            seen = 0
            for _ in range(curve_epochs):
                for xb, yb in job.loader:
                    job.step(xb, yb)
                    seen += b
                out.write(EvalRecord(global_batch=b, epoch=seen / DATASET_SIZE, metric=job.accuracy()))


def _positive(kind: type) -> Callable[[str], float]:
    """An argparse type: a finite number of ``kind`` above 0, else a one-line usage error."""
    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number above 0, got {text!r}") from None
        if not (math.isfinite(value) and value > 0):
            raise argparse.ArgumentTypeError(f"expected a number above 0, got {text!r}")
        return value
    return parse


def _accuracy(text: str) -> float:
    """An argparse type: a held-out accuracy to reach, a fraction above 0 and at most 1 (NaN
    went on to probe for ten seconds and died in cotune.recommend with a traceback)."""
    refusal = f"expected an accuracy above 0 and at most 1 (e.g. 0.97), got {text!r}"
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(refusal) from None
    if not (math.isfinite(value) and 0.0 < value <= 1.0):
        raise argparse.ArgumentTypeError(refusal)
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None,
                        help="profile to write, a new file (default: a temporary file); --overwrite to replace one")
    parser.add_argument("--overwrite", action="store_true", help="replace the --out file if it exists")
    parser.add_argument("--target", type=_accuracy, default=0.97, help="held-out accuracy to reach")
    parser.add_argument("--deadline", type=_positive(float), default=60.0, help="seconds of training allowed")
    parser.add_argument("--price", type=_positive(float), default=0.10, help="USD per CPU worker-hour")
    # 1.25 epochs is five evaluations at the default four per epoch: the fewest the job's own
    # curve is fitted from (cotune.models._curve.MIN_CURVE_POINTS), and well before even
    # batch 16 reaches 0.97 (about two epochs), so the demo always re-plans.
    parser.add_argument("--replan-after", type=_positive(float), default=1.25,
                        help="epochs before the one re-plan (at the first evaluation at or past it)")
    parser.add_argument("--evals-per-epoch", type=_positive(int), default=4, help="evaluations per epoch (the job's curve)")
    parser.add_argument("--curve-epochs", type=_positive(int), default=6, help="epochs of each probe curve")
    args = parser.parse_args(argv)
    if args.out is not None and args.out.exists() and (args.out.is_dir() or not args.overwrite):
        parser.error(f"--out {args.out} exists: name a new file, or pass --overwrite to replace it"
                     if not args.out.is_dir() else f"--out {args.out} is a directory: name a file in it")
    torch.set_num_threads(1)  # one worker on one core of a small shared machine

    tmp = None
    if args.out is None:
        tmp = tempfile.TemporaryDirectory()
        path = Path(tmp.name) / "digits.jsonl"
    else:
        path = args.out
        if path.exists():  # --overwrite (checked above): the demo writes its own profile afresh
            path.unlink()
    began = time.monotonic()
    probe(path, curve_epochs=args.curve_epochs)
    print(f"1. probed {len(PROBE_BATCHES)} batches and {len(CURVE_BATCHES)} curves in {time.monotonic() - began:.1f} s -> {path}")

    question = dict(target=args.target, deadline_s=args.deadline, max_workers=1, gpus_per_host=1,
                    prices={"cpu": args.price})
    rec = cotune.recommend(path, **question)
    plan = rec.chosen
    if plan is None:
        print("no plan meets the target by the deadline: " + "; ".join(rec.relax or ["probe longer curves"]))
        return 1
    print(f"2. plan: {plan.workers} x cpu, local batch {plan.local_batch}, {plan.epochs:.1f} epochs, "
          f"{plan.time_s:.1f} s, ${plan.cost:.6f}")

    job = Job(local_batch=plan.local_batch)
    reached, replanned = False, None
    with Tracker(path, gpu="cpu", workers=1, local_batch=plan.local_batch, window=20, warmup_steps=3) as tracker:
        next_eval = 1.0 / args.evals_per_epoch
        while not reached and tracker.elapsed_s < args.deadline and tracker.epoch < 100:
            for xb, yb in job.loader:
                tracker.step(step_time_s=job.step(xb, yb))
                if tracker.epoch + 1e-9 < next_eval:
                    continue
                next_eval += 1.0 / args.evals_per_epoch
                acc = job.accuracy()
                tracker.eval(metric=acc)
                print(f"3. epoch {tracker.epoch:5.2f} at local batch {job.local_batch:>3}: accuracy {acc:.3f} "
                      f"({tracker.elapsed_s:.1f} s)")
                # The re-plan comes before the target check: the demo exists to show one
                # re-plan, and an evaluation that is both due and on target re-plans first.
                due = replanned is None and tracker.epoch + 1e-9 >= args.replan_after
                if due:
                    replanned = replan_once(path, question, tracker, job, price=args.price)
                if acc >= args.target:
                    reached = True
                    break
                if due:
                    break  # the loader may have changed
    elapsed = tracker.elapsed_s
    if tmp is not None:
        tmp.cleanup()
    if replanned is None:
        ended = f"the target was reached at epoch {tracker.epoch:.2f}" if reached else \
            f"the run ended at epoch {tracker.epoch:.2f} ({elapsed:.1f} s)"
        print(f"closed_loop.py: nothing was re-planned: {ended}, before --replan-after {args.replan_after:g} "
              "epochs; pass a smaller --replan-after", file=sys.stderr)
        return 3
    print(f"5. {'reached' if reached else 'did not reach'} accuracy {args.target} after {tracker.epoch:.2f} epochs in "
          f"{elapsed:.1f} s (deadline {args.deadline:.0f} s); {tracker.records_written} records tracked; "
          f"total {time.monotonic() - began:.1f} s")
    return 0 if reached and elapsed <= args.deadline else 1


def replan_once(path: Path, question: dict, tracker: Tracker, job: Job, *, price: float):
    """Ask cotune.replan with the job's tracked records, and apply a switch."""
    tracker.flush()  # the window so far is evidence too
    spent = price * tracker.elapsed_s / 3600.0
    replanned = cotune.replan(path, **question, progress={"elapsed_s": tracker.elapsed_s, "spent": spent},
                              restart_s=1.0, lr_rule="sqrt")
    f = replanned.forecast
    print(f"4. re-plan: {replanned.decision.upper()} - {replanned.reason}")
    if f is not None:
        print(f"   the job's curve forecasts the target at epoch {f.epochs_if_reached:.2f} "
              f"(90 %: {f.lower:.2f}-{f.upper:.2f}), p_reach {f.p_reach:.2f} ({f.source})")
    if replanned.decision == "switch":
        best = replanned.best
        new_lr = job.opt.param_groups[0]["lr"] * (replanned.lr_scale or 1.0)
        job.set_batch(best.local_batch, lr=new_lr)
        tracker.reconfigure(local_batch=best.local_batch)
        print(f"   switched: {', '.join(replanned.changes) or 'same batch'}; local batch "
              f"{best.local_batch}, learning rate {new_lr:.4f}")
    return replanned


if __name__ == "__main__":
    sys.exit(main())
