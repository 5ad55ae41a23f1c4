"""Print the project's performance figures (a benchmark, not a test: it asserts nothing).

    .venv/bin/python scripts/benchmark.py [--skip-build] [--skip-tests] [--only-measured | --only-speed]

Figures: `import llmcourse` beside `import sympy, pint` (fresh interpreters, median of 5);
`plan()` and `replica()` call time (median and p95 of a few hundred calls of a typical call, after a warm-up);
calculator update time (median and p95 of recomputing each calculator after one input change);
book build time from clean and from the execution cache; test time (`scripts/test.sh`).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


def _fresh_import(stmt: str, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        code = f"import time; t = time.perf_counter(); {stmt}; print(time.perf_counter() - t)"
        out = subprocess.run([PY, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
        times.append(float(out.stdout.strip()))
    return statistics.median(times)


def _calculators() -> list[tuple[str, object]]:
    """Every zero-argument factory in llmcourse.widgets.* whose name ends in _calculator."""
    import llmcourse.widgets as pkg

    found = []
    for info in pkgutil.iter_modules(pkg.__path__):
        mod = importlib.import_module(f"llmcourse.widgets.{info.name}")
        for name in dir(mod):
            if name.endswith("_calculator") and callable(getattr(mod, name)):
                try:
                    found.append((f"{info.name}.{name}", getattr(mod, name)()))
                except TypeError:
                    continue
    return found


def _update_times(calc: object, n: int = 50) -> list[float]:
    """Time calc.update() after toggling the first numeric control up and down."""
    controls = calc.controls  # type: ignore[attr-defined]
    key = next(
        (k for k, c in controls.items() if isinstance(c.value, int | float) and not isinstance(c.value, bool)), None
    )
    times = []
    for i in range(n):
        t = time.perf_counter()
        if key is None:
            calc.update()  # type: ignore[attr-defined]
        else:
            v = controls[key].value
            calc.set(**{key: v + (1 if i % 2 == 0 else -1) * (1 if isinstance(v, int) else 0.01)})  # type: ignore[attr-defined]
        times.append(time.perf_counter() - t)
    return times


def _percentiles(times: list[float]) -> tuple[float, float]:
    """(median, p95) of times in seconds, in ms."""
    ts = sorted(t * 1e3 for t in times)
    return statistics.median(ts), ts[int(0.95 * (len(ts) - 1))]


def _call_times(fn: object, n: int = 400, warm: int = 50) -> list[float]:
    """Time n calls of fn() after warm calls (the first calls fill the catalog's and layout's caches)."""
    for _ in range(warm):
        fn()  # type: ignore[operator]
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t)
    return times


def _planner_calls() -> list[tuple[str, object]]:
    """A typical plan() (the design-review chapter's brief) and replica() (one chat replica)."""
    from llmcourse.planner import Brief, plan, replica
    from llmcourse.units import Q_

    brief = Brief(20, 4_000, 400, Q_(1_000, "ms"), Q_(40, "ms"))
    return [
        (
            'plan("Llama-3.1-70B", "H100 SXM", tp 2, fp8)',
            lambda: plan("Llama-3.1-70B", "H100 SXM", brief, tensor_parallel=2, weight_bytes="fp8"),
        ),
        (
            'replica("Llama-3.1-8B", "H100 SXM", batch 32)',
            lambda: replica("Llama-3.1-8B", "H100 SXM", batch=32, prompt_tokens=2_000, answer_tokens=300),
        ),
    ]


def _speed() -> None:
    """plan()/replica() and every calculator's update time."""
    print("planner call time (ms, 400 calls each after 50 warm-up calls):")
    for name, fn in _planner_calls():
        med, p95 = _percentiles(_call_times(fn))
        print(f"  {name:45s} median {med:7.2f}  p95 {p95:7.2f}")
    print("calculator update time (ms, 50 updates each):")
    for name, calc in _calculators():
        med, p95 = _percentiles(_update_times(calc))
        print(f"  {name:45s} median {med:7.2f}  p95 {p95:7.2f}")


def _timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def _measured() -> None:
    """Load the shipped measured rows, predict them, fit held out; print the times and the error tables."""
    import llmcourse.validation as lcv

    t = time.perf_counter()
    got = lcv.load_measurements(lcv.AICONFIGURATOR)
    load_s = time.perf_counter() - t
    ev = lcv.evidence(got)
    print(
        f"measured rows: load {load_s:.1f} s ({len(got.rows):,} measurements, {len(got.skipped):,} rows skipped); "
        f"predict {ev.seconds['components']:.1f} s ({ev.seconds['configurations']:.0f} replica configurations); "
        f"fits {ev.seconds['fits']:.1f} s; {len(ev.not_predicted):,} measurements not predicted"
    )
    for reason, n in got.reasons().items():
        print(f"  skipped {n:5,}: {reason}")
    print(f"  fitted on all rows: {ev.fitted}")
    for kind, fits in ev.fold_fits.items():
        print(f"  held out by {kind}: " + "; ".join(f"{g} {tuple(f.values())}" for g, f in fits.items()))
    for which in ("predicted", "calibrated", "held_out_model", "held_out_gpu", "held_out_engine"):
        for metric in ("tpot_ms", "ttft_ms"):
            idx = {"metric": metric}
            s = ev.summary(which, idx)
            groups = [
                (k, v, ev.summary(which, idx | {k: v})) for k in ("model", "gpu", "engine") for v in
                {f[k] for f in ev.facets if f["metric"] == metric}
            ]  # fmt: skip
            # the worst group of at least 30 rows (a group of one row says nothing about a family)
            worst = max((g for g in groups if g[2].n >= 30), key=lambda x: x[2].median_factor)
            print(
                f"  {which:16s} {metric}: median measured/predicted {s.median_ratio:.2f}, median factor "
                f"{s.median_factor:.2f}, median APE {s.median_ape:.0%}, MAPE {s.mape:.0%}, within 2x {s.within_2x:.0%}"
                f"; worst group {worst[0]} {worst[1]} ({worst[2].median_factor:.2f}, {worst[2].n} rows)"
            )
    print(ev.markdown("predicted"))
    print(ev.markdown("held_out_model", by=("metric", "model", "gpu", "engine")))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--skip-tests", action="store_true")
    ap.add_argument("--only-measured", action="store_true", help="print only the measured-rows section")
    ap.add_argument("--only-speed", action="store_true", help="print only the plan() and calculator times")
    args = ap.parse_args()
    if args.only_measured:
        _measured()
        return
    if args.only_speed:
        _speed()
        return
    _measured()

    print(f"import sympy, pint : {_fresh_import('import sympy, pint'):.2f} s (median of 5 fresh interpreters)")
    print(f"import llmcourse   : {_fresh_import('import llmcourse'):.2f} s")

    _speed()

    if not args.skip_build:
        for d in ("html", ".jupyter_cache", ".doctrees", "jupyter_execute"):  # keep _build/lite (make lite)
            shutil.rmtree(ROOT / "_build" / d, ignore_errors=True)
        book = [str(Path(PY).parent / "jupyter-book"), "build", ".", "-W", "--keep-going"]
        print(f"book build, clean  : {_timed(book):.1f} s")
        print(f"book build, cached : {_timed(book):.1f} s")
    if not args.skip_tests:
        print(f"test time (scripts/test.sh): {_timed(['bash', 'scripts/test.sh']):.1f} s")


if __name__ == "__main__":
    main()
