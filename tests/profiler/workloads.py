"""Tiny workloads for the profiler tests: fast to build, one per failure path."""

from __future__ import annotations

import os
import time

import torch
from torch import nn
from torch.utils.data import TensorDataset

from profiler import Workload


def _data(n: int, *, seed: int) -> TensorDataset:
    # Four Gaussian blobs in 16 dimensions: learnable to >90 % in a few epochs.
    gen = torch.Generator().manual_seed(seed)
    centers = torch.randn(4, 16, generator=torch.Generator().manual_seed(0)) * 2.0
    y = torch.randint(0, 4, (n,), generator=gen)
    x = centers[y] + torch.randn(n, 16, generator=gen)
    return TensorDataset(x, y)


def _model() -> nn.Module:
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))


def _sgd(params, *, lr):
    return torch.optim.SGD(params, lr=lr, momentum=0.9)


def _crashing_model() -> nn.Module:
    raise RuntimeError("boom: the model factory is broken")


def _rank1_crashing_model() -> nn.Module:
    if os.environ.get("RANK") == "1":
        raise RuntimeError("boom on rank 1 only")
    return _model()


def _model_killed_by(signal_name: str):
    # A signal from outside the profiler (an operator's kill, a node agent) as the worker sees it.
    def make() -> nn.Module:
        import signal

        os.kill(os.getpid(), getattr(signal, signal_name))
        time.sleep(60)
        return _model()

    return make


class _KilledInStep(nn.Module):
    """A worker killed in a forward pass (an operator's kill, the kernel's OOM killer): on
    ``rank`` (None: every rank), at a local batch of at least ``min_batch``. With rank 1 of
    two, rank 0 goes on into the gradient all-reduce and sees the connection close."""

    def __init__(self, signal_name: str, *, rank: str | None, min_batch: int = 0) -> None:
        super().__init__()
        self.net = _model()
        self.signal_name = signal_name
        self.rank = rank
        self.min_batch = min_batch

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.rank in (None, os.environ.get("RANK")) and x.shape[0] >= self.min_batch:
            import signal

            os.kill(os.getpid(), getattr(signal, self.signal_name))
            time.sleep(60)
        return self.net(x)


class _Rank1ConnectionReset(nn.Module):
    """Rank 1's own I/O fails in a forward pass (a shard read over HTTP whose server hung up):
    its ConnectionResetError reads like a lost peer's, while rank 0 goes on into the gradient
    all-reduce and sees the connection close."""

    def __init__(self) -> None:
        super().__init__()
        self.net = _model()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if os.environ.get("RANK") == "1":
            raise ConnectionResetError(104, "Connection reset by peer (fetching a shard from the object store)")
        return self.net(x)


def _model_that_exits_with(code: int):
    # A workload that leaves with the code our worker uses for a storage fault (5) or a
    # setup fault (6): its own crash, not ours.
    def make() -> nn.Module:
        os._exit(code)

    return make


FLOOD_MIB = 16  # printed by the flooding workloads: over three times the live log's bound (5 MiB)


def _model_after_a_flood(*, crash: bool):
    """A model factory that first prints FLOOD_MIB MiB; after each MiB it notes the size of the
    probe's live log on disk (log.txt and its segments, beside the worker's task file) in
    $COTUNE_TEST_LOG_SIZES, one number a line. Then it builds the model, or raises."""

    def make() -> nn.Module:
        import sys
        from pathlib import Path

        folder = Path(sys.argv[1]).parent  # `python -m profiler._worker TASK.json`
        line = b"loss is still going down, printing every step\n"
        for _ in range(FLOOD_MIB):
            sys.stdout.buffer.write(line * (2**20 // len(line)))
            sys.stdout.buffer.flush()
            size = 0
            for path in folder.glob("log.txt*"):
                try:
                    size += path.stat().st_size
                except FileNotFoundError:  # a segment removed meanwhile
                    pass
            with open(os.environ["COTUNE_TEST_LOG_SIZES"], "a") as fh:
                fh.write(f"{size}\n")
        if crash:
            raise RuntimeError(f"boom after printing {FLOOD_MIB} MiB")
        return _model()

    return make


def _hanging_loss():
    time.sleep(3600)  # a worker that never gets to its first step


_COMMON = dict(
    train_data=lambda: _data(512, seed=1),
    eval_data=lambda: _data(256, seed=2),
    loss=nn.CrossEntropyLoss,
    optimizer=_sgd,
    base_lr=0.05,
    base_batch=16,
    warmup_epochs=0.5,
    dataset_size=512,
)

tiny = Workload(name="tiny", model=_model, **_COMMON)
# The same job declared as 10 million samples: training takes hours, so probes are cheap beside it.
big_data = Workload(name="big-data", model=_model, **{**_COMMON, "dataset_size": 10_000_000})
oom_above_8 = Workload(name="tiny", model=_model, simulate_oom_above=8, **_COMMON)
crashing = Workload(name="tiny", model=_crashing_model, **_COMMON)
rank1_crashing = Workload(name="tiny", model=_rank1_crashing_model, **_COMMON)
hanging = Workload(name="tiny", model=_model, **{**_COMMON, "loss": _hanging_loss})
sigtermed = Workload(name="tiny", model=_model_killed_by("SIGTERM"), **_COMMON)
sigkilled = Workload(name="tiny", model=_model_killed_by("SIGKILL"), **_COMMON)
rank1_sigtermed_in_a_step = Workload(name="tiny", model=lambda: _KilledInStep("SIGTERM", rank="1"), **_COMMON)
rank1_sigkilled_in_a_step = Workload(name="tiny", model=lambda: _KilledInStep("SIGKILL", rank="1"), **_COMMON)
rank1_connection_reset = Workload(name="tiny", model=_Rank1ConnectionReset, **_COMMON)
sigtermed_from_batch_8 = Workload(name="tiny", model=lambda: _KilledInStep("SIGTERM", rank=None, min_batch=8), **_COMMON)
exits_5 = Workload(name="tiny", model=_model_that_exits_with(5), **_COMMON)
exits_6 = Workload(name="tiny", model=_model_that_exits_with(6), **_COMMON)
floods_its_log = Workload(name="tiny", model=_model_after_a_flood(crash=False), **_COMMON)
floods_then_crashes = Workload(name="tiny", model=_model_after_a_flood(crash=True), **_COMMON)
no_eval = Workload(name="tiny", model=_model, **{**_COMMON, "eval_data": None})


class _SlowLoss(nn.Module):
    """Cross-entropy that takes 20 ms: curves slow enough to be killed between epochs."""

    def forward(self, outputs: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        time.sleep(0.02)
        return nn.functional.cross_entropy(outputs, target)


slow = Workload(name="tiny", model=_model, **{**_COMMON, "loss": _SlowLoss})


class _HangAbove4Loss(nn.Module):
    """Cross-entropy that never returns at local batches above 4: a batch that hangs inside
    a launch whose earlier batch was timed."""

    def forward(self, outputs: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        if outputs.shape[0] > 4:
            time.sleep(3600)
        return nn.functional.cross_entropy(outputs, target)


hang_above_4 = Workload(name="tiny", model=_model, **{**_COMMON, "loss": _HangAbove4Loss})


def _data_not_downloaded() -> TensorDataset:
    import sys

    sys.exit("data not found: run download.py first")


# train_data() that exits while the parent counts its samples (no dataset_size given).
exits_for_data = Workload(name="tiny", model=_model,
                          **{**{k: v for k, v in _COMMON.items() if k != "dataset_size"}, "train_data": _data_not_downloaded})


def _data_that_hangs() -> TensorDataset:
    time.sleep(3600)  # a download that never ends
    return _data(512, seed=1)


# train_data() that hangs while the parent counts its samples (no dataset_size given).
hangs_for_data = Workload(name="tiny", model=_model,
                          **{**{k: v for k, v in _COMMON.items() if k != "dataset_size"}, "train_data": _data_that_hangs})
