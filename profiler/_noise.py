"""Gradient noise scale (McCandlish et al. 2018, appendix A) from two batch sizes.

Given squared gradient norms measured at a small batch ``b_small`` and a big batch
``b_big`` (for DDP: one worker's local gradient and the all-reduced one), unbiased
estimates are

    |G|²  ≈ (b_big·|G_big|² − b_small·|G_small|²) / (b_big − b_small)
    tr(Σ) ≈ (|G_small|² − |G_big|²) / (1/b_small − 1/b_big)

and the simple noise scale is ``B_noise = tr(Σ)/|G|²``. Each single-step estimate is
very noisy, so the two are averaged over many steps *separately* before the ratio
(the paper's advice); :class:`NoiseAccumulator` does that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from cotune._checks import MAX_MAGNITUDE

__all__ = ["NoiseAccumulator", "noise_terms"]


def noise_terms(*, small_sq: float, b_small: float, big_sq: float, b_big: float) -> tuple[float, float]:
    """Per-step unbiased estimates ``(|G|², tr(Σ))`` from two squared gradient norms."""
    if not b_big > b_small > 0:
        raise ValueError(f"need b_big > b_small > 0, got b_small={b_small}, b_big={b_big}")
    g2 = (b_big * big_sq - b_small * small_sq) / (b_big - b_small)
    trace = (small_sq - big_sq) / (1.0 / b_small - 1.0 / b_big)
    return g2, trace


@dataclass
class NoiseAccumulator:
    """Running sums of the per-step estimates; ``b_noise`` is their ratio (or None)."""

    g2_sum: float = 0.0
    trace_sum: float = 0.0
    count: int = 0

    def add(self, *, small_sq: float, b_small: float, big_sq: float, b_big: float) -> None:
        g2, trace = noise_terms(small_sq=small_sq, b_small=b_small, big_sq=big_sq, b_big=b_big)
        self.g2_sum += g2
        self.trace_sum += trace
        self.count += 1

    def b_noise(self) -> float | None:
        """``tr(Σ)/|G|²`` in samples; None when too few steps or the signal is lost in noise."""
        if self.count < 2 or not (0 < self.g2_sum < math.inf and 0 < self.trace_sum < math.inf):
            # NaN compares False both ways: a diverged run's NaN gradients were a NaN noise scale,
            # which the profile refuses (the session stopped on it as if the input were bad).
            return None
        ratio = self.trace_sum / self.g2_sum
        return ratio if 0 < ratio <= MAX_MAGNITUDE else None

    def reset(self) -> None:
        self.g2_sum = self.trace_sum = 0.0
        self.count = 0
