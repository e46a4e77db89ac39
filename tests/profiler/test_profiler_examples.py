"""The example workloads run as real probes (short settings) and the script example trains."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from profiler_helpers import FAST, of, run_cli

from cotune.profile import read_profile

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_digits_cnn_profiles_and_learns(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "digits.jsonl"
    code, err = run_cli(["--workload", "examples/digits_cnn.py:workload", "--workers", "1", "--local-batch", "32",
                         "--curves", "32", "--max-epochs", "6", "--target", "0.9", "--noise", "--out", str(out),
                         *FAST], capsys)
    assert code == 0, err
    profile = read_profile(out)
    assert profile.workload.name == "digits-cnn" and profile.workload.dataset_size == 1437
    assert len(profile.steps) == 1 and profile.steps[0].step_time_s > 0
    assert profile.evals and max(e.metric for e in profile.evals) >= 0.9  # the CNN learns digits
    # One worker: the noise scale comes from the two halves of each batch.
    assert len(profile.noise) == len(profile.evals) and all(n.b_noise > 0 for n in profile.noise)


@pytest.mark.slow
def test_resnet_example_two_workers_and_a_curve(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "resnet.jsonl"
    code, err = run_cli(["--workload", "examples/resnet_synthetic.py:workload", "--workers", "2", "--local-batch",
                         "32", "--curves", "128", "--max-epochs", "2", "--out", str(out), *FAST], capsys)
    assert code == 0, err
    profile = read_profile(out)
    (step,) = profile.steps
    assert step.workers == 2 and step.sync_time_s is not None and step.step_time_s > 0
    assert [e.global_batch for e in profile.evals] == [128, 128]
    assert profile.evals[-1].metric > 0.2  # ten classes: chance is 0.1
    assert of(out, "curve_done")[0]["reason"] == "max_epochs"


@pytest.mark.slow
def test_script_example_still_trains_as_a_script_and_is_a_workload(capsys):
    from profiler import load_workload

    spec = str(ROOT / "examples/torch_script_workload.py") + ":workload"
    wl = load_workload(spec)
    assert wl.name == "wine-mlp" and wl.count_samples() == 140 * 16
    # The script's own loop, unchanged by the workload block (one epoch to stay quick).
    script = next(m for n, m in sys.modules.items() if n.startswith("cotune_workload_") and n.endswith(
        "torch_script_workload_py"))
    script.train(epochs=1)
    assert "epoch 1: accuracy" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["digits_cnn", "resnet_synthetic", "torch_script_workload"])
def test_examples_load_without_side_effects(name):
    from profiler import Workload, load_workload

    assert isinstance(load_workload(str(ROOT / "examples" / f"{name}.py") + ":workload"), Workload)
