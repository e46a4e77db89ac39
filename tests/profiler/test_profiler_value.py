"""The value plan (``--plan value``): a small seed, then the measurements cotune's answer
to the question names while they are worth their price — driven by a replacement
launcher that answers from a known law (no processes)."""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path

import pytest
from profiler_helpers import FormulaLauncher, of, spec

import profiler
from cotune.errors import InputError
from cotune.profile import read_profile
from profiler import ProbeSettings
from profiler._state import ProfileState
from profiler._value import ValuePlan


@dataclass
class LawLauncher(FormulaLauncher):
    """Step time ``√(compute² + sync²)`` with compute linear in the local batch and sync
    growing with workers; learning curves that saturate more slowly at larger global
    batches (critical-batch law, B_noise = 64)."""

    wall_s: float = 5.0

    def step_time(self, local_batch: int, workers: int) -> tuple[float, float]:
        sync = 0.0 if workers == 1 else 0.004 + 0.002 * math.log2(workers)
        return math.hypot(0.01 + 0.0005 * local_batch, sync), sync

    def metric(self, epoch: int, global_batch: int) -> float:
        return 0.95 * (1 - math.exp(-epoch / (3.0 * (1 + global_batch / 64))))


def _profile(out: Path, launcher: LawLauncher, stream: io.StringIO | None = None, **kwargs):
    return profiler.profile(spec("tiny"), out=out, launcher=launcher, gpu="cpu", stream=stream or io.StringIO(),
                            probe=ProbeSettings(device="cpu"), curve=profiler.CurveSettings(max_epochs=30), **kwargs)


QUESTION = {"target": 0.9, "deadline_s": 600.0, "prices": {"cpu": 0.5}}


def test_the_seed_comes_first_then_the_plan_stops_saying_why(tmp_path):
    out, fake, stream = tmp_path / "v.jsonl", LawLauncher(), io.StringIO()
    summary = _profile(out, fake, stream, question=QUESTION, max_workers=4, min_batch=8, max_batch=128)
    assert fake.calls[:4] == [("timing", 1, 8), ("timing", 1, 128), ("timing", 4, 32), ("curve", 1, 32)]
    assert [t["noise"] for t in fake.tasks if t["kind"] == "curve"] == [True]  # its curve records the noise scale
    timing = [(w, b) for kind, w, b in fake.calls if kind == "timing"]
    assert len(timing) == len(set(timing))  # nothing measured twice
    assert all(1 <= w <= 4 and 8 <= b <= 128 for w, b in timing)
    assert summary.plan_note.startswith("value plan: done") and summary.plan_note in summary.describe()
    assert summary.failed == 0 and len(of(out, "eval")) == 30


def test_a_top_batch_out_of_memory_walks_down_the_ladder(tmp_path):
    out, fake = tmp_path / "v.jsonl", LawLauncher(oom_at=200)
    _profile(out, fake, question=QUESTION, max_workers=2, min_batch=8, max_batch=1024)
    tops = [b for kind, w, b in fake.calls[1:4] if kind == "timing" and w == 1]
    assert tops == [512, 256, 128]  # the ladder stops at the workload's 512 training samples
    assert all(b < 200 for kind, _, b in fake.calls[4:])  # nothing at or above the memory limit after it


def test_the_seed_times_both_ends_of_the_ladder_in_one_launch_where_it_can(tmp_path):
    out, fake = tmp_path / "v.jsonl", LawLauncher(oom_at=200, timing_groups=True)
    _profile(out, fake, question=QUESTION, max_workers=2, min_batch=8, max_batch=1024)
    first = fake.tasks[0]
    assert (first["local_batch"], first["more_local_batches"]) == (8, [512])  # one start-up for both ends
    tops = [t["local_batch"] for t in fake.tasks[1:3]]
    assert tops == [256, 128]  # 512 ran out of memory in the group: the walk down goes on alone
    steps = {(s.workers, s.local_batch) for s in read_profile(out).steps}
    assert {(1, 8), (1, 128)} <= steps and not any(b >= 200 for _, b in steps)


def test_an_existing_curve_is_used_instead_of_training_one(tmp_path):
    out = tmp_path / "v.jsonl"
    _profile(out, LawLauncher(), curves=[32], workers=[1], local_batches=[8])  # a previous run's curve
    fake = LawLauncher()
    _profile(out, fake, question=QUESTION, max_workers=2, min_batch=8, max_batch=128)
    assert ("curve", 1, 32) not in fake.calls and fake.calls[0] == ("timing", 1, 128)


def test_a_job_shorter_than_a_probe_buys_nothing_beyond_the_seed(tmp_path):
    # A probe pays 60 s of set-up: on a job that trains in seconds no probe can save its price.
    out, fake, stream = tmp_path / "v.jsonl", LawLauncher(), io.StringIO()
    summary = _profile(out, fake, stream, question={"target": 0.5, "prices": {"cpu": 0.5}}, max_workers=4,
                       min_batch=8, max_batch=128)
    assert len(fake.calls) == 4
    assert summary.plan_note.startswith("value plan: done: no measurement is worth its price")


def test_a_price_for_another_accelerator_is_refused_before_any_probe(tmp_path):
    fake = LawLauncher()
    with pytest.raises(InputError, match="this machine probes 'cpu'"):
        _profile(tmp_path / "v.jsonl", fake, question=dict(QUESTION, prices={"t4": 0.5}), max_workers=2)
    assert fake.calls == []


def test_a_bad_question_is_refused_before_any_probe(tmp_path):
    fake = LawLauncher()
    with pytest.raises(InputError, match="confidence"):
        _profile(tmp_path / "v.jsonl", fake, question=dict(QUESTION, confidence=1.5), max_workers=2)
    assert fake.calls == []


def test_the_plan_refuses_several_hosts():
    with pytest.raises(InputError, match="--nnodes"):
        next(ValuePlan(question=QUESTION, max_workers=4).points(ProfileState(), gpu="cpu", hosts=2))


def test_a_question_without_a_target_is_refused():
    with pytest.raises(InputError, match="--target"):
        ValuePlan(question={"deadline_s": 60.0}, max_workers=2)


def _big(out: Path, launcher: LawLauncher, stream: io.StringIO):
    question = {"target": 0.9, "deadline_s": 8 * 3600.0, "prices": {"cpu": 0.5}}
    return profiler.profile(spec("big_data"), out=out, launcher=launcher, gpu="cpu", stream=stream,
                            probe=ProbeSettings(device="cpu"), curve=profiler.CurveSettings(max_epochs=30),
                            question=question, max_workers=8, min_batch=8, max_batch=256)


def test_a_long_job_buys_probes_until_none_is_worth_its_price(tmp_path):
    out, fake, stream = tmp_path / "v.jsonl", LawLauncher(), io.StringIO()
    summary = _big(out, fake, stream)
    bought = fake.calls[4:]
    assert bought and all(kind == "timing" for kind, _, _ in bought), fake.calls
    assert len(set(fake.calls)) == len(fake.calls)
    assert summary.plan_note.startswith("value plan: done: no measurement is worth its price")


def test_running_the_same_command_again_asks_again_and_buys_nothing_new(tmp_path):
    out = tmp_path / "v.jsonl"
    _big(out, LawLauncher(), io.StringIO())
    again, stream = LawLauncher(), io.StringIO()
    summary = _big(out, again, stream)
    assert again.calls == [] and summary.ran == 0 and summary.plan_note.startswith("value plan: done")


def test_without_a_curve_to_train_or_read_the_plan_stops_after_the_seed_and_says_how_to_go_on(tmp_path):
    fake = LawLauncher()
    summary = _profile(tmp_path / "v.jsonl", fake, question=QUESTION, curves=[], max_workers=2, min_batch=8,
                       max_batch=32)
    assert [kind for kind, _, _ in fake.calls] == ["timing"] * 3
    assert "no learning curve" in summary.plan_note and "cotune import" in summary.plan_note


def test_a_job_that_runs_out_of_memory_at_every_batch_stops_with_a_reason(tmp_path):
    fake = LawLauncher(oom_at=1)
    summary = _profile(tmp_path / "v.jsonl", fake, question=QUESTION, max_workers=2, min_batch=8, max_batch=64)
    assert fake.calls == [("timing", 1, 8)]
    assert summary.plan_note.startswith("value plan: stopped:") and "step records" in summary.plan_note


@pytest.mark.parametrize("question", [["target"], {"target": 0.9, "deadline": 60}])
def test_a_question_that_is_not_request_fields_is_refused(question):
    with pytest.raises(InputError, match="question"):
        ValuePlan(question=question, max_workers=2)


def _measurement(kind: str, epochs: float | None):
    from cotune.solver import NextMeasurement

    return NextMeasurement(kind=kind, gpu="cpu", market="on_demand", workers=2, hosts=1, local_batch=16, global_batch=32,
                           expected_gain=1.0, price=0.5, buy=True, reason="", epochs=epochs)


def test_a_short_run_trains_for_the_epochs_it_was_priced_at():
    plan = ValuePlan(question=QUESTION, max_workers=2)
    assert plan.point_of(_measurement("short_run", 4.2)) == profiler._plan.CurvePoint(
        global_batch=32, seed=0, workers=2, max_epochs=5)
    assert plan.point_of(_measurement("short_run", None)).max_epochs is None
    assert plan.point_of(_measurement("step", None)) == profiler._plan.TimingPoint(workers=2, local_batch=16)


class _OneCurve:
    """A plan of one curve point with its own epoch limit."""

    def __init__(self, max_epochs: int | None) -> None:
        self.point = profiler._plan.CurvePoint(global_batch=16, seed=0, workers=1, max_epochs=max_epochs)

    def points(self, state, *, gpu, hosts):
        yield self.point

    def size_hint(self) -> int:
        return 1


@pytest.mark.parametrize(("limit", "trained"), [(4, 4), (None, 30), (99, 30)])
def test_a_curve_point_s_own_epoch_limit_holds_below_max_epochs(tmp_path, limit, trained):
    from profiler._session import Session
    from profiler._workload import load_workload

    fake = LawLauncher()
    Session(workload_spec=spec("tiny"), out=tmp_path / "c.jsonl", plan=_OneCurve(limit), probe=ProbeSettings(device="cpu"),
            curve=profiler.CurveSettings(max_epochs=30), launcher=fake, gpu="cpu", budget_s=None, stream=io.StringIO(),
            quiet=True, workload=load_workload(spec("tiny"))).run()
    assert [t["max_epochs"] for t in fake.tasks] == [trained]
    assert len(of(tmp_path / "c.jsonl", "eval")) == trained


def test_every_bought_measurement_gets_a_ledger_line_in_order(tmp_path):
    out, fake, stream = tmp_path / "v.jsonl", LawLauncher(), io.StringIO()
    summary = _big(out, fake, stream)
    bought = fake.calls[4:]
    assert len(summary.ledger) == len(bought) > 0
    for line, (_, workers, batch) in zip(summary.ledger, bought):
        assert line.startswith(f"value plan: bought timing workers={workers} local_batch={batch}: expected saving $")
        assert line in summary.describe() and line in stream.getvalue()  # shown as it happens, and in the summary
    # Each line says what the measurement did to the plan. The one curve (batch 64, no noise
    # records) is carried to larger batches over the accuracy model's noise-scale prior, so a
    # plan meets the question here, and the timings bought do not move it. (Before that prior,
    # the no-benefit bound left nothing feasible and each line read "still no plan": that
    # branch is test_a_ledger_line_says_what_a_measurement_did_to_the_best_chance_without_a_plan.)
    assert all("; the plan stays " in line and line.endswith("realised saving 0") for line in summary.ledger)


class _Nm:
    expected_gain = 0.25


@pytest.fixture(scope="module")
def cifar():
    import cotune

    models = cotune.fit_models(cotune.load_profile("cifar10-resnet18"), n_bootstrap=0)

    def ask(deadline_s, **kw):
        return cotune.recommend("cifar10-resnet18", target=0.94, deadline_s=deadline_s, prices={"t4": 0.526},
                                max_workers=16, models=models, **kw)
    return ask


def test_a_ledger_line_for_a_plan_that_stays_realises_nothing(cifar):
    from profiler._value import ledger_line

    rec = cifar(1800.0)
    line = ledger_line("timing workers=2 local_batch=64", _Nm(), rec, rec)
    assert "expected saving $0.25" in line and "the plan stays" in line and line.endswith("realised saving 0")


def test_a_ledger_line_says_when_the_old_plan_would_now_miss(cifar):
    from profiler._value import ledger_line

    before, after = cifar(1800.0), cifar(900.0)  # the refitted models, as if the job turned out slower
    assert before.chosen.time_at_confidence_s > 900.0 and after.chosen is not None
    line = ledger_line("timing workers=8 local_batch=64", _Nm(), before, after)
    assert "no longer meets the question" in line and line.endswith("a miss avoided")


def test_a_ledger_line_says_when_a_plan_is_found_or_lost(cifar):
    from profiler._value import ledger_line

    none, some = cifar(60.0), cifar(1800.0)
    assert none.chosen is None and some.chosen is not None
    assert "the refitted models find a plan: " in ledger_line("x", _Nm(), none, some)
    assert ledger_line("x", _Nm(), some, none).endswith("find no plan that meets the question now")


def test_a_ledger_line_says_what_a_measurement_did_to_the_best_chance_without_a_plan(cifar):
    from profiler._value import ledger_line

    none = cifar(60.0)
    assert none.chosen is None
    best = max(c.p_success for c in none.nearest if c.p_success is not None)
    line = ledger_line("x", _Nm(), none, none)
    assert line.endswith(f"; still no plan meets the question (best chance {best:.2f} -> {best:.2f})")


def test_a_ledger_line_prices_the_old_plan_by_the_refitted_models(cifar):
    from cotune.units import format_money
    from profiler._value import ledger_line

    # A looser deadline stands in for refitted models that make a slower, cheaper plan
    # safe: the old plan (3 × t4) still meets it, so the saving is the cost difference.
    before, after = cifar(1800.0), cifar(3600.0)
    assert (before.chosen.workers, after.chosen.workers) == (3, 1)
    line = ledger_line("x", _Nm(), before, after)
    saving = format_money(before.chosen.cost - after.chosen.cost, priced=True)
    assert "the plan moves from 3 × t4 at local batch 182" in line
    assert line.endswith(f"realised saving {saving} by the refitted models")
