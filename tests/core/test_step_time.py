import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cotune.errors import InputError, ModelError
from cotune.models import StepTimeModel, predict_log_step


def _data(theta, rng, noise=0.03, workers=(1, 2, 3, 4, 6, 8), batches=(16, 32, 64, 128, 256)):
    n, b = np.meshgrid(np.array(workers, float), np.array(batches, float), indexing="ij")
    n, b = n.ravel(), b.ravel()
    h = np.ceil(n / 4)
    y = np.exp(predict_log_step(theta, n, h, b) + rng.normal(0, noise, n.size))
    return n, h, b, y


def _theta(rng):
    return np.array(
        [rng.uniform(0.005, 0.05), rng.uniform(1e-4, 2e-3), rng.uniform(0.001, 0.02), rng.uniform(0, 0.01),
         rng.uniform(0.01, 0.05), rng.uniform(0, 0.02), rng.uniform(1, 4)]
    )


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**6))
def test_predictions_never_fall_as_batch_workers_or_hosts_grow(seed):
    """The monotone prior: inside the probed box, outside it, and across its edge (the level
    effects, which follow the probes where they are not monotone, are tested on their own)."""
    rng = np.random.default_rng(seed)
    m = StepTimeModel(n_bootstrap=0, level_effects=False).fit(*_data(_theta(rng), rng))
    b = np.geomspace(4, 4096, 50)
    for n in (1, 2, 3, 5, 8, 16, 64):
        p = m.predict(np.full_like(b, n), np.full_like(b, np.ceil(n / 4)), b).step_time_s
        assert np.all(np.diff(p) >= -1e-12 * p[:-1])
    n = np.arange(1, 129, dtype=float)
    for bb in (4.0, 24.0, 100.0, 300.0):
        for hosts in (np.ones_like(n), np.ceil(n / 4), np.minimum(n, 3.0)):
            p = m.predict(n, hosts, np.full_like(n, bb)).step_time_s
            assert np.all(np.diff(p) >= -1e-12 * p[:-1])
        for w in (4.0, 12.0):
            h = np.arange(1, w + 1)
            p = m.predict(np.full_like(h, w), h, np.full_like(h, bb)).step_time_s
            assert np.all(np.diff(p) >= -1e-12 * p[:-1])


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 10**6))
def test_backbone_is_monotone_in_workers_and_hosts(seed):
    rng = np.random.default_rng(seed)
    theta = StepTimeModel(n_bootstrap=0).fit(*_data(_theta(rng), rng)).backbone_.as_array()
    n = np.arange(2, 256, dtype=float)
    for b in (16.0, 256.0):
        same_host = np.exp(predict_log_step(theta, n, np.ones_like(n), np.full_like(n, b)))
        many_hosts = np.exp(predict_log_step(theta, n, np.full_like(n, 2), np.full_like(n, b)))
        assert np.all(np.diff(same_host) >= -1e-12) and np.all(np.diff(many_hosts) >= -1e-12)
    # Throughput per worker never exceeds the single-worker one (no super-linear scaling).
    single = np.exp(predict_log_step(theta, np.array([1.0]), np.array([1.0]), np.array([64.0])))
    assert np.all(np.exp(predict_log_step(theta, n, np.ceil(n / 4), np.full_like(n, 64.0))) >= single * (1 - 1e-9))


def test_recovers_a_known_law_and_flags_extrapolation():
    rng = np.random.default_rng(1)
    theta = np.array([0.01, 5e-4, 0.005, 0.002, 0.02, 0.004, 2.0])
    m = StepTimeModel().fit(*_data(theta, rng, noise=0.01))
    n = np.array([2.0, 4.0, 32.0])
    h = np.ceil(n / 4)
    b = np.array([64.0, 100.0, 64.0])
    p = m.predict(n, h, b)
    truth = np.exp(predict_log_step(theta, n, h, b))
    assert np.all(np.abs(p.step_time_s / truth - 1) < 0.08)
    assert p.extrapolated.tolist() == [False, False, True]
    assert np.all(p.lower_s <= p.step_time_s) and np.all(p.step_time_s <= p.upper_s)


def test_interval_widens_away_from_the_data():
    rng = np.random.default_rng(2)
    m = StepTimeModel(n_bootstrap=16).fit(*_data(_theta(rng), rng))
    near = m.predict(np.array([8.0]), np.array([2.0]), np.array([64.0]))
    far = m.predict(np.array([512.0]), np.array([128.0]), np.array([64.0]))
    assert far.log_sigma[0] >= near.log_sigma[0]


def test_a_host_crossing_no_probe_made_adds_kappa_hosts_to_the_spread():
    """One-host probes leave the inter-host terms a prior: several hosts get KAPPA_HOSTS more σ."""
    from cotune.models._step_time import KAPPA_HOSTS

    rng = np.random.default_rng(5)
    n, h, b, y = _data(_theta(rng), rng, workers=(1, 2, 3, 4))
    one = h == 1
    m = StepTimeModel(n_bootstrap=0).fit(n[one], h[one], b[one], y[one])
    q = (np.array([4.0, 4.0, 8.0, 8.0]), np.array([1.0, 2.0, 1.0, 2.0]), np.array([64.0] * 4))
    s = m.predict(*q).log_sigma
    assert s[1] ** 2 - s[0] ** 2 == pytest.approx(KAPPA_HOSTS**2)
    assert s[3] ** 2 - s[2] ** 2 == pytest.approx(KAPPA_HOSTS**2)
    assert StepTimeModel(n_bootstrap=0, kappa_hosts=0.0).fit(n[one], h[one], b[one], y[one]).predict(*q).log_sigma[1] == pytest.approx(s[0])


def test_once_a_probe_crossed_hosts_more_hosts_count_as_one_doubling_not_kappa_hosts():
    rng = np.random.default_rng(6)
    n, h, b, y = _data(_theta(rng), rng, workers=(1, 2, 3, 4, 6, 8))  # 4 per host: 6 and 8 cross
    m = StepTimeModel(n_bootstrap=0).fit(n, h, b, y)
    q = (np.array([8.0, 8.0]), np.array([2.0, 3.0]), np.array([64.0, 64.0]))
    s = m.predict(*q).log_sigma
    assert s[1] ** 2 - s[0] ** 2 == pytest.approx(m.kappa_step_**2)


def test_weighted_coverage_counts_each_group_once():
    from cotune.models._step_time import growth_for_coverage, z_for

    # 9 well-covered samples of one group and 1 far miss of another: unweighted, 90 % are
    # already covered (κ = 0); each group weighing one, the miss is half the mass.
    err = np.array([0.0] * 9 + [1.0])
    sigma, dist = np.full(10, 0.1), np.ones(10)
    assert growth_for_coverage(err, sigma, dist, level=0.9) == 0.0
    k = growth_for_coverage(err, sigma, dist, level=0.9, weights=np.array([1 / 9] * 9 + [1.0]))
    assert z_for(0.9) * np.sqrt(0.1**2 + k**2) == pytest.approx(1.0, rel=1e-6)


def test_repeated_measurements_are_used_not_dropped():
    rng = np.random.default_rng(4)
    n, h, b, y = _data(_theta(rng), rng)
    once = StepTimeModel(n_bootstrap=0).fit(n, h, b, y)
    twice = StepTimeModel(n_bootstrap=0).fit(np.r_[n, n], np.r_[h, h], np.r_[b, b], np.r_[y, y * 1.2])
    assert twice.n_observations_ == 2 * once.n_observations_
    q = (np.array([4.0]), np.array([1.0]), np.array([64.0]))
    assert twice.predict(*q).step_time_s[0] > once.predict(*q).step_time_s[0]


def test_single_worker_single_batch_profile_still_fits():
    m = StepTimeModel().fit(np.array([1.0, 1.0]), np.array([1.0, 1.0]), np.array([32.0, 32.0]), np.array([0.1, 0.12]))
    p = m.predict(np.array([1.0, 4.0]), np.array([1.0, 1.0]), np.array([32.0, 32.0]))
    assert np.all(np.isfinite(p.step_time_s)) and p.extrapolated.tolist() == [False, True]


def test_bad_inputs_raise_input_errors():
    with pytest.raises(ModelError):
        StepTimeModel().fit(np.array([]), np.array([]), np.array([]), np.array([]))
    with pytest.raises(InputError, match="step_time_s: must be finite numbers > 0, got -1"):
        StepTimeModel().fit(np.array([1.0]), np.array([1.0]), np.array([8.0]), np.array([-1.0]))
    with pytest.raises(ModelError, match="not fitted"):
        StepTimeModel().predict(np.array([1.0]), np.array([1.0]), np.array([8.0]))


@pytest.mark.slow
def test_pollux_cifar_cross_validated_error_is_small(cifar_models):
    from cotune import load_profile
    from cotune.models._validate import validate_profile

    report = validate_profile(load_profile("cifar10-resnet18"))
    (t,) = report.time
    assert t.cv_mape < 0.10  # measured 6.8 % (placement-to-placement noise is ~6 %)
    assert t.extrapolation_mape < 0.15  # fit on <= 12 workers, predict 13..64: measured 9.8 %


def _sync_world(rng, ratio):
    """A backbone whose sync growth is ``ratio`` × its constant, on one host (Pollux-like scales)."""
    a_r = rng.uniform(0.01, 0.04)
    return np.array([rng.uniform(0.005, 0.02), rng.uniform(1e-4, 5e-4), a_r, ratio * a_r, 1.1 * a_r, 1.1 * ratio * a_r, rng.uniform(1, 3)])


def test_two_worker_probes_tie_growth_to_the_sync_constant():
    """No probe above two workers: β_r = ρ · α_r and β_n follows the inter-host rule (1.1 β_r)."""
    from cotune.models import SYNC_GROWTH_RATIO, fit_backbone

    rng = np.random.default_rng(3)
    n, h, b, y = _data(_sync_world(rng, 0.5), rng, workers=(1, 2))
    p = fit_backbone(n, h, b, np.log(y))
    assert p[2] > 0 and p[3] == pytest.approx(SYNC_GROWTH_RATIO * p[2])
    assert p[5] == pytest.approx(1.1 * p[3])
    flat = fit_backbone(n, h, b, np.log(y), growth_ratio=0.0)
    assert flat[3] == 0.0 and flat[5] == 0.0


def test_growth_identified_by_probes_above_two_workers_ignores_the_ratio():
    """With probes on 1–8 workers growth is fitted, so the prior ratio changes nothing."""
    rng = np.random.default_rng(4)
    data = _data(_theta(rng), rng)
    q = (np.array([16.0, 32.0]), np.array([4.0, 8.0]), np.array([64.0, 64.0]))
    ps = [StepTimeModel(n_bootstrap=4, growth_ratio=r).fit(*data).predict(*q) for r in (0.0, 0.37, 5.0)]
    for p in ps[1:]:
        np.testing.assert_allclose(p.step_time_s, ps[0].step_time_s, rtol=1e-9)
        np.testing.assert_allclose(p.upper_s, ps[0].upper_s, rtol=1e-9)



def test_two_worker_probes_cover_a_world_whose_growth_is_the_prior():
    """Seeded worlds with growth ρ · α probed on ≤ 2 workers: the 90 % interval at 3–16 workers
    covers at least 85 % of the truth and is centred (the zero pin was optimistic here)."""
    from cotune.models import SYNC_GROWTH_RATIO

    errs, covered, errs_flat = [], [], []
    for seed in range(12):
        rng = np.random.default_rng(seed)
        theta = _sync_world(rng, SYNC_GROWTH_RATIO)
        n, _, b, y = _data(theta, rng, workers=(1, 2))
        h = np.ones_like(n)
        qn = np.repeat([3.0, 4.0, 8.0, 16.0], 3)
        qb = np.tile([16.0, 64.0, 256.0], 4)
        truth = np.exp(predict_log_step(theta, qn, np.ones_like(qn), qb))
        p = StepTimeModel(random_state=seed).fit(n, h, b, y).predict(qn, np.ones_like(qn), qb)
        flat = StepTimeModel(random_state=seed, growth_ratio=0.0).fit(n, h, b, y).predict(qn, np.ones_like(qn), qb)
        errs += list(np.log(truth / p.step_time_s))
        errs_flat += list(np.log(truth / flat.step_time_s))
        covered += list((p.lower_s <= truth) & (truth <= p.upper_s))
    assert np.mean(covered) >= 0.85
    assert abs(np.median(errs)) < 0.05
    assert np.median(errs_flat) > 0.1  # zero growth under-predicts a world that grows


def _two_worker_counts_one_batch():
    """Probes at one local batch: step time 0.1 s on one worker, 0.12 s on two."""
    return np.array([1.0, 2.0]), np.ones(2), np.array([64.0, 64.0]), np.array([0.1, 0.12])


def test_one_probed_batch_widens_other_batches_by_the_unknown_split():
    w, h, b, t = _two_worker_counts_one_batch()
    m = StepTimeModel(n_bootstrap=0, few_probe_kappa=None).fit(w, h, b, t)
    plain = StepTimeModel(n_bootstrap=0, few_probe_kappa=None, share_range=None).fit(w, h, b, t)
    q = np.array([64.0, 128.0, 512.0, 4096.0])
    s = m.predict(np.ones(4), np.ones(4), q).log_sigma
    s0 = plain.predict(np.ones(4), np.ones(4), q).log_sigma
    assert s[0] == pytest.approx(s0[0])  # the probed batch keeps its own spread
    assert np.all(np.diff(s) > 0) and s[2] > s0[2] + 0.3
    # The interval reaches from "flat" to "proportional" at 8x the batch.
    p = m.predict(np.ones(1), np.ones(1), np.array([512.0]))
    assert p.lower_s[0] <= 0.1 * 1.05 and p.upper_s[0] >= 0.1 * 8


def test_two_probed_batches_carry_no_split_spread():
    w, h, b, t = np.array([1.0, 1.0]), np.ones(2), np.array([64.0, 256.0]), np.array([0.1, 0.3])
    a = StepTimeModel(n_bootstrap=0, few_probe_kappa=None).fit(w, h, b, t)
    z = StepTimeModel(n_bootstrap=0, few_probe_kappa=None, share_range=None).fit(w, h, b, t)
    q = np.array([32.0, 128.0, 1024.0])
    assert np.allclose(a.predict(np.ones(3), np.ones(3), q).log_sigma, z.predict(np.ones(3), np.ones(3), q).log_sigma)


def test_few_probes_widen_with_the_distance_to_the_nearest_probe():
    from cotune.models import FEW_PROBE_KAPPA

    w, h, b, t = np.array([1.0, 4.0]), np.ones(2), np.array([64.0, 32.0]), np.array([0.1, 0.08])
    m = StepTimeModel(n_bootstrap=0).fit(w, h, b, t)
    bare = StepTimeModel(n_bootstrap=0, few_probe_kappa=None).fit(w, h, b, t)
    probed = m.predict(np.array([1.0]), np.ones(1), np.array([64.0])).log_sigma[0]
    assert probed == pytest.approx(bare.predict(np.array([1.0]), np.ones(1), np.array([64.0])).log_sigma[0])
    s, s0 = (x.predict(np.array([2.0]), np.ones(1), np.array([48.0])).log_sigma[0] for x in (m, bare))
    # One doubling of workers and log2(64/48) of batch from the nearest probe, (1, 64).
    d = 1.0 + np.log2(64 / 48)
    assert s**2 == pytest.approx(s0**2 + (FEW_PROBE_KAPPA[1] * d) ** 2)
    far = m.predict(np.array([16.0]), np.ones(1), np.array([48.0])).log_sigma[0]
    assert far > s  # farther from every probe, wider


def test_six_probed_configurations_are_cross_validated_instead():
    rng = np.random.default_rng(3)
    w, h, b, t = _data(_theta(rng), rng, workers=(1, 2, 4), batches=(32, 64))
    m = StepTimeModel(n_bootstrap=0).fit(w, h, b, t)
    bare = StepTimeModel(n_bootstrap=0, few_probe_kappa=None).fit(w, h, b, t)
    q = (np.array([3.0, 8.0]), np.array([1.0, 2.0]), np.array([48.0, 128.0]))
    assert np.allclose(m.predict(*q).log_sigma, bare.predict(*q).log_sigma)


def test_one_worker_probes_predict_the_measured_two_worker_slowdown():
    from cotune.models import SYNC_CONSTANT_RATIO

    m = StepTimeModel(n_bootstrap=0).fit(np.array([1.0, 1.0]), np.ones(2), np.array([64.0, 128.0]), np.array([0.1, 0.18]))
    two = m.predict(np.array([2.0]), np.ones(1), np.array([64.0])).step_time_s[0]
    # The sync constant is that share of the typical (median) one-worker step, 0.14 s here.
    assert two == pytest.approx(0.1 + SYNC_CONSTANT_RATIO * 0.14, rel=0.01)


# -- σ_growth: the unknown sync growth when no probe ran above two workers -------------------
@pytest.mark.parametrize(
    ("workers", "hosts", "identified"),
    [
        ((1, 2), (1, 1), False),  # two workers: log2(n − 1) = 0
        ((1, 4), (1, 1), False),  # one larger count alone: constant and growth trade off
        ((4,), (1,), False),  # a previous run's 4 × 64
        ((1, 2, 4), (1, 1, 1), True),
        ((1, 3, 4), (1, 1, 1), True),
        ((1, 2, 8), (1, 1, 2), False),  # one value per host class
        ((1, 4, 8), (1, 2, 2), True),  # two across hosts
    ],
)
def test_growth_is_identified_by_two_distinct_sync_rounds_in_one_host_class(workers, hosts, identified):
    from cotune.models import growth_identified

    assert growth_identified(np.array(workers, float), np.array(hosts, float)) is identified


def test_one_larger_worker_count_alone_ties_growth_to_the_constant_instead_of_flattening_it():
    """Probes at 1 and 4 workers (one batch each of two): the fit used to settle on no growth
    (sync flat to 64 workers); tied, it grows by the prior ratio, and its spread with it."""
    from cotune.models import SYNC_GROWTH_RATIO

    rng = np.random.default_rng(7)
    theta = _sync_world(rng, SYNC_GROWTH_RATIO)
    n, _, b, y = _data(theta, rng, workers=(1, 4), noise=0.0)
    h = np.ones_like(n)
    m = StepTimeModel(n_bootstrap=0).fit(n, h, b, y)
    qn = np.array([4.0, 16.0, 64.0])
    truth = np.exp(predict_log_step(theta, qn, np.ones(3), np.full(3, 64.0)))
    p = m.predict(qn, np.ones(3), np.full(3, 64.0))
    assert np.allclose(p.step_time_s, truth, rtol=0.05)  # the prior ratio is this world's
    bare = StepTimeModel(n_bootstrap=0, growth_range=None).fit(n, h, b, y).predict(qn, np.ones(3), np.full(3, 64.0))
    extra = np.sqrt(np.maximum(p.log_sigma**2 - bare.log_sigma**2, 0.0))
    assert extra[0] < 0.02 and extra[1] < extra[2]  # none at the probed count, growing past it


def test_unknown_growth_widens_extrapolations_in_workers_only():
    rng = np.random.default_rng(2)
    n, _, b, y = _data(_sync_world(rng, 0.37), rng, workers=(1, 2))
    h = np.ones_like(n)
    m = StepTimeModel(n_bootstrap=0).fit(n, h, b, y)
    bare = StepTimeModel(n_bootstrap=0, growth_range=None).fit(n, h, b, y)
    qn = np.array([1.0, 2.0, 3.0, 8.0, 64.0])
    s, s0 = (x.predict(qn, np.ones(5), np.full(5, 64.0)).log_sigma for x in (m, bare))
    assert np.allclose(s[:2], s0[:2])  # one and two workers: log2(n − 1) = 0, nothing to grow
    extra = np.sqrt(s**2 - s0**2)
    assert np.all(np.diff(extra[1:]) > 0) and extra[-1] > 0.1  # grows with the workers
    # The prediction itself is the prior ratio's: only the spread moved.
    np.testing.assert_allclose(m.predict(qn, np.ones(5), np.full(5, 64.0)).step_time_s,
                               bare.predict(qn, np.ones(5), np.full(5, 64.0)).step_time_s)


def test_growth_measured_by_a_probe_above_two_workers_carries_no_growth_spread():
    rng = np.random.default_rng(4)
    data = _data(_theta(rng), rng, workers=(1, 2, 4))
    q = (np.array([16.0, 64.0]), np.array([4.0, 16.0]), np.array([64.0, 64.0]))
    a = StepTimeModel(n_bootstrap=0).fit(*data).predict(*q)
    z = StepTimeModel(n_bootstrap=0, growth_range=None).fit(*data).predict(*q)
    np.testing.assert_allclose(a.log_sigma, z.log_sigma)


def test_two_worker_probes_cover_worlds_whose_growth_spreads_as_the_range_says():
    """Seeded worlds whose growth ratio is drawn log-uniformly across SYNC_GROWTH_RANGE (one
    cluster's β_r / α_r, unknown to ≤ 2-worker probes): at 16 and 64 workers the 90 %
    interval covers about 90 % of them; without σ_growth the fast- and slow-growing ends
    fall out (the prior ratio alone is right for one world in many)."""
    from cotune.models import SYNC_GROWTH_RANGE

    lo, hi = np.log(0.05), np.log(SYNC_GROWTH_RANGE[1])
    covered, covered_bare = [], []
    for seed in range(24):
        rng = np.random.default_rng(seed)
        theta = _sync_world(rng, float(np.exp(rng.uniform(lo, hi))))
        n, _, b, y = _data(theta, rng, workers=(1, 2))
        h = np.ones_like(n)
        qn, qb = np.repeat([16.0, 64.0], 3), np.tile([16.0, 64.0, 256.0], 2)
        truth = np.exp(predict_log_step(theta, qn, np.ones_like(qn), qb))
        for model, out in ((StepTimeModel(n_bootstrap=0), covered), (StepTimeModel(n_bootstrap=0, growth_range=None), covered_bare)):
            p = model.fit(n, h, b, y).predict(qn, np.ones_like(qn), qb)
            out += list((p.lower_s <= truth) & (truth <= p.upper_s))
    assert 0.85 <= np.mean(covered) <= 0.99  # 0.97 here: log-uniform puts more worlds at the ends
    assert np.mean(covered_bare) < 0.8  # 0.67


@pytest.mark.slow  # two validate_profile runs
def test_cotune_fit_says_when_sync_growth_is_a_prior_and_how_to_measure_it(tmp_path):
    import cotune
    from _helpers import synthetic_records, write_jsonl
    from cotune.cli._render import render_fit_report
    from cotune.models._validate import validate_profile

    def report(workers):
        recs = synthetic_records(workers=workers, batches=(16, 32, 64, 128))
        return validate_profile(cotune.load_profile(str(write_jsonl(tmp_path / f"w{len(workers)}.jsonl", recs))))

    two, four = report((1, 2)), report((1, 2, 4))
    assert two.time[0].sync_growth_measured is False and four.time[0].sync_growth_measured is True
    text = render_fit_report(two)
    assert "how synchronisation grows with workers is not measured" in text and "past 2 workers" in text
    assert "probe another worker count to measure it" in text
    assert "how synchronisation grows" not in render_fit_report(four)


@pytest.mark.parametrize("level", [1e-7, 1e-3, 0.2, 0.5, 0.8, 0.99])
def test_the_spread_is_calibrated_at_one_level_whatever_the_interval(level):
    # σ is the prediction's spread, which P(success) reads: calibrated at the interval's own
    # level, `--interval 0.8` moved P(success) and the chosen plan; at 1e-7 σ read 1,444
    # (0.082 at 0.9) and `recommend --interval 0.0000001` overflowed.
    rng = np.random.default_rng(3)
    data = _data(_theta(rng), rng)
    at = StepTimeModel(interval=level, random_state=0).fit(*data)
    ref = StepTimeModel(interval=0.9, random_state=0).fit(*data)
    assert at.residual_sigma_ == ref.residual_sigma_ and at.cv_sigma_ == ref.cv_sigma_
    assert at.kappa_step_ == ref.kappa_step_
    q = (np.array([2.0, 64.0]), np.array([1.0, 16.0]), np.array([64.0, 512.0]))
    p_at, p_ref = at.predict(*q), ref.predict(*q)
    assert np.allclose(p_at.step_time_s, p_ref.step_time_s) and np.allclose(p_at.log_sigma, p_ref.log_sigma)
    # Same σ, its own z: a narrower interval lies inside the 90 % one around the same centre.
    inside = (p_ref, p_at) if level > 0.9 else (p_at, p_ref)
    assert np.all(inside[1].lower_s <= inside[0].lower_s) and np.all(inside[0].upper_s <= inside[1].upper_s)
    assert np.all(p_at.lower_s <= p_at.step_time_s) and np.all(p_at.step_time_s <= p_at.upper_s)


def _dominance_oracle(points, rho, queries):
    """``(L + U) / 2`` of the envelope by its definition, one query and one point at a time:
    ``L`` the largest ρ of the points ≤ the query (else min ρ), ``U`` the smallest of those ≥ it
    (else max ρ)."""
    out = []
    for q in queries:
        below = [r for p, r in zip(points, rho) if all(pa <= qa for pa, qa in zip(p, q))]
        above = [r for p, r in zip(points, rho) if all(pa >= qa for pa, qa in zip(p, q))]
        out.append(0.5 * (max(below, default=min(rho)) + min(above, default=max(rho))))
    return np.array(out)


@pytest.mark.parametrize("block", [1, 7, 2**18])
def test_the_envelope_answers_as_the_dominance_definition_whatever_the_block(block, monkeypatch):
    # A block smaller than the probes compares them a query cell at a time and with many
    # small blocks takes the sorting path for the cells: each must give the definition's answer.
    import cotune.models._step_time as st

    monkeypatch.setattr(st, "ENVELOPE_BLOCK_ELEMENTS", block)
    rng = np.random.default_rng(block)
    for _ in range(20):
        k = int(rng.integers(1, 30))
        pts = np.column_stack([rng.integers(1, 9, k), rng.integers(1, 4, k), 2.0 ** rng.integers(2, 7, k)]).astype(float)
        pts = np.unique(pts, axis=0)
        rho = rng.normal(size=len(pts))
        m = StepTimeModel()
        m._build_envelope(pts, rho)
        # Probed values, values between them and values beyond both ends of each axis.
        q = np.column_stack([rng.integers(0, 11, 200) + rng.choice([0.0, 0.5], 200), rng.integers(0, 5, 200),
                             2.0 ** rng.integers(1, 8, 200)]).astype(float)
        np.testing.assert_array_equal(m._correction_at(q[:, 0], q[:, 1], q[:, 2]), _dominance_oracle(pts, rho, q))


def test_five_hundred_distinct_configurations_fit_in_bounded_memory():
    # The envelope was a dense table over every distinct workers × hosts × batch value:
    # 500 × 250 × 500 cells, 0.5 GB a table, and a MemoryError at 700 configurations.
    import tracemalloc

    k = 500
    w = np.arange(1, k + 1, dtype=float)
    h, b = np.maximum(1.0, np.floor(w / 2)), 4.0 * w
    theta = np.array([0.02, 8e-4, 0.01, 0.004, 0.03, 0.01, 2.0])
    t = np.exp(predict_log_step(theta, w, h, b) + np.random.default_rng(0).normal(0, 0.05, k))
    tracemalloc.start()
    try:
        m = StepTimeModel(n_bootstrap=0).fit(w, h, b, t)
        peak_bytes = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert m.points_.shape == (k, 3)
    assert peak_bytes < 64 * 2**20


def test_fewer_hosts_than_every_probe_used_is_extrapolated():
    theta = np.array([0.02, 8e-4, 0.01, 0.004, 0.03, 0.01, 2.0])
    w, b = (g.ravel() for g in np.meshgrid([2.0, 4, 8], [32.0, 64, 128], indexing="ij"))
    h = np.full_like(w, 2.0)  # every probe on two hosts
    m = StepTimeModel().fit(w, h, b, np.exp(predict_log_step(theta, w, h, b)))
    p = m.predict(np.array([4.0, 4.0]), np.array([2.0, 1.0]), np.array([64.0, 64.0]))
    assert p.extrapolated.tolist() == [False, True]


@pytest.mark.parametrize(
    "params, message",
    [
        ({"share_range": (2.0, 3.0)}, "share_range: must be a finite number >= 0 and <= 1, got 2.0"),
        ({"share_range": (-1.0, 0.5)}, "share_range: must be a finite number >= 0 and <= 1, got -1.0"),
        ({"share_range": (0.9, 0.1)}, "share_range: must be a pair .low, high. with low <= high"),
        ({"growth_range": (1.0,)}, r"growth_range: must be None or a pair \(low, high\)"),
        ({"growth_range": (-5.0, -3.0)}, "growth_range: must be a finite number >= 0, got -5.0"),
        ({"few_probe_kappa": (float("nan"),) * 5}, "few_probe_kappa: must be a finite number >= 0.*got nan"),
        ({"few_probe_kappa": 0.1}, "few_probe_kappa: must be None or a tuple of numbers >= 0"),
    ],
)
def test_a_range_or_table_parameter_out_of_its_domain_is_a_bad_value(params, message):
    from cotune._checks import BadValue

    w = np.array([1.0, 2, 4, 8])
    with pytest.raises(BadValue, match=message):
        StepTimeModel(**params).fit(w, np.ones(4), np.full(4, 32.0), np.array([0.1, 0.11, 0.12, 0.13]))


def test_a_departure_carries_its_offset_at_each_probed_batch():
    # 2–4 workers run 40 % faster per step than 1 (seed 3: one median offset for the one-worker
    # probes left them −45 % at batch 16 and +40 % at 128).
    w, b = np.repeat([1.0, 2, 3, 4], 4), np.tile([16.0, 32, 64, 128], 4)
    rng = np.random.default_rng(3)
    t = (0.02 + 0.0006 * b) * np.where(w > 1, 0.6, 1.0) * np.exp(rng.normal(0, 0.01, w.size))
    m = StepTimeModel(n_bootstrap=0).fit(w, np.ones_like(w), b, t)
    assert m.departures_ == ((1, "one host"),)
    one = w == 1
    p = m.predict(w[one], np.ones(4), b[one]).step_time_s
    assert np.all(np.abs(p / t[one] - 1) < 0.05)


def test_the_departure_note_says_slower_when_fewer_workers_are_the_slow_side():
    import json

    from cotune import fit_models, parse_profile

    recs = [{"record": "workload", "name": "superlinear", "dataset_size": 50_000, "metric": "acc", "goal": "max"}]
    for n in (1, 2, 3, 4):
        for bb in (16, 32, 64, 128):
            # More workers 30 % faster per step than one (a model that fits in cache once split).
            recs.append({"record": "step", "gpu": "t4", "workers": n, "hosts": 1, "local_batch": bb,
                         "step_time_s": (0.02 + 0.0006 * bb) * (0.7 if n > 1 else 1.0)})
    for gb in (64, 256, 1024):
        recs += [{"record": "eval", "global_batch": gb, "epoch": e, "metric": 0.9 * (1 - np.exp(-e / 3))} for e in range(1, 21)]
    m = fit_models(parse_profile([json.dumps(r) for r in recs]), n_bootstrap=0)
    notes = [n for n in m.gpu_notes["t4"] if "1 worker" in n]
    assert m.time_models["t4"].departure_ratios_[0] > 1.0
    assert len(notes) == 1 and "slower in the probes" in notes[0] and "faster in the probes" not in notes[0]



def _four_worker_profile(tmp_path, *, with_sync: bool):
    """Probes at four workers on one host only, every batch, from a known law with overlap
    (γ = 2; times between adding and the larger of the two): the one-worker truth and the
    profile of those probes, with the exposed sync time (step less compute) or without."""
    import json

    from cotune.models import fit_models

    theta = np.array([0.04, 2e-4, 0.015, 0.005, 0.0165, 0.0055, 2.0])
    b = np.array([32.0, 64.0, 128.0, 256.0, 512.0, 1024.0])
    t4 = np.exp(predict_log_step(theta, np.full(b.size, 4.0), np.ones(b.size), b))
    t1 = np.exp(predict_log_step(theta, np.ones(b.size), np.ones(b.size), b))
    recs = [{"record": "workload", "name": "w", "dataset_size": 50000, "metric": "top1", "goal": "max"}]
    for bb, t, c in zip(b, t4, t1):
        rec = {"record": "step", "gpu": "g", "workers": 4, "local_batch": int(bb), "step_time_s": float(t)}
        recs.append({**rec, "sync_time_s": float(t - c)} if with_sync else rec)
    recs += [{"record": "eval", "global_batch": 512, "epoch": float(e), "metric": 0.9 * (1 - np.exp(-e / 5))} for e in range(1, 31)]
    path = tmp_path / "four.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return b, t1, fit_models(str(path), n_bootstrap=0)


def test_one_worker_step_from_four_worker_probes_with_sync_time_is_their_compute_time(tmp_path):
    # Before, compute and sync traded off freely with no one-worker probe and sync_time_s was
    # read nowhere: Sia's RTX probes at four workers put the one-worker step 2–4.5× too fast,
    # below the probes' own compute time, with an interval that missed (here 0.19–0.85×).
    b, compute, models = _four_worker_profile(tmp_path, with_sync=True)
    p = models.predict_step("g", np.ones(b.size), np.ones(b.size), b)
    assert np.all((p.lower_s <= compute) & (compute <= p.upper_s))
    assert np.all(p.step_time_s >= 0.95 * compute)
    assert np.all(p.extrapolated)


def test_one_worker_step_from_four_worker_probes_without_sync_time_covers_the_truth(tmp_path):
    # No sync time recorded: the compute part is the step less the prior sync share, and the
    # interval carries that prior's spread (before: 0.19–0.85× the truth, 1 of 6 covered).
    b, truth, models = _four_worker_profile(tmp_path, with_sync=False)
    p = models.predict_step("g", np.ones(b.size), np.ones(b.size), b)
    assert np.all((p.lower_s <= truth) & (truth <= p.upper_s))
    assert np.all(p.extrapolated)


def test_the_uncertaintys_refits_of_a_profile_of_many_configurations_use_a_bounded_subset(monkeypatch):
    # 38,000 distinct configurations took 155 s to fit: each of the ~22 refits behind σ_cv,
    # the profile's own κ and the bootstrap fitted the backbone to every configuration.
    import cotune.models._step_time as step_time
    from cotune.models._step_time import MAX_CALIBRATION_POINTS

    sizes: list[int] = []
    real = step_time.fit_backbone

    def counted(workers, *args, **kwargs):
        sizes.append(len(workers))
        return real(workers, *args, **kwargs)

    monkeypatch.setattr(step_time, "fit_backbone", counted)
    rng = np.random.default_rng(0)
    w, b = (v.ravel().astype(float) for v in np.meshgrid(np.arange(1, 41), 8.0 * np.arange(1, 31)))
    h = np.ceil(w / 4)
    t = 0.01 * b / 8 * (1 + 0.01 * w) * (1 + 0.1 * rng.random(w.size))
    model = StepTimeModel().fit(w, h, b, t)
    assert len(model.points_) == 1200 > MAX_CALIBRATION_POINTS
    full = [n for n in sizes if n == 1200]
    assert full and len(full) <= 4  # the final fit (and its departures' refit, growth ends) alone
    assert max(n for n in sizes if n != 1200) <= MAX_CALIBRATION_POINTS
    assert len(sizes) - len(full) >= 16  # the bootstrap and the refits still ran


def test_a_space_filling_subset_keeps_the_probed_box():
    from cotune.models._step_time import space_filling_subset

    w, b = (v.ravel().astype(float) for v in np.meshgrid(np.arange(1, 41), 8.0 * np.arange(1, 31)))
    points = np.column_stack([w, np.ceil(w / 4), b])
    sub = points[space_filling_subset(points, 100)]
    assert len(np.unique(sub, axis=0)) == 100
    assert (sub.min(axis=0) == points.min(axis=0)).all() and (sub.max(axis=0) == points.max(axis=0)).all()
    np.testing.assert_array_equal(space_filling_subset(points, 100), space_filling_subset(points, 100))


def test_sigma_sync_measures_the_ends_of_the_sync_range_from_the_probes_own_step():
    # Each end of SYNC_CONSTANT_RANGE was shifted from the anchors that already carried the
    # prior sync share: the r = 0 end was the fit itself and the r = 0.64 end took the share
    # twice (σ_sync 0.298 here where the ends themselves give 0.238).
    import math

    from cotune.models import SYNC_CONSTANT_RANGE, fit_backbone, z_for

    w = np.repeat([2.0, 4.0, 8.0], 3)
    b = np.tile([16.0, 32.0, 64.0], 3)
    h = np.ones_like(w)
    t = 0.01 * b / 16 + 0.05 * (1 + 0.3 * np.log2(w))
    m = StepTimeModel(random_state=0).fit(w, h, b, t)
    assert m.compute_anchor_ == "prior"
    one = (np.ones(3), np.ones(3), np.array([16.0, 32.0, 64.0]))
    fitted = predict_log_step(m._theta, *one)
    two = w == 2.0
    anchors = np.column_stack([np.ones(3), np.ones(3), b[two]])
    ends = []
    for r in SYNC_CONSTANT_RANGE:
        share = math.log1p(r * (1.0 + m.growth_ratio * math.log2(max(2.0 - 1.0, 1.0))))
        pts = np.concatenate([m.points_, anchors])
        log_step = np.concatenate([np.log(t), np.log(t[two]) - share])
        theta = fit_backbone(pts[:, 0], pts[:, 1], pts[:, 2], log_step, np.ones(len(pts)), init=m._theta, growth_ratio=m.growth_ratio)
        ends.append(predict_log_step(theta, *one))
    expected = np.max(np.abs(np.stack(ends) - fitted), axis=0) / z_for(0.9)
    np.testing.assert_allclose(m._sync_sigma(*one), expected, rtol=1e-3)


def test_the_uncertaintys_refits_fit_no_sync_ends():
    # Cross-validation and the own-κ refits serve their means alone: they fitted both ends of
    # SYNC_CONSTANT_RANGE (two backbone fits each) and never used them.
    w = np.repeat([2.0, 4.0, 8.0], 3)
    b = np.tile([16.0, 32.0, 64.0], 3)
    t = 0.01 * b / 16 + 0.05 * (1 + 0.3 * np.log2(w))
    m = StepTimeModel(random_state=0).fit(w, np.ones_like(w), b, t)
    assert len(m._sync_ends) == 2
    assert m._refit(m.points_, np.log(t))._sync_ends == ()
