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
no checkpoint; a free checkpoint, ``δ = 0`` with ``λ > 0``, has ``τ_YD = 0`` and an
``E[T]`` that falls with every segment: ``k`` is then the cap, :data:`MAX_SEGMENTS`). With ``λ = 0`` this gives ``k = 1`` and ``E[T] = work_s``,
the on-demand model exactly.

The number of revocations ``N`` is a sum of geometric counts, one per segment:
``E[N] = Σ (e^{λL_i} − 1)``, ``Var[N] = Σ (e^{λL_i} − 1)·e^{λL_i}``. For small
``λL`` it is Poisson with mean ``λ·Σ L_i``; in general it is over-dispersed, so cotune
uses a negative binomial matched to those two moments (exact for one segment). The
training time is then a mixture over that count (:func:`revocation_time_cdf`)::

    P(T ≤ t) = Σ_n P(N = n) · P(W_c + n·R + S_n ≤ t)

with ``W_c = work_s + (k − 1)δ`` (checkpointed work; ``n = 0`` is a point mass there),
``R`` the restart and ``S_n`` the work lost by ``n`` revocations, each an exponential
truncated to its segment (convolved exactly up to eight, normal beyond: mean
``n·(c̄ − R)``, sd ``√n·σ_u``, with ``c̄ = (E[T] − W_c)/E[N]`` the mean penalty of one
revocation and ``σ_u`` the standard deviation of its lost work). The time at confidence
``q`` is that law's ``q``-quantile (:func:`time_at_confidence_s`), and
:func:`revocation_delay_nodes_s` gives the delay ``T − W_c`` as equally likely values,
for a ``P(success)`` that adds the model's own error on the work.
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
# The shortest checkpoint interval a plan is given, seconds of training: a free checkpoint
# (write_s = 0) is still written between steps, not continuously.
MIN_CHECKPOINT_INTERVAL_S = 10.0


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
    # The process itself, for the law of T (revocation_time_cdf): λ, δ and R per row.
    rate_per_s: np.ndarray
    checkpoint_write_s: np.ndarray
    restart_s: np.ndarray


def _best_segments(work: np.ndarray, lam: np.ndarray, delta: np.ndarray, restart: np.ndarray) -> np.ndarray:
    """Integer ``k`` minimising ``E[T]``: ternary search on ``[1, 2·W/τ_YD + 2]`` (up to
    one segment per :data:`MIN_CHECKPOINT_INTERVAL_S` of work where ``τ_YD = 0``: a free
    checkpoint).

    ``E[T]`` is unimodal in ``k`` (more checkpoints trade write time for less lost
    work), and the optimum lies below ``2·W/τ_YD`` because the restart delay only
    lengthens the optimal interval (Daly: ``τ ≈ √(2δ(1/λ + R))``).
    """
    tau = young_daly_interval_s(checkpoint_write_s=delta, rate_per_s=lam)
    with np.errstate(divide="ignore", invalid="ignore"):
        k0 = np.where(np.isfinite(tau) & (tau > 0), work / np.where(tau > 0, tau, 1.0), 1.0)
    # A free checkpoint (δ = 0) under revocations: τ_YD = 0, and E[T] falls with every
    # segment added (less work lost, nothing paid), so the search runs to the cap — a
    # fallback to k0 = 1 here chose 4 segments and overstated the time by 30 %.
    # No job checkpoints more often than every MIN_CHECKPOINT_INTERVAL_S of training, free or
    # not (a step must end first; 100,000 segments read "every 0.0 s" and left the mixed
    # simulator more attempts than it runs, so mixed plans were dropped).
    free_cap = np.clip(np.floor(work / MIN_CHECKPOINT_INTERVAL_S), 1.0, MAX_SEGMENTS)
    k0 = np.where((tau == 0.0) & (lam > 0), free_cap, k0)
    k0 = np.clip(np.nan_to_num(k0, nan=1.0, posinf=MAX_SEGMENTS), 1.0, MAX_SEGMENTS)

    def cost(k: np.ndarray) -> np.ndarray:
        t = expected_time_for_segments(work, k, lam, delta, restart)
        return np.where(np.isfinite(t), t, np.inf)

    lo = np.ones_like(k0)
    hi = np.clip(np.ceil(2.0 * k0) + 2.0, 1.0, MAX_SEGMENTS)
    hi = np.where((tau == 0.0) & (lam > 0), free_cap, hi)
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
        rate_per_s=lam,
        checkpoint_write_s=delta,
        restart_s=restart,
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


# Revocations counted term by term in the law of T; beyond, each count's lost work is normal.
_EXACT_COUNTS = 8
# Bins per checkpointed segment in the lost work's law (its error in time: half a bin).
_LOST_WORK_BINS = 128
# Counts beyond _EXACT_COUNTS (the count's central 1 − 2e-12) are summed in at most this
# many blocks of consecutive counts, each a normal with the block's mean count and its
# spread (one count a block while they fit: exact). Past a million expected revocations
# the total time is taken as normal (central limit), as in revocation_quantile.
_COUNT_BLOCKS = 256
# Points of the grid the delay's quantiles are read from (revocation_delay_nodes_s).
_DELAY_GRID = 512
# Tail mass of the count left out on either side of the window: far below any confidence.
_COUNT_TAIL = 1e-12
# Points per call of the law's CDF when the delay's quantiles are read (memory: points ×
# _COUNT_BLOCKS numbers per temporary, about 16 MB each).
_CDF_POINTS = 8192
# Rows per batch of the law (the convolution holds rows × _EXACT_COUNTS² × bins numbers).
_ROWS_PER_BATCH = 256


def _count_law(mean: np.ndarray, variance: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(over, r, p)``: the negative binomial matched to (mean, variance) where ``over``;
    elsewhere (the variance does not exceed the mean: ``λL → 0``) a Poisson."""
    over = variance > mean * (1.0 + 1e-9)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(over, mean / np.where(over, variance, 1.0), 0.5)
        r = np.where(over, mean * p / (1.0 - p), 1.0)
    return over, r, p


def _count_pmf(n: np.ndarray, mean: np.ndarray, variance: np.ndarray) -> np.ndarray:
    """``P(N = n)`` of :func:`_count_law`'s law, broadcast over rows and ``n``."""
    from scipy import stats

    over, r, p = _count_law(mean, variance)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(over, stats.nbinom.pmf(n, r, p), stats.poisson.pmf(n, mean))


def _count_cdf(n: np.ndarray, mean: np.ndarray, variance: np.ndarray, shift: int = 0) -> np.ndarray:
    """``P(N' ≤ n)`` for the count's law with ``shift`` more successes (NB ``r + shift``;
    Poisson: the same law): the laws behind ``Σ n·P(N = n)`` and ``Σ n(n − 1)·P(N = n)``."""
    from scipy import stats

    over, r, p = _count_law(mean, variance)
    n, over, r, p, mean = np.broadcast_arrays(np.asarray(n, float), over, r, p, mean)
    out = np.empty(n.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        out[over] = stats.nbinom.cdf(n[over], r[over] + shift, p[over])
        out[~over] = stats.poisson.cdf(n[~over], mean[~over])
    return out


def _count_blocks(first: np.ndarray, last: np.ndarray, mean: np.ndarray, variance: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The counts ``first … last`` of every row in ``_COUNT_BLOCKS`` blocks of consecutive
    counts: ``(weight, mean count, count variance)`` of each, shape ``(rows, blocks)``; the
    partial sums come from CDFs (``n·P(N = n)`` is ``E[N]`` times the law with one more success
    at ``n − 1``; Poisson: itself), so a block costs the same whatever its width."""
    width = np.maximum(last - first + 1.0, 0.0)
    blocks = int(min(np.max(width, initial=0.0), _COUNT_BLOCKS))  # no more than the widest row needs
    stride = np.maximum(np.ceil(width / max(blocks, 1)), 1.0)
    b = np.arange(blocks, dtype=float)[None, :]
    a = first[:, None] + b * stride[:, None]
    e = np.minimum(a + stride[:, None] - 1.0, last[:, None])
    live = a <= e
    m, v = mean[:, None], variance[:, None]
    over, r, p = _count_law(m, v)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        f = lambda n, k: _count_cdf(n, m, v, k)  # noqa: E731
        w = f(e, 0) - f(a - 1.0, 0)
        s1 = m * (f(e - 1.0, 1) - f(a - 2.0, 1))
        fac2 = np.where(over, r * (r + 1.0) * ((1.0 - p) / p) ** 2, m**2)
        s2 = fac2 * (f(e - 2.0, 2) - f(a - 3.0, 2))
        ok = live & (w > 1e-300)
        n_bar = np.where(ok, s1 / np.where(ok, w, 1.0), a)
        var = np.where(ok, (s2 + s1) / np.where(ok, w, 1.0) - n_bar**2, 0.0)
    n_bar = np.clip(np.nan_to_num(n_bar, nan=0.0), a, np.maximum(e, a))  # inside its block, whatever the rounding
    var = np.clip(np.nan_to_num(var, nan=0.0), 0.0, ((stride[:, None] - 1.0) / 2.0) ** 2 + 0.0)
    return np.where(ok, np.clip(w, 0.0, 1.0), 0.0), n_bar, np.where(stride[:, None] > 1, var, 0.0)


def _count_ppf(q: float, mean: np.ndarray, variance: np.ndarray) -> np.ndarray:
    """The ``q``-quantile of the count (:func:`revocation_quantile`: normal past a million)."""
    return revocation_quantile(mean, variance, q)


@dataclass(frozen=True)
class _TimeLaw:
    """The law of ``T`` for rows of an estimate with revocations (see revocation_time_cdf)."""

    base_s: np.ndarray  # W_c
    restart_s: np.ndarray  # R
    bin_s: np.ndarray  # h: the lost work's grid step
    weights: np.ndarray  # (rows, _EXACT_COUNTS + 1): P(N = n), n = 0 … _EXACT_COUNTS
    sum_cdf: np.ndarray  # (rows, _EXACT_COUNTS, bins): P(S_n ≤ (j + 1)·h), S_n the lost work of n revocations
    tail_w: np.ndarray  # (rows, blocks): blocks of the counts beyond _EXACT_COUNTS: weight,
    tail_mu_s: np.ndarray  # mean and sd of the time the block's revocations add
    tail_sd_s: np.ndarray
    penalty_s: np.ndarray  # c̄
    normal: np.ndarray  # rows taken as normal as a whole (countless revocations) …
    mean_s: np.ndarray  # … with this mean and sd
    sd_s: np.ndarray

    def cdf(self, t_s: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``P(T ≤ t)`` of the rows ``rows``, one ``t`` each."""
        from scipy.special import ndtr

        x = np.asarray(t_s, float) - self.base_s[rows]
        out = np.where(x >= 0, self.weights[rows, 0], 0.0)
        n = np.arange(1, _EXACT_COUNTS + 1, dtype=float)
        # S_n's grid holds sums of n bin midpoints, (j + n/2)·h: read its CDF at x − n·R, linearly.
        pos = (x[:, None] - n[None, :] * self.restart_s[rows, None]) / self.bin_s[rows, None] - 0.5 * n[None, :]
        bins = self.sum_cdf.shape[-1]
        which = np.arange(_EXACT_COUNTS)[None, :]

        def at(k: np.ndarray) -> np.ndarray:
            # a gather of the entries read, never a copy of the rows' tables
            got = self.sum_cdf[rows[:, None], which, np.clip(k, 0, bins - 1)]
            return np.where(k < 0, 0.0, got)

        j = np.clip(np.floor(np.nan_to_num(pos, nan=-1.0)), -1, bins - 1).astype(int)
        frac = np.clip(pos - j, 0.0, 1.0)
        f = at(j) + frac * (at(np.minimum(j + 1, bins - 1)) - at(j))
        out = out + (self.weights[rows, 1:] * f).sum(axis=-1)
        if self.tail_w.shape[-1]:
            with np.errstate(divide="ignore", invalid="ignore"):
                z = (x[:, None] - self.tail_mu_s[rows]) / self.tail_sd_s[rows]
            out = out + (self.tail_w[rows] * ndtr(np.nan_to_num(z, nan=-np.inf))).sum(axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            whole = np.nan_to_num(ndtr((x + self.base_s[rows] - self.mean_s[rows]) / self.sd_s[rows]), nan=0.0)
        return np.clip(np.where(self.normal[rows], whole, out), 0.0, 1.0)


def _time_law(est: RevocationEstimate, live: np.ndarray) -> _TimeLaw:
    """The law of ``T`` of the rows ``live`` (revocations expected, finite work)."""
    take = lambda a: np.broadcast_to(np.asarray(a, float), live.shape)[live]  # noqa: E731
    mean, var = take(est.expected_revocations), take(est.revocations_variance)
    k, wc, lam = take(est.segments), take(est.checkpointed_work_s), take(est.rate_per_s)
    delta, restart = take(est.checkpoint_write_s), take(est.restart_s)
    cbar, sd_u = take(est.penalty_s), take(est.lost_work_sd_s)
    tau = (wc - (k - 1.0) * delta) / k
    full = np.where(k > 1, tau + delta, tau)  # the longest segment: the grid's span
    # The share of revocations in checkpointed segments (their means, as in E[N]).
    m_full = np.where(k > 1, (k - 1.0) * np.expm1(lam * full), 0.0)
    share_full = np.clip(m_full / mean, 0.0, 1.0)
    rows = mean.size
    h = full / _LOST_WORK_BINS
    edges = h[:, None] * np.arange(_LOST_WORK_BINS + 1)[None, :]

    def trunc_cdf(u: np.ndarray, length: np.ndarray) -> np.ndarray:
        # exponential(λ) truncated to [0, L]: (1 − e^{−λu}) / (1 − e^{−λL}); u/L as λL → 0
        u = np.minimum(u, length[:, None])
        xl = (lam * length)[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            exact = np.expm1(-lam[:, None] * u) / np.expm1(-xl)
        return np.where(xl > 1e-12, exact, u / length[:, None])

    cdf_u = share_full[:, None] * trunc_cdf(edges, full) + (1.0 - share_full[:, None]) * trunc_cdf(edges, tau)
    pmf_u = np.diff(cdf_u, axis=-1)
    size = _EXACT_COUNTS * _LOST_WORK_BINS  # the n-fold sum never wraps: n·bins ≤ size
    spec = np.fft.rfft(pmf_u, n=size, axis=-1)
    sums = np.empty((rows, _EXACT_COUNTS, size))
    power = np.ones_like(spec)
    for i in range(_EXACT_COUNTS):
        power = power * spec
        sums[:, i] = np.cumsum(np.clip(np.fft.irfft(power, n=size, axis=-1), 0.0, None), axis=-1)
    sums /= np.maximum(sums[..., -1:], 1e-300)
    n = np.arange(_EXACT_COUNTS + 1, dtype=float)
    weights = _count_pmf(n[None, :], mean[:, None], var[:, None])
    first = np.maximum(_count_ppf(_COUNT_TAIL, mean, var), _EXACT_COUNTS + 1.0)
    last = _count_ppf(1.0 - _COUNT_TAIL, mean, var)
    normal = ~(mean <= _NORMAL_COUNT_ABOVE) | ~np.isfinite(last)
    tail_w, tail_n, tail_var = _count_blocks(np.where(normal, 1.0, first), np.where(normal, 0.0, last),
                                             np.where(normal, 1.0, mean), np.where(normal, 1.0, var))
    with np.errstate(invalid="ignore", over="ignore"):
        mean_s = wc + mean * cbar
        sd_s = np.sqrt(var * cbar**2 + mean * sd_u**2)
    with np.errstate(invalid="ignore", over="ignore"):
        # n revocations add n·c̄ ± √n·σ_u; a block's spread of counts adds its variance times c̄²
        tail_mu = tail_n * cbar[:, None]
        tail_sd = np.sqrt(tail_n * sd_u[:, None] ** 2 + tail_var * cbar[:, None] ** 2)
    return _TimeLaw(base_s=wc, restart_s=restart, bin_s=h, weights=weights, sum_cdf=sums, tail_w=tail_w,
                    tail_mu_s=tail_mu, tail_sd_s=tail_sd, penalty_s=cbar, normal=normal, mean_s=mean_s, sd_s=sd_s)


def _batches(live: np.ndarray) -> list[np.ndarray]:
    """The positions of the ``live`` rows, in batches of at most _ROWS_PER_BATCH."""
    at = np.flatnonzero(live.ravel())
    return [at[i:i + _ROWS_PER_BATCH] for i in range(0, at.size, _ROWS_PER_BATCH)]


def _mask(shape: tuple[int, ...], flat: np.ndarray) -> np.ndarray:
    m = np.zeros(int(np.prod(shape)), dtype=bool)
    m[flat] = True
    return m.reshape(shape)


def _live(est: RevocationEstimate) -> np.ndarray:
    wc = np.asarray(est.checkpointed_work_s, float)
    mean = np.broadcast_to(np.asarray(est.expected_revocations, float), wc.shape)
    return np.isfinite(wc) & np.isfinite(mean) & (mean > 0)


def revocation_time_cdf(est: RevocationEstimate, t_s: np.ndarray | float) -> np.ndarray:
    """``P(T ≤ t)``, the law of the training time under revocations (no model error): a
    mixture over the revocation count ``N`` (negative binomial matched to its two moments),

        P(T ≤ t) = Σ_n P(N = n) · P(W_c + n·R + S_n ≤ t)

    ``n = 0`` the point mass at ``W_c``; ``S_n`` the work lost by ``n`` revocations, each an
    exponential truncated to its segment, convolved exactly (on a grid of ``_LOST_WORK_BINS``
    bins a segment) up to ``_EXACT_COUNTS`` of them, normal beyond (mean ``n·(c̄ − R)``, sd
    ``√n·σ_u``; at most ``_COUNT_BLOCKS`` blocks of consecutive counts). Past a million
    expected revocations the total is normal with the random sum's moments (``E[N]·c̄``, ``Var[N]·c̄² + E[N]·σ_u²``)."""
    wc = np.asarray(est.checkpointed_work_s, float)
    t = np.broadcast_to(np.asarray(t_s, float), wc.shape)
    mean = np.broadcast_to(np.asarray(est.expected_revocations, float), wc.shape)
    # λ = 0: the point mass at W_c; countless revocations: never done
    out = np.where(np.isfinite(wc) & np.isfinite(mean) & (t >= wc), 1.0, 0.0)
    live = _live(est)
    flat_t, flat_out = t.ravel(), out.ravel()
    for at in _batches(live):
        law = _time_law(est, _mask(live.shape, at))
        flat_out[at] = law.cdf(flat_t[at], np.arange(at.size))
    return flat_out.reshape(wc.shape)


def _law_quantiles(law: _TimeLaw, rows: np.ndarray, q: np.ndarray, mean: np.ndarray, var: np.ndarray) -> np.ndarray:
    """The ``q``-quantiles of ``T`` for the law's rows ``rows`` (one ``q`` each; ``mean``,
    ``var``: those rows' count moments): the least ``t`` with ``P(T ≤ t) ≥ q``, by bisection."""
    lo = law.base_s[rows].copy()
    done = law.cdf(lo, rows) >= q
    # Above: far past the count's tail, each revocation a whole segment and the restart.
    n_top = _count_ppf(1.0 - (1.0 - float(np.max(q, initial=0.5))) * 1e-3, mean, var) + 1.0
    with np.errstate(invalid="ignore", over="ignore"):
        hi = lo + n_top * (law.penalty_s[rows] + law.bin_s[rows] * _LOST_WORK_BINS) + 10.0 * law.sd_s[rows]
    hi = np.where(np.isfinite(hi), hi, np.inf)
    todo = ~done & np.isfinite(hi)
    for _ in range(100):  # bisection on a monotone CDF, to a millionth of the time
        if not todo.any():
            break
        r = np.flatnonzero(todo)
        mid = 0.5 * (lo[r] + hi[r])
        below = law.cdf(mid, rows[r]) < q[r]
        lo[r] = np.where(below, mid, lo[r])
        hi[r] = np.where(below, hi[r], mid)
        todo[r] = (hi[r] - lo[r]) > 1e-6 * hi[r]
    return np.where(done, law.base_s[rows], hi)


def _moments(est: RevocationEstimate) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(W_c, E[N], Var[N])``, flat, at the estimate's shape."""
    wc = np.asarray(est.checkpointed_work_s, float)
    mean = np.broadcast_to(np.asarray(est.expected_revocations, float), wc.shape)
    var = np.broadcast_to(np.asarray(est.revocations_variance, float), wc.shape)
    return wc.ravel(), mean.ravel(), var.ravel()


def time_at_confidence_s(est: RevocationEstimate, q: float) -> np.ndarray:
    """``T_q``: the ``q``-quantile of :func:`revocation_time_cdf`'s law (training only) — the
    least ``t`` with ``P(T ≤ t) ≥ q``; ``W_c`` itself where no revocation is that likely.

    A count quantile plus a tail (``W_c + n_q·c̄ + max(z, 1)·√n_q·σ_u``, until 2026-12-06)
    charged a whole revocation and a tail where ``P(N = 0) ≈ 0.85`` at q = 0.9 — 27 % above
    the simulated quantile — and fell as the rate rose (``n_q`` stayed 1 while the lost work
    per revocation shrank): a riskier market gave a cheaper answer.
    """
    if not 0.0 < q < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {q}")
    wc = np.asarray(est.checkpointed_work_s, float)
    _, mean, var = _moments(est)
    # countless revocations (work no checkpointing finishes): never done, ∞ — not W_c
    flat = np.where(np.isfinite(wc.ravel()) & np.isfinite(mean), wc.ravel(), np.inf)
    live = _live(est)
    for at in _batches(live):
        law = _time_law(est, _mask(live.shape, at))
        rows = np.arange(at.size)
        flat[at] = _law_quantiles(law, rows, np.full(at.size, q), mean[at], var[at])
    out = flat.reshape(wc.shape)
    return np.where(np.isnan(out), np.inf, out)


def revocation_delay_nodes_s(est: RevocationEstimate, nodes: int) -> np.ndarray:
    """The delay revocations add, ``T − W_c``, as ``nodes`` equally likely values: its
    quantiles at ``(i + ½)/nodes``, shape ``(…, nodes)`` (0 where no revocation is that
    likely; all 0 without revocations). ``P(W_c·e^ε + delay ≤ t)`` for an independent work
    error ``ε`` is then the mean over the nodes (the spot ``P(success)``)."""
    wc = np.asarray(est.checkpointed_work_s, float)
    out = np.zeros((wc.size, nodes))
    live = _live(est)
    _, mean, var = _moments(est)
    out[~np.isfinite(wc.ravel()) | ~np.isfinite(mean)] = np.inf
    probs = (np.arange(nodes) + 0.5) / nodes
    for at in _batches(live):
        law = _time_law(est, _mask(live.shape, at))
        rows = np.arange(at.size)
        # The CDF on a grid from W_c to past the last node's probability, inverted linearly
        # (a bisection per node cost seconds for a recommendation's spot rows).
        top = _law_quantiles(law, rows, np.full(at.size, probs[-1]), mean[at], var[at])
        grid = law.base_s[:, None] + (top - law.base_s)[:, None] * np.linspace(0.0, 1.0, _DELAY_GRID)[None, :]
        # In slices: the law's CDF holds points × count blocks numbers at once (256 rows × 512
        # points × 256 blocks took a spot answer to 1.2 GB).
        flat_t, flat_rows = grid.ravel(), np.repeat(rows, _DELAY_GRID)
        cdf = np.concatenate([law.cdf(flat_t[i:i + _CDF_POINTS], flat_rows[i:i + _CDF_POINTS])
                              for i in range(0, flat_t.size, _CDF_POINTS)]).reshape(at.size, _DELAY_GRID)
        cdf = np.maximum.accumulate(cdf, axis=1)
        cdf[:, -1] = np.maximum(cdf[:, -1], probs[-1])  # the last point is that quantile itself
        # first grid point at or above each probability (rows offset so one search serves all)
        j = np.searchsorted((cdf + 2.0 * rows[:, None]).ravel(), (probs[None, :] + 2.0 * rows[:, None]).ravel())
        j = j.reshape(at.size, nodes) - _DELAY_GRID * rows[:, None]
        j = np.clip(j, 0, _DELAY_GRID - 1)
        prev = np.maximum(j - 1, 0)
        f0, f1 = np.take_along_axis(cdf, prev, 1), np.take_along_axis(cdf, j, 1)
        t0, t1 = np.take_along_axis(grid, prev, 1), np.take_along_axis(grid, j, 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            frac = np.where(f1 > f0, (probs[None, :] - f0) / (f1 - f0), 1.0)
        t = np.where(j == 0, grid[:, :1], t0 + np.clip(frac, 0.0, 1.0) * (t1 - t0))
        out[at] = np.maximum(t - law.base_s[:, None], 0.0)
    return out.reshape(wc.shape + (nodes,))


__all__ += ["revocation_delay_nodes_s", "revocation_quantile", "revocation_time_cdf", "time_at_confidence_s", "MAX_SEGMENTS"]
