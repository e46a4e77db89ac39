"""The estimators' contract, shared by both: parameters and values are checked before
anything is learned, a failed fit leaves the estimator as it was, and the Python door's
helpers take what `recommend` takes."""

import re
from decimal import Decimal

import numpy as np
import pytest

import cotune
from cotune import AccuracyModel, InputError, StepTimeModel

W, H, B, T = [1, 2, 4, 1, 2, 4], [1] * 6, [32, 32, 32, 64, 64, 64], [0.10, 0.12, 0.13, 0.18, 0.20, 0.22]


@pytest.fixture(scope="module")
def evals():
    return cotune.load_profile("yolov3-voc").to_frame("evals")


def _fit_step(m, t=T):
    return m.fit(W, H, B, t)


def _fit_acc(m, e):
    return m.fit(e.global_batch.to_numpy(), e.epoch.to_numpy(), e.metric.to_numpy(), e.seed.to_numpy())


CASES = [
    (StepTimeModel, _fit_step, "level_effects", "on"),
    (StepTimeModel, _fit_step, "interval", 1.5),
    (StepTimeModel, _fit_step, "n_bootstrap", 2.5),
    (StepTimeModel, _fit_step, "random_state", -1),
    (AccuracyModel, _fit_acc, "goal", "up"),
    (AccuracyModel, _fit_acc, "interval", 0.0),
    (AccuracyModel, _fit_acc, "grid_size", 0),
    (AccuracyModel, _fit_acc, "batch_monotone", "no"),
]


@pytest.mark.parametrize("cls, fit, name, bad", CASES)
def test_a_bad_parameter_is_an_input_error_naming_it(cls, fit, name, bad, evals):
    with pytest.raises(InputError, match=rf"{cls.__name__}\.{name}: must be"):
        fit(cls(**{name: bad}), evals) if cls is AccuracyModel else fit(cls(**{name: bad}))


@pytest.mark.parametrize("cls, fit, name, bad", CASES)
def test_a_failed_fit_leaves_the_fitted_model_as_it_was(cls, fit, name, bad, evals):
    m = fit(cls(), evals) if cls is AccuracyModel else fit(cls())
    state = dict(vars(m))
    m.set_params(**{name: bad})
    with pytest.raises(InputError):
        fit(m, evals) if cls is AccuracyModel else fit(m, [10 * t for t in T])
    assert set(vars(m)) == set(state) | {name}
    for key, value in state.items():
        if key != name:
            assert vars(m)[key] is value, key


def test_a_failed_fit_leaves_a_new_model_unfitted():
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    m = StepTimeModel(level_effects="on")
    with pytest.raises(InputError):
        _fit_step(m)
    with pytest.raises(NotFittedError):
        check_is_fitted(m)


@pytest.mark.parametrize(
    "workers, hosts, local_batch, step_time_s, message",
    [
        ([1.5, 2, 4, 1, 2, 4], H, B, T, r"workers: must be whole numbers >= 1, got 1.5 at index 0"),
        ([-1, 2, 4, 1, 2, 4], H, B, T, r"workers: must be whole numbers >= 1, got -1 at index 0"),
        (W, [2] * 6, B, T, r"hosts: must be at most the workers .* got hosts 2 with workers 1 at index 0"),
        (W[:5], H, B, T, r"one value per probe, got 5, 6, 6 and 6 values"),
        (["2"] * 6, H, B, T, r"workers: must be numbers"),
        ([True] * 6, H, B, T, r"workers: must be numbers, got booleans"),
        (W, H, B, [0.1, 0.2, np.nan, 0.1, 0.1, 0.1], r"step_time_s: must be finite numbers > 0, got nan at index 2"),
    ],
)
def test_impossible_step_records_are_refused_with_the_rule_and_the_value(workers, hosts, local_batch, step_time_s, message):
    with pytest.raises(InputError, match=message):
        StepTimeModel().fit(workers, hosts, local_batch, step_time_s)


@pytest.mark.parametrize("query", [([np.nan], [1], [32]), ([0], [1], [32]), ([2], [1], [-32]), (["2"], [1], [32])])
def test_a_step_time_question_outside_the_domain_is_refused_not_answered(query):
    m = _fit_step(StepTimeModel(n_bootstrap=0))
    with pytest.raises(InputError, match=r"(workers|local_batch): must be"):
        m.predict(*query)


def test_decimal_and_object_arrays_of_numbers_are_read_as_numbers():
    a = _fit_step(StepTimeModel(n_bootstrap=0))
    b = StepTimeModel(n_bootstrap=0).fit([Decimal(w) for w in W], H, B, T)
    assert np.allclose(a.predict([8], [2], [64]).step_time_s, b.predict([8], [2], [64]).step_time_s)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda m: m.epochs_to_target([np.nan], 12.6), r"global_batch: must be finite numbers > 0, got nan"),
        (lambda m: m.epochs_to_target([64], np.nan), r"target: must be a finite number"),
        (lambda m: m.epochs_to_target([64], "12.6"), r"target: must be a finite number, got '12.6'"),
        (lambda m: m.epochs_to_target([64], np.bool_(True)), r"target: must be a finite number, got true"),
        (lambda m: m.metric_at([64], [np.nan]), r"epochs: must be numbers >= 0"),
    ],
)
def test_an_accuracy_question_outside_the_domain_is_refused(call, message, evals):
    m = _fit_acc(AccuracyModel(), evals)
    with pytest.raises(InputError, match=message):
        call(m)


def test_metric_at_takes_unbounded_epochs_as_the_curve_s_end(evals):
    m = _fit_acc(AccuracyModel(), evals)
    assert np.array_equal(m.metric_at([64], [np.inf]), m.metric_at([64], [1e9]))


def test_impossible_eval_records_are_refused(evals):
    e = evals
    with pytest.raises(InputError, match=r"global_batch: must be finite numbers > 0, got -\d+ at index 0"):
        AccuracyModel().fit(-e.global_batch.to_numpy(), e.epoch, e.metric, e.seed)
    with pytest.raises(InputError, match=r"one value per evaluation"):
        AccuracyModel().fit(e.global_batch.to_numpy()[:-1], e.epoch, e.metric, e.seed)
    diverged = e.metric.to_numpy().copy()
    diverged[:3] = np.nan  # a diverged evaluation is data, not an error
    assert AccuracyModel().fit(e.global_batch, e.epoch, diverged, e.seed).n_diverged_ >= 1


@pytest.mark.parametrize("kw, where", [(dict(interval=1.5), "/?interval"), (dict(interval="0.9"), "/?interval"),
                                       (dict(n_bootstrap=2.5), "n_bootstrap"), (dict(random_state=-1), "random_state"),
                                       (dict(batch_monotone="no"), "batch_monotone")])
def test_fit_models_checks_its_options_before_fitting(kw, where):
    with pytest.raises(InputError, match=rf"^{where}: must be"):
        cotune.fit_models("yolov3-voc", **kw)


def test_fit_models_and_validate_profile_take_a_profile_name_as_recommend_does():
    by_name = cotune.fit_models("yolov3-voc", n_bootstrap=0)
    by_value = cotune.fit_models(cotune.load_profile("yolov3-voc"), n_bootstrap=0)
    assert by_name.workload_name == by_value.workload_name == "yolov3-voc"
    with pytest.raises(InputError, match="no profile given"):
        cotune.fit_models(None)
    with pytest.raises(InputError, match="folds: must be a whole number >= 2"):
        cotune.validate_profile("yolov3-voc", folds=1)


def test_recommend_takes_profile_as_a_keyword_too():
    a = cotune.recommend("cifar10-resnet18", target=0.94, deadline_s=1800)
    b = cotune.recommend(profile="cifar10-resnet18", target=0.94, deadline_s=1800)
    assert (a.chosen.workers, a.chosen.local_batch) == (b.chosen.workers, b.chosen.local_batch)
    with pytest.raises(InputError, match="the profile was given twice"):
        cotune.recommend("cifar10-resnet18", profile="cifar10-resnet18", target=0.94)


def test_predictions_compare_as_objects_and_answers_say_they_are_unhashable():
    m = cotune.fit_models("yolov3-voc", n_bootstrap=0)
    a = m.predict_step("t4", np.array([2, 4]), np.array([1, 1]), np.array([8, 8]))
    assert a == a and a != m.predict_step("t4", np.array([2, 4]), np.array([1, 1]), np.array([8, 8]))
    rec = cotune.recommend("yolov3-voc", models=m, target=13.0, deadline_s=7200)
    for value, name in ((rec, "Recommendation"), (m, "FittedModels")):
        with pytest.raises(TypeError, match=f"unhashable type: '{name}'"):
            hash(value)


def test_progress_takes_a_numpy_bool_as_the_bool_it_is():
    p = cotune.Progress(epochs_done=5, elapsed_s=600, gpu="t4", market="on_demand", workers=4, local_batch=64,
                        out_of_memory=np.bool_(True))
    assert p.out_of_memory is True


@pytest.mark.parametrize("value, shown", [(Decimal("Infinity"), "Infinity"), (Decimal("1e400"), "1E+400")])
def test_a_non_finite_decimal_is_quoted_as_written(value, shown):
    with pytest.raises(InputError, match=f"got {re.escape(shown)}$"):
        cotune.recommend("cifar10-resnet18", target=0.94, deadline_s=value)


@pytest.mark.parametrize("cls, step", [(StepTimeModel, "_calibrate"), (AccuracyModel, "_fit_spreads")])
def test_a_fit_that_fails_midway_leaves_the_fitted_model_as_it_was(cls, step, evals, monkeypatch):
    # a failure after learned attributes were set (the data's, not a parameter's)
    m = _fit_acc(cls(), evals) if cls is AccuracyModel else _fit_step(cls())
    state = dict(vars(m))

    def fails(self, *args, **kwargs):
        raise cotune.ModelError("the data cannot be fitted")

    monkeypatch.setattr(cls, step, fails)
    with pytest.raises(cotune.ModelError):
        _fit_acc(m, evals.iloc[::2]) if cls is AccuracyModel else _fit_step(m, [2 * t for t in T])
    assert vars(m).keys() == state.keys() and all(vars(m)[k] is v for k, v in state.items())


def test_seeds_beyond_float_precision_stay_distinct_runs(evals):
    e = evals[evals.global_batch == evals.global_batch.iloc[0]]
    gb = np.concatenate([e.global_batch, e.global_batch])
    seeds = np.array([2**60] * len(e) + [2**60 + 1] * len(e), dtype=np.int64)
    m = AccuracyModel().fit(gb, np.concatenate([e.epoch, e.epoch]), np.concatenate([e.metric, e.metric]), seeds)
    assert m.n_runs_ == 2 * len(set(e.seed))


@pytest.mark.parametrize("grad_var, grad_sqr", [(0.0, 1.0), (1.0, 1e-14)])
def test_a_profiles_extreme_noise_scale_is_planned_not_refused(tmp_path, grad_var, grad_sqr):
    # grad_var = 0 (no gradient noise measured) or a scale of 1e16 samples: the library's own
    # value was refused as "AccuracyModel.b_noise: must be ... > 0" (exit 2)
    import json

    out = tmp_path / "p.jsonl"
    lines = []
    for line in open(cotune.example_path("cifar10-resnet18")):
        d = json.loads(line)
        if d.get("record") == "noise":
            continue
        if d.get("record") == "eval":
            d.update(grad_sqr=grad_sqr, grad_var=grad_var)
        lines.append(json.dumps(d) + "\n")
    out.write_text("".join(lines))
    rec = cotune.recommend(str(out), target=0.9, deadline_s=8 * 3600)
    assert rec.chosen is not None
