"""``cotune import adaptdl``: AdaptDL traces, as the Pollux and Sia artifacts publish them."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from _helpers import shared_data

from cotune.cli import main
from cotune.errors import InputError
from cotune.logs import import_adaptdl
from cotune.profile import read_profile



def _trace(tmp_path: Path) -> Path:
    """A small trace in the artifacts' layout: columns in another order per file, as Sia's are."""
    d = tmp_path / "mytrace"
    d.mkdir()
    (d / "placements.csv").write_text("placement,local_bsz,step_time,sync_time\n1,32,0.10,0.0\n22,32,0.12,0.03\n"
                                      "13,64,0.30,0.5\n")
    (d / "scalability.csv").write_text("local_bsz,step_time,sync_time,num_nodes,num_replicas\n32,0.2,0.05,4,16\n")
    (d / "validation-64.csv").write_text("progress,iteration,metric,grad_sqr,grad_var\n10,100,0.5,2.0,8.0\n"
                                         "20,200,0.7,1.0,9.0\n")
    (d / "validation-256.csv").write_text("progress,iteration,metric,grad_sqr,grad_var\n10,30,0.45,1.5,7.0\n")
    return d


def test_a_trace_directory_becomes_steps_by_placement_and_curves_in_real_epochs(tmp_path):
    p = import_adaptdl(_trace(tmp_path), gpu="T4", dataset_size=6400, metric="top1")
    assert p.workload.name == "mytrace" and p.workload.goal == "max"
    one = import_adaptdl(tmp_path / "mytrace" / "placements.csv", gpu="t4", dataset_size=6400, metric="top1")
    assert one.workload.name == "mytrace" and len(one.steps) == 3  # a trace file: its directory's workload
    assert [(s.gpu, s.workers, s.hosts, s.local_batch, s.placement) for s in p.steps] == [
        ("t4", 1, 1, 32, "1"), ("t4", 4, 2, 32, "22"), ("t4", 4, 2, 64, "13"), ("t4", 16, 4, 32, None)]
    assert [s.sync_time_s for s in p.steps] == [0.0, 0.03, 0.30, 0.05]  # a sync time past the step: capped at it
    # progress is AdaScale's, not epochs: iteration × B / N
    assert [(e.global_batch, e.epoch, e.metric) for e in p.evals] == [(64, 1.0, 0.5), (64, 2.0, 0.7), (256, 1.2, 0.45)]
    # the gradient statistics are measured at the reference (smallest) batch
    assert {e.grad_batch for e in p.evals} == {64}
    assert p.noise_scale() == pytest.approx(sorted([8.0 / 2.0 * 64, 9.0 / 1.0 * 64, 7.0 / 1.5 * 64])[1])  # the median


def test_the_published_pollux_bert_trace_imports_whole_and_plans(tmp_path, capsys):
    # BERT's gradient variance reaches 7.4e15, past the profile's cap for ordinary numbers:
    # the whole import was refused for one field only a ratio of is used.
    trace = shared_data("pollux-osdi21", "traces", "bert")
    out = tmp_path / "bert.jsonl"
    code = main(["import", "adaptdl", str(trace), "--out", str(out), "--gpu", "t4", "--dataset-size", "88641",
                 "--metric", "f1"])
    assert code == 0
    p = read_profile(out)
    rows = sum(len(pd.read_csv(f)) for f in (trace / "placements.csv", trace / "scalability.csv"))
    curves = {int(f.stem.split("-")[1]): pd.read_csv(f) for f in trace.glob("validation-*.csv")}
    assert len(p.steps) == rows and len(p.evals) == sum(len(c) for c in curves.values())
    row = curves[384].iloc[-1]
    (last,) = [e for e in p.evals if e.global_batch == 384 and e.metric == row["metric"]]
    assert last.epoch == pytest.approx(row["iteration"] * 384 / 88641, abs=1e-6) and last.grad_var == row["grad_var"]
    assert max(e.grad_var for e in p.evals) > 1e15
    code = main(["recommend", str(out), "--target", "88", "--deadline", "1h", "--max-workers", "16", "--price",
                 "t4=0.526", "--json"])
    assert code == 0


def test_sia_traces_name_each_gpu_type_by_its_cluster_and_append_to_a_profile(tmp_path, capsys):
    out = tmp_path / "cifar.jsonl"
    assert main(["import", "adaptdl", str(shared_data("pollux-osdi21", "traces", "cifar10")), "--out", str(out), "--gpu",
                 "t4", "--dataset-size", "50000", "--metric", "top1", "--name", "cifar10"]) == 0
    assert main(["import", "adaptdl", str(shared_data("sia-sosp23", "traces", "cifar10")), "--out", str(out),
                 "--append"]) == 0
    said = capsys.readouterr().out
    assert "GPU types 'azure', 'dgx-ext', 'dgx', 'quad', 'rtx': the cluster each file's name ends with" in said
    p = read_profile(out)
    assert set(p.gpus) == {"t4", "azure", "dgx-ext", "dgx", "quad", "rtx"} and p.evals
    # --gpu over files of several clusters would call them all one type
    with pytest.raises(InputError, match=r"several clusters .* import one file at a time with --gpu"):
        import_adaptdl(shared_data("sia-sosp23", "traces", "cifar10"), gpu="v100", dataset_size=50000, metric="top1")
    # a per-job profile names each row's GPU type in a column, and its workload by its name
    one = import_adaptdl(shared_data("sia-sosp23", "profiles", "cifar10.csv"), dataset_size=50000, metric="top1")
    assert set(one.gpus) == {"dgx", "rtx", "v100", "quad", "t4"} and not one.evals and one.workload.name == "cifar10"
    assert any("no learning curve" in n for n in one.warnings)


def test_a_trace_without_curves_appended_to_a_profile_with_curves_asks_for_none(tmp_path):
    out = tmp_path / "p.jsonl"
    import_adaptdl(_trace(tmp_path), out=out, gpu="t4", dataset_size=6400, metric="top1")
    more = import_adaptdl(tmp_path / "mytrace" / "placements.csv", out=out, append=True, gpu="v100")
    # It said "no learning curve …: add one before recommending" of a profile holding three.
    assert not any("no learning curve (validation" in n for n in more.warnings)
    assert "no learning curve in this trace: the profile's 3 eval records already there are its curves" in more.warnings


@pytest.mark.parametrize(("edit", "needle"), [
    (lambda d: (d / "placements.csv").write_text("placement,local_bsz,step_time,sync_time\n2x,32,0.1,0.0\n"),
     r"placements.csv:2: placement '2x' is not one digit 1-9 per node"),
    (lambda d: (d / "placements.csv").write_text("placement,local_bsz,step_time\n1,32,0.1\n"),
     r"no column 'sync_time' \(columns: placement, local_bsz, step_time\)"),
    (lambda d: (d / "placements.csv").write_text("placement,local_bsz,step_time,sync_time\n1,32,nan,0\n"),
     r"placements.csv:2: column 'step_time' is 'nan': need a positive number"),
    (lambda d: (d / "validation-64.csv").write_text("progress,iteration,metric\n1,10,high\n"),
     r"validation-64.csv:2: column 'metric' holds 'high', not a number"),
    (lambda d: (d / "scalability.csv").write_text("local_bsz,step_time,sync_time,num_nodes,num_replicas\n32,0.2,0,5,4\n"),
     r"scalability.csv:2: num_nodes 5 is more than num_replicas 4"),
])
def test_a_bad_trace_file_is_refused_with_its_line_and_nothing_is_written(tmp_path, capsys, edit, needle):
    d = _trace(tmp_path)
    edit(d)
    out = tmp_path / "p.jsonl"
    code = main(["import", "adaptdl", str(d), "--out", str(out), "--gpu", "t4", "--dataset-size", "6400",
                 "--metric", "top1"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and re.search(needle, err), err
    assert not out.exists()


def test_what_a_trace_states_itself_is_refused_as_a_flag(tmp_path, capsys):
    d = _trace(tmp_path)
    base = ["import", "adaptdl", str(d), "--out", str(tmp_path / "p.jsonl"), "--gpu", "t4"]
    code = main(base + ["--dataset-size", "6400", "--metric", "top1", "--global-batch", "64"])
    assert code == 2 and "--global-batch applies to the log formats, not to adaptdl: its files state them" in (
        capsys.readouterr().err)
    code = main(base + ["--metric", "top1"])
    assert code == 2 and "pass --dataset-size (training samples per epoch" in capsys.readouterr().err
    code = main(["import", "adaptdl", str(tmp_path), "--out", str(tmp_path / "p.jsonl"), "--dataset-size", "6400",
                 "--metric", "top1"])
    assert code == 2 and "no AdaptDL trace files" in capsys.readouterr().err
    with pytest.raises(InputError, match="its rows name no GPU type .* pass --gpu G"):
        import_adaptdl(d, dataset_size=6400, metric="top1")
    # the Python door: a wrong type is a one-line error, not an AttributeError from inside
    with pytest.raises(InputError, match="--gpu must be a non-empty name of at most 200 characters, got 3"):
        import_adaptdl(d, gpu=3, dataset_size=6400, metric="top1")
    with pytest.raises(InputError, match="--dataset-size must be a whole number from 1 to 1e\\+15, got 6400.0"):
        import_adaptdl(d, gpu="t4", dataset_size=6400.0, metric="top1")
    with pytest.raises(InputError, match="workload record: field 'metric' must be one line"):
        import_adaptdl(d, gpu="t4", dataset_size=6400, metric="top\n1", goal="max")
    assert not (tmp_path / "p.jsonl").exists()


def test_a_trace_directory_over_the_size_cap_is_refused_before_its_files_are_read(tmp_path, monkeypatch):
    # Each file was capped as a log is, but a directory could hold any number of them.
    import cotune.logs._adaptdl as adaptdl

    trace = _trace(tmp_path)
    size = sum(f.stat().st_size for f in trace.glob("*.csv"))
    monkeypatch.setattr(adaptdl, "MAX_LOG_BYTES", size - 1)
    with pytest.raises(InputError, match="its trace files hold 0 MiB, more than a trace's 0 MiB limit"):
        import_adaptdl(trace, dataset_size=6400, metric="top1", gpu="t4")
    monkeypatch.setattr(adaptdl, "MAX_LOG_BYTES", size)
    assert import_adaptdl(trace, dataset_size=6400, metric="top1", gpu="t4").steps
