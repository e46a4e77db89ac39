"""CLI: `recommend --json` prints the API document; `serve` without its extra is a clean exit 2."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest

from sched_helpers import BASE_REQUEST, REPO, without_timing

from cotune.api import recommend_request
from cotune.cli import main


@pytest.mark.slow
def test_recommend_json_is_the_api_document(capsys):
    code = main(["recommend", "cifar10-resnet18", "--target", "0.94", "--deadline", "1800", "--max-workers", "16", "--price", "t4=0.526", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert without_timing(out) == without_timing(json.loads(json.dumps(recommend_request(copy.deepcopy(BASE_REQUEST)))))


def test_serve_without_extra_prints_install_hint(monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in ("fastapi", "uvicorn") else real(name, *a))
    assert main(["serve"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'cotune[serve]'" in err[0]


def test_serve_rejects_missing_profile_dir(tmp_path, capsys):
    assert main(["serve", "--profile-dir", str(tmp_path / "absent")]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_import_cotune_stays_light():
    code = (
        "import sys, cotune, cotune.api, cotune.k8s; cotune.recommend_request; "
        "bad = [m for m in ('fastapi', 'uvicorn', 'starlette', 'torch', 'cotune.serve', 'yaml') if m in sys.modules]; "
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": ""}, check=True)
    assert out.stdout.strip() == "[]"


def test_serve_stopped_by_sigterm_says_so_in_one_line_and_exits_130():
    # Kubernetes stops a pod with SIGTERM: uvicorn drained, then re-raised it to the default
    # action, and the server died with 143 and nothing said.
    import signal

    from sched_server import server_process

    with server_process() as (_, proc):
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        err = proc.stderr.read().decode() if proc.stderr else ""
    assert code == 130
    assert err.strip().splitlines()[-1] == "cotune: stopped by SIGTERM"
