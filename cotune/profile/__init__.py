"""The profile: every measurement of one workload, as versioned JSON Lines."""

from cotune.errors import ProfileLockedError, StorageError
from cotune.profile._profile import (
    MAX_LINE_CHARS,
    MAX_PROFILE_CHARS,
    MAX_PROFILE_LINES,
    Profile,
    ProfileWriter,
    append_records,
    check_profile_path,
    parse_profile,
    read_profile,
    write_profile,
)
from cotune.profile._source import load_profile
from cotune.profile._schema import (
    FAILURE_KINDS,
    FORMAT_VERSION,
    GOALS,
    MIN_STEP_TIME_S,
    EvalRecord,
    FailureRecord,
    NoiseRecord,
    Record,
    StepRecord,
    WorkloadRecord,
    record_from_dict,
    record_to_dict,
)

__all__ = [
    "FORMAT_VERSION",
    "GOALS",
    "FAILURE_KINDS",
    "MAX_LINE_CHARS",
    "MIN_STEP_TIME_S",
    "MAX_PROFILE_CHARS",
    "MAX_PROFILE_LINES",
    "Profile",
    "ProfileWriter",
    "ProfileLockedError",
    "StorageError",
    "Record",
    "WorkloadRecord",
    "StepRecord",
    "EvalRecord",
    "FailureRecord",
    "NoiseRecord",
    "append_records",
    "check_profile_path",
    "load_profile",
    "parse_profile",
    "read_profile",
    "write_profile",
    "record_from_dict",
    "record_to_dict",
]
