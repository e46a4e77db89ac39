"""``cotune import records --where COLUMN=VALUE --column FIELD=COLUMN``: a published table
read as its authors named it (Gavel's and Shockwave's throughput tables)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from _helpers import shared_data

from cotune import recommend
from cotune.cli import main
from cotune.errors import InputError
from cotune.logs import import_table
from cotune.profile import read_profile

REPO = Path(__file__).resolve().parents[2]
GAVEL_COLUMNS = {"gpu": "gpu_type", "workers": "num_gpus", "local_batch": "per_worker_batch_size",
                 "step_time_s": "sync_iteration_time_s"}
WORKLOAD = dict(record="step", name="cifar10-resnet18", dataset_size=50000, metric="top1")



def _rows(path: Path, **where: str) -> set[tuple]:
    """The table's rows that hold ``where``, read with the csv module (not pandas): the oracle."""
    with open(path, newline="", encoding="utf-8") as fh:
        return {(r["gpu_type"], int(r["num_gpus"]), int(r["per_worker_batch_size"]), float(r["sync_iteration_time_s"]))
                for r in csv.DictReader(fh) if all(r[k] == v for k, v in where.items()) and r["sync_iteration_time_s"]}


def _steps(profile) -> set[tuple]:
    return {(s.gpu, s.workers, s.local_batch, s.step_time_s) for s in profile.steps}


@pytest.mark.parametrize("table, model", [
    (("gavel-osdi20", "gavel_simulation_throughputs_flat.csv"), "ResNet-18"),
    (("gavel-osdi20", "gavel_physical_cluster_throughputs_flat.csv"), "ResNet-50"),
    (("shockwave-nsdi23", "tacc_throughputs_flat.csv"), "ResNet-50"),
    (("shockwave-nsdi23", "wisr_throughputs_flat.csv"), "Transformer"),
])
def test_a_pooled_table_gives_the_rows_of_one_workload_read_from_its_own_columns(tmp_path, table, model):
    path = shared_data(*table)
    want = _rows(path, model=model, consolidated="1")
    assert want, "the table has such rows"
    # A configuration that never ran (out of memory: ResNet-50 at 128 on a K80) has an empty
    # step time and a throughput of 0: "!" keeps the rows whose cell is not the text, "".
    where = {"model": model, "consolidated": "1", "sync_iteration_time_s!": ""}
    profile = import_table(path, out=tmp_path / "p.jsonl", where=where, columns=GAVEL_COLUMNS, **WORKLOAD)
    assert _steps(profile) == want
    assert all(s.hosts == 1 for s in profile.steps)  # consolidated: one server, the field's default
    assert _steps(read_profile(tmp_path / "p.jsonl")) == want


def test_the_worked_gavel_import_plans_across_four_gpu_types_on_their_own_servers(tmp_path, capsys):
    mine = tmp_path / "het.jsonl"
    shutil.copy(REPO / "cotune" / "data" / "profiles" / "cifar10-resnet18.jsonl", mine)  # its curves and T4 probes
    argv = ["import", "records", str(shared_data("gavel-osdi20", "gavel_simulation_throughputs_flat.csv")), "--out",
            str(mine), "--append", "--record", "step", "--where", "model=ResNet-18", "--where", "consolidated=1"]
    for field, column in GAVEL_COLUMNS.items():
        argv += ["--column", f"{field}={column}"]
    assert main(argv) == 0
    assert "appended to" in capsys.readouterr().out
    prices = {"t4": 0.526, "k80": 0.9, "p100": 1.46, "v100": 3.06}
    ask = dict(target=0.94, deadline_s=3600, prices=prices, gpus=("v100",), workers=(8,), top=0)
    split = recommend(str(mine), **ask)
    assert split.chosen.hosts == 2  # 8 on two default-size hosts, and cotune says why
    assert any("v100: the profile measured 8 workers on 1 host" in n and "give v100=8" in n for n in split.notes)
    packed = recommend(str(mine), **{**ask, "gpus_per_host": {"v100": 8, "*": 4}})
    assert packed.chosen.hosts == 1 and packed.plan.gpus_per_host == 8
    assert not any("measured 8 workers" in n for n in packed.notes)
    everything = recommend(str(mine), target=0.94, deadline_s=3600, prices=prices, gpus_per_host={"*": 8, "t4": 4})
    assert everything.feasible and set(everything.estimates.candidates.gpus) == {"t4", "k80", "p100", "v100"}


def _cli(tmp_path, capsys, *extra: str, table: str = "gavel") -> tuple[int, str, Path]:
    out = tmp_path / "p.jsonl"
    path = (shared_data("gavel-osdi20", "gavel_simulation_throughputs_flat.csv") if table == "gavel"
            else REPO / "examples" / "logs" / "sweep.csv")
    rc = main(["import", "records", str(path), "--out", str(out), "--record", "step", "--name", "w",
               "--dataset-size", "50000", "--metric", "top1", *extra])
    return rc, capsys.readouterr().err, out


MAPPED = [a for f, c in GAVEL_COLUMNS.items() for a in ("--column", f"{f}={c}")]


@pytest.mark.parametrize("extra, said", [
    (["--where", "modle=ResNet-18", *MAPPED], "--where modle=ResNet-18: the table has no column 'modle' (is it 'model'?)"),
    (["--where", "model=ResNet18", *MAPPED], "--where model=ResNet18 keeps no row: column 'model' holds 'A3C', "),
    (["--where", "model=A3C", "--where", "num_gpus=8", *MAPPED], "--where num_gpus=8 keeps no row together with"),
    (["--where", "consolidated=1.0", *MAPPED], "column 'consolidated' holds '1', '0'"),
    (["--column", "workerz=num_gpus"], "--column workerz=…: 'workerz' is no field of a profile record (is it 'workers'?)"),
    (["--column", "workers=num_gpu"], "--column workers=num_gpu: the table has no column 'num_gpu' (is it 'num_gpus'?)"),
    (["--column", "workers=num_gpus", "--column", "workers=gpu_type"], "--column gives 'workers' twice"),
    (["--where", "model=ResNet-18"], "'num_gpus' (is it 'workers'?)"),
    (["--where", "model=ResNet-18"], "read each from its column with --column gpu=gpu_type (repeatable"),
])
def test_a_bad_filter_or_mapping_is_one_line_and_writes_nothing(tmp_path, capsys, extra, said):
    rc, err, out = _cli(tmp_path, capsys, *extra)
    assert rc == 2 and said in err, err
    assert err.count("\n") == 1 and "Traceback" not in err and not out.exists()


def test_an_empty_cell_of_a_mapped_field_names_the_filter_that_leaves_such_rows_out(tmp_path, capsys):
    path = shared_data("shockwave-nsdi23", "tacc_throughputs_flat.csv")
    argv = ["import", "records", str(path), "--out", str(tmp_path / "p.jsonl"), "--record", "step", "--name", "w",
            "--dataset-size", "50000", "--metric", "top1", "--where", "model=ResNet-50", *MAPPED]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert ("line 61: missing field 'step_time_s': its column 'sync_iteration_time_s' is empty there" in err
            and "--where 'sync_iteration_time_s!='" in err and err.count("\n") == 1)
    assert main(argv + ["--where", "sync_iteration_time_s!="]) == 0
    with open(path, newline="", encoding="utf-8") as fh:  # every ResNet-50 row that ran, on one server or spread
        ran = sum(1 for r in csv.DictReader(fh) if r["model"] == "ResNet-50" and r["sync_iteration_time_s"])
    assert len(read_profile(tmp_path / "p.jsonl").steps) == ran > 0


def test_an_empty_throughput_cell_names_the_filter_on_the_column_the_step_time_is_read_from(tmp_path, capsys):
    # The same table read by its throughput (samples_per_s stands for step_time_s): the row that
    # never ran was told to map another column ("'sync_iteration_time_s' (is it 'step_time_s'?)").
    path = shared_data("shockwave-nsdi23", "tacc_throughputs_flat.csv")
    rate = [a for f, c in GAVEL_COLUMNS.items() if f != "step_time_s" for a in ("--column", f"{f}={c}")]
    argv = ["import", "records", str(path), "--out", str(tmp_path / "p.jsonl"), "--record", "step", "--name", "w",
            "--dataset-size", "50000", "--metric", "top1", "--where", "model=ResNet-50", *rate,
            "--column", "samples_per_s=samples_per_s"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert ("missing field 'step_time_s': column 'samples_per_s', which it is read from, is empty there" in err
            and "--where 'samples_per_s!='" in err and err.count("\n") == 1), err
    assert main(argv + ["--where", "samples_per_s!="]) == 0
    assert read_profile(tmp_path / "p.jsonl").steps


def test_a_negated_filter_keeps_the_rows_that_differ(tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("gpu,workers,local_batch,step_time_s,ok\nt4,1,32,0.1,1\nt4,2,32,0.2,0\nt4,4,32,0.3,\n",
                     encoding="utf-8")
    assert [s.workers for s in import_table(table, where={"ok!": "0"}, **WORKLOAD).steps] == [1, 4]
    assert [s.workers for s in import_table(table, where={"ok!": ""}, **WORKLOAD).steps] == [1, 2]
    assert [s.workers for s in import_table(table, where={"ok": ""}, **WORKLOAD).steps] == [4]
    with pytest.raises(InputError, match=r"--where workers!=1 keeps no row together with"):
        import_table(table, where={"ok": "1", "workers!": "1"}, **WORKLOAD)


def test_a_mapping_onto_a_column_the_table_has_is_refused(tmp_path, capsys):
    rc, err, out = _cli(tmp_path, capsys, "--column", "workers=hosts", table="sweep")
    assert rc == 2 and "the table has a column 'workers' of its own" in err and not out.exists()


def test_the_flags_belong_to_tables_only(tmp_path, capsys):
    rc = main(["import", "csv", str(REPO / "examples" / "logs" / "run.csv"), "--out", str(tmp_path / "p.jsonl"),
               "--global-batch", "16", "--dataset-size", "96", "--where", "run=a", "--column", "epoch=ep"])
    err = capsys.readouterr().err
    assert rc == 2 and "--where and --column apply to format records only" in err and err.count("\n") == 1


@pytest.mark.parametrize("given", ["modelResNet-18", "=ResNet-18"])
def test_a_where_without_its_form_is_a_usage_error(tmp_path, capsys, given):
    rc, err, _ = _cli(tmp_path, capsys, "--where", given, table="sweep")
    assert rc == 2 and "expected KEY=VALUE such as model=ResNet-18" in err


@pytest.mark.parametrize("kw, said", [
    (dict(where={"consolidated": 1}), "give the value as the file writes it, as text"),
    (dict(where=["model"]), "--where (where=) must map"),
    (dict(columns={"workers": ""}), "--column workers=COLUMN must name the table's column"),
    (dict(columns={None: "num_gpus"}), "--column (columns=) must name a record field"),
])
def test_the_python_door_checks_the_mappings_first(tmp_path, kw, said):
    with pytest.raises(InputError, match=said.replace("(", r"\(").replace(")", r"\)")):
        import_table(REPO / "examples" / "logs" / "sweep.csv", out=tmp_path / "p.jsonl", **WORKLOAD, **kw)
    assert not (tmp_path / "p.jsonl").exists()


def test_a_filter_keeps_the_file_line_in_later_errors(tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("model,n,b,t,gpu\nA,1,32,0.1,t4\nB,1,32,0.1,t4\nA,2,32,-5,t4\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"t\.csv: line 4: ") as info:
        import_table(table, where={"model": "A"}, columns={"workers": "n", "local_batch": "b", "step_time_s": "t"},
                     **WORKLOAD)
    assert "step_time_s" in str(info.value)
    kept = import_table(table, where={"model": "B"}, columns={"workers": "n", "local_batch": "b", "step_time_s": "t"},
                        **WORKLOAD)
    assert json.loads(json.dumps([(s.workers, s.step_time_s) for s in kept.steps])) == [[1, 0.1]]
