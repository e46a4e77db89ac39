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
    code = ("import sys, cotune.track; print(sorted(m for m in ('torch', 'lightning', 'keras', 'tensorflow', 'transformers') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _lightning_job(n: int = 256):
    """A tiny Lightning module that logs val_acc, and a loader of ``n`` samples in batches of 32."""
    pytest.importorskip("lightning")
    import lightning as L
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    x = torch.randn(n, 4)
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

    return L, Tiny(), DataLoader(TensorDataset(x, y), batch_size=32)


@pytest.mark.slow
def test_lightning_callback_writes_steps_and_one_eval_per_validation(tmp_path: Path) -> None:
    L, module, data = _lightning_job()
    from cotune.track.lightning import TrackerCallback

    path = tmp_path / "job.jsonl"
    tracker = Tracker(path, gpu="cpu", workers=1, local_batch=32, workload=WORKLOAD, window=4, warmup_steps=1)
    trainer = L.Trainer(max_epochs=3, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, callbacks=[TrackerCallback(tracker, monitor="val_acc")])
    trainer.fit(module, data, data)
    p = read_profile(path)
    assert [e.epoch for e in p.evals] == pytest.approx([1.0, 2.0, 3.0])  # 8 steps x 32 = one epoch of 256
    assert all(0.0 <= e.metric <= 1.0 and e.global_batch == 32 and e.job == "tiny" for e in p.evals)
    assert sum(s.timed_steps for s in p.steps) == 3 * 8 - 1  # every step after the warm-up one
    assert all(s.step_time_s > 0 for s in p.steps)
    assert all(e.schedule_epochs == 3 for e in p.evals)  # the trainer's max_epochs: where the schedule ends


@pytest.mark.slow
@pytest.mark.parametrize("per_execution", [1, 4])
def test_keras_callback_writes_steps_and_one_eval_per_epoch(tmp_path: Path, per_execution: int) -> None:
    # compile(steps_per_execution=N) runs the batch hooks once per N batches: counted as
    # one, a run of 2 epochs read as epochs 0.5 and 1.0 and step times N times too long.
    keras = pytest.importorskip("keras")
    import numpy as np

    from cotune.track.keras import TrackerCallback

    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 4)).astype("float32")
    y = (x.sum(axis=1) > 0).astype("int64")
    model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"],
                  steps_per_execution=per_execution)
    path = tmp_path / "job.jsonl"
    tracker = Tracker(path, gpu="cpu", workers=1, local_batch=32, workload=WORKLOAD, window=4, warmup_steps=1)
    model.fit(x, y, batch_size=32, epochs=2, validation_data=(x, y), verbose=0,
              callbacks=[TrackerCallback(tracker, monitor="val_accuracy")])
    p = read_profile(path)
    assert [e.epoch for e in p.evals] == pytest.approx([1.0, 2.0])
    assert all(0.0 <= e.metric <= 1.0 for e in p.evals)
    assert all(e.schedule_epochs == 2 for e in p.evals)  # fit(epochs=2): where the schedule ends
    assert sum(s.timed_steps for s in p.steps) == 2 * 8 - 1


def _keras_model(keras, metrics=()):
    model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=list(metrics))
    return model


def _xy(n=256):
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 4)).astype("float32")
    return x, (x.sum(axis=1) > 0).astype("int64")


@pytest.mark.slow
def test_keras_callback_warns_and_trains_on_when_no_epoch_logs_the_monitor(tmp_path: Path) -> None:
    keras = pytest.importorskip("keras")
    from cotune.track.keras import TrackerCallback

    x, y = _xy(32)
    tracker = Tracker(tmp_path / "j.jsonl", gpu="cpu", workers=1, local_batch=32, workload=WORKLOAD, warmup_steps=0)
    with pytest.warns(RuntimeWarning, match="no epoch logged 'val_accuracy': pass validation_data to fit"):
        h = _keras_model(keras).fit(x, y, batch_size=32, epochs=2, verbose=0,
                                    callbacks=[TrackerCallback(tracker, monitor="val_accuracy")])
    assert len(h.history["loss"]) == 2  # it raised at the first epoch's end, killing training
    p = read_profile(tmp_path / "j.jsonl")
    assert not p.evals and sum(s.timed_steps for s in p.steps) == 2


@pytest.mark.slow
def test_keras_callback_with_errors_raise_names_the_logged_values_when_the_monitor_is_missing(tmp_path: Path) -> None:
    keras = pytest.importorskip("keras")
    from cotune.errors import InputError
    from cotune.track.keras import TrackerCallback

    x, y = _xy(32)
    tracker = Tracker(tmp_path / "j.jsonl", gpu="cpu", workers=1, local_batch=32, workload=WORKLOAD, errors="raise")
    with pytest.raises(InputError, match="no 'val_nope' in the epoch logs \\(have: loss, val_loss\\)"):
        _keras_model(keras).fit(x, y, batch_size=32, epochs=1, verbose=0, validation_data=(x, y),
                                callbacks=[TrackerCallback(tracker, monitor="val_nope")])


@pytest.mark.slow
def test_keras_callback_skips_the_epochs_without_validation(tmp_path: Path) -> None:
    keras = pytest.importorskip("keras")
    from cotune.track.keras import TrackerCallback

    x, y = _xy()
    tracker = Tracker(tmp_path / "j.jsonl", gpu="cpu", workers=1, local_batch=32, workload=WORKLOAD, window=4)
    _keras_model(keras, ["accuracy"]).fit(x, y, batch_size=32, epochs=4, verbose=0, validation_data=(x, y),
                                          validation_freq=2, callbacks=[TrackerCallback(tracker, monitor="val_accuracy")])
    # it raised at the end of epoch 1 ("pass validation_data"), killing training
    assert [e.epoch for e in read_profile(tmp_path / "j.jsonl").evals] == pytest.approx([2.0, 4.0])


@pytest.mark.slow
def test_a_second_fit_after_the_tracker_closed_trains_untracked_with_a_warning(tmp_path: Path) -> None:
    keras = pytest.importorskip("keras")
    from cotune.track.keras import TrackerCallback

    x, y = _xy()
    tracker = Tracker(tmp_path / "j.jsonl", gpu="cpu", workers=1, local_batch=32, workload=WORKLOAD, window=4)
    model = _keras_model(keras, ["accuracy"])
    cb = TrackerCallback(tracker, monitor="val_accuracy")
    model.fit(x, y, batch_size=32, epochs=1, verbose=0, validation_data=(x, y), callbacks=[cb])
    before = (tmp_path / "j.jsonl").read_bytes()
    with pytest.warns(RuntimeWarning, match="closed when an earlier fit\\(\\) ended .* close_at_end=False"):
        h = model.fit(x, y, batch_size=32, epochs=1, verbose=0, validation_data=(x, y), callbacks=[cb])
    assert len(h.history["loss"]) == 1  # the second fit died at its first batch: "the tracker is closed"
    assert (tmp_path / "j.jsonl").read_bytes() == before


def _accumulating_trainer(L, path: Path, **limits):
    """A quiet CPU Trainer that accumulates 3 batches a step, tracked into ``path``."""
    from cotune.track.lightning import TrackerCallback

    tracker = Tracker(path, gpu="cpu", workers=1, local_batch=32, accum_steps=3, workload=WORKLOAD, window=1,
                      warmup_steps=0)
    return L.Trainer(accelerator="cpu", devices=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                     enable_model_summary=False, num_sanity_val_steps=0, accumulate_grad_batches=3,
                     callbacks=[TrackerCallback(tracker, monitor="val_acc")], **limits)


@pytest.mark.slow
def test_lightning_callback_counts_the_partial_accumulation_at_an_epochs_end(tmp_path: Path) -> None:
    L, module, data = _lightning_job()
    path = tmp_path / "job.jsonl"
    # 8 batches of 32 an epoch, 3 accumulated a step: steps of 3, 3 and 2 micro-batches
    _accumulating_trainer(L, path, max_epochs=2).fit(module, data, data)
    p = read_profile(path)
    assert [e.epoch for e in p.evals] == pytest.approx([1.0, 2.0])  # were 0.75 and 1.5
    assert len(p.steps) == 2 * 3 and all(s.accum_steps == 3 for s in p.steps)


@pytest.mark.slow
def test_lightning_callback_reads_where_a_max_steps_run_stops_in_epochs(tmp_path: Path) -> None:
    # Given max_steps alone, Lightning's max_epochs is -1 and the schedule was left unknown.
    L, module, data = _lightning_job()
    path = tmp_path / "job.jsonl"
    # 8 batches an epoch, 3 a step (3, 3, 2): 5 steps stop 6 batches into the second epoch
    trainer = _accumulating_trainer(L, path, max_steps=5, val_check_interval=6, check_val_every_n_epoch=None)
    trainer.fit(module, data, data)
    assert trainer.global_step == 5
    p = read_profile(path)
    assert p.evals and all(e.schedule_epochs == pytest.approx(1.75) for e in p.evals)
    assert len(p.steps) == 5


@pytest.mark.slow
def test_lightning_callback_warns_and_trains_on_when_validation_does_not_log_the_monitor(tmp_path: Path) -> None:
    L, module, data = _lightning_job(64)
    from cotune.track.lightning import TrackerCallback

    path = tmp_path / "job.jsonl"
    tracker = Tracker(path, gpu="cpu", workers=1, local_batch=32, workload=WORKLOAD, window=1, warmup_steps=0)
    trainer = L.Trainer(max_epochs=2, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0,
                        callbacks=[TrackerCallback(tracker, monitor="val_nope")])
    with pytest.warns(RuntimeWarning, match="no logged value 'val_nope' after validation \\(logged: val_acc\\)"):
        trainer.fit(module, data, data)
    assert trainer.current_epoch == 2  # it raised after the first validation, killing training
    p = read_profile(path)
    assert not p.evals and len(p.steps) == 4


@pytest.mark.slow
@pytest.mark.parametrize("framework", ["keras", "lightning"])
@pytest.mark.parametrize("monitor", [None, 5, "", "  "])
def test_a_monitor_that_names_nothing_is_refused_when_the_callback_is_made(tmp_path: Path, framework: str, monitor) -> None:
    # It was taken, and the first epoch's end failed with an AttributeError ('NoneType' has
    # no attribute 'startswith') after an epoch of training.
    from cotune.errors import InputError

    pytest.importorskip(framework)
    module = __import__(f"cotune.track.{framework}", fromlist=["TrackerCallback"])
    tracker = Tracker(tmp_path / "job.jsonl", gpu="cpu", workers=1, local_batch=8,
                      workload=WorkloadRecord(name="job", dataset_size=256, metric="acc", goal="max"))
    with pytest.raises(InputError, match="monitor must name a logged validation value"):
        module.TrackerCallback(tracker, monitor=monitor)
    tracker.close()


@pytest.mark.slow
def test_lightning_callback_records_an_out_of_memory_that_ends_training(tmp_path: Path) -> None:
    L, module, data = _lightning_job()
    import torch

    from cotune.track.lightning import TrackerCallback

    real_step = type(module).training_step

    def step_then_oom(self, batch, batch_idx):
        if self.trainer.current_epoch == 1 and batch_idx == 3:  # an epoch in, as a fragmented allocator does
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 MiB")
        return real_step(self, batch, batch_idx)

    module.training_step = step_then_oom.__get__(module)
    path = tmp_path / "job.jsonl"
    tracker = Tracker(path, gpu="cpu", workers=1, local_batch=32, workload=WORKLOAD, window=4, warmup_steps=1)
    trainer = L.Trainer(max_epochs=3, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, callbacks=[TrackerCallback(tracker, monitor="val_acc")])
    with pytest.raises(torch.cuda.OutOfMemoryError):
        trainer.fit(module, data, data)
    p = read_profile(path)
    (failure,) = p.failures
    assert (failure.failure, failure.local_batch, failure.workers) == ("oom", 32, 1)
    assert "CUDA out of memory" in failure.message
    assert p.steps and p.max_local_batch("cpu") == 31  # after its steps at 32: the cap stands
    assert tracker.closed


@pytest.mark.slow
def test_keras_fit_inside_with_tracker_records_an_out_of_memory(tmp_path: Path) -> None:
    keras = pytest.importorskip("keras")
    tf = pytest.importorskip("tensorflow")
    from cotune.track.keras import TrackerCallback

    class RunsOutOfMemory(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 5:
                raise tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor with shape[32,4]")

    x, y = _xy()
    path = tmp_path / "job.jsonl"
    with pytest.raises(tf.errors.ResourceExhaustedError):
        with Tracker(path, gpu="cpu", workers=1, local_batch=32, workload=WORKLOAD, window=2, warmup_steps=1) as tracker:
            _keras_model(keras).fit(x, y, batch_size=32, epochs=2, verbose=0,
                                    callbacks=[TrackerCallback(tracker, monitor="val_accuracy"), RunsOutOfMemory()])
    p = read_profile(path)
    (failure,) = p.failures
    assert (failure.failure, failure.local_batch) == ("oom", 32) and "OOM when allocating" in failure.message
    assert p.steps and p.max_local_batch("cpu") == 31


def _hf_trainer(tmp_path: Path, callback, *, n: int = 256, epochs: float = 3, accum: int = 1, max_steps: int = -1,
                eval_strategy: str = "epoch", eval_steps: int | None = None, batch: int = 32):
    """A real Hugging Face Trainer on CPU: a linear model, ``n`` samples in batches of ``batch``."""
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    import torch
    from transformers import Trainer, TrainingArguments

    torch.manual_seed(0)
    x = torch.randn(n, 4)
    y = (x.sum(dim=1) > 0).long()

    class Rows(torch.utils.data.Dataset):
        def __len__(self):
            return n

        def __getitem__(self, i):
            return {"x": x[i], "labels": y[i]}

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(4, 2)

        def forward(self, x, labels=None):
            logits = self.layer(x)
            return {"loss": torch.nn.functional.cross_entropy(logits, labels), "logits": logits}

    def accuracy(pred):
        return {"accuracy": float((pred.predictions.argmax(-1) == pred.label_ids).mean())}

    args = TrainingArguments(output_dir=str(tmp_path / "hf"), per_device_train_batch_size=batch, per_device_eval_batch_size=64,
                             num_train_epochs=epochs, max_steps=max_steps, gradient_accumulation_steps=accum,
                             eval_strategy=eval_strategy, eval_steps=eval_steps, save_strategy="no", learning_rate=0.5, report_to=[], use_cpu=True,
                             seed=0, disable_tqdm=True, logging_strategy="no")
    return Trainer(model=Net(), args=args, train_dataset=Rows(), eval_dataset=Rows(), compute_metrics=accuracy,
                   callbacks=[callback])


@pytest.mark.slow
def test_transformers_callback_writes_steps_and_one_eval_per_evaluation(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from cotune.track.transformers import TrackerCallback

    path = tmp_path / "job.jsonl"
    tracker = Tracker(path, gpu="cpu", workers=1, local_batch=32, workload=WORKLOAD, window=4, warmup_steps=1)
    trainer = _hf_trainer(tmp_path, TrackerCallback(tracker, monitor="eval_accuracy"))
    trainer.train()
    trainer.evaluate()  # outside train(): no point of the job's curve (the tracker is closed by then)
    p = read_profile(path)
    assert [e.epoch for e in p.evals] == pytest.approx([1.0, 2.0, 3.0])  # 8 steps x 32 = one epoch of 256
    assert all(0.0 <= e.metric <= 1.0 and e.global_batch == 32 and e.job == "tiny" for e in p.evals)
    assert sum(s.timed_steps for s in p.steps) == 3 * 8 - 1  # every step after the warm-up one
    assert all(s.step_time_s > 0 for s in p.steps)
    assert all(e.schedule_epochs == 3 for e in p.evals)  # TrainingArguments.num_train_epochs


@pytest.mark.slow
def test_transformers_callback_counts_the_partial_accumulation_at_an_epochs_end(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from cotune.track.transformers import TrackerCallback

    path = tmp_path / "job.jsonl"
    # 8 batches of 32 an epoch, 3 accumulated a step: steps of 3, 3 and 2 micro-batches
    tracker = Tracker(path, gpu="cpu", workers=1, local_batch=32, accum_steps=3, workload=WORKLOAD, window=1,
                      warmup_steps=0)
    _hf_trainer(tmp_path, TrackerCallback(tracker, monitor="eval_accuracy"), epochs=2, accum=3).train()
    p = read_profile(path)
    assert [e.epoch for e in p.evals] == pytest.approx([1.0, 2.0])
    assert len(p.steps) == 2 * 3 and all(s.accum_steps == 3 for s in p.steps)


@pytest.mark.slow
def test_transformers_callback_counts_a_partial_last_batch_as_the_samples_it_held(tmp_path: Path) -> None:
    # 210 samples in batches of 40: five full batches and one of 10 (dataloader_drop_last off).
    # Counted as six full ones, the evaluations read epochs 1.14, 2.29, 3.43, past the
    # schedule's 3.
    pytest.importorskip("transformers")
    from cotune.track.transformers import TrackerCallback

    path = tmp_path / "job.jsonl"
    workload = WorkloadRecord(name="tiny", dataset_size=210, metric="acc", goal="max")
    tracker = Tracker(path, gpu="cpu", workers=1, local_batch=40, workload=workload, window=4, warmup_steps=1)
    _hf_trainer(tmp_path, TrackerCallback(tracker, monitor="eval_accuracy"), n=210, batch=40).train()
    evals = read_profile(path).evals
    assert [e.epoch for e in evals] == pytest.approx([1.0, 2.0, 3.0])
    assert evals[-1].schedule_epochs == 3


@pytest.mark.slow
def test_transformers_callback_warns_and_trains_on_when_evaluation_lacks_the_monitor(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from cotune.track.transformers import TrackerCallback

    path = tmp_path / "job.jsonl"
    tracker = Tracker(path, gpu="cpu", workers=1, local_batch=32, workload=WORKLOAD, window=1, warmup_steps=0)
    trainer = _hf_trainer(tmp_path, TrackerCallback(tracker, monitor="accuracy"), n=64, epochs=2)
    with pytest.warns(RuntimeWarning, match="no 'accuracy' in the evaluation metrics .*eval_accuracy.*prefixes"):
        trainer.train()
    assert trainer.state.global_step == 4  # training went on to its end
    p = read_profile(path)
    assert not p.evals and len(p.steps) == 4


@pytest.mark.slow
def test_transformers_callback_reads_the_schedule_of_a_run_given_in_steps_in_epochs(tmp_path: Path) -> None:
    # It left the schedule unknown, so a re-plan of a max_steps run could not tell a curve
    # that flattens because the learning rate ran out from one that stalls.
    pytest.importorskip("transformers")
    from cotune.track.transformers import TrackerCallback

    path = tmp_path / "job.jsonl"
    tracker = Tracker(path, gpu="cpu", workers=1, local_batch=32, workload=WORKLOAD, window=1, warmup_steps=0)
    _hf_trainer(tmp_path, TrackerCallback(tracker, monitor="eval_accuracy"), max_steps=12, eval_strategy="steps",
                eval_steps=4).train()
    p = read_profile(path)
    assert [e.epoch for e in p.evals] == pytest.approx([0.5, 1.0, 1.5])  # every 4 steps of 32 samples, of 256
    assert all(e.schedule_epochs == pytest.approx(1.5) for e in p.evals)  # 12 steps of the 8 an epoch
    # 8 batches an epoch, 3 a step: steps of 3, 3 and 2 batches, so 5 steps end 6 batches into
    # the second epoch — 1.75 epochs (the Trainer's own count too), not 5 / 3
    path = tmp_path / "accum.jsonl"
    tracker = Tracker(path, gpu="cpu", workers=1, local_batch=32, accum_steps=3, workload=WORKLOAD, window=1,
                      warmup_steps=0)
    _hf_trainer(tmp_path, TrackerCallback(tracker, monitor="eval_accuracy"), max_steps=5, accum=3,
                eval_strategy="steps", eval_steps=5).train()
    (last,) = read_profile(path).evals
    assert last.schedule_epochs == pytest.approx(1.75) and last.epoch == pytest.approx(1.75)


@pytest.mark.slow
def test_transformers_train_inside_with_tracker_records_an_out_of_memory(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    import torch

    from cotune.track.transformers import TrackerCallback

    path = tmp_path / "job.jsonl"
    tracker = Tracker(path, gpu="cpu", workers=1, local_batch=32, workload=WORKLOAD, window=4, warmup_steps=1)
    trainer = _hf_trainer(tmp_path, TrackerCallback(tracker, monitor="eval_accuracy"))
    import functools

    real_forward = trainer.model.forward
    calls = {"n": 0}

    @functools.wraps(real_forward)  # the Trainer keeps the dataset's columns the forward's signature names
    def forward_then_oom(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 16:  # 8 training and 4 evaluation forwards an epoch: in the second epoch, after an evaluation
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 MiB")
        return real_forward(*args, **kwargs)

    trainer.model.forward = forward_then_oom
    with pytest.raises(torch.cuda.OutOfMemoryError), tracker:  # the Trainer has no exception hook: the tracker's own
        trainer.train()
    p = read_profile(path)
    (failure,) = p.failures
    assert (failure.failure, failure.local_batch, failure.workers) == ("oom", 32, 1)
    assert p.steps and len(p.evals) == 1 and p.max_local_batch("cpu") == 31
    assert tracker.closed



@pytest.mark.slow
def test_lightning_callback_counts_a_partial_last_batch_as_the_samples_it_held(tmp_path: Path) -> None:
    # 210 samples in batches of 40: five full batches and one of 10. Counted as six full
    # ones, the evaluations read epochs 1.14, 2.29, 3.43.
    L, module, data = _lightning_job(n=210)
    from torch.utils.data import DataLoader

    from cotune.track.lightning import TrackerCallback

    loader = DataLoader(data.dataset, batch_size=40)
    path = tmp_path / "job.jsonl"
    workload = WorkloadRecord(name="tiny", dataset_size=210, metric="acc", goal="max")
    tracker = Tracker(path, gpu="cpu", workers=1, local_batch=40, workload=workload, window=4, warmup_steps=1)
    trainer = L.Trainer(max_epochs=3, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0,
                        callbacks=[TrackerCallback(tracker, monitor="val_acc")])
    trainer.fit(module, loader, loader)
    assert [e.epoch for e in read_profile(path).evals] == pytest.approx([1.0, 2.0, 3.0])


@pytest.mark.slow
@pytest.mark.parametrize("per_execution", [1, 3])
def test_keras_callback_counts_a_partial_last_batch_and_a_short_last_execution(tmp_path: Path, per_execution: int) -> None:
    # 210 samples in batches of 40 (the last holds 10); with steps_per_execution=3 the
    # epoch's 6 batches are 3 + 3, and with 10 batches of 20 (210 → 10.5) the last
    # execution runs one batch while Keras reports the index 3 would have reached.
    keras = pytest.importorskip("keras")
    from cotune.track.keras import TrackerCallback

    x, y = _xy(210)
    model = _keras_model(keras, metrics=["accuracy"])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"],
                  steps_per_execution=per_execution)
    for batch in (40, 20):
        path = tmp_path / f"job{batch}.jsonl"
        workload = WorkloadRecord(name="tiny", dataset_size=210, metric="acc", goal="max")
        tracker = Tracker(path, gpu="cpu", workers=1, local_batch=batch, workload=workload, window=4, warmup_steps=0)
        model.fit(x, y, batch_size=batch, epochs=3, validation_data=(x, y), verbose=0,
                  callbacks=[TrackerCallback(tracker, monitor="val_accuracy")])
        assert [e.epoch for e in read_profile(path).evals] == pytest.approx([1.0, 2.0, 3.0]), batch



def _quiet_trainer(L, tracker: Tracker, **kwargs):
    """A quiet CPU Trainer with a TrackerCallback on ``tracker`` monitoring val_acc."""
    from cotune.track.lightning import TrackerCallback

    return L.Trainer(accelerator="cpu", devices=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                     enable_model_summary=False, num_sanity_val_steps=0,
                     callbacks=[TrackerCallback(tracker, monitor="val_acc")], **kwargs)


@pytest.mark.slow
def test_lightning_validate_after_fit_writes_nothing_and_does_not_raise(tmp_path: Path) -> None:
    # fit() closed the tracker (close_at_end): trainer.validate() then raised "the tracker is
    # closed" out of on_validation_end and killed the script before its save/export code.
    L, module, data = _lightning_job()
    path = tmp_path / "job.jsonl"
    tracker = Tracker(path, gpu="cpu", workers=1, local_batch=32, workload=WORKLOAD, window=4, warmup_steps=1)
    trainer = _quiet_trainer(L, tracker, max_epochs=1)
    trainer.fit(module, data, data)
    before = path.read_bytes()
    trainer.validate(module, data, verbose=False)
    assert path.read_bytes() == before


@pytest.mark.slow
def test_lightning_callback_reads_the_schedule_end_in_passes_when_limit_train_batches_cuts_the_epochs(
        tmp_path: Path) -> None:
    # 8 batches a pass, limit_train_batches=0.5: 4 epochs are 2 passes, where the run stops;
    # schedule_epochs read 4 and replan saw two more "epochs" of schedule after the end.
    L, module, data = _lightning_job()
    path = tmp_path / "job.jsonl"
    tracker = Tracker(path, gpu="cpu", workers=1, local_batch=32, workload=WORKLOAD, window=4, warmup_steps=1)
    _quiet_trainer(L, tracker, max_epochs=4, limit_train_batches=0.5).fit(module, data, data)
    p = read_profile(path)
    assert [e.epoch for e in p.evals] == pytest.approx([0.5, 1.0, 1.5, 2.0])
    assert all(e.schedule_epochs == pytest.approx(2.0) for e in p.evals)


@pytest.mark.slow
def test_lightning_callback_takes_the_trainers_accumulation_when_the_tracker_was_told_another(tmp_path: Path) -> None:
    # accumulate_grad_batches=4 with the tracker's default accum_steps=1: the records gave a
    # global batch of 32 for a job training at 128, and a 4 micro-batch step's time as one's.
    L, module, data = _lightning_job()
    path = tmp_path / "job.jsonl"
    tracker = Tracker(path, gpu="cpu", workers=1, local_batch=32, workload=WORKLOAD, window=1, warmup_steps=0)
    with pytest.warns(RuntimeWarning,
                      match="accumulates 4 batches a step .* accum_steps=1: the records take the trainer's 4"):
        _quiet_trainer(L, tracker, max_epochs=1, accumulate_grad_batches=4).fit(module, data, data)
    p = read_profile(path)
    assert [e.global_batch for e in p.evals] == [128] and [e.epoch for e in p.evals] == pytest.approx([1.0])
    assert len(p.steps) == 2 and all(s.accum_steps == 4 for s in p.steps)


@pytest.mark.slow
def test_keras_callback_reads_the_schedule_end_in_passes_when_an_epoch_is_given_in_steps(tmp_path: Path) -> None:
    # A repeated tf.data dataset with steps_per_epoch=2 of 40 samples: each epoch is 80/210 of
    # a pass, and fit(epochs=3) stops at 8/7 passes, not at the 3 schedule_epochs written.
    keras = pytest.importorskip("keras")
    tf = pytest.importorskip("tensorflow")
    from cotune.track.keras import TrackerCallback

    x, y = _xy(210)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(40).repeat()
    path = tmp_path / "job.jsonl"
    workload = WorkloadRecord(name="tiny", dataset_size=210, metric="acc", goal="max")
    tracker = Tracker(path, gpu="cpu", workers=1, local_batch=40, workload=workload, window=3, warmup_steps=0)
    _keras_model(keras, ["accuracy"]).fit(ds, steps_per_epoch=2, epochs=3, validation_data=(x, y), verbose=0,
                                          callbacks=[TrackerCallback(tracker, monitor="val_accuracy")])
    p = read_profile(path)
    assert [e.epoch for e in p.evals] == pytest.approx([80 / 210, 160 / 210, 240 / 210])
    assert all(e.schedule_epochs == pytest.approx(240 / 210) for e in p.evals)


@pytest.mark.slow
def test_keras_callback_takes_the_optimizers_gradient_accumulation_when_the_tracker_was_told_another(
        tmp_path: Path) -> None:
    keras = pytest.importorskip("keras")
    from cotune.track.keras import TrackerCallback

    x, y = _xy()
    model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.SGD(gradient_accumulation_steps=4),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    path = tmp_path / "job.jsonl"
    tracker = Tracker(path, gpu="cpu", workers=1, local_batch=32, workload=WORKLOAD, window=1, warmup_steps=0)
    with pytest.warns(RuntimeWarning, match="gradient_accumulation_steps=4.* accum_steps=1: the records take"):
        model.fit(x, y, batch_size=32, epochs=1, validation_data=(x, y), verbose=0,
                  callbacks=[TrackerCallback(tracker, monitor="val_accuracy")])
    p = read_profile(path)
    assert [e.global_batch for e in p.evals] == [128] and [e.epoch for e in p.evals] == pytest.approx([1.0])
    assert len(p.steps) == 2 and all(s.accum_steps == 4 for s in p.steps)
