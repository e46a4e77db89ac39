"""``cotune import records --wide FIELD=CELLS --set FIELD=VALUE --gpus-per-host N``: a table
with a column per value of a field (ElasticFlow's A100 throughputs), a field its caption
states, GPU counts laid on servers; and step rows that give a throughput, not a step time."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pandas as pd
import pytest

from _helpers import shared_data

from cotune.cli import main
from cotune.errors import InputError
from cotune.logs import import_table
from cotune.profile import Profile, read_profile

WORKLOAD = dict(record="step", name="w", dataset_size=50000, metric="top1")
A100 = dict(wide=("workers", "steps_per_s"), columns={"global_batch": "global_batch_size"}, constants={"gpu": "a100"},
            gpus_per_host=8)



def _elasticflow(model: str) -> Path:
    return shared_data("elasticflow-asplos23", "throughputs_A100", f"{model}.csv")


def _cells(path: Path) -> tuple[set[tuple], int]:
    """The oracle, read with the csv module: (workers, hosts, local batch, step time) of each
    filled cell (ElasticFlow: iterations per second, 8 GPUs a server), and the unfilled count."""
    out, gaps = set(), 0
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            gb = int(row.pop("global_batch_size"))
            for gpus, rate in row.items():
                if not rate or float(rate) == 0:
                    gaps += 1
                    continue
                w = int(gpus)
                out.add((w, math.ceil(w / 8), gb // w, 1.0 / float(rate)))
    return out, gaps


def _steps(profile) -> set[tuple]:
    return {(s.workers, s.hosts, s.local_batch, s.step_time_s) for s in profile.steps}


@pytest.mark.parametrize("model", ["resnet50", "resnet50_cifar10", "bert", "gpt2", "vgg16"])
def test_a_wide_table_is_one_step_record_per_filled_cell(tmp_path, model):
    path = _elasticflow(model)
    want, gaps = _cells(path)
    profile = import_table(path, out=tmp_path / "p.jsonl", **WORKLOAD, **A100)
    got = _steps(profile)
    assert {k[:3] for k in got} == {k[:3] for k in want} and len(got) == len(want)
    by_config = {k[:3]: k[3] for k in want}
    assert all(math.isclose(t, by_config[k[:3]], rel_tol=1e-12) for k in got for t in (k[3],))
    assert {s.gpu for s in profile.steps} == {"a100"}
    assert _steps(read_profile(tmp_path / "p.jsonl")) == got
    assert bool(profile.warnings) == bool(gaps)
    if gaps:
        assert f"left out {gaps} empty or zero cells" in profile.warnings[0]


def test_the_cli_reads_the_wide_table_and_counts_what_it_left_out(tmp_path, capsys):
    out = tmp_path / "p.jsonl"
    rc = main(["import", "records", str(_elasticflow("resnet50_cifar10")), "--record", "step", "--out", str(out),
               "--name", "c", "--dataset-size", "50000", "--metric", "top1", "--wide", "workers=steps_per_s",
               "--column", "global_batch=global_batch_size", "--set", "gpu=a100", "--gpus-per-host", "8"])
    said = capsys.readouterr().out
    assert rc == 0, said
    # 3 batches x 7 GPU counts; 16, 32 and 64 GPUs hold 0 (never run): 12 records, 9 left out.
    assert "12 steps" in said and "left out 9 empty or zero cells of the 7 wide columns" in said
    assert len(read_profile(out).steps) == 12


def _table(tmp_path, text: str) -> Path:
    path = tmp_path / "t.csv"
    path.write_text(text)
    return path


WIDE = "global_batch_size,1,2,4\n64,6.8,11.8,18.3\n128,3.6,6.6,11.2\n"


@pytest.mark.parametrize("text, kw, said", [
    ("gpus,step_time_s\n1,0.5\n", dict(wide=("workers", "step_time_s")),
     "--wide workers=step_time_s: no column of the table is named by a number (its columns are gpus, step_time_s)"),
    (WIDE, dict(wide=("workerz", "steps_per_s")), "--wide workerz=…: 'workerz' is no field of a profile record (is it 'workers'?)"),
    (WIDE, dict(wide=("workers", "workers")), "the headers and the cells hold the same field"),
    (WIDE, dict(wide="workers=steps_per_s"), "--wide (wide=) names two fields"),
    ("workers,1,2\n64,6.8,11.8\n", dict(wide=("workers", "steps_per_s")), "the table has a column 'workers' of its own"),
    (WIDE.replace("11.8", "-1"), dict(wide=("workers", "steps_per_s")),
     "line 2, column '2': field 'steps_per_s': must be a finite number > 0, got -1.0"),
    (WIDE.replace("6.6", "fast"), dict(wide=("workers", "steps_per_s")),
     "line 3, column '2': field 'steps_per_s': must be a finite number > 0, got 'fast'"),
    (WIDE, dict(wide=("workers", "steps_per_s"), constants={"workers": "2"}), "--set workers=…: the table has a column 'workers'"),
    (WIDE, dict(wide=("workers", "steps_per_s"), constants={"gpu": "a100", "hosts": "two"}),
     "--set hosts=…: 'hosts' holds a number, got 'two'"),
    (WIDE, dict(wide=("workers", "steps_per_s"), constants={"gpz": "a100"}), "--set gpz=…: 'gpz' is no field of a profile record (is it 'gpu'?)"),
    (WIDE, dict(wide=("workers", "steps_per_s"), constants={"gpu": "a100", "hosts": 1}, gpus_per_host=8),
     "--gpus-per-host 8: the table states each row's hosts"),
    (WIDE, dict(wide=("workers", "steps_per_s"), constants={"gpu": "a100"}, gpus_per_host=0),
     "--gpus-per-host (gpus_per_host=): must be a whole number >= 1, got 0"),
    ("global_batch_size,1,2\n64,0,\n", dict(wide=("workers", "steps_per_s")),
     "every cell of the columns 1, 2 is empty or 0: the table holds no measurement"),
])
def test_a_bad_wide_table_or_flag_is_one_line_and_writes_nothing(tmp_path, text, kw, said):
    out = tmp_path / "p.jsonl"
    kw = {"columns": {"global_batch": "global_batch_size"}, "constants": {"gpu": "a100"}, **kw}
    if "workers" in text.split("\n")[0].split(","):
        kw.pop("columns")
    with pytest.raises(InputError) as err:
        import_table(_table(tmp_path, text), out=out, **WORKLOAD, **kw)
    assert said in str(err.value) and "\n" not in str(err.value), str(err.value)
    assert not out.exists()


@pytest.mark.parametrize("headers, word", [(("1 GPU", "2 GPUs", "4 GPUs"), "gpu"), (("1gpu", "2gpus", "4gpus"), "gpu"),
                                           (("gpus=1", "gpus=2", "gpus=4"), "gpu"),
                                           (("GPUs: 1", "GPUs: 2", "GPUs: 4"), "gpu"), (("n_1", "n_2", "n_4"), "n")])
def test_headers_that_name_their_value_with_a_word_read_as_the_plain_numbers(tmp_path, headers, word):
    plain = import_table(_table(tmp_path, WIDE), **WORKLOAD, **A100)
    worded = WIDE.replace("1,2,4\n", ",".join(headers) + "\n", 1)
    got = import_table(_table(tmp_path, worded), **WORKLOAD, **A100)
    assert _steps(got) == _steps(plain) and len(got.steps) == 6
    assert got.warnings == (f"--wide workers=steps_per_s: read the headers that name a {word!r} count by their number "
                            f"({headers[0]!r} as 1, {headers[1]!r} as 2, {headers[2]!r} as 4)",)


def test_a_word_glued_before_a_number_is_a_name_not_a_value(tmp_path):
    # 'top1', 'fp16', 'resnet50' are the row's own columns; only '1 GPU' and '2 GPUs' hold values.
    text = "global_batch_size,top1,fp16,resnet50,1 GPU,2 GPUs\n64,0.9,1,1,6.8,11.8\n"
    got = import_table(_table(tmp_path, text), **WORKLOAD, **A100)
    assert sorted((s.workers, s.local_batch) for s in got.steps) == [(1, 64), (2, 32)]


def test_plain_number_headers_win_over_worded_ones(tmp_path):
    text = "global_batch_size,1,2,run 7\n64,6.8,11.8,x\n"
    got = import_table(_table(tmp_path, text), **WORKLOAD, **A100)
    assert sorted(s.workers for s in got.steps) == [1, 2] and got.warnings == ()


def test_headers_worded_with_different_words_are_refused_with_the_words(tmp_path):
    out = tmp_path / "p.jsonl"
    text = "global_batch_size,1 GPU,2 GPUs,bs 32\n64,6.8,11.8,3\n"
    with pytest.raises(InputError) as err:
        import_table(_table(tmp_path, text), out=out, **WORKLOAD, **A100)
    said = str(err.value)
    assert ("the column headers name values with 2 different words (bs: 'bs 32'; gpu: '1 GPU', '2 GPUs')" in said
            and "\n" not in said), said
    assert not out.exists()


def test_zeros_are_kept_where_the_cells_are_no_time_or_rate(tmp_path):
    # A learning curve as a wide table: a row per global batch, a column per epoch; an accuracy
    # of 0 is a measurement, an empty cell is not.
    path = _table(tmp_path, "global_batch,1,2,3\n256,0.0,0.41,0.62\n1024,0.0,0.22,\n")
    profile = import_table(path, out=tmp_path / "p.jsonl", record="eval", name="w", dataset_size=50000, metric="top1",
                           wide=("epoch", "metric"))
    got = sorted((e.global_batch, e.epoch, e.metric) for e in profile.evals)
    assert got == [(256, 1, 0.0), (256, 2, 0.41), (256, 3, 0.62), (1024, 1, 0.0), (1024, 2, 0.22)]
    assert profile.warnings == ("left out 1 empty cell of the 3 wide columns (no measurement)",)


def test_a_one_run_flag_on_a_table_names_the_set_flag(tmp_path, capsys):
    rc = main(["import", "records", str(_table(tmp_path, WIDE)), "--record", "step", "--out", str(tmp_path / "p"),
               "--name", "w", "--dataset-size", "50000", "--metric", "top1", "--gpu", "a100"])
    err = capsys.readouterr().err
    assert rc == 2 and "--set FIELD=VALUE (--set gpu=a100" in err, err


def test_the_table_flags_on_a_log_are_refused(tmp_path, capsys):
    log = Path(__file__).resolve().parents[2] / "examples" / "logs" / "run.csv"
    rc = main(["import", "csv", str(log), "--out", str(tmp_path / "p"), "--global-batch", "16", "--dataset-size", "96",
               "--wide", "workers=steps_per_s", "--set", "gpu=a100", "--gpus-per-host", "8"])
    err = capsys.readouterr().err
    assert rc == 2 and "--wide and --set and --gpus-per-host apply to format records only" in err, err


# --- a step row's throughput in place of its step time (Profile.from_frame) -----------------

HEAD = dict(name="w", dataset_size=50000, metric="top1")


def _frame(**cols) -> pd.DataFrame:
    return pd.DataFrame({"gpu": ["t4", "t4"], "workers": [1, 4], "local_batch": [32, 16], **cols})


def test_steps_per_second_is_the_inverse_of_the_step_time():
    p = Profile.from_frame(_frame(steps_per_s=[5.0, 8.0]), workload=HEAD, record="step")
    assert [s.step_time_s for s in p.steps] == [0.2, 0.125]


def test_samples_per_second_divides_the_global_batch():
    p = Profile.from_frame(_frame(samples_per_s=[160.0, 512.0], accum_steps=[1, 2]), workload=HEAD, record="step")
    assert [s.step_time_s for s in p.steps] == [32 / 160, 4 * 16 * 2 / 512]


def test_a_rate_beside_a_step_time_must_agree_with_it():
    # Gavel's tables derive samples_per_s from the step time: kept when it agrees...
    p = Profile.from_frame(_frame(step_time_s=[0.2, 0.5], samples_per_s=[160.0, 128.0]), workload=HEAD, record="step")
    assert [s.step_time_s for s in p.steps] == [0.2, 0.5]
    # ... and refused, naming both, when it does not.
    with pytest.raises(InputError, match=r"row 1: samples_per_s 100.0 means a step time of 0.64 s, not the row's "
                                         r"step_time_s 0.5 s"):
        Profile.from_frame(_frame(step_time_s=[0.2, 0.5], samples_per_s=[160.0, 100.0]), workload=HEAD, record="step")


@pytest.mark.parametrize("rate, said", [
    (0.0, "must be a finite number > 0, got 0.0 (a rate of 0 is no measurement: a configuration that never ran?"),
    (float("inf"), "must be a finite number > 0, got inf"),
    ("fast", "must be a finite number > 0, got 'fast'"),
    (True, "must be a finite number > 0, got true"),
])
def test_a_rate_that_is_no_positive_number_is_refused(rate, said):
    with pytest.raises(InputError, match="row 1: field 'steps_per_s': " + said.replace("(", r"\(").replace("?", r"\?")):
        Profile.from_frame(_frame(steps_per_s=pd.Series([5.0, rate], dtype=object)), workload=HEAD, record="step")


def test_a_bad_batch_beside_samples_per_second_is_named_by_the_record_check():
    with pytest.raises(InputError, match="row 1: field 'workers'"):
        Profile.from_frame(_frame(samples_per_s=[160.0, 512.0], workers=[1, "four"]), workload=HEAD, record="step")


def test_a_throughput_column_named_otherwise_is_hinted_at():
    with pytest.raises(InputError, match=r"'iterations_per_sec' \(is it 'steps_per_s'\?\)"):
        Profile.from_frame(_frame(iterations_per_sec=[5.0, 8.0]), workload=HEAD, record="step")


def test_a_text_cell_in_a_number_column_is_named_at_its_own_line(tmp_path):
    # One cell that is no number made pandas read the whole column as text, and the record
    # check refused the column's first cell — a good one, on line 2.
    sweep = (Path(__file__).resolve().parents[2] / "examples" / "logs" / "sweep.csv").read_text().splitlines()
    head, *rows = sweep
    rows[1] = rows[1].rsplit(",", 1)[0] + ",fast"
    path = _table(tmp_path, "\n".join([head, *rows]) + "\n")
    with pytest.raises(InputError, match=r"line 3: field 'sync_time_s': must be a finite number >= 0, got 'fast'"):
        import_table(path, out=tmp_path / "p.jsonl", **WORKLOAD)


@pytest.mark.parametrize("text, kw, said", [
    # pandas read the second 'workers' as 'workers.1', a column of no field: silently dropped.
    ("gpu,workers,workers,local_batch,step_time_s\nt4,1,2,32,0.1\n", {}, "column 'workers' appears 2 times in the header: give each column its own name"),
    # ... and a wide table's second '1' as 1.1 workers.
    ("global_batch,1,1,2\n64,5,6,7\n", dict(wide=("workers", "steps_per_s"), constants={"gpu": "a100"}),
     "column '1' appears 2 times in the header"),
])
def test_a_header_that_names_a_column_twice_is_refused(tmp_path, text, kw, said):
    out = tmp_path / "p.jsonl"
    with pytest.raises(InputError, match=said):
        import_table(_table(tmp_path, text), out=out, **WORKLOAD, **kw)
    assert not out.exists()


@pytest.mark.parametrize("sep, decimal", [("\t", "."), (";", ","), (";", "."), ("|", ".")])
def test_a_table_separated_otherwise_reads_as_its_comma_separated_twin(tmp_path, sep, decimal):
    # A spreadsheet's export in a locale whose decimal mark is a comma uses semicolons: read
    # as one column, its every row was 'missing field workers'.
    sweep = Path(__file__).resolve().parents[2] / "examples" / "logs" / "sweep.csv"
    text = sweep.read_text().replace(",", sep)
    if decimal == ",":
        text = "\n".join(line if i == 0 else line.replace(".", ",") for i, line in enumerate(text.splitlines())) + "\n"
    want = _steps(import_table(sweep, out=tmp_path / "a.jsonl", **WORKLOAD))
    got = _steps(import_table(_table(tmp_path, text), out=tmp_path / "b.jsonl", **WORKLOAD))
    assert got == want and len(got) == 44


def test_a_header_of_more_columns_than_a_table_has_is_refused_before_it_is_read(tmp_path, monkeypatch):
    # 200,000 columns of one row (1.7 MB) took 7.5 minutes and 0.9 GB: the readers' time
    # grows with the columns, not the bytes. The cap is lowered here to keep the file small.
    import cotune.logs._readers as readers

    monkeypatch.setattr(readers, "MAX_COLUMNS", 50)
    text = ",".join(str(i) for i in range(1, 61)) + "\n" + ",".join("1" for _ in range(60)) + "\n"
    with pytest.raises(InputError, match="the header names 60 columns, more than a table's 50"):
        import_table(_table(tmp_path, text), out=tmp_path / "p.jsonl", **WORKLOAD, wide=("workers", "steps_per_s"))
    with pytest.raises(InputError, match="the header names 61 columns, more than a table's 50"):
        from cotune.logs import import_log

        import_log("csv", _table(tmp_path, "epoch," + text), global_batch=8, dataset_size=80)
    long = _table(tmp_path, "a" * (1 << 20) + ",b\n1,2\n")
    with pytest.raises(InputError, match="the header line is longer than 1 MiB"):
        import_table(long, out=tmp_path / "p.jsonl", **WORKLOAD)
    assert not (tmp_path / "p.jsonl").exists()


def test_a_table_of_a_header_alone_is_refused_as_the_logs_are(tmp_path):
    # It wrote a profile of the workload record alone: an import that imported nothing.
    out = tmp_path / "p.jsonl"
    with pytest.raises(InputError, match="no data rows, only a header: give a table with a row per record"):
        import_table(_table(tmp_path, "gpu,workers,local_batch,step_time_s\n"), out=out, **WORKLOAD)
    assert not out.exists()


def test_milliseconds_are_read_as_the_fields_in_seconds():
    p = Profile.from_frame(_frame(step_time_ms=[250.0, 125.0], sync_time_ms=[0.0, 25.0]), workload=HEAD, record="step")
    assert [(s.step_time_s, s.sync_time_s) for s in p.steps] == [(0.25, 0.0), (0.125, 0.025)]
    # the same time in both units must agree; a negative or text millisecond cell is refused by name
    with pytest.raises(InputError, match=r"row 1: step_time_ms 125.0 is 0.125 s, not the row's step_time_s 0.2"):
        Profile.from_frame(_frame(step_time_ms=[250.0, 125.0], step_time_s=[0.25, 0.2]), workload=HEAD, record="step")
    with pytest.raises(InputError, match=r"row 0: field 'sync_time_ms': must be a finite number >= 0 \(milliseconds\)"):
        Profile.from_frame(_frame(step_time_s=[0.25, 0.2], sync_time_ms=[-1.0, 2.0]), workload=HEAD, record="step")
    # and a millisecond column named otherwise is hinted at as the millisecond field
    with pytest.raises(InputError, match=r"'iter_time_ms' \(is it 'step_time_ms'\?\)"):
        Profile.from_frame(_frame(iter_time_ms=[250.0, 125.0]), workload=HEAD, record="step")
