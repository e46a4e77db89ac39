"""The target a NO FEASIBLE answer suggests is easier than the one asked for, and feasible."""

from __future__ import annotations

import re

import pytest

import cotune

# (example, target, deadline_s): questions the deadline makes infeasible, on both goals
_CASES = [
    ("cifar10-resnet18", 0.94, 420.0),  # suggested 'lower ... to 0.9417': harder, and still infeasible
    ("cifar10-resnet18", 0.94, 300.0),
    ("cifar10-resnet18", 0.93, 240.0),
    ("cifar10-resnet18", 0.94, 30.0),
    ("yolov3-voc", 12.0, 6960.0),  # a min goal: suggested 'raise ... to 12', the target itself
    ("yolov3-voc", 12.0, 3600.0),
]


@pytest.mark.parametrize(("example", "target", "deadline_s"), _CASES)
def test_a_suggested_target_is_easier_and_makes_the_question_feasible(example, target, deadline_s) -> None:
    rec = cotune.recommend(example, target=target, deadline_s=deadline_s)
    assert rec.chosen is None
    hints = [h for h in rec.relax if "the target (--target / target) to" in h]
    assert hints, rec.relax
    suggested = float(re.search(r"to ([-0-9.e+]+), the best", hints[0]).group(1))
    maximise = rec.goal == "max"
    assert suggested < target if maximise else suggested > target
    assert ("lower" if maximise else "raise") in hints[0]
    assert cotune.recommend(example, target=suggested, deadline_s=deadline_s).chosen is not None


def test_no_target_is_suggested_when_none_easier_meets_the_deadline() -> None:
    # 1 s: no candidate trains even a little by then, whatever the target
    rec = cotune.recommend("cifar10-resnet18", target=0.94, deadline_s=1.0)
    assert rec.chosen is None
    assert not any("the target (--target / target) to" in h for h in rec.relax), rec.relax
