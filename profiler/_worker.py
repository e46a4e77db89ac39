"""The code that runs inside every torchrun worker process.

``python -m profiler._worker TASK.json`` reads a task (a timing probe or a learning
curve), joins the process group torchrun prepared (``gloo`` on CPU, ``nccl`` on GPU),
runs it under DistributedDataParallel and writes ``rank<N>.json`` into the task's
result folder. The parent process turns those files into profile records; this module
never touches the profile itself.

Every rank writes its own result file, so a failure on any rank (out of memory on one
GPU, say) is seen by the parent even when torchrun then tears the others down. Tasks
and results are the typed records of :mod:`profiler._protocol`; the process entry is
the shared :func:`profiler._entry.worker_main`.
"""

from __future__ import annotations

import contextlib
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any, Iterator

from cotune.errors import is_out_of_memory
from profiler._entry import SetupFault, scratch_write, worker_main, write_batch_result
from profiler._noise import NoiseAccumulator
from profiler._protocol import (CurveResult, CurveTask, EpochLine, Task, TimingResult, TimingTask, append_epoch,
                                diverged_metric)
from profiler._stats import median_rel_halfwidth, summarize
from profiler._workload import Workload, load_workload


class SimulatedOutOfMemory(MemoryError):
    """Raised for ``Workload.simulate_oom_above``: behaves like a real out-of-memory."""


class _Env:
    """The process group and device of this worker, as torchrun describes them."""

    def __init__(self, *, device: str, cpu_threads: int = 1) -> None:
        import torch
        import torch.distributed as dist

        self.rank = int(os.environ.get("RANK", "0"))
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        self.local_world = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
        use_cuda = device == "cuda" or (device == "auto" and torch.cuda.is_available())
        if use_cuda and not torch.cuda.is_available():
            raise RuntimeError("--device cuda but torch sees no CUDA device: use --device cpu or install a CUDA build")
        if use_cuda:
            torch.cuda.set_device(self.local_rank)
            self.device = torch.device("cuda", self.local_rank)
            backend = "nccl"
        else:
            self.device = torch.device("cpu")
            backend = "gloo"
            # On CPU a "worker" stands for one device: give every worker the same
            # threads whatever the worker count (default 1), so step times at 1 and at
            # N workers compare like for like; 0 shares the host's cores instead.
            threads = cpu_threads or max(1, (os.cpu_count() or 1) // self.local_world)
            torch.set_num_threads(threads)
        if not dist.is_initialized():
            import datetime

            dist.init_process_group(backend=backend, timeout=datetime.timedelta(seconds=600))
        self.dist = dist
        self.torch = torch

    def sync_device(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)

    def broadcast_flag(self, flag: bool) -> bool:
        """Rank 0's flag, seen by every rank (so all ranks run the same number of steps)."""
        t = self.torch.tensor([1 if flag else 0], dtype=self.torch.int64, device=self.device)
        self.dist.broadcast(t, src=0)
        return bool(t.item())

    def all_gather(self, obj: Any) -> list[Any]:
        out: list[Any] = [None] * self.world
        self.dist.all_gather_object(out, obj)
        return out

    def peak_memory_bytes(self) -> float:
        if self.device.type == "cuda":
            return float(self.torch.cuda.max_memory_allocated(self.device))
        # Peak resident set of this process (Linux reports KiB): the honest CPU analogue.
        return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024.0


def _to_device(batch: Any, device: Any) -> Any:
    if hasattr(batch, "to"):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_device(b, device) for b in batch)
    if isinstance(batch, dict):
        return {k: _to_device(v, device) for k, v in batch.items()}
    return batch


def _loss_of(workload: Workload, model: Any, batch: Any, loss_fn: Any) -> Any:
    if workload.step is not None:
        return workload.step(model, batch, loss_fn)
    inputs, target = batch[0], batch[1]
    return loss_fn(model(inputs), target)


def _check_oom_knob(workload: Workload, local_batch: int) -> None:
    if workload.simulate_oom_above is not None and local_batch > workload.simulate_oom_above:
        raise SimulatedOutOfMemory(
            f"simulated out of memory: local batch {local_batch} > simulate_oom_above={workload.simulate_oom_above}"
        )


class _InfiniteSampler:
    """Random indices with replacement, forever: timing needs batches, not epochs."""

    def __init__(self, size: int, *, seed: int) -> None:
        import torch

        self.size = size
        self.gen = torch.Generator().manual_seed(seed)

    def __iter__(self) -> Iterator[int]:
        import torch

        while True:
            yield from torch.randint(self.size, (4096,), generator=self.gen).tolist()


def _build(workload: Workload, env: _Env, *, global_batch: int) -> tuple[Any, Any, Any, Any]:
    from torch.nn.parallel import DistributedDataParallel as DDP

    model = workload.model().to(env.device)
    try:
        ddp = DDP(model, device_ids=[env.local_rank] if env.device.type == "cuda" else None)
    except MemoryError as exc:
        # Ours, before any step of the workload: DDP imports torch._dynamo lazily, which a
        # memory limit (ulimit -v) refuses. It was recorded as the workload's oom at this
        # batch, capping every later search.
        raise SetupFault(f"building DistributedDataParallel ran out of memory ({type(exc).__name__}: "
                         f"{exc or 'no message'}) before any step of the workload: raise the memory limit "
                         "(ulimit -v, the container's) and rerun") from exc
    loss_fn = workload.loss()
    optimizer = workload.optimizer(ddp.parameters(), lr=workload.lr_at(global_batch))
    return model, ddp, loss_fn, optimizer


# --------------------------------------------------------------------------- timing


def run_timing(task: TimingTask, env: _Env) -> TimingResult:
    """Time every local batch of ``task`` in this one launch; the last result is returned.

    The model and its DDP wrapper are built once: the start-up (torchrun, importing torch,
    the rendezvous, building the model) is most of a short probe's cost, and none of it
    depends on the batch. A task with several local batches writes each batch's result as
    soon as it is measured (``batch_result_dir``), so the parent keeps every batch timed
    before a later one fails or the launch is killed.
    """
    import torch

    workload = load_workload(task.workload)
    torch.manual_seed(task.seed + env.rank)
    model, ddp, loss_fn, _ = _build(workload, env, global_batch=task.local_batch * env.world)
    batches = task.local_batches
    result: TimingResult | None = None
    for index, local_batch in enumerate(batches):
        result = _time_batch(task, env, workload, ddp, loss_fn, local_batch=local_batch)
        if len(batches) > 1:
            write_batch_result(task.result_dir, index, result)
    assert result is not None
    return result


def _time_batch(task: TimingTask, env: _Env, workload: Workload, ddp: Any, loss_fn: Any, *,
                local_batch: int) -> TimingResult:
    """Warm up, then time DDP steps until the median is precise enough; then no_sync steps.

    Synchronisation time is ``median(DDP step) − median(no_sync step)``: the part of a
    step that gradient all-reduce adds *after* overlap with the backward pass, which is
    exactly what the step-time model needs (a hook timing the all-reduce itself would
    count communication that is hidden behind computation).
    """
    import torch
    from torch.utils.data import DataLoader

    seed = task.seed
    # A fresh optimizer at this batch's learning rate (its state would otherwise carry over).
    optimizer = workload.optimizer(ddp.parameters(), lr=workload.lr_at(local_batch * env.world))
    if env.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(env.device)  # this batch's peak, not an earlier one's
    dataset = workload.train_data()
    loader = DataLoader(
        dataset,
        batch_size=local_batch,
        sampler=_InfiniteSampler(len(dataset), seed=seed * 7919 + env.rank),
        num_workers=task.loader_workers,
        pin_memory=env.device.type == "cuda",
    )
    batches = iter(loader)
    ddp.train()

    def step(*, sync: bool) -> float:
        start = time.perf_counter()
        batch = _to_device(next(batches), env.device)
        optimizer.zero_grad(set_to_none=True)
        ctx = contextlib.nullcontext() if sync else ddp.no_sync()
        with ctx:
            loss = _loss_of(workload, ddp, batch, loss_fn)
            loss.backward()
        optimizer.step()
        env.sync_device()
        return time.perf_counter() - start

    _check_oom_knob(workload, local_batch)
    for _ in range(task.warmup_steps):
        step(sync=True)

    min_steps = task.min_timed_steps
    max_steps = task.max_timed_steps
    max_time_s = task.max_timed_s
    target = task.rel_precision
    chunk = task.chunk_steps
    times: list[float] = []
    began = time.perf_counter()
    while True:
        # Never past max_steps (a whole chunk more overshot it: --max-steps 5 timed 8);
        # every rank takes the same count, so the collectives stay in step.
        for _ in range(min(chunk, max_steps - len(times)) if times else min(min_steps, max_steps)):
            times.append(step(sync=True))
        # Rank 0 decides for everyone, outside the timed region.
        done = (
            len(times) >= max_steps
            or time.perf_counter() - began >= max_time_s
            or median_rel_halfwidth(times) <= target
        )
        if env.broadcast_flag(done):
            break

    nosync_times: list[float] = []
    if task.measure_sync:
        step(sync=False)  # the first no_sync step re-plans autograd hooks: not timed
        for _ in range(max(min_steps, len(times) // 2)):
            nosync_times.append(step(sync=False))

    gathered = env.all_gather(
        {"times": times, "nosync": nosync_times, "peak": env.peak_memory_bytes(), "host": os.uname().nodename}
    )
    # A DDP step ends when the slowest rank ends: take the per-step maximum over ranks.
    per_step = [max(g["times"][i] for g in gathered) for i in range(len(times))]
    summary = summarize(per_step)
    compute = sync = None
    if nosync_times:
        per_nosync = [max(g["nosync"][i] for g in gathered) for i in range(len(nosync_times))]
        compute = summarize(per_nosync).median_s
        sync = min(summary.median_s, max(0.0, summary.median_s - compute))
    return TimingResult(
        rank=env.rank, step_time_s=summary.median_s, step_time_spread_s=summary.spread_s, timed_steps=summary.n,
        rel_halfwidth=summary.rel_halfwidth, peak_memory_bytes=max(g["peak"] for g in gathered),
        hosts=len({g["host"] for g in gathered}), step_times_s=tuple(per_step), compute_time_s=compute,
        sync_time_s=sync,
    )


# --------------------------------------------------------------------------- curves


class _DDPNoiseHook:
    """A DDP communication hook that all-reduces like the default one and, on the way,
    records |local gradient|² (before) and |averaged gradient|² (after), per bucket.

    This is the "free" gradient-noise measurement: DDP already holds both the local
    and the all-reduced gradient, at batch sizes ``b`` and ``workers × b``.
    """

    def __init__(self, env: _Env) -> None:
        self.env = env
        self.local_sq = 0.0
        self.global_sq = 0.0

    def hook(self):  # noqa: ANN201
        """The hook function (DDP wants a plain function with an inspectable name)."""
        collector = self

        # No annotations: DDP checks the hook's signature and rejects any that are not
        # exactly dist.GradBucket / torch.futures.Future.
        def noise_allreduce_hook(state, bucket):  # noqa: ANN001, ANN202
            dist = collector.env.dist
            buf = bucket.buffer()
            collector.local_sq += float(buf.double().pow(2).sum().item())
            buf.div_(collector.env.world)
            fut = dist.all_reduce(buf, async_op=True).get_future()

            def after(f):  # noqa: ANN001, ANN202
                out = f.value()[0]
                collector.global_sq += float(out.double().pow(2).sum().item())
                return out

            return fut.then(after)

        return noise_allreduce_hook

    def take(self) -> tuple[float, float]:
        values = (self.local_sq, self.global_sq)
        self.local_sq = self.global_sq = 0.0
        return values


def _grad_sq(params: list[Any]) -> float:
    return float(sum(p.grad.double().pow(2).sum().item() for p in params if p.grad is not None))


def _default_evaluate(model: Any, loader: Any) -> float:
    import torch

    correct = total = 0
    device = next(model.parameters()).device
    with torch.no_grad():
        for inputs, target in loader:
            pred = model(inputs.to(device)).argmax(dim=1)
            correct += int((pred.cpu() == target).sum())
            total += int(target.numel())
    return correct / max(total, 1)


def _evaluate(workload: Workload, model: Any, dataset: Any, *, batch: int) -> float:
    from torch.utils.data import DataLoader

    loader = DataLoader(dataset, batch_size=batch, shuffle=False)
    was_training = model.training
    model.eval()
    try:
        fn = workload.evaluate or _default_evaluate
        return float(fn(model, loader))
    finally:
        model.train(was_training)


def run_curve(task: CurveTask, env: _Env) -> CurveResult:
    """Train at one global batch, evaluating after every epoch; stop at the target.

    After each epoch rank 0 appends ``{"epoch_index", "epoch", "metric"[, "b_noise"]}``
    to the progress file, then saves a checkpoint; a resumed curve continues from the
    checkpoint, and the parent skips epochs the profile already holds.
    """
    import torch
    from torch.utils.data import DataLoader, DistributedSampler

    workload = load_workload(task.workload)
    local_batch = task.local_batch
    global_batch = local_batch * env.world
    seed = task.seed
    max_epochs = task.max_epochs
    target = task.target
    noise = task.noise
    progress = Path(task.progress_path)
    ckpt_path = Path(task.checkpoint_path) if task.checkpoint_path else None

    torch.manual_seed(seed)  # identical initial weights on every rank
    model, ddp, loss_fn, optimizer = _build(workload, env, global_batch=global_batch)
    if workload.eval_data is None:
        raise RuntimeError(f"workload {workload.name!r} has no eval_data: learning curves need held-out data")
    train = workload.train_data()
    held_out = workload.eval_data() if env.rank == 0 else None
    sampler = DistributedSampler(train, num_replicas=env.world, rank=env.rank, shuffle=True, seed=seed, drop_last=True)
    loader = DataLoader(train, batch_size=local_batch, sampler=sampler, drop_last=True,
                        num_workers=task.loader_workers, pin_memory=env.device.type == "cuda")
    steps_per_epoch = len(loader)
    if steps_per_epoch == 0:
        raise RuntimeError(
            f"global batch {global_batch} exceeds the {len(train)} training samples: choose a smaller --curves batch"
        )
    peak_lr = workload.lr_at(global_batch)
    warmup_steps = max(1, round(workload.warmup_epochs * steps_per_epoch))
    params = [p for p in ddp.parameters() if p.requires_grad]

    hook = None
    if noise and env.world > 1:
        hook = _DDPNoiseHook(env)
        ddp.register_comm_hook(None, hook.hook())
    acc = NoiseAccumulator()

    start_epoch = 0
    if ckpt_path is not None and ckpt_path.exists():
        state = torch.load(ckpt_path, map_location=env.device, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start_epoch = int(state["epoch_index"])

    _check_oom_knob(workload, local_batch)
    ddp.train()
    reason = "max_epochs"
    last_epoch = start_epoch
    for epoch_index in range(start_epoch + 1, max_epochs + 1):
        # Re-seed per epoch so a run resumed from a checkpoint replays the same
        # dropout/augmentation randomness as an uninterrupted one.
        torch.manual_seed(seed * 100003 + epoch_index * 101 + env.rank)
        sampler.set_epoch(epoch_index)
        acc.reset()
        for i, batch in enumerate(loader):
            global_step = (epoch_index - 1) * steps_per_epoch + i
            lr = peak_lr * min(1.0, (global_step + 1) / warmup_steps)
            for group in optimizer.param_groups:
                group["lr"] = lr
            batch = _to_device(batch, env.device)
            optimizer.zero_grad(set_to_none=True)
            if noise and env.world == 1 and local_batch >= 2:
                # One worker: split the batch in two halves; the first half's gradient
                # is the small-batch sample, the sum of both the big-batch one.
                half = local_batch // 2
                first = [b[:half] for b in batch] if isinstance(batch, (list, tuple)) else batch[:half]
                second = [b[half:] for b in batch] if isinstance(batch, (list, tuple)) else batch[half:]
                with ddp.no_sync():
                    (_loss_of(workload, ddp, first, loss_fn) * 0.5).backward()
                small_sq = 4.0 * _grad_sq(params)
                loss = _loss_of(workload, ddp, second, loss_fn) * 0.5
                loss.backward()
                acc.add(small_sq=small_sq, b_small=half, big_sq=_grad_sq(params), b_big=local_batch)
            else:
                loss = _loss_of(workload, ddp, batch, loss_fn)
                loss.backward()
                if hook is not None:
                    local_sq, global_sq = hook.take()
                    total_local = torch.tensor([local_sq], dtype=torch.float64, device=env.device)
                    env.dist.all_reduce(total_local)
                    acc.add(small_sq=float(total_local.item()) / env.world, b_small=local_batch,
                            big_sq=global_sq, b_big=global_batch)
            optimizer.step()
        last_epoch = epoch_index
        stop = False
        if env.rank == 0:
            metric = _evaluate(workload, model, held_out, batch=max(256, local_batch))
            line = EpochLine(epoch_index=epoch_index,
                             # Real passes over the data: drop_last makes an epoch slightly short.
                             epoch=epoch_index * steps_per_epoch * global_batch / len(train),
                             metric=metric, b_noise=acc.b_noise())
            with scratch_write(progress, "the progress line"):
                append_epoch(progress, line)
            if ckpt_path is not None:
                tmp = ckpt_path.with_name(ckpt_path.name + ".tmp")
                with scratch_write(tmp, "the curve checkpoint (or pass --no-checkpoint)"):
                    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                                "epoch_index": epoch_index}, tmp)
                    os.replace(tmp, ckpt_path)
            if diverged_metric(metric):  # NaN, ±inf, or past what a profile holds (recorded as ±inf)
                reason, stop = "diverged", True
            elif target is not None and (metric >= target if workload.goal == "max" else metric <= target):
                reason, stop = "target", True
        if env.broadcast_flag(stop):
            if env.rank != 0:
                reason = "stopped"
            break
    return CurveResult(rank=env.rank, reason=reason, epochs=last_epoch, steps_per_epoch=steps_per_epoch)


# --------------------------------------------------------------------------- entry


class TorchBackend:
    """The PyTorch side of :func:`profiler._entry.worker_main`."""

    def setup(self, task: Task) -> _Env:
        return _Env(device=task.device, cpu_threads=task.cpu_threads)

    def run(self, task: Task, env: _Env) -> TimingResult | CurveResult:
        return run_timing(task, env) if isinstance(task, TimingTask) else run_curve(task, env)

    def is_oom(self, exc: BaseException) -> bool:
        return is_out_of_memory(exc)

    def finish(self, env: _Env) -> None:
        env.dist.barrier()  # every rank has written its result before any exits


def main(argv: list[str] | None = None) -> int:
    return worker_main(sys.argv[1:] if argv is None else argv, backend=TorchBackend(), prog="profiler._worker")


if __name__ == "__main__":
    sys.exit(main())
