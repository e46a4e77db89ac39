"""The CLI's standard streams when they fail: a full disk behind stdout, a reader gone, a
stream closed at start. Each runs the real command in a subprocess: the faults are the
operating system's, and the interpreter's own flush at exit is part of what is tested."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

COTUNE = [sys.executable, "-m", "cotune"]
INFEASIBLE = ["recommend", "cifar10-resnet18", "--target", "0.999"]  # exit 1: no candidate reaches it
ANSWER = ["recommend", "cifar10-resnet18", "--target", "0.94", "--deadline", "30m"]


def _env(*, unbuffered: bool) -> dict[str, str]:
    """The environment with stdout block-buffered (a file or pipe's default) or unbuffered:
    the failure surfaces at the last flush in one and at the first write in the other."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    return env


def _into_closed_pipe(argv: list[str], *, unbuffered: bool) -> subprocess.CompletedProcess[str]:
    """``argv`` with stdout a pipe whose reader has already gone (``cotune … | head -0``)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([*COTUNE, *argv], stdout=write_end, stderr=subprocess.PIPE, text=True,
                              env=_env(unbuffered=unbuffered))
    finally:
        os.close(write_end)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("fmt", [[], ["--json"]], ids=["text", "json"])
def test_an_answer_onto_a_full_disk_is_one_line_and_exit_3(fmt, unbuffered):
    with open("/dev/full", "w") as full:
        done = subprocess.run([*COTUNE, *ANSWER, *fmt], stdout=full, stderr=subprocess.PIPE, text=True,
                              env=_env(unbuffered=unbuffered))
    assert done.returncode == 3, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("cotune: standard output: cannot write the answer: "
                                                                   "No space left on device"), done.stderr


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
def test_a_reader_gone_keeps_the_commands_own_exit_code_and_stderr_quiet(unbuffered):
    done = _into_closed_pipe(INFEASIBLE, unbuffered=unbuffered)
    assert (done.returncode, done.stderr) == (1, "")


def test_examples_into_a_pipe_closed_early_exits_0_without_a_word():
    done = _into_closed_pipe(["examples"], unbuffered=False)
    assert (done.returncode, done.stderr) == (0, "")


@pytest.mark.parametrize("fmt", [[], ["--json"]], ids=["text", "json"])
def test_a_closed_stdout_is_one_line_and_exit_3(fmt):
    # `>&-`: Python starts with sys.stdout None; text mode printed nothing and exited 0.
    done = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", *COTUNE, *ANSWER, *fmt], stderr=subprocess.PIPE,
                          text=True)
    assert done.returncode == 3, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("cotune: standard output is closed"), done.stderr


def test_answer_from_a_closed_stdin_is_one_line_and_exit_2():
    done = subprocess.run(["sh", "-c", 'exec "$@" <&-', "sh", *COTUNE, "k8s", "--answer", "-", "--json"],
                          capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "--answer -: standard input is closed" in done.stderr, done.stderr
    assert done.stdout == ""


MISSING = ["recommend", "no-such-profile.jsonl", "--target", "0.94", "--deadline", "30m"]  # exit 2: bad input


def test_with_stderr_closed_the_error_never_lands_among_the_data():
    # print(file=None) writes to stdout: the --json error document was preceded by the
    # "cotune: …" line (and a manifest by a warning), so no parser could read either.
    done = subprocess.run([*COTUNE, *MISSING, "--json"], stdout=subprocess.PIPE, text=True, env=_env(unbuffered=False),
                          preexec_fn=lambda: os.close(2))
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["code"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_with_stderr_full_a_bad_input_keeps_its_exit_code():
    # The error line's write failed inside main's handler and the process exited 1, which
    # reads "nothing feasible", for a missing file.
    with open("/dev/full", "w") as full:
        done = subprocess.run([*COTUNE, *MISSING], stdout=subprocess.PIPE, stderr=full, text=True,
                              env=_env(unbuffered=False))
    assert done.returncode == 2
