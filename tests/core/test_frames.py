"""pandas views of profiles and results."""

from __future__ import annotations

import pytest

from cotune import load_profile
from cotune.errors import ProfileError


def test_profile_frame_has_one_row_per_record_and_the_record_fields():
    profile = load_profile("cifar10-resnet18")
    frame = profile.to_frame()
    assert frame["record"].value_counts().to_dict() == {"step": len(profile.steps), "eval": len(profile.evals)}
    steps = profile.to_frame("steps")
    assert steps["step_time_s"].tolist() == [s.step_time_s for s in profile.steps]
    assert (steps["global_batch"] == steps["workers"] * steps["local_batch"] * steps["accum_steps"]).all()
    assert profile.to_frame("eval")["metric"].tolist() == [e.metric for e in profile.evals]


def test_profile_frame_of_an_unknown_record_type_is_refused():
    with pytest.raises(ProfileError, match="unknown record type 'stepz'"):
        load_profile("cifar10-resnet18").to_frame("stepz")


@pytest.fixture(scope="module")
def rec():
    import cotune

    return cotune.recommend("cifar10-resnet18", target=0.94, deadline_s=1800, budget=3.0)


def test_candidates_frame_has_every_evaluated_candidate_with_its_feasibility(rec):
    frame = rec.candidates_frame()
    assert len(frame) == rec.n_candidates and int(frame["feasible"].sum()) == rec.n_feasible
    # Feasibility is what the constraints say, row by row.
    meets = frame["reaches_target"] & (frame["time_at_confidence_s"] <= 1800)
    assert (frame["meets_deadline"] == meets).all()
    # The budget holds at the confidence the deadline does: the cost at it, not the median.
    assert (frame["within_budget"] == (frame["reaches_target"] & (frame["cost_at_confidence"] <= 3.0))).all()
    assert (frame["cost_at_confidence"] / frame["cost"]).where(frame["reaches_target"]).dropna().between(0.99, 1e9).all()
    assert (frame["feasible"] == frame["meets_deadline"] & frame["within_budget"]).all()
    assert (frame["time_lower_s"] <= frame["time_s"]).all() and (frame["cost_upper"] >= frame["cost"]).all()


def test_candidates_frame_marks_the_chosen_one(rec):
    frame = rec.candidates_frame()
    (row,) = frame[frame["chosen"]].itertuples()
    assert (row.gpu, row.workers, row.local_batch) == (rec.chosen.gpu, rec.chosen.workers, rec.chosen.local_batch)
    assert row.feasible and row.cost == rec.chosen.cost
    # The solver may prefer a safer near-tie, never a clearly costlier plan.
    assert row.cost <= 1.05 * frame.loc[frame["feasible"], "cost"].min()
    assert "p_reach" in frame  # the estimator's other per-candidate arrays come along
    assert int(frame["frontier"].sum()) == len(rec.pareto)


def test_frontier_frame_is_the_pareto_choices_fastest_first(rec):
    frame = rec.frontier_frame()
    assert frame["time_s"].tolist() == [c.time_s for c in rec.pareto]
    assert frame["time_s"].is_monotonic_increasing and frame["cost"].is_monotonic_decreasing


@pytest.mark.slow
def test_fit_report_frames():
    from cotune.models._validate import validate_profile

    report = validate_profile(load_profile("cifar10-resnet18"))
    held = report.held_out_frame()
    assert set(held["kind"]) == {"interpolated", "extrapolated"}
    t = report.time_frame().iloc[0]
    interp = held[held["kind"] == "interpolated"]
    # The report's K-fold error is the mean error of exactly these held-out rows.
    assert t["cv_mape"] == pytest.approx(float((interp["predicted_s"] / interp["measured_s"] - 1).abs().mean()))
    acc = report.accuracy_frame()
    assert acc["kind"].tolist()[0] == acc["kind"].tolist()[-1] == "extrapolated"
    assert acc["global_batch"].tolist() == list(report.accuracy.batches)
