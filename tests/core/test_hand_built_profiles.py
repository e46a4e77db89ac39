"""A Profile built in Python enters every door judged by the rule that reads a file's line:
a record the reader refuses is a one-line ProfileError naming its place and field, never an
AttributeError or TypeError from deep in the fit, and never a string taken for a number."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import cotune
from _helpers import synthetic_records, write_jsonl
from cotune import EvalRecord, Profile, StepRecord, WorkloadRecord
from cotune.errors import ProfileError


@pytest.fixture(scope="module")
def read(tmp_path_factory):
    path = write_jsonl(tmp_path_factory.mktemp("hand") / "p.jsonl", synthetic_records(seed=5, workers=(1, 2), batches=(16, 32)))
    return cotune.read_profile(path)


def _with_first(profile: Profile, group: str, **change) -> Profile:
    records = getattr(profile, group)
    return dataclasses.replace(profile, **{group: (dataclasses.replace(records[0], **change),) + records[1:]})


@pytest.mark.parametrize(
    ("group", "change", "expect"),
    [
        ("steps", {"gpu": None}, "Profile.steps[0]: missing field 'gpu'"),
        ("steps", {"step_time_s": "0.1"}, "Profile.steps[0]: field 'step_time_s': must be a finite number >= 1e-06, got '0.1'"),
        ("steps", {"workers": True}, "Profile.steps[0]: field 'workers': must be a whole number >= 1, got true"),
        ("steps", {"gpu": "t4\nCHOSEN"}, "Profile.steps[0]: step record: field 'gpu' must be one line"),
        ("evals", {"metric": "x"}, "Profile.evals[0]: field 'metric' must be a number"),
        ("evals", {"global_batch": 16.5}, "Profile.evals[0]: field 'global_batch': must be a whole number >= 1, got 16.5"),
    ],
    ids=["gpu-none", "step-time-text", "workers-bool", "gpu-line-break", "metric-text", "batch-fraction"],
)
def test_a_hand_built_record_the_reader_refuses_is_a_profile_error_naming_its_place(read, group, change, expect):
    with pytest.raises(ProfileError) as info:
        cotune.recommend(_with_first(read, group, **change), target=0.9, deadline_s=1800)
    assert str(info.value).startswith(expect) and "\n" not in str(info.value), str(info.value)


def test_a_workload_record_the_reader_refuses_is_named_before_any_batch_is_measured_against_it(read):
    # Before: "local batch 16, 32 is more than the profile's -5 training samples".
    with pytest.raises(ProfileError, match=r"^Profile.workload: field 'dataset_size': must be a whole number >= 1, got -5"):
        cotune.fit_models(dataclasses.replace(read, workload=dataclasses.replace(read.workload, dataset_size=-5)))


@pytest.mark.parametrize(
    ("change", "expect"),
    [
        (lambda p: {"steps": p.steps + (p.evals[0],)}, r"Profile.steps\[\d+\] must be a StepRecord, got an EvalRecord"),
        (lambda p: {"evals": p.evals + ({"record": "eval"},)}, r"Profile.evals\[\d+\] must be an EvalRecord, got an object of 1 field"),
        (lambda p: {"workload": None}, r"Profile.workload must be a WorkloadRecord, got null"),
        (lambda p: {"noise": 5}, r"Profile.noise must be a tuple of NoiseRecord records, got 5"),
    ],
    ids=["eval-among-steps", "dict-among-evals", "no-workload", "noise-not-a-sequence"],
)
def test_a_value_of_the_wrong_type_in_a_profile_is_named_with_the_type_it_must_be(read, change, expect):
    with pytest.raises(ProfileError, match=expect):
        cotune.validate_profile(dataclasses.replace(read, **change(read)))


def test_a_profile_read_from_a_file_passes_the_door_as_it_is(read):
    assert cotune.load_profile(read) is read


def test_a_hand_built_profile_of_valid_records_reads_as_the_files_records(read):
    # Built from the same values, numpy numbers included (as a Python caller's arrays give them):
    # the door hands on plain numbers, the records the reader made from the file.
    steps = tuple(StepRecord(gpu=s.gpu, workers=np.int64(s.workers), hosts=s.hosts, local_batch=np.int32(s.local_batch),
                             step_time_s=np.float64(s.step_time_s)) for s in read.steps)
    evals = tuple(EvalRecord(global_batch=e.global_batch, epoch=e.epoch, metric=e.metric, seed=e.seed) for e in read.evals)
    workload = WorkloadRecord(name=read.workload.name, dataset_size=read.workload.dataset_size, metric=read.workload.metric)
    loaded = cotune.load_profile(Profile(workload=workload, steps=list(steps), evals=evals))
    assert loaded.steps == read.steps and loaded.evals == read.evals
    assert all(type(s.workers) is int and type(s.step_time_s) is float for s in loaded.steps)


def test_a_hand_built_record_the_rule_reads_unchanged_is_handed_on_as_itself(read):
    # Checked once: a program passing its own records to door after door (the replay
    # benchmarks fit at every checkpoint) does not pay the full check again each time.
    plain = StepRecord(gpu="t4", workers=2, hosts=1, local_batch=16, step_time_s=0.05)
    spelt = StepRecord(gpu=" t4", workers=2, hosts=1, local_batch=16, step_time_s=0.05)
    numpy = StepRecord(gpu="t4", workers=np.int64(2), hosts=1, local_batch=16, step_time_s=0.05)
    loaded = cotune.load_profile(dataclasses.replace(read, steps=(plain, spelt, numpy)))
    assert loaded.steps[0] is plain
    assert loaded.steps[1] is not spelt and loaded.steps[1].gpu == "t4"  # what the rule reads is handed on
    assert loaded.steps[2] is not numpy and type(loaded.steps[2].workers) is int
