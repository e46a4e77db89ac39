"""A profile naming more GPU types than cotune fits is refused before any fit, at every door."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from cotune.models import MAX_GPU_TYPES

EXAMPLE = Path(__file__).resolve().parents[2] / "cotune/data/profiles/cifar10-resnet18.jsonl"


def _records(n_gpus: int) -> list[dict]:
    rows = [json.loads(line) for line in EXAMPLE.read_text().splitlines() if line.strip()]
    workload = next(r for r in rows if r["record"] == "workload")
    steps = [r for r in rows if r["record"] == "step"][::8]
    keep = ("record", "gpu", "workers", "hosts", "local_batch", "step_time_s")
    return ([{k: v for k, v in workload.items() if k != "source"}]
            + [{**{k: r[k] for k in keep if k in r}, "gpu": f"g{g}"} for g in range(n_gpus) for r in steps]
            + [{k: r[k] for k in ("record", "global_batch", "epoch", "metric", "seed")} for r in rows if r["record"] == "eval"])


def test_a_request_with_more_gpu_types_than_are_fitted_is_a_422_before_any_fit() -> None:
    from cotune.api import RequestError, recommend_request

    began = time.monotonic()
    with pytest.raises(RequestError) as info:
        recommend_request({"profile": {"records": _records(MAX_GPU_TYPES + 1)}, "target": 0.94, "deadline_s": 1800})
    assert info.value.status == 422 and f"names {MAX_GPU_TYPES + 1} GPU types" in info.value.detail
    assert (info.value.code, info.value.path) == ("invalid_profile", "/profile")
    # 1,000 GPU types within every record limit got no answer in 300 s; the refusal needs no fit
    assert time.monotonic() - began < 60


def test_the_cli_refuses_it_with_one_line_and_exit_2(tmp_path, capsys) -> None:
    from cotune.cli import main

    path = tmp_path / "many.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _records(MAX_GPU_TYPES + 8)))
    assert main(["recommend", str(path), "--target", "0.94", "--deadline", "30m", "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "keep the step records of the GPU types to plan on" in err


def test_as_many_gpu_types_as_the_cap_are_fitted() -> None:
    from cotune.models import fit_models
    from cotune.profile import parse_profile

    profile = parse_profile([json.dumps(r) + "\n" for r in _records(3)])
    assert sorted(fit_models(profile, n_bootstrap=0).time_models) == ["g0", "g1", "g2"]


def test_cotune_fit_refuses_them_too_before_any_fold_is_fitted(tmp_path, capsys) -> None:
    # validate_profile had no cap: `cotune fit` fitted 40 types, five folds each, in 77 s.
    from cotune.cli import main

    path = tmp_path / "many.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _records(MAX_GPU_TYPES + 8)))
    assert main(["fit", str(path), "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"names {MAX_GPU_TYPES + 8} GPU types; cotune fits at most {MAX_GPU_TYPES}" in err
