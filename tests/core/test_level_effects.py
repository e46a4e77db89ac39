"""Level effects: the step-time model follows the probes where they are not monotone."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from cotune.errors import InputError
from cotune.models import StepTimeModel, predict_log_step
from cotune.models._effects import (describe_level_effect, fit_level_effects, largest_level_effects,
                                    predict_level_effects)

_THETA = np.array([0.02, 8e-4, 0.01, 0.004, 0.03, 0.01, 2.0])


def _grid(workers=(1, 2, 3, 4, 6, 8), batches=(8, 12, 16, 24, 32, 48, 64)):
    n, b = np.meshgrid(np.array(workers, float), np.array(batches, float), indexing="ij")
    n, b = n.ravel(), b.ravel()
    return n, np.ceil(n / 4), b


def _law(n, h, b, rng, noise=0.01):
    return np.exp(predict_log_step(_THETA, n, h, b) + rng.normal(0, noise, n.size))


def test_exactly_additive_residuals_are_recovered_without_shrinkage() -> None:
    n, h, b = _grid()
    points = np.column_stack([n, h, b])
    alpha = {8.0: 0.1, 12.0: -0.2, 16.0: 0.05, 24.0: -0.15, 32.0: 0.0, 48.0: 0.2, 64.0: -0.05}
    residual = np.array([alpha[v] for v in b]) + 0.3 * (h > 1)
    eff = fit_level_effects(points, residual, shrinkage=0.0)
    np.testing.assert_allclose(predict_level_effects(eff, n, h, b), residual, atol=1e-6)


def test_shrinkage_pulls_a_lone_level_towards_zero() -> None:
    n, h, b = _grid()
    # one placement (5 workers on 2 hosts) probed once, 0.4 off the law; the rest on it
    points = np.vstack([np.column_stack([n, h, b]), [5.0, 2.0, 24.0]])
    residual = np.r_[np.zeros(n.size), 0.4]
    moved = [float(predict_level_effects(fit_level_effects(points, residual, shrinkage=s), [5.0], [2.0], [24.0])[0]) for s in (0.0, 1.0, 4.0)]
    assert moved[0] == pytest.approx(0.4, abs=1e-6)
    assert 0.0 < moved[2] < moved[1] < 0.4


def test_a_level_no_probe_visited_has_no_effect() -> None:
    n, h, b = _grid()
    rng = np.random.default_rng(0)
    eff = fit_level_effects(np.column_stack([n, h, b]), rng.normal(0, 0.2, n.size))
    # batch 20 and 5 hosts were never probed, nor any of their pairs
    assert predict_level_effects(eff, [2.0], [5.0], [20.0])[0] == 0.0


def test_the_largest_effects_name_the_misaligned_batch_and_the_uneven_placement_first() -> None:
    n, h, b = _grid()
    points = np.vstack([np.column_stack([n, h, b]), [[3.0, 2.0, 16.0], [3.0, 2.0, 32.0]]])
    residual = np.where(points[:, 2] == 12.0, np.log(1.3), 0.0) + np.where((points[:, 0] == 3) & (points[:, 1] == 2), np.log(1.6), 0.0)
    largest = largest_level_effects(fit_level_effects(points, residual, shrinkage=0.0), points, limit=3)
    assert [(k, lv) for k, lv, _ in largest[:2]] == [("placement", (3.0, 2.0)), ("local batch", (12.0,))]
    assert largest[0][2] == pytest.approx(1.6, rel=0.02) and largest[1][2] == pytest.approx(1.3, rel=0.05)
    assert all(abs(r - 1) >= 0.05 for _, _, r in largest)  # the rest follow the law: not listed
    assert len(largest) == 2


def test_an_effect_is_described_in_words_with_singular_and_plural_counts() -> None:
    assert describe_level_effect(("placement", (1.0, 1.0), 1.13)) == "1 worker on 1 host 13% slower"
    assert describe_level_effect(("placement", (8.0, 2.0), 0.76)) == "8 workers on 2 hosts 24% faster"
    assert describe_level_effect(("local batch", (6.0,), 1.23)) == "local batch 6 23% slower"


def test_negative_shrinkage_is_refused() -> None:
    with pytest.raises(ValueError, match="shrinkage must be >= 0"):
        fit_level_effects(np.ones((2, 3)), np.zeros(2), shrinkage=-1.0)


def _misaligned(rng):
    """The law, but local batches 12 and 24 (not multiples of 16) run 25 % slower at every worker count."""
    n, h, b = _grid()
    y = _law(n, h, b, rng) * np.where(np.isin(b, (12.0, 24.0)), 1.25, 1.0)
    return n, h, b, y


@pytest.mark.parametrize("seed", range(4))
def test_a_misaligned_batch_is_predicted_where_no_probe_ran_it(seed) -> None:
    """Held out: (3 workers, batch 24). Its batch's effect, seen at the other worker counts, carries to it."""
    rng = np.random.default_rng(seed)
    n, h, b, y = _misaligned(rng)
    keep = ~((n == 3) & (b == 24))
    auto = StepTimeModel(n_bootstrap=0).fit(n[keep], h[keep], b[keep], y[keep])
    monotone = StepTimeModel(n_bootstrap=0, level_effects=False).fit(n[keep], h[keep], b[keep], y[keep])
    truth = float(y[~keep][0])
    assert auto.level_effects_
    assert abs(auto.predict(3.0, 1.0, 24.0).step_time_s / truth - 1) < 0.06
    assert abs(monotone.predict(3.0, 1.0, 24.0).step_time_s / truth - 1) > 0.10


def test_an_uneven_placement_is_slower_than_an_even_one_when_the_probes_say_so() -> None:
    """3 workers as 2 + 1 on two hosts wait on their slowest link; as 1 + 1 + 1 on three they do not."""
    rng = np.random.default_rng(5)
    rows = []
    for w, h in ((1, 1), (2, 1), (2, 2), (3, 1), (3, 2), (3, 3), (4, 1), (4, 2), (4, 4)):
        for b in (8.0, 16.0, 32.0, 64.0):
            t = float(np.exp(predict_log_step(_THETA, np.array([w], float), np.array([h], float), np.array([b]))[0]))
            uneven = h > 1 and w % h != 0
            rows.append((w, h, b, t * (1.5 if uneven else 1.0) * np.exp(rng.normal(0, 0.01))))
    n, h, b, y = (np.array(c, float) for c in zip(*rows))
    keep = ~((n == 3) & (h == 2) & (b == 32))
    m = StepTimeModel(n_bootstrap=0).fit(n[keep], h[keep], b[keep], y[keep])
    monotone = StepTimeModel(n_bootstrap=0, level_effects=False).fit(n[keep], h[keep], b[keep], y[keep])
    uneven, even = m.predict(np.array([3.0, 3.0]), np.array([2.0, 3.0]), np.array([32.0, 32.0])).step_time_s
    assert m.level_effects_
    assert uneven > 1.2 * even  # monotone in hosts, the prior alone predicts uneven <= even
    # three probes of the placement carry 3/4 of its offset (one pseudo-observation at zero)
    assert abs(uneven / y[~keep][0] - 1) < 0.12
    assert abs(monotone.predict(3.0, 2.0, 32.0).step_time_s / y[~keep][0] - 1) > 0.25


def test_effects_leave_queries_outside_the_probed_box_to_the_law() -> None:
    rng = np.random.default_rng(1)
    n, h, b, y = _misaligned(rng)
    on = StepTimeModel(n_bootstrap=0, level_effects=True).fit(n, h, b, y)
    off = StepTimeModel(n_bootstrap=0, level_effects=False).fit(n, h, b, y)
    far = (np.array([16.0, 32.0, 8.0]), np.array([4.0, 8.0, 2.0]), np.array([24.0, 12.0, 128.0]))
    np.testing.assert_allclose(on._log_mean(*far), off._log_mean(*far), rtol=0, atol=1e-12)
    assert not np.allclose(on._log_mean(np.array([6.0]), np.array([2.0]), np.array([24.0])), off._log_mean(np.array([6.0]), np.array([2.0]), np.array([24.0])))


@pytest.mark.slow  # 40 fits (about 7 s on a loaded machine)
def test_a_profile_that_follows_the_law_mostly_keeps_the_monotone_prior() -> None:
    """Effects fitted to noise rarely beat the law in cross-validation by the required share."""
    adopted = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        n, h, b = _grid()
        adopted += StepTimeModel(n_bootstrap=0).fit(n, h, b, _law(n, h, b, rng, noise=0.03)).level_effects_
    misaligned = sum(StepTimeModel(n_bootstrap=0).fit(*_misaligned(np.random.default_rng(s))).level_effects_ for s in range(20))
    assert adopted <= 5 and misaligned == 20  # measured: 2 of 20


def test_the_intervals_inside_are_set_by_the_cross_validated_error_with_the_effects() -> None:
    rng = np.random.default_rng(2)
    n, h, b, y = _misaligned(rng)
    on = StepTimeModel(n_bootstrap=0).fit(n, h, b, y)
    off = StepTimeModel(n_bootstrap=0, level_effects=False).fit(n, h, b, y)
    mid = (np.array([3.0]), np.array([1.0]), np.array([24.0]))
    assert on.cv_sigma_ < off.cv_sigma_
    assert on.predict(*mid).log_sigma[0] < off.predict(*mid).log_sigma[0]
    # outside the probed box the extrapolation terms sit beside the monotone law's error, as before
    assert on.cv_sigma_outside_ == pytest.approx(off.cv_sigma_)


def test_level_effects_must_be_a_known_choice() -> None:
    n, h, b, y = _misaligned(np.random.default_rng(0))
    with pytest.raises(InputError, match=r"StepTimeModel\.level_effects: must be True, False or 'auto', got 'yes'"):
        StepTimeModel(level_effects="yes").fit(n, h, b, y)


def test_clone_keeps_the_choice() -> None:
    m = StepTimeModel(level_effects=False)
    assert clone(m).get_params()["level_effects"] is False


def _profile(tmp_path, *, misaligned: bool):
    import cotune
    from _helpers import synthetic_records, write_jsonl

    recs = synthetic_records(workers=(1, 2, 3, 4, 6, 8), batches=(16, 24, 32, 48, 64, 128))
    if misaligned:  # batches 24 and 48 run 30 % slower than the law at every worker count
        recs = [dict(r, step_time_s=r["step_time_s"] * 1.3) if r["record"] == "step" and r["local_batch"] in (24, 48) else r
                for r in recs]
    return cotune.load_profile(str(write_jsonl(tmp_path / f"p{int(misaligned)}.jsonl", recs)))


@pytest.mark.slow  # two validate_profile runs (about 5 s)
def test_cotune_fit_says_when_it_keeps_level_effects_and_what_they_bought(tmp_path) -> None:
    from cotune.cli._render import render_fit_report
    from cotune.models._validate import validate_profile

    lawful, misaligned = (validate_profile(_profile(tmp_path, misaligned=m)) for m in (False, True))
    (t,) = misaligned.time
    assert t.level_effects and t.level_effects_cv is not None
    off, on = t.level_effects_cv
    assert on < 0.5 * off  # measured 0.135 -> 0.045
    assert t.cv_mape < 0.06
    text = render_fit_report(misaligned)
    assert f"their level effects are kept (cross-validated mean |log error| {off:.3f} without, {on:.3f} with" in text
    kinds = {(k, lv) for k, lv, _ in t.level_effects_largest}
    assert kinds & {("local batch", (24.0,)), ("local batch", (48.0,))}  # the misaligned batches are named
    assert "largest (measured against the law): local batch " in text and "% slower" in text
    assert not lawful.time[0].level_effects
    assert "level effects" not in render_fit_report(lawful)
    assert bool(misaligned.time_frame()["level_effects"].iloc[0]) is True


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6))
def test_the_effects_never_fit_the_residuals_worse_than_zero_and_ignore_the_order_of_the_points(seed) -> None:
    """Backfitting solves the ridge problem min ‖r − f‖² + λ‖effects‖², whose fit is never worse than f = 0."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(3, 40))
    points = np.column_stack([rng.choice([1.0, 2.0, 3.0, 4.0, 8.0], k), rng.choice([1.0, 2.0], k), rng.choice([8.0, 12.0, 16.0, 24.0], k)])
    residual = rng.normal(0, 0.3, k) + np.where(points[:, 2] == 12.0, 0.4, 0.0)
    fitted = predict_level_effects(fit_level_effects(points, residual), *points.T)
    assert np.sum((residual - fitted) ** 2) <= np.sum(residual**2) + 1e-9
    order = rng.permutation(k)
    shuffled = predict_level_effects(fit_level_effects(points[order], residual[order]), *points.T)
    np.testing.assert_allclose(shuffled, fitted, atol=1e-3)


@pytest.mark.slow  # two recommendations on fresh fits (about 4 s)
def test_a_recommendation_says_when_its_step_time_follows_probes_off_the_law(tmp_path) -> None:
    import cotune

    notes = {}
    for misaligned in (False, True):
        rec = cotune.recommend(_profile(tmp_path, misaligned=misaligned), target=0.9, deadline_s=None)
        notes[misaligned] = [n for n in rec.notes if "depart from the monotone law" in n]
    assert not notes[False]
    (note,) = notes[True]
    assert note.startswith("step time on t4 follows the probes") and "local batch" in note and "% slower" in note
