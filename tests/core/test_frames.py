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


_WORKLOAD = {"name": "job", "dataset_size": 50_000, "metric": "top1", "goal": "max"}


@pytest.mark.parametrize("name", ["cifar10-resnet18", "imagenet-resnet50", "yolov3-voc"])
def test_a_profile_comes_back_whole_from_its_own_frame(name):
    # from_frame is to_frame's inverse: every record, its fields and its order, although
    # the stacked table turned the whole-number columns float and filled other types' cells NaN.
    from cotune.profile import Profile

    profile = load_profile(name)
    back = Profile.from_frame(profile.to_frame(), workload=profile.workload)
    assert back == profile.__class__(workload=profile.workload, steps=profile.steps, evals=profile.evals,
                                     failures=profile.failures, noise=profile.noise)
    steps = Profile.from_frame(profile.to_frame("steps"), workload=profile.workload, record="steps")
    assert steps.steps == profile.steps and not steps.evals


def test_a_profile_from_a_frame_answers_as_its_file_does():
    import cotune
    from cotune.profile import Profile

    profile = load_profile("cifar10-resnet18")
    question = dict(target=0.94, deadline_s=1800, max_workers=16, gpus_per_host=4, prices={"t4": 0.526})
    mine = cotune.recommend(Profile.from_frame(profile.to_frame(), workload=profile.workload), **question)
    theirs = cotune.recommend("cifar10-resnet18", **question)
    assert mine.chosen == theirs.chosen


def test_a_frame_row_is_checked_by_the_profile_rule_and_named_by_its_index():
    import pandas as pd

    from cotune.profile import Profile

    frame = pd.DataFrame({"gpu": ["t4", "t4"], "workers": [1, 2], "local_batch": [32, 32], "step_time_s": [0.1, -1.0]},
                         index=["a", "b"])
    with pytest.raises(ProfileError, match=r"row 'b': field 'step_time_s': must be a finite number >= 1e-06, got -1.0"):
        Profile.from_frame(frame, workload=_WORKLOAD, record="step")
    frame = pd.DataFrame({"gpu": ["t4"], "workers": [2.5], "local_batch": [32], "step_time_s": [0.1]})
    with pytest.raises(ProfileError, match=r"row 0: field 'workers': must be a whole number >= 1, got 2.5"):
        Profile.from_frame(frame, workload=_WORKLOAD, record="step")  # refused, never truncated to 2


def test_an_empty_cell_is_a_field_left_out_but_a_nan_metric_is_a_diverged_eval():
    import math

    import numpy as np
    import pandas as pd

    from cotune.profile import Profile

    frame = pd.DataFrame({
        "record": ["step", "eval", "eval"],
        "gpu": ["t4", None, None], "workers": [4, np.nan, np.nan], "local_batch": [32, np.nan, np.nan],
        "step_time_s": [0.2, np.nan, np.nan], "sync_time_s": [np.nan, np.nan, np.nan],
        "global_batch": [128, 128, 128], "epoch": [np.nan, 1.0, 2.0], "metric": [np.nan, 0.5, np.nan],
        "seed": [np.nan, 3, 3],
    })
    p = Profile.from_frame(frame, workload=_WORKLOAD)
    (step,) = p.steps
    assert step.sync_time_s is None and step.workers == 4 and isinstance(step.workers, int)
    assert [e.seed for e in p.evals] == [3, 3] and p.evals[0].metric == 0.5 and math.isnan(p.evals[1].metric)


def test_a_frame_whose_derived_global_batch_disagrees_is_refused():
    import pandas as pd

    from cotune.profile import Profile

    frame = pd.DataFrame({"record": ["step"], "gpu": ["t4"], "workers": [2], "local_batch": [32], "step_time_s": [0.1],
                          "global_batch": [65]})
    with pytest.raises(ProfileError, match=r"global_batch 65 is not workers × local_batch × accum_steps = 64"):
        Profile.from_frame(frame, workload=_WORKLOAD)


def test_a_step_row_may_give_its_global_batch_instead_of_its_local_batch():
    # A sweep names its global batch and GPU count (ElasticFlow's tables, most papers' sweeps):
    # the local batch is the global one split over workers x accumulation steps.
    import pandas as pd

    from cotune.profile import Profile

    frame = pd.DataFrame({"gpu": ["a100"] * 3, "workers": [1, 4, 8], "accum_steps": [1, 2, None],
                          "global_batch": [256, 256, 256], "step_time_s": [0.5, 0.2, 0.1]})
    p = Profile.from_frame(frame, workload=_WORKLOAD, record="step")
    assert [(s.workers, s.local_batch, s.accum_steps) for s in p.steps] == [(1, 256, 1), (4, 32, 2), (8, 32, 1)]
    assert all(s.workers * s.local_batch * s.accum_steps == 256 for s in p.steps)


@pytest.mark.parametrize("row, match", [
    ({"workers": 3, "global_batch": 256}, r"row 0: global_batch 256 does not split into 3 workers × 1 accumulation steps"),
    ({"workers": 4, "global_batch": "many"}, r"row 0: field 'global_batch': must be a whole number >= 1, got 'many'"),
    ({"workers": 4, "global_batch": 25.5}, r"field 'global_batch': must be a whole number >= 1, got 25.5"),
    ({"global_batch": 256}, r"row 0: missing field 'workers'"),
    ({"workers": 0, "global_batch": 256}, r"row 0: field 'workers': must be"),
])
def test_a_global_batch_that_gives_no_local_batch_is_one_clear_error(row, match):
    import pandas as pd

    from cotune.profile import Profile

    with pytest.raises(ProfileError, match=match):
        Profile.from_frame(pd.DataFrame([{"gpu": "t4", "step_time_s": 0.1, **row}]), workload=_WORKLOAD, record="step")


@pytest.mark.parametrize("frame_kw, match", [
    ({"record": "step"}, "has a 'record' column and record= is given too"),
    ({}, None),
])
def test_the_rows_type_is_named_once(frame_kw, match):
    import pandas as pd

    from cotune.profile import Profile

    frame = pd.DataFrame({"record": ["step"], "gpu": ["t4"], "workers": [2], "local_batch": [32], "step_time_s": [0.1]})
    if match:
        with pytest.raises(ProfileError, match=match):
            Profile.from_frame(frame, workload=_WORKLOAD, **frame_kw)
    else:
        assert len(Profile.from_frame(frame, workload=_WORKLOAD).steps) == 1
    with pytest.raises(ProfileError, match=r"no 'record' column and no type for its rows: name it with --record"):
        Profile.from_frame(frame.drop(columns="record"), workload=_WORKLOAD)
    with pytest.raises(ProfileError, match=r"row 0: its 'record' cell is empty"):
        Profile.from_frame(frame.assign(record=[None]), workload=_WORKLOAD)
    with pytest.raises(ProfileError, match=r"workload=: missing field 'dataset_size'"):
        Profile.from_frame(frame, workload={"name": "job"})
    with pytest.raises(ProfileError, match=r"reads a pandas DataFrame, got list"):
        Profile.from_frame([{"gpu": "t4"}], workload=_WORKLOAD)


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


def _records():
    # Valid records only (the classes' constructors do not check; the reader's rule does):
    # hosts within workers, synchronisation within the step, every type's optional fields
    # present or left out.
    from hypothesis import strategies as st

    from cotune.profile import EvalRecord, FailureRecord, NoiseRecord, StepRecord

    whole = st.integers(min_value=1, max_value=4096)
    pos = st.floats(min_value=1e-3, max_value=1e4, allow_nan=False)
    maybe = lambda s: st.none() | s  # noqa: E731
    gpu = st.sampled_from(["t4", "v100", "a100"])

    @st.composite
    def step(draw):
        workers, step_s = draw(whole), draw(pos)
        return StepRecord(gpu=draw(gpu), workers=workers, local_batch=draw(whole), step_time_s=step_s,
                          hosts=draw(st.integers(1, min(workers, 8))),
                          sync_time_s=draw(maybe(st.floats(0.0, step_s))), accum_steps=draw(st.integers(1, 4)),
                          market=draw(st.sampled_from(["on_demand", "spot"])),
                          placement=draw(maybe(st.sampled_from(["1", "2x2"]))))

    @st.composite
    def failure(draw):
        workers = draw(whole)
        return FailureRecord(gpu=draw(gpu), workers=workers, local_batch=draw(whole),
                             failure=draw(st.sampled_from(["oom", "crash", "timeout"])),
                             hosts=draw(st.integers(1, min(workers, 8))))

    metric = st.floats(min_value=0.0, max_value=1.0) | st.just(float("nan"))
    evals = st.builds(EvalRecord, global_batch=whole, epoch=st.floats(0.0, 500.0), metric=metric,
                      seed=st.integers(0, 9), grad_sqr=maybe(pos), grad_var=maybe(pos))
    noise = st.builds(NoiseRecord, b_noise=pos, global_batch=maybe(whole), epoch=maybe(st.floats(0.0, 500.0)))
    return st.lists(step(), max_size=6), st.lists(evals, max_size=6), st.lists(failure(), max_size=3), st.lists(noise, max_size=3)


def test_any_profile_survives_the_round_trip_through_its_frame():
    import math

    from hypothesis import given, settings

    from cotune.profile import Profile, WorkloadRecord

    workload = WorkloadRecord.from_dict({"record": "workload", **_WORKLOAD})

    def same(a, b):  # NaN metrics (diverged evaluations) compare equal to themselves here
        return all(type(x) is type(y) and all(
            (getattr(x, f) == getattr(y, f)) or (isinstance(getattr(x, f), float) and math.isnan(getattr(x, f))
                                                 and math.isnan(getattr(y, f)))
            for f in x.__dataclass_fields__) for x, y in zip(a, b, strict=True))

    @settings(max_examples=40, deadline=None, derandomize=True)
    @given(*_records())
    def check(steps, evals, failures, noise):
        p = Profile(workload=workload, steps=tuple(steps), evals=tuple(evals), failures=tuple(failures), noise=tuple(noise))
        back = Profile.from_frame(p.to_frame(), workload=workload)
        for kind in ("steps", "evals", "failures", "noise"):
            assert same(getattr(back, kind), getattr(p, kind)), kind

    check()


def test_a_long_record_type_is_quoted_short():
    # record= of 5,000 nines was quoted whole: an error line of 5,200 characters.
    import pandas as pd

    from cotune.profile import Profile

    frame = pd.DataFrame({"gpu": ["t4"], "workers": [2], "local_batch": [32], "step_time_s": [0.1]})
    with pytest.raises(ProfileError) as err:
        Profile.from_frame(frame, workload=_WORKLOAD, record="9" * 5000)
    assert "(5000 characters)" in str(err.value) and len(str(err.value)) < 300, str(err.value)


def test_a_row_error_names_the_row_the_missing_field_and_the_columns_named_otherwise():
    # import_table reads these to say which line and which --column to write; it used to
    # parse them back out of the message.
    import pandas as pd

    from cotune.profile import Profile
    from cotune.profile._profile import RowError

    frame = pd.DataFrame({"source": ["x"], "gpu": ["t4"], "throughput_worker_steps_per_s": [9.0], "job_type": ["r"],
                          "num_gpus": [2], "local_bsz": [32], "step_time": [0.1]}, index=[7])
    with pytest.raises(RowError) as err:
        Profile.from_frame(frame, workload=_WORKLOAD, record="step")
    exc = err.value
    assert (exc.row, exc.field, exc.kind) == (7, "workers", "step")
    # Likely fields first; a rate or a job's tag is never guessed from a near spelling (Gavel's
    # worker-steps per second are steps per second x workers).
    assert exc.foreign == (("num_gpus", "workers"), ("local_bsz", "local_batch"), ("step_time", "step_time_s"),
                           ("source", None), ("throughput_worker_steps_per_s", None), ("job_type", None))
    assert str(exc).startswith("row 7: missing field 'workers'") and str(exc).endswith(": rename them")


def test_a_bad_value_in_a_row_is_a_row_error_without_a_missing_field():
    import pandas as pd

    from cotune.profile import Profile
    from cotune.profile._profile import RowError

    frame = pd.DataFrame({"gpu": ["t4", "t4"], "workers": [1, -2], "local_batch": [8, 8], "step_time_s": [0.1, 0.1]})
    with pytest.raises(RowError) as err:
        Profile.from_frame(frame, workload=_WORKLOAD, record="step")
    assert (err.value.row, err.value.field, err.value.foreign) == (1, None, ())
    assert "field 'workers': must be a whole number >= 1, got -2" in err.value.detail


@pytest.mark.parametrize("column, guess", [
    ("latency_us", None),  # no field in microseconds: no guess
    ("latency_ms", None),
    ("batch_time_ms", "step_time_ms"),  # was 'sync_time_s': the wrong field, and every value 1000x
    ("time_per_iter_ms", "step_time_ms"),  # was 'timed_steps'
    ("allreduce_time_ms", "sync_time_ms"),  # a known name; sync_time_ms is never a near-spelling guess
    ("comm_ms_total", None),
    ("step_time_sec", "step_time_s"),
    ("iter_time (s)", "step_time_s"),
    ("local_bsz", "local_batch"),
])
def test_a_column_in_another_unit_is_not_guessed_as_a_field_in_seconds(column, guess):
    import pandas as pd

    from cotune.profile import Profile
    from cotune.profile._profile import RowError

    frame = pd.DataFrame({"gpu": ["t4"], "workers": [1], "local_batch": [8], column: [100.0]})
    if column == "local_bsz":
        frame = frame.drop(columns="local_batch")
    with pytest.raises(RowError) as err:
        Profile.from_frame(frame, workload=_WORKLOAD, record="step")
    assert dict(err.value.foreign)[column] == guess
