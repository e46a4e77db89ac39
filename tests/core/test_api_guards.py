"""The Python API's guards: models bound to their workload and interval, bounded caches and
fit costs, frozen inline records, estimators that predict with what they were fitted with,
and solver functions that name a bad argument."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path

import numpy as np
import pytest

import cotune
from cotune import AccuracyModel, InputError, StepTimeModel
from cotune.solver import next_measurement, plan_next_probe, standard_options, success_probability

_STEPS = dict(workers=[1, 2, 4, 1, 2, 4], hosts=[1] * 6, local_batch=[32] * 3 + [64] * 3,
              step_time_s=[0.10, 0.12, 0.13, 0.18, 0.20, 0.22])


def _example_records(name: str) -> list[dict]:
    return [json.loads(line) for line in open(cotune.example_path(name)) if line.strip()]


@pytest.fixture(scope="module")
def recommendation(cifar_models):
    return cotune.recommend("cifar10-resnet18", models=cifar_models, target=0.94, deadline_s=1800)


# -- models bound to their workload ------------------------------------------------------------
def test_recommend_refuses_models_fitted_on_another_workload(cifar_models):
    with pytest.raises(InputError, match=r"^models: fitted on workload 'cifar10-resnet18', but the profile is workload 'yolov3-voc'"):
        cotune.recommend(cotune.load_profile("yolov3-voc"), models=cifar_models, target=0.94, deadline_s=1800)


@pytest.mark.parametrize("source", ["example", "path", "pathlike", "ref-example", "ref-records"])
def test_recommend_refuses_another_workloads_models_given_a_profile_by_name_or_path(cifar_models, source, tmp_path):
    copied = tmp_path / "voc.jsonl"
    copied.write_bytes(cotune.example_path("yolov3-voc").read_bytes())
    profile = {"example": "yolov3-voc", "path": str(copied), "pathlike": copied,
               "ref-example": cotune.ProfileRef(example="yolov3-voc"),
               "ref-records": cotune.ProfileRef(records=_example_records("yolov3-voc"))}[source]
    with pytest.raises(InputError, match=r"^models: fitted on workload 'cifar10-resnet18', but the profile is workload 'yolov3-voc'"):
        cotune.recommend(profile, models=cifar_models, target=0.94, deadline_s=1800)


def test_the_workload_guard_stops_looking_for_a_first_record_at_the_parsers_line_limit(monkeypatch, tmp_path):
    # Unbounded, 300 Mi blank lines ahead of the workload record took 120 s to skip.
    import cotune.profile._profile as profile_module
    from cotune.profile._source import workload_name

    monkeypatch.setattr(profile_module, "MAX_PROFILE_LINES", 10)
    padded = tmp_path / "padded.jsonl"
    padded.write_bytes(b"\n" * 10 + cotune.example_path("yolov3-voc").read_bytes())
    assert workload_name(padded) is None


def test_the_workload_guard_stops_at_a_line_longer_than_the_parser_takes(tmp_path):
    # A gigabyte of spaces on one line was read to its end (4.8 s) where read_profile refuses
    # the file at its first line.
    from cotune.profile._profile import MAX_LINE_CHARS
    from cotune.profile._source import workload_name

    padded = tmp_path / "long-line.jsonl"
    padded.write_bytes(b" " * (MAX_LINE_CHARS + 10) + b"\n" + cotune.example_path("yolov3-voc").read_bytes())
    assert workload_name(padded) is None


def test_replan_refuses_models_fitted_on_another_workload(cifar_models):
    progress = {"elapsed_s": 900, "epochs_done": 30, "gpu": "t4", "workers": 4, "local_batch": 129, "market": "on_demand"}
    with pytest.raises(InputError, match=r"^models: fitted on workload 'cifar10-resnet18'"):
        cotune.replan("yolov3-voc", models=cifar_models, target=0.5, deadline_s=3600, progress=progress)


# -- an interval given as a numpy scalar -------------------------------------------------------
def test_models_fitted_at_a_float32_interval_answer_a_request_at_that_interval():
    models = cotune.fit_models("cifar10-resnet18", interval=np.float32(0.9), n_bootstrap=0)
    rec = cotune.recommend("cifar10-resnet18", models=models, target=0.94, deadline_s=1800)
    assert rec.interval == 0.9 and type(models.accuracy.interval_) is float


def test_a_float32_interval_in_the_request_matches_models_fitted_at_it(cifar_models):
    rec = cotune.recommend("cifar10-resnet18", models=cifar_models, target=0.94, deadline_s=1800, interval=np.float32(0.9))
    assert rec.chosen is not None


# -- bounded anchor cache ----------------------------------------------------------------------
def test_the_anchor_cache_keeps_at_most_its_cap_of_targets(cifar_models):
    from cotune.models._accuracy import ANCHOR_CACHE_TARGETS

    m = copy.deepcopy(cifar_models.accuracy)
    for i in range(ANCHOR_CACHE_TARGETS * 3):
        m.epochs_to_target(np.array([512.0]), 0.80 + 0.1 * i / (ANCHOR_CACHE_TARGETS * 3))
    assert len(m._cache) == ANCHOR_CACHE_TARGETS


def test_a_pickled_accuracy_model_leaves_its_anchor_cache_out(cifar_models):
    m = cifar_models.accuracy
    before = m.epochs_to_target(np.array([512.0, 4096.0]), 0.93)
    back = pickle.loads(pickle.dumps(m))
    assert len(back._cache) == 0
    np.testing.assert_array_equal(back.epochs_to_target(np.array([512.0, 4096.0]), 0.93).epochs, before.epochs)


# -- models pickled before predictions read fitted copies of their parameters -----------------
_ACCURACY_COPIES = ("goal_", "interval_", "run_scatter_", "batch_monotone_", "kappa_beyond_shape_")
_STEP_COPIES = ("interval_", "kappa_hosts_", "share_range_", "few_probe_kappa_")


def _pickled_without(model, names: tuple[str, ...]):
    """``model`` through a pickle written before ``names`` existed (the same 0.1.0 version)."""
    old = copy.deepcopy(model)
    for name in names:
        del old.__dict__[name]
    return pickle.loads(pickle.dumps(old))


def test_an_accuracy_model_pickled_before_its_fitted_copies_predicts_as_it_did(cifar_models):
    m = cifar_models.accuracy
    back = _pickled_without(m, _ACCURACY_COPIES)
    want, got = (x.epochs_to_target(np.array([512.0, 4096.0]), 0.93) for x in (m, back))
    for field in ("epochs", "lower", "upper"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field))


def test_a_step_time_model_pickled_before_its_fitted_copies_predicts_as_it_did(cifar_models):
    m = next(iter(cifar_models.time_models.values()))
    back = _pickled_without(m, _STEP_COPIES)
    want, got = (x.predict(np.array([1, 4, 16]), np.array([1, 1, 4]), np.array([64, 128, 256])) for x in (m, back))
    for field in ("step_time_s", "lower_s", "upper_s", "log_sigma"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field))


def test_fitted_models_pickled_before_the_fitted_copies_answer_a_recommendation(cifar_models, recommendation):
    old = copy.deepcopy(cifar_models)
    for name in _ACCURACY_COPIES:
        del old.accuracy.__dict__[name]
    for model in old.time_models.values():
        for name in _STEP_COPIES:
            del model.__dict__[name]
    back = pickle.loads(pickle.dumps(old))
    rec = cotune.recommend("cifar10-resnet18", models=back, target=0.94, deadline_s=1800)
    assert rec.chosen == recommendation.chosen


# -- inline records ----------------------------------------------------------------------------
def test_profile_ref_records_do_not_change_when_the_callers_list_does():
    lines = _example_records("cifar10-resnet18")
    ref = cotune.ProfileRef(records=lines)
    lines[0]["name"] = "changed"
    lines.clear()
    assert ref.records[0]["name"] == "cifar10-resnet18"


def test_a_request_with_inline_records_is_hashable():
    ref = cotune.ProfileRef(records=_example_records("cifar10-resnet18"))
    assert hash(cotune.RecommendRequest(profile=ref, target=0.9)) == hash(cotune.RecommendRequest(profile=ref, target=0.9))


def test_profile_ref_refuses_records_that_are_not_a_list_of_mappings():
    with pytest.raises(InputError, match=r"^/profile/records: must be a list of records"):
        cotune.ProfileRef(records=5)


def test_profile_ref_names_the_entry_that_is_not_a_mapping():
    with pytest.raises(InputError, match=r"^/profile/records/1: must be a record"):
        cotune.ProfileRef(records=[{"record": "workload"}, 3])


def test_profile_ref_reads_records_holding_numpy_scalars():
    lines = _example_records("cifar10-resnet18")
    for rec in lines:
        if rec.get("record") == "step":
            rec["workers"] = np.int64(rec["workers"])
    assert cotune.ProfileRef(records=lines).load().steps == cotune.load_profile("cifar10-resnet18").steps


# -- estimators predict with what they were fitted with -----------------------------------------
def test_step_time_predict_refuses_arrays_that_do_not_broadcast():
    m = StepTimeModel(n_bootstrap=0).fit(**_STEPS)
    with pytest.raises(InputError, match="must broadcast together"):
        m.predict([1, 2], [1, 1, 1], [32])


def test_step_time_predict_refuses_more_hosts_than_workers():
    m = StepTimeModel(n_bootstrap=0).fit(**_STEPS)
    with pytest.raises(InputError, match=r"^hosts: must be at most the workers"):
        m.predict([2], [4], [32])


def test_step_time_set_params_after_fit_leaves_its_predictions_unchanged():
    m = StepTimeModel(n_bootstrap=0).fit(**_STEPS)
    before = m.predict([2], [2], [32]).upper_s
    m.set_params(kappa_hosts=float("nan"), interval=0.5)
    np.testing.assert_array_equal(m.predict([2], [2], [32]).upper_s, before)


def test_accuracy_set_params_after_fit_leaves_its_predictions_unchanged(cifar_models):
    m = copy.deepcopy(cifar_models.accuracy)
    before = m.epochs_to_target(np.array([512.0]), 0.93)
    m.set_params(goal="min", interval=0.5)
    after = m.epochs_to_target(np.array([512.0]), 0.93)
    np.testing.assert_array_equal(after.epochs, before.epochs)
    np.testing.assert_array_equal(after.upper, before.upper)


# -- bounded fit costs -------------------------------------------------------------------------
def test_fit_models_refuses_n_bootstrap_above_its_cap(synthetic_profile_path: Path):
    with pytest.raises(InputError, match=r"^n_bootstrap: must be a whole number >= 0 and <= 1000"):
        cotune.fit_models(synthetic_profile_path, n_bootstrap=1001)


def test_step_time_model_refuses_n_bootstrap_above_its_cap():
    with pytest.raises(InputError, match=r"^StepTimeModel.n_bootstrap: must be a whole number >= 0 and <= 1000"):
        StepTimeModel(n_bootstrap=1001).fit(workers=[1, 2], hosts=[1, 1], local_batch=[32, 32], step_time_s=[0.1, 0.12])


def test_accuracy_model_refuses_grid_size_above_its_cap():
    with pytest.raises(InputError, match=r"^AccuracyModel.grid_size: must be a whole number >= 2 and <= 10000"):
        AccuracyModel(grid_size=10_001).fit([64, 64], [1, 2], [0.5, 0.6])


def test_validate_profile_refuses_folds_above_its_cap(synthetic_profile_path: Path):
    with pytest.raises(InputError, match=r"^folds: must be a whole number >= 2 and <= 100"):
        cotune.validate_profile(synthetic_profile_path, folds=101)


def test_validate_profile_progress_ends_at_its_total_when_folds_exceed_the_configurations(synthetic_profile_path: Path):
    calls: list[tuple[int, int]] = []
    cotune.validate_profile(synthetic_profile_path, folds=50, progress=lambda done, total: calls.append((done, total)))
    assert calls[-1][0] == calls[-1][1]


# -- solver functions name a bad argument --------------------------------------------------------
def _masks(rec) -> tuple[np.ndarray, np.ndarray]:
    n = len(rec.estimates.candidates)
    return np.ones(n, bool), np.zeros(n, bool)


def test_next_measurement_refuses_a_negative_setup(recommendation):
    feasible, probed = _masks(recommendation)
    with pytest.raises(InputError, match=r"^setup_s: must be a finite number >= 0"):
        next_measurement(recommendation.estimates, feasible=feasible, probed=probed, deadline_s=1800, setup_s=-1e6)


def test_next_measurement_refuses_an_interval_that_is_no_probability(recommendation):
    feasible, probed = _masks(recommendation)
    with pytest.raises(InputError, match=r"^interval: must be a probability"):
        next_measurement(recommendation.estimates, feasible=feasible, probed=probed, deadline_s=1800, interval=2)


def test_next_measurement_refuses_a_mask_of_another_length(recommendation):
    feasible, probed = _masks(recommendation)
    with pytest.raises(InputError, match=r"^feasible: must hold one value per candidate"):
        next_measurement(recommendation.estimates, feasible=feasible[:3], probed=probed, deadline_s=1800)


def test_success_probability_refuses_a_nan_deadline(recommendation):
    with pytest.raises(InputError, match=r"^deadline_s: must be a finite number > 0"):
        success_probability(recommendation.estimates, deadline_s=float("nan"))


def test_standard_options_refuses_prices_of_another_length(recommendation):
    _, probed = _masks(recommendation)
    with pytest.raises(InputError, match=r"^step_price: must hold one value per candidate"):
        standard_options(recommendation.estimates, unprobed=~probed, step_price=np.ones(3))


def test_plan_next_probe_refuses_options_that_are_not_probe_options(recommendation):
    feasible, _ = _masks(recommendation)
    with pytest.raises(InputError, match=r"^options: must be a list of ProbeOption"):
        plan_next_probe(recommendation.estimates, "abc", feasible=feasible, deadline_s=1800)
