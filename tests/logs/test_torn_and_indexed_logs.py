"""Logs a killed writer left cut short, and per-step exports whose epoch column is the index
of the epoch in progress. Each log is written here the way its tool writes it: a W&B history
export (one row a wandb.log call, `_step`, `_runtime`, `_timestamp`, the loop's 0-based
`epoch`), CSVLogger's rows ending in '\\r\\n' (Python's csv module, which Keras and Lightning
use), MLflow's file store ('timestamp value step' lines), TensorBoard's own event writer."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from cotune.cli import main
from cotune.errors import InputError
from cotune.logs import import_log, import_table

STEPS_AN_EPOCH = 391  # ⌈50,000 / 128⌉
STEP_S, EVAL_S = 0.1, 5.0


def _wandb_history(path: Path, *, epochs: int = 5) -> Path:
    """A run's history as W&B's export writes it, of the loop `for epoch in range(n): (train
    391 steps, wandb.log({'epoch': epoch, 'train/loss': ...}) each); wandb.log({'epoch': epoch,
    'val/acc': ...})`: 0.1 s a step, 5 s an evaluation, empty cells where a call logged no key."""
    t, call, rows = 0.0, 0, []
    for epoch in range(epochs):
        for _ in range(STEPS_AN_EPOCH):
            t += STEP_S
            rows.append([call, f"{t:.2f}", f"{1.7e9 + t:.2f}", epoch, f"{1.0 / (call + 1):.4f}", ""])
            call += 1
        t += EVAL_S
        rows.append([call, f"{t:.2f}", f"{1.7e9 + t:.2f}", epoch, "", f"{0.5 + epoch / 20:.3f}"])
        call += 1
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["_step", "_runtime", "_timestamp", "epoch", "train/loss", "val/acc"])
        writer.writerows(rows)
    return path


# --- a per-step export with an epoch index -------------------------------------------------


def test_a_per_step_export_with_an_epoch_index_is_timed_by_each_epochs_last_clock_stamp(tmp_path):
    # Row-by-row differences of the epoch picked the one step between two epochs: 0.1 s / 391.
    path = _wandb_history(tmp_path / "wb.csv")
    profile = import_log("csv", path, global_batch=128, dataset_size=50000, gpu="v100", workers=1)
    epoch_s = STEPS_AN_EPOCH * STEP_S + EVAL_S
    assert profile.steps[0].step_time_s == pytest.approx(epoch_s / STEPS_AN_EPOCH)


@pytest.mark.parametrize("step_column", [None, "_step"])
def test_evaluations_at_the_end_of_an_epoch_in_progress_index_are_read_as_passes_done(tmp_path, step_column):
    # Logged with epoch k when pass k + 1 ended: read as passes, the first was at epoch 0.
    path = _wandb_history(tmp_path / "wb.csv")
    profile = import_log("csv", path, global_batch=128, dataset_size=50000, step_column=step_column)
    assert [(e.epoch, e.metric) for e in profile.evals] == [(1.0, 0.5), (2.0, 0.55), (3.0, 0.6), (4.0, 0.65),
                                                             (5.0, 0.7)]
    assert any("column 'epoch' counts the epoch in progress from 0" in n and "'val/acc'" in n
               for n in profile.warnings), profile.warnings


def test_an_epoch_index_beside_steps_names_a_fix_the_user_can_apply(tmp_path):
    # "leave that column out" named no flag: a column called 'epoch' is taken by its name.
    rows = "".join(f"{s},{(s - 1) // 3},{0.5 + s / 100}\n" for s in range(1, 7))
    path = tmp_path / "log.csv"
    path.write_text("step,epoch,val_acc\n" + rows)
    hint = [n for n in import_log("csv", path, global_batch=16, dataset_size=48).warnings if "still 0 at step" in n]
    assert len(hint) == 1 and "rename that column in the file's header (to 'epoch_index', say)" in hint[0], hint
    path.write_text("step,epoch_index,val_acc\n" + rows)  # the fix, as the note gives it
    profile = import_log("csv", path, global_batch=16, dataset_size=48)
    assert [e.epoch for e in profile.evals] == pytest.approx([s / 3 for s in range(1, 7)])
    assert not any("still 0 at step" in n for n in profile.warnings)


# --- MLflow: a torn last line ---------------------------------------------------------------


def _mlflow_metric(tmp_path: Path, text: str) -> Path:
    run = tmp_path / "mlruns" / "1" / "a1b2"
    (run / "metrics").mkdir(parents=True)
    (run / "meta.yaml").write_text("experiment_id: '1'\nlifecycle_stage: active\nrun_id: a1b2\nrun_name: r\n")
    (run / "metrics" / "val_acc").write_text(text)
    return run


def test_a_torn_last_line_of_an_mlflow_metric_file_is_dropped_with_a_note(tmp_path):
    # Its value was read at step 0: the run's last accuracy became its first point, at epoch 0.
    whole = "".join(f"{1_700_000_000_000 + 1000 * k} {0.5 + k / 10} {6 * k}\n" for k in (1, 2, 3))
    run = _mlflow_metric(tmp_path, whole + "1700000004000 0.9")
    profile = import_log("mlflow", run, global_batch=16, dataset_size=96)
    assert [(e.epoch, e.metric) for e in profile.evals] == [(1.0, 0.6), (2.0, 0.7), (3.0, 0.8)]
    assert any("dropped a torn last line of metric 'val_acc'" in n and "the writer stopped mid-write" in n
               for n in profile.warnings), profile.warnings


def test_a_line_without_a_step_among_lines_with_one_is_refused_as_damage(tmp_path):
    run = _mlflow_metric(tmp_path, "1700000001000 0.6 6\n1700000002000 0.7\n1700000003000 0.8 18\n")
    with pytest.raises(InputError, match=r"val_acc:2: expected 'timestamp value step', got '1700000002000 0\.7' among "
                                         "lines with a step"):
        import_log("mlflow", run, global_batch=16, dataset_size=96)


# --- CSV logs and tables: a torn last row, a short row ----------------------------------------


@pytest.mark.parametrize("fmt, header, rows, cut", [
    ("csv", "epoch,val_acc", ["1,0.5", "2,0.6", "3,0.7"], "4,0."),
    ("keras-csv", "epoch,val_acc", ["0,0.5", "1,0.6", "2,0.7"], "3,0.7e-"),
    ("lightning-csv", "epoch,step,val_acc", ["0,5,0.5", "1,11,0.6", "2,17,0.7"], "3,2"),
])
def test_an_unended_last_row_of_a_csv_log_is_dropped_only_when_visibly_cut(tmp_path, fmt, header, rows, cut):
    # CSVLogger writes '\r\n' after each row: a last row without it was cut by a killed writer
    # ('4,0.' read as accuracy 0.0 at epoch 4). A row that reads whole is kept: DAWNBench's
    # published TSVs end without a newline, and their last row is the target-reaching one.
    path = tmp_path / "metrics.csv"
    path.write_bytes("\r\n".join([header, *rows, cut]).encode())
    profile = import_log(fmt, path, global_batch=16, dataset_size=96, metric="val_acc")
    assert [(e.epoch, e.metric) for e in profile.evals] == [(1.0, 0.5), (2.0, 0.6), (3.0, 0.7)]
    assert any("dropped a torn last row (line 5" in n and "the writer stopped mid-write" in n for n in profile.warnings)
    path.write_bytes("\r\n".join([header, *rows]).encode())  # whole, without the newline
    profile = import_log(fmt, path, global_batch=16, dataset_size=96, metric="val_acc")
    assert [e.epoch for e in profile.evals] == [1.0, 2.0, 3.0]
    assert not any("torn" in n for n in profile.warnings)


def test_an_unended_last_row_of_a_records_table_is_dropped_only_when_visibly_cut(tmp_path):
    path = tmp_path / "curve.csv"
    path.write_text("global_batch,epoch,metric\n256,1,0.5\n256,2,0.6\n256,3,0.")
    profile = import_table(path, record="eval", dataset_size=50000, metric="top1")
    assert [(e.epoch, e.metric) for e in profile.evals] == [(1, 0.5), (2, 0.6)]
    assert any("dropped a torn last row (line 4" in n for n in profile.warnings), profile.warnings
    path.write_text("global_batch,epoch,metric\n256,1,0.5\n256,2,0.6\n256,3,0.7")  # ElasticFlow's tables end so
    assert [e.metric for e in import_table(path, record="eval", dataset_size=50000, metric="top1").evals] == [0.5, 0.6,
                                                                                                             0.7]


def test_a_row_with_fewer_cells_than_the_header_is_refused_with_its_line(tmp_path, capsys):
    # It passed silently (its cells read under the first columns' names), while a longer one
    # was refused. Empty cells written between separators (',,', as W&B and Keras write them)
    # are cells: that file imports.
    path = tmp_path / "log.csv"
    path.write_text("epoch,val_acc,train_loss\n1,0.5,\n2,,0.3\n3,0.7,0.2\n")
    assert [e.epoch for e in import_log("csv", path, global_batch=16, dataset_size=96).evals] == [1.0, 3.0]
    path.write_text("epoch,val_acc,train_loss\n1,0.5,0.4\n2,0.6\n3,0.7,0.2\n")
    out = tmp_path / "p.jsonl"
    rc = main(["import", "csv", str(path), "--out", str(out), "--global-batch", "16", "--dataset-size", "96"])
    err = capsys.readouterr().err
    assert rc == 2 and "line 3 has 2 cells, the header names 3: give every row the header's columns" in err, err
    assert err.count("\n") == 1 and not out.exists()


def test_a_row_of_a_records_table_with_fewer_cells_than_the_header_is_refused_with_its_line(tmp_path):
    # pandas padded it with empty cells: a missing metric, or a step time under another field.
    path = tmp_path / "curve.csv"
    path.write_text("global_batch,epoch,metric\n256,1,0.5\n256,2\n256,3,0.7\n")
    with pytest.raises(InputError, match="line 3 has 2 cells, the header names 3: give every row the header's columns"):
        import_table(path, out=tmp_path / "p.jsonl", record="eval", dataset_size=50000, metric="top1")
    assert not (tmp_path / "p.jsonl").exists()


# --- the flags and names of other formats ----------------------------------------------------


def test_record_given_to_an_adaptdl_import_names_the_format_it_belongs_to(tmp_path, capsys):
    # It said '--record apply to the log formats, not to adaptdl': the log formats refuse it too.
    rc = main(["import", "adaptdl", str(tmp_path), "--out", str(tmp_path / "z.jsonl"), "--record", "step"])
    err = capsys.readouterr().err
    assert rc == 2 and err == "cotune: --record applies to format records only (a table of profile records)\n"


def test_an_event_file_given_by_its_path_names_the_workload_after_its_run_directory(tmp_path):
    pytest.importorskip("tensorboard")
    from cotune.logs._readers import _tensorboard_accumulator

    _tensorboard_accumulator()  # tensorboard without TensorFlow, as the reader loads it
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    run = tmp_path / "resnet18-b128"
    writer = EventFileWriter(str(run))  # what SummaryWriter writes with
    for step in (6, 12, 18):
        writer.add_event(Event(wall_time=1.7e9 + step, step=step,
                               summary=Summary(value=[Summary.Value(tag="val/acc", simple_value=step / 100)])))
    writer.close()
    by_file = import_log("tensorboard", writer._file_name, global_batch=16, dataset_size=96)
    by_dir = import_log("tensorboard", run, global_batch=16, dataset_size=96)
    assert by_file.workload.name == by_dir.workload.name == "resnet18-b128"
