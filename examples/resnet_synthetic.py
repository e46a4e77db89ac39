"""A small ResNet (BatchNorm, residual stages) on synthetic 16×16 colour images.

A more realistic probe target than the digits CNN (convolutions, batch norm, three
residual stages, ~0.2 M parameters), still fast on CPU: the data are generated, so
nothing is downloaded. Ten classes, each a fixed random texture, shown shifted,
tinted and noisy; a ResNet learns them in a few epochs, a linear model does not.

    cotune profile --workload examples/resnet_synthetic.py:workload --workers 1,2 \\
        --local-batch 32,64,128 --curves 64,256 --max-epochs 8 --target 0.9 --out resnet.jsonl

On a GPU host the same command probes cuda devices with nccl (``--device auto``).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import TensorDataset

from profiler import Workload

CLASSES, SIZE = 10, 16
TRAIN, HELD_OUT = 2048, 512


def _images(n: int, *, seed: int) -> TensorDataset:
    templates = torch.randn(CLASSES, 3, SIZE + 4, SIZE + 4, generator=torch.Generator().manual_seed(1234))
    templates = nn.functional.avg_pool2d(templates, 3, stride=1, padding=1)  # smooth textures
    gen = torch.Generator().manual_seed(seed)
    y = torch.randint(0, CLASSES, (n,), generator=gen)
    dx, dy = torch.randint(0, 5, (2, n), generator=gen)
    x = torch.stack([templates[c, :, i : i + SIZE, j : j + SIZE] for c, i, j in zip(y.tolist(), dx.tolist(), dy.tolist())])
    tint = 1 + 0.3 * torch.randn(n, 3, 1, 1, generator=gen)
    x = x * tint + 0.8 * torch.randn(n, 3, SIZE, SIZE, generator=gen)
    return TensorDataset(x, y)


class Block(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True),
            nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False), nn.BatchNorm2d(c_out),
        )  # fmt: skip
        self.skip = (
            nn.Identity() if stride == 1 and c_in == c_out
            else nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))
        )  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + self.skip(x))


def resnet(width: int = 16) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
        Block(width, width, 1), Block(width, 2 * width, 2), Block(2 * width, 4 * width, 2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4 * width, CLASSES),
    )  # fmt: skip


workload = Workload(
    name="resnet-synthetic16",
    model=resnet,
    train_data=lambda: _images(TRAIN, seed=1),
    eval_data=lambda: _images(HELD_OUT, seed=2),
    loss=nn.CrossEntropyLoss,
    optimizer=lambda params, *, lr: torch.optim.SGD(params, lr=lr, momentum=0.9, weight_decay=5e-4, nesterov=True),
    base_lr=0.05,
    base_batch=64,
    lr_scaling="sqrt",
    warmup_epochs=1.0,
    dataset_size=TRAIN,
)
