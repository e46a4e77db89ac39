"""scikit-learn's estimator contract without importing scikit-learn at import time.

``get_params``/``set_params`` read the ``__init__`` keywords (so ``sklearn.base.clone``
works), ``__sklearn_is_fitted__`` answers ``check_is_fitted``, and ``__sklearn_tags__``
imports scikit-learn only when scikit-learn itself asks — a scheduler that loads a
cached model never pays for it.
"""

from __future__ import annotations

import inspect
import numbers
from typing import Any

import numpy as np

from cotune._checks import BadValue, excerpt, plain_number

__all__ = ["EstimatorContract", "as_column"]


def as_column(
    values: Any,
    *,
    where: str,
    gt: float | None = None,
    ge: float | None = None,
    whole: bool = False,
    finite: bool = True,
    allow_inf: bool = False,
) -> np.ndarray:
    """``values`` as a float array that keeps the stated rule, or :class:`BadValue`.

    The rule: real numbers (not booleans, not text), each finite (``finite=False``
    lets NaN and ±∞ through — a diverged run's metric; ``allow_inf`` lets +∞ through —
    "as many epochs as it takes"), within ``gt``/``ge``, and whole where ``whole``.
    The message names the field, the rule and the first value that breaks it with its
    index, so a caller of the estimators gets what a caller of ``recommend`` gets.
    """
    a = np.asarray(values)
    if a.dtype.kind == "O":
        flat = [plain_number(v) for v in a.ravel()]
        bad = next((i for i, v in enumerate(flat) if isinstance(v, bool) or not isinstance(v, numbers.Real)), None)
        if bad is not None:
            raise BadValue(f"must be numbers, got {excerpt(flat[bad])} at index {bad}", where=where)
        a = np.array(flat, float).reshape(a.shape)
    elif a.dtype.kind not in "iuf":
        kind = "booleans" if a.dtype.kind == "b" else f"values of type {a.dtype}"
        raise BadValue(f"must be numbers, got {kind}", where=where)
    a = a.astype(float)
    flat = a.ravel()
    ok = np.isfinite(flat) | (not finite) | (allow_inf & (flat == np.inf))
    rule = "finite numbers" if finite and not allow_inf else "numbers"
    if whole:
        ok &= ~np.isfinite(flat) | (flat == np.round(flat))
        rule = "whole numbers"
    with np.errstate(invalid="ignore"):
        if gt is not None:
            ok &= ~(flat <= gt)
            rule += f" > {gt:g}"
        if ge is not None:
            ok &= ~(flat < ge)
            rule += f" >= {ge:g}"
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        at = f" at index {i}" if flat.size > 1 else ""
        raise BadValue(f"must be {rule}, got {float(flat[i]):g}{at}", where=where)
    return a


class EstimatorContract:
    """Mixin: parameters are exactly the keyword-only ``__init__`` arguments, stored unchanged."""

    _fitted_attribute: str = ""  # a learned attribute that exists only after fit

    @classmethod
    def _param_names(cls) -> list[str]:
        return [p for p in inspect.signature(cls.__init__).parameters if p != "self"]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self._param_names()}

    def set_params(self, **params: Any) -> "EstimatorContract":
        names = self._param_names()
        for k, v in params.items():
            if k not in names:
                raise ValueError(f"invalid parameter {k!r} for {type(self).__name__}: valid are {', '.join(names)}")
            setattr(self, k, v)
        return self

    def _fit_fresh(self, *data: Any) -> Any:
        """Fit a fresh copy with the same parameters, then take its state: a fit that
        fails leaves this estimator as it was (fitted to the old data, or unfitted),
        never half of one fit and half of another."""
        fresh = type(self)(**self.get_params())
        fresh._fit(*data)
        self.__dict__.clear()
        self.__dict__.update(fresh.__dict__)
        return self

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, self._fitted_attribute)

    def __sklearn_tags__(self) -> Any:
        from sklearn.utils import Tags, TargetTags

        return Tags(estimator_type=None, target_tags=TargetTags(required=True))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
