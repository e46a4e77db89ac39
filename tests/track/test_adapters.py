"""The Lightning and Keras adapters, with the real libraries (slow: they import torch/TensorFlow)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cotune.profile import WorkloadRecord, read_profile
from cotune.track import Tracker

WORKLOAD = WorkloadRecord(name="tiny", dataset_size=256, metric="acc", goal="max")


def test_importing_cotune_track_imports_no_framework() -> None:
    code = "import sys, cotune.track; print(sorted(m for m in ('torch', 'lightning', 'keras', 'tensorflow') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_lightning_callback_writes_steps_and_one_eval_per_validation(tmp_path: Path) -> None:
    pytest.importorskip("lightning")
    import lightning as L
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    from cotune.track.lightning import TrackerCallback

    torch.manual_seed(0)
    x = torch.randn(256, 4)
    y = (x.sum(dim=1) > 0).long()

    class Tiny(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = torch.nn.Linear(4, 2)

        def training_step(self, batch, batch_idx):
            xb, yb = batch
            return torch.nn.functional.cross_entropy(self.net(xb), yb)

        def validation_step(self, batch, batch_idx):
            xb, yb = batch
            self.log("val_acc", (self.net(xb).argmax(1) == yb).float().mean())

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.5)

    path = tmp_path / "job.jsonl"
    tracker = Tracker(path, gpu="cpu", workers=1, local_batch=32, workload=WORKLOAD, window=4, warmup_steps=1)
    trainer = L.Trainer(max_epochs=3, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, callbacks=[TrackerCallback(tracker, monitor="val_acc")])
    data = DataLoader(TensorDataset(x, y), batch_size=32)
    trainer.fit(Tiny(), data, data)
    p = read_profile(path)
    assert [e.epoch for e in p.evals] == pytest.approx([1.0, 2.0, 3.0])  # 8 steps x 32 = one epoch of 256
    assert all(0.0 <= e.metric <= 1.0 and e.global_batch == 32 and e.job == "tiny" for e in p.evals)
    assert sum(s.timed_steps for s in p.steps) == 3 * 8 - 1  # every step after the warm-up one
    assert all(s.step_time_s > 0 for s in p.steps)
    assert all(e.schedule_epochs == 3 for e in p.evals)  # the trainer's max_epochs: where the schedule ends


@pytest.mark.slow
def test_keras_callback_writes_steps_and_one_eval_per_epoch(tmp_path: Path) -> None:
    keras = pytest.importorskip("keras")
    import numpy as np

    from cotune.track.keras import TrackerCallback

    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 4)).astype("float32")
    y = (x.sum(axis=1) > 0).astype("int64")
    model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    path = tmp_path / "job.jsonl"
    tracker = Tracker(path, gpu="cpu", workers=1, local_batch=32, workload=WORKLOAD, window=4, warmup_steps=1)
    model.fit(x, y, batch_size=32, epochs=2, validation_data=(x, y), verbose=0,
              callbacks=[TrackerCallback(tracker, monitor="val_accuracy")])
    p = read_profile(path)
    assert [e.epoch for e in p.evals] == pytest.approx([1.0, 2.0])
    assert all(0.0 <= e.metric <= 1.0 for e in p.evals)
    assert all(e.schedule_epochs == 2 for e in p.evals)  # fit(epochs=2): where the schedule ends
    assert sum(s.timed_steps for s in p.steps) == 2 * 8 - 1


@pytest.mark.slow
def test_keras_callback_names_the_logged_values_when_monitor_is_missing(tmp_path: Path) -> None:
    keras = pytest.importorskip("keras")
    import numpy as np

    from cotune.errors import InputError
    from cotune.track.keras import TrackerCallback

    x = np.zeros((32, 4), dtype="float32")
    y = np.zeros(32, dtype="int64")
    model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    tracker = Tracker(tmp_path / "j.jsonl", gpu="cpu", workers=1, local_batch=32, workload=WORKLOAD)
    with pytest.raises(InputError, match="no 'val_accuracy' in the epoch logs \\(have: loss\\)"):
        model.fit(x, y, batch_size=32, epochs=1, verbose=0, callbacks=[TrackerCallback(tracker, monitor="val_accuracy")])
