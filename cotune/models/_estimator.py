"""scikit-learn's estimator contract without importing scikit-learn at import time.

``get_params``/``set_params`` read the ``__init__`` keywords (so ``sklearn.base.clone``
works), ``__sklearn_is_fitted__`` answers ``check_is_fitted``, and ``__sklearn_tags__``
imports scikit-learn only when scikit-learn itself asks — a scheduler that loads a
cached model never pays for it.
"""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["EstimatorContract"]


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

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, self._fitted_attribute)

    def __sklearn_tags__(self) -> Any:
        from sklearn.utils import Tags, TargetTags

        return Tags(estimator_type=None, target_tags=TargetTags(required=True))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
