"""A real TensorFlow probe: MultiWorkerMirroredStrategy with TF_CONFIG, two processes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from profiler_helpers import FAST, of, run_cli

from cotune.profile import read_profile

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                       reason="tensorflow not installed (CI: pip install tensorflow-cpu==2.21.0)"),
    pytest.mark.slow,
]

ROOT = Path(__file__).resolve().parents[2]


def test_tensorflow_probe_writes_the_same_records(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    machine_tmp = tmp_path / "machine-tmp"  # the temp dir the workers would inherit
    machine_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(machine_tmp))
    out = tmp_path / "tf.jsonl"
    code, err = run_cli(["--workload", "examples/digits_keras.py:workload", "--workers", "2", "--local-batch", "16,32",
                         "--curves", "64", "--max-epochs", "2", "--out", str(out),
                         *[a for a in FAST if a != "--quiet"]], capsys)
    assert code == 0, err
    assert "2 probes run" not in err and "3 probes run (0 failed) in 2 launches" in err  # both batches in one launch
    profile = read_profile(out)
    assert profile.workload.name == "digits-keras"
    assert [(s.workers, s.local_batch) for s in profile.steps] == [(2, 16), (2, 32)]
    for step in profile.steps:
        assert step.gpu == "cpu" and 0 < step.step_time_s < 5
        assert step.sync_time_s is not None and 0 <= step.sync_time_s <= step.step_time_s
        assert 5 <= step.timed_steps <= 15 and step.peak_memory_bytes > 0
    epochs = [e.epoch for e in profile.evals]
    assert len(epochs) == 2 and epochs[0] < epochs[1] and all(0 <= e.metric <= 1 for e in profile.evals)
    assert of(out, "curve_done")[0]["reason"] == "max_epochs"
    # Nothing left behind in the machine's temp dir (autograph's sources went with the probe's folder).
    assert not list(machine_tmp.iterdir())


def _run_digits_variant(tmp_path, capsys, *, out, workers: int, local_batch: str, body: str):
    """Profile a variant of the Keras digits workload written as ``body`` (``dataclasses``,
    ``os``, ``signal`` imported, the repository on the path); (exit code, stderr)."""
    wl = tmp_path / f"{out.stem}.py"
    wl.write_text(f"import dataclasses, os, signal, sys\nsys.path.insert(0, {str(ROOT)!r})\n" + body)
    return run_cli(["--workload", f"{wl}:workload", "--workers", str(workers), "--local-batch", local_batch,
                    "--out", str(out), "--no-curves", *FAST], capsys)


def test_tensorflow_simulated_oom_is_a_failure_record(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "tf_oom.jsonl"
    code, err = _run_digits_variant(tmp_path, capsys, out=out, workers=1, local_batch="8,32", body=(
        "from examples.digits_keras import workload as base\n"
        "workload = dataclasses.replace(base, simulate_oom_above=16)\n"))
    assert code == 0, err
    profile = read_profile(out)
    (failure,) = profile.failures
    assert failure.failure == "oom" and failure.local_batch == 32 and "simulated out of memory" in failure.message
    assert [s.local_batch for s in profile.steps] == [8]  # timed in the same launch, before the failure: kept


def test_a_tensorflow_worker_killed_from_outside_is_not_recorded_as_its_peers_crash(tmp_path, capsys, monkeypatch):
    from profiler._launcher import oom_kill_count

    if oom_kill_count() is None:
        pytest.skip("this kernel keeps no OOM-kill count: a SIGKILL reads as the OOM killer's, as documented")
    monkeypatch.chdir(ROOT)
    out = tmp_path / "tf_killed.jsonl"
    # worker 1 is killed (an operator's kill -9) while worker 0 goes on into a collective
    code, err = _run_digits_variant(tmp_path, capsys, out=out, workers=2, local_batch="16", body=(
        "from examples.digits_keras import make_model, workload as base\n"
        "def model():\n"
        "    if os.environ.get('RANK') == '1':\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "    return make_model()\n"
        "workload = dataclasses.replace(base, model=model)\n"))
    # Was exit 1 with a 'crash' record quoting worker 0's "UnavailableError: ... Collective ops is aborted".
    assert code == 3, err
    assert "killed by SIGKILL, and not by the kernel's out-of-memory killer" in err and err.count("\n") == 1, err
    assert not read_profile(out).failures


def test_tensorflow_value_plan_seeds_then_stops_with_its_reason(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "tfv.jsonl"
    code, err = run_cli(["--workload", "examples/digits_keras.py:workload", "--plan", "value", "--target", "0.9",
                         "--deadline", "5m", "--max-workers", "2", "--max-batch", "32", "--max-epochs", "2",
                         "--out", str(out), *[a for a in FAST if a != "--quiet"]], capsys)
    assert code == 0, err
    profile = read_profile(out)
    assert {(s.workers, s.local_batch) for s in profile.steps} >= {(1, 8), (1, 32), (2, 16)}
    assert {e.global_batch for e in profile.evals} == {16}
    assert err.rstrip().splitlines()[-1].startswith("value plan: ")


def test_tensorflow_timing_never_runs_past_max_steps(tmp_path, capsys, monkeypatch):
    # A whole chunk of 5 was added past the cap (--min-steps 3 --max-steps 5 timed 8), as
    # the torch worker once did.
    monkeypatch.chdir(ROOT)
    out = tmp_path / "tf.jsonl"
    code, err = run_cli(["--workload", "examples/digits_keras.py:workload", "--workers", "1", "--local-batch", "16",
                         "--no-curves", "--out", str(out), "--device", "cpu", "--warmup-steps", "1", "--min-steps", "3",
                         "--max-steps", "5", "--max-probe-time", "60s", "--precision", "0.000001", "--quiet",
                         "--no-sync-time"], capsys)
    assert code == 0, err
    timed = [s.timed_steps for s in read_profile(out).steps]
    assert timed and all(3 <= t <= 5 for t in timed), timed
