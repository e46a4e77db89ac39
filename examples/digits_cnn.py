"""A small CNN on scikit-learn's bundled digits (8×8 images, 10 classes; no download).

Profile it (about a minute on two CPU cores)::

    cotune profile --workload examples/digits_cnn.py:workload --workers 1,2 \\
        --local-batch 16,32,64,128 --curves 32,128,512 --max-epochs 20 --out digits.jsonl
    cotune recommend digits.jsonl --target 0.97 --deadline 2m

The file only *describes* the job: factories for the model, data, loss and optimizer.
The profiler builds them inside each torchrun worker and owns the training loop.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import TensorDataset

from profiler import Workload

HELD_OUT = 360  # of 1797 samples, drawn with a fixed seed: every worker sees the same split


def _tensors(train: bool) -> TensorDataset:
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0  # (N, 1, 8, 8) in [0, 1]
    y = torch.tensor(digits.target, dtype=torch.long)
    # A random split: the file is ordered by writer, and the last writers are not
    # like the first ones.
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))
    part = order[:-HELD_OUT] if train else order[-HELD_OUT:]
    return TensorDataset(x[part], y[part])


def make_model() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # 8×8 → 4×4
        nn.Flatten(), nn.Linear(64 * 4 * 4, 128), nn.ReLU(), nn.Linear(128, 10),
    )  # fmt: skip


workload = Workload(
    name="digits-cnn",
    model=make_model,
    train_data=lambda: _tensors(train=True),
    eval_data=lambda: _tensors(train=False),
    loss=nn.CrossEntropyLoss,
    optimizer=lambda params, *, lr: torch.optim.SGD(params, lr=lr, momentum=0.9),
    metric="accuracy",
    goal="max",
    base_lr=0.05,
    base_batch=32,
    lr_scaling="sqrt",
    warmup_epochs=1.0,
    dataset_size=1797 - HELD_OUT,
)
