"""Logs written now by the real libraries (not the committed examples): the importer
keeps up with what today's Trainer, Lightning, SummaryWriter and MLflow write."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cotune.logs import import_log

pytestmark = pytest.mark.slow

_SPEC = importlib.util.spec_from_file_location(
    "make_logs", Path(__file__).resolve().parents[2] / "examples" / "logs" / "make_logs.py"
)
make_logs = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(make_logs)
N, B = make_logs.DATASET_SIZE, make_logs.GLOBAL_BATCH


def test_fresh_hf_trainer_state(tmp_path):
    pytest.importorskip("transformers")
    path = make_logs.write_hf_trainer(tmp_path)
    logged = [(e["epoch"], e["eval_loss"]) for e in json.loads(path.read_text())["log_history"] if "eval_loss" in e]
    profile = import_log("hf-trainer", path, metric="eval_loss", global_batch=B, dataset_size=N, gpu="cpu", workers=1)
    assert [(e.epoch, e.metric) for e in profile.evals] == logged and profile.workload.goal == "min"
    assert profile.steps[0].step_time_s > 0


def test_fresh_lightning_csv(tmp_path):
    pytest.importorskip("lightning")
    path = make_logs.write_lightning_csv(tmp_path)
    val = pd.read_csv(path).dropna(subset=["val_loss"])
    profile = import_log("lightning-csv", path, metric="val_loss", global_batch=B, dataset_size=N, gpu="cpu", workers=1)
    assert [e.metric for e in profile.evals] == val["val_loss"].tolist()
    assert [e.epoch for e in profile.evals] == [1.0, 2.0, 3.0, 4.0]
    assert profile.steps and profile.steps[0].step_time_s > 0


def test_fresh_lightning_tensorboard_gives_the_epochs_its_csv_log_gives(tmp_path):
    pytest.importorskip("lightning")
    pytest.importorskip("tensorboard")
    run = make_logs.write_lightning_tensorboard(tmp_path)
    assert (run / "hparams.yaml").is_file()
    profile = import_log("tensorboard", run, metric="val_acc", global_batch=B, dataset_size=N)
    assert [e.epoch for e in profile.evals] == [1.0, 2.0, 3.0, 4.0]  # 0-based steps read as done: 0.83, 1.83, ...
    assert any("a Lightning TensorBoard log" in n for n in profile.warnings)


def test_fresh_lightning_tensorboard_event_file_given_by_its_path_is_read_as_its_run(tmp_path):
    pytest.importorskip("lightning")
    pytest.importorskip("tensorboard")
    run = make_logs.write_lightning_tensorboard(tmp_path)
    (event_file,) = run.glob("*tfevents*")
    profile = import_log("tensorboard", event_file, metric="val_acc", global_batch=B, dataset_size=N)
    assert [e.epoch for e in profile.evals] == [1.0, 2.0, 3.0, 4.0]  # hparams.yaml is beside the file
    assert any("a Lightning TensorBoard log" in n for n in profile.warnings)


def test_fresh_tensorboard_step_time_matches_the_loop_clock(tmp_path):
    pytest.importorskip("tensorboard")
    run, gaps = make_logs.write_tensorboard(tmp_path)
    profile = import_log("tensorboard", run, global_batch=B, dataset_size=N, gpu="cpu", workers=1)
    # SummaryWriter stamps each point when add_scalar is called, right after the loop's own clock.
    assert min(gaps) - 1e-3 <= profile.steps[0].step_time_s <= max(gaps) + 1e-3
    assert [e.epoch for e in profile.evals] == [1.0, 2.0, 3.0, 4.0]


def test_fresh_mlflow_file_store(tmp_path):
    pytest.importorskip("mlflow")
    run = make_logs.write_mlflow(tmp_path)
    values = [float(line.split()[1]) for line in (run / "metrics" / "val_accuracy").read_text().splitlines()]
    profile = import_log("mlflow", tmp_path / "mlruns", global_batch=B, dataset_size=N)
    np.testing.assert_array_equal([e.metric for e in profile.evals], values)
    assert profile.workload.name == "tiny-run"


def test_fresh_mlflow_sqlite_store_needs_and_takes_a_run(tmp_path):
    pytest.importorskip("mlflow")
    pytest.importorskip("sqlalchemy")
    from cotune.errors import InputError

    db, first = make_logs.write_mlflow_sqlite(tmp_path)
    with pytest.raises(InputError, match="found 2 .*--run"):
        import_log("mlflow", db, global_batch=B, dataset_size=N)
    by_id = import_log("mlflow", db, run=first, global_batch=B, dataset_size=N, gpu="cpu", workers=1)
    by_uri = import_log("mlflow", f"sqlite:///{db}", run="second", global_batch=B, dataset_size=N)
    assert by_id.workload.name == "first" and by_uri.workload.name == "second"
    assert [e.epoch for e in by_id.evals] == [1.0, 2.0, 3.0, 4.0]
    # The same seeded loop as the file-store example: the same curve, from a different store.
    file_store = import_log("mlflow", make_logs_dir() / "mlruns", global_batch=B, dataset_size=N)
    np.testing.assert_allclose([e.metric for e in by_id.evals], [e.metric for e in file_store.evals], rtol=1e-6)
    assert by_id.steps[0].step_time_s > 0


def make_logs_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "examples" / "logs"


def test_fresh_keras_csv_logger(tmp_path):
    pytest.importorskip("keras")
    path = make_logs.write_keras_csv(tmp_path)
    logged = pd.read_csv(path)
    assert logged["epoch"].tolist() == [0, 1, 2, 3]  # CSVLogger's 0-based index of the epoch just finished
    profile = import_log("keras-csv", path, metric="val_accuracy", global_batch=B, dataset_size=N)
    assert [(e.epoch, e.metric) for e in profile.evals] == list(zip([1.0, 2.0, 3.0, 4.0], logged["val_accuracy"]))
    assert profile.workload.goal == "max"


def test_fresh_keras_tensorboard_gives_the_epochs_and_values_its_csv_logger_gives(tmp_path):
    # TF2 writes scalars as tensor summaries, which the reader did not see ("no scalar
    # summaries"), and Keras splits one run into train/ and validation/ ("2 runs").
    import subprocess
    import sys

    if importlib.util.find_spec("keras") is None or importlib.util.find_spec("tensorboard") is None:
        pytest.skip("needs keras and tensorboard")
    # In its own process: this one may already have loaded tensorboard without TensorFlow
    # (the reader's stub), after which TensorFlow's own import of it fails.
    script = ("import importlib.util, sys; s = importlib.util.spec_from_file_location('m', sys.argv[1]); "
              "m = importlib.util.module_from_spec(s); s.loader.exec_module(m); "
              "from pathlib import Path; m.write_keras_tensorboard(Path(sys.argv[2]))")
    done = subprocess.run([sys.executable, "-c", script, str(make_logs_dir() / "make_logs.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    logdir, csv_path = tmp_path / "keras-tb", tmp_path / "keras-tb.csv"
    logged = pd.read_csv(csv_path)
    profile = import_log("tensorboard", logdir, metric="validation/epoch_accuracy", global_batch=B, dataset_size=N)
    assert [e.epoch for e in profile.evals] == [1.0, 2.0, 3.0, 4.0]
    assert [e.metric for e in profile.evals] == pytest.approx(logged["val_accuracy"].tolist(), abs=1e-6)
    assert any("a Keras TensorBoard log" in n for n in profile.warnings)
