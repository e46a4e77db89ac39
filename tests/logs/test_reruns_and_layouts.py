"""Logs whose layout the importers misread without a word: a rerun into one log, a damaged
event file, one half of a Keras log, Lightning's 0-based counters through other loggers,
Lightning's world-wide throughput, MLflow run names and deleted runs, a pandas-saved
History. Each log is written here, small, in the format the library writes (TensorBoard's
own event writer; MLflow's file-store layout; the CSV text Lightning and pandas write)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cotune.errors import InputError
from cotune.logs import import_log

LOGS = Path(__file__).resolve().parents[2] / "examples" / "logs"
LIGHTNING = LOGS / "lightning" / "tiny" / "version_0" / "metrics.csv"


def _event_file(run: Path, points: list[tuple[int, str, float]], *, tensors: bool = False) -> Path:
    """One writer's event file in ``run`` (what SummaryWriter writes: it uses this writer), its
    points at one second a step; ``tensors``: as ``tf.summary.scalar`` (Keras) writes them."""
    pytest.importorskip("tensorboard")
    from cotune.logs._readers import _tensorboard_accumulator

    _tensorboard_accumulator()  # tensorboard without TensorFlow, as the reader loads it
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.plugins.scalar import summary_v2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(str(run))
    for step, tag, value in points:
        summary = (summary_v2.scalar_pb(tag, value) if tensors
                   else Summary(value=[Summary.Value(tag=tag, simple_value=value)]))
        writer.add_event(Event(wall_time=1.7e9 + step, step=step, summary=summary))
    writer.close()
    return Path(writer._file_name)


def _curve(steps: range) -> list[tuple[int, str, float]]:
    return [p for s in steps for p in ([(s, "train/loss", 1.0 / s)] + ([(s, "val/accuracy", s / 100)] if s % 6 == 0 else []))]


# --- Lightning's ThroughputMonitor on several devices ---------------------------------


def test_lightning_throughput_on_two_devices_gives_the_step_time_of_one_device(tmp_path):
    # 'train/batches_per_sec' is the devices' total (device rate × world size); it sorted first
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "metrics.csv").write_text("epoch,step,train/batches_per_sec,train/device/batches_per_sec,val_acc\n"
                                                "0,1,200,100,\n0,3,200,100,\n0,5,200,100,\n0,7,,,0.7\n")
    profile = import_log("lightning-csv", tmp_path / "m", metric="val_acc", global_batch=16, dataset_size=128, gpu="a100",
                         workers=2)
    assert profile.steps[0].step_time_s == pytest.approx(0.01)


# --- a rerun or a restart in a step-indexed log ---------------------------------------


def test_steps_that_go_back_in_a_csv_are_flagged_as_several_runs(tmp_path):
    path = tmp_path / "steps.csv"
    path.write_text("step,val_accuracy\n100,0.5\n200,0.6\n300,0.7\n100,0.52\n200,0.63\n300,0.71\n")
    profile = import_log("csv", path, global_batch=16, dataset_size=1600)
    assert any("the steps of 'val_accuracy' go back 1 time(s)" in n and "--append" in n for n in profile.warnings)


def test_a_rerun_into_one_tensorboard_directory_names_its_event_files(tmp_path):
    first = _event_file(tmp_path, _curve(range(1, 25)))
    second = _event_file(tmp_path, _curve(range(1, 25)))  # the same script run again, same log_dir
    profile = import_log("tensorboard", tmp_path, global_batch=16, dataset_size=96)
    note = next(n for n in profile.warnings if "go back" in n)
    assert "'val/accuracy' go back 1 time(s)" in note and first.name in note and second.name in note


def test_a_rerun_logged_into_one_mlflow_sqlite_run_is_flagged(tmp_path):
    import sqlite3

    db = sqlite3.connect(tmp_path / "mlflow.db")
    db.execute("CREATE TABLE runs (run_uuid TEXT, name TEXT, lifecycle_stage TEXT, start_time INTEGER)")
    db.execute("INSERT INTO runs VALUES ('a1', 'r', 'active', 1)")
    db.execute("CREATE TABLE metrics (key TEXT, value, timestamp, step, is_nan, run_uuid TEXT)")
    # a resumed run logging into the same run id: steps 6, 12 again after 18
    rows = [(s, t) for t, s in enumerate([6, 12, 18, 6, 12, 18, 24])]
    db.executemany("INSERT INTO metrics VALUES ('val_acc', 0.5, ?, ?, 0, 'a1')", [(1000 + t, s) for s, t in rows])
    db.commit()
    db.close()
    profile = import_log("mlflow", tmp_path / "mlflow.db", global_batch=16, dataset_size=96)
    assert any("the steps of 'val_acc' go back 1 time(s)" in n for n in profile.warnings)


# --- a damaged event file --------------------------------------------------------------


def test_a_damaged_record_in_the_middle_of_an_event_file_names_the_file_and_the_byte(tmp_path):
    path = _event_file(tmp_path, _curve(range(1, 25)))
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle] ^= 0xFF  # one flipped byte: tensorboard's loader stopped there, as if the file ended
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match=rf"{path.name}: a damaged record at byte [\d,]+ of {len(data):,}"):
        import_log("tensorboard", tmp_path, global_batch=16, dataset_size=96)


def test_a_torn_last_record_of_an_event_file_is_dropped_with_a_note(tmp_path):
    path = _event_file(tmp_path, _curve(range(1, 25)))
    path.write_bytes(path.read_bytes()[:-5])  # a writer killed mid-write: its last event, val/accuracy at 24
    profile = import_log("tensorboard", tmp_path, global_batch=16, dataset_size=96)
    assert [e.epoch for e in profile.evals] == [1.0, 2.0, 3.0]
    assert any(f"dropped a torn last record of {path.name}" in n for n in profile.warnings)


# --- one half of a Keras TensorBoard log ----------------------------------------------


def test_the_validation_half_of_a_keras_log_given_alone_reads_its_epoch_index(tmp_path):
    half = tmp_path / "fit" / "validation"
    half.mkdir(parents=True)
    _event_file(half, [(k, "epoch_accuracy", 0.6 + k / 10) for k in range(4)], tensors=True)
    profile = import_log("tensorboard", half, metric="epoch_accuracy", global_batch=16, dataset_size=96)
    assert [e.epoch for e in profile.evals] == [1.0, 2.0, 3.0, 4.0]  # read as steps: 0, 0.17, 0.33, 0.5
    assert profile.workload.metric == "validation/epoch_accuracy"  # as the log directory names it
    assert any("validation/ half" in n and str(tmp_path / "fit") in n for n in profile.warnings)


def test_a_validation_folder_stepping_by_optimizer_steps_is_no_keras_half(tmp_path):
    # One SummaryWriter per split (runs/exp/validation) with an 'epoch_accuracy' tag at the
    # optimizer step: read as a Keras half it gave epochs 51, 101, ...
    half = tmp_path / "exp" / "validation"
    half.mkdir(parents=True)
    _event_file(half, [(50 * k, "epoch_accuracy", 0.5 + k / 20) for k in range(1, 6)])
    profile = import_log("tensorboard", half, metric="epoch_accuracy", global_batch=32, dataset_size=1600)
    assert [e.epoch for e in profile.evals] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert not any("Keras" in n for n in profile.warnings)


def test_a_resumed_keras_half_reads_its_epoch_index(tmp_path):
    # fit(initial_epoch=10): its validation steps are 10 ... 14
    half = tmp_path / "fit" / "validation"
    half.mkdir(parents=True)
    _event_file(half, [(k, "epoch_accuracy", 0.6 + k / 100) for k in range(10, 15)], tensors=True)
    profile = import_log("tensorboard", half, metric="epoch_accuracy", global_batch=16, dataset_size=96)
    assert [e.epoch for e in profile.evals] == [11.0, 12.0, 13.0, 14.0, 15.0]


def test_a_keras_half_validated_every_other_epoch_still_reads_its_epoch_index(tmp_path):
    half = tmp_path / "fit" / "validation"
    half.mkdir(parents=True)
    _event_file(half, [(k, "epoch_accuracy", 0.6 + k / 10) for k in (1, 3, 5)], tensors=True)  # validation_freq=2
    profile = import_log("tensorboard", half, metric="epoch_accuracy", global_batch=16, dataset_size=96)
    assert [e.epoch for e in profile.evals] == [2.0, 4.0, 6.0]


# --- Lightning's 0-based counters through other formats --------------------------------


def test_a_lightning_metrics_csv_read_as_csv_reads_each_validation_at_its_epochs_end(tmp_path):
    # Its 'epoch' is the epoch in progress, and each validation row the last of its epoch:
    # read as passes, validation k was at epoch k - 1 (the first at 0, before any training).
    profile = import_log("csv", LIGHTNING, global_batch=16, dataset_size=96, metric="val_acc")
    assert [e.epoch for e in profile.evals] == [1.0, 2.0, 3.0, 4.0]
    assert [e.epoch for e in profile.evals] == [e.epoch for e in import_log(
        "lightning-csv", LIGHTNING, global_batch=16, dataset_size=96, metric="val_acc").evals]
    assert any("column 'epoch' counts the epoch in progress from 0" in n and "'val_acc'" in n for n in profile.warnings)


def _mlflow_run(root: Path, run_id: str, name: str, metrics: dict[str, list[tuple[int, float]]], *,
                stage: str = "active", params: dict[str, str] | None = None, ms_a_step: int = 30) -> Path:
    """A run of MLflow's file store: mlruns/EXP/RUN/{meta.yaml, tags/mlflow.runName,
    metrics/KEY of 'timestamp value step' lines, params/KEY}, a point ``ms_a_step`` after the last."""
    run = root / "1" / run_id
    (run / "metrics").mkdir(parents=True)
    (run / "tags").mkdir()
    (run / "params").mkdir()
    (run / "tags" / "mlflow.runName").write_text(name)
    (run / "meta.yaml").write_text(f"experiment_id: '1'\nlifecycle_stage: {stage}\nrun_id: {run_id}\nrun_name: {name}\n")
    for key, points in metrics.items():
        (run / "metrics" / key).write_text("".join(f"{1_700_000_000_000 + ms_a_step * s} {v} {s}\n" for s, v in points))
    for key, value in (params or {}).items():
        (run / "params" / key).write_text(value)
    return run


def test_a_lightning_mlflow_run_gets_the_epochs_its_csv_log_gives(tmp_path):
    # MLFlowLogger: 0-based steps, and an 'epoch' index logged beside every metric (6 steps an epoch)
    _mlflow_run(tmp_path, "b7bb", "nosy-kit-53", {
        "train_loss": [(s, 1.0 / (s + 1)) for s in range(24)],
        "epoch": [(s, float(s // 6)) for s in range(24)],
        "val_acc": [(s, 0.7 + s / 100) for s in (5, 11, 17, 23)],
    })
    profile = import_log("mlflow", tmp_path, metric="val_acc", global_batch=16, dataset_size=96)
    assert [e.epoch for e in profile.evals] == [1.0, 2.0, 3.0, 4.0]  # 0.83, 1.83, ... before
    assert any("a Lightning MLFlowLogger run" in n for n in profile.warnings)


# --- MLflow file store: run names, deleted runs ----------------------------------------


def _two_runs(root: Path, *, deleted: bool = False) -> None:
    _mlflow_run(root, "aaa111", "one", {"val_acc": [(6, 0.5), (12, 0.6)]}, stage="deleted" if deleted else "active")
    _mlflow_run(root, "bbb222", "two", {"val_acc": [(6, 0.7), (12, 0.8)]})


def test_run_picks_a_file_store_run_by_its_name(tmp_path):
    _two_runs(tmp_path)
    profile = import_log("mlflow", tmp_path, run="two", global_batch=16, dataset_size=96)
    assert [e.metric for e in profile.evals] == [0.7, 0.8]


def test_a_deleted_mlflow_run_is_not_counted(tmp_path):
    _two_runs(tmp_path, deleted=True)
    profile = import_log("mlflow", tmp_path, global_batch=16, dataset_size=96)
    assert [e.metric for e in profile.evals] == [0.7, 0.8]


def test_a_deleted_mlflow_run_named_by_its_id_is_still_imported(tmp_path):
    # it imported before deleted runs were left out; "no run 'aaa111'" was untrue
    _two_runs(tmp_path, deleted=True)
    profile = import_log("mlflow", tmp_path, run="aaa111", global_batch=16, dataset_size=96)
    assert [e.metric for e in profile.evals] == [0.5, 0.6]


def test_an_mlflow_run_that_matches_nothing_lists_the_runs(tmp_path):
    _two_runs(tmp_path)
    with pytest.raises(InputError, match=r"no run 'three'; the runs are aaa111 \(one\), bbb222 \(two\)"):
        import_log("mlflow", tmp_path, run="three", global_batch=16, dataset_size=96)


# --- a log longer than a profile --------------------------------------------------------


def test_a_log_past_the_profile_cap_is_refused_before_its_records_are_built(tmp_path, monkeypatch):
    import cotune.logs as logs

    monkeypatch.setattr(logs, "MAX_PROFILE_LINES", 5)

    def build(*args, **kwargs):  # 2,000,000 points took 100 s in here before the refusal
        raise AssertionError("records built for a log that cannot fit a profile")

    monkeypatch.setattr(logs, "log_to_records", build)
    path = tmp_path / "long.csv"
    path.write_text("step,val_loss\n" + "".join(f"{k},{1 / k}\n" for k in range(1, 11)))
    with pytest.raises(InputError, match=r"would have 11 lines \(10 points of 'val_loss'\), more than the 5"):
        import_log("csv", path, out=tmp_path / "p.jsonl", global_batch=16, dataset_size=96)


# --- a Keras History saved with pandas -------------------------------------------------


@pytest.mark.parametrize("fmt", ["csv", "keras-csv"])
def test_a_pandas_saved_history_is_told_to_name_its_index_column_epoch(tmp_path, fmt):
    path = tmp_path / "history.csv"
    path.write_text(",accuracy,val_accuracy\n0,0.4,0.5\n1,0.6,0.7\n")  # pd.DataFrame(history.history).to_csv()
    with pytest.raises(InputError, match="a column has no name .*write 'epoch' as its name in the header, then import "
                                         "the file as format keras-csv"):
        import_log(fmt, path, global_batch=16, dataset_size=96)
    fixed = tmp_path / "named.csv"
    fixed.write_text("epoch" + path.read_text())
    assert [e.epoch for e in import_log("keras-csv", fixed, global_batch=16, dataset_size=96).evals] == [1.0, 2.0]


def test_a_plain_loop_logging_a_zero_based_epoch_at_steps_done_is_not_shifted(tmp_path):
    # mlflow.log_metrics({"epoch": epoch, "val_acc": acc}, step=global_step) at each epoch's
    # end, steps counted as done (5 an epoch): taken for Lightning it read 1.2, 2.2, ...
    root = tmp_path / "mlruns"
    steps = [5 * (k + 1) for k in range(6)]
    _mlflow_run(root, "abc123", "plain", {"epoch": [(s, k) for k, s in enumerate(steps)],
                                          "val_acc": [(s, 0.5 + k / 20) for k, s in enumerate(steps)]})
    profile = import_log("mlflow", root, global_batch=32, dataset_size=160, metric="val_acc")
    assert [e.epoch for e in profile.evals] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert not any("Lightning" in n for n in profile.warnings)


def test_a_lightning_mlflow_run_validated_every_other_epoch_is_still_shifted(tmp_path):
    # check_val_every_n_epoch=2, 32 steps an epoch, training logged every 10 steps: the epochs
    # without validation end at their last training log, so the ends are no grid.
    root = tmp_path / "mlruns"
    epoch, train, val = [], [], []
    for k in range(6):
        for s in range(32 * k + 9, 32 * (k + 1), 10):
            epoch.append((s, k))
            train.append((s, 1.0 / (s + 1)))
        if k % 2 == 1:
            end = 32 * (k + 1) - 1
            epoch.append((end, k))
            val.append((end, 0.5 + k / 20))
    _mlflow_run(root, "abc123", "lit", {"epoch": epoch, "train_loss": train, "val_acc": val})
    profile = import_log("mlflow", root, global_batch=16, dataset_size=512, metric="val_acc")
    assert [e.epoch for e in profile.evals] == [2.0, 4.0, 6.0]


# --- a metric logged against the epoch index (the PyTorch tutorial's add_scalar(tag, v, epoch)) --


def _epoch_indexed(points_per_epoch: int = 10, epochs: int = 20) -> list[tuple[int, str, float]]:
    train = [(s, "Loss/train", 1.0 / s) for s in range(5, points_per_epoch * epochs + 1, 5)]
    return train + [(epoch, "Accuracy/test", 0.5 + epoch / 50) for epoch in range(epochs)]


def test_a_tensorboard_metric_logged_at_the_epoch_index_is_refused_with_the_flag_to_pass(tmp_path):
    _event_file(tmp_path, _epoch_indexed())
    with pytest.raises(InputError, match="looks logged against the epoch index.*--steps-are-epochs"):
        import_log("tensorboard", tmp_path, global_batch=16, dataset_size=160)


def test_steps_are_epochs_reads_a_zero_based_epoch_index_as_passes_done(tmp_path):
    _event_file(tmp_path, _epoch_indexed())
    profile = import_log("tensorboard", tmp_path, global_batch=16, dataset_size=160, steps_are_epochs=True)
    assert [e.epoch for e in profile.evals] == [float(k) for k in range(1, 21)]


def _tutorial_loop(*, epochs: int, steps_per_epoch: int, log_every_steps: int) -> list[tuple[int, str, float]]:
    # train loss at the 0-based step every `log_every_steps` steps, accuracy at the 0-based
    # epoch index once each pass ends: the last training log falls short of the end
    train = [(s, "train/loss", 1.0 / (s + 1)) for s in range(0, epochs * steps_per_epoch, log_every_steps)]
    return train + [(epoch, "val/acc", 0.5 + epoch / 50) for epoch in range(epochs)]


def test_steps_are_epochs_counts_the_epochs_past_a_training_series_logged_half_an_epoch_apart(tmp_path):
    # 5 epochs of 20 steps, logged every 10: the last log is at step 90, 4.5 epochs
    _event_file(tmp_path, _tutorial_loop(epochs=5, steps_per_epoch=20, log_every_steps=10))
    profile = import_log("tensorboard", tmp_path, global_batch=16, dataset_size=320, metric="val/acc",
                         steps_are_epochs=True)
    assert [e.epoch for e in profile.evals] == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_steps_are_epochs_counts_the_epochs_past_a_training_series_logged_over_an_epoch_apart(tmp_path):
    # CIFAR-10 at batch 512 (98 steps an epoch) logged every 100 steps: last log at step 900 of 980
    _event_file(tmp_path, _tutorial_loop(epochs=10, steps_per_epoch=98, log_every_steps=100))
    profile = import_log("tensorboard", tmp_path, global_batch=512, dataset_size=50_000, metric="val/acc",
                         steps_are_epochs=True)
    assert [e.epoch for e in profile.evals] == [float(k) for k in range(1, 11)]


def test_the_epoch_index_refusal_counts_the_epochs_past_the_last_logged_training_step(tmp_path):
    _event_file(tmp_path, _tutorial_loop(epochs=5, steps_per_epoch=20, log_every_steps=10))
    with pytest.raises(InputError, match="about 5 epochs of 20 steps"):
        import_log("tensorboard", tmp_path, global_batch=16, dataset_size=320, metric="val/acc")


def test_an_mlflow_metric_logged_at_the_epoch_index_is_refused_with_the_flag_to_pass(tmp_path):
    _mlflow_run(tmp_path, "c3c3", "r", {"train_loss": [(s, 1.0 / (s + 1)) for s in range(0, 200, 5)],
                                        "val_accuracy": [(e, 0.5 + e / 50) for e in range(20)]})
    with pytest.raises(InputError, match="--steps-are-epochs"):
        import_log("mlflow", tmp_path, global_batch=16, dataset_size=160)


_ACCURACY = [0.5, 0.7, 0.8, 0.86, 0.9, 0.92, 0.93, 0.94, 0.945, 0.95]


def test_a_tensorboard_metric_alone_at_the_epoch_index_is_refused_with_the_flag_to_pass(tmp_path):
    # add_scalar("Accuracy/test", acc, epoch) and nothing else: 10 epochs were read as 0.09, no note
    _event_file(tmp_path, [(epoch, "Accuracy/test", acc) for epoch, acc in enumerate(_ACCURACY)])
    with pytest.raises(InputError, match=r"looks logged against the epoch index.*pass --steps-are-epochs.*"
                                         r"'cotune import records'"):
        import_log("tensorboard", tmp_path, global_batch=50, dataset_size=5000)


def test_an_mlflow_metric_alone_at_the_epoch_index_is_one_line_exit_2(tmp_path, capsys):
    from cotune.cli import main

    _mlflow_run(tmp_path, "d4d4", "ep", {"val_accuracy": list(enumerate(_ACCURACY))})
    code = main(["import", "mlflow", str(tmp_path), "--out", str(tmp_path / "p.jsonl"), "--global-batch", "50",
                 "--dataset-size", "5000"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "--steps-are-epochs" in err
    assert not (tmp_path / "p.jsonl").exists()


def test_every_series_logged_at_the_epoch_index_is_refused(tmp_path):
    # The tutorial's loop logging its training loss against the epoch too: nothing ran
    # further and every series is at 0..9 (read as 0.09 of an epoch with only a note)
    _event_file(tmp_path, [(e, "Loss/train", 1.0 / (e + 1)) for e in range(10)]
                + [(epoch, "Accuracy/test", acc) for epoch, acc in enumerate(_ACCURACY)])
    with pytest.raises(InputError, match=r"as do those of every other series \('Loss/train'\).*looks logged against "
                                         r"the epoch index.*--steps-are-epochs"):
        import_log("tensorboard", tmp_path, global_batch=50, dataset_size=5000, metric="Accuracy/test")


def test_an_epoch_series_that_counts_one_a_step_with_the_metric_is_refused(tmp_path):
    _event_file(tmp_path, [(e, "Loss/train", 1.0 / (e + 1)) for e in range(10)]
                + [(e, "epoch", float(e)) for e in range(10)]
                + [(epoch, "Accuracy/test", acc) for epoch, acc in enumerate(_ACCURACY)])
    with pytest.raises(InputError, match="epoch series 'epoch' counts one a step.*looks logged against the epoch"):
        import_log("tensorboard", tmp_path, global_batch=50, dataset_size=5000, metric="Accuracy/test")


def _keras_autolog(root: Path, *, params: dict[str, str]) -> Path:
    # mlflow.tensorflow.autolog() around fit(epochs=10): every metric at step=epoch, 30 s apart
    acc = dict(enumerate(_ACCURACY))
    return _mlflow_run(root, "a1b2", "keras-autolog", {
        "loss": [(e, 1.0 / (e + 1)) for e in range(10)], "accuracy": list(acc.items()),
        "val_loss": [(e, 1.1 / (e + 1)) for e in range(10)], "val_accuracy": [(e, a - 0.02) for e, a in acc.items()],
    }, params=params, ms_a_step=30_000)


def test_a_keras_mlflow_autolog_run_is_one_line_exit_2_naming_steps_are_epochs(tmp_path, capsys):
    from cotune.cli import main

    _keras_autolog(tmp_path, params={"epochs": "10", "batch_size": "50"})
    code = main(["import", "mlflow", str(tmp_path), "--out", str(tmp_path / "p.jsonl"), "--global-batch", "50",
                 "--dataset-size", "5000", "--metric", "val_accuracy"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "--steps-are-epochs" in err
    assert not (tmp_path / "p.jsonl").exists()


def test_steps_are_epochs_reads_no_step_time_from_the_clock_of_series_at_the_epoch_index(tmp_path):
    # 30 s between epochs was written as a 30 s step record
    _keras_autolog(tmp_path, params={})
    profile = import_log("mlflow", tmp_path, global_batch=50, dataset_size=5000, metric="val_accuracy",
                         steps_are_epochs=True, gpu="v100", workers=1)
    assert [e.epoch for e in profile.evals] == [float(k) for k in range(1, 11)]
    assert profile.steps == ()
    assert any("no step times" in n and "times epochs, not steps" in n for n in profile.warnings)


def test_an_mlflow_param_epochs_as_many_as_the_metric_steps_is_refused(tmp_path):
    # 1-based epochs 1..10 beside a loss at other steps: only the run's param 'epochs' tells
    _mlflow_run(tmp_path, "f6f6", "r", {"loss": [(s, 1.0 / (s + 1)) for s in range(11)],
                                        "val_accuracy": [(e, a) for e, a in enumerate(_ACCURACY, start=1)]},
                params={"epochs": "10"})
    with pytest.raises(InputError, match="the run's param 'epochs' is 10.*--steps-are-epochs"):
        import_log("mlflow", tmp_path, global_batch=50, dataset_size=5000, metric="val_accuracy")


def test_an_mlflow_sqlite_param_num_train_epochs_as_many_as_the_metric_steps_is_refused(tmp_path):
    import sqlite3

    db = sqlite3.connect(tmp_path / "mlflow.db")
    db.execute("CREATE TABLE runs (run_uuid TEXT, name TEXT, lifecycle_stage TEXT, start_time INTEGER)")
    db.execute("INSERT INTO runs VALUES ('a1', 'r', 'active', 1)")
    db.execute("CREATE TABLE metrics (key TEXT, value, timestamp, step, is_nan, run_uuid TEXT)")
    db.execute("CREATE TABLE params (key TEXT, value TEXT, run_uuid TEXT)")
    db.executemany("INSERT INTO params VALUES (?, ?, 'a1')", [("num_train_epochs", "10.0"), ("seed", "42")])
    db.executemany("INSERT INTO metrics VALUES ('loss', 0.5, ?, ?, 0, 'a1')", [(1000 + s, s) for s in range(0, 10, 3)])
    db.executemany("INSERT INTO metrics VALUES ('val_accuracy', ?, ?, ?, 0, 'a1')",
                   [(a, 1000 + e, e) for e, a in enumerate(_ACCURACY)])
    db.commit()
    db.close()
    with pytest.raises(InputError, match="the run's param 'num_train_epochs' is 10.*--steps-are-epochs"):
        import_log("mlflow", tmp_path / "mlflow.db", global_batch=50, dataset_size=5000, metric="val_accuracy")


def test_series_at_other_steps_with_no_epoch_series_import_as_steps_with_a_note(tmp_path):
    # Accuracy and loss at every step 0..19, the learning rate every 5: not all at the
    # metric's steps, no epoch series, no param; nothing tells an epoch loop from 20 steps
    _event_file(tmp_path, [(s, "Loss/train", 1.0 / (s + 1)) for s in range(20)]
                + [(s, "lr", 0.1) for s in range(0, 20, 5)]
                + [(s, "Accuracy/test", 0.5 + s / 50) for s in range(20)])
    profile = import_log("tensorboard", tmp_path, global_batch=50, dataset_size=5000, metric="Accuracy/test")
    assert [e.epoch for e in profile.evals] == [s / 100 for s in range(20)]
    assert any("read as optimizer steps; if they are epoch indices" in n and "--steps-are-epochs" in n
               for n in profile.warnings)


def _trainer_fine_tune(steps: int, *, steps_per_epoch: int) -> list[tuple[int, str, float]]:
    # Hugging Face Trainer's TensorBoard callback, logging_steps=1 and eval_steps=1: every
    # series at steps 1..n, 'train/epoch' the fraction of a pass done
    return [p for s in range(1, steps + 1)
            for p in ((s, "train/loss", 2.0 / s), (s, "train/learning_rate", 1e-5),
                      (s, "train/epoch", s / steps_per_epoch), (s, "eval/accuracy", 0.5 + s / 100))]


def test_a_trainer_run_evaluated_every_step_inside_its_first_epoch_imports_as_steps(tmp_path):
    # max_steps=40 of 3,125 an epoch: refused as an epoch index, with no flag to read it as steps
    _event_file(tmp_path, _trainer_fine_tune(40, steps_per_epoch=3125))
    profile = import_log("tensorboard", tmp_path, global_batch=32, dataset_size=100_000, metric="eval/accuracy")
    assert [e.epoch for e in profile.evals] == [s / 3125 for s in range(1, 41)]
    assert not any("--steps-are-epochs" in n for n in profile.warnings)


def test_an_mlflow_run_whose_epoch_index_stays_0_over_its_steps_imports_as_steps(tmp_path):
    # Lightning's MLFlowLogger: a 0-based 'epoch' of 0 at every step of a run stopped inside its first pass
    _mlflow_run(tmp_path, "e5e5", "short", {"train_loss": [(s, 1.0 / (s + 1)) for s in range(30)],
                                            "epoch": [(s, 0.0) for s in range(30)],
                                            "val_acc": [(s, 0.5 + s / 100) for s in range(30)]})
    profile = import_log("mlflow", tmp_path, metric="val_acc", global_batch=32, dataset_size=100_000)
    assert len(profile.evals) == 30 and max(e.epoch for e in profile.evals) < 0.01


def test_steps_are_epochs_is_refused_for_a_csv(tmp_path):
    path = tmp_path / "run.csv"
    path.write_text("step,val_accuracy\n1,0.5\n2,0.6\n")
    with pytest.raises(InputError, match="--steps-are-epochs applies to formats tensorboard and mlflow only"):
        import_log("csv", path, global_batch=16, dataset_size=160, steps_are_epochs=True)


# --- SummaryWriter.add_scalars: each series in a directory of its own -------------------


def test_the_add_scalars_directories_are_named_when_no_metric_is_found(tmp_path):
    _event_file(tmp_path, [(s, "loss", 1.0 / s) for s in range(1, 25)])
    (tmp_path / "accuracy_val").mkdir()
    _event_file(tmp_path / "accuracy_val", [(s, "accuracy", s / 30) for s in range(6, 25, 6)])
    with pytest.raises(InputError, match=r"accuracy_val \(add_scalars writes one there\): give that directory"):
        import_log("tensorboard", tmp_path, metric="accuracy_val", global_batch=16, dataset_size=96)


# --- MLflow SQLite store: --run as the file store reads it --------------------------------


def _store(path: Path) -> Path:
    import sqlite3

    db = sqlite3.connect(path)
    db.execute("CREATE TABLE runs (run_uuid TEXT, name TEXT, lifecycle_stage TEXT, start_time INTEGER)")
    db.executemany("INSERT INTO runs VALUES (?, ?, ?, ?)", [("a1", "one", "deleted", 1), ("b2", "two", "active", 2)])
    db.execute("CREATE TABLE metrics (key TEXT, value, timestamp, step, is_nan, run_uuid TEXT)")
    db.executemany("INSERT INTO metrics VALUES ('val_acc', ?, ?, ?, 0, ?)",
                   [(v, 1000 + s, s, run) for run, v0 in (("a1", 0.5), ("b2", 0.7)) for s, v in ((6, v0), (12, v0 + 0.1))])
    db.commit()
    db.close()
    return path


def test_a_sqlite_store_run_that_matches_nothing_lists_the_runs(tmp_path):
    with pytest.raises(InputError, match=r"no run 'three'; the runs are b2 \(two\) \(1 deleted run left out\)"):
        import_log("mlflow", _store(tmp_path / "mlflow.db"), run="three", global_batch=16, dataset_size=96)


def test_a_deleted_sqlite_store_run_named_by_its_id_is_imported(tmp_path):
    profile = import_log("mlflow", _store(tmp_path / "mlflow.db"), run="a1", global_batch=16, dataset_size=96)
    assert [e.metric for e in profile.evals] == [0.5, 0.6]


# --- MLflow 3's LoggedModel beside a run --------------------------------------------------


def test_an_mlflow_logged_model_is_no_run_of_its_experiment(tmp_path):
    run = _mlflow_run(tmp_path, "d005", "r1", {"val_accuracy": [(6, 0.5), (12, 0.6)]})
    model = run.parent / "models" / "m-08cd"  # what initialize_logged_model writes, metrics/ and all
    (model / "metrics").mkdir(parents=True)
    (model / "metrics" / "val_accuracy").write_text("1700000000000 0.9 30\n")
    (model / "meta.yaml").write_text("model_id: m-08cd\nsource_run_id: d005\n")
    profile = import_log("mlflow", run.parent, global_batch=16, dataset_size=96)
    assert [e.metric for e in profile.evals] == [0.5, 0.6]
