"""pandas views of profiles and results."""

from __future__ import annotations

import pytest

from cotune import load_profile
from cotune.errors import ProfileError


def test_profile_frame_has_one_row_per_record_and_the_record_fields():
    profile = load_profile("cifar10-resnet18")
    frame = profile.to_frame()
    assert frame["record"].value_counts().to_dict() == {"step": len(profile.steps), "eval": len(profile.evals)}
    steps = profile.to_frame("steps")
    assert steps["step_time_s"].tolist() == [s.step_time_s for s in profile.steps]
    assert (steps["global_batch"] == steps["workers"] * steps["local_batch"] * steps["accum_steps"]).all()
    assert profile.to_frame("eval")["metric"].tolist() == [e.metric for e in profile.evals]


def test_profile_frame_of_an_unknown_record_type_is_refused():
    with pytest.raises(ProfileError, match="unknown record type 'stepz'"):
        load_profile("cifar10-resnet18").to_frame("stepz")
