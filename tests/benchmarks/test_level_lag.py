"""benchmarks.level_lag: how much an early level's lag says about the target's."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.level_lag import correlation, lag_rows, main


def _rows(a, b):
    return [dict(workload="w", z_level=float(x), z_target=float(y)) for x, y in zip(a, b)]


def test_correlation_is_one_for_errors_that_move_together() -> None:
    z = np.array([-1.0, 0.0, 0.5, 2.0])
    assert correlation(_rows(z, 0.3 * z)) == pytest.approx(1.0)
    assert correlation(_rows(z, -z)) == pytest.approx(-1.0)


def test_correlation_needs_three_rows_and_some_spread() -> None:
    assert math.isnan(correlation(_rows([0.0, 1.0], [0.0, 1.0])))
    assert math.isnan(correlation(_rows([1.0, 1.0, 1.0], [0.0, 1.0, 2.0])))


@pytest.mark.parametrize("argv", [["--steps", "2"], ["--steps", "x"], ["--workloads", "nope"]])
def test_bad_steps_or_an_unknown_workload_exit_2(argv, capsys) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith("error: ")


def test_deepspeech2_rows_are_standardised_errors_at_held_out_batches() -> None:
    rows = lag_rows("deepspeech2-t4", (0.1,))
    assert rows
    assert {r["step"] for r in rows} == {0.1}
    assert all(math.isfinite(r["z_level"]) and math.isfinite(r["z_target"]) for r in rows)
    # The reference batch (20) is the evidence, never a held-out row.
    assert 20.0 not in {r["global_batch"] for r in rows}
