"""The job's outlook: what its progress says about the total epochs at every batch."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cotune import load_profile
from cotune.solver import MAX_SHIFT, carry_reach, job_frame, job_outlook, shift_carry

TARGET = 0.94
BATCHES = np.array([256, 512, 1024, 2048])


def _model_curve(stretch: float, up_to: float):
    """The bundled CIFAR-10 curve at global batch 512, its epochs stretched (a slower job)."""
    p = load_profile("cifar10-resnet18")
    ev = sorted((e for e in p.evals if e.global_batch == 512 and e.seed == min(x.seed for x in p.evals)), key=lambda e: e.epoch)
    pts = [(e.epoch * stretch, e.metric) for e in ev if e.epoch * stretch <= up_to]
    return [x for x, _ in pts], [y for _, y in pts]


def _model(cifar_models, batches, level=None):
    pred = cifar_models.predict_epochs(np.asarray(batches, float), TARGET if level is None else level)
    return np.asarray(pred.epochs_if_reached, float)


def test_before_the_job_starts_the_model_answers_and_nothing_is_done(cifar_models) -> None:
    o = job_outlook(cifar_models, global_batch=BATCHES, target=TARGET, goal="max")
    assert np.allclose(o.epochs, _model(cifar_models, BATCHES)) and np.all(o.done_epochs == 0.0)
    assert o.shift == 0.0 and o.forecast is None


def test_a_slower_job_shifts_every_batch_by_its_own_factor(cifar_models) -> None:
    ep, mt = _model_curve(1.6, 90.0)
    running = BATCHES == 512
    o = job_outlook(cifar_models, global_batch=BATCHES, target=TARGET, goal="max", running=running,
                    epochs_done=ep[-1], level=max(mt), curve_epochs=ep, curve_metric=mt)
    assert o.forecast is not None and o.shift > 0
    model = _model(cifar_models, BATCHES)
    others = ~running
    assert np.allclose(o.epochs[others] / model[others], math.exp(o.shift))
    assert o.epochs[running][0] == pytest.approx(o.forecast.epochs_if_reached)
    assert o.done_epochs[running][0] == ep[-1]
    # Elsewhere the job resumes at the earlier of where that batch reaches the level already
    # reached and the same share of its (shifted) work: the shift scales both alike here.
    at_level = _model(cifar_models, BATCHES[others], level=max(mt)) * math.exp(o.shift)
    share = ep[-1] / o.forecast.epochs_if_reached * o.epochs[others]
    assert np.allclose(o.done_epochs[others], np.minimum(at_level, share))


def test_the_shift_is_believed_up_to_max_shift(cifar_models) -> None:
    ep, mt = _model_curve(8.0, 520.0)
    o = job_outlook(cifar_models, global_batch=BATCHES, target=TARGET, goal="max", running=BATCHES == 512,
                    epochs_done=ep[-1], level=max(mt), curve_epochs=ep, curve_metric=mt)
    assert o.shift == pytest.approx(math.log(MAX_SHIFT))


def test_larger_batches_reach_no_more_often_than_the_running_one(cifar_models) -> None:
    ep, mt = _model_curve(1.0, 12.0)
    running = BATCHES == 512
    o = job_outlook(cifar_models, global_batch=BATCHES, target=TARGET, goal="max", running=running,
                    epochs_done=ep[-1], level=max(mt), curve_epochs=ep, curve_metric=mt)
    p_model = np.asarray(cifar_models.predict_epochs(BATCHES.astype(float), TARGET).p_reach, float)
    assert np.all(o.p_reach[BATCHES > 512] <= o.forecast.p_reach + 1e-12)
    # A smaller batch lies between the model's chance and the job's.
    lo = np.minimum(p_model, o.forecast.p_reach)[BATCHES < 512]
    hi = np.maximum(p_model, o.forecast.p_reach)[BATCHES < 512]
    assert np.all((o.p_reach[BATCHES < 512] >= lo - 1e-12) & (o.p_reach[BATCHES < 512] <= hi + 1e-12))


def test_the_same_batch_on_other_hardware_shares_the_jobs_belief(cifar_models) -> None:
    ep, mt = _model_curve(1.6, 90.0)
    gb = np.array([256, 384, 384, 1024])
    running = np.array([False, True, False, False])  # the same global batch on other hardware: row 2
    o = job_outlook(cifar_models, global_batch=gb, target=TARGET, goal="max", running=running,
                    epochs_done=ep[-1], level=max(mt), curve_epochs=ep, curve_metric=mt)
    for v in (o.epochs, o.log_sigma, o.p_reach, o.done_epochs):
        assert v[2] == v[1]
    assert o.done_epochs[2] == ep[-1] and o.epochs[2] == pytest.approx(o.forecast.epochs_if_reached)


@pytest.mark.parametrize("p_model", [0.05, 0.5, 0.99])
@pytest.mark.parametrize("p_job", [0.1, 0.6, 0.97])
def test_carry_reach_moves_from_the_model_to_the_job_as_the_carry_grows(p_model: float, p_job: float) -> None:
    c = np.linspace(0.0, 1.0, 11)
    p = carry_reach(np.full(c.shape, p_model), p_running=p_job, carry=c, larger=np.zeros(c.shape, bool))
    assert p[0] == pytest.approx(p_model) and p[-1] == pytest.approx(p_job)
    step = np.diff(p) * np.sign(p_job - p_model)
    assert np.all(step >= -1e-12)  # monotone from one to the other
    larger = carry_reach(np.full(c.shape, p_model), p_running=p_job, carry=c, larger=np.ones(c.shape, bool))
    assert np.allclose(larger, min(p_model, p_job))


def test_carry_reach_keeps_the_models_certainty_where_nothing_carries() -> None:
    p = carry_reach(np.array([0.0, 1.0]), p_running=0.3, carry=np.zeros(2), larger=np.zeros(2, bool))
    assert list(p) == [0.0, 1.0]


def test_carry_reach_without_the_jobs_chance_is_the_models() -> None:
    p = carry_reach(np.array([0.2, 0.9]), p_running=math.nan, carry=np.ones(2), larger=np.array([False, True]))
    assert list(p) == [0.2, 0.9]


def test_without_a_level_a_switch_resumes_at_the_same_share_of_the_work(cifar_models) -> None:
    o = job_outlook(cifar_models, global_batch=BATCHES, target=TARGET, goal="max", running=np.zeros(4, bool),
                    running_batch=512.0, epochs_done=10.0)
    model = _model(cifar_models, BATCHES)
    share = 10.0 / _model(cifar_models, [512])[0]
    assert np.allclose(o.done_epochs, share * model) and o.shift == 0.0


@pytest.mark.parametrize("level", [0.8, 0.9, 0.93])
def test_a_switch_resumes_at_the_earlier_of_the_same_level_and_the_same_share_of_the_work(cifar_models, level) -> None:
    batches = np.array([256, 512, 1024, 2048, 4096])
    done = _model(cifar_models, [512], level=level)[0]  # the job at 512 has just reached the level
    o = job_outlook(cifar_models, global_batch=batches, target=TARGET, goal="max", running=batches == 512,
                    epochs_done=done, level=level)
    at_level = _model(cifar_models, batches, level=level)
    share = done / _model(cifar_models, [512])[0] * _model(cifar_models, batches)
    others = batches != 512
    assert np.allclose(o.done_epochs[others], np.minimum(at_level, share)[others])
    assert o.done_epochs[batches == 512][0] == done


def test_a_larger_batch_that_reaches_the_level_late_resumes_at_the_share_of_the_work(cifar_models) -> None:
    # Early in the run a larger batch reaches the level only well into its recipe: the level
    # alone would hand the switch that part of the schedule for free.
    done = _model(cifar_models, [512], level=0.8)[0]
    o = job_outlook(cifar_models, global_batch=np.array([512, 1024]), target=TARGET, goal="max",
                    running=np.array([True, False]), epochs_done=done, level=0.8)
    at_level = _model(cifar_models, [1024], level=0.8)[0]
    share = done / _model(cifar_models, [512])[0] * _model(cifar_models, [1024])[0]
    assert share < 0.8 * at_level  # the case this test is about
    assert o.done_epochs[1] == pytest.approx(share)


def test_shift_carry_is_a_tent_from_the_anchors_to_the_running_batch() -> None:
    gb = np.array([64.0, 128.0, 362.0, 1024.0, 4096.0])
    c = shift_carry(gb, running_batch=1024.0, anchors=np.array([128.0]), share=1.0)
    # 0 at the anchor and on its far side, halfway in log batch at 362 ≈ √(128·1024), 1 from the running batch on.
    assert np.allclose(c, [0.0, 0.0, 0.5, 1.0, 1.0], atol=2e-3)


def test_shift_carry_keeps_the_run_scatter_part_everywhere() -> None:
    gb = np.array([128.0, 362.0, 1024.0])
    c = shift_carry(gb, running_batch=1024.0, anchors=np.array([128.0]), share=0.6)
    assert np.allclose(c, 1.0 - 0.6 * (1.0 - np.array([0.0, 0.5, 1.0])), atol=2e-3)


def test_a_job_at_an_anchor_or_without_anchors_carries_its_whole_shift() -> None:
    gb = np.array([128.0, 512.0, 2048.0])
    assert np.all(shift_carry(gb, running_batch=512.0, anchors=np.array([128.0, 512.0]), share=1.0) == 1.0)
    assert np.all(shift_carry(gb, running_batch=512.0, anchors=np.array([]), share=1.0) == 1.0)


def test_shift_carry_rejects_a_share_outside_zero_one() -> None:
    with pytest.raises(ValueError, match=r"share must be in \[0, 1\], got 1.5"):
        shift_carry(np.array([128.0]), running_batch=512.0, anchors=np.array([128.0]), share=1.5)


@pytest.fixture(scope="module")
def one_curve_models():
    """The bundled CIFAR-10 profile with the curve at global batch 512 only (one anchor)."""
    import dataclasses

    from cotune import fit_models

    p = load_profile("cifar10-resnet18")
    return fit_models(dataclasses.replace(p, evals=tuple(e for e in p.evals if e.global_batch == 512)), n_bootstrap=0)


def test_a_job_far_from_the_anchor_shifts_batches_near_the_anchor_less(one_curve_models) -> None:
    ep, mt = _model_curve(1.6, 90.0)
    batches = np.array([512.0, 1024.0, 2048.0, 4096.0])
    running = batches == 2048.0
    assert list(one_curve_models.accuracy.anchor_batches(TARGET)) == [512.0]
    o = job_outlook(one_curve_models, global_batch=batches, target=TARGET, goal="max", running=running,
                    epochs_done=ep[-1], level=max(mt), curve_epochs=ep, curve_metric=mt)
    assert o.forecast is not None and o.shift != 0.0
    model = np.asarray(one_curve_models.predict_epochs(batches, TARGET).epochs_if_reached, float)
    factor = np.log(o.epochs / model) / o.shift
    # At the anchor only the run's scatter carries; halfway a share between; beyond the job's batch all of it.
    assert factor[0] < factor[1] < 1.0
    assert factor[3] == pytest.approx(1.0)
    assert np.allclose(factor[~running], o.carry[~running])


# -- the job's epochs at the batch it runs now (job_frame) ------------------------------------------
def _evals(batch: int, epochs, metric):
    from cotune.profile import EvalRecord

    return [EvalRecord(global_batch=batch, epoch=float(e), metric=float(m), seed=1) for e, m in zip(epochs, metric)]


def test_without_a_change_of_batch_the_frame_is_the_jobs_own_count(cifar_models) -> None:
    ep, mt = _model_curve(1.3, 40.0)
    fr = job_frame(cifar_models, evals=_evals(512, ep, mt), global_batch=512, epochs_done=ep[-1] + 0.5, target=TARGET,
                   goal="max")
    assert fr.curve_epochs == tuple(ep) and fr.curve_metric == tuple(mt)
    assert fr.epochs_done == pytest.approx(ep[-1] + 0.5)
    assert fr.prior is None and fr.handovers == () and fr.level == max(mt)


def test_a_change_of_batch_resumes_where_the_switch_was_judged_to(cifar_models) -> None:
    # Just before the switch, the option at 1024 was judged with the outlook's hand-over
    # epoch and belief; just after it (no evaluation at 1024 yet) the running job reads the same.
    ep, mt = _model_curve(1.6, 60.0)
    before = job_outlook(cifar_models, global_batch=BATCHES, target=TARGET, goal="max", running=BATCHES == 512,
                         epochs_done=ep[-1], level=max(mt), curve_epochs=ep, curve_metric=mt)
    k = int(np.flatnonzero(BATCHES == 1024)[0])
    fr = job_frame(cifar_models, evals=_evals(512, ep, mt), global_batch=1024, epochs_done=ep[-1], target=TARGET, goal="max")
    assert fr.epochs_done == pytest.approx(before.done_epochs[k])
    assert fr.handovers[0].from_batch == 512 and fr.handovers[0].to_batch == 1024 and fr.handovers[0].at_epoch == ep[-1]
    assert fr.curve_epochs == () and fr.level == max(mt)
    after = job_outlook(cifar_models, global_batch=BATCHES, target=TARGET, goal="max", running=BATCHES == 1024,
                        epochs_done=fr.epochs_done, level=fr.level, prior=fr.prior)
    assert after.epochs[k] == pytest.approx(before.epochs[k])
    assert after.log_sigma[k] == pytest.approx(before.log_sigma[k], abs=1e-9)
    assert after.p_reach[k] == pytest.approx(before.p_reach[k])
    assert after.done_epochs[k] == pytest.approx(before.done_epochs[k])


def test_the_bare_model_after_a_switch_forgets_the_jobs_shift(cifar_models) -> None:
    # What the hand-over prior is for: without it a slow job that moves reads as the model.
    ep, mt = _model_curve(1.6, 60.0)
    fr = job_frame(cifar_models, evals=_evals(512, ep, mt), global_batch=1024, epochs_done=ep[-1], target=TARGET, goal="max")
    k = int(np.flatnonzero(BATCHES == 1024)[0])
    bare = job_outlook(cifar_models, global_batch=BATCHES, target=TARGET, goal="max", running=BATCHES == 1024,
                       epochs_done=fr.epochs_done, level=fr.level)
    kept = job_outlook(cifar_models, global_batch=BATCHES, target=TARGET, goal="max", running=BATCHES == 1024,
                       epochs_done=fr.epochs_done, level=fr.level, prior=fr.prior)
    assert bare.epochs[k] == pytest.approx(_model(cifar_models, [1024])[0])
    assert kept.epochs[k] > bare.epochs[k] and kept.shift > 0


def test_evaluations_after_a_change_count_on_from_the_hand_over(cifar_models) -> None:
    ep, mt = _model_curve(1.0, 30.0)
    at = ep[-1]
    later = _evals(1024, [at + 1.0, at + 2.5], [max(mt) + 0.002, max(mt) + 0.004])
    fr = job_frame(cifar_models, evals=_evals(512, ep, mt) + later, global_batch=1024, epochs_done=at + 3.0, target=TARGET,
                   goal="max")
    d = fr.handovers[0].epoch
    assert d > 0
    assert fr.curve_epochs == pytest.approx((d + 1.0, d + 2.5))
    assert fr.epochs_done == pytest.approx(d + 3.0)
    assert fr.level == pytest.approx(max(mt) + 0.004)
    # Back to the first batch: a second hand-over, from what the job showed at 1024.
    back = job_frame(cifar_models, evals=_evals(512, ep, mt) + later, global_batch=512, epochs_done=at + 3.0,
                     target=TARGET, goal="max")
    assert [h.to_batch for h in back.handovers] == [1024, 512] and back.handovers[1].at_epoch == at + 2.5



@settings(max_examples=20, deadline=None)
@given(stretch=st.floats(0.6, 2.5), up_to=st.floats(8.0, 80.0), to=st.sampled_from([256, 1024, 2048, 768, 3000]))
def test_every_option_reads_the_same_just_before_and_just_after_a_switch(cifar_models, stretch, up_to, to) -> None:
    # The law job_frame exists for: until the job evaluates at its new batch, every option's
    # belief and hand-over are what they were when the switch was judged.
    from cotune.solver import frame_outlook

    ep, mt = _model_curve(stretch, up_to)
    if len(ep) < 2:
        return
    grid = np.array([256, 512, 768, 1024, 2048, 3000, 4096])
    before = job_outlook(cifar_models, global_batch=grid, target=TARGET, goal="max", running=grid == 512,
                         epochs_done=ep[-1], level=max(mt), curve_epochs=ep, curve_metric=mt)
    fr = job_frame(cifar_models, evals=_evals(512, ep, mt), global_batch=to, epochs_done=ep[-1], target=TARGET, goal="max")
    after = frame_outlook(cifar_models, fr, global_batch=grid, running=grid == to, target=TARGET, goal="max")
    assert np.allclose(after.epochs, before.epochs, equal_nan=True)
    assert np.allclose(after.p_reach, before.p_reach, equal_nan=True)
    assert np.allclose(after.log_sigma, before.log_sigma, equal_nan=True)
    assert np.allclose(after.done_epochs, before.done_epochs, equal_nan=True)


def test_a_batch_the_job_returns_to_reads_as_it_was_judged_before_the_return(cifar_models) -> None:
    # 512 -> 1024 -> back to 512: just before the return, 512 was judged by what the job's
    # own curve said there when it left (kept); just after it — before any evaluation at
    # 512 again, and at the first one — the job resumes with that belief, not with the
    # shift carried back from 1024 (which read a replayed BERT job 0.78 as an
    # alternative and 0.22 a checkpoint after it moved).
    from cotune.solver import frame_outlook

    ep, mt = _model_curve(1.6, 40.0)  # slow at 512
    at = ep[-1]
    # At 1024 it learns fast (eight rising evaluations): the shift carried back from there
    # differs from what 512's own curve said.
    gain = np.linspace(0.01, 0.03, 8)
    there = _evals(1024, at + np.linspace(0.5, 4.0, 8), max(mt) + gain)
    grid = np.array([256, 512, 1024, 2048])
    k = int(np.flatnonzero(grid == 512)[0])
    on_b = job_frame(cifar_models, evals=_evals(512, ep, mt) + there, global_batch=1024, epochs_done=at + 4.0,
                     target=TARGET, goal="max")
    before = frame_outlook(cifar_models, on_b, global_batch=grid, running=grid == 1024, target=TARGET, goal="max")
    back = job_frame(cifar_models, evals=_evals(512, ep, mt) + there, global_batch=512, epochs_done=at + 4.0,
                     target=TARGET, goal="max")
    after = frame_outlook(cifar_models, back, global_batch=grid, running=grid == 512, target=TARGET, goal="max")
    for name in ("epochs", "log_sigma", "p_reach"):
        assert getattr(after, name)[k] == pytest.approx(getattr(before, name)[k]), name
    assert back.prior.median_epochs == pytest.approx(before.epochs[k])
    assert back.prior.p_reach == pytest.approx(before.p_reach[k])
    # Its first evaluation back at 512 is pooled with that same belief.
    again = job_frame(cifar_models, evals=_evals(512, ep, mt) + there + _evals(512, [at + 4.5], [max(mt) + 0.031]),
                      global_batch=512, epochs_done=at + 4.5, target=TARGET, goal="max")
    assert again.prior == back.prior and again.curve_epochs
