"""Stores that are not what their format says — an MLflow SQLite file without its tables
or with rows that hold no number, a named pipe where a file should be — are a one-line
error (exit 2), never "a bug in cotune" (exit 4) and never a read that blocks for ever."""

from __future__ import annotations

import os
import sqlite3

import pytest

from cotune.cli import main

FLAGS = ["--global-batch", "16", "--dataset-size", "96"]


def _store(path, metric_rows=None):
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE runs (run_uuid TEXT, name TEXT, lifecycle_stage TEXT, start_time INTEGER)")
    db.execute("INSERT INTO runs VALUES ('a1', 'r', 'active', 1)")
    if metric_rows is not None:
        db.execute("CREATE TABLE metrics (key TEXT, value, timestamp, step, is_nan, run_uuid TEXT)")
        db.executemany("INSERT INTO metrics VALUES (?, ?, ?, ?, ?, 'a1')", metric_rows)
    db.commit()
    db.close()
    return path


def _import(capsys, fmt, source, tmp_path):
    out = tmp_path / "p.jsonl"
    rc = main(["import", fmt, str(source), "--out", str(out), *FLAGS])
    err = capsys.readouterr().err
    return rc, err, out


@pytest.mark.parametrize("rows, said", [
    (None, "not an MLflow SQLite store (no such table: metrics)"),
    ([("val_acc", None, 1000, 1, 0)], "metric 'val_acc' has a point that is no number"),
    ([("val_acc", "high", 1000, 1, 0)], "metric 'val_acc' has a point that is no number"),
    ([("val_acc", 0.5, None, 1, 0)], "metric 'val_acc' has a point that is no number"),
])
def test_a_damaged_mlflow_sqlite_store_is_bad_input(capsys, tmp_path, rows, said):
    rc, err, out = _import(capsys, "mlflow", _store(tmp_path / "mlflow.db", rows), tmp_path)
    assert rc == 2 and said in err and err.count("\n") == 1, err
    assert not out.exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
@pytest.mark.parametrize("fmt, make", [
    ("mlflow", lambda d: "sqlite:///" + str(d / "fifo.db")),
    ("tensorboard", lambda d: d / "events.out.tfevents.1.host"),
    ("tensorboard", lambda d: d),
])
def test_a_named_pipe_where_a_store_or_event_file_should_be_is_refused_unread(capsys, tmp_path, fmt, make):
    # Both readers opened it and waited for a writer that never came.
    os.mkfifo(tmp_path / "fifo.db")
    os.mkfifo(tmp_path / "events.out.tfevents.1.host")
    rc, err, out = _import(capsys, fmt, make(tmp_path), tmp_path)
    assert rc == 2 and "not a regular file" in err and err.count("\n") == 1, err
    assert not out.exists()


@pytest.mark.parametrize("fmt, text", [("csv", b"epoch,val_acc,r\xe9sultat\n1,0.5,x\n"),
                                       ("records", b"global_batch,epoch,metric,r\xe9sultat\n256,1,0.5,x\n")])
def test_a_latin1_table_is_told_to_be_saved_as_utf8(capsys, tmp_path, fmt, text):
    path = tmp_path / "t.csv"
    path.write_bytes(text)
    out = tmp_path / "p.jsonl"
    flags = ["--record", "eval", "--metric", "top1", "--dataset-size", "96"] if fmt == "records" else FLAGS
    rc = main(["import", fmt, str(path), "--out", str(out), *flags])
    err = capsys.readouterr().err
    assert rc == 2 and "not UTF-8 text (a byte 0xe9): save it as UTF-8" in err and err.count("\n") == 1, err
