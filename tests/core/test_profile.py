import itertools
import json
import math
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cotune.errors import ProfileError
from cotune.profile import (
    EvalRecord,
    FailureRecord,
    Profile,
    ProfileWriter,
    StepRecord,
    WorkloadRecord,
    append_records,
    parse_profile,
    read_profile,
    write_profile,
)

ISSUE_LINES = [
    '{"record": "workload", "name": "cifar10-resnet18", "dataset_size": 50000, "metric": "top1", "goal": "max"}\n',
    '{"record": "step", "gpu": "t4", "workers": 4, "hosts": 1, "local_batch": 128, "step_time_s": 0.083, "sync_time_s": 0.01}\n',
    '{"record": "eval", "global_batch": 512, "epoch": 3.0, "metric": 0.61, "seed": 0}\n',
]


def test_the_three_documented_lines_are_valid_input():
    p = parse_profile(ISSUE_LINES)
    assert p.workload.name == "cifar10-resnet18" and p.workload.goal == "max"
    assert p.steps[0] == StepRecord(gpu="t4", workers=4, hosts=1, local_batch=128, step_time_s=0.083, sync_time_s=0.01)
    assert p.evals[0] == EvalRecord(global_batch=512, epoch=3.0, metric=0.61, seed=0)


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ('{"record": "step", "gpu": "t4", "workers": 2, "local_batch": 8, "step_time_s": -1}', "step_time_s"),
        ('{"record": "step", "gpu": "t4", "workers": 2, "local_batch": 8, "step_time_s": NaN}', "finite"),
        # a denormal (or a timer in the wrong unit) planned a 0.0 s job
        ('{"record": "step", "gpu": "t4", "workers": 2, "local_batch": 8, "step_time_s": 5e-324}', ">= 1e-06"),
        ('{"record": "step", "gpu": "t4", "workers": 2, "local_batch": 8}', "missing field 'step_time_s'"),
        ('{"record": "step", "gpu": "t4", "workers": 1, "hosts": 2, "local_batch": 8, "step_time_s": 1}', "hosts"),
        ('{"record": "step", "gpu": "t4", "workers": 0, "local_batch": 8, "step_time_s": 1}', "workers"),
        ('{"record": "step", "gpu": "t4", "workers": 2.5, "local_batch": 8, "step_time_s": 1}', "whole number"),
        ('{"record": "eval", "global_batch": 64, "epoch": -1, "metric": 0.5}', "epoch"),
        ('{"record": "eval", "global_batch": 64, "epoch": 1, "metric": "high"}', "metric"),
        ('{"record": "eval", "global_batch": 64, "epoch": 1, "metric": 0.5, "schedule_epochs": 0}', "schedule_epochs"),
        ('{"record": "failure", "gpu": "t4", "workers": 1, "local_batch": 8, "failure": "boom"}', "oom"),
        ('{"record": "step", "gpu": "t4", "workers": 2, "local_batch": 8, "step_time_s": 1, "cause": "preempted"}',
         "field 'cause' must be one of replan, revocation"),
        ('{"record": "banana"}', "unknown record type"),
        ('{"kind": "step", "gpu": "t4"}', 'no "record" field'),
        ('{"record": "noise", "global_batch": 64, "epoch": 1}', "a 'noise' record needs it (docs/profile-format.md"),
        ('[1, 2]', "JSON object"),
        ('{"record": "step", ', "not valid JSON"),
    ],
)
def test_malformed_line_is_rejected_with_its_line_number(line, needle):
    lines = [ISSUE_LINES[0], line + "\n", ISSUE_LINES[2]]
    with pytest.raises(ProfileError) as info:
        parse_profile(lines, path="p.jsonl")
    assert "p.jsonl:2:" in str(info.value)
    assert needle in str(info.value)


def test_unknown_goal_names_the_allowed_values():
    with pytest.raises(ProfileError, match="'max' or 'min'"):
        parse_profile(['{"record": "workload", "name": "x", "dataset_size": 10, "goal": "maximise"}\n'])


def test_newer_format_version_asks_to_upgrade():
    with pytest.raises(ProfileError, match="upgrade cotune"):
        parse_profile(['{"record": "workload", "name": "x", "dataset_size": 10, "version": 99}\n'])


def test_profile_without_workload_record_is_an_error():
    with pytest.raises(ProfileError, match="no workload record"):
        parse_profile(ISSUE_LINES[1:])


def test_unknown_fields_are_ignored_and_optional_records_skipped():
    extra = '{"record": "probe_note", "optional": true, "text": "hi"}\n'
    line = '{"record": "step", "gpu": "T4", "workers": 1, "local_batch": 8, "step_time_s": 1, "note": "x"}\n'
    p = parse_profile([ISSUE_LINES[0], extra, line])
    assert len(p.steps) == 1 and p.steps[0].gpu == "t4"


def test_nan_metric_is_kept_for_a_diverged_run():
    p = parse_profile([ISSUE_LINES[0], '{"record": "eval", "global_batch": 64, "epoch": 2, "metric": NaN}\n'])
    assert math.isnan(p.evals[0].metric)


def test_a_field_named_twice_in_a_record_is_an_error_naming_the_line():
    line = '{"record": "step", "gpu": "t4", "workers": 1, "local_batch": 8, "step_time_s": 1, "step_time_s": 2}\n'
    with pytest.raises(ProfileError, match=r"p.jsonl:2: field 'step_time_s' appears twice in one object: keep one"):
        parse_profile([ISSUE_LINES[0], line], path="p.jsonl")


def test_torn_last_line_is_skipped_with_a_warning(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text("".join(ISSUE_LINES) + '{"record": "step", "gpu": "t4", "wor')
    p = read_profile(path)
    assert len(p.steps) == 1 and len(p.evals) == 1
    assert any("torn" in w for w in p.warnings)


def test_a_torn_last_line_cut_inside_a_multibyte_character_is_skipped_too(tmp_path):
    # a record written with ensure_ascii=False (another tool; an editor), cut mid-'é' by a kill
    path = tmp_path / "p.jsonl"
    path.write_bytes("".join(ISSUE_LINES).encode() + '{"record": "failure", "message": "caf\u00e9'.encode()[:-1])
    p = read_profile(path)
    assert len(p.steps) == 1 and any("torn" in w for w in p.warnings)


def test_bytes_that_are_not_utf8_before_the_last_line_are_still_an_error(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_bytes(ISSUE_LINES[0].encode() + b'{"x": "caf\xc3"}\n' + "".join(ISSUE_LINES[1:]).encode())
    with pytest.raises(ProfileError, match="not UTF-8"):
        read_profile(path)


def test_writer_repairs_a_torn_tail_before_appending(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text("".join(ISSUE_LINES) + '{"record": "step", "gpu"')
    append_records(path, [StepRecord(gpu="t4", workers=2, local_batch=64, step_time_s=0.1)])
    p = read_profile(path)
    assert [s.workers for s in p.steps] == [4, 2]
    assert not p.warnings
    assert path.read_text().endswith("\n")


@pytest.mark.parametrize("lines", [1, 3])
def test_a_whole_last_record_without_its_newline_is_kept_by_the_writer(tmp_path, lines):
    # A profile saved by an editor that omits the final newline (or a write that stopped
    # just before it): the last line is a whole record, which readers take, and an append
    # must not cut it (with one line, that cut the workload record and broke the file).
    path = tmp_path / "p.jsonl"
    path.write_text("".join(ISSUE_LINES[:lines]).rstrip("\n"))
    before = read_profile(path)
    append_records(path, [StepRecord(gpu="t4", workers=2, local_batch=64, step_time_s=0.1)])
    after = read_profile(path)
    assert after.workload == before.workload and after.evals == before.evals
    assert after.steps == before.steps + (StepRecord(gpu="t4", workers=2, local_batch=64, step_time_s=0.1),)
    assert not after.warnings and path.read_text().endswith("\n")


@pytest.mark.parametrize("lines", [1, 3])
def test_a_profile_saved_with_a_byte_order_mark_is_read_and_appended_to(tmp_path, lines):
    # Windows editors and PowerShell start UTF-8 files with a BOM: line 1 read as bad JSON,
    # and an append to a one-line file without its newline cut the workload record.
    path = tmp_path / "p.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "".join(ISSUE_LINES[:lines]).rstrip("\n").encode())
    before = read_profile(path)
    assert before.workload.name == "cifar10-resnet18" and not before.warnings
    append_records(path, [StepRecord(gpu="t4", workers=2, local_batch=64, step_time_s=0.1)])
    after = read_profile(path)
    assert after.workload == before.workload and after.evals == before.evals
    assert after.steps == before.steps + (StepRecord(gpu="t4", workers=2, local_batch=64, step_time_s=0.1),)


def test_a_json_array_is_refused_with_the_format_named(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps([json.loads(line) for line in ISSUE_LINES]))
    with pytest.raises(ProfileError, match=r"got list: a profile is JSON Lines, one record object per line"):
        read_profile(path)


def test_records_written_before_a_crash_survive(tmp_path):
    path = tmp_path / "p.jsonl"
    with pytest.raises(RuntimeError):
        with ProfileWriter(path) as w:
            w.write(WorkloadRecord(name="x", dataset_size=100))
            w.write(StepRecord(gpu="cpu", workers=1, local_batch=8, step_time_s=0.5))
            raise RuntimeError("probe crashed")
    assert len(read_profile(path).steps) == 1


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda d: d / "missing.jsonl", "no such file"),
        (lambda d: d, "directory"),
    ],
)
def test_unreadable_paths_give_clear_errors(tmp_path, make, needle):
    with pytest.raises(ProfileError, match=needle):
        read_profile(make(tmp_path))


def test_non_utf8_file_is_rejected(tmp_path):
    path = tmp_path / "bin.jsonl"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ProfileError, match="UTF-8"):
        read_profile(path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_permission_denied_is_reported(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text("".join(ISSUE_LINES))
    path.chmod(0)
    with pytest.raises(ProfileError, match="permission"):
        read_profile(path)


_name = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12)
_pos = st.floats(min_value=1e-6, max_value=1e4, allow_nan=False)
_step = st.builds(
    StepRecord,
    gpu=_name,
    workers=st.integers(1, 64),
    local_batch=st.integers(1, 4096),
    step_time_s=_pos,
    hosts=st.just(1),
    accum_steps=st.integers(1, 4),
)
_eval = st.builds(
    EvalRecord,
    global_batch=st.integers(1, 10**5),
    epoch=st.floats(min_value=0, max_value=1e3),
    metric=st.floats(min_value=-1e3, max_value=1e3),
    seed=st.integers(0, 10),
    schedule_epochs=st.none() | st.floats(min_value=0.5, max_value=1e3),
)
_fail = st.builds(FailureRecord, gpu=_name, workers=st.integers(1, 8), local_batch=st.integers(1, 1024), failure=st.sampled_from(["oom", "crash", "timeout"]))


@settings(max_examples=40, deadline=None)
@given(
    st.builds(WorkloadRecord, name=_name, dataset_size=st.integers(1, 10**7), goal=st.sampled_from(["max", "min"])),
    st.lists(_step, max_size=8),
    st.lists(_eval, max_size=8),
    st.lists(_fail, max_size=3),
)
def test_profile_round_trips_through_a_file(tmp_path_factory, workload, steps, evals, failures):
    path = tmp_path_factory.mktemp("rt") / "p.jsonl"
    original = Profile(workload=workload, steps=tuple(steps), evals=tuple(evals), failures=tuple(failures))
    write_profile(original, path)
    again = read_profile(path)
    assert (again.workload, again.steps, again.evals, again.failures) == (workload, tuple(steps), tuple(evals), tuple(failures))
    for line in path.read_text().splitlines():
        json.loads(line)  # every line is standalone JSON


def test_a_written_copy_keeps_the_running_job_whose_steps_follow_a_finished_jobs_evals(tmp_path):
    from cotune.track import job_progress

    step = '{{"record": "step", "gpu": "t4", "workers": 4, "local_batch": 128, "step_time_s": 0.1, "job": "{}"}}\n'
    ev = '{{"record": "eval", "global_batch": 512, "epoch": {}, "metric": 0.5, "job": "A"}}\n'
    read = parse_profile([ISSUE_LINES[0], step.format("A"), ev.format(1), ev.format(2), step.format("B"), step.format("B")])
    write_profile(read, tmp_path / "copy.jsonl")
    again = read_profile(tmp_path / "copy.jsonl")
    assert (again.last_job, job_progress(again, target=0.9).job) == ("B", "B")


def test_max_local_batch_comes_from_the_smallest_oom():
    p = parse_profile(
        [
            ISSUE_LINES[0],
            '{"record": "failure", "gpu": "t4", "workers": 1, "local_batch": 512, "failure": "oom"}\n',
            '{"record": "failure", "gpu": "t4", "workers": 1, "local_batch": 256, "failure": "oom"}\n',
            '{"record": "failure", "gpu": "t4", "workers": 1, "local_batch": 64, "failure": "crash"}\n',
        ]
    )
    assert p.max_local_batch("t4") == 255
    assert p.max_local_batch("v100") is None


def test_probe_cost_lines_are_summed_not_rejected():
    lines = ISSUE_LINES + [
        '{"record": "probe_cost", "optional": true, "probe": "timing", "gpu": "t4", "workers": 2, "hosts": 1, "local_batch": 8, "wall_s": 360, "outcome": "ok"}\n',
        '{"record": "probe_cost", "optional": true, "probe": "curve", "gpu": "t4", "workers": 1, "hosts": 1, "local_batch": 8, "wall_s": 1800, "outcome": "ok"}\n',
    ]
    p = parse_profile(lines)
    assert p.n_probes == 2 and p.probe_worker_hours == pytest.approx((2 * 360 + 1800) / 3600)


_json_value = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
_field_names = st.sampled_from(
    ["record", "name", "dataset_size", "goal", "gpu", "workers", "hosts", "local_batch", "step_time_s", "sync_time_s",
     "global_batch", "epoch", "metric", "seed", "failure", "b_noise", "version", "optional", "accum_steps"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(_field_names, _json_value | st.sampled_from(["workload", "step", "eval", "failure", "noise"]),
                                max_size=8), max_size=5))
@pytest.mark.slow
def test_arbitrary_records_parse_or_raise_profile_error_never_crash(objects):
    lines = [ISSUE_LINES[0]] + [json.dumps(o) + "\n" for o in objects]
    try:
        parse_profile(lines)
    except ProfileError as exc:
        assert str(exc) and "\n" not in str(exc)


# --- bounded reading: hostile files end in one ProfileError naming file:line ------------------

_HEAD = '{"record": "workload", "name": "w", "dataset_size": 100}\n'


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ('{"record": "step", "gpu": "t4", "workers": 1, "local_batch": 1' + "0" * 400 + ', "step_time_s": 1}', "integer of 401 digits"),
        ('{"record": "step", "gpu": "t4", "workers": 1, "local_batch": 1' + "0" * 5000 + ', "step_time_s": 1}', "more than 4300 digits"),
        ('{"record": "step", "gpu": "t4", "workers": 1, "local_batch": 8, "step_time_s": 1e400}', "got inf"),
        ('{"record": "step", "gpu": "t4", "workers": 1, "local_batch": 8, "step_time_s": Infinity}', "got inf"),
        ('{"record": "step", "gpu": "t4", "workers": 1e18, "local_batch": 8, "step_time_s": 1}', "at most 1e+15"),
        ('{"record": "step", "gpu": "t4", "workers": NaN, "local_batch": 8, "step_time_s": 1}', "got nan"),
        ('{"record": "eval", "global_batch": 8, "epoch": 1, "metric": 0.5, "seed": 1' + "0" * 30 + "}", "field 'seed'"),
        ('{"record": "eval", "global_batch": 8, "epoch": 1, "metric": 1' + "0" * 30 + "}", "field 'metric'"),
        ("[" * 100_000 + "]" * 100_000, "longer than 65,536 characters"),
        ("[" * 30_000, "nested too deeply"),
        ('{"record": "banana\\u001b]0;owned\\u0007"}', "\\x1b]0;owned\\x07"),
    ],
    ids=["int-401-digits", "int-5000-digits", "1e400", "Infinity", "1e18-workers", "NaN-workers", "huge-seed", "huge-metric",
         "long-line", "deep-nesting", "escape-in-type"],
)
def test_absurd_values_in_records_are_one_line_errors_with_the_line(tmp_path, line, needle):
    path = tmp_path / "p.jsonl"
    path.write_text(_HEAD + line + "\n")
    with pytest.raises(ProfileError) as info:
        read_profile(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}:2: ") and needle in msg and "\n" not in msg and "\x1b" not in msg and len(msg) < 400, msg


def test_a_file_without_newlines_is_refused_after_one_bounded_line():
    from cotune.profile import MAX_LINE_CHARS

    with pytest.raises(ProfileError, match=f"line longer than {MAX_LINE_CHARS:,} characters"):
        parse_profile(iter(["x" * (MAX_LINE_CHARS + 1)]), path="p.jsonl")


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_recommend_dev_zero_is_exit_2_at_once(capsys):
    from cotune.cli import main

    assert main(["recommend", "/dev/zero", "--target", "0.9"]) == 2
    err = capsys.readouterr().err
    assert err == "cotune: /dev/zero: is not a regular file (a device, a pipe or a socket): give the path of a profile file\n"


@pytest.mark.parametrize(("layout", "needle"), [
    ("indented array", "a line holding only '[': this looks like one JSON document spread over lines (an array), not "
                       "JSON Lines: write one compact record per line (jq -c '.[]' FILE > PROFILE.jsonl"),
    ("indented object", "a line holding only '{': this looks like one JSON document spread over lines (an indented "
                        "object), not JSON Lines: write one compact record per line (jq -c . FILE > PROFILE.jsonl"),
    ("short array", "each line must be a JSON object, got list: a profile is JSON Lines, one record object per line, "
                    "not a JSON array (jq -c '.[]' FILE > PROFILE.jsonl)"),
    ("long array", "a JSON array of records? a profile is JSON Lines, one record per line (jq -c '.[]' FILE"),
])
def test_a_profile_saved_as_one_json_document_is_named_with_the_way_to_json_lines(tmp_path, layout, needle):
    # json.dump(records, f, indent=2) is what people write first: it read as "not valid
    # JSON (Expecting value at column 2)" of line 1, or "is this a profile?".
    import cotune

    records = [json.loads(line) for line in Path(cotune.load_profile("cifar10-resnet18").path).read_text().splitlines()]
    path = tmp_path / "profile.json"
    doc = {"indented array": lambda: json.dumps(records[:5], indent=2),
           "indented object": lambda: json.dumps(records[0], indent=2),
           "short array": lambda: json.dumps(records[:5]),
           "long array": lambda: json.dumps(records)}[layout]()
    path.write_text(doc + "\n")
    with pytest.raises(ProfileError) as info:
        read_profile(path)
    assert str(info.value).startswith(f"{path}:1: ") and needle in str(info.value), str(info.value)


def test_a_file_with_an_endless_first_line_is_refused_after_reading_past_the_cap(tmp_path):
    from cotune.profile import MAX_LINE_CHARS

    path = tmp_path / "p.jsonl"
    path.write_text("x" * (MAX_LINE_CHARS * 3))
    with pytest.raises(ProfileError, match=f"p.jsonl:1: line longer than {MAX_LINE_CHARS:,} characters"):
        read_profile(path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")
def test_a_pipe_without_a_writer_is_refused_not_waited_on(tmp_path):
    # Opening a FIFO blocks until a writer comes: the reader would hang forever.
    fifo = tmp_path / "p.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(ProfileError, match="is not a regular file .* give the path of a profile file"):
        read_profile(fifo)
    with pytest.raises(ProfileError, match="is not a regular file"):
        ProfileWriter(fifo).open()


def test_more_lines_than_the_cap_is_an_error_naming_the_line():
    from cotune.profile import MAX_PROFILE_LINES

    lines = itertools.chain([_HEAD], itertools.repeat("\n", MAX_PROFILE_LINES))
    with pytest.raises(ProfileError, match=f"p.jsonl:{MAX_PROFILE_LINES + 1}: more than {MAX_PROFILE_LINES:,} lines"):
        parse_profile(lines, path="p.jsonl")


def test_more_characters_than_the_cap_is_an_error_before_they_are_parsed():
    # Lines just under the line cap, a million of them, would take an hour to parse.
    from cotune.profile import MAX_PROFILE_CHARS

    line = " " * 60_000 + "\n"
    lines = itertools.chain([_HEAD], itertools.repeat(line, MAX_PROFILE_CHARS // len(line) + 2))
    with pytest.raises(ProfileError, match=f"more than {MAX_PROFILE_CHARS:,} characters"):
        parse_profile(lines, path="p.jsonl")


def test_torn_last_line_is_still_skipped_when_reading_line_by_line(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(_HEAD + '{"record": "step", "gpu": "t4", "wor')
    prof = read_profile(path)
    assert prof.workload.name == "w" and "torn" in prof.warnings[0]


@pytest.mark.parametrize(
    "make",
    [
        lambda d: str(d / "a\x00b.jsonl"),
        lambda d: str(d / ("x" * 300)),
        lambda d: (os.symlink("loop2", d / "loop1"), os.symlink("loop1", d / "loop2"), str(d / "loop1"))[-1],
    ],
    ids=["nul-byte", "long-component", "symlink-loop"],
)
def test_unusable_paths_are_one_line_errors(tmp_path, make):
    from cotune.profile import load_profile

    with pytest.raises(ProfileError) as info:
        load_profile(make(tmp_path))
    assert "\n" not in str(info.value) and "\x00" not in str(info.value) and len(str(info.value)) < 400


def test_two_different_workload_records_name_the_field_that_differs():
    lines = ['{"record": "workload", "name": "cifar", "dataset_size": 50000}\n',
             '{"record": "workload", "name": "cifar", "dataset_size": 60000}\n']
    with pytest.raises(ProfileError, match="dataset_size is 50000 in one and 60000 in the other"):
        parse_profile(lines)


@pytest.mark.parametrize("name", ["cifar10", "CIFAR10-resnet18", "cifar10-resnet18.jsonl", "cifar10-resnet"])
def test_a_missing_bare_name_near_a_bundled_example_names_it(tmp_path, monkeypatch, name):
    from cotune.profile import load_profile

    monkeypatch.chdir(tmp_path)  # no file of that name here
    with pytest.raises(ProfileError, match="the bundled example of the nearest name is 'cifar10-resnet18'"):
        load_profile(name)


@pytest.mark.parametrize("name", ["foo", "runs/cifar10-resnet18"])
def test_a_missing_path_or_a_name_near_no_example_gets_no_guess(tmp_path, monkeypatch, name):
    from cotune.profile import load_profile

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ProfileError, match="no such file: check the path, or run 'cotune examples'"):
        load_profile(name)


def _oom_story() -> list[str]:
    """A job that ran at local batch 64 and then ran out of memory there; an out-of-memory
    at 256 that a retried probe at 256 later superseded."""
    import json

    rows = [
        {"record": "workload", "name": "j", "dataset_size": 10_000},
        {"record": "failure", "gpu": "t4", "workers": 1, "local_batch": 256, "failure": "oom"},
        {"record": "step", "gpu": "t4", "workers": 1, "local_batch": 32, "step_time_s": 0.1},
        {"record": "step", "gpu": "a100", "workers": 1, "local_batch": 64, "step_time_s": 0.1},
        {"record": "failure", "gpu": "a100", "workers": 1, "local_batch": 64, "failure": "oom"},
        {"record": "step", "gpu": "t4", "workers": 2, "local_batch": 256, "step_time_s": 0.3},
    ]
    return [json.dumps(r) + "\n" for r in rows]


def test_an_out_of_memory_caps_unless_a_later_step_at_its_batch_supersedes_it():
    profile = parse_profile(_oom_story())
    assert profile.oom_superseded == (True, False)
    assert profile.max_local_batch("t4") is None  # 256 ran after its out-of-memory
    assert profile.max_local_batch("a100") == 63  # 64 ran before its out-of-memory: the cap stands


def test_what_superseded_an_out_of_memory_survives_a_file_and_a_frame(tmp_path):
    from cotune.profile import Profile

    profile = parse_profile(_oom_story())
    write_profile(profile, tmp_path / "p.jsonl")
    again = read_profile(tmp_path / "p.jsonl")
    framed = Profile.from_frame(profile.to_frame(), workload=profile.workload)
    for copy in (again, framed):
        assert copy.oom_superseded == profile.oom_superseded
        assert (copy.max_local_batch("t4"), copy.max_local_batch("a100")) == (None, 63)


def test_gradient_statistics_beyond_the_cap_of_other_numbers_are_read_and_only_absurd_ones_refused():
    # BERT's gradient variance in the Pollux traces reaches 7.4e15: sums of squares over every
    # parameter; only grad_var / grad_sqr is used, so the 1e15 cap of other numbers refused a
    # published trace for nothing.
    from cotune.profile import record_from_dict

    rec = record_from_dict({"record": "eval", "global_batch": 12, "epoch": 1.0, "metric": 86.7,
                            "grad_sqr": 1.96e14, "grad_var": 6.89e15})
    assert rec.grad_var == 6.89e15
    with pytest.raises(ProfileError, match=r"field 'grad_var': must be a finite number >= 0 \(at most 1e\+100"):
        record_from_dict({"record": "eval", "global_batch": 12, "epoch": 1.0, "metric": 86.7, "grad_var": 1e101})
    with pytest.raises(ProfileError, match=r"field 'metric'.*at most 1e\+15"):
        record_from_dict({"record": "eval", "global_batch": 12, "epoch": 1.0, "metric": 7e15})


@pytest.mark.parametrize("record, said", [
    (StepRecord(gpu="t4", workers=-3, local_batch=32, step_time_s=0.1), "step record not written: field 'workers'"),
    (StepRecord(gpu="t4", workers=2, local_batch=32, step_time_s=-1.0), "step record not written: field 'step_time_s'"),
    (EvalRecord(global_batch=64, epoch=-1.0, metric=0.5), "eval record not written: field 'epoch'"),
    ({"record": "step", "gpu": "t4"}, "a profile holds records (cotune.profile.StepRecord, EvalRecord, ...), got dict"),
])
def test_a_record_the_readers_would_refuse_is_not_written(tmp_path, record, said):
    # Written, it made the whole profile unreadable: every reader refused its line.
    path = tmp_path / "p.jsonl"
    with ProfileWriter(path) as w:
        w.write(WorkloadRecord(name="w", dataset_size=100, metric="acc"))
        with pytest.raises(ProfileError) as err:
            w.write(record)
        w.write(StepRecord(gpu="t4", workers=2, local_batch=32, step_time_s=0.1))
    assert said in str(err.value), str(err.value)
    assert len(read_profile(path).steps) == 1


def test_numpy_numbers_in_a_record_are_written_as_plain_json(tmp_path):
    # np.int64 is no JSON number: the write raised TypeError inside a training loop.
    import numpy as np

    path = tmp_path / "p.jsonl"
    with ProfileWriter(path) as w:
        w.write(WorkloadRecord(name="w", dataset_size=np.int64(100), metric="acc"))
        w.write(StepRecord(gpu="T4", workers=np.int64(2), local_batch=np.int32(32), step_time_s=np.float32(0.25)))
        w.write(EvalRecord(global_batch=np.int64(64), epoch=np.float64(1.0), metric=np.float32(0.5)))
    profile = read_profile(path)
    assert (profile.steps[0].gpu, profile.steps[0].workers, profile.steps[0].step_time_s) == ("t4", 2, 0.25)
    assert (profile.evals[0].global_batch, profile.evals[0].metric) == (64, 0.5)


def test_an_unterminated_string_is_named_without_a_doubled_at(tmp_path) -> None:
    # json says "Unterminated string starting at": the message read "... starting at at column 9".
    path = tmp_path / "p.jsonl"
    path.write_text('{"record": "workload", "name": "w", "dataset_size": 10}\n{"record": "st\n{"record": "eval"}\n')
    with pytest.raises(ProfileError) as info:
        read_profile(path)
    text = str(info.value)
    assert "Unterminated string starting at column" in text and "at at" not in text


def test_a_byte_that_is_not_utf8_in_a_middle_line_is_named_by_its_line(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_bytes(ISSUE_LINES[0].encode() + b'{"x": "caf\xff"}\n' + "".join(ISSUE_LINES[1:]).encode())
    with pytest.raises(ProfileError, match=r"p.jsonl:2: not UTF-8 text \(byte 0xff at column 11\)"):
        read_profile(path)


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_text_given_to_parse_profile_is_split_where_a_file_is(separator):
    # str.splitlines split a record at a U+2028, U+2029 or NEL inside its string: parse_profile
    # refused text that read_profile reads.
    text = ISSUE_LINES[0].replace('"goal": "max"', f'"goal": "max", "source": "a{separator}b"') + "".join(ISSUE_LINES[1:])
    for given in (text, text.encode("utf-8")):
        p = parse_profile(given)
        assert p.workload.source == f"a{separator}b" and len(p.steps) == 1 and len(p.evals) == 1


def test_a_malformed_line_of_text_without_a_file_is_named_by_its_line():
    with pytest.raises(ProfileError, match=r"^line 2: not valid JSON"):
        parse_profile(ISSUE_LINES[0] + "{bad\n" + ISSUE_LINES[1])


def test_a_profile_opened_in_binary_mode_reads_as_its_text_torn_last_line_included(tmp_path):
    # open(path, "rb") yields bytes lines: its torn last line was a TypeError inside the reader.
    path = tmp_path / "p.jsonl"
    path.write_text("".join(ISSUE_LINES) + '{"record": "eval", "glo', encoding="utf-8")
    with path.open("rb") as fh:
        profile = parse_profile(fh)
    assert profile == parse_profile(ISSUE_LINES) and profile.warnings == ("line 4: skipped a torn last line (an interrupted write)",)


@pytest.mark.parametrize(("lines", "expect"), [
    ([b"\xff\xfe{\x00"], r"^line 1: UTF-16 text .*: save it as UTF-8: a profile is UTF-8 JSON Lines$"),
    (["", None], r"^line 2: a line of a profile is text, got null: give parse_profile a file opened in text mode"),
    ([["{}"]], r"^line 1: a line of a profile is text, got an array of 1 item"),
], ids=["utf16-bytes", "none", "list"])
def test_a_line_that_is_no_text_is_a_profile_error_naming_its_line(lines, expect):
    with pytest.raises(ProfileError, match=expect):
        parse_profile(lines)
