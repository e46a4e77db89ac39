"""benchmarks.misspecified: the truths are what they say, a short run scores into fractions
that add up, and a job that raises is counted, not dropped."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from benchmarks import misspecified as ms
from benchmarks.misspecified import FAMILIES, REF_BATCH, main, make_truth, run, score_family

N_JOBS = 3


@pytest.fixture(scope="module")
def short_run(tmp_path_factory) -> dict:
    """``--quick`` on two families, 3 jobs each, in this process, read back from results.json."""
    out = tmp_path_factory.mktemp("misspecified")
    argv = ["--quick", "--families", "control,plateau", "--n-jobs", str(N_JOBS), "--jobs", "1", "--out", str(out)]
    assert main(argv) == 0
    assert (out / "report.md").read_text().startswith("# cotune under misspecified truths")
    return json.loads((out / "results.json").read_text())


def _fraction(x: object) -> bool:
    return isinstance(x, float) and math.isfinite(x) and 0.0 <= x <= 1.0


def test_the_registry_starts_with_the_control_and_describes_each_family() -> None:
    assert list(FAMILIES)[0] == "control"
    assert all(f.name == k and f.description and callable(f.make) for k, f in FAMILIES.items())


def test_the_reference_run_crosses_the_target_where_the_truth_says() -> None:
    # A run with factor f crosses at epochs(B_ref)·f, in every family: the profile's one
    # curve and the fresh runs come from the same truth.
    for name in FAMILIES:
        truth, _ = make_truth(name, 0)
        e = float(truth.epochs(REF_BATCH)) * 1.3
        before, after = truth.reference_curve(np.array([e * 0.99, e * 1.01]), 1.3)
        assert before < truth.target < after, name


def test_jobs_are_paired_across_families_and_differ_within_one() -> None:
    a, b = make_truth("control", 1)[0], make_truth("warmup", 1)[0]
    assert (a.target, a.s0, a.step_params) == (b.target, b.s0, b.step_params)
    assert make_truth("control", 2)[0].target != a.target


def test_a_short_run_scores_into_fractions_that_add_up(short_run: dict) -> None:
    fams = short_run["families"]
    assert list(fams) == ["control", "plateau"]
    assert len(short_run["job_results"]) == 2 * N_JOBS
    for name, fam in fams.items():
        assert fam["jobs"] == N_JOBS and fam["scored_jobs"] == N_JOBS and fam["errors"] == [], name
        # 16 workers x 4 local batches per job, each candidate in exactly one bin
        assert fam["candidates"] == 64 * N_JOBS == sum(b["n"] for b in fam["bins"]) == fam["coverage"]["n_step"]
        assert fam["coverage"]["n_time"] <= fam["coverage"]["n_epochs"] <= fam["candidates"]
        for b in fam["bins"]:
            assert b["jobs"] <= N_JOBS
            if b["n"]:
                assert _fraction(b["promised"]) and _fraction(b["delivered"]) and b["lo"] <= b["promised"] <= b["hi"]
                assert all(_fraction(x) for x in b["delivered_90"])
            else:
                assert b["promised"] is None and b["delivered"] is None
        for key in ("step", "epochs", "time"):
            assert _fraction(fam["coverage"][key]), (name, key)
        assert fam["reach_90"]["n"] == 0 or (_fraction(fam["reach_90"]["promised"]) and _fraction(fam["reach_90"]["delivered"]))
        for q, plans in fam["plans"].items():
            assert plans["plans"] + plans["no_plan"] == N_JOBS
            if plans["plans"]:
                assert _fraction(plans["promised"]) and _fraction(plans["delivered"]) and plans["promised"] >= float(q) - 1e-9
        for key in ("worst_bin", "worst_bin_plans"):
            w = fam[key]
            assert w is None or (-1.0 <= w["over_confidence"] <= 1.0 and w["n"] >= ms.MIN_BIN)
        assert fam["worst_bin_plans"] is None or fam["worst_bin_plans"]["lo"] >= 0.5
    # Inside the model's family the step-time model is the truth's: its 90 % interval must
    # hold most true step times (a scorer comparing the wrong rows reads near 0).
    assert fams["control"]["coverage"]["step"] > 0.5
    # The falling plateau is the truth P(reach) cannot see from one curve: fewer reach.
    assert fams["plateau"]["reach_90"]["delivered"] < fams["control"]["reach_90"]["delivered"]


def test_the_table_has_one_row_per_family_and_the_report_renders(short_run: dict) -> None:
    headers, rows = ms.table_rows(short_run)
    assert [r[0] for r in rows] == ["control", "plateau"] and all(len(r) == len(headers) for r in rows)
    assert "## plateau" in ms.markdown({**short_run, "command": "x", "date": "today"})


def test_a_job_that_raises_is_counted_and_listed(monkeypatch) -> None:
    def broken(truth, rng):
        raise ValueError("no such truth")

    monkeypatch.setitem(FAMILIES, "broken", ms.Family("broken", "raises", broken))
    data = run(["broken"], n_jobs=2, jobs=1)
    fam = data["families"]["broken"]
    assert fam["scored_jobs"] == 0 and fam["candidates"] == 0
    assert [e["job"] for e in fam["errors"]] == [0, 1] and "no such truth" in fam["errors"][0]["error"]
    assert ms.table_rows(data)[1][0][1] == "0 (0, 2)"


def test_score_family_with_no_jobs_scores_nothing() -> None:
    fam = score_family([])
    assert fam["candidates"] == 0 and fam["worst_bin"] is None and fam["plans"]["0.9"]["plans"] == 0


@pytest.mark.parametrize("argv", [["--families", "control,nope"], ["--n-jobs", "0"]])
def test_bad_options_exit_2_with_one_line(argv, capsys) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith("error:")
