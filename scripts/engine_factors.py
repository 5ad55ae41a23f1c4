"""Median factors of the shipped closed-loop rows by engine (issue 34: the engines' scheduler).

    PYTHONPATH=$PWD .venv/bin/python scripts/engine_factors.py [--which held_out_model]

Prints, for the time per output token and the time to first token, the median factor exp(median |ln(predicted /
measured)|) and the median measured / predicted overall, by engine, and the worst group of at least 20 rows
(by model, GPU and engine), and the measurements the replica model did not predict, by reason.
"""

from __future__ import annotations

import argparse
import time

import llmcourse.validation as lcv
from llmcourse.validation.held_out import not_predicted_reasons


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--which", default="held_out_model,predicted")
    args = ap.parse_args()
    t = time.perf_counter()
    ev = lcv.evidence(lcv.load_measurements(lcv.AICONFIGURATOR))
    print(f"rows predicted {len(ev.rows):,}; not predicted {len(ev.not_predicted):,} ({time.perf_counter() - t:.0f} s)")
    for reason, n in not_predicted_reasons(ev).items():
        print(f"  {n:5,}: {reason}")
    print(f"fitted on all rows: {ev.fitted}")
    for which in args.which.split(","):
        for metric in ("tpot_ms", "ttft_ms"):
            idx = {"metric": metric}
            s = ev.summary(which, idx)
            line = [f"{which:15s} {metric}: all {s.median_factor:.2f} (ratio {s.median_ratio:.2f}, n {s.n})"]
            engines = sorted({f["engine"] for f in ev.facets if f["metric"] == metric})
            for e in engines:
                g = ev.summary(which, idx | {"engine": e})
                line.append(f"{e} {g.median_factor:.2f} (ratio {g.median_ratio:.2f}, n {g.n})")
            print("; ".join(line))
            groups = []
            for k in ("model", "gpu", "engine"):
                for v in sorted({f[k] for f in ev.facets if f["metric"] == metric}):
                    g = ev.summary(which, idx | {k: v})
                    if g.n >= 20:
                        groups.append((g.median_factor, k, v, g.n, g.median_ratio))
            groups.sort(reverse=True)
            print(
                "   worst groups >= 20 rows: "
                + "; ".join(f"{k} {v} {f:.2f} (ratio {r:.2f}, n {n})" for f, k, v, n, r in groups[:5])
            )


if __name__ == "__main__":
    main()
