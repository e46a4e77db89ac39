"""The fit cache between CLI calls (cotune/_cache.py): fast when warm, never stale, never fatal."""

from __future__ import annotations

import json
import os

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
