"""Write the example training logs in examples/logs/ with the real libraries.

Each function trains the same tiny classifier on CPU and lets one tool log it the way
a user's run would: Hugging Face ``Trainer`` (``trainer_state.json``), Lightning's
``CSVLogger`` with its ``ThroughputMonitor`` (``metrics.csv``), PyTorch's TensorBoard
``SummaryWriter`` (event files), MLflow's local file store and Keras's ``CSVLogger``. ``cotune import`` reads
them (docs/logs.md); the tests call these functions to write fresh logs as well.

    pip install torch transformers accelerate lightning tensorboard mlflow-skinny tensorflow-cpu
    python examples/logs/make_logs.py examples/logs

Every run: 96 training samples, global batch 16 (6 steps per epoch), 4 epochs.
"""

from __future__ import annotations

import csv
import os
import sys
import time
import types
from pathlib import Path

DATASET_SIZE = 96
GLOBAL_BATCH = 16
EPOCHS = 4


def _quiet_tensorboard() -> None:
    # torch's SummaryWriter imports TensorFlow through tensorboard when it is installed
    # (slow, noisy, unneeded): tensorboard's own switch for its pure-Python stub.
    if "tensorflow" not in sys.modules:
        sys.modules.setdefault("tensorboard.compat.notf", types.ModuleType("tensorboard.compat.notf"))


def _data(seed: int = 0):
    import torch

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(DATASET_SIZE + 32, 8, generator=g)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).long()
    return (x[:DATASET_SIZE], y[:DATASET_SIZE]), (x[DATASET_SIZE:], y[DATASET_SIZE:])


def write_hf_trainer(out: Path) -> Path:
    """``out/hf-trainer/trainer_state.json`` from a real Trainer run (``save_state``).

    Each checkpoint holds a trainer_state.json too, but only the one ``save_state``
    writes after training has the run summary with ``train_steps_per_second``."""
    import torch
    from torch import nn
    from transformers import Trainer, TrainingArguments

    (xt, yt), (xv, yv) = _data()

    class Rows(torch.utils.data.Dataset):
        def __init__(self, x, y):
            self.x, self.y = x, y

        def __len__(self):
            return len(self.x)

        def __getitem__(self, i):
            return {"x": self.x[i], "labels": self.y[i]}

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.Linear(8, 2)

        def forward(self, x, labels=None):
            logits = self.layer(x)
            return {"loss": nn.functional.cross_entropy(logits, labels), "logits": logits}

    def accuracy(pred):
        return {"accuracy": float((pred.predictions.argmax(-1) == pred.label_ids).mean())}

    torch.manual_seed(0)
    run_dir = out / "hf-trainer"
    args = TrainingArguments(
        output_dir=str(run_dir), per_device_train_batch_size=GLOBAL_BATCH, num_train_epochs=EPOCHS,
        eval_strategy="epoch", save_strategy="no", logging_steps=2, learning_rate=0.05,
        report_to=[], use_cpu=True, seed=0, disable_tqdm=True,
    )
    trainer = Trainer(model=Net(), args=args, train_dataset=Rows(xt, yt), eval_dataset=Rows(xv, yv), compute_metrics=accuracy)
    trainer.train()
    trainer.save_state()
    return run_dir / "trainer_state.json"


def _lightning_module():
    import lightning as L
    import torch
    from torch import nn

    class Net(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = nn.Linear(8, 2)

        def training_step(self, batch, _):
            x, y = batch
            loss = nn.functional.cross_entropy(self.layer(x), y)
            self.log("train_loss", loss)
            return loss

        def validation_step(self, batch, _):
            x, y = batch
            out = self.layer(x)
            self.log("val_loss", nn.functional.cross_entropy(out, y))
            self.log("val_acc", (out.argmax(-1) == y).float().mean())

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.2)

    return Net()


def write_lightning_csv(out: Path) -> Path:
    """``out/lightning/tiny/version_0/metrics.csv`` from a real Lightning run."""
    import lightning as L
    import torch
    from lightning.pytorch.callbacks import ThroughputMonitor
    from lightning.pytorch.loggers import CSVLogger

    (xt, yt), (xv, yv) = _data()
    torch.manual_seed(0)
    train = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xt, yt), batch_size=GLOBAL_BATCH)
    val = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xv, yv), batch_size=32)
    logger = CSVLogger(str(out / "lightning"), name="tiny")
    trainer = L.Trainer(
        max_epochs=EPOCHS, logger=logger, log_every_n_steps=2, accelerator="cpu", enable_progress_bar=False,
        enable_checkpointing=False, enable_model_summary=False,
        callbacks=[ThroughputMonitor(batch_size_fn=lambda batch: batch[0].size(0), window_size=2)],
    )
    trainer.fit(_lightning_module(), train, val)
    return Path(logger.log_dir) / "metrics.csv"


def write_lightning_tensorboard(out: Path) -> Path:
    """``out/lightning-tb/tiny/version_0`` (event files and hparams.yaml) from the same real
    Lightning run with its TensorBoardLogger. Not kept in examples/ (the CSV log is)."""
    _quiet_tensorboard()
    import lightning as L
    import torch
    from lightning.pytorch.loggers import TensorBoardLogger

    (xt, yt), (xv, yv) = _data()
    torch.manual_seed(0)
    train = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xt, yt), batch_size=GLOBAL_BATCH)
    val = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xv, yv), batch_size=32)
    logger = TensorBoardLogger(str(out / "lightning-tb"), name="tiny")
    trainer = L.Trainer(max_epochs=EPOCHS, logger=logger, log_every_n_steps=2, accelerator="cpu", enable_progress_bar=False,
                        enable_checkpointing=False, enable_model_summary=False)
    trainer.fit(_lightning_module(), train, val)
    return Path(logger.log_dir)


def _train_loop(log_step, log_eval) -> None:
    """A plain PyTorch loop; ``log_step(step, loss)`` after each optimizer step and
    ``log_eval(step, accuracy)`` after each epoch."""
    import torch
    from torch import nn

    (xt, yt), (xv, yv) = _data()
    torch.manual_seed(0)
    model = nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.2)
    step = 0
    for _ in range(EPOCHS):
        for i in range(0, DATASET_SIZE, GLOBAL_BATCH):
            loss = nn.functional.cross_entropy(model(xt[i:i + GLOBAL_BATCH]), yt[i:i + GLOBAL_BATCH])
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            log_step(step, float(loss.detach()))
        with torch.no_grad():
            log_eval(step, float((model(xv).argmax(-1) == yv).float().mean()))


def write_tensorboard(out: Path) -> tuple[Path, list[float]]:
    """``out/tensorboard/tiny/events.out.tfevents.*`` from torch's SummaryWriter; also
    the wall-clock seconds between consecutive training steps, as the loop saw them."""
    _quiet_tensorboard()
    from torch.utils.tensorboard import SummaryWriter

    run = out / "tensorboard" / "tiny"
    writer = SummaryWriter(str(run))
    stamps: list[float] = []

    def step(s, loss):
        stamps.append(time.time())
        writer.add_scalar("train/loss", loss, s)

    _train_loop(step, lambda s, acc: writer.add_scalar("val/accuracy", acc, s))
    writer.close()
    return run, [b - a for a, b in zip(stamps, stamps[1:])]


def write_mlflow(out: Path) -> Path:
    """A run of MLflow's local file store under ``out/mlruns``."""
    # MLflow 3 keeps the file store only on request; it is what a local run without a
    # tracking server writes in older versions and what this example documents.
    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    import mlflow

    mlflow.set_tracking_uri((out / "mlruns").resolve().as_uri())
    mlflow.set_experiment("tiny")
    with mlflow.start_run(run_name="tiny-run") as run:
        mlflow.log_params({"batch_size": GLOBAL_BATCH, "epochs": EPOCHS})
        _train_loop(lambda s, loss: mlflow.log_metric("train_loss", loss, step=s),
                    lambda s, acc: mlflow.log_metric("val_accuracy", acc, step=s))
    info = run.info
    return out / "mlruns" / info.experiment_id / info.run_id


def write_mlflow_sqlite(out: Path) -> tuple[Path, str]:
    """Two runs in MLflow's SQLite store (MLflow 3's default local backend), ``out/mlflow.db``;
    returns the file and the first run's id. Not kept in examples/ (about 1 MB of schema)."""
    import mlflow

    db = out / "mlflow.db"
    mlflow.set_tracking_uri(f"sqlite:///{db.resolve()}")
    mlflow.set_experiment("tiny")
    ids = []
    for name in ("first", "second"):
        with mlflow.start_run(run_name=name) as run:
            _train_loop(lambda s, loss: mlflow.log_metric("train_loss", loss, step=s),
                        lambda s, acc: mlflow.log_metric("val_accuracy", acc, step=s))
            ids.append(run.info.run_id)
    return db, ids[0]


def write_csv(out: Path) -> Path:
    """A plain CSV a custom loop might write: epoch, validation top-1, throughput and
    the gradient statistics of the profile format (numbers from the loop above)."""
    rows: list[dict] = []
    t0 = [time.perf_counter()]

    def step(s, loss):
        pass

    def evaluate(s, acc):
        now = time.perf_counter()
        rows.append({"epoch": s * GLOBAL_BATCH / DATASET_SIZE, "val_top1": acc,
                     "samples_per_second": DATASET_SIZE / (now - t0[0])})
        t0[0] = now

    _train_loop(step, evaluate)
    path = out / "run.csv"
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def _keras_fit(callbacks: list) -> None:
    """The one tiny Keras fit every Keras log here comes from (seeded, as the other loggers')."""
    import keras

    (x, y), (vx, vy) = _data()
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.SGD(0.1), metrics=["accuracy"],
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x.numpy(), y.numpy(), batch_size=GLOBAL_BATCH, epochs=EPOCHS, shuffle=False, verbose=0,
              validation_data=(vx.numpy(), vy.numpy()), callbacks=callbacks)


def write_keras_csv(out: Path) -> Path:
    """``out/keras/training_log.csv`` from a real Keras ``fit`` with ``CSVLogger`` (one
    row per epoch; its ``epoch`` column is the 0-based index of the epoch just finished)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow loads
    import keras

    path = out / "keras" / "training_log.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    _keras_fit([keras.callbacks.CSVLogger(str(path))])
    return path


def write_keras_tensorboard(out: Path) -> tuple[Path, Path]:
    """``out/keras-tb`` (Keras's TensorBoard callback: ``train/`` and ``validation/``, TF2
    tensor summaries) and the same fit's ``CSVLogger`` file beside it, to compare the two."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow loads
    import keras

    logdir, csv_path = out / "keras-tb", out / "keras-tb.csv"
    _keras_fit([keras.callbacks.TensorBoard(str(logdir)), keras.callbacks.CSVLogger(str(csv_path))])
    return logdir, csv_path


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "examples/logs")
    target.mkdir(parents=True, exist_ok=True)
    import shutil

    for old in ("hf-trainer", "lightning", "tensorboard", "mlruns", "keras"):
        shutil.rmtree(target / old, ignore_errors=True)
    for fn in (write_hf_trainer, write_lightning_csv, write_tensorboard, write_mlflow, write_csv, write_keras_csv):
        print(fn.__name__, fn(target) if fn is not write_tensorboard else fn(target)[0])
