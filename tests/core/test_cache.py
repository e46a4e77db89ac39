"""The fit cache between CLI calls (cotune/_cache.py): fast when warm, never stale, never fatal."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

import pytest

import cotune.models
from cotune import _cache
from cotune.cli import main

ARGS = ["recommend", "cifar10-resnet18", "--target", "0.94", "--deadline", "2h", "--json"]


def _answer(capsys, argv=ARGS):
    assert main(list(argv)) == 0
    data = json.loads(capsys.readouterr().out)
    data.pop("solve_time_s")
    return data


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COTUNE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def count_fits(monkeypatch):
    calls = []
    real = cotune.models.fit_models

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(cotune.models, "fit_models", counting)
    return calls


def test_warm_call_reuses_the_fit_and_answers_the_same(cache, count_fits, capsys):
    cold = _answer(capsys)
    warm = _answer(capsys)
    assert warm == cold and len(count_fits) == 1
    assert len(list(cache.glob("models-*.pickle"))) == 1
    assert not list(cache.glob("*.tmp"))  # written atomically: no temporary left behind


@pytest.mark.slow
def test_no_cache_neither_reads_nor_writes(cache, count_fits, capsys):
    _answer(capsys, ARGS + ["--no-cache"])
    _answer(capsys, ARGS + ["--no-cache"])
    assert len(count_fits) == 2 and not cache.exists()


@pytest.mark.slow
@pytest.mark.parametrize("damage", [b"", b"not a pickle", None])
def test_a_corrupted_entry_is_refitted_silently(cache, count_fits, capsys, damage):
    good = _answer(capsys)
    (entry,) = cache.glob("models-*.pickle")
    data = entry.read_bytes()
    entry.write_bytes(data[: len(data) // 2] if damage is None else damage)
    assert _answer(capsys) == good and len(count_fits) == 2
    assert _answer(capsys) == good and len(count_fits) == 2  # the refit was stored again


@pytest.mark.slow
def test_changed_profile_content_misses(cache, count_fits, capsys, tmp_path):
    from cotune.examples import resolve_profile_path

    path = tmp_path / "p.jsonl"
    lines = open(resolve_profile_path("cifar10-resnet18")).read().splitlines(keepends=True)
    path.write_text("".join(lines))
    argv = ["recommend", str(path)] + ARGS[2:]
    _answer(capsys, argv)
    path.write_text("".join(lines[:-1]))  # one eval record fewer
    _answer(capsys, argv)
    assert len(count_fits) == 2 and len(list(cache.glob("models-*.pickle"))) == 2


@pytest.mark.slow
def test_whitespace_only_changes_still_hit(cache, count_fits, capsys, tmp_path):
    from cotune.examples import resolve_profile_path

    path = tmp_path / "p.jsonl"
    text = open(resolve_profile_path("cifar10-resnet18")).read()
    path.write_text(text)
    argv = ["recommend", str(path)] + ARGS[2:]
    _answer(capsys, argv)
    path.write_text(text.replace("\n", "\n\n"))
    _answer(capsys, argv)
    assert len(count_fits) == 1


@pytest.mark.slow
def test_changed_model_code_misses(cache, count_fits, capsys, monkeypatch):
    _answer(capsys)
    monkeypatch.setattr(_cache, "code_hash", lambda: "edited-model-code")
    _answer(capsys)
    assert len(count_fits) == 2


def test_code_hash_covers_the_model_sources(monkeypatch, tmp_path):
    import shutil

    import cotune as pkg

    root = tmp_path / "cotune"
    shutil.copytree(os.path.dirname(pkg.__file__), root)
    monkeypatch.setattr(pkg, "__file__", str(root / "__init__.py"))
    _cache.code_hash.cache_clear()
    before = _cache.code_hash()
    with open(root / "models" / "_accuracy.py", "a") as fh:
        fh.write("\n# an edit\n")
    _cache.code_hash.cache_clear()
    after = _cache.code_hash()
    monkeypatch.undo()
    _cache.code_hash.cache_clear()
    assert before != after


@pytest.mark.slow
def test_an_unwritable_cache_location_only_costs_speed(tmp_path, monkeypatch, count_fits, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv("COTUNE_CACHE_DIR", str(blocker / "cache"))
    first = _answer(capsys)
    assert _answer(capsys) == first and len(count_fits) == 2


@pytest.mark.slow
def test_fit_report_is_cached_too(cache, capsys, monkeypatch):
    import cotune.models._validate as validate

    assert main(["fit", "cifar10-resnet18", "--json"]) == 0
    cold = capsys.readouterr().out
    monkeypatch.setattr(validate, "validate_profile", lambda *a, **k: pytest.fail("refitted"))
    assert main(["fit", "cifar10-resnet18", "--json"]) == 0
    assert capsys.readouterr().out == cold


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_an_entry_others_could_write_is_never_unpickled(cache, count_fits, capsys):
    # Unpickling runs code: a group- or world-writable entry or folder is a miss, refitted.
    good = _answer(capsys)
    (entry,) = cache.glob("models-*.pickle")
    assert (cache.stat().st_mode & 0o077) == 0  # created private
    entry.chmod(0o666)
    assert _answer(capsys) == good and len(count_fits) == 2
    entry.chmod(0o600)
    cache.chmod(0o777)
    assert _answer(capsys) == good and len(count_fits) == 3


def test_a_fifo_at_an_entrys_name_is_a_miss_not_a_hang(cache, count_fits, capsys):
    _answer(capsys)
    (entry,) = cache.glob("models-*.pickle")
    entry.unlink()
    os.mkfifo(entry)  # a reader's open() would block for ever waiting for a writer
    assert _answer(capsys) and len(count_fits) == 2


def _counted(calls: list[int], value: Any) -> Callable[[], Any]:
    """A compute function for ``_cache.cached`` that records each call (a refit)."""
    return lambda: calls.append(1) or value


def test_a_flipped_bit_in_an_entry_is_refitted_not_served(tmp_path):
    # A flipped mantissa bit still unpickles, to a different number: only a checksum catches it.
    import struct

    calls: list[int] = []
    value = {"rate": 0.25}
    assert _cache.cached("models", {"p": 1}, _counted(calls, value), directory=tmp_path) == value
    (entry,) = tmp_path.glob("models-*.pickle")
    data = bytearray(entry.read_bytes())
    at = bytes(data).index(struct.pack(">d", 0.25)) + 7
    data[at] ^= 1
    entry.write_bytes(bytes(data))
    assert _cache.cached("models", {"p": 1}, _counted(calls, value), directory=tmp_path) == value
    assert len(calls) == 2
    assert _cache.cached("models", {"p": 1}, _counted(calls, value), directory=tmp_path) == value
    assert len(calls) == 2  # the damaged entry was overwritten by the refit


def test_no_home_directory_answers_uncached(monkeypatch):
    # A container run as an arbitrary uid: no HOME, no passwd entry, no cache override.
    import pwd

    for name in ("HOME", "XDG_CACHE_HOME", "COTUNE_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: (_ for _ in ()).throw(KeyError(uid)))
    monkeypatch.setattr(_cache.sys, "platform", "linux")
    calls: list[int] = []
    assert _cache.cached("models", {"p": 1}, _counted(calls, 7)) == 7 and len(calls) == 1


def test_cache_dir_naming_an_unknown_user_answers_uncached(monkeypatch):
    monkeypatch.setenv("COTUNE_CACHE_DIR", "~no_such_user_for_cotune_tests/cache")
    calls: list[int] = []
    assert _cache.cached("models", {"p": 1}, _counted(calls, 7)) == 7 and len(calls) == 1


@pytest.mark.slow
def test_recommend_without_a_home_directory_exits_0(monkeypatch, count_fits, capsys):
    import pwd

    for name in ("HOME", "XDG_CACHE_HOME", "COTUNE_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: (_ for _ in ()).throw(KeyError(uid)))
    monkeypatch.setattr(_cache.sys, "platform", "linux")
    assert _answer(capsys)["recommendation"] and len(count_fits) == 1


@pytest.mark.skipif(os.name == "nt" or _cache.sys.platform == "darwin", reason="XDG applies on Linux and BSD")
def test_a_relative_xdg_cache_home_is_ignored(monkeypatch, tmp_path):
    monkeypatch.delenv("COTUNE_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    assert _cache.cache_dir() == tmp_path / ".cache" / "cotune"


def _store(folder: Path, key: int, value: Any, *, mtime_s: float) -> str:
    """Cache ``value`` under ``{"p": key}`` in ``folder``, date its entry ``mtime_s`` (explicit
    ages: no dependence on the clock) and return the entry's name."""
    before = set(folder.glob("models-*.pickle"))
    _cache.cached("models", {"p": key}, lambda: value, directory=folder)
    (entry,) = set(folder.glob("models-*.pickle")) - before
    os.utime(entry, (mtime_s, mtime_s))
    return entry.name


def _names(folder: Path) -> set[str]:
    return {p.name for p in folder.glob("models-*.pickle")}


def test_the_cache_keeps_only_the_most_recent_entries_up_to_the_entry_cap(monkeypatch, tmp_path):
    monkeypatch.setenv("COTUNE_CACHE_MAX_ENTRIES", "3")
    foreign = [tmp_path / "notes.txt", tmp_path / "models-mine.pickle", tmp_path / ".keep.tmp"]
    for path in foreign:
        path.write_text("not the cache's")
        os.utime(path, (1_000, 1_000))  # older than anything: would go first if pruning touched it
    names = [_store(tmp_path, i, i, mtime_s=10_000 + i) for i in range(5)]
    assert _names(tmp_path) == set(names[2:]) | {"models-mine.pickle"}
    assert all(path.exists() for path in foreign)


def test_a_hit_makes_an_entry_the_most_recently_used(monkeypatch, tmp_path):
    monkeypatch.setenv("COTUNE_CACHE_MAX_ENTRIES", "3")
    names = [_store(tmp_path, i, i, mtime_s=10_000 + i) for i in range(3)]
    calls: list[int] = []
    assert _cache.cached("models", {"p": 0}, _counted(calls, -1), directory=tmp_path) == 0 and not calls
    _cache.cached("models", {"p": 3}, lambda: 3, directory=tmp_path)
    assert names[0] in _names(tmp_path) and names[1] not in _names(tmp_path)  # 1 was the least recently used


def test_the_cache_keeps_its_size_under_the_mib_cap(monkeypatch, tmp_path):
    monkeypatch.setenv("COTUNE_CACHE_MAX_MIB", "1")
    names = [_store(tmp_path, i, bytes(400 * 1024), mtime_s=10_000 + i) for i in range(4)]
    assert _names(tmp_path) == set(names[2:])
    assert sum(p.stat().st_size for p in tmp_path.iterdir()) <= 1024 * 1024


def test_a_temporary_file_left_by_a_killed_writer_is_deleted_on_the_next_write(tmp_path):
    orphan = tmp_path / ".models-k1ll3d_x.tmp"
    orphan.write_bytes(b"half a pickle")
    os.utime(orphan, (1_000, 1_000))  # long ago: its writer is gone
    in_flight = tmp_path / ".models-writing.tmp"
    in_flight.write_bytes(b"another process is writing this now")
    _cache.cached("models", {"p": 1}, lambda: 1, directory=tmp_path)
    assert not orphan.exists() and in_flight.exists()


def test_a_value_over_the_mib_cap_is_not_stored_and_the_entries_that_fit_survive(monkeypatch, tmp_path):
    names = [_store(tmp_path, i, bytes(1000), mtime_s=10_000 + i) for i in range(5)]
    monkeypatch.setenv("COTUNE_CACHE_MAX_MIB", "1")
    calls: list[int] = []
    big = bytes(2 * 1024 * 1024)
    assert _cache.cached("models", {"p": "big"}, _counted(calls, big), directory=tmp_path) == big
    assert _names(tmp_path) == set(names)
    assert not list(tmp_path.glob(".models-*.tmp"))


def test_pruning_keeps_older_entries_that_fit_behind_one_over_the_byte_cap(tmp_path):
    names = [_store(tmp_path, i, bytes(1000), mtime_s=10_000 + i) for i in range(3)]
    huge = _store(tmp_path, 99, bytes(300 * 1024), mtime_s=20_000)  # the most recently used
    _cache.prune(folder=tmp_path, max_entries=10, max_bytes=100 * 1024)
    assert _names(tmp_path) == set(names) and huge not in _names(tmp_path)


def test_pruning_leaves_look_alike_files_of_other_kinds_and_programs_alone(tmp_path):
    foreign = [tmp_path / "dataset-0123456789abcdef0123456789abcdef.pickle",  # a user's md5-named pickle
               tmp_path / ".report-draft.tmp",  # another program's temporary file
               tmp_path / ".models-draft-of-a-long-name.tmp"]  # not mkstemp's 8-character shape
    for path in foreign:
        path.write_text("not the cache's")
        os.utime(path, (1_000, 1_000))  # old: deleted first if pruning counted it as the cache's
    _cache.prune(folder=tmp_path, max_entries=0, max_bytes=0)
    assert all(path.exists() for path in foreign)


def test_a_kind_pruning_does_not_know_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown cache kind"):
        _cache.cached("dataset", {"p": 1}, lambda: 1, directory=tmp_path)
