"""Step times whose unit the log states in its own way: Lightning's ThroughputMonitor counts
micro-batches (gradient accumulation puts K of them in a step), Megatron-LM logs seconds an
iteration beside a 'throughput' in TFLOP/s, and a Trainer run resumed from a checkpoint keeps
the earlier session's evaluations in a log whose summary times this session alone. Each log is
written here, small, in the layout the library writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cotune.logs import import_log

from tests.logs.test_reruns_and_layouts import _event_file


def _accumulating_lightning_log(folder: Path) -> Path:
    """ThroughputMonitor's columns with accumulate_grad_batches=4: 'train/batches' climbs 4 a
    step, and its batches a second are micro-batches (20 a second: 0.2 s an optimizer step);
    'validate/*' is logged at the validation batch counter (1, 2, then 1, 2 again)."""
    folder.mkdir()
    rows = ["epoch,step,train/batches,train/device/batches_per_sec,val_acc,validate/batches"]
    for step in range(8):
        rows.append(f"{step // 4},{step},{4 * (step + 1)},20.0,,")
        if step % 4 == 3:
            rows += [",1,,,,1", ",2,,,,2", f"{step // 4},{step},,,0.{7 + step // 4},"]
    (folder / "metrics.csv").write_text("\n".join(rows) + "\n")
    return folder


def test_lightning_batches_per_sec_with_gradient_accumulation_is_accum_steps_batches_a_step(tmp_path):
    log = _accumulating_lightning_log(tmp_path / "m")
    profile = import_log("lightning-csv", log, metric="val_acc", global_batch=32, dataset_size=128, gpu="cpu",
                         workers=1, local_batch=8, accum_steps=4)
    assert profile.steps[0].step_time_s == pytest.approx(0.2)


def test_a_lightning_log_counting_more_batches_a_step_than_accum_steps_writes_no_step_time(tmp_path):
    log = _accumulating_lightning_log(tmp_path / "m")
    profile = import_log("lightning-csv", log, metric="val_acc", global_batch=32, dataset_size=128, gpu="cpu", workers=1)
    assert not profile.steps
    assert any("counts 4 batches a step" in n and "--accum-steps 4" in n for n in profile.warnings)


def test_lightning_validation_counters_going_back_are_no_restart(tmp_path):
    log = _accumulating_lightning_log(tmp_path / "m")
    profile = import_log("lightning-csv", log, metric="val_acc", global_batch=32, dataset_size=128)
    assert not any("go back" in n for n in profile.warnings)


def test_megatron_iteration_time_is_the_step_time_not_its_tflops_throughput(tmp_path):
    points = [p for it in range(10, 201, 10) for p in [(it, "lm loss", 2.0 + 10 / it), (it, "iteration-time", 4.0),
                                                       (it, "throughput", 150.0)]]
    points += [(it, "lm loss validation", 2.1 + 10 / it) for it in (50, 100, 150, 200)]
    _event_file(tmp_path, points)
    profile = import_log("tensorboard", tmp_path, global_batch=256, dataset_size=1_000_000, gpu="h100", workers=64,
                         hosts=8)
    assert profile.steps[0].step_time_s == pytest.approx(4.0)


def test_a_bare_throughput_column_gives_no_step_time(tmp_path):
    # its unit is not said (TFLOP/s, tokens/s, samples/s): 256 / 150 was written as seconds a step
    path = tmp_path / "run.csv"
    path.write_text("step,val_accuracy,throughput\n100,0.5,150\n200,0.6,150\n300,0.7,150\n")
    profile = import_log("csv", path, global_batch=256, dataset_size=25_600, gpu="h100", workers=8)
    assert not profile.steps


def test_a_resumed_trainer_run_takes_out_only_the_evaluations_of_its_own_session(tmp_path):
    # 8 epochs of 6 steps, resumed at step 12: the summary's 36 steps in 10 s held the 6
    # evaluations at steps 18..48 (1 s each), not the 2 of the earlier session
    history = [{"eval_loss": 1.0 / s, "eval_runtime": 1.0, "step": s, "epoch": s / 6} for s in range(6, 49, 6)]
    history.append({"train_runtime": 10.0, "train_steps_per_second": 3.6, "step": 48, "epoch": 8.0})
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"log_history": history, "train_batch_size": 16, "global_step": 48}))
    profile = import_log("hf-trainer", path, global_batch=16, dataset_size=96, gpu="cpu", workers=1)
    assert profile.steps[0].step_time_s == pytest.approx((10.0 - 6.0) / 36)
