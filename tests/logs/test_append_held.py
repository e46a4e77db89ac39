"""An append of what the profile already holds is refused, whatever the import: the same
data twice would count every point twice, and nothing would say so."""

from __future__ import annotations

import pytest

from _helpers import shared_data

from cotune.errors import InputError
from cotune.logs import import_adaptdl, import_table
from cotune.profile import read_profile

EVALS = dict(record="eval", name="r", dataset_size=50000, metric="top1")
STEPS = dict(record="step", name="r", dataset_size=50000, metric="top1")


def _table(tmp_path, text, name="t.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_an_adaptdl_trace_appended_again_is_refused_and_the_profile_kept(tmp_path):
    # 600 points and 1,512 step times were written twice, all at seed 0.
    trace = shared_data("pollux-osdi21", "traces", "cifar10")
    out = tmp_path / "c.jsonl"
    import_adaptdl(trace, out=out, gpu="t4", dataset_size=50000, metric="top1")
    before = out.read_bytes()
    with pytest.raises(InputError, match=r"already holds seed 0 at global batch \d+ up to epoch"):
        import_adaptdl(trace, out=out, gpu="t4", append=True)
    assert out.read_bytes() == before


def test_a_table_of_evals_appended_again_is_refused_and_under_another_seed_is_a_run(tmp_path):
    out = tmp_path / "p.jsonl"
    text = "global_batch,epoch,metric\n256,1,0.50\n256,2,0.61\n256,3,0.70\n"
    import_table(_table(tmp_path, text), out=out, **EVALS)
    with pytest.raises(InputError, match="already holds seed 0 at global batch 256 up to epoch 3"):
        import_table(_table(tmp_path, text), out=out, append=True, record="eval")
    other = "global_batch,epoch,metric\n256,1,0.52\n256,2,0.60\n256,3,0.71\n"
    import_table(_table(tmp_path, other), out=out, append=True, record="eval", constants={"seed": 1})
    assert sorted({e.seed for e in read_profile(out).evals}) == [0, 1]
    # the first run's own points under a new seed are still the same run
    with pytest.raises(InputError, match="already holds these 3 points as seed 0 at global batch 256"):
        import_table(_table(tmp_path, text), out=out, append=True, record="eval", constants={"seed": 2})


def test_a_run_continued_past_its_last_point_is_appended(tmp_path):
    out = tmp_path / "p.jsonl"
    import_table(_table(tmp_path, "global_batch,epoch,metric\n256,1,0.50\n256,2,0.61\n"), out=out, **EVALS)
    import_table(_table(tmp_path, "global_batch,epoch,metric\n256,3,0.70\n256,4,0.74\n"), out=out, append=True,
                 record="eval")
    assert [e.epoch for e in read_profile(out).evals] == [1, 2, 3, 4]


def test_step_records_all_held_already_are_refused_some_new_are_appended(tmp_path):
    out = tmp_path / "p.jsonl"
    text = "gpu,workers,local_batch,step_time_s\nt4,1,64,0.2\nt4,2,64,0.21\n"
    import_table(_table(tmp_path, text), out=out, **STEPS)
    with pytest.raises(InputError, match="already holds all 2 of these step records"):
        import_table(_table(tmp_path, text), out=out, append=True, record="step")
    # a repeated measurement beside a new one is data, not a duplicate import
    import_table(_table(tmp_path, text + "t4,4,64,0.23\n"), out=out, append=True, record="step")
    assert len(read_profile(out).steps) == 5


def test_two_imports_of_one_run_started_together_cannot_both_append_it(tmp_path, monkeypatch):
    # Both read the profile before either appended: the check made then passed for both,
    # and the run was written twice under one seed. The check now runs on the profile as it
    # is under the writer's lock.
    import cotune.logs as logs

    out = tmp_path / "p.jsonl"
    import_table(_table(tmp_path, "global_batch,epoch,metric\n128,1,0.40\n"), out=out, **EVALS)
    stale = read_profile(out)  # what the second import read, before the first appended
    text = "global_batch,epoch,metric\n256,1,0.50\n256,2,0.61\n"
    import_table(_table(tmp_path, text), out=out, append=True, record="eval")
    before = out.read_bytes()
    monkeypatch.setattr(logs, "_existing", lambda *a, **k: stale)
    with pytest.raises(InputError, match="already holds seed 0 at global batch 256"):
        import_table(_table(tmp_path, text), out=out, append=True, record="eval")
    assert out.read_bytes() == before


def test_a_new_profile_that_appears_while_an_import_writes_it_is_kept(tmp_path, monkeypatch):
    # A tracker (or another import) started on the path after this import checked it was
    # free: a rename over it unlinked the records the tracker went on appending.
    import cotune.logs as logs
    from cotune.profile import StepRecord, WorkloadRecord, append_records

    out = tmp_path / "p.jsonl"
    real = logs._existing

    def then_a_tracker_starts(*args, **kwargs):
        found = real(*args, **kwargs)
        append_records(out, [WorkloadRecord(name="job", dataset_size=100, metric="top1"),
                             StepRecord(gpu="cpu", workers=1, local_batch=10, step_time_s=0.1)])
        return found

    monkeypatch.setattr(logs, "_existing", then_a_tracker_starts)
    with pytest.raises(InputError, match="appeared while this profile was being written .* pass --append"):
        import_table(_table(tmp_path, "global_batch,epoch,metric\n256,1,0.50\n"), out=out, **EVALS)
    assert read_profile(out).steps and not list(tmp_path.glob(".p.jsonl.*.tmp"))
