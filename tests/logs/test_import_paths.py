"""The importers' PATH and --out follow the one rule for a path a user gives (path_text_problem):
an empty PATH was read as the working directory, a non-path ``out`` was a TypeError."""

from __future__ import annotations

from pathlib import Path

import pytest

import cotune
from cotune.cli import main
from cotune.errors import InputError
from cotune.logs import import_adaptdl, import_table

ROOT = Path(__file__).resolve().parents[2]
RUN_CSV = str(ROOT / "examples/logs/run.csv")

_IMPORTERS = {
    "log": lambda path, out: cotune.import_log("csv", path, out=out, global_batch=16, dataset_size=96),
    "table": lambda path, out: import_table(path, out=out, record="step", name="c", dataset_size=50_000, metric="top1"),
    "adaptdl": lambda path, out: import_adaptdl(path, out=out, name="c", dataset_size=50_000, metric="top1", goal="max"),
}


@pytest.mark.parametrize("importer", sorted(_IMPORTERS))
@pytest.mark.parametrize(("path", "expect"), [("", "PATH is empty (got '')"), (None, "PATH must be a path (a str or a pathlib.Path), got null"),
                                              (b"run.csv", "PATH must be a path (a str or a pathlib.Path), got b'run.csv'")],
                         ids=["empty", "none", "bytes"])
def test_a_log_path_no_file_can_have_is_an_input_error_before_anything_is_read(tmp_path, importer, path, expect):
    out = tmp_path / "p.jsonl"
    with pytest.raises(InputError, match="^" + expect.replace("(", r"\(").replace(")", r"\)")):
        _IMPORTERS[importer](path, out)
    assert not out.exists()


@pytest.mark.parametrize("out", [True, 5, ["p.jsonl"], ""], ids=["bool", "int", "list", "empty"])
def test_an_out_that_is_no_path_is_an_input_error_naming_out(out):
    with pytest.raises(InputError, match=r"^--out (must be a path|is empty)"):
        cotune.import_log("csv", RUN_CSV, out=out, global_batch=16, dataset_size=96)


def test_an_empty_path_on_the_command_line_is_one_line_naming_path(tmp_path, capsys):
    # Before: "cotune: . is a directory: give the CSV file itself (format csv)".
    code = main(["import", "csv", "", "--out", str(tmp_path / "p.jsonl"), "--global-batch", "16", "--dataset-size", "96"])
    assert code == 2
    assert capsys.readouterr().err == "cotune: PATH is empty (got ''): give the log file or run directory\n"
