"""One learning curve and no gradient-noise scale: the law's shift beyond the measured batch
averaged over a prior on ``ln(B_noise / B_anchor)`` (:data:`NOISE_RATIO_PRIOR`,
:func:`cotune.models._accuracy.noise_prior_shift`), instead of the no-benefit bound E ∝ B."""

import copy
import math
import pickle
from statistics import NormalDist

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cotune.errors import InputError
from cotune.models import AccuracyModel
from cotune.models._accuracy import NOISE_RATIO_PRIOR, noise_prior_shift
from sklearn.base import clone

REF = 64.0


def _one_curve(**kw) -> AccuracyModel:
    """A model fitted on one saturating curve at the reference batch, no noise records."""
    ep = np.arange(1, 61, dtype=float)
    score = 1.0 - np.exp(-ep / 12.0)
    return AccuracyModel(**kw).fit(np.full(ep.size, REF), ep, score)


# -- the pure step -----------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(ratio=st.floats(1e-3, 1e4), mean=st.floats(-3.0, 8.0), sd=st.floats(0.0, 3.0))
def test_the_shift_lies_between_no_gain_and_the_no_benefit_bound(ratio, mean, sd):
    m, var = noise_prior_shift(np.array([REF * ratio]), np.array([REF]), mean=mean, sd=sd)
    bound = math.log(ratio)
    assert min(bound, 0.0) - 1e-12 <= m[0] <= max(bound, 0.0) + 1e-12
    assert var[0] >= 0.0 and math.sqrt(var[0]) <= abs(bound) + 1e-12


def test_the_shift_grows_with_the_batch():
    q = REF * np.geomspace(0.1, 1000.0, 40)
    m, _ = noise_prior_shift(q, np.full(q.size, REF), mean=3.8, sd=1.9)
    assert np.all(np.diff(m) > 0)


def test_without_spread_the_shift_is_the_law_at_the_priors_noise_scale():
    q = np.array([16.0, 128.0, 4096.0])
    bn = REF * math.exp(2.0)
    m, var = noise_prior_shift(q, np.full(3, REF), mean=2.0, sd=0.0)
    np.testing.assert_allclose(m, np.log((1 + q / bn) / (1 + REF / bn)), rtol=1e-12)
    np.testing.assert_allclose(var, 0.0, atol=1e-24)


def test_the_quadrature_matches_sampled_noise_scales():
    # An independent estimate: the law at 400,000 seeded draws of ln B_noise.
    rng = np.random.default_rng(7)
    r = rng.normal(3.8, 1.9, 400_000)
    for ratio in (2.0, 32.0, 0.25):
        bn = REF * np.exp(r)
        s = np.log1p(REF * ratio / bn) - np.log1p(REF / bn)
        m, var = noise_prior_shift(np.array([REF * ratio]), np.array([REF]), mean=3.8, sd=1.9)
        assert m[0] == pytest.approx(s.mean(), rel=0.01)
        assert math.sqrt(var[0]) == pytest.approx(s.std(), rel=0.01)


def test_intervals_cover_as_promised_on_seeded_truth_drawn_from_the_prior():
    # Truth: each workload's noise scale drawn from the prior itself, epochs by the law. The
    # predictive log-normal (mean shift, its spread) is an approximation of a bounded,
    # skewed mixture, so "about 90 %" is checked, not exactly 90 %.
    rng = np.random.default_rng(11)
    z = NormalDist().inv_cdf(0.95)
    mean, sd = NOISE_RATIO_PRIOR
    for ratio in (4.0, 32.0, 512.0):
        bn = REF * np.exp(rng.normal(mean, sd, 20_000))
        truth = np.log1p(REF * ratio / bn) - np.log1p(REF / bn)
        m, var = noise_prior_shift(np.array([REF * ratio]), np.array([REF]), mean=mean, sd=sd)
        covered = np.mean(np.abs(truth - m[0]) <= z * math.sqrt(var[0]))
        assert 0.85 <= covered <= 0.97, (ratio, covered)


# -- the model ---------------------------------------------------------------------------------
def test_one_curve_without_noise_predicts_between_no_gain_and_the_bound():
    m = _one_curve()
    big = np.array([REF * 32])
    at_ref = float(m.epochs_to_target(np.array([REF]), 0.9).epochs_if_reached[0])
    got = float(m.epochs_to_target(big, 0.9).epochs_if_reached[0])
    assert at_ref < got < 32 * at_ref


def test_one_curve_without_noise_is_less_sure_than_with_a_measured_noise_scale():
    q = np.array([REF * 4, REF * 32])
    without = _one_curve().epochs_to_target(q, 0.9).log_sigma
    with_noise = _one_curve(b_noise=REF * 40).epochs_to_target(q, 0.9).log_sigma
    assert np.all(without > with_noise)


def test_a_measured_noise_scale_is_not_touched_by_the_prior():
    q = np.array([REF / 4, REF * 4, REF * 32])
    a = _one_curve(b_noise=500.0).epochs_to_target(q, 0.9)
    b = _one_curve(b_noise=500.0, noise_ratio_prior=None).epochs_to_target(q, 0.9)
    np.testing.assert_array_equal(a.epochs_if_reached, b.epochs_if_reached)
    np.testing.assert_array_equal(a.log_sigma, b.log_sigma)


def test_no_prior_is_the_no_benefit_bound():
    m = _one_curve(noise_ratio_prior=None)
    at_ref = float(m.epochs_to_target(np.array([REF]), 0.9).epochs_if_reached[0])
    got = m.epochs_to_target(np.array([REF / 4, REF * 8]), 0.9).epochs_if_reached
    np.testing.assert_allclose(got, [at_ref, 8 * at_ref], rtol=1e-12)


def test_a_model_pickled_before_the_prior_existed_predicts_as_it_did():
    bound = _one_curve(noise_ratio_prior=None)
    old = copy.deepcopy(_one_curve())
    del old.__dict__["noise_ratio_prior"], old.__dict__["noise_ratio_prior_"]
    back = pickle.loads(pickle.dumps(old))
    assert back.get_params()["noise_ratio_prior"] == NOISE_RATIO_PRIOR
    q = np.array([REF / 4, REF * 8])
    want, got = (x.epochs_to_target(q, 0.9) for x in (bound, back))
    np.testing.assert_array_equal(got.epochs_if_reached, want.epochs_if_reached)
    np.testing.assert_array_equal(got.upper, want.upper)


def test_clone_keeps_the_prior():
    m = AccuracyModel(noise_ratio_prior=(1.0, 0.5))
    assert clone(m).get_params()["noise_ratio_prior"] == (1.0, 0.5)


@pytest.mark.parametrize("bad, says", [
    ((1.0,), "(mean, sd) pair"),
    ("3,2", "(mean, sd) pair"),
    ((math.nan, 1.0), "finite mean"),
    ((1.0, -0.5), "finite sd"),
])
def test_a_bad_prior_is_an_input_error_naming_it(bad, says):
    with pytest.raises(InputError, match=r"AccuracyModel\.noise_ratio_prior") as err:
        _one_curve(noise_ratio_prior=bad)
    assert says in str(err.value)
