"""`cotune import` on logs written by the real libraries (examples/logs/, made by
examples/logs/make_logs.py). Each test checks the records against the log as read
independently (json, pandas, the raw files), not against cotune's own reader."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cotune.cli import main
from cotune.errors import InputError
from cotune.logs import import_log
from cotune.profile import read_profile

LOGS = Path(__file__).resolve().parents[2] / "examples" / "logs"
HF = LOGS / "hf-trainer" / "trainer_state.json"
LIGHTNING = LOGS / "lightning" / "tiny" / "version_0" / "metrics.csv"
TENSORBOARD = LOGS / "tensorboard" / "tiny"
MLRUNS = LOGS / "mlruns"
CSV = LOGS / "run.csv"
N, B = 96, 16  # the runs' dataset size and global batch


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_hf_trainer_eval_points_are_the_logged_ones(tmp_path):
    history = json.loads(HF.read_text())["log_history"]
    logged = [(e["epoch"], e["eval_accuracy"]) for e in history if "eval_accuracy" in e]
    profile = import_log("hf-trainer", HF, out=tmp_path / "p.jsonl", metric="eval_accuracy", global_batch=B, dataset_size=N)
    assert [(e.epoch, e.metric) for e in profile.evals] == logged
    assert profile.workload.goal == "max" and profile.workload.name == "hf-trainer"
    assert read_profile(tmp_path / "p.jsonl").evals == profile.evals


def test_hf_trainer_step_time_is_the_run_summary_inverse_less_its_evaluations(tmp_path):
    history = json.loads(HF.read_text())["log_history"]
    at = next(k for k, e in enumerate(history) if "train_steps_per_second" in e)
    summary = history[at]
    paused = sum(e["eval_runtime"] for e in history[:at] if "eval_runtime" in e)  # evaluations inside train()
    profile = import_log("hf-trainer", HF, metric="accuracy", global_batch=B, dataset_size=N, gpu="CPU", workers=1)
    (step,) = profile.steps
    assert (step.gpu, step.workers, step.local_batch) == ("cpu", 1, B)
    assert 0 < paused < summary["train_runtime"]
    assert step.step_time_s == pytest.approx(1.0 / summary["train_steps_per_second"] * (1 - paused / summary["train_runtime"]))


def test_an_evaluation_after_train_is_not_taken_out_of_its_runtime(tmp_path):
    path = _trainer_state(tmp_path, [
        {"eval_loss": 1.0, "eval_runtime": 20.0, "step": 50, "epoch": 1.0},
        {"train_runtime": 100.0, "train_steps_per_second": 1.0, "step": 100, "epoch": 2.0},
        {"eval_loss": 0.9, "eval_runtime": 30.0, "step": 100, "epoch": 2.0},  # trainer.evaluate() after train()
    ])
    profile = import_log("hf-trainer", path, global_batch=16, dataset_size=800, gpu="cpu", workers=1)
    assert profile.steps[0].step_time_s == pytest.approx(1.0 * (1 - 20.0 / 100.0))
    assert any("less the 20 s its 1 evaluation(s) took" in n for n in profile.warnings)


def test_several_metrics_without_metric_flag_is_a_one_line_error(capsys, tmp_path):
    code, _, err = _cli(capsys, "import", "hf-trainer", str(HF), "--out", str(tmp_path / "p.jsonl"), "--global-batch", "16",
                        "--dataset-size", "96")
    assert code == 2 and err.count("\n") == 1
    assert "--metric" in err and "eval_accuracy" in err and "eval_loss" in err
    assert not (tmp_path / "p.jsonl").exists()


def test_missing_global_batch_names_the_flag_and_what_the_log_says(capsys, tmp_path):
    code, _, err = _cli(capsys, "import", "hf-trainer", str(HF), "--out", str(tmp_path / "p.jsonl"), "--metric", "eval_loss",
                        "--dataset-size", "96")
    assert code == 2 and "--global-batch" in err and "train_batch_size 16" in err


def test_missing_global_batch_names_the_one_the_logs_epoch_counter_implies(capsys, tmp_path):
    # The real run: 96 samples, 16 a step, 6 steps an epoch.
    code, _, err = _cli(capsys, "import", "hf-trainer", str(HF), "--out", str(tmp_path / "p.jsonl"), "--metric", "eval_loss",
                        "--dataset-size", "96")
    assert code == 2 and "the log counts 6 steps an epoch, which with --dataset-size 96 is 16 samples a step: " \
                         "--global-batch 16 if that was the run's" in err, err
    # Two processes (or two accumulation steps): twice the samples a step of the per-process batch.
    path = _trainer_state(tmp_path, [{"loss": 0.9, "step": 391, "epoch": 1.0}, {"eval_loss": 0.7, "step": 1173, "epoch": 3.0}])
    code, _, err = _cli(capsys, "import", "hf-trainer", str(path), "--out", str(tmp_path / "q.jsonl"), "--dataset-size", "12500")
    assert code == 2 and "12,500 is 32 samples a step (16 per process × 2 processes or accumulation steps)" in err, err
    assert not (tmp_path / "q.jsonl").exists()


def test_a_lightning_logs_epoch_index_names_the_global_batch_by_the_steps_between_epoch_ends(capsys, tmp_path):
    # CSVLogger's epoch column is an index (0, 1, ...), not passes: step / epoch would read 8, not 6.
    code, _, err = _cli(capsys, "import", "lightning-csv", str(LIGHTNING), "--out", str(tmp_path / "p.jsonl"),
                        "--dataset-size", str(N))
    assert code == 2 and f"6 steps an epoch, which with --dataset-size {N} is {B} samples a step" in err, err


def test_workers_without_a_local_batch_name_the_logs_per_process_batch(capsys, tmp_path):
    code, _, err = _cli(capsys, "import", "hf-trainer", str(HF), "--out", str(tmp_path / "p.jsonl"), "--dataset-size", str(N),
                        "--gpu", "t4", "--workers", "2")
    assert code == 2 and err.count("\n") == 1
    assert "--workers 2 needs --local-batch too" in err and "pass --local-batch 16 (and --accum-steps K" in err, err


def test_no_global_batch_is_named_where_the_epoch_counter_fits_no_multiple_of_the_per_process_batch(capsys, tmp_path):
    path = _trainer_state(tmp_path, [{"eval_loss": 0.7, "step": 100, "epoch": 1.0}])  # 100 steps of 8.5: not 16 × k
    code, _, err = _cli(capsys, "import", "hf-trainer", str(path), "--out", str(tmp_path / "q.jsonl"), "--dataset-size", "850")
    assert code == 2 and "--global-batch B" in err and "samples a step" not in err, err


def test_missing_dataset_size_names_the_flag(capsys, tmp_path):
    code, _, err = _cli(capsys, "import", "csv", str(CSV), "--out", str(tmp_path / "p.jsonl"), "--global-batch", "16")
    assert code == 2 and "--dataset-size" in err


def test_lightning_validation_rows_become_epochs_from_steps(tmp_path):
    frame = pd.read_csv(LIGHTNING)
    val = frame[frame["val_acc"].notna()]
    # CSVLogger's step is 0-based; an epoch is ceil(96/16) = 6 steps.
    expected = list(zip((val["step"] + 1) / math.ceil(N / B), val["val_acc"]))
    profile = import_log("lightning-csv", LIGHTNING.parent.parent, metric="val_acc", global_batch=B, dataset_size=N)
    assert [(e.epoch, e.metric) for e in profile.evals] == expected
    assert [e.epoch for e in profile.evals] == [1.0, 2.0, 3.0, 4.0]


def test_a_lightning_log_with_an_infinite_epoch_cell_is_read_not_a_crash(tmp_path):
    # '1e400' in the epoch column (a corrupted cell: float reads it as inf) crashed the
    # epoch-index reader with "cannot convert float infinity to integer" (found by the
    # import fuzz, tests/fuzz/test_fuzz_import.py).
    log = tmp_path / "metrics.csv"
    log.write_text(LIGHTNING.read_text().replace("\n0,", "\n1e400,", 1))
    profile = import_log("lightning-csv", log, metric="val_acc", global_batch=B, dataset_size=N)
    assert [e.epoch for e in profile.evals] == [1.0, 2.0, 3.0, 4.0]  # epochs come from the steps


def test_lightning_throughput_monitor_gives_the_step_time():
    frame = pd.read_csv(LIGHTNING)
    per_sec = frame["train/device/batches_per_sec"].dropna().to_numpy()
    profile = import_log("lightning-csv", LIGHTNING, metric="val_acc", global_batch=B, dataset_size=N, gpu="cpu", workers=2)
    (step,) = profile.steps
    assert step.local_batch == B // 2 and step.timed_steps == per_sec.size
    assert step.step_time_s == pytest.approx(float(np.median(1.0 / per_sec)))


def test_tensorboard_and_mlflow_logs_of_one_loop_give_one_curve():
    # make_logs.py runs the same seeded loop under both loggers: two libraries, one curve.
    tb = import_log("tensorboard", TENSORBOARD, global_batch=B, dataset_size=N)
    ml = import_log("mlflow", MLRUNS, global_batch=B, dataset_size=N)
    assert [e.epoch for e in tb.evals] == [e.epoch for e in ml.evals] == [1.0, 2.0, 3.0, 4.0]
    np.testing.assert_allclose([e.metric for e in tb.evals], [e.metric for e in ml.evals], rtol=1e-6)
    assert tb.workload.metric == "val/accuracy" and ml.workload.metric == "val_accuracy"
    assert ml.workload.name == "tiny-run"


def test_mlflow_metric_file_lines_are_the_curve():
    (metric_file,) = MLRUNS.glob("*/*/metrics/val_accuracy")
    lines = [line.split() for line in metric_file.read_text().splitlines()]
    profile = import_log("mlflow", metric_file.parent.parent, global_batch=B, dataset_size=N)
    assert [(e.epoch, e.metric) for e in profile.evals] == [(int(s) / 6, float(v)) for _, v, s in lines]


def test_mlflow_step_time_is_the_median_of_timestamp_gaps():
    (loss_file,) = MLRUNS.glob("*/*/metrics/train_loss")
    stamps = np.array([[float(x) for x in line.split()] for line in loss_file.read_text().splitlines()])
    gaps = np.diff(stamps[:, 0]) / 1000 / np.diff(stamps[:, 2])
    profile = import_log("mlflow", MLRUNS, global_batch=B, dataset_size=N, gpu="cpu", workers=1)
    assert profile.steps[0].step_time_s == pytest.approx(float(np.median(gaps[gaps > 0])), rel=1e-6)


def test_csv_epoch_column_and_throughput(tmp_path):
    frame = pd.read_csv(CSV)
    profile = import_log("csv", CSV, global_batch=B, dataset_size=N, gpu="cpu", workers=1)
    assert profile.workload.metric == "val_top1" and profile.workload.goal == "max"
    assert [(e.epoch, e.metric) for e in profile.evals] == list(zip(frame["epoch"], frame["val_top1"]))
    assert profile.steps[0].step_time_s == pytest.approx(float(np.median(B / frame["samples_per_second"])))


def test_csv_gradient_statistics_become_noise_records(tmp_path):
    path = tmp_path / "grads.csv"
    path.write_text("step,val_loss,grad_sqr,grad_var\n6,0.9,0.5,40.0\n12,0.7,0.25,30.0\n")
    profile = import_log("csv", path, global_batch=32, dataset_size=192)
    assert profile.workload.goal == "min"
    assert [n.b_noise for n in profile.noise] == pytest.approx([40.0 / 0.5 * 32, 30.0 / 0.25 * 32])
    assert [e.epoch for e in profile.evals] == [1.0, 2.0]
    assert profile.noise_scale() == pytest.approx(np.median([2560.0, 3840.0]))


def test_csv_without_an_x_axis_names_the_flags(tmp_path):
    path = tmp_path / "bare.csv"
    path.write_text("iteration,val_acc\n1,0.5\n")
    with pytest.raises(InputError, match="--epoch-column NAME.*--step-column NAME"):
        import_log("csv", path, global_batch=8, dataset_size=80)
    profile = import_log("csv", path, global_batch=8, dataset_size=80, step_column="iteration")
    assert profile.evals[0].epoch == pytest.approx(0.1)


@pytest.mark.parametrize(
    "text",
    [
        "Epoch;val_top1\n1;0.5\n2;0.75\n",  # a spreadsheet in a locale whose separator is ';'
        "Epoch;val_top1\n1,0;0,5\n2,0;0,75\n",  # ... and whose decimal mark is ',' (read as no number before)
        "epoch\tval_top1\n1\t0.5\n2\t0.75\n",  # tab-separated
        "EPOCH, val_top1\n1, 0.5\n2, 0.75\n",  # spaces after the commas, the x axis in capitals
    ],
    ids=["semicolons", "decimal-commas", "tabs", "spaces"],
)
def test_a_csv_as_spreadsheets_write_it_reads_as_the_plain_one(tmp_path, text):
    plain = tmp_path / "plain.csv"
    plain.write_text("epoch,val_top1\n1,0.5\n2,0.75\n")
    other = tmp_path / "other.csv"
    other.write_text(text)
    want = import_log("csv", plain, global_batch=8, dataset_size=80)
    got = import_log("csv", other, global_batch=8, dataset_size=80)
    assert [(e.epoch, e.metric) for e in got.evals] == [(e.epoch, e.metric) for e in want.evals] == [(1.0, 0.5), (2.0, 0.75)]
    assert got.workload.metric == "val_top1"


def test_unknown_direction_asks_for_goal(tmp_path):
    path = tmp_path / "odd.csv"
    path.write_text("epoch,val_widgets\n1,3\n")
    with pytest.raises(InputError, match="--goal max"):
        import_log("csv", path, global_batch=8, dataset_size=80)
    assert import_log("csv", path, global_batch=8, dataset_size=80, goal="min").workload.goal == "min"


def _another_run(tmp_path) -> Path:
    """A CSV log of another run of the bundled logs' job (those are one run, logged by each library)."""
    path = tmp_path / "second.csv"
    path.write_text("epoch,val_accuracy\n1,0.6875\n2,0.8125\n3,0.84375\n4,0.90625\n")
    return path


def test_append_adds_a_second_run_with_the_next_seed(tmp_path):
    out = tmp_path / "p.jsonl"
    import_log("tensorboard", TENSORBOARD, out=out, global_batch=B, dataset_size=N)
    import_log("csv", _another_run(tmp_path), out=out, append=True, global_batch=B, dataset_size=N, metric="val_accuracy", goal="max")
    profile = read_profile(out)
    assert sorted({e.seed for e in profile.evals}) == [0, 1] and len(profile.evals) == 8
    assert profile.workload.name == "tiny"


def test_the_same_run_through_another_logger_is_not_a_second_run(tmp_path, capsys):
    # The bundled logs are one run written by each library: its MLflow copy appended to its
    # TensorBoard import became "seed 1", and the fit counted every point twice.
    out = tmp_path / "p.jsonl"
    import_log("tensorboard", TENSORBOARD, out=out, global_batch=B, dataset_size=N)
    before = out.read_bytes()
    with pytest.raises(InputError, match="already holds these 4 points as seed 0 at global batch 16: the same run "
                                         "imported twice"):
        import_log("mlflow", MLRUNS, out=out, append=True, global_batch=B, dataset_size=N, metric="val_accuracy")
    code, _, err = _cli(capsys, "import", "csv", str(CSV), "--out", str(out), "--append", "--global-batch", "16")
    assert code == 2 and "the same run imported twice" in err and err.count("\n") == 1, err
    assert out.read_bytes() == before


def test_existing_out_without_append_is_refused(capsys, tmp_path):
    out = tmp_path / "p.jsonl"
    out.write_text("keep me\n")
    code, _, err = _cli(capsys, "import", "csv", str(CSV), "--out", str(out), "--global-batch", "16", "--dataset-size", "96")
    assert code == 2 and "--append" in err and out.read_text() == "keep me\n"


def test_a_directory_as_out_is_named_as_such_not_sent_to_append(capsys, tmp_path):
    for flags in ((), ("--append",)):
        code, _, err = _cli(capsys, "import", "csv", str(CSV), "--out", str(tmp_path), "--global-batch", "16",
                            "--dataset-size", "96", *flags)
        assert code == 2 and "is a directory, not a profile file" in err and "--append" not in err, err


def test_append_to_another_workload_is_refused(tmp_path):
    out = tmp_path / "p.jsonl"
    import_log("csv", CSV, out=out, global_batch=B, dataset_size=N)
    with pytest.raises(InputError, match="dataset 96, goal max.*dataset 1000"):
        import_log("csv", CSV, out=out, append=True, global_batch=B, dataset_size=1000)


@pytest.mark.parametrize("content", ["{not json", '{"log_history": 3}'])
def test_damaged_trainer_state_is_one_line_exit_2(capsys, tmp_path, content):
    bad = tmp_path / "trainer_state.json"
    bad.write_text(content)
    code, _, err = _cli(capsys, "import", "hf-trainer", str(bad), "--out", str(tmp_path / "p.jsonl"))
    assert code == 2 and err.count("\n") == 1 and "trainer_state.json" in err


def test_a_directory_with_several_runs_asks_for_one(tmp_path):
    for run in ("a", "b"):
        shutil.copytree(TENSORBOARD, tmp_path / run)
    with pytest.raises(InputError, match="2 runs"):
        import_log("tensorboard", tmp_path, global_batch=B, dataset_size=N)


def test_imported_profile_with_probe_steps_recommends(tmp_path, synthetic_profile_path):
    # A curve from a log plus timing probes: the log's run supplies the accuracy side.
    from cotune import fit_models
    from cotune.profile import append_records

    synthetic = read_profile(synthetic_profile_path)
    out = tmp_path / "p.jsonl"
    import_log("csv", CSV, out=out, global_batch=B, dataset_size=N)
    append_records(out, synthetic.steps)
    models = fit_models(read_profile(out))
    assert models.accuracy.batches_.tolist() == [B]


def test_import_cotune_loads_no_log_package():
    code = "import cotune, cotune.logs, sys; print(sorted(m for m in ('tensorboard', 'mlflow', 'torch') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_file_that_is_no_mlflow_store_is_one_line_exit_2(capsys, tmp_path):
    code, _, err = _cli(capsys, "import", "mlflow", str(CSV), "--out", str(tmp_path / "p.jsonl"), "--global-batch", "16",
                        "--dataset-size", "96")
    assert code == 2 and err.count("\n") == 1 and "not an MLflow SQLite store" in err


def test_run_flag_is_for_mlflow_and_csv_only(capsys, tmp_path):
    code, _, err = _cli(capsys, "import", "hf-trainer", str(HF), "--out", str(tmp_path / "p.jsonl"), "--global-batch", "16",
                        "--dataset-size", "96", "--run", "x")
    assert code == 2 and "--run applies to formats mlflow and csv only" in err
    code, _, err = _cli(capsys, "import", "hf-trainer", str(HF), "--out", str(tmp_path / "p.jsonl"), "--global-batch", "16",
                        "--dataset-size", "96", "--run-column", "x")
    assert code == 2 and "--run-column applies to format csv only" in err


@pytest.mark.parametrize("fmt", ["hf-trainer", "csv", "lightning-csv", "mlflow"])  # mlflow said "no such file"
def test_a_device_instead_of_a_log_is_a_one_line_error(capsys, tmp_path, fmt):
    rc, out, err = _cli(capsys, "import", fmt, "/dev/zero", "--out", str(tmp_path / "p.jsonl"),
                        "--global-batch", "8", "--dataset-size", "100")
    assert rc == 2 and "not a regular file" in err and len(err.strip().splitlines()) == 1


def test_deeply_nested_trainer_state_is_a_one_line_error(capsys, tmp_path):
    deep = tmp_path / "trainer_state.json"
    deep.write_text("[" * 100_000)
    rc, out, err = _cli(capsys, "import", "hf-trainer", str(deep), "--out", str(tmp_path / "p.jsonl"),
                        "--global-batch", "8", "--dataset-size", "100")
    assert rc == 2 and "nested deeper" in err and "Traceback" not in err


def test_rows_without_a_number_on_the_x_axis_are_counted_in_a_note(capsys, tmp_path):
    # They used to vanish: "3 points" with no word that a fourth row was left out.
    path = tmp_path / "gappy.csv"
    path.write_text("epoch,val_acc\n1,0.5\n2,0.6\n,0.7\nthree,0.8\n4,0.9\n")
    code, out, _ = _cli(capsys, "import", "csv", str(path), "--out", str(tmp_path / "p.jsonl"), "--global-batch", "8",
                        "--dataset-size", "80", "--metric", "val_acc")
    assert code == 0
    assert "skipped 2 rows without a number in 'epoch'" in out and "3 points of 'val_acc'" in out
    assert [e.epoch for e in read_profile(tmp_path / "p.jsonl").evals] == [1.0, 2.0, 4.0]


@pytest.mark.parametrize("fmt, path", [("hf-trainer", HF), ("lightning-csv", LIGHTNING), ("csv", CSV)])
def test_logs_written_by_the_real_libraries_skip_nothing(fmt, path):
    from cotune.logs._readers import read_log

    log = read_log(fmt, path)
    assert log.series and log.notes == ()


def test_a_trainer_state_with_nan_and_infinity_imports_the_diverged_point(tmp_path):
    # Trainer writes its state with Python's json: a diverged eval and an fp16 overflow's
    # grad_norm come out as the literals NaN and Infinity, which strict JSON refuses.
    state = json.loads(HF.read_text())
    evals = [e for e in state["log_history"] if "eval_accuracy" in e]
    evals[-1]["eval_accuracy"] = math.nan
    next(e for e in state["log_history"] if "grad_norm" in e)["grad_norm"] = math.inf
    src = tmp_path / "trainer_state.json"
    src.write_text(json.dumps(state))  # Python's json writes NaN / Infinity
    assert "NaN" in src.read_text() and "Infinity" in src.read_text()
    profile = import_log("hf-trainer", src, out=tmp_path / "p.jsonl", metric="eval_accuracy", global_batch=B, dataset_size=N)
    assert len(profile.evals) == len(evals) and math.isnan(profile.evals[-1].metric)
    assert math.isnan(read_profile(tmp_path / "p.jsonl").evals[-1].metric)


def test_a_point_a_profile_cannot_hold_is_left_out_with_a_note(capsys, tmp_path):
    state = json.loads(HF.read_text())
    state["log_history"].insert(0, {"epoch": -1.0, "eval_accuracy": 0.5, "step": 1})
    src = tmp_path / "trainer_state.json"
    src.write_text(json.dumps(state))
    code, out, _ = _cli(capsys, "import", "hf-trainer", str(src), "--out", str(tmp_path / "p.jsonl"), "--metric",
                        "eval_accuracy", "--global-batch", str(B), "--dataset-size", str(N))
    assert code == 0 and "left out 1 point(s) of 'eval_accuracy' a profile cannot hold (field 'epoch'" in out
    assert all(e.epoch >= 0 for e in read_profile(tmp_path / "p.jsonl").evals)
    only_bad = tmp_path / "bad" / "trainer_state.json"
    only_bad.parent.mkdir()
    only_bad.write_text(json.dumps({"log_history": [{"epoch": 1e300, "eval_accuracy": 0.5, "step": 1}]}))
    code, _, err = _cli(capsys, "import", "hf-trainer", str(only_bad), "--out", str(tmp_path / "q.jsonl"),
                        "--global-batch", str(B), "--dataset-size", str(N))
    assert code == 2 and err.count("\n") == 1 and "has none a profile can hold (field 'epoch'" in err
    assert not (tmp_path / "q.jsonl").exists()


def test_a_step_time_a_profile_cannot_hold_is_not_written(capsys, tmp_path):
    src = tmp_path / "fast.csv"
    src.write_text("epoch,val_top1,samples_per_second\n1,0.5,1e15\n2,0.6,1e15\n")
    code, out, _ = _cli(capsys, "import", "csv", str(src), "--out", str(tmp_path / "p.jsonl"), "--global-batch", str(B),
                        "--dataset-size", str(N), "--gpu", "cpu", "--workers", "1")
    assert code == 0 and "not written, a profile cannot hold it (field 'step_time_s'" in out
    assert read_profile(tmp_path / "p.jsonl").steps == ()


# -- logs as other tools write them (found on public repositories, 2026-12-04) -----------------------
def test_keras_csv_epoch_index_becomes_passes_done(tmp_path):
    # keras.callbacks.CSVLogger writes the 0-based index of the epoch just finished.
    path = tmp_path / "training_log.csv"
    path.write_text("epoch,accuracy,loss,val_accuracy,val_loss\n0,0.41,1.7,0.539,1.2\n1,0.62,1.1,0.655,0.98\n"
                    "2,0.70,0.9,0.701,0.85\n")
    profile = import_log("keras-csv", path, global_batch=32, dataset_size=8000, metric="val_accuracy")
    assert [(e.epoch, e.metric) for e in profile.evals] == [(1.0, 0.539), (2.0, 0.655), (3.0, 0.701)]


def test_a_csv_epoch_column_counting_from_zero_points_to_keras_csv(tmp_path):
    path = tmp_path / "training_log.csv"
    path.write_text("epoch,val_accuracy\n0,0.539\n1,0.655\n2,0.701\n")
    profile = import_log("csv", path, global_batch=32, dataset_size=8000)
    assert any("import the log as format keras-csv" in n for n in profile.warnings)
    counted = tmp_path / "passes.csv"
    counted.write_text("epoch,val_accuracy\n1,0.539\n2,0.655\n3,0.701\n")
    assert not any("keras-csv" in n for n in import_log("csv", counted, global_batch=32, dataset_size=8000).warnings)


def _trainer_state(tmp_path, history) -> Path:
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"log_history": history, "train_batch_size": 16}))
    return path


def test_a_json_integer_beyond_float_range_in_a_log_is_read_as_infinite_not_a_crash(tmp_path):
    # JSON integers are unbounded: a step of 10**400 in trainer_state.json raised OverflowError
    # (exit 4; found by the import fuzz). It reads as the text '1e400' does: infinite; a point
    # at an infinite epoch is left out and said so.
    path = _trainer_state(tmp_path, [{"eval_loss": 0.9, "step": 100, "epoch": 1.0},
                                     {"eval_loss": 0.7, "step": 10**400, "epoch": 2.0},
                                     {"eval_loss": 0.6, "step": 300, "epoch": 10**400},
                                     {"eval_loss": 0.5, "step": 400, "epoch": 4.0}])
    profile = import_log("hf-trainer", path, global_batch=16, dataset_size=1600)
    # the point logged at an infinite epoch is left out; the one with a bogus step keeps its epoch
    assert sorted((e.epoch, e.metric) for e in profile.evals) == [(1.0, 0.9), (2.0, 0.7), (4.0, 0.5)]
    assert all(math.isfinite(e.epoch) for e in profile.evals)
    assert any("at an infinite step or epoch" in n for n in profile.warnings), profile.warnings


def test_a_training_series_picked_by_name_beside_a_validation_one_is_flagged(tmp_path):
    path = _trainer_state(tmp_path, [{"loss": 0.9, "step": 50, "epoch": 0.5}, {"loss": 0.6, "step": 100, "epoch": 1.0},
                                     {"eval_loss": 0.7, "step": 100, "epoch": 1.0}])
    profile = import_log("hf-trainer", path, global_batch=16, dataset_size=1600, metric="loss")
    assert [e.metric for e in profile.evals] == [0.9, 0.6]  # what was asked for ...
    assert any("'loss' is a training series" in n and "--metric eval_loss" in n for n in profile.warnings)  # ... said
    assert [e.metric for e in import_log("hf-trainer", path, global_batch=16, dataset_size=1600,
                                         metric="eval_loss").evals] == [0.7]


def test_a_metric_name_matching_several_validation_series_asks_for_one(tmp_path):
    path = _trainer_state(tmp_path, [{"eval_g0_accuracy": 0.5, "eval_g1_accuracy": 0.6, "step": 100, "epoch": 1.0}])
    with pytest.raises(InputError, match="matches several validation series \\(eval_g0_accuracy, eval_g1_accuracy\\)"):
        import_log("hf-trainer", path, global_batch=16, dataset_size=1600, metric="accuracy")


@pytest.mark.parametrize("name", ["eval_rouge1", "eval_rougeL", "ValAcc", "eval_matthews_correlation", "val_mcc",
                                  "eval_sacrebleu", "valAccuracy", "val_hr", "HR@10", "hit_rate"])
def test_common_higher_is_better_metrics_need_no_goal(tmp_path, name):
    path = tmp_path / "run.csv"
    path.write_text(f"epoch,{name}\n1,0.3\n2,0.4\n")
    assert import_log("csv", path, global_batch=8, dataset_size=80, metric=name).workload.goal == "max"


def test_rounded_trainer_epochs_are_recomputed_from_the_steps(tmp_path):
    # Older Trainers wrote round(epoch, 2): step 100 of 3137 a pass read 0.03 (6 % off).
    path = _trainer_state(tmp_path, [{"eval_loss": 2.0, "step": 100, "epoch": 0.03},
                                     {"eval_loss": 1.5, "step": 3137, "epoch": 1.0},
                                     {"eval_loss": 1.2, "step": 7748, "epoch": 2.47}])
    profile = import_log("hf-trainer", path, global_batch=16, dataset_size=50_190)
    assert [e.epoch for e in profile.evals] == pytest.approx([100 / 3137, 1.0, 7748 / 3137], rel=1e-9)


def test_exact_trainer_epochs_are_kept_as_logged(tmp_path):
    # epochs that do not agree with the steps to the 2-decimal rounding are the log's own
    path = _trainer_state(tmp_path, [{"eval_loss": 2.0, "step": 100, "epoch": 0.0123},
                                     {"eval_loss": 1.5, "step": 3137, "epoch": 1.0}])
    assert [e.epoch for e in import_log("hf-trainer", path, global_batch=16, dataset_size=50_190).evals] == [0.0123, 1.0]


def test_lightning_epoch_index_that_disagrees_with_the_flags_is_flagged(tmp_path):
    # 750 steps an epoch in the log; --dataset-size 48000 / batch 128 says 375
    rows = ["epoch,step,train_loss,val_acc"]
    for epoch in range(3):
        rows += [f"{epoch},{epoch * 750 + 49},0.5,", f"{epoch},{epoch * 750 + 749},,0.{7 + epoch}"]
    path = tmp_path / "metrics.csv"
    path.write_text("\n".join(rows) + "\n")
    wrong = import_log("lightning-csv", path, global_batch=128, dataset_size=48_000, metric="val_acc")
    assert any("the log implies 750 steps per epoch" in n and "gives 375: check both" in n for n in wrong.warnings)
    right = import_log("lightning-csv", path, global_batch=64, dataset_size=48_000, metric="val_acc")
    assert [e.epoch for e in right.evals] == [1.0, 2.0, 3.0] and not any("check both" in n for n in right.warnings)


def test_a_metric_logged_without_a_step_is_refused(tmp_path):
    run = tmp_path / "mlruns" / "1" / "abc"
    (run / "metrics").mkdir(parents=True)
    (run / "metrics" / "val_accuracy").write_text("1700000000000 0.8912 0\n")
    with pytest.raises(InputError, match="every point of 'val_accuracy' is at epoch 0.*step="):
        import_log("mlflow", run, global_batch=32, dataset_size=5000)


def test_append_names_the_seed_it_wrote_in_every_note(tmp_path):
    out = tmp_path / "p.jsonl"
    import_log("csv", CSV, out=out, global_batch=B, dataset_size=N)
    again = import_log("csv", _another_run(tmp_path), out=out, append=True, global_batch=B, dataset_size=N)
    assert {e.seed for e in again.evals} == {1}
    assert not any("seed 0" in n for n in again.warnings) and any(", seed 1" in n for n in again.warnings)


def test_the_cli_offers_every_log_format():
    from cotune.cli._import import _FORMATS
    from cotune.logs import FORMATS

    assert _FORMATS == FORMATS


def test_a_rate_logged_once_yields_to_the_wall_clock_of_the_steps(tmp_path):
    # Trainer through TensorBoard: train/train_steps_per_second is the run summary, pauses included.
    path = tmp_path / "run.csv"
    path.write_text("step,train_loss,train_steps_per_second,val_loss\n1,1.0,,\n2,0.9,,\n3,0.8,,0.85\n4,0.7,,\n5,0.6,0.5,0.65\n")
    assert import_log("csv", path, global_batch=8, dataset_size=24, gpu="cpu", workers=1).steps[0].step_time_s == 2.0
    from cotune.logs import ImportOptions, LogData, Series, log_to_records

    walls = np.array([0.0, 0.25, 0.5, 3.0, 3.25])  # an evaluation pause between steps 3 and 4
    log = LogData(format="tensorboard", source="t", run_name="r", series={
        "train/loss": Series("train/loss", np.arange(1.0, 6.0), np.linspace(1, 0.6, 5), wall_time_s=walls),
        "train/train_steps_per_second": Series("train/train_steps_per_second", np.array([5.0]), np.array([0.5])),
        "eval/loss": Series("eval/loss", np.array([3.0, 5.0]), np.array([0.85, 0.65])),
    })
    records, notes = log_to_records(log, ImportOptions(global_batch=8, dataset_size=24, gpu="cpu", workers=1))
    (step,) = [r for r in records if r.kind == "step"]
    assert step.step_time_s == 0.25 and any("wall-clock times of 'train/loss'" in n for n in notes)


# -- tables as spreadsheets and hand-written loops leave them (fuzzing the door, 2026-12-04) ---------
def test_a_csv_column_named_twice_is_refused(tmp_path):
    path = tmp_path / "dup.csv"
    path.write_text("epoch,val_top1,val_top1\n1,0.1,0.5\n2,0.2,0.6\n")
    with pytest.raises(InputError, match="column 'val_top1' appears 2 times in the header"):
        import_log("csv", path, global_batch=16, dataset_size=96)


def test_a_csv_with_a_byte_order_mark_reads_its_first_column(tmp_path):
    path = tmp_path / "excel.csv"
    path.write_bytes("\ufeffepoch,val_top1\n1,0.1\n2,0.2\n".encode("utf-8"))
    assert [e.epoch for e in import_log("csv", path, global_batch=16, dataset_size=96).evals] == [1.0, 2.0]


def test_a_cell_that_is_not_a_number_is_counted_in_a_note(tmp_path):
    path = tmp_path / "cells.csv"
    path.write_text("epoch,val_top1\n1,0.1\n2,oops\n3,0.3\n4_0,0.4\n")
    profile = import_log("csv", path, global_batch=16, dataset_size=96)
    assert [e.epoch for e in profile.evals] == [1.0, 3.0]  # '4_0' is no number a logger writes (float() reads 40)
    assert any("left out 1 cell(s) of 'val_top1' that are not numbers ('oops')" in n for n in profile.warnings)
    assert any("skipped 1 row without a number in 'epoch'" in n for n in profile.warnings)


def test_epochs_that_go_back_are_flagged_as_several_runs(tmp_path):
    path = tmp_path / "restarted.csv"
    path.write_text("epoch,val_top1\n1,0.1\n2,0.2\n1,0.15\n2,0.25\n")
    profile = import_log("csv", path, global_batch=16, dataset_size=96)
    assert any("go back 1 time(s)" in n and "--append" in n for n in profile.warnings)


def test_a_log_longer_than_a_profile_may_be_is_refused_before_writing(tmp_path, monkeypatch):
    import cotune.logs as logs

    monkeypatch.setattr(logs, "MAX_PROFILE_LINES", 5)  # the reader's cap, made small
    path = tmp_path / "long.csv"
    path.write_text("step,val_loss\n" + "".join(f"{k},{1 / k}\n" for k in range(1, 11)))
    out = tmp_path / "p.jsonl"
    with pytest.raises(InputError, match="would have 11 lines .*more than the 5 a profile may hold"):
        import_log("csv", path, out=out, global_batch=16, dataset_size=96)
    assert not out.exists()
    short = tmp_path / "short.csv"
    short.write_text("step,val_loss\n1,1.0\n2,0.5\n")
    import_log("csv", short, out=out, global_batch=16, dataset_size=96)
    with pytest.raises(InputError, match="would have 13 lines"):  # 3 lines there + 10 points
        import_log("csv", path, out=out, append=True, global_batch=16, dataset_size=96)
    assert len(read_profile(out).evals) == 2


def test_a_log_without_series_says_so_when_a_metric_is_named(tmp_path):
    path = _trainer_state(tmp_path, [])
    with pytest.raises(InputError, match="no series 'acc' \\(--metric\\); the log has no series with a step at all"):
        import_log("hf-trainer", path, global_batch=8, dataset_size=80, metric="acc")


def test_a_point_right_after_another_is_flagged_as_a_separate_validation(tmp_path):
    # Lightning: trainer.validate() after fit logs one more val row a step past the last epoch
    rows = ["epoch,step,val_acc"] + [f"{e},{e * 100 + 99},0.{5 + e}" for e in range(5)] + ["5,500,0.99"]
    path = tmp_path / "metrics.csv"
    path.write_text("\n".join(rows) + "\n")
    profile = import_log("lightning-csv", path, global_batch=16, dataset_size=1600, metric="val_acc")
    assert [e.epoch for e in profile.evals][-2:] == [5.0, 5.01]
    assert any("at nearly one epoch (5 and 5.01)" in n and "trainer.validate()" in n for n in profile.warnings)
    plain = tmp_path / "plain.csv"
    plain.write_text("\n".join(rows[:-1]) + "\n")
    assert not any("nearly one epoch" in n for n in import_log("lightning-csv", plain, global_batch=16, dataset_size=1600,
                                                               metric="val_acc").warnings)


@pytest.mark.parametrize(
    "flags, says",
    [
        (["--global-batch", str(N + 1)], f"global batch {N + 1} is more than --dataset-size {N}"),
        (["--global-batch", str(B), "--workers", "3", "--local-batch", "5"], "disagrees with --workers 3 × --local-batch 5"),
        (["--workers", "2", "--local-batch", "8", "--hosts", "3"], "--hosts 3 is more than --workers 2"),
    ],
    ids=["batch-over-data", "batch-disagrees", "hosts-over-workers"],
)
def test_contradictory_run_flags_are_refused_and_nothing_is_written(capsys, tmp_path, flags, says):
    # Each was written as given: a curve at a step larger than the training set, a curve at a
    # batch the run never had, a step record dropped with exit 0.
    out = tmp_path / "p.jsonl"
    code, _, err = _cli(capsys, "import", "csv", str(CSV), "--out", str(out), "--dataset-size", str(N), "--gpu", "cpu", *flags)
    assert code == 2 and err.count("\n") == 1 and says in err
    assert not out.exists()


def test_global_batch_agreeing_with_workers_local_batch_and_accumulation_is_accepted(tmp_path):
    profile = import_log("csv", CSV, global_batch=B, dataset_size=N, gpu="cpu", workers=2, local_batch=4, accum_steps=2)
    assert {e.global_batch for e in profile.evals} == {B}
    assert profile.steps[0].workers == 2 and profile.steps[0].local_batch == 4 and profile.steps[0].accum_steps == 2


def test_trainer_state_entries_that_are_not_objects_are_named_apart_from_those_without_a_step(capsys, tmp_path):
    # A bare number or null in log_history used to be counted as an "entry without a
    # number in 'step'" (and the plural read "entrys").
    path = _trainer_state(tmp_path, [{"eval_accuracy": 0.5, "step": 10, "epoch": 1.0}, 5, None,
                                     {"eval_accuracy": 0.6, "epoch": 2.0}, {"eval_accuracy": 0.7}])
    code, out, _ = _cli(capsys, "import", "hf-trainer", str(path), "--out", str(tmp_path / "p.jsonl"),
                        "--global-batch", "8", "--dataset-size", "80")
    assert code == 0
    assert "skipped 2 log_history entries that are not a JSON object" in out
    assert "skipped 2 log_history entries without a number in 'step'" in out


def test_fit_reports_the_accuracy_model_of_a_log_imported_without_step_times(capsys, tmp_path):
    # `cotune import` writes curves without step times (it says so); `cotune fit` then refused
    # the whole profile ("no step records: nothing to fit") instead of reporting the curve.
    out_path = tmp_path / "run.jsonl"
    assert _cli(capsys, "import", "hf-trainer", str(HF), "--out", str(out_path), "--global-batch", "64",
                "--dataset-size", "6400", "--metric", "eval_accuracy")[0] == 0
    code, out, err = _cli(capsys, "fit", str(out_path), "--no-cache")
    assert code == 0, err
    assert "Step-time model: not fitted, the profile has no step records" in out
    assert "Accuracy model: 4 eval records, 1 run " in out and "One measured global batch (64)" in out
    code, out, _ = _cli(capsys, "fit", str(out_path), "--no-cache", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["time"] == [] and doc["accuracy"]["batches"] == [64]


def test_a_baseline_that_ties_the_choice_reads_the_same_cost_not_minus_zero(capsys, tmp_path):
    # One imported run on 2 × t4: the resource-only baseline's 1 × t4 costs the same worker-hours,
    # and the comparison printed "co-tuning saves -0.0%".
    out_path = tmp_path / "run.jsonl"
    assert _cli(capsys, "import", "hf-trainer", str(HF), "--out", str(out_path), "--workers", "2", "--local-batch", "32",
                "--gpu", "t4", "--dataset-size", "384", "--metric", "eval_accuracy")[0] == 0
    code, out, _ = _cli(capsys, "recommend", str(out_path), "--target", "0.74", "--deadline", "10m", "--no-cache")
    assert code == 0
    assert "-0.0%" not in out and "→ the same cost" in out


def _two_halves(tmp_path):
    first, second = tmp_path / "first.csv", tmp_path / "second.csv"
    first.write_text("epoch,val_acc\n1,0.5\n2,0.6\n3,0.65\n")
    second.write_text("epoch,val_acc\n4,0.7\n5,0.72\n6,0.73\n")
    return first, second


_RUN = ("--global-batch", "8", "--dataset-size", "80", "--metric", "val_acc")


def test_a_run_split_at_a_restart_continues_under_its_seed(capsys, tmp_path):
    first, second = _two_halves(tmp_path)
    out = tmp_path / "p.jsonl"
    assert _cli(capsys, "import", "csv", str(first), "--out", str(out), *_RUN)[0] == 0
    assert _cli(capsys, "import", "csv", str(second), "--out", str(out), "--append", "--seed", "0", *_RUN)[0] == 0
    evals = read_profile(out).evals
    assert [e.epoch for e in evals] == [1, 2, 3, 4, 5, 6] and {e.seed for e in evals} == {0}


def test_the_same_run_imported_twice_under_its_seed_is_refused_and_nothing_is_written(capsys, tmp_path):
    # --seed 0 again appended every point a second time: the fit counted each twice.
    first, _ = _two_halves(tmp_path)
    out = tmp_path / "p.jsonl"
    assert _cli(capsys, "import", "csv", str(first), "--out", str(out), *_RUN)[0] == 0
    before = out.read_bytes()
    code, _, err = _cli(capsys, "import", "csv", str(first), "--out", str(out), "--append", "--seed", "0", *_RUN)
    assert code == 2 and "already holds seed 0 at global batch 8 up to epoch 3" in err and "Leave --seed out" in err
    assert out.read_bytes() == before


def test_appending_under_another_workload_name_is_refused(capsys, tmp_path):
    # --name was dropped without a word: the run went into the other workload's profile.
    first, second = _two_halves(tmp_path)
    out = tmp_path / "p.jsonl"
    assert _cli(capsys, "import", "csv", str(first), "--out", str(out), "--name", "a", *_RUN)[0] == 0
    code, _, err = _cli(capsys, "import", "csv", str(second), "--out", str(out), "--append", "--name", "b", *_RUN)
    assert code == 2 and "is workload 'a', not 'b'" in err
    assert _cli(capsys, "import", "csv", str(second), "--out", str(out), "--append", "--name", "a", *_RUN)[0] == 0


def test_a_metric_column_of_decimal_commas_is_named_as_such(capsys, tmp_path):
    # It read "no validation metric recognised (series: none): pass --metric NAME".
    path = tmp_path / "comma.csv"
    path.write_text('epoch,val_acc,notes\n1,"0,5",good\n2,"0,6",ok\n')
    for extra in ((), ("--metric", "val_acc")):
        code, _, err = _cli(capsys, "import", "csv", str(path), "--out", str(tmp_path / "p.jsonl"), *_RUN[:4], *extra)
        assert code == 2 and "column 'val_acc' holds no numbers (cells like '0,5'): decimal commas?" in err
        assert not (tmp_path / "p.jsonl").exists()


def test_a_text_column_beside_the_metric_says_nothing(capsys, tmp_path):
    path = tmp_path / "run.csv"
    path.write_text("epoch,val_acc,remark\n1,0.5,good\n2,0.6,ok\n")
    code, out, _ = _cli(capsys, "import", "csv", str(path), "--out", str(tmp_path / "p.jsonl"), *_RUN)
    assert code == 0 and "remark" not in out and "2 points of 'val_acc'" in out


def _pooled(tmp_path):
    path = tmp_path / "pooled.csv"
    path.write_text("run_id,epoch_num,eval_accuracy\n"
                    "v1/a/0,4,0.40\nv1/a/0,8,0.49\nv1/a/0,12,0.55\n"
                    "v1/a/1,4,0.41\nv1/a/1,8,0.50\n"
                    "v1/b/0,2,0.30\nv1/b/0,4,0.45\n")
    return path


_POOLED = ("--global-batch", "1664", "--dataset-size", "1281167", "--epoch-column", "epoch_num", "--metric", "eval_accuracy")


def test_a_csv_pooling_several_runs_asks_which_one(capsys, tmp_path):
    # MLPerf's published evaluations of 1,519 runs were read as one curve whose epochs went back
    # 1,518 times (with a note, exit 0).
    out = tmp_path / "p.jsonl"
    code, _, err = _cli(capsys, "import", "csv", str(_pooled(tmp_path)), "--out", str(out), *_POOLED)
    assert code == 2 and "holds 3 runs (column 'run_id': 'v1/a/0', 'v1/a/1', 'v1/b/0')" in err and "--run ID" in err
    assert not out.exists()


def test_run_picks_one_runs_rows_and_append_adds_the_next_as_another_seed(capsys, tmp_path):
    path, out = _pooled(tmp_path), tmp_path / "p.jsonl"
    assert _cli(capsys, "import", "csv", str(path), "--out", str(out), *_POOLED, "--run", "v1/a/0")[0] == 0
    assert _cli(capsys, "import", "csv", str(path), "--out", str(out), *_POOLED, "--run", "v1/a/1", "--append")[0] == 0
    evals = read_profile(out).evals
    assert [(e.seed, e.epoch) for e in evals] == [(0, 4.0), (0, 8.0), (0, 12.0), (1, 4.0), (1, 8.0)]


def test_an_unknown_run_names_those_that_contain_it_and_a_file_without_runs_refuses_run(capsys, tmp_path):
    path = _pooled(tmp_path)
    code, _, err = _cli(capsys, "import", "csv", str(path), "--out", str(tmp_path / "p.jsonl"), *_POOLED, "--run", "b/")
    assert code == 2 and "no run 'b/' in column 'run_id'; runs that contain it: 'v1/b/0'" in err
    plain = tmp_path / "plain.csv"
    plain.write_text("epoch,val_acc\n1,0.5\n2,0.6\n")
    code, _, err = _cli(capsys, "import", "csv", str(plain), "--out", str(tmp_path / "q.jsonl"), *_RUN, "--run", "x")
    assert code == 2 and "needs a column that names runs" in err


def test_run_column_names_the_column_of_runs(capsys, tmp_path):
    path = tmp_path / "sweep.csv"
    path.write_text("trial,epoch,val_acc\nt1,1,0.5\nt1,2,0.6\nt2,1,0.4\n")
    out = tmp_path / "p.jsonl"
    assert _cli(capsys, "import", "csv", str(path), "--out", str(out), *_RUN, "--run-column", "trial", "--run", "t2")[0] == 0
    assert [e.metric for e in read_profile(out).evals] == [0.4]


def _wandb_export(path: Path, *, step_s: float = 0.21) -> Path:
    # The columns of a Weights & Biases run's CSV download: _step, _runtime (seconds since
    # the start), _timestamp (Unix time), the logged keys; evaluations on every 500th row.
    rows = []
    for step in range(0, 2001, 50):
        row = {"_step": step, "_runtime": round(3.0 + step * step_s, 3), "_timestamp": 1.7e9 + 3.0 + step * step_s,
               "train/loss": 2.0 * math.exp(-step / 800), "epoch": step / 500}
        if step and step % 500 == 0:
            row["val/acc"] = 0.5 + 0.4 * (1 - math.exp(-step / 1000))
        rows.append(row)
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_a_wandb_export_gives_the_step_time_from_its_runtime_column(tmp_path):
    # Its clock columns were read as two more training series, and the step time was lost:
    # "the log has no step times".
    log = _wandb_export(tmp_path / "wandb.csv")
    p = import_log("csv", log, global_batch=256, dataset_size=128_000, step_column="_step", gpu="a100", workers=8,
                   local_batch=32)
    (step,) = p.steps
    assert step.step_time_s == pytest.approx(0.21, rel=1e-6) and step.timed_steps == 40
    assert any("wall-clock times of 'train/loss'" in n for n in p.warnings), p.warnings
    assert [round(e.epoch, 6) for e in p.evals] == [1.0, 2.0, 3.0, 4.0] and p.workload.metric == "val/acc"


def test_a_tensorboard_csv_download_gives_the_step_time_from_its_wall_time(tmp_path):
    # TensorBoard's "download CSV" of one scalar: Wall time, Step, Value; a file name that is
    # not the dashboard's says nothing of the tag.
    log = tmp_path / "val_acc.csv"
    pd.DataFrame({"Wall time": [1.7e9 + 0.33 * s for s in range(100, 3001, 100)], "Step": list(range(100, 3001, 100)),
                  "Value": [0.9 * (1 - math.exp(-s / 1000)) for s in range(100, 3001, 100)]}).to_csv(log, index=False)
    p = import_log("csv", log, global_batch=128, dataset_size=60_000, metric="Value", goal="max", gpu="v100",
                   workers=2, local_batch=64)
    assert p.steps[0].step_time_s == pytest.approx(0.33, rel=1e-6) and len(p.evals) == 30
    with pytest.raises(InputError, match=r"a TensorBoard CSV download holds one tag's values as 'Value': pass "
                                         r"--metric Value and --goal max or min"):
        import_log("csv", log, global_batch=128, dataset_size=60_000)  # the tag's name is not in the file


def test_a_tensorboard_csv_download_takes_its_tag_from_the_dashboards_file_name(tmp_path):
    # The dashboard names the file run-<run>-tag-<tag>.csv: the tag names the metric and its goal.
    log = tmp_path / "run-version_0-tag-val_acc.csv"
    steps = list(range(100, 3001, 100))
    pd.DataFrame({"Wall time": [1.7e9 + 0.33 * s for s in steps], "Step": steps,
                  "Value": [0.9 * (1 - math.exp(-s / 1000)) for s in steps]}).to_csv(log, index=False)
    p = import_log("csv", log, global_batch=128, dataset_size=60_000, name="resnet")
    assert (p.workload.metric, p.workload.goal) == ("val_acc", "max")
    assert [e.epoch for e in p.evals] == pytest.approx([s / math.ceil(60_000 / 128) for s in steps])  # optimizer steps
    assert any("read as 'val_acc' of run 'version_0', from the file's name" in n for n in p.warnings), p.warnings


def test_a_keras_tensorboard_download_reads_its_step_as_the_epoch_index(tmp_path):
    # Keras's TensorBoard callback writes epoch_* tags into runs train/ and validation/, each
    # at step = the 0-based index of the epoch just finished (as its event files, which the
    # tensorboard format reads the same way).
    log = tmp_path / "run-20261205-101500_validation-tag-epoch_accuracy.csv"
    pd.DataFrame({"Wall time": [1.7e9 + 60.0 * k for k in range(5)], "Step": list(range(5)),
                  "Value": [0.5, 0.62, 0.7, 0.74, 0.76]}).to_csv(log, index=False)
    p = import_log("csv", log, global_batch=128, dataset_size=60_000, name="resnet")
    assert p.workload.metric == "validation/epoch_accuracy" and p.workload.goal == "max"
    assert [e.epoch for e in p.evals] == [1.0, 2.0, 3.0, 4.0, 5.0]
    train = tmp_path / "run-train-tag-epoch_loss.csv"
    pd.read_csv(log).to_csv(train, index=False)
    with pytest.raises(InputError, match=r"no validation metric recognised \(series: train/epoch_loss\)"):
        import_log("csv", train, global_batch=128, dataset_size=60_000)  # the training half: not a target's curve


def test_a_named_time_column_must_hold_numbers_and_is_for_csv_only(tmp_path, capsys):
    log = _wandb_export(tmp_path / "wandb.csv")
    frame = pd.read_csv(log).assign(when="2026-12-05T10:00:00")
    frame.to_csv(log, index=False)
    common = ["import", "csv", str(log), "--out", str(tmp_path / "p.jsonl"), "--global-batch", "256",
              "--dataset-size", "128000", "--step-column", "_step"]
    code, _, err = _cli(capsys, *common, "--time-column", "when")
    assert code == 2 and "column 'when' (--time-column) holds no numbers (cells like '2026-12-05T10:00:00')" in err
    code, _, err = _cli(capsys, *common, "--time-column", "_step")
    assert code == 2 and "column '_step' is both the x axis and the wall clock" in err
    code, _, err = _cli(capsys, "import", "lightning-csv", str(log), "--out", str(tmp_path / "k.jsonl"), "--time-column", "_runtime")
    assert code == 2 and err == "cotune: --time-column and --time-unit apply to formats csv and keras-csv only\n"
    assert not (tmp_path / "p.jsonl").exists() and not (tmp_path / "k.jsonl").exists()


def _dawnbench_tsv(path: Path, *, epoch_h: float = 0.0112) -> Path:
    # The layout of a DAWNBench CIFAR-10 submission: epoch (0-based), cumulative hours of
    # training (each epoch's evaluation in it), test accuracy in percent; tab-separated.
    lines = ["epoch\thours\ttop1Accuracy"]
    lines += [f"{k}\t{(k + 1) * epoch_h:.8f}\t{94.5 * (1 - math.exp(-(k + 1) / 4)):.2f}" for k in range(12)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_an_epoch_indexed_log_with_a_clock_in_hours_gives_the_step_time_of_its_epochs(tmp_path):
    # It had no step time: the wall clock was read only against optimizer steps, and the
    # hours would have been read as seconds. An epoch is ⌈50,000 / 1,024⌉ = 49 steps.
    log = _dawnbench_tsv(tmp_path / "dawn.tsv")
    p = import_log("csv", log, global_batch=1024, dataset_size=50_000, metric="top1Accuracy",
                   gpu="v100", workers=8, time_column="hours")
    (step,) = p.steps
    assert step.step_time_s == pytest.approx(0.0112 * 3600 / 49, rel=1e-6) and step.local_batch == 128
    assert any("column 'hours' read as hours of wall-clock time (its name says so): pass --time-unit s" in n
               for n in p.warnings), p.warnings
    assert any("over 49 steps an epoch (its evaluations and checkpoints included: an upper bound)" in n
               for n in p.warnings), p.warnings
    minutes = import_log("csv", log, global_batch=1024, dataset_size=50_000, metric="top1Accuracy", gpu="v100",
                         workers=8, time_column="hours", time_unit="min")
    assert minutes.steps[0].step_time_s == pytest.approx(0.0112 * 60 / 49, rel=1e-6)
    assert not any("its name says so" in n for n in minutes.warnings)  # the unit given is the unit used
    # Its epoch column is the 0-based index Keras writes: keras-csv reads it, clock and all.
    keras = import_log("keras-csv", log, global_batch=1024, dataset_size=50_000, metric="top1Accuracy", gpu="v100",
                       workers=8, time_column="hours")
    assert keras.steps[0].step_time_s == pytest.approx(step.step_time_s) and keras.evals[0].epoch == 1.0


def test_a_published_dawnbench_submission_imports_with_its_step_time():
    # A real leaderboard entry (shared/data/dawnbench): 8 × V100, the batch its JSON states,
    # an epoch of ⌈50,000 / 1,024⌉ = 49 steps; the clock's median epoch read with pandas.
    from benchmarks.traces import data_root

    try:
        train = data_root() / "dawnbench" / "CIFAR10" / "train"
    except FileNotFoundError:  # pragma: no cover - CI and dev check shared/ out beside the repo
        pytest.skip("shared/data not found beside the repository")
    tsv = train / "BAIDU-USA-GAIT_BaiduNet9P_8GV100_pytorch.tsv"
    batch = int(json.loads(tsv.with_suffix(".json").read_text(encoding="utf-8"))["misc"]["batchSize"])
    frame = pd.read_csv(tsv, sep="\t")
    p = import_log("keras-csv", tsv, global_batch=batch, dataset_size=50_000, metric="top1Accuracy", gpu="v100",
                   workers=8, time_column="hours")
    assert p.steps[0].step_time_s == pytest.approx(np.median(np.diff(frame["hours"])) * 3600 / math.ceil(50_000 / batch))
    assert [e.metric for e in p.evals] == list(frame["top1Accuracy"]) and p.evals[-1].epoch == len(frame)


def test_a_published_mlperf_run_gives_its_step_time_from_its_evaluations_clock():
    # MLPerf's eval table (run_id, epoch_num, eval_accuracy, elapsed_s) has no training series:
    # its clock was left unread, and elapsed_s was not named as one. Checked against the
    # run's median epoch time that MLPerf's own log states (the runs table), over 770 steps.
    from benchmarks.traces import data_root

    try:
        root = data_root() / "mlperf-training-resnet50"
    except FileNotFoundError:  # pragma: no cover - CI and dev check shared/ out beside the repo
        pytest.skip("shared/data not found beside the repository")
    run = "v0.7/DellEMC/2xC4140/0"
    stated = pd.read_csv(root / "mlperf_resnet50_runs.csv").set_index("run_id").loc[run]
    common = dict(epoch_column="epoch_num", metric="eval_accuracy", global_batch=int(stated["global_batch_size"]),
                  dataset_size=1_281_167, run=run, gpu="v100", workers=8, hosts=2)
    unnamed = import_log("csv", root / "mlperf_resnet50_evals.csv", **common)
    assert not unnamed.steps and any("(if column 'elapsed_s' is a wall clock, name it: --time-column elapsed_s)" in n
                                     for n in unnamed.warnings), unnamed.warnings
    p = import_log("csv", root / "mlperf_resnet50_evals.csv", time_column="elapsed_s", **common)
    per_step = stated["median_epoch_time_s"] / math.ceil(1_281_167 / 1664)
    assert p.steps[0].step_time_s == pytest.approx(per_step, rel=0.02)  # evaluations inside: a little above


@pytest.mark.parametrize(("name", "clock"), [
    ("hours", True), ("elapsed_s", True), ("elapsed_min", True), ("wall_clock", True), ("epoch_end_elapsed_s", True),
    ("time", True), ("epoch_time_s", False), ("step_time", False), ("eval_accuracy", False), ("s", False),
    ("1;2", False), ("", False), ("_", False),  # no word at all: an IndexError once (the import fuzz found it)
])
def test_a_column_reads_as_a_clock_by_its_words(name, clock):
    from cotune.logs._readers import clock_like

    assert clock_like(name) is clock


def test_an_unnamed_clock_column_is_named_in_the_no_step_time_note_not_taken(tmp_path, capsys):
    log = _dawnbench_tsv(tmp_path / "dawn.tsv")
    p = import_log("csv", log, global_batch=1024, dataset_size=50_000, metric="top1Accuracy", gpu="v100", workers=8)
    assert p.steps == ()
    assert any("the log has no step times (if column 'hours' is a wall clock, name it: --time-column hours)" in n
               for n in p.warnings), p.warnings
    common = ["import", "csv", str(log), "--out", str(tmp_path / "p.jsonl"), "--global-batch", "1024",
              "--dataset-size", "50000", "--metric", "top1Accuracy"]
    code, _, err = _cli(capsys, *common, "--time-unit", "h")
    assert code == 2 and "--time-unit needs a clock column, and none was found: name it with --time-column NAME" in err
    code, _, err = _cli(capsys, *common, "--time-column", "hours", "--time-unit", "days")
    assert code == 2 and "invalid choice: 'days'" in err
    assert not (tmp_path / "p.jsonl").exists()


def test_a_wandb_export_without_an_epoch_column_names_its_step_counter(tmp_path, capsys):
    log = _wandb_export(tmp_path / "wandb.csv")
    pd.read_csv(log).drop(columns="epoch").to_csv(log, index=False)
    code, _, err = _cli(capsys, "import", "csv", str(log), "--out", str(tmp_path / "p.jsonl"), "--global-batch", "256",
                        "--dataset-size", "128000")
    assert code == 2 and "a Weights & Biases export's _step counts wandb.log calls" in err and err.count("\n") == 1


def test_a_table_of_records_imports_as_the_profile_it_came_from(tmp_path, capsys):
    # A sweep's export of step times at many configurations, and a table of curves: the
    # door for measurements that are no single run's log (Profile.from_frame behind it).
    import cotune

    example = cotune.load_profile("cifar10-resnet18")
    steps, evals = tmp_path / "steps.csv", tmp_path / "evals.csv"
    example.to_frame("steps").to_csv(steps, index=False)  # with its derived global_batch column
    example.to_frame("evals").drop(columns="job").to_csv(evals, index=False)
    out = tmp_path / "p.jsonl"
    code, said, _ = _cli(capsys, "import", "records", str(steps), "--record", "step", "--out", str(out),
                         "--name", "cifar10-resnet18", "--dataset-size", "50000", "--metric", "top1")
    assert code == 0 and said.strip() == f"wrote {out}: workload 'cifar10-resnet18', 1,512 steps"
    code, said, _ = _cli(capsys, "import", "records", str(evals), "--record", "eval", "--out", str(out), "--append")
    assert code == 0 and said.strip() == f"appended to {out}: workload 'cifar10-resnet18', 600 evals"
    back = read_profile(out)
    assert back.steps == example.steps and back.evals == example.evals and back.workload.goal == "max"
    question = dict(target=0.94, deadline_s=1800, max_workers=16, gpus_per_host=4, prices={"t4": 0.526})
    assert cotune.recommend(str(out), **question).chosen == cotune.recommend("cifar10-resnet18", **question).chosen


@pytest.mark.parametrize("extra, said", [
    (["--record", "step", "--metric", "acc"], "line 3: field 'step_time_s': must be a finite number >= 1e-06, got -0.1"),
    (["--metric", "acc"], "the table has no 'record' column and no type for its rows: name it with --record (record= from Python), one of"),
    (["--record", "step"], "a new profile needs the workload's metric: pass --metric"),
    (["--record", "step", "--metric", "acc", "--gpu", "t4", "--workers", "2"],
     "--gpu, --workers apply to the log formats, not to records"),
])
def test_a_bad_table_of_records_is_one_line_and_writes_nothing(tmp_path, capsys, extra, said):
    table = tmp_path / "sweep.csv"
    table.write_text("gpu,workers,local_batch,step_time_s\nt4,1,32,0.1\nt4,2,32,-0.1\n")
    out = tmp_path / "p.jsonl"
    code, _, err = _cli(capsys, "import", "records", str(table), "--out", str(out), "--dataset-size", "1000", *extra)
    assert code == 2 and said in err and err.count("\n") == 1 and not out.exists()


def test_record_is_for_the_table_format_and_append_must_agree(tmp_path, capsys):
    table = tmp_path / "sweep.csv"
    table.write_text("gpu,workers,local_batch,step_time_s\nt4,1,32,0.1\n")
    out = tmp_path / "p.jsonl"
    code, _, err = _cli(capsys, "import", "csv", str(table), "--record", "step", "--out", str(out))
    assert code == 2 and err == "cotune: --record applies to format records only (a table of profile records)\n"
    base = ["import", "records", str(table), "--record", "step", "--out", str(out)]
    assert _cli(capsys, *base, "--dataset-size", "1000", "--metric", "acc")[0] == 0
    code, _, err = _cli(capsys, *base, "--dataset-size", "1000", "--metric", "acc")
    assert code == 2 and "exists: pass --append" in err
    code, _, err = _cli(capsys, *base, "--append", "--dataset-size", "999")
    assert code == 2 and "with dataset_size 1000, not 999: leave --dataset-size out" in err
    assert len(read_profile(out).steps) == 1


def test_a_profile_of_step_times_alone_is_told_how_to_add_a_curve(tmp_path, capsys):
    out = tmp_path / "sweep.jsonl"
    assert _cli(capsys, "import", "records", str(LOGS / "sweep.csv"), "--record", "step",
                "--out", str(out), "--dataset-size", "50000", "--metric", "top1")[0] == 0
    code, _, err = _cli(capsys, "recommend", str(out), "--target", "0.9", "--deadline", "1h")
    assert code == 2 and "import the learning curve of a run you have (cotune import FORMAT LOG --out PROFILE --append)" in err


def test_a_run_appended_to_a_profile_takes_its_dataset_size(tmp_path, capsys):
    # It asked for --dataset-size, which the profile's workload record states.
    out = tmp_path / "p.jsonl"
    import_log("tensorboard", TENSORBOARD, out=out, global_batch=B, dataset_size=N)
    import_log("csv", _another_run(tmp_path), out=out, append=True, global_batch=B, metric="val_accuracy", goal="max")
    assert len(read_profile(out).evals) == 8 and read_profile(out).workload.dataset_size == N
    code, _, err = _cli(capsys, "import", "csv", str(CSV), "--out", str(out), "--append", "--global-batch", str(N + 1))
    assert code == 2 and f"global batch {N + 1} is more than the dataset size of {out}'s workload, {N}" in err


def test_a_table_with_columns_named_its_own_way_is_told_which_field_each_is_near(tmp_path, capsys):
    # A published trace's own column names (Sia SOSP'23 profiles: gpu_type, local_bsz, step_time)
    table = tmp_path / "trace.csv"
    table.write_text("gpu_type,local_bsz,placement,step_time,sync_time\nrtx,1024,1,0.31,0.0003\n")
    code, _, err = _cli(capsys, "import", "records", str(table), "--out", str(tmp_path / "p.jsonl"), "--name", "c",
                        "--dataset-size", "50000", "--metric", "top1", "--record", "step")
    assert code == 2 and err.count("\n") == 1
    assert ("the table's columns 'gpu_type' (is it 'gpu'?), 'local_bsz' (is it 'local_batch'?), 'step_time' (is it "
            "'step_time_s'?), 'sync_time' (is it 'sync_time_s'?) are no fields of a step record: read each from its "
            "column with --column gpu=gpu_type (repeatable; columns= in Python), or rename them") in err
    assert not (tmp_path / "p.jsonl").exists()


@pytest.mark.parametrize("flag", ["metric", "run", "name"])
def test_a_name_flag_of_thousands_of_characters_is_refused_in_brief(tmp_path, flag):
    # A 5,000-character --metric (or --run) was echoed whole in the one-line error that named
    # it ("cannot tell whether '999…' should go up or down", "no series '999…'": the importers' fuzz).
    from cotune.logs import import_table

    call = (lambda **kw: import_log("csv", LOGS / "run.csv", global_batch=16, dataset_size=96, **kw)) if flag == "run" \
        else (lambda **kw: import_table(LOGS / "sweep.csv", record="step", dataset_size=5, **{"name": "w", **kw}))
    with pytest.raises(InputError, match=rf"--{flag} must be a non-empty name of at most 200 characters, "
                                         r"got '9+\.\.\.' \(5000 characters\)") as info:
        call(out=tmp_path / "p.jsonl", **{flag: "9" * 5000}, **({} if flag == "metric" else {"metric": "top1"}))
    assert len(str(info.value)) < 300 and not (tmp_path / "p.jsonl").exists()


def test_a_metric_name_whose_goal_is_unclear_is_quoted_in_brief():
    from cotune.logs._convert import _goal

    with pytest.raises(InputError, match=r"cannot tell whether 'x+\.\.\.' \(190 characters\) should go up or down"):
        _goal("x" * 190, None)


def test_an_mlflow_run_name_tag_of_bytes_that_are_no_utf8_still_imports_the_run(tmp_path):
    # The tag file of the run name, damaged (a 0xff byte), was an internal error (the importers' fuzz).
    import shutil

    store = tmp_path / "mlruns"
    shutil.copytree(MLRUNS, store)
    tag = next(store.rglob("tags/mlflow.runName"))
    tag.write_bytes(b"\xff" + tag.read_bytes())
    profile = import_log("mlflow", store, global_batch=16, dataset_size=96, out=tmp_path / "p.jsonl")
    assert profile.workload.name.endswith(tag.read_bytes()[1:].decode().strip()) and len(profile.evals) == 4


def test_a_log_of_more_cells_than_the_cap_is_refused_while_it_is_read(tmp_path, monkeypatch):
    # Each cell became a few Python objects: a 44 MB log of 10 columns took 2.5 GB before the
    # import refused it for its number of records. The cap is lowered here to keep the file small.
    import cotune.logs._readers as readers

    monkeypatch.setattr(readers, "MAX_LOG_CELLS", 300)
    path = tmp_path / "long.csv"
    path.write_text("epoch,val_acc,loss\n" + "".join(f"{i + 1},0.5,1.0\n" for i in range(101)))
    with pytest.raises(InputError, match=r"more than 100 rows of 3 columns, more than the 300 cells a log may hold"):
        import_log("csv", path, global_batch=8, dataset_size=80)
    path.write_text("epoch,val_acc,loss\n" + "".join(f"{i + 1},0.5,1.0\n" for i in range(100)))
    assert len(import_log("csv", path, global_batch=8, dataset_size=80).evals) == 100


@pytest.mark.parametrize("fmt, path, cap", [
    ("hf-trainer", "examples/logs/hf-trainer/trainer_state.json", "MAX_JSON_LOG_BYTES"),
    ("csv", "examples/logs/run.csv", "MAX_LOG_BYTES"),
])
def test_a_log_over_its_formats_size_cap_is_refused_before_it_is_parsed(monkeypatch, fmt, path, cap):
    # A JSON log is parsed whole, ~9x its size in memory (122 MB took 1.0 GB): its cap is half
    # the CSV logs'. Lowered here to the bundled example's size minus one byte.
    import cotune.logs._readers as readers

    file = Path(__file__).resolve().parents[2] / path
    monkeypatch.setattr(readers, cap, file.stat().st_size - 1)
    metric = "eval_accuracy" if fmt == "hf-trainer" else None
    with pytest.raises(InputError, match=f"more than a {fmt} log's .* MiB limit"):
        import_log(fmt, file, global_batch=16, dataset_size=96, metric=metric)
    monkeypatch.setattr(readers, cap, file.stat().st_size)
    assert import_log(fmt, file, global_batch=16, dataset_size=96, metric=metric).evals


def _sqlite_store(path: Path, points: int) -> Path:
    """A SQLite store with MLflow's two tables as its reader queries them, one run."""
    import sqlite3

    db = sqlite3.connect(path)
    db.execute("CREATE TABLE runs (run_uuid TEXT, name TEXT, lifecycle_stage TEXT, start_time INTEGER)")
    db.execute("CREATE TABLE metrics (key TEXT, value REAL, timestamp INTEGER, step INTEGER, is_nan INTEGER, run_uuid TEXT)")
    db.execute("INSERT INTO runs VALUES ('r1', 'run', 'active', 0)")
    db.executemany("INSERT INTO metrics VALUES ('val_accuracy', ?, ?, ?, 0, 'r1')",
                   [(0.5 + i / (4 * points), 1000 * i, i) for i in range(1, points + 1)])
    db.commit()
    db.close()
    return path


def test_an_mlflow_run_of_more_points_than_the_cap_is_refused_while_it_is_read(tmp_path, monkeypatch):
    # Every point of every metric became a tuple; a store holds gigabytes of runs, and a run's
    # points were read whatever their number. The cap is lowered here to keep the stores small.
    import shutil

    import cotune.logs._readers as readers

    store = tmp_path / "mlruns"
    shutil.copytree(MLRUNS, store)
    points = sum(len(f.read_text().split("\n")) - 1 for f in store.rglob("metrics/*") if f.is_file())
    db = _sqlite_store(tmp_path / "mlflow.db", 12)
    for cap, ok in ((points - 1, False), (points, True)):
        monkeypatch.setattr(readers, "MAX_LOG_POINTS", cap)
        if ok:
            assert import_log("mlflow", store, global_batch=16, dataset_size=96).evals
        else:
            with pytest.raises(InputError, match=f"the run logged more than {cap} metric points"):
                import_log("mlflow", store, global_batch=16, dataset_size=96)
    monkeypatch.setattr(readers, "MAX_LOG_POINTS", 11)
    with pytest.raises(InputError, match="mlflow.db run r1: the run logged more than 11 metric points"):
        import_log("mlflow", db, global_batch=16, dataset_size=96)
    monkeypatch.setattr(readers, "MAX_LOG_POINTS", 12)
    assert len(import_log("mlflow", db, global_batch=16, dataset_size=96).evals) == 12


def test_tensorboard_event_files_over_the_cap_are_refused_before_they_are_loaded(monkeypatch):
    # The accumulator keeps every event as Python objects, whatever the files' size.
    pytest.importorskip("tensorboard")
    import cotune.logs._readers as readers

    size = sum(f.stat().st_size for f in TENSORBOARD.glob("*tfevents*"))
    monkeypatch.setattr(readers, "MAX_JSON_LOG_BYTES", size - 1)
    with pytest.raises(InputError, match="its event files hold 0 MiB, more than a tensorboard log's 0 MiB limit"):
        import_log("tensorboard", TENSORBOARD, global_batch=B, dataset_size=N)
    monkeypatch.setattr(readers, "MAX_JSON_LOG_BYTES", size)
    assert import_log("tensorboard", TENSORBOARD, global_batch=B, dataset_size=N).evals


def test_a_keras_csv_log_whose_epochs_start_at_one_is_told_it_reads_one_epoch_late(tmp_path):
    # DAWNBench's TSVs share CSVLogger's layout but count passes from 1: read as Keras's
    # 0-based index, every point was one epoch late, unsaid.
    path = tmp_path / "dawn.tsv"
    path.write_text("epoch\thours\ttop1Accuracy\n1\t0.0016\t56.39\n2\t0.0024\t71.19\n3\t0.0033\t78.0\n")
    keras = import_log("keras-csv", path, global_batch=512, dataset_size=50000, metric="top1Accuracy")
    assert [e.epoch for e in keras.evals] == [2.0, 3.0, 4.0]
    assert any("column 'epoch' starts at 1, where Keras's CSVLogger starts at 0" in n and "import the log as format csv"
               in n for n in keras.warnings)
    plain = import_log("csv", path, global_batch=512, dataset_size=50000, metric="top1Accuracy")
    assert [e.epoch for e in plain.evals] == [1.0, 2.0, 3.0]
    zero = tmp_path / "keras.csv"
    zero.write_text("epoch,val_accuracy\n0,0.5\n1,0.6\n")
    assert not any("starts at" in n for n in import_log("keras-csv", zero, global_batch=16, dataset_size=96).warnings)
