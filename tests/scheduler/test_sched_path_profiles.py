"""Profiles by path in the service (``profile_dir``): the fit cached by the file's content,
the record limit applied while reading, one read per request."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, Callable

import pytest
from sched_helpers import without_timing

import cotune.api._service as service
from cotune.api import LimitError, Limits, clear_cache, recommend_request, replan_request

# A job tracked by cotune.track (digits-cnn on one CPU worker): untracked probes first, then
# the job's own steps and evaluations (records with "job").
TRACKED = Path(__file__).parent / "data" / "tracked-digits-cnn.jsonl"
QUESTION: dict[str, Any] = {"profile": {"path": "p.jsonl"}, "target": 0.95, "deadline_s": 60, "max_workers": 1,
                            "gpus_per_host": 1, "prices": {"cpu": 0.1}}


def _probes() -> list[str]:
    """The untracked probe records of the tracked profile (those before the job's first)."""
    lines = TRACKED.read_text().splitlines(keepends=True)
    return lines[:next(i for i, line in enumerate(lines) if '"job"' in line)]


def _replace(path: Path, text: str, *, mtime_ns: int) -> None:
    """Replace ``path`` atomically with ``text``, its mtime set as rsync -a, cp -p or tar set it."""
    tmp = path.with_name(".tmp")
    tmp.write_text(text)
    os.utime(tmp, ns=(mtime_ns, mtime_ns))
    os.replace(tmp, path)


def test_a_path_profile_replaced_by_one_of_the_same_size_and_mtime_is_answered_from_its_new_content(tmp_path):
    clear_cache()
    a = "".join(_probes())
    b = a.replace('"step_time_s": 0.00', '"step_time_s": 0.09')  # every step slower, not one byte longer
    assert len(a) == len(b) and a != b
    profile = tmp_path / "p.jsonl"
    _replace(profile, a, mtime_ns=1_700_000_000_000_000_000)
    first = recommend_request(dict(QUESTION), profile_dir=tmp_path)
    _replace(profile, b, mtime_ns=1_700_000_000_000_000_000)
    served = recommend_request(dict(QUESTION), profile_dir=tmp_path)
    clear_cache()
    fresh = recommend_request(dict(QUESTION), profile_dir=tmp_path)
    assert first["recommendation"] != fresh["recommendation"]  # the two contents answer differently
    assert without_timing(served) == without_timing(fresh)


def test_a_path_profile_over_the_record_limit_is_refused_before_any_record_is_parsed(tmp_path):
    # Lines past the limit that are no JSON: a parse would say invalid_profile, not the limit.
    (tmp_path / "p.jsonl").write_text("".join(_probes()[:5]) + "{not json\n" * 3)
    with pytest.raises(LimitError) as info:
        recommend_request(dict(QUESTION), profile_dir=tmp_path, limits=Limits(max_records=5))
    assert (info.value.code, info.value.path) == ("limit_exceeded", "/profile/path")
    assert "limit of 5" in info.value.detail


def _append_after_first_read(monkeypatch: pytest.MonkeyPatch, path: Path, lines: list[str]) -> None:
    """Append ``lines`` to ``path`` right after the service's first read of a profile, as a
    tracker writing between two reads would."""
    resolve = service._resolve
    reads: list[int] = []

    def resolve_then_append(ref: Any, profile_dir: Any, limits: Limits) -> tuple[Any, Callable[[], Any]]:
        key, load = resolve(ref, profile_dir, limits)

        def load_then_append() -> Any:
            profile = load()
            reads.append(1)
            if len(reads) == 1:
                with path.open("a") as fh:
                    fh.writelines(lines)
            return profile

        return key, load_then_append

    monkeypatch.setattr(service, "_resolve", resolve_then_append)


def test_a_replan_by_path_answers_from_one_snapshot_when_the_job_appends_between_reads(tmp_path, monkeypatch):
    lines = TRACKED.read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if '"epoch": 1.759' in line) + 1
    later_evals = [line for line in lines[cut:] if '"record": "eval"' in line][:3]
    raced, snapshot = tmp_path / "raced", tmp_path / "snapshot"
    for folder in (raced, snapshot):
        folder.mkdir()
        (folder / "p.jsonl").write_text("".join(lines[:cut]))
    question = dict(QUESTION, target=0.985)
    expected = replan_request(dict(question), profile_dir=snapshot)
    _append_after_first_read(monkeypatch, raced / "p.jsonl", later_evals)
    answer = replan_request(dict(question), profile_dir=raced)
    assert (raced / "p.jsonl").read_text().endswith(later_evals[-1])  # the append did land mid-request
    assert without_timing(answer) == without_timing(expected)


def _counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of lines the service reads from path profiles, as they are read."""
    import cotune.profile._profile as profile_module

    read = [0]
    lines_of = profile_module.file_lines

    def counted(path: Any) -> Any:
        for line in lines_of(path):
            read[0] += 1
            yield line

    monkeypatch.setattr(profile_module, "file_lines", counted)
    return read


def test_a_path_profile_of_blank_lines_is_refused_at_the_line_bound_without_reading_the_rest(tmp_path, monkeypatch):
    # Blank lines count towards no record: the whole file was read (100 MB: 69 s) before the
    # parser's line bound refused it.
    from cotune.profile._profile import MAX_PROFILE_LINES

    (tmp_path / "p.jsonl").write_text("\n" * (MAX_PROFILE_LINES + 50_000))
    read = _counting_reads(monkeypatch)
    with pytest.raises(service.RequestError, match=f"more than {MAX_PROFILE_LINES:,} lines"):
        recommend_request(dict(QUESTION), profile_dir=tmp_path)
    assert read[0] <= MAX_PROFILE_LINES + 2


def test_the_profilers_optional_lines_count_towards_no_record_limit(tmp_path):
    # A profile written by the profiler holds probe_cost lines the parser skips: counted as
    # records, a profile within the limit was refused with "thin its learning curves".
    probes = _probes()
    cost = ('{"record": "probe_cost", "optional": true, "probe": "timing", "gpu": "cpu", "workers": 1, "hosts": 1, '
            '"local_batch": 16, "wall_s": 3.0, "outcome": "ok"}\n')
    (tmp_path / "p.jsonl").write_text("".join(probes) + cost * len(probes))  # one cost line a record
    answer = recommend_request(dict(QUESTION), profile_dir=tmp_path, limits=Limits(max_records=len(probes)))
    assert answer["recommendation"] is not None
    with pytest.raises(LimitError):
        recommend_request(dict(QUESTION), profile_dir=tmp_path, limits=Limits(max_records=len(probes) - 1))


def test_a_record_holding_the_text_optional_counts_towards_the_limit_as_it_is_read(tmp_path):
    # Lines holding "optional" anywhere went uncounted while reading: 900,000 step records
    # with placement "optional" were parsed whole (27 s, 405 MiB) before the exact count
    # refused them. Lines past the limit that are no JSON: a parse would say invalid_profile.
    import json

    probes = _probes()
    step = json.loads(next(line for line in probes if '"step"' in line))
    odd = json.dumps({**step, "placement": "optional"}) + "\n"
    (tmp_path / "p.jsonl").write_text("".join(probes) + odd * 3 + "{not json\n" * 3)
    with pytest.raises(LimitError, match=f"limit of {len(probes) + 1}"):
        recommend_request(dict(QUESTION), profile_dir=tmp_path, limits=Limits(max_records=len(probes) + 1))


def test_the_profilers_optional_lines_have_a_cap_of_their_own(tmp_path):
    probes = _probes()
    cost = ('{"record": "probe_cost", "optional": true, "probe": "timing", "gpu": "cpu", "workers": 1, "hosts": 1, '
            '"local_batch": 16, "wall_s": 3.0, "outcome": "ok"}\n')
    (tmp_path / "p.jsonl").write_text("".join(probes) + cost * (len(probes) + 1) + "{not json\n" * 3)
    with pytest.raises(LimitError, match=r"optional lines \(probe_cost, curve_done, other tools' records\)"):
        recommend_request(dict(QUESTION), profile_dir=tmp_path, limits=Limits(max_records=len(probes)))


def test_another_tools_optional_record_counts_towards_no_record_limit(tmp_path):
    # docs/profile-format.md lets any writer add optional records; one such line was counted
    # as a record and refused "more than 17 records" of a profile holding 17.
    probes = _probes()
    (tmp_path / "p.jsonl").write_text("".join(probes) + '{"record": "tracker_meta", "optional": true, "host": "n1"}\n')
    answer = recommend_request(dict(QUESTION), profile_dir=tmp_path, limits=Limits(max_records=len(probes)))
    assert answer["recommendation"] is not None


# --- the fitted-model cache: bounded by records, one entry per path profile -------------------


def _fake_profile(records: int) -> Any:
    """A stand-in for a parsed profile of ``records`` records (the cache counts, never reads, them)."""
    from types import SimpleNamespace

    return SimpleNamespace(steps=(None,) * (records - 1), evals=(), failures=(), noise=())


def test_a_new_version_of_a_path_profile_replaces_its_old_entry_in_the_cache(tmp_path):
    # Keyed by content, each version of a tracked job's growing file stayed cached (32 of
    # them, ~820 MiB), never asked for again.
    clear_cache()
    probes = _probes()
    profile = tmp_path / "p.jsonl"
    profile.write_text("".join(probes))
    recommend_request(dict(QUESTION), profile_dir=tmp_path)
    profile.write_text("".join(probes).replace('"step_time_s": 0.00', '"step_time_s": 0.09'))
    recommend_request(dict(QUESTION), profile_dir=tmp_path)
    assert len(service._CACHE) == 1
    clear_cache()


def test_a_profile_of_more_records_than_the_cache_budget_is_not_cached():
    clear_cache()
    service._store(("records", "a", 0.8), _fake_profile(11), None, limits=Limits(cache_records=10))
    assert not service._CACHE


def test_a_profile_within_a_raised_record_limit_is_cached_without_raising_the_cache_budget():
    # The budget was a fixed 100,000 records whatever max_records: a Python caller's
    # Limits(max_records=200_000) refitted every profile over 100,000 on every request.
    clear_cache()
    service._store(("records", "a", 0.8), _fake_profile(150_000), None, limits=Limits(max_records=200_000))
    assert list(service._CACHE) == [("records", "a", 0.8)]
    clear_cache()


def test_a_limits_copied_with_a_raised_record_limit_raises_its_default_cache_budget_too():
    # Resolved once when the Limits was made, replace(Limits(max_records=5), max_records=50)
    # kept a budget of 10 records and refitted the 20-record profile on every request.
    clear_cache()
    limits = dataclasses.replace(Limits(max_records=5), max_records=50)
    service._store(("records", "a", 0.8), _fake_profile(20), None, limits=limits)
    assert list(service._CACHE) == [("records", "a", 0.8)]
    clear_cache()


def test_the_cache_evicts_its_least_recently_used_entries_past_its_record_budget():
    clear_cache()
    limits = Limits(cache_records=10)
    for name in ("a", "b", "c"):
        service._store(("records", name, 0.8), _fake_profile(4), None, limits=limits)
    assert list(service._CACHE) == [("records", "b", 0.8), ("records", "c", 0.8)]
    clear_cache()


def test_a_tracked_job_over_the_record_limit_is_told_to_widen_its_tracker_window_or_raise_the_limit(tmp_path):
    # "thin its learning curves or split it": a tracked job's records are its step windows,
    # and splitting the file cut the history a re-plan reads.
    (tmp_path / "p.jsonl").write_text(TRACKED.read_text())
    with pytest.raises(LimitError) as info:
        replan_request(dict(QUESTION), profile_dir=tmp_path, limits=Limits(max_records=40))
    assert "Tracker(window=...)" in info.value.detail and "cotune serve --max-records" in info.value.detail
    assert "split" not in info.value.detail
