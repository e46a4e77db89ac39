"""Values a logger never writes, read as what they are: one bad cell or line does not
change the other points, and is never read as data."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cotune.cli import main
from cotune.profile import read_profile

LOGS = Path(__file__).resolve().parents[2] / "examples" / "logs"


def _import(capsys, *argv):
    code = main(["import", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _trainer_log(tmp_path, capsys, history):
    """Import a trainer_state.json of ``history``: (exit code, what it said, errors, the epochs written)."""
    log = tmp_path / "trainer_state.json"
    log.write_text(json.dumps({"log_history": history}))
    out = tmp_path / "p.jsonl"
    code, said, err = _import(capsys, "hf-trainer", str(log), "--out", str(out), "--global-batch", "16",
                              "--dataset-size", "96", "--metric", "accuracy")
    return code, said, err, ([(e.epoch, e.metric) for e in read_profile(out).evals] if code == 0 else None)


def test_one_hf_entry_without_a_numeric_epoch_leaves_the_others_epochs_as_logged(tmp_path, capsys):
    # {"epoch": null} once made the series drop every logged epoch: 1 and 2 became 0.5 and 1.0
    code, said, err, points = _trainer_log(tmp_path, capsys, [{"epoch": None, "eval_accuracy": 0.5, "step": 3},
                                                              {"epoch": 1, "eval_accuracy": 0.55, "step": 6},
                                                              {"epoch": 2, "eval_accuracy": 0.6, "step": 12}])
    assert code == 0, err
    assert points == [(1.0, 0.55), (2.0, 0.6)]
    assert "skipped 1 log_history entry without a numeric 'epoch' (the others have one)" in said


@pytest.mark.parametrize("first", [{"epoch": None}, {}])
def test_an_entry_without_an_epoch_beside_ones_with_it_is_left_out_null_or_missing(tmp_path, capsys, first):
    code, _, err, points = _trainer_log(tmp_path, capsys, [{**first, "eval_accuracy": 0.5, "step": 3},
                                                           {"epoch": 2.0, "eval_accuracy": 0.6, "step": 6},
                                                           {"epoch": 4.0, "eval_accuracy": 0.7, "step": 12}])
    assert code == 0, err
    assert [epoch for epoch, _ in points] == [2.0, 4.0]  # as logged (a missing key gave 1.0 / 2.0)


def test_a_log_with_no_numeric_epoch_at_all_counts_epochs_from_steps(tmp_path, capsys):
    history = [{"epoch": None, "eval_accuracy": 0.5 + 0.05 * i, "step": 3 * (i + 1)} for i in range(3)]
    code, _, err, points = _trainer_log(tmp_path, capsys, history)
    assert code == 0, err
    assert [epoch for epoch, _ in points] == [0.5, 1.0, 1.5]


def test_an_mlflow_metric_line_with_extra_fields_is_damage_not_data(tmp_path, capsys):
    runs = tmp_path / "mlruns"
    shutil.copytree(LOGS / "mlruns", runs)
    (metric,) = runs.glob("*/*/metrics/val_accuracy")
    with metric.open("a") as fh:
        fh.write("1 2 3 4 5 6\n")  # was read as accuracy 2.0
    code, _, err = _import(capsys, "mlflow", str(runs), "--out", str(tmp_path / "p.jsonl"), "--global-batch", "16",
                           "--dataset-size", "96")
    assert code == 2 and "expected 'timestamp value step', got '1 2 3 4 5 6'" in err and err.count("\n") == 1, err


@pytest.mark.parametrize("cell", ["1e309", "9" * 400])
def test_digits_past_float_range_are_not_a_diverged_evaluation(tmp_path, capsys, cell):
    log = tmp_path / "log.csv"
    log.write_text(f"epoch,val_top1\n1,0.5\n2,{cell}\n3,0.7\n")
    out = tmp_path / "p.jsonl"
    code, said, err = _import(capsys, "csv", str(log), "--out", str(out), "--global-batch", "16", "--dataset-size", "96",
                              "--metric", "val_top1")
    assert code == 0, err
    assert [e.metric for e in read_profile(out).evals] == [0.5, 0.7]  # was a third, 'Infinity': diverged
    assert "that are not numbers" in said
