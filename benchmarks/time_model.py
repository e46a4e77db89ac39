"""Step-time model error when only small worker counts were probed (real Pollux T4 traces).

For each bundled profile, fit on probes with ``workers <= K`` and predict every measured
configuration with more workers; report the mean absolute percentage error (MAPE) by
band, for cotune's model and, as an ablation, for the same model with Pollux's linear
synchronisation growth (``β·(n − 2)``) instead of cotune's ``β·log2(n − 1)``.

    python benchmarks/time_model.py            # prints a Markdown table
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time

import numpy as np

from benchmarks._common import PROFILES, markdown_table
from cotune import load_profile
from cotune.models import StepTimeModel
from cotune.models import _backbone

BANDS = {4: [(1, 4), (5, 8), (9, 16), (17, 64)], 8: [(1, 8), (9, 16), (17, 32), (33, 64)]}


@contextlib.contextmanager
def linear_sync_growth():
    """Temporarily swap the backbone's sync growth for Pollux's linear one (ablation only)."""
    original = _backbone.predict_log_step

    def pollux(params, workers, hosts, local_batch):
        a_c, b_c, a_r, b_r, a_n, b_n, gamma = params
        compute = a_c + b_c * local_batch
        extra = np.maximum(workers - 2.0, 0.0)
        sync = np.where(hosts > 1, a_n + b_n * extra, a_r + b_r * extra)
        sync = np.where(workers > 1, sync, 1e-9)
        lc, ls = np.log(np.maximum(compute, 1e-9)), np.log(np.maximum(sync, 1e-9))
        top = np.maximum(lc, ls)
        return top + np.log(np.exp(gamma * (lc - top)) + np.exp(gamma * (ls - top))) / gamma

    _backbone.predict_log_step = pollux
    import cotune.models._step_time as st

    st.predict_log_step = pollux
    try:
        yield
    finally:
        _backbone.predict_log_step = original
        st.predict_log_step = original


def evaluate(name: str, cut: int) -> dict[str, float]:
    a = load_profile(name).step_arrays("t4")
    train = a["workers"] <= cut
    model = StepTimeModel(n_bootstrap=0).fit(a["workers"][train], a["hosts"][train], a["local_batch"][train], a["step_time_s"][train])
    pred = model.predict(a["workers"], a["hosts"], a["local_batch"]).step_time_s
    err = np.abs(pred / a["step_time_s"] - 1)
    out = {}
    for lo, hi in BANDS[cut]:
        sel = (a["workers"] >= lo) & (a["workers"] <= hi)
        out[f"{lo}-{hi}"] = float(err[sel].mean())
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    t0 = time.perf_counter()
    results = []
    for cut in (4, 8):
        for name in PROFILES:
            cotune_err = evaluate(name, cut)
            with linear_sync_growth():
                linear_err = evaluate(name, cut)
            results.append({"profile": name, "fit_on_workers_le": cut, "cotune": cotune_err, "linear_sync": linear_err})
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    for cut in (4, 8):
        bands = [f"{lo}-{hi}" for lo, hi in BANDS[cut]]
        rows = []
        for r in results:
            if r["fit_on_workers_le"] != cut:
                continue
            for label in ("cotune", "linear_sync"):
                rows.append([r["profile"], "cotune (log2 sync)" if label == "cotune" else "Pollux linear sync"]
                            + [f"{100 * r[label][b]:.1f} %" for b in bands])
        print(f"\nStep-time MAPE, fitted on workers <= {cut} (first band: inside; others: extrapolated)\n")
        print(markdown_table(["profile", "model"] + [f"workers {b}" for b in bands], rows))
    print(f"\n({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
