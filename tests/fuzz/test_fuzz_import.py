"""Fuzz ``cotune import``: the door that reads files nobody checked — training logs,
tables of records, AdaptDL traces — with their cells, lines and bytes mutated and its
flags given hostile values.

The contract (fuzz_helpers): exit 0 or 2, one error line, no traceback, bounded time and
memory; and what an import writes, every door reads (the profile it writes parses), while
a refused import writes nothing (a new ``--out`` is not created; an ``--append`` target
keeps its bytes).
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest
from fuzz_helpers import (
    FAST, HEAVY, PY_VALUES, REPO, TEXTS, captured, check_cli_result, memory_bound, mutated_text, one_line, time_bound,
)
from hypothesis import given
from hypothesis import strategies as st

from cotune.cli import main
from cotune.errors import InputError
from cotune.logs import import_adaptdl, import_log, import_table
from cotune.profile import read_profile

PAGE = (REPO / "docs" / "logs.md").read_text()
# The worked command of every format (docs/logs.md), the examples every mutation starts from.
WORKED: dict[str, list[str]] = {}  # FORMAT PATH --flag value ...: each format's first, on a bundled file
for _line in PAGE.splitlines():
    if _line.startswith("$ cotune import "):
        WORKED.setdefault(shlex.split(_line[2:])[2], shlex.split(_line[2:])[2:])
# A wide table (a column per GPU count, ElasticFlow's layout) read with --wide, --set, --gpus-per-host.
WIDE_TABLE = "global_batch_size,1,2,4,8,16\n64,6.84,11.8,18.3,21.3,0\n128,3.66,6.62,11.2,16.5,\n"
WORKED["records-wide"] = ["records", "wide.csv", "--record", "step", "--out", "w.jsonl", "--name", "w",
                          "--dataset-size", "50000", "--metric", "top1", "--wide", "workers=steps_per_s", "--column",
                          "global_batch=global_batch_size", "--set", "gpu=a100", "--gpus-per-host", "8"]
TEXT_FORMATS = ("csv", "keras-csv", "lightning-csv", "hf-trainer", "records", "records-wide", "adaptdl")
ALL_FORMATS = TEXT_FORMATS + ("mlflow", "tensorboard")

def _trace(d: Path) -> Path:
    t = d / "trace"
    t.mkdir()
    (t / "placements.csv").write_text("placement,local_bsz,step_time,sync_time\n1,32,0.10,0.0\n22,32,0.12,0.03\n")
    (t / "scalability.csv").write_text("local_bsz,step_time,sync_time,num_nodes,num_replicas\n32,0.2,0.05,4,16\n")
    (t / "validation-64.csv").write_text("progress,iteration,metric,grad_sqr,grad_var\n10,100,0.5,2.0,8.0\n")
    return t


@pytest.fixture(scope="module")
def originals(tmp_path_factory) -> Path:
    """A copy of examples/logs plus a small AdaptDL trace: what every example copies and mutates."""
    d = tmp_path_factory.mktemp("fuzz-import-originals")
    shutil.copytree(REPO / "examples" / "logs", d / "examples" / "logs", ignore=shutil.ignore_patterns("*.py"))
    _trace(d)
    (d / "wide.csv").write_text(WIDE_TABLE)
    return d


def _argv_and_target(fmt: str) -> tuple[list[str], str]:
    """The worked command (its PATH relative to the copy) and the file its mutation edits."""
    argv = list(WORKED[fmt])
    if fmt == "adaptdl":
        argv[1] = "trace"
        return argv, "trace/placements.csv"
    path = argv[1]
    return argv, path + "/version_0/metrics.csv" if fmt == "lightning-csv" else path


@st.composite
def mutated_json(draw, text: str) -> str:
    """trainer_state.json with one value of its log_history replaced, or its shape broken."""
    from fuzz_helpers import JSON_VALUES

    doc = json.loads(text)
    kind = draw(st.sampled_from(["entry", "entry", "history", "top", "text"]))
    if kind == "entry" and doc.get("log_history"):
        entry = doc["log_history"][draw(st.integers(0, len(doc["log_history"]) - 1))]
        key = draw(st.sampled_from(sorted(entry) + ["eval_accuracy", "step", "epoch", "eval_runtime", "train_runtime"]))
        entry[key] = draw(JSON_VALUES)
    elif kind == "history":
        doc["log_history"] = draw(JSON_VALUES)
    elif kind == "top":
        doc[draw(st.sampled_from(["train_batch_size", "global_step", "epoch", "log_history"]))] = draw(JSON_VALUES)
    else:
        return draw(mutated_text(text))
    try:
        return json.dumps(doc, allow_nan=True)
    except (TypeError, ValueError):
        return text


def _flags(draw, argv: list[str]) -> list[str]:
    """The worked command with up to two of its values hostile, a flag dropped or one added."""
    argv = list(argv)
    values = [i for i, a in enumerate(argv) if i > 1 and not a.startswith("--") and argv[i - 1].startswith("--")]
    hostile = draw(st.lists(st.sampled_from(values), max_size=2, unique=True)) if values else []
    for i in hostile if draw(st.integers(0, 2)) == 0 else []:  # mostly sane flags: the files are the point
        argv[i] = draw(TEXTS)
    if draw(st.integers(0, 5)) == 0:
        extra = draw(st.sampled_from(["--workers", "--local-batch", "--accum-steps", "--hosts", "--seed", "--time-column",
                                      "--time-unit", "--step-column", "--epoch-column", "--run", "--goal", "--name",
                                      "--where", "--column", "--wide", "--set", "--gpus-per-host"]))
        argv += [extra, draw(TEXTS)]
    return argv


def _check(originals: Path, tmp: Path, data, formats: tuple[str, ...]) -> None:
    fmt = data.draw(st.sampled_from(formats))
    work = tmp / "w"
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(originals, work)
    argv, target = _argv_and_target(fmt)
    path = work / target
    if path.is_dir():  # mlflow, tensorboard: one of the run's files (a metric's lines, a meta.yaml, the event file)
        path = data.draw(st.sampled_from(sorted(p for p in path.rglob("*") if p.is_file())))
    if "tfevents" in path.name:  # a binary record file: flip, cut or insert bytes
        raw = bytearray(path.read_bytes())
        at = data.draw(st.integers(0, len(raw) - 1))
        how = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        if how == "flip":
            raw[at] ^= data.draw(st.integers(1, 255))
        elif how == "cut":
            del raw[at:]
        else:
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=64))
        path.write_bytes(bytes(raw))
    else:
        text = path.read_text(encoding="utf-8")
        new = data.draw(mutated_json(text) if fmt == "hf-trainer" else mutated_text(text))
        path.write_bytes(new.encode("utf-8", "surrogateescape"))
    argv = _flags(data.draw, argv)
    out = work / "out.jsonl"
    argv = ["import"] + [str(work / a) if i == 1 else a for i, a in enumerate(argv)]
    argv[argv.index("--out") + 1] = str(out)
    append = data.draw(st.integers(0, 4)) == 0
    if append:
        # a profile to add to: the sweep's step records, of a workload with the logs' dataset size
        with captured():
            assert main(["import", "records", str(originals / "examples/logs/sweep.csv"), "--record", "step", "--out",
                         str(out), "--name", "w", "--dataset-size", "96", "--metric", "val_acc"]) == 0
        argv.append("--append")
    before = out.read_bytes() if out.exists() else None
    with time_bound(argv), memory_bound(), captured() as (o, e):
        code = main(argv)
    check_cli_result(argv, code, o.getvalue(), e.getvalue())
    if code == 0:
        read_profile(out)  # what an import writes, every door reads
    else:
        assert (out.read_bytes() if out.exists() else None) == before, f"a refused import changed {out}: {argv}"


@FAST
@given(data=st.data())
def test_a_mutated_log_imports_or_is_one_error_line_and_writes_nothing(originals, tmp_path_factory, data):
    _check(originals, tmp_path_factory.mktemp("fuzz-import", numbered=True), data, TEXT_FORMATS)


@pytest.mark.slow
@HEAVY
@given(data=st.data())
def test_many_mutated_logs_of_every_format_import_or_are_one_error_line(originals, tmp_path_factory, data):
    _check(originals, tmp_path_factory.mktemp("fuzz-import", numbered=True), data, ALL_FORMATS)


# The Python door's keywords, each importer with a sane call whose one or two keywords turn hostile.
_CALLS = {
    "log": (lambda path, **kw: import_log("csv", path, **kw), "examples/logs/run.csv",
            dict(global_batch=16, dataset_size=96, gpu="cpu", workers=1, metric=None, goal=None, name=None, seed=None,
                 hosts=1, local_batch=None, accum_steps=1, time_column=None, time_unit=None, run=None)),
    "table": (import_table, "examples/logs/sweep.csv", dict(record="step", name="w", dataset_size=50000, metric="top1",
                                                            goal=None, where=None, columns=None)),
    "trace": (import_adaptdl, "trace", dict(gpu="t4", dataset_size=6400, metric="top1", goal=None, name=None)),
    "wide": (import_table, "wide.csv", dict(record="step", name="w", dataset_size=50000, metric="top1",
                                            wide=("workers", "steps_per_s"), columns={"global_batch": "global_batch_size"},
                                            constants={"gpu": "a100"}, gpus_per_host=8, where=None)),
}


def _check_keywords(originals: Path, tmp: Path, data) -> None:
    call, path, kw = _CALLS[data.draw(st.sampled_from(sorted(_CALLS)))]
    kw = dict(kw)
    for k in data.draw(st.lists(st.sampled_from(sorted(kw)), min_size=1, max_size=2, unique=True)):
        kw[k] = data.draw(PY_VALUES)
    out = tmp / "out.jsonl"
    with time_bound(kw), memory_bound():
        try:
            call(originals / path, out=out, **kw)
        except InputError as exc:  # never a TypeError, an AttributeError or an OverflowError from inside
            assert one_line(str(exc)) and len(str(exc)) < 2000, str(exc)[:2000]
            assert not out.exists()
            return
    read_profile(out)


@FAST
@given(data=st.data())
def test_the_importers_hostile_keywords_raise_only_input_error(originals, tmp_path_factory, data):
    # import_log(accum_steps=None), import_table(record=False), import_adaptdl(dataset_size=10**400)
    # raised TypeError, AttributeError and OverflowError.
    _check_keywords(originals, tmp_path_factory.mktemp("fuzz-import-kw", numbered=True), data)


@pytest.mark.slow
@HEAVY
@given(data=st.data())
def test_many_hostile_keywords_of_the_importers_raise_only_input_error(originals, tmp_path_factory, data):
    _check_keywords(originals, tmp_path_factory.mktemp("fuzz-import-kw", numbered=True), data)
