"""Rows longer than their table's header: a trailing separator is no cell, a filled cell past
the header is refused with its line — never read shifted a column, never dropped unsaid."""

from __future__ import annotations

import pytest

from cotune.cli import main
from cotune.errors import InputError
from cotune.logs import import_log, import_table

EVALS = dict(record="eval", name="r", dataset_size=50000, metric="top1")


def _write(tmp_path, text: str, name: str = "t.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("sep", [",", ";", "\t"])
def test_a_trailing_separator_on_every_row_of_a_table_is_no_cell(tmp_path, sep):
    # pandas took the first column as the index: batch 256, epoch 1, metric 0.5 was written
    # as batch 1, epoch 0.5 and no metric.
    rows = ["global_batch,epoch,metric", "256,1,0.50,", "256,2,0.61,", "256,3,0.70,"]
    text = "\n".join(r.replace(",", sep) for r in rows) + "\n"
    profile = import_table(_write(tmp_path, text), out=tmp_path / "p.jsonl", **EVALS)
    assert sorted((e.global_batch, e.epoch, e.metric) for e in profile.evals) == [(256, 1, 0.5), (256, 2, 0.61),
                                                                                   (256, 3, 0.7)]


@pytest.mark.parametrize("text, line", [
    ("global_batch,epoch,metric\n256,1,0.50\n256,2,0.61,9\n256,3,0.70\n", 3),   # one row longer
    ("global_batch,epoch,metric\n256,1,0.50,7\n256,2,0.61,\n", 2),              # every row, one filled
])
def test_a_filled_cell_past_a_tables_header_is_refused_with_its_line(tmp_path, text, line):
    out = tmp_path / "p.jsonl"
    with pytest.raises(InputError) as err:
        import_table(_write(tmp_path, text), out=out, **EVALS)
    assert f"line {line} has 4 cells, the header names 3: give every row the header's columns" in str(err.value)
    assert not out.exists()


def test_a_trailing_separator_in_a_csv_log_is_no_cell(tmp_path):
    path = _write(tmp_path, "epoch,val_acc\n1,0.50,\n2,0.61,\n3,0.70,\n")
    profile = import_log("csv", path, out=tmp_path / "p.jsonl", global_batch=16, dataset_size=96)
    assert [(e.epoch, e.metric) for e in profile.evals] == [(1.0, 0.5), (2.0, 0.61), (3.0, 0.7)]


def test_a_csv_log_whose_columns_changed_mid_run_is_refused_with_the_line(tmp_path, capsys):
    # A logger that added a column: the new cell sat under 'val_acc', and 0.001 was written
    # as the accuracy at epochs 3 and 4.
    path = _write(tmp_path, "epoch,val_acc\n1,0.50\n2,0.61\n3,0.001,0.70\n4,0.001,0.75\n")
    out = tmp_path / "p.jsonl"
    rc = main(["import", "csv", str(path), "--out", str(out), "--global-batch", "16", "--dataset-size", "96"])
    err = capsys.readouterr().err
    assert rc == 2 and "line 4 has 3 cells, the header names 2: give every row the header's columns" in err, err
    assert err.count("\n") == 1 and not out.exists()


def test_cells_past_the_header_count_against_nothing_they_are_refused_at_the_first(tmp_path):
    # 5,000 filled cells a row past a 2-column header were kept beside the cap (384 MB for 30 MB).
    row = "1,0.5," + ",".join(["0.1"] * 5000)
    with pytest.raises(InputError, match="line 2 has 5,002 cells, the header names 2"):
        import_log("csv", _write(tmp_path, "epoch,val_acc\n" + "\n".join([row] * 50) + "\n"),
                   out=tmp_path / "p.jsonl", global_batch=16, dataset_size=96)


def test_a_semicolon_log_with_decimal_commas_groups_thousands_with_dots(tmp_path):
    # Its step 1.000 was read as 1.0: epochs a thousand times too small, unsaid.
    path = _write(tmp_path, "step;val_acc\n1.000;0,5\n2.000;0,6\n12.000;0,7\n")
    profile = import_log("csv", path, out=tmp_path / "p.jsonl", global_batch=32, dataset_size=32000)
    assert [(e.epoch, e.metric) for e in profile.evals] == [(1.0, 0.5), (2.0, 0.6), (12.0, 0.7)]


def test_a_semicolon_log_with_dot_decimals_keeps_them(tmp_path):
    # No decimal comma anywhere: the file's dots are decimals ('0.500' never a thousands group).
    path = _write(tmp_path, "epoch;val_acc\n1.500;0.500\n3.000;0.600\n")
    profile = import_log("csv", path, out=tmp_path / "p.jsonl", global_batch=32, dataset_size=32000)
    assert [(e.epoch, e.metric) for e in profile.evals] == [(1.5, 0.5), (3.0, 0.6)]


def test_a_semicolon_table_with_decimal_commas_groups_thousands_with_dots(tmp_path):
    path = _write(tmp_path, "global_batch;epoch;metric\n1.024;1;0,5\n1.024;2;0,6\n2.048;1;0,45\n")
    profile = import_table(path, out=tmp_path / "p.jsonl", **EVALS)
    assert sorted((e.global_batch, e.epoch, e.metric) for e in profile.evals) == [(1024, 1, 0.5), (1024, 2, 0.6),
                                                                                   (2048, 1, 0.45)]


def test_a_step_column_of_thousands_separated_cells_is_named_not_read_as_no_metric(tmp_path, capsys):
    # "no validation metric recognised (series: none)": every row was skipped for its step.
    path = _write(tmp_path, 'step,val_acc\n"1,000",0.5\n"2,000",0.6\n')
    rc = main(["import", "csv", str(path), "--out", str(tmp_path / "p.jsonl"), "--global-batch", "32",
               "--dataset-size", "32000"])
    err = capsys.readouterr().err
    assert rc == 2 and "no row has a number in column 'step' (cells like '1,000'): thousands separators" in err, err


def test_no_step_times_says_which_rate_column_holds_no_numbers(tmp_path):
    path = _write(tmp_path, 'epoch,val_acc,samples_per_second\n1,0.5,"1,234"\n2,0.6,"1,300"\n')
    profile = import_log("csv", path, global_batch=32, dataset_size=32000, gpu="t4", workers=1)
    assert not profile.steps
    assert any("the log has no step times (column 'samples_per_second' holds no numbers (cells like '1,234'): "
               "thousands separators" in n for n in profile.warnings), profile.warnings
