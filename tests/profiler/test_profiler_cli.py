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
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--probe-budget", "soon"], "duration"),
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--nnodes", "2"], "--rdzv-endpoint"),
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--workers", "2,3", "--local-batch", "8",
          "--nnodes", "2", "--rdzv-endpoint", "127.0.0.1:29977"], "--workers 3 cannot be spread evenly over --nnodes 2"),
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--curves", "30",
          "--curve-workers", "4"], "multiple of --curve-workers"),
        (["--out", "x.jsonl"], "--workload"),
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--rdzv-endpoint", "127.0.0.1:99999"],
         "a port from 1 to 65535"),
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--rdzv-endpoint", "head"], "HOST:PORT"),
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--plan", "value"], "needs --target"),
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--deadline", "1h"], "add --plan value"),
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--plan", "value", "--target", "0.9",
          "--price", "t4=0.5", "--device", "cpu"], "this machine probes 'cpu'"),
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--plan", "value", "--target", "0.9",
          "--confidence", "2", "--device", "cpu"], "confidence"),
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--plan", "value", "--target", "0.9",
          "--price", "cpu=0.5", "--price", "cpu=0.6"], "--price gives 'cpu' twice"),
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--plan", "value", "--target", "0.9",
          "--workers", "1,2", "--local-batch", "8"], "chooses its own probes"),
        # A step larger than the training set (digits: 1,437 samples) — before any probe, not
        # a worker building a batch of 10^14 samples until the time-out.
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--workers", "1",
          "--local-batch", "99999999999999"], "more than the workload's 1,437 training samples"),
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--workers", "1,2",
          "--local-batch", "8,1024"], "choose local batches of at most 718 for 2 worker(s)"),
        # more workers than samples: no local batch fits, and 'at most 1' was the batch given
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--workers", "2000",
          "--local-batch", "1"], "use at most 1,437 workers (one sample each)"),
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--workers", "1",
          "--local-batch", "8", "--curves", "2048"], "--curves 2048 is more than"),
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--min-batch", "2048", "--max-batch",
          "4096"], "--min-batch 2048 is more than"),
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--min-batch", "64", "--max-batch", "16"],
         "--min-batch 64 is above --max-batch 16"),
        # A name the records would refuse after the probe ran (the step record's one-line rule).
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--device", "cpu", "--workers", "1",
          "--local-batch", "8", "--gpu", "t4\nforged"], "--gpu must be a non-empty one-line name"),
        # torch cannot start that many threads: every probe read as the workload's crash.
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--device", "cpu", "--workers", "1",
          "--local-batch", "8", "--cpu-threads", "100000"], "--cpu-threads 100000 is more than this host's"),
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--device", "cpu", "--workers", "1",
          "--local-batch", "8", "--retry-failed", "crash,ooms"], "--retry-failed: unknown failure kind 'ooms'"),
        (["--workload", "examples/digits_cnn.py:workload", "--out", "x.jsonl", "--device", "cpu", "--workers", "1",
          "--local-batch", "8", "--retry-failed=,"], "--retry-failed: name the failure kinds to run again"),
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
    assert help_.returncode == 0 and "--rdzv-endpoint" in help_.stdout and "--probe-budget" in help_.stdout
    bad = subprocess.run([sys.executable, "-m", "profiler", "--workload", "x:y"], cwd=ROOT, capture_output=True,
                         text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert bad.returncode == 2 and bad.stderr.startswith("cotune: ") and "--out" in bad.stderr


def test_importing_profiler_does_not_import_torch():
    code = "import sys, profiler, profiler.cli; print('torch' in sys.modules, 'tensorflow' in sys.modules)"
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["False", "False"]


_TINY = ("import torch\nfrom torch import nn\nfrom torch.utils.data import TensorDataset\nfrom profiler import Workload\n"
         "def data(n=64):\n    return TensorDataset(torch.randn(n, 2), torch.randint(0, 2, (n,)))\n")

_BAD_FACTORIES = {
    "raises": "def workload():\n    raise RuntimeError('factory fails')\n",
    "needs_an_argument": "def workload(x):\n    return x\n",
    # a training script whose main runs at import: it was exit 3 (a launcher fault) and no message
    "exits_at_import": "import sys\nsys.exit(3)\n",
    "no_samples": _TINY + ("workload = Workload(name='empty', model=lambda: nn.Linear(2, 2), train_data=lambda: data(0),\n"
                           "                    loss=nn.CrossEntropyLoss, optimizer=lambda p, *, lr: torch.optim.SGD(p, lr=lr),\n"
                           "                    base_lr=0.1, base_batch=8)\n"),
    "data_fails": (
        "import torch\nfrom torch import nn\nfrom profiler import Workload\n"
        "def bad_data():\n    raise RuntimeError('dataset missing: /data/x')\n"
        "workload = Workload(name='nods', model=lambda: nn.Linear(2, 2), train_data=bad_data, loss=nn.CrossEntropyLoss,\n"
        "                    optimizer=lambda p, *, lr: torch.optim.SGD(p, lr=lr), base_lr=0.1, base_batch=8)\n"),
}


@pytest.mark.parametrize(("kind", "needle"), [("raises", "calling workload() to build the workload failed with RuntimeError"),
                                              ("needs_an_argument", "a factory takes no arguments"),
                                              ("data_fails", "counting the training samples with train_data() failed"),
                                              ("exits_at_import", "called sys.exit(3)"),
                                              ("no_samples", "has 0 training samples (train_data() is empty)")])
def test_a_workload_that_fails_to_build_is_one_line_and_exit_2(kind, needle, capsys, tmp_path):
    # they were tracebacks with exit 1 ("nothing feasible")
    path = tmp_path / f"{kind}.py"
    path.write_text(_BAD_FACTORIES[kind])
    code, err = run_cli(["--workload", f"{path}:workload", "--workers", "1", "--local-batch", "8", "--no-curves",
                         "--out", str(tmp_path / "x.jsonl")], capsys)
    assert code == 2 and err.startswith("cotune: ") and err.count("\n") == 1 and needle in err, err
    assert not (tmp_path / "x.jsonl").exists()


def test_the_root_directory_as_the_profile_is_named_as_a_directory(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, err = run_cli(["--workload", "examples/digits_cnn.py:workload", "--out", "/", "--workers", "1",
                         "--local-batch", "8", "--no-curves"], capsys)
    assert code == 2 and err == "cotune: /: is a directory, not a profile file: give a file path\n", err  # was "PosixPath('/') has an empty name"


def test_an_out_path_in_a_loop_of_symbolic_links_is_one_line_and_exit_2(capsys, tmp_path, monkeypatch):
    # Path.resolve() raised RuntimeError: an internal error, exit 4.
    monkeypatch.chdir(ROOT)
    (tmp_path / "a.jsonl").symlink_to("b.jsonl")
    (tmp_path / "b.jsonl").symlink_to("a.jsonl")
    code, err = run_cli(["--workload", "examples/digits_cnn.py:workload", "--out", str(tmp_path / "a.jsonl"),
                         "--workers", "1", "--local-batch", "8", "--no-curves"], capsys)
    assert code == 2 and err.count("\n") == 1 and "a.jsonl: is a loop of symbolic links" in err, err


def test_a_directory_given_as_the_workload_file_is_named_as_such(capsys, tmp_path):
    code, err = run_cli(["--workload", f"{tmp_path}/:workload", "--out", str(tmp_path / "x.jsonl")], capsys)
    assert code == 2 and "is not a regular file" in err


def test_an_out_inside_a_file_is_bad_input_not_a_storage_fault(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    (tmp_path / "ok.jsonl").write_text("")
    code, err = run_cli(["--workload", "examples/digits_cnn.py:workload", "--out", str(tmp_path / "ok.jsonl" / "x.jsonl")],
                        capsys)
    assert code == 2 and "is a file, not a folder" in err  # it was 'File exists (EEXIST): fix the storage', exit 3


@pytest.mark.parametrize(("body", "needles"), [
    ("raise MemoryError()\n", ("failed with MemoryError", "raise the memory limit")),
    ("import cotune_no_such_module_xyz\n", ("'cotune_no_such_module_xyz' is not installed", "install it there")),
    ("raise ValueError('bad constant')\n", ("failed with ValueError: bad constant", "fix the workload file")),
])
def test_a_workload_file_that_fails_to_import_names_the_fix_for_its_cause(body, needles, capsys, tmp_path):
    # a memory limit too small for torch's import used to be blamed on the workload file
    path = tmp_path / "wl.py"
    path.write_text(body)
    code, err = run_cli(["--workload", f"{path}:workload", "--out", str(tmp_path / "x.jsonl")], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert all(n in err for n in needles), err
    assert not (tmp_path / "x.jsonl").exists()


def _nothing_ran():
    from profiler._settings import SessionSummary

    return SessionSummary(out="p.jsonl", gpu="cpu", ran=0, failed=0, skipped_done=0, skipped_oom=0, skipped_budget=0,
                          records_written=0, session_wall_s=0.0, probe_wall_s=0.0, probe_worker_s=0.0)


@pytest.mark.parametrize(("flag", "grouped"), [([], True), (["--launch-per-point"], False)])
def test_launch_per_point_reaches_the_session(flag, grouped, capsys, tmp_path, monkeypatch):
    import profiler._session

    seen = {}

    def fake_session(workload, **kwargs):
        seen.update(kwargs)  # nothing runs: only the arguments matter here
        return _nothing_ran()

    monkeypatch.setattr(profiler._session, "run_session", fake_session)  # the CLI imports it when it runs
    code, _ = run_cli(["--workload", spec("tiny"), "--out", str(tmp_path / "p.jsonl"), "--workers", "1",
                       "--local-batch", "4,8", "--no-curves", "--quiet", *flag], capsys)
    assert code == 0 and seen["timing_groups"] is grouped


@pytest.mark.parametrize(("flag", "kinds"), [([], []), (["--retry-failed"], ["crash", "timeout"]),
                                           (["--retry-failed", "oom,crash"], ["oom", "crash"])])
def test_retry_failed_reaches_the_session(flag, kinds, capsys, tmp_path, monkeypatch):
    import profiler._session

    seen = {}
    monkeypatch.setattr(profiler._session, "run_session", lambda workload, **kwargs: seen.update(kwargs) or _nothing_ran())
    code, _ = run_cli(["--workload", spec("tiny"), "--out", str(tmp_path / "p.jsonl"), "--workers", "1",
                       "--local-batch", "4", "--no-curves", "--quiet", *flag], capsys)
    assert code == 0 and seen["retry_failed"] == kinds


def test_quiet_says_how_to_rerun_a_run_whose_every_probe_failed(capsys, tmp_path, monkeypatch):
    import dataclasses

    import profiler._session

    failed = dataclasses.replace(_nothing_ran(), ran=2, failed=2, failed_kinds=("crash", "oom"))
    monkeypatch.setattr(profiler._session, "run_session", lambda workload, **kwargs: failed)
    code, err = run_cli(["--workload", spec("tiny"), "--out", str(tmp_path / "p.jsonl"), "--workers", "1",
                         "--local-batch", "4,8", "--no-curves", "--quiet"], capsys)
    assert code == 1 and err.count("\n") == 1, err
    assert err.startswith("cotune: every probe of this run failed (crash, oom): the logs under p.jsonl.cotune/logs/")
    assert err.rstrip().endswith("run the same command with --retry-failed crash,oom"), err  # was left out with --quiet


def test_a_workload_file_imports_the_modules_beside_it_as_a_script_would(tmp_path):
    from profiler._workload import load_workload

    (tmp_path / "mynet_cotune_test.py").write_text("from torch import nn\n\ndef make():\n    return nn.Linear(2, 2)\n")
    (tmp_path / "job.py").write_text(
        _TINY + "from mynet_cotune_test import make\n"
        "workload = Workload(name='split', model=make, train_data=data, loss=nn.CrossEntropyLoss,\n"
        "                    optimizer=lambda p, *, lr: torch.optim.SGD(p, lr=lr), base_lr=0.1, base_batch=8)\n")
    w = load_workload(f"{tmp_path / 'job.py'}:workload")  # was: "module 'mynet_cotune_test' is not installed"
    assert w.name == "split" and w.model().out_features == 2


def test_a_profile_of_the_same_workload_with_the_other_goal_is_refused(tmp_path, capsys):
    # Only name and dataset size were compared: probes of an accuracy workload went into a
    # profile whose goal is "min", where every eval point reads backwards.
    out = tmp_path / "tiny.jsonl"
    out.write_text('{"record": "workload", "name": "tiny", "dataset_size": 512, "metric": "loss", "goal": "min"}\n')
    code, err = run_cli(["--workload", spec("tiny"), "--workers", "1", "--local-batch", "4", "--out", str(out),
                         "--device", "cpu"], capsys)
    assert code == 2 and "goal min), not 'tiny' (512 samples, goal max)" in err


def test_a_bug_in_the_profiler_is_one_line_exit_4_not_an_input_error(monkeypatch, tmp_path, capsys):
    # A fault of ours is not the user's (nor the workload's): it reads as an internal error,
    # with the traceback kept in a file, not as a traceback or a "bad input" exit 2.
    import tempfile

    import profiler.cli as cli

    monkeypatch.delenv("COTUNE_DEBUG", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)

    def broken(args):
        raise KeyError("state")

    monkeypatch.setattr(cli, "_run", broken)
    code = cli.main(["--workload", "examples/digits_cnn.py:workload", "--out", str(tmp_path / "p.jsonl")])
    err = capsys.readouterr().err
    assert code == 4 and err.startswith("cotune: internal error (KeyError: 'state')") and err.count("\n") == 1
    (kept,) = tmp_path.glob("cotune-crash-*.txt")
    assert kept.read_text().startswith("cotune profile --workload examples/digits_cnn.py:workload")


def test_a_bare_value_error_is_ours_and_a_workload_error_is_the_users(monkeypatch, tmp_path, capsys):
    # The profiler's CLI caught every ValueError as bad input (exit 2): a numpy or
    # arithmetic fault of ours read as the user's. The user's own faults are InputErrors
    # (WorkloadError, the launcher's host checks) and keep exit 2 with their message.
    import tempfile

    import profiler.cli as cli
    from profiler import WorkloadError
    from profiler._launcher import TorchrunLauncher

    monkeypatch.delenv("COTUNE_DEBUG", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    argv = ["--workload", "examples/digits_cnn.py:workload", "--out", str(tmp_path / "p.jsonl")]

    def raising(exc):
        def run(args):
            raise exc
        return run

    monkeypatch.setattr(cli, "_run", raising(ValueError("operands could not be broadcast together")))
    assert cli.main(argv) == 4
    assert capsys.readouterr().err.startswith("cotune: internal error (ValueError: operands could not")

    monkeypatch.setattr(cli, "_run", raising(WorkloadError("w.py: no attribute 'workload': name it")))
    assert cli.main(argv) == 2
    assert capsys.readouterr().err == "cotune: w.py: no attribute 'workload': name it\n"

    with pytest.raises(ValueError) as caught:  # still a ValueError for Python callers
        TorchrunLauncher(nnodes=2)
    monkeypatch.setattr(cli, "_run", raising(caught.value))
    assert cli.main(argv) == 2
    assert "need a shared rendezvous" in capsys.readouterr().err


def test_the_old_budget_spelling_is_the_probe_budget_with_a_warning_and_not_both(monkeypatch, tmp_path, capsys):
    # `cotune recommend --budget 5` is $5; `cotune profile --budget 5` was 5 s of probing,
    # silently. It is spelt --probe-budget now; the old spelling warns.
    import profiler.cli as cli

    seen = {}

    def capture(args):
        seen["budget"] = args.budget
        return 0

    monkeypatch.setattr(cli, "_run", capture)
    out = str(tmp_path / "p.jsonl")
    assert cli.main(["--workload", "examples/digits_cnn.py:workload", "--out", out, "--budget", "10m"]) == 0
    assert seen["budget"] == 600.0
    err = capsys.readouterr().err
    assert err.startswith("cotune: warning: --budget here is the time spent probing (600 s)") and "--probe-budget" in err
    assert cli.main(["--workload", "examples/digits_cnn.py:workload", "--out", out, "--probe-budget", "90"]) == 0
    assert seen["budget"] == 90.0 and capsys.readouterr().err == ""
    code = cli.main(["--workload", "examples/digits_cnn.py:workload", "--out", out, "--budget", "1", "--probe-budget", "2"])
    assert code == 2 and "give one of them" in capsys.readouterr().err


def test_a_workload_name_bound_to_something_else_says_what_it_is(tmp_path):
    from profiler._workload import WorkloadError, load_workload

    (tmp_path / "job.py").write_text("workload = 5\n")
    with pytest.raises(WorkloadError, match=r"is an object of type 'int', not a profiler.Workload: build it with"):
        load_workload(f"{tmp_path / 'job.py'}:workload")


def _module(tmp_path, monkeypatch, name: str, body: str) -> str:
    """A module ``name`` on the import path, for the MODULE:NAME form of --workload."""
    (tmp_path / f"{name}.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


@pytest.mark.parametrize(("form", "body", "needle"), [
    ("file", "import sys\ndef workload():\n    sys.exit(0)\n", "the workload factory workload() called sys.exit(0)"),
    ("file", "import sys\ndef workload():\n    raise SystemExit('usage: train.py --data DIR')\n",
     "the workload factory workload() called sys.exit('usage: train.py --data DIR')"),
    ("module", "import sys\ndef workload():\n    sys.exit(0)\n", "the workload factory workload() called sys.exit(0)"),
    ("module", "import sys\nsys.exit(0)\n", "importing module 'cotune_t_exits' called sys.exit(0)"),
])
def test_a_sys_exit_in_the_factory_or_at_import_is_one_line_and_exit_2(form, body, needle, capsys, tmp_path,
                                                                        monkeypatch):
    # It ended the profiler silently with exit 0 (or 1 with no word of cotune's).
    if form == "file":
        (tmp_path / "job.py").write_text(body)
        target = str(tmp_path / "job.py")
    else:
        target = _module(tmp_path, monkeypatch, "cotune_t_exits", body)
    code, err = run_cli(["--workload", f"{target}:workload", "--workers", "1", "--local-batch", "8", "--no-curves",
                         "--out", str(tmp_path / "x.jsonl")], capsys)
    assert code == 2 and err.startswith("cotune: ") and err.count("\n") == 1 and needle in err, err
    assert 'if __name__ == "__main__":' in err and not (tmp_path / "x.jsonl").exists()


@pytest.mark.parametrize("fails", ["raise RuntimeError('boom at import')\n",
                                   "def workload():\n    raise SystemExit(0)\n"])
def test_a_workload_file_that_fails_to_load_runs_its_code_once(fails, capsys, tmp_path):
    # It was imported three times (once per attempt to tell PyTorch from TensorFlow and to
    # rebuild the message): a script's top-level code ran three times.
    runs = tmp_path / "runs.txt"
    (tmp_path / "job.py").write_text(f"with open({str(runs)!r}, 'a') as f:\n    f.write('ran\\n')\n{fails}")
    code, err = run_cli(["--workload", f"{tmp_path / 'job.py'}:workload", "--out", str(tmp_path / "x.jsonl")], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert runs.read_text() == "ran\n"


@pytest.mark.parametrize(("body", "needle"), [
    ("raise RuntimeError('boom at import')\n", "importing module 'cotune_t_broken' failed with RuntimeError: boom at "
                                               "import: fix the workload file"),
    ("def f(:\n", "importing module 'cotune_t_broken' failed with SyntaxError"),
    ("import cotune_no_such_module_xyz\n", "'cotune_no_such_module_xyz' is not installed"),
])
def test_a_module_that_fails_at_import_is_one_line_and_exit_2_as_a_file_is(body, needle, capsys, tmp_path,
                                                                           monkeypatch):
    # The module form reported it as a bug in cotune (exit 4, a traceback file).
    name = _module(tmp_path, monkeypatch, "cotune_t_broken", body)
    code, err = run_cli(["--workload", f"{name}:workload", "--out", str(tmp_path / "x.jsonl")], capsys)
    assert code == 2 and err.startswith("cotune: ") and err.count("\n") == 1 and needle in err, err


@pytest.mark.parametrize(("flag", "value", "needle"), [
    ("--probe-timeout", "1e12", "longer than the most any option takes, 365 days"),
    ("--curve-timeout", "400d", "longer than the most any option takes, 365 days"),
    ("--max-probe-time", "1e12", "longer than the most any option takes, 365 days"),
    ("--probe-budget", "1e300", "longer than the most any option takes, 365 days"),
    ("--seeds", "4611686018427387904", "seed 4611686018427387904 is outside 0 … 2147483647"),
    ("--seeds", "0,-1", "seed -1 is outside 0 … 2147483647"),
])
def test_a_duration_or_seed_out_of_range_is_refused_before_anything_runs(flag, value, needle, capsys, tmp_path,
                                                                         monkeypatch):
    # --probe-timeout 1e12 overflowed the load alarm (exit 4); a seed of 2**62 crashed every
    # curve in the worker, each recorded as the workload's crash.
    import profiler._session

    def no_session(workload, **kwargs):
        raise AssertionError("the session must not start")

    monkeypatch.setattr(profiler._session, "run_session", no_session)
    code, err = run_cli(["--workload", spec("tiny"), "--out", str(tmp_path / "p.jsonl"), "--workers", "1",
                         "--local-batch", "4", "--curves", "16", "--quiet", f"{flag}={value}"], capsys)
    assert code == 2 and err.startswith("cotune: ") and err.count("\n") == 1 and needle in err, err


def test_the_load_bound_takes_a_duration_beyond_its_alarms_range():
    import signal

    from profiler._workload import MAX_DURATION_S, bounded

    with bounded(1e12, "loading"):  # profile(probe=ProbeSettings(timeout_s=1e12)): was an OverflowError
        left, _ = signal.getitimer(signal.ITIMER_REAL)
    assert 0 < left <= MAX_DURATION_S and signal.getitimer(signal.ITIMER_REAL)[0] == 0


def test_profile_refuses_a_seed_out_of_range_before_any_probe(tmp_path):
    import profiler
    from cotune.errors import InputError

    class NoLaunch:
        hosts = 1

        def launch(self, request, *, poll=None):
            raise AssertionError("no probe may start")

    with pytest.raises(InputError, match=r"seed 4611686018427387904 is not a whole number from 0 to 2147483647"):
        profiler.profile(spec("tiny"), out=str(tmp_path / "p.jsonl"), workers=[1], local_batches=[4], curves=[16],
                         seeds=[2**62], launcher=NoLaunch(), quiet=True)
