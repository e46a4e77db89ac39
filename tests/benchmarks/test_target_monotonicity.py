"""benchmarks.target_monotonicity measures what it says: a model monotone in the target
reads as monotone, and a planted fall is found at its size."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from benchmarks.target_monotonicity import main, measure


class _Stub:
    """epochs = e0 · (1 + B/1000) · f(t) with f increasing in the target, and an optional
    planted fall of ``drop`` at batch 4096 past target 0.8."""

    goal = "max"
    batches_ = np.array([256.0, 1024.0, 4096.0])
    curve_start_ = np.array([0.1, 0.1, 0.1])
    curve_plateau_ = np.array([0.9, 0.9, 0.9])

    def __init__(self, drop: float = 0.0):
        self.drop = drop

    def epochs_to_target(self, batches, target):
        b = np.asarray(batches, float)
        e = 10.0 * (1 + b / 1000.0) / (1.0 - min(target, 0.95))
        if target > 0.8:
            e = np.where(b == 4096.0, e * (1.0 - self.drop), e)
        return SimpleNamespace(epochs_if_reached=e, log_sigma=np.full(b.shape, 0.2), p_reach=np.full(b.shape, 0.9))


def test_a_model_monotone_in_the_target_reads_as_monotone():
    m = measure(_Stub(), levels=60)
    assert m["falls"] == 0 and m["largest_fall"] == 0 and m["chance_rises"] == 0


def test_a_planted_fall_is_found_at_its_size():
    m = measure(_Stub(drop=0.3), levels=60)
    # the planted 30 % less the growth of one ladder step in the target
    assert m["falls"] == 1 and 0.25 < m["largest_fall"] <= 0.3
    assert m["chance_rises"] >= 1


def test_help_prints_usage_and_exits_0_without_measuring(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m benchmarks.target_monotonicity")
    assert "epochs-to-target against the target" not in out


def test_an_unknown_option_exits_2_naming_it(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--no-such-option"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --no-such-option" in err
