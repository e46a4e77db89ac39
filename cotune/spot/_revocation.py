"""Revocation-aware time of a training run on spot servers (pure, vectorized maths).

The run does ``work_s`` seconds of failure-free training. Spot servers are revoked
as a Poisson process: each server independently at ``rate_per_server_hour``, so a
job spread over ``servers`` hosts is interrupted at ``λ = servers × rate / 3600``
per second. On a revocation the job loses the work since its last checkpoint, waits
``restart_s`` (replacement delay + reload), and resumes from the checkpoint
("stop and replace": the cluster size stays the same, so ``λ`` does too).

Checkpointing splits the work into ``k`` equal segments of ``τ = work_s / k``
seconds, each followed by a checkpoint write of ``δ = checkpoint_write_s`` (the
last segment needs none). A segment of wall length ``L`` (``τ + δ``, or ``τ`` for
the last) is attempted until it survives; the number of failed attempts is
geometric with success probability ``p = e^{-λL}``, hence (renewal argument)::

    E[T_seg(L)] = (e^{λL} − 1) · (1/λ + R)                      (→ L as λ → 0)
    E[T]        = (k − 1) · E[T_seg(τ + δ)] + E[T_seg(τ)]

``τ`` starts from the Young/Daly rule ``τ_YD = √(2δ/λ)``; the integer ``k`` is then
chosen by the exact expectation, searching ``1 ≤ k ≤ 2·work_s/τ_YD + 2`` (``k = 1``:
no checkpoint). With ``λ = 0`` this gives ``k = 1`` and ``E[T] = work_s``,
the on-demand model exactly.

The number of revocations ``N`` is a sum of geometric counts, one per segment:
``E[N] = Σ (e^{λL_i} − 1)``, ``Var[N] = Σ (e^{λL_i} − 1)·e^{λL_i}``. For small
``λL`` it is Poisson with mean ``λ·Σ L_i``; in general it is over-dispersed, so the
time at confidence ``q`` uses a negative binomial matched to those two moments::

    T_q = W_c + n_q · c̄ + max(z_q, 1) · √n_q · σ_u

with ``W_c = work_s + (k − 1)δ`` (checkpointed work), ``n_q`` the ``q``-quantile of
``N``, ``c̄ = (E[T] − W_c)/E[N] = R + E[lost work]`` the mean penalty of one
revocation, and ``σ_u`` the standard deviation of the lost work of one revocation
(an exponential truncated to ``[0, τ + δ]``). The floor of one standard deviation
keeps the promise at or above ``q`` at the median, where half of the runs with
exactly ``n_q`` revocations would otherwise land above it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "RevocationEstimate",
    "job_rate_per_s",
    "young_daly_interval_s",
    "expected_segment_time_s",
    "expected_time_for_segments",
    "revocation_estimate",
]

# Hard cap on segments per run: with a near-free checkpoint Young/Daly would ask for
# an absurd number of them, and beyond this the gain is below any measurement.
MAX_SEGMENTS = 100_000


def job_rate_per_s(*, rate_per_server_hour: np.ndarray | float, servers: np.ndarray | float) -> np.ndarray:
    """``λ_job = servers × rate_per_server_hour / 3600`` (revocations per second)."""
    return np.asarray(servers, float) * np.asarray(rate_per_server_hour, float) / 3600.0


def young_daly_interval_s(*, checkpoint_write_s: np.ndarray | float, rate_per_s: np.ndarray | float) -> np.ndarray:
    """Young/Daly checkpoint interval ``τ_YD = √(2δ/λ)`` (seconds of work); ``inf`` when ``λ = 0``."""
    delta = np.asarray(checkpoint_write_s, float)
    lam = np.asarray(rate_per_s, float)
    # A vanishing (denormal) rate overflows to inf, which is the right limit: never checkpoint.
    with np.errstate(divide="ignore", over="ignore"):
        return np.where(lam > 0, np.sqrt(2.0 * delta / np.where(lam > 0, lam, 1.0)), np.inf)


def _expm1_over_x(x: np.ndarray) -> np.ndarray:
    """``(e^x − 1)/x`` without cancellation (→ 1 as x → 0)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return np.where(x < 1e-8, 1.0 + 0.5 * x, np.expm1(x) / np.where(x > 0, x, 1.0))


def _mean_lost_fraction(x: np.ndarray) -> np.ndarray:
    """``E[X | X < L] / L`` for X ~ exponential, ``x = λL``: ``1/x − 1/(e^x − 1)`` (→ 1/2)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        safe = np.where(x > 1e-4, x, 1.0)
        exact = 1.0 / safe - 1.0 / np.expm1(safe)
    return np.where(x > 1e-4, exact, 0.5 - x / 12.0)


def expected_segment_time_s(length_s: np.ndarray, rate_per_s: np.ndarray, restart_s: np.ndarray) -> np.ndarray:
    """``E[T_seg(L)] = (e^{λL} − 1)(1/λ + R)``; ``L`` when ``λ = 0``."""
    L = np.asarray(length_s, float)
    lam = np.asarray(rate_per_s, float)
    R = np.asarray(restart_s, float)
    x = lam * L
    with np.errstate(over="ignore", invalid="ignore"):
        return L * _expm1_over_x(x) + R * np.expm1(x)


def expected_time_for_segments(
    work_s: np.ndarray, segments: np.ndarray, rate_per_s: np.ndarray, checkpoint_write_s: np.ndarray, restart_s: np.ndarray
) -> np.ndarray:
    """``E[T]`` for ``k = segments`` equal segments (``k − 1`` checkpoints)."""
    k = np.asarray(segments, float)
    tau = np.asarray(work_s, float) / k
    full = expected_segment_time_s(tau + checkpoint_write_s, rate_per_s, restart_s)
    last = expected_segment_time_s(tau, rate_per_s, restart_s)
    # One segment has no checkpointed ones: 0 of them, even when one would take forever
    # (0·∞ would be NaN; the answer is the last segment's time, ∞ for hopeless work). A
    # product past the largest double is ∞ as well: hopeless, not a warning.
    with np.errstate(invalid="ignore", over="ignore"):
        return np.where(k > 1.0, (k - 1.0) * full, 0.0) + last


@dataclass(frozen=True)
class RevocationEstimate:
    """Per-candidate results of :func:`revocation_estimate` (arrays, aligned)."""

    expected_time_s: np.ndarray  # E[T], training only (no start-up)
    segments: np.ndarray  # k
    checkpoint_interval_s: np.ndarray  # τ = work / k (inf when k = 1: no checkpoint)
    checkpointed_work_s: np.ndarray  # W_c = work + (k − 1)δ
    expected_revocations: np.ndarray  # E[N]
    revocations_variance: np.ndarray  # Var[N]
    penalty_s: np.ndarray  # c̄: mean time lost per revocation (restart + lost work)
    lost_work_sd_s: np.ndarray  # σ_u


def _best_segments(work: np.ndarray, lam: np.ndarray, delta: np.ndarray, restart: np.ndarray) -> np.ndarray:
    """Integer ``k`` minimising ``E[T]``: ternary search on ``[1, 2·W/τ_YD + 2]``.

    ``E[T]`` is unimodal in ``k`` (more checkpoints trade write time for less lost
    work), and the optimum lies below ``2·W/τ_YD`` because the restart delay only
    lengthens the optimal interval (Daly: ``τ ≈ √(2δ(1/λ + R))``).
    """
    tau = young_daly_interval_s(checkpoint_write_s=delta, rate_per_s=lam)
    with np.errstate(divide="ignore", invalid="ignore"):
        k0 = np.where(np.isfinite(tau) & (tau > 0), work / np.where(tau > 0, tau, 1.0), 1.0)
    k0 = np.clip(np.nan_to_num(k0, nan=1.0, posinf=MAX_SEGMENTS), 1.0, MAX_SEGMENTS)

    def cost(k: np.ndarray) -> np.ndarray:
        t = expected_time_for_segments(work, k, lam, delta, restart)
        return np.where(np.isfinite(t), t, np.inf)

    lo = np.ones_like(k0)
    hi = np.clip(np.ceil(2.0 * k0) + 2.0, 1.0, MAX_SEGMENTS)
    for _ in range(64):
        open_ = hi - lo > 2
        if not open_.any():
            break
        third = np.floor((hi - lo) / 3.0)
        m1, m2 = lo + third, hi - third
        left = cost(m1) <= cost(m2)
        hi = np.where(open_ & left, m2, hi)
        lo = np.where(open_ & ~left, m1, lo)
    options = np.stack([lo, np.minimum(lo + 1, hi), hi], axis=-1)
    times = expected_time_for_segments(work[..., None], options, lam[..., None], delta[..., None], restart[..., None])
    times = np.where(np.isfinite(times), times, np.inf)
    pick = np.argmin(times, axis=-1)
    return np.take_along_axis(options, pick[..., None], axis=-1)[..., 0]


def _truncated_exp_sd(length_s: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """SD of an exponential(λ) truncated to ``[0, L]``: ``√(1/λ² − L²e^{λL}/(e^{λL} − 1)²)``."""
    x = lam * length_s
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        safe_lam = np.where(lam > 0, lam, 1.0)
        em1 = np.expm1(x)
        var = 1.0 / safe_lam**2 - length_s**2 * np.exp(x) / em1**2
        # Small λL: the formula cancels catastrophically; the uniform limit is L²/12. Large
        # λL: the truncation no longer matters (L²e^{−λL} is nothing), the variance is 1/λ²
        # (the formula itself would be ∞/∞).
        var = np.where(x < 1e-3, length_s**2 / 12.0, np.where(x > 50.0, 1.0 / safe_lam**2, var))
    return np.sqrt(np.clip(np.nan_to_num(var, nan=0.0, posinf=0.0), 0.0, None))


def revocation_estimate(
    *,
    work_s: np.ndarray | float,
    rate_per_s: np.ndarray | float,
    checkpoint_write_s: np.ndarray | float,
    restart_s: np.ndarray | float,
    segments: np.ndarray | float | None = None,
) -> RevocationEstimate:
    """Expected time, chosen checkpointing and revocation-count moments (see module doc).

    ``work_s``: failure-free training seconds; ``rate_per_s``: job revocation rate λ;
    ``checkpoint_write_s``: δ; ``restart_s``: R. ``segments`` fixes ``k`` instead of
    choosing it. Arrays broadcast; nothing is mutated.
    """
    work, lam, delta, restart = np.broadcast_arrays(
        *(np.asarray(v, float) for v in (work_s, rate_per_s, checkpoint_write_s, restart_s))
    )
    finite = np.isfinite(work)
    w = np.where(finite, work, 1.0)
    if segments is None:
        k = _best_segments(w, lam, delta, restart)
    else:
        k = np.broadcast_to(np.asarray(segments, float), w.shape)
    expected = expected_time_for_segments(w, k, lam, delta, restart)
    tau = w / k
    full_len = tau + delta
    with np.errstate(over="ignore", invalid="ignore"):
        x_full, x_last = lam * full_len, lam * tau
        several = k > 1.0  # (k − 1)·∞ is 0 for one segment, not NaN
        mean_n = np.where(several, (k - 1.0) * np.expm1(x_full), 0.0) + np.expm1(x_last)
        var_n = np.where(several, (k - 1.0) * np.expm1(x_full) * np.exp(x_full), 0.0) + np.expm1(x_last) * np.exp(x_last)
    checkpointed = w + (k - 1.0) * delta
    # c̄ = R + revocation-weighted mean lost work (equal to (E[T] − W_c)/E[N], computed stably)
    with np.errstate(over="ignore", invalid="ignore"):
        m_full, m_last = np.where(several, (k - 1.0) * np.expm1(x_full), 0.0), np.expm1(x_last)
        lost = np.where(several, m_full * full_len * _mean_lost_fraction(x_full), 0.0) + m_last * tau * _mean_lost_fraction(x_last)
        penalty = restart + np.where(mean_n > 0, lost / np.where(mean_n > 0, mean_n, 1.0), 0.5 * np.where(k > 1, full_len, tau))
        # Work so long that revocations are countless (∞/∞): each loses 1/λ on average,
        # the mean of an exponential that nothing truncates.
        penalty = np.where(np.isfinite(mean_n), penalty, restart + 1.0 / np.where(lam > 0, lam, 1.0))
    sd_u = _truncated_exp_sd(np.where(k > 1, full_len, tau), lam)
    inf = np.full(w.shape, np.inf)
    return RevocationEstimate(
        expected_time_s=np.where(finite, expected, inf),
        segments=k,
        checkpoint_interval_s=np.where(k > 1, tau, np.inf),
        checkpointed_work_s=np.where(finite, checkpointed, inf),
        expected_revocations=np.where(finite, mean_n, inf),
        revocations_variance=np.where(finite, var_n, inf),
        penalty_s=penalty,
        lost_work_sd_s=sd_u,
    )


_NORMAL_COUNT_ABOVE = 1e6


def revocation_quantile(mean: np.ndarray, variance: np.ndarray, q: float) -> np.ndarray:
    """``q``-quantile of the revocation count: negative binomial matched to (mean, variance);
    Poisson when the variance does not exceed the mean (``λL → 0``)."""
    from scipy import stats

    mean = np.asarray(mean, float)
    variance = np.asarray(variance, float)
    out = np.zeros(mean.shape)
    pos = np.isfinite(mean) & (mean > 0)
    # Beyond a million expected revocations the count is normal to far better than one in a
    # thousand (central limit), and SciPy's discrete search does not return for means near
    # 1e60 (a training time at a far quantile of a wide spread): the normal quantile there.
    huge = pos & (mean > _NORMAL_COUNT_ABOVE)
    if huge.any():
        from statistics import NormalDist

        sd = np.sqrt(np.maximum(variance[huge], mean[huge]))
        z = NormalDist().inv_cdf(q)
        # The median is the mean whatever the spread (0·∞ would be NaN); a count is >= 0.
        shift = np.zeros_like(sd) if z == 0.0 else z * sd
        out[huge] = np.maximum(np.ceil(mean[huge] + shift), 0.0)
    pos &= ~huge
    over = pos & (variance > mean * (1.0 + 1e-9))
    pois = pos & ~over
    if pois.any():
        out[pois] = stats.poisson.ppf(q, mean[pois])
    if over.any():
        p = mean[over] / variance[over]
        r = mean[over] * p / (1.0 - p)
        out[over] = stats.nbinom.ppf(q, r, p)
    out[~np.isfinite(mean)] = np.inf
    return out


def time_at_confidence_s(est: RevocationEstimate, q: float) -> np.ndarray:
    """``T_q = W_c + n_q·c̄ + max(z_q, 1)·√n_q·σ_u`` (training only); see the module docstring."""
    from statistics import NormalDist

    if not 0.0 < q < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {q}")
    n_q = revocation_quantile(est.expected_revocations, est.revocations_variance, q)
    # At least one standard deviation of lost work: the count quantile alone lands
    # half of the runs with exactly n_q revocations above T_q (measured: P ≈ 0.47 at q = 0.5).
    z = max(NormalDist().inv_cdf(q), 1.0)
    with np.errstate(invalid="ignore"):
        t = est.checkpointed_work_s + n_q * est.penalty_s + z * np.sqrt(n_q) * est.lost_work_sd_s
    return np.where(np.isfinite(est.checkpointed_work_s), t, np.inf)


__all__ += ["revocation_quantile", "time_at_confidence_s", "MAX_SEGMENTS"]
