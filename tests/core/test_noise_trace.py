"""The gradient noise scale at a target: the measurements taken before the run reached it
(:func:`cotune.models._accuracy.noise_scale_until`), as the accuracy model and a profile use them."""

import copy
import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cotune.errors import InputError
from cotune.models import AccuracyModel
from cotune.models._accuracy import noise_scale_until
from cotune.profile import EvalRecord, NoiseRecord, Profile, WorkloadRecord

REF = 64.0


def _grown_noise_run(*, phi0: float = 40.0, growth: float = 6.0, epochs: int = 60):
    """One run at the reference batch of a job whose noise scale grows with progress,
    ``φ(p) = φ0·e^{growth·p}``; ``p`` the score (0 → 1 over the run, linear in epochs), and
    a rate that gives the *true* epochs at batch ``B`` to reach ``p*`` as McCandlish et
    al.'s per-step efficiency integrated over the training: ``∫₀^{p*} (φ(p) + B) / (φ(p) +
    B_ref) dp / rate``."""
    rate = 1.0 / epochs
    ep = np.arange(1, epochs + 1, dtype=float)
    score = ep * rate
    phi = phi0 * np.exp(growth * score)

    def true_epochs(batch: float, target: float) -> float:
        p = np.linspace(0.0, target, 4001)
        f = (phi0 * np.exp(growth * p) + batch) / (phi0 * np.exp(growth * p) + REF)
        return float(np.sum((f[1:] + f[:-1]) / 2 * np.diff(p)) / rate)

    return ep, score, phi, true_epochs


# -- the pure step -----------------------------------------------------------------------------
def test_only_measurements_before_the_crossing_count():
    got = noise_scale_until([64, 64, 64, 64], [1.0, 2.0, 3.0, 9.0], [10.0, 20.0, 30.0, 900.0],
                            batches=[64.0], epochs_to_target=[3.0])
    assert got == 20.0  # median of 10, 20, 30; the 900 measured after the crossing is left out


def test_a_batch_first_measured_after_its_crossing_gives_its_first_measurement():
    got = noise_scale_until([64, 64], [5.0, 8.0], [50.0, 80.0], batches=[64.0], epochs_to_target=[2.0])
    assert got == 50.0


def test_measurements_tied_at_the_earliest_epoch_after_the_crossing_all_count():
    # Found by hypothesis in CI: with two at the first epoch, "the first one" was whichever came first.
    rows = ([64, 64, 64], [5.0, 5.0, 8.0], [50.0, 70.0, 80.0])
    assert noise_scale_until(*rows, batches=[64.0], epochs_to_target=[2.0]) == 60.0
    flipped = ([64, 64, 64], [5.0, 5.0, 8.0], [70.0, 50.0, 80.0])
    assert noise_scale_until(*flipped, batches=[64.0], epochs_to_target=[2.0]) == 60.0


def test_measurements_of_every_batch_that_reaches_are_pooled():
    got = noise_scale_until([32, 32, 128, 128], [1.0, 4.0, 1.0, 2.0], [1.0, 100.0, 3.0, 5.0],
                            batches=[32.0, 128.0], epochs_to_target=[2.0, 2.0])
    assert got == 3.0  # 1 (batch 32 before epoch 2), 3 and 5 (batch 128): median 3


@pytest.mark.parametrize("epochs_to_target", [[math.inf], [math.nan]])
def test_no_answer_where_the_measured_batch_never_reaches_the_target(epochs_to_target):
    assert noise_scale_until([64], [1.0], [10.0], batches=[64.0], epochs_to_target=epochs_to_target) is None


def test_no_answer_where_no_measurement_sits_on_a_measured_batch():
    assert noise_scale_until([128], [1.0], [10.0], batches=[64.0], epochs_to_target=[5.0]) is None


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([16.0, 64.0, 256.0]), st.floats(0, 50), st.floats(1, 1e6)), min_size=1,
                max_size=30), st.randoms(use_true_random=False))
def test_the_answer_does_not_depend_on_the_order_of_the_measurements(rows, rnd):
    shuffled = list(rows)
    rnd.shuffle(shuffled)
    kw = dict(batches=[16.0, 64.0, 256.0], epochs_to_target=[10.0, 20.0, math.inf])
    a = noise_scale_until(*zip(*rows), **kw)
    b = noise_scale_until(*zip(*shuffled), **kw)
    assert a == b
    if a is not None:  # a median of the values, so within their range
        assert min(v for _, _, v in rows) <= a <= max(v for _, _, v in rows)


# -- the accuracy model ------------------------------------------------------------------------
def _fit_one_curve(trace: bool):
    ep, score, phi, true_epochs = _grown_noise_run()
    rows = np.column_stack([np.full(ep.size, REF), ep, phi])
    m = AccuracyModel(b_noise=float(np.median(phi)), noise_trace=rows if trace else None)
    return m.fit(np.full(ep.size, REF), ep, score), true_epochs


def test_an_early_target_takes_the_noise_of_the_training_before_it():
    m, _ = _fit_one_curve(trace=True)
    assert m.noise_scale(0.2) < m.noise_scale(0.8) < m.b_noise_ * 10
    assert m.noise_scale(0.2) < m.b_noise_


def test_the_noise_before_a_target_predicts_a_large_batch_better_than_the_whole_run():
    # True epochs from the per-step efficiency integrated over the training (not the
    # model's median rule): with the noise that training saw, the error at 16x the
    # reference batch is smaller than with the whole run's median, at early and late targets.
    with_trace, truth = _fit_one_curve(trace=True)
    without, _ = _fit_one_curve(trace=False)
    for target in (0.3, 0.6, 0.9):
        want = truth(16 * REF, target)
        err = [abs(math.log(float(m.epochs_to_target(np.array([16 * REF]), target).epochs_if_reached[0]) / want))
               for m in (with_trace, without)]
        assert err[0] < err[1], (target, err)


def test_a_target_beyond_the_curve_takes_the_whole_runs_noise_scale():
    m, _ = _fit_one_curve(trace=True)
    assert m.noise_scale(1.5) == m.b_noise_


def test_without_a_trace_the_whole_runs_noise_scale_answers_every_target():
    m, _ = _fit_one_curve(trace=False)
    assert m.noise_scale(0.2) == m.noise_scale(0.9) == m.b_noise_


@pytest.mark.parametrize("bad, says", [
    ([[64, 1.0]], "shape"),
    ([[64, 1.0, -5.0]], "row 0: b_noise must be finite and > 0"),
    ([[64, 1.0, 5.0], [0, 1.0, 5.0]], "row 1: global_batch must be finite and > 0"),
    ([[64, -1.0, 5.0]], "row 0: epoch must be finite and >= 0"),
    ([[64, math.nan, 5.0]], "row 0: epoch must be finite"),
    ("64,1,5", "rows of"),
    ([["a", 1, 2]], "numbers only"),
])
def test_a_bad_noise_trace_is_an_input_error_naming_the_row(bad, says):
    ep, score, *_ = _grown_noise_run()
    with pytest.raises(InputError, match=r"AccuracyModel\.noise_trace") as err:
        AccuracyModel(noise_trace=bad).fit(np.full(ep.size, REF), ep, score)
    assert says in str(err.value)


def test_a_model_pickled_before_the_trace_existed_predicts_as_it_did():
    m, _ = _fit_one_curve(trace=False)
    old = copy.deepcopy(m)
    del old.__dict__["noise_trace"], old.__dict__["noise_trace_"]
    back = pickle.loads(pickle.dumps(old))
    assert back.get_params()["noise_trace"] is None
    want, got = (x.epochs_to_target(np.array([REF, 16 * REF]), 0.6) for x in (m, back))
    np.testing.assert_array_equal(got.epochs, want.epochs)
    np.testing.assert_array_equal(got.upper, want.upper)


# -- the profile -------------------------------------------------------------------------------
def _profile(records):
    return Profile(workload=WorkloadRecord(name="w", dataset_size=1000, metric="acc"),
                   evals=tuple(r for r in records if isinstance(r, EvalRecord)),
                   noise=tuple(r for r in records if isinstance(r, NoiseRecord)))


def test_a_profile_traces_its_noise_records_that_name_batch_and_epoch():
    p = _profile([
        EvalRecord(global_batch=64, epoch=1.0, metric=0.5),
        NoiseRecord(b_noise=100.0, global_batch=64, epoch=1.0),
        NoiseRecord(b_noise=200.0, global_batch=64),  # no epoch: not placed in training
        NoiseRecord(b_noise=300.0, epoch=2.0),  # no batch: not placed either
    ])
    assert p.noise_trace() == ((64.0, 1.0, 100.0),)
    assert p.noise_scale() == 200.0  # the whole run's median still counts every record


def test_without_noise_records_a_profile_traces_its_eval_gradient_statistics():
    p = _profile([
        EvalRecord(global_batch=128, epoch=1.0, metric=0.5, grad_sqr=2.0, grad_var=4.0, grad_batch=64),
        EvalRecord(global_batch=128, epoch=2.0, metric=0.6, grad_sqr=2.0, grad_var=0.0, grad_batch=64),
        EvalRecord(global_batch=128, epoch=3.0, metric=0.7),
    ])
    assert p.noise_trace() == ((128.0, 1.0, 4.0 / 2.0 * 64),)


def test_fit_models_hands_the_profiles_noise_trace_to_the_accuracy_model():
    from cotune.models import fit_models
    from cotune.profile import StepRecord

    ep, score, phi, _ = _grown_noise_run()
    p = Profile(
        workload=WorkloadRecord(name="w", dataset_size=6400, metric="acc"),
        steps=(StepRecord(gpu="t4", workers=1, local_batch=64, step_time_s=0.1),),
        evals=tuple(EvalRecord(global_batch=64, epoch=float(e), metric=float(m)) for e, m in zip(ep, score)),
        noise=tuple(NoiseRecord(b_noise=float(v), global_batch=64, epoch=float(e)) for e, v in zip(ep, phi)),
    )
    acc = fit_models(p).accuracy
    assert acc.noise_trace_.shape == (ep.size, 3)
    assert acc.b_noise_ == pytest.approx(float(np.median(phi)))
    assert acc.noise_scale(0.25) == pytest.approx(float(np.median(phi[ep <= 15.0])))


# -- beyond a law fitted across batches: its own κ ---------------------------------------------
def _three_curves():
    rng = np.random.default_rng(3)
    gb, ep, me = [], [], []
    for b in (64.0, 256.0, 1024.0):
        scale = 10.0 * (1 + b / 512.0)
        e = np.arange(1, 41) * scale / 10.0
        gb += [b] * e.size
        ep += list(e)
        me += list(0.95 * (1 - np.exp(-e / (scale / 3))) + rng.normal(0, 0.003, e.size))
    return np.array(gb), np.array(ep), np.array(me)


def test_beyond_a_law_across_batches_the_spread_follows_kappa_beyond_law_not_kappa_beyond():
    data = _three_curves()
    q = np.array([4096.0, 16384.0])

    def sigma(**kw):
        m = AccuracyModel(**kw).fit(*data)
        assert m.anchor_batches(0.9).size == 3  # the law path
        return m.epochs_to_target(q, 0.9).log_sigma

    base = sigma()
    np.testing.assert_array_equal(sigma(kappa_beyond=1.0), base)
    assert np.all(sigma(kappa_beyond_law=1.0) > base)
