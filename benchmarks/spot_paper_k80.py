"""Reproduce the seed paper's comparison on Gavel's measured K80 throughputs.

Li et al., "Speeding up Deep Learning with Transient Servers" (2019): a cluster of
4 transient (preemptible) K80 servers trained 3.72x faster than one on-demand K80 at
62.9 % lower cost. Here: Gavel's K80 throughputs for ResNet-18 on CIFAR-10 (OSDI'20
artifact, MIT; ``../shared/data/gavel-osdi20``), one GPU per server, servers spread
over machines (Gavel's *unconsolidated* rows — transient servers are separate VMs),
and the revocation-aware expected time of ``cotune.spot`` for the transient clusters.

The workload is a fixed amount of training (``EPOCHS`` passes over CIFAR-10 at the
same per-worker batch), as in the paper's fixed-work comparison; speed-up is then the
ratio of samples per second, lengthened by revocations.

Prices (USD per GPU-hour, GPU only; the VM around it is left out on both sides):

* ``gcp-2019``: Google Compute Engine GPU price list of 2019 (us-central1), K80
  on-demand $0.45, preemptible $0.135. Quoted from the public price list of the time;
  this offline session could not re-fetch the page.
* ``gcp-2018-launch``: preemptible GPUs at launch (January 2018): K80 $0.22 against
  $0.45 on-demand — "50 percent discount" (zdnet.de, 2018-01, "Google Cloud erweitert
  Preemtible VMs mit Nvidia GPUs").

Revocation model (assumptions, printed with the results): each server revoked at
``RATES`` per server-hour; checkpoint write 10 s (ResNet-18: ~45 MB); a replacement
preemptible VM joins and reloads in 120 s.

Run: ``python benchmarks/spot_paper_k80.py`` (prints its table; no arguments).
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cotune.spot import job_rate_per_s, revocation_estimate  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "gavel-osdi20" / "gavel_simulation_throughputs_flat.csv"
EPOCHS = 100
DATASET = 50_000
PRICES = {"gcp-2019": (0.45, 0.135), "gcp-2018-launch": (0.45, 0.22)}
RATES = (0.0, 0.05, 0.2)
CHECKPOINT_S, RESTART_S = 10.0, 120.0
PAPER = {"speedup_4": 3.72, "saving_4": 0.629}


def k80_samples_per_s() -> dict[tuple[int, int], float]:
    """(per-worker batch, GPUs) → samples/s, ResNet-18, K80, one GPU per server."""
    out = {}
    with DATA.open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if row["gpu_type"] != "k80" or row["model"] != "ResNet-18":
                continue
            n = int(row["num_gpus"])
            # 1 GPU rows are the same either way; multi-GPU: servers on separate machines
            if n > 1 and row["consolidated"] != "0":
                continue
            if row["samples_per_s"]:
                out[(int(row["per_worker_batch_size"]), n)] = float(row["samples_per_s"])
    return out


def main() -> None:
    if not DATA.exists():
        print(f"needs {DATA} (the shared data beside the repository)")
        raise SystemExit(2)
    thr = k80_samples_per_s()
    batches = sorted({b for b, _ in thr})
    print(f"Gavel K80 ResNet-18/CIFAR-10, {EPOCHS} epochs, servers of 1 GPU on separate machines")
    print(f"revocations: checkpoint {CHECKPOINT_S:g} s, restart {RESTART_S:g} s; paper (4 transient K80): "
          f"{PAPER['speedup_4']}x faster, {PAPER['saving_4']:.1%} cheaper\n")
    head = f"{'batch':>5} {'n':>2} {'rate/h':>6} {'thr x':>6} {'E[T] h':>7} {'speed-up':>8} {'E[revoc]':>8} {'ckpt every':>10}"
    head += "".join(f" {'saving ' + k:>22}" for k in PRICES)
    print(head)
    print("-" * len(head))
    summary = []
    for b in batches:
        if (b, 1) not in thr:
            continue
        w1 = EPOCHS * DATASET / thr[(b, 1)]
        for n in (4, 8):
            if (b, n) not in thr:
                continue
            thr_x = thr[(b, n)] / thr[(b, 1)]
            wn = w1 / thr_x
            for rate in RATES:
                est = revocation_estimate(
                    work_s=wn, rate_per_s=job_rate_per_s(rate_per_server_hour=rate, servers=n),
                    checkpoint_write_s=CHECKPOINT_S, restart_s=RESTART_S,
                )
                t = float(est.expected_time_s)
                speed = w1 / t
                tau = float(est.checkpoint_interval_s)
                line = (f"{b:>5} {n:>2} {rate:>6.2f} {thr_x:>6.2f} {t / 3600:>7.2f} {speed:>7.2f}x "
                        f"{float(est.expected_revocations):>8.2f} {('%.0f min' % (tau / 60)) if tau != float('inf') else 'never':>10}")
                for od, sp in PRICES.values():
                    saving = 1 - (n * sp * t) / (od * w1)
                    line += f" {saving:>22.1%}"
                    if n == 4 and rate == 0.05:
                        summary.append((b, speed, saving))
                print(line)
    print()
    for (od, sp), name in zip(PRICES.values(), PRICES):
        rows = [(b, s, v) for (b, s, v) in summary[list(PRICES).index(name)::len(PRICES)]]
        speeds = sorted(s for _, s, _ in rows)
        savings = sorted(v for _, _, v in rows)
        mid = len(rows) // 2
        print(f"4 transient K80 at 0.05 revocations/server-hour, {name} prices (${od}/${sp}): "
              f"speed-up {speeds[0]:.2f}–{speeds[-1]:.2f}x (median {speeds[mid]:.2f}x), "
              f"saving {savings[0]:.1%}–{savings[-1]:.1%} (median {savings[mid]:.1%}) "
              f"over per-worker batches {', '.join(str(b) for b, _, _ in rows)}; paper: 3.72x, 62.9%")


if __name__ == "__main__":
    main()
