"""`cotune fit` says how often the epochs interval held each held-out batch's measured epochs."""

from __future__ import annotations

import json

import pytest

import cotune
from _helpers import synthetic_records, write_jsonl
from cotune.models._validate import validate_profile

BATCHES = (64, 128, 256, 512, 1024, 2048)


def _report(tmp_path, records):
    return validate_profile(cotune.load_profile(str(write_jsonl(tmp_path / "p.jsonl", records)))).accuracy


def test_every_held_out_batch_of_a_profile_that_follows_the_law_is_held(tmp_path):
    a = _report(tmp_path, synthetic_records(global_batches=BATCHES))
    assert a.interval_count == len(BATCHES) and a.interval_covered == len(BATCHES)
    assert a.interval_coverage == 1.0 and a.interval == 0.9
    for lo, hi, m in zip(a.loo_lower, a.loo_upper, a.measured_epochs):
        assert lo < m < hi


def test_an_off_recipe_batch_is_not_held_by_the_interval_its_neighbours_predict(tmp_path):
    # Batch 512 learns three times slower than the law its neighbours follow: no honest
    # interval from the others holds it, and the report says so.
    records = [dict(r, epoch=round(r["epoch"] * 3, 4)) if r["record"] == "eval" and r["global_batch"] == 512 else r
               for r in synthetic_records(global_batches=BATCHES)]
    a = _report(tmp_path, records)
    i = BATCHES.index(512)
    assert not (a.loo_lower[i] <= a.measured_epochs[i] <= a.loo_upper[i])
    assert a.interval_count == len(BATCHES) and a.interval_covered == len(BATCHES) - 1


@pytest.mark.slow  # two `cotune fit` runs (about 4 s)
def test_the_terminal_and_json_reports_carry_the_coverage(tmp_path, capsys):
    from cotune.cli import main

    path = write_jsonl(tmp_path / "p.jsonl", synthetic_records(global_batches=BATCHES))
    assert main(["fit", str(path), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "90% INTERVAL" in out and f"held the measured epochs at {len(BATCHES)} of {len(BATCHES)} held-out batches" in out
    assert main(["fit", str(path), "--json"]) == 0
    acc = json.loads(capsys.readouterr().out)["accuracy"]
    assert acc["interval_coverage"] == pytest.approx(1.0) and len(acc["loo_lower"]) == len(BATCHES)


def test_the_report_names_the_memory_limit_the_search_keeps(tmp_path):
    from cotune.cli._render import render_fit_report

    oom = {"record": "failure", "gpu": "t4", "workers": 1, "local_batch": 128, "failure": "oom"}
    recs = synthetic_records()
    after = validate_profile(cotune.load_profile(str(write_jsonl(tmp_path / "a.jsonl", [*recs, oom]))))
    assert after.out_of_memory == (("t4", 128),)
    assert ("t4: local batch 128 ran out of memory (a failure record): recommend and replan search local batches below it"
            in render_fit_report(after))
    # the same out-of-memory before steps at 128 (a probe retried after a fix): no limit
    before = validate_profile(cotune.load_profile(str(write_jsonl(tmp_path / "b.jsonl", [recs[0], oom, *recs[1:]]))))
    assert before.out_of_memory == () and "ran out of memory" not in render_fit_report(before)
