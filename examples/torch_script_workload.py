"""An ordinary PyTorch training script, and the few lines that make it a workload.

Everything above the marked block is the script as a user would write it: a model,
data, and a training loop run by ``python examples/torch_script_workload.py``. The
profiler needs only the *factories* the loop already uses; the last block names them.
Nothing else changes, and the script still trains on its own.

    cotune profile --workload examples/torch_script_workload.py:workload \\
        --workers 1,2 --local-batch 32,128 --curves 64,256 --max-epochs 5 --out wine.jsonl
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def load_wine_split(train: bool) -> TensorDataset:
    from sklearn.datasets import load_wine  # bundled with scikit-learn: 178 samples, 3 classes

    data = load_wine()
    x = torch.tensor(data.data, dtype=torch.float32)
    x = (x - x.mean(0)) / x.std(0)
    y = torch.tensor(data.target)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))
    part = order[:140] if train else order[140:]
    # Repeat the small training set so an epoch has enough steps to time.
    reps = 16 if train else 1
    return TensorDataset(x[part].repeat(reps, 1), y[part].repeat(reps))


def build_model() -> nn.Module:
    return nn.Sequential(nn.Linear(13, 64), nn.ReLU(), nn.Linear(64, 3))


def build_optimizer(params, *, lr: float) -> torch.optim.Optimizer:
    return torch.optim.Adam(params, lr=lr)


def train(epochs: int = 5, batch: int = 32, lr: float = 1e-3) -> None:
    model, loss_fn = build_model(), nn.CrossEntropyLoss()
    opt = build_optimizer(model.parameters(), lr=lr)
    for epoch in range(epochs):
        for x, y in DataLoader(load_wine_split(True), batch_size=batch, shuffle=True):
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
        held = load_wine_split(False)
        acc = (model(held.tensors[0]).argmax(1) == held.tensors[1]).float().mean()
        print(f"epoch {epoch + 1}: accuracy {acc:.3f}")


if __name__ == "__main__":
    train()

# ---- the workload: these lines are all the profiler needs ---------------------------
from profiler import Workload  # noqa: E402

workload = Workload(
    name="wine-mlp",
    model=build_model,
    train_data=lambda: load_wine_split(True),
    eval_data=lambda: load_wine_split(False),
    loss=nn.CrossEntropyLoss,
    optimizer=build_optimizer,
    base_lr=1e-3,  # the script's learning rate at its batch size…
    base_batch=32,  # …scaled by √(B/32) at other global batches
)
