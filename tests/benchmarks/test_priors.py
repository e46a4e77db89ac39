"""benchmarks.priors: the replay's priors refitted (held out) and put in place of the shipped ones."""

from __future__ import annotations

import importlib
import inspect
import json
import math
import pkgutil
import types

import numpy as np
import pytest

from _helpers import synthetic_records
from benchmarks.priors import NOT_REPRODUCED, PRIOR_SPECS, SHIPPED, Priors, fit_priors, use_priors
from cotune.models._shape import ErrorShape

# A value of each prior far from the shipped one: what the library predicts must move with it.
CHANGED = {
    "kappa_beyond": 3.0 * SHIPPED.kappa_beyond,
    "kappa_beyond_shape": tuple((f, 3.0 * k) for f, k in SHIPPED.kappa_beyond_shape),
    "kappa_beyond_law": 3.0 * SHIPPED.kappa_beyond_law,
    "kappa_inside": 5.0 * SHIPPED.kappa_inside,
    "run_scatter": 4.0 * SHIPPED.run_scatter,
    "plateau_walk_nodes": (0.3,),
    "epochs_error_shape": ErrorShape(weights=(0.5, 0.5), scales=(0.2, 3.0)),
    "kappa_step": 5.0 * SHIPPED.kappa_step,
    "step_error_shape": ErrorShape(weights=(0.5, 0.5), scales=(0.2, 3.0)),
    "curve_kappa": 3.0 * SHIPPED.curve_kappa,
    "curve_margin_offset": -1.0,
    "curve_margin_scale": 0.5,
}


def _profile():
    from cotune.profile import parse_profile

    recs = synthetic_records(workers=(1, 2, 4), global_batches=(64, 256, 1024))
    return parse_profile("".join(json.dumps(r) + "\n" for r in recs))


def _predictions() -> np.ndarray:
    """What the replay asks the library, on a small synthetic job: epochs-to-target spreads and
    P(reach) between and beyond the measured batches, a step-time spread beyond the probes,
    P(success) by a deadline of every candidate, and a running job's curve forecast."""
    import cotune
    from cotune.models._curve import extrapolate_curve

    profile = _profile()
    models = cotune.fit_models(profile, n_bootstrap=0)
    acc = models.accuracy.epochs_to_target(np.array([128.0, 512.0, 4096.0, 16384.0]), 0.94)
    step = models.time_models["t4"].predict(np.array([16]), np.array([4]), np.array([128]))
    # One curve (the smallest batch's): beyond it the noise path answers (KAPPA_BEYOND and its shape),
    # where the three curves fit a law (KAPPA_BEYOND_LAW).
    e = profile.to_frame("evals")
    first = e.global_batch == e.global_batch.min()
    one = cotune.AccuracyModel(b_noise=512.0).fit(e.global_batch[first].to_numpy(), e.epoch[first].to_numpy(),
                                                  e.metric[first].to_numpy())
    one_curve = one.epochs_to_target(np.array([256.0, 4096.0]), 0.9)
    rec = cotune.recommend(profile, models=models, target=0.93, deadline_s=3000.0, max_workers=16)
    epochs = np.arange(1.0, 13.0)
    curve = extrapolate_curve(epochs, 0.9 * (1.0 - np.exp(-epochs / 6.0)), target=0.85)
    return np.concatenate([acc.log_sigma, acc.p_reach, one_curve.log_sigma, step.log_sigma,
                           np.asarray(rec.estimates.p_success, float),
                           [curve.log_sigma, curve.p_reach]])


@pytest.fixture(scope="module")
def shipped_predictions() -> np.ndarray:
    return _predictions()


def test_every_prior_has_a_changed_value_to_check() -> None:
    assert set(CHANGED) == {s.field for s in PRIOR_SPECS}


@pytest.mark.parametrize("field", [s.field for s in PRIOR_SPECS])
def test_a_prior_set_through_use_priors_changes_what_the_library_predicts(field: str, shipped_predictions) -> None:
    import dataclasses

    with use_priors(dataclasses.replace(SHIPPED, **{field: CHANGED[field]})):
        moved = _predictions()
    assert not np.allclose(moved, shipped_predictions, rtol=1e-9, atol=0.0, equal_nan=True), field


def test_use_priors_restores_the_shipped_predictions_on_the_way_out(shipped_predictions) -> None:
    with use_priors(Priors(**CHANGED)):
        _predictions()
    np.testing.assert_array_equal(_predictions(), shipped_predictions)


def test_use_priors_restores_the_constants_after_an_error() -> None:
    from cotune.models import _accuracy

    with pytest.raises(KeyError), use_priors(Priors(**CHANGED)):
        assert _accuracy.KAPPA_BEYOND == CHANGED["kappa_beyond"]
        raise KeyError("inside")
    assert _accuracy.KAPPA_BEYOND is SHIPPED.kappa_beyond
    assert _accuracy.AccuracyModel.__init__.__kwdefaults__["kappa_beyond"] is SHIPPED.kappa_beyond


def test_a_model_the_benchmark_cached_under_other_priors_is_not_reused() -> None:
    import dataclasses

    from benchmarks.policies import library_models
    from benchmarks.scenarios import scenarios, workloads

    scn = next(scenarios(workloads(names=("bert-t4",)), target_labels=("all",), deadline_factors=(None,)))
    ev = scn.evidence("one-curve")
    shipped = library_models(scn, ev, ()).accuracy.kappa_beyond
    with use_priors(dataclasses.replace(SHIPPED, kappa_beyond=CHANGED["kappa_beyond"])):
        assert library_models(scn, ev, ()).accuracy.kappa_beyond == CHANGED["kappa_beyond"]
    assert library_models(scn, ev, ()).accuracy.kappa_beyond == shipped == SHIPPED.kappa_beyond


def test_priors_written_as_json_read_back_equal() -> None:
    from benchmarks.priors import as_dict, from_dict

    for p in (SHIPPED, Priors(**CHANGED)):
        assert from_dict(json.loads(json.dumps(as_dict(p)))) == p


def test_use_priors_none_changes_nothing(shipped_predictions) -> None:
    with use_priors(None):
        np.testing.assert_array_equal(_predictions(), shipped_predictions)


# Modules not scanned: importing them starts a training framework (half a minute each:
# cotune.track's adapters and their overhead benchmark, which read no prior), runs a command,
# or measures the shipped constants themselves on data the replay never uses.
_NOT_SCANNED = {
    "benchmarks.tracker_overhead": "imports TensorFlow",
    "benchmarks.public_curves": "scores the shipped curve constants on public curves (its defaults are them on purpose)",
}
_ADAPTERS = ("keras", "lightning", "transformers")  # cotune.track's framework adapters (import their framework)


def _modules() -> list[types.ModuleType]:
    """Every module of cotune and of the benchmark (but the framework adapters, :data:`_NOT_SCANNED`
    and ``__main__``s)."""
    import benchmarks
    import cotune

    out = []
    for pkg in (cotune, benchmarks):
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            last = info.name.rsplit(".", 1)[-1]
            if last == "__main__" or last.lstrip("_") in _ADAPTERS or info.name in _NOT_SCANNED:
                continue
            try:
                out.append(importlib.import_module(info.name))
            except ImportError:  # an optional extra that is not installed here
                continue
    return out


def _functions(mod: types.ModuleType):
    """(qualified name, function) of every function and method defined in ``mod``."""
    for name, obj in vars(mod).items():
        if inspect.isfunction(obj) and obj.__module__ == mod.__name__:
            yield name, obj
        elif inspect.isclass(obj) and obj.__module__ == mod.__name__:
            for attr, member in vars(obj).items():
                fn = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
                if inspect.isfunction(fn):
                    yield f"{name}.{attr}", fn


def test_every_default_that_is_a_shipped_prior_is_a_read_site_use_priors_replaces() -> None:
    listed = {site for s in PRIOR_SPECS for site in s.defaults}
    found = set()
    for mod in _modules():
        for qualname, fn in _functions(mod):
            params = inspect.signature(fn).parameters
            for name, p in params.items():
                for s in PRIOR_SPECS:
                    if p.default is getattr(SHIPPED, s.field):
                        found.add((mod.__name__, qualname, name))
    assert found - listed == set(), "defaults use_priors would miss: add them to PRIOR_SPECS"
    assert listed - found == set(), "PRIOR_SPECS lists a default that is not the constant"


def test_no_module_holds_a_shipped_prior_under_another_name() -> None:
    # use_priors replaces a constant wherever it is imported by its own name; an alias it would miss.
    for mod in _modules():
        for name, value in vars(mod).items():
            for s in PRIOR_SPECS:
                if value is getattr(SHIPPED, s.field):
                    assert name == s.constant, f"{mod.__name__}.{name} is {s.constant}"


def test_held_out_step_rows_drop_the_left_out_job_on_gavel_and_shockwave_only() -> None:
    from benchmarks.priors import _replayed_step_rows_kept

    keep = _replayed_step_rows_kept(("imagenet", "deepspeech2", "yolov3", "bert", "ncf"))  # cifar10 held out
    assert not keep({"dataset": "gavel-k80", "model": "ResNet-18"})
    assert not keep({"dataset": "shockwave-tacc-v100", "model": "ResNet-18"})
    assert keep({"dataset": "gavel-k80", "model": "ResNet-50"})  # imagenet's job stays
    assert keep({"dataset": "sia-azure", "model": "cifar10"})  # not the replay's data


def test_fit_priors_refuses_fewer_than_two_models() -> None:
    with pytest.raises(ValueError, match="two or more"):
        fit_priors(models=("bert",))
    with pytest.raises(ValueError, match="two or more"):
        fit_priors(models=("bert", "gpt"))


def test_the_registry_offers_shipped_held_out_and_refit_and_shipped_changes_nothing() -> None:
    from benchmarks._registry import PRIOR_SETS, load
    from benchmarks.traces import load_pollux

    load()
    assert {"shipped", "held-out", "refit"} <= set(PRIOR_SETS)
    assert PRIOR_SETS["shipped"].table([load_pollux("bert")]) == {"bert-t4": None}


def test_an_unknown_prior_set_is_refused_with_one_line_and_exit_2(tmp_path, capsys) -> None:
    from benchmarks.__main__ import main

    assert main(["--priors", "leaked", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown prior set leaked" in err[0] and "held-out" in err[0]


def _rounded(value, decimals: int):
    if isinstance(value, ErrorShape):
        return _rounded((value.weights, value.scales), decimals)
    if isinstance(value, tuple):
        return tuple(_rounded(v, decimals) for v in value)
    return round(float(value), decimals)


@pytest.mark.slow
def test_refitting_on_every_workload_reproduces_the_shipped_priors_or_says_why_not() -> None:
    # Each prior fitted from the shipped values of the ones it depends on, as the shipped
    # constants were: equal at the decimals they are shipped with, except those NOT_REPRODUCED
    # says are not (and those must really differ: the list stays true).
    refit = fit_priors(given=SHIPPED)
    for s in PRIOR_SPECS:
        got, shipped = _rounded(getattr(refit, s.field), s.decimals), _rounded(getattr(SHIPPED, s.field), s.decimals)
        if s.constant in NOT_REPRODUCED:
            assert got != shipped, f"{s.constant} reproduces now: take it off NOT_REPRODUCED"
        else:
            assert got == shipped, f"{s.constant}: refitted {got}, shipped {shipped}"
    assert all(math.isfinite(v) for v in (refit.kappa_beyond, refit.kappa_step, refit.curve_kappa))
