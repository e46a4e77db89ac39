"""What to measure next, through the recommend door (Python, JSON, the terminal)."""

from __future__ import annotations

import jsonschema

import cotune
from _helpers import synthetic_records, write_jsonl
from cotune.api import schema
from cotune.cli import main


def _profile(tmp_path, **kw):
    return write_jsonl(tmp_path / "p.jsonl", synthetic_records(**kw))


def test_recommend_names_an_unprobed_configuration_or_an_unmeasured_batch(tmp_path) -> None:
    path = _profile(tmp_path, workers=(1, 2), batches=(32, 64))
    rec = cotune.recommend(path, target=0.9, deadline_s=4 * 3600, max_workers=16, gpus_per_host=4, prices={"t4": 0.5})
    m = rec.next_measurement
    assert m is not None and m.price > 0 and m.expected_gain >= 0 and m.buy == (m.expected_gain > m.price)
    probed = {(r["workers"], r["hosts"], r["local_batch"]) for r in synthetic_records(workers=(1, 2), batches=(32, 64))
              if r["record"] == "step"}
    if m.kind == "step":
        assert (m.workers, m.hosts, m.local_batch) not in probed
    else:
        assert m.global_batch not in (64, 256, 1024) and m.epochs is not None and m.epochs > 0


def test_the_json_answer_carries_it_and_validates(tmp_path) -> None:
    path = _profile(tmp_path, workers=(1, 2), batches=(32, 64))
    doc = cotune.recommend(path, target=0.9, deadline_s=4 * 3600, max_workers=16, gpus_per_host=4).to_dict()
    jsonschema.Draft202012Validator(schema("recommend-response.v1")).validate(doc)
    nm = doc["next_measurement"]
    assert nm["kind"] in ("step", "short_run") and isinstance(nm["buy"], bool)
    assert "worker-hours" in nm["reason"]  # no prices: the cost unit is worker-hours


def test_models_given_without_a_profile_leave_it_out(tmp_path) -> None:
    path = _profile(tmp_path)
    models = cotune.fit_models(cotune.load_profile(path), n_bootstrap=0)
    rec = cotune.recommend(target=0.9, deadline_s=4 * 3600, models=models, max_workers=8)
    assert rec.next_measurement is None and rec.to_dict()["next_measurement"] is None


def test_the_terminal_prints_one_line_about_it(tmp_path, capsys) -> None:
    path = _profile(tmp_path, workers=(1, 2), batches=(32, 64))
    code = main(["recommend", str(path), "--target", "0.9", "--deadline", "4h", "--max-workers", "16", "--gpus-per-host", "4"])
    out = capsys.readouterr().out
    assert code == 0
    lines = [ln for ln in out.splitlines() if ln.startswith("Next measurement:")]
    assert len(lines) == 1 and ("worth measuring" in lines[0] or "no measurement is worth" in lines[0])


def test_an_extrapolated_plan_defers_to_the_next_measurement_instead_of_always_saying_probe() -> None:
    # The bundled CIFAR-10 profile with its probes on up to 4 workers only: a 10-minute
    # deadline needs more, so the plan's time is extrapolated.
    import dataclasses

    full = cotune.load_profile("cifar10-resnet18")
    small = dataclasses.replace(full, steps=tuple(s for s in full.steps if s.workers <= 4))
    rec = cotune.recommend(small, target=0.94, deadline_s=600, max_workers=16, gpus_per_host=4, prices={"t4": 0.526})
    assert rec.chosen is not None and rec.chosen.extrapolated and rec.next_measurement is not None
    note = [n for n in rec.notes if n.startswith("the chosen candidate is extrapolated")]
    assert len(note) == 1 and "next measurement says whether" in note[0]
    # Without the profile its probes are unknown: the note falls back to "probe it".
    bare = cotune.recommend(target=0.94, deadline_s=600, max_workers=16, gpus_per_host=4, prices={"t4": 0.526},
                            models=cotune.fit_models(small, n_bootstrap=0))
    assert bare.next_measurement is None
    assert any("probe it (cotune profile)" in n for n in bare.notes if n.startswith("the chosen candidate is extrapolated"))


def test_a_plan_past_probes_that_never_measured_sync_growth_says_so() -> None:
    # The bundled CIFAR-10 probes on one and two workers only: how sync grows with workers
    # is the prior; a 20-minute deadline needs more workers than that.
    import dataclasses

    full = cotune.load_profile("cifar10-resnet18")
    two = dataclasses.replace(full, steps=tuple(s for s in full.steps if s.workers <= 2))
    rec = cotune.recommend(two, target=0.94, deadline_s=1200, max_workers=16, gpus_per_host=4, prices={"t4": 0.526})
    assert rec.chosen is not None and rec.chosen.workers > 2
    assert any(n.startswith("how synchronisation grows past 2 workers on t4 is not measured") for n in rec.notes)
    measured = cotune.recommend(full, target=0.94, deadline_s=1200, max_workers=16, gpus_per_host=4, prices={"t4": 0.526})
    assert not any("how synchronisation grows" in n for n in measured.notes)


def test_a_start_up_that_leaves_no_time_makes_no_measurement_worth_anything() -> None:
    # The solver gives every candidate P(success) 0 when the start-up alone passes the
    # deadline; the value-of-information planner judged the time with the start-up inside
    # the spread and still named a gain.
    rec = cotune.recommend("cifar10-resnet18", target=0.9, deadline_s=1800, startup_s=5000, prices={"t4": 0.526})
    assert not rec.feasible and float(rec.estimates.p_success.max()) == 0.0
    m = rec.next_measurement
    assert m is not None and m.expected_gain == 0.0 and not m.buy


def test_the_value_of_a_measurement_does_not_depend_on_where_the_start_up_is_booked() -> None:
    # A start-up s in every time and the deadline D is the same question as no start-up,
    # every time s shorter and the deadline D − s: the spread scales the training only
    # (costs held as they are: the start-up is paid either way).
    import dataclasses

    import numpy as np

    from cotune.solver import option_gains, standard_options

    s = 600.0
    rec = cotune.recommend("cifar10-resnet18", target=0.9, deadline_s=1800, startup_s=s, prices={"t4": 0.526})
    est = rec.estimates
    shifted = dataclasses.replace(est, time_s=est.time_s - s, time_if_reached_s=est.time_if_reached_s - s)
    feasible = np.asarray(est.p_success) >= 0.5
    assert feasible.any()
    unprobed = np.zeros(len(est.candidates), bool)
    unprobed[np.argsort(est.cost)[:6]] = True
    opts = standard_options(est, unprobed=unprobed, step_price=np.full(len(est.candidates), 0.01))
    booked = option_gains(est, opts, feasible=feasible, deadline_s=1800.0, startup_s=s).gains
    moved = option_gains(shifted, opts, feasible=feasible, deadline_s=1800.0 - s).gains
    assert np.any(moved > 0)
    np.testing.assert_allclose(booked, moved, rtol=1e-9, atol=1e-12)
    none_left = option_gains(est, opts, feasible=np.zeros_like(feasible), deadline_s=1800.0, startup_s=1800.0).gains
    assert np.all(none_left == 0.0)
