"""Bad input: one line 'cotune: ...' on stderr, exit code 2, no traceback, no probe started."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from profiler_helpers import run_cli, spec

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--workload", "nope.py:workload", "--out", "x.jsonl"], "not found"),
        (["--workload", "examples/digits_cnn.py", "--out", "x.jsonl"], "FILE.py:NAME"),
        (["--workload", "examples/digits_cnn.py:missing", "--out", "x.jsonl"], "no attribute 'missing'"),
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--workers", "1,x"], "whole numbers"),
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--workers", "1"], "both --workers"),
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--budget", "soon"], "duration"),
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--nnodes", "2"], "--rdzv-endpoint"),
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--curves", "30",
          "--curve-workers", "4"], "multiple of --curve-workers"),
        (["--out", "x.jsonl"], "--workload"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, needle, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    argv = [a if a != "x.jsonl" else str(tmp_path / "x.jsonl") for a in argv]
    code, err = run_cli(argv, capsys)
    assert code == 2
    assert err.startswith("cotune: ") and err.count("\n") == 1, err
    assert needle in err
    assert "Traceback" not in err
    assert not (tmp_path / "x.jsonl").exists()


def test_profile_of_another_workload_is_refused(tmp_path, capsys):
    out = tmp_path / "other.jsonl"
    out.write_text('{"record": "workload", "name": "something-else", "dataset_size": 10}\n')
    code, err = run_cli(["--workload", spec("tiny"), "--workers", "1", "--local-batch", "4", "--out", str(out),
                         "--device", "cpu"], capsys)
    assert code == 2 and "holds workload 'something-else'" in err and "another --out" in err


def test_python_dash_m_profiler_help_and_error():
    help_ = subprocess.run([sys.executable, "-m", "profiler", "--help"], cwd=ROOT, capture_output=True, text=True,
                           env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert help_.returncode == 0 and "--rdzv-endpoint" in help_.stdout and "--budget" in help_.stdout
    bad = subprocess.run([sys.executable, "-m", "profiler", "--workload", "x:y"], cwd=ROOT, capture_output=True,
                         text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert bad.returncode == 2 and bad.stderr.startswith("cotune: ") and "--out" in bad.stderr


def test_importing_profiler_does_not_import_torch():
    code = "import sys, profiler, profiler.cli; print('torch' in sys.modules, 'tensorflow' in sys.modules)"
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["False", "False"]
