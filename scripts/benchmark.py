"""Print the project's performance figures (a benchmark, not a test: it asserts nothing).

    .venv/bin/python scripts/benchmark.py [--skip-build] [--skip-tests] [--only-measured | --only-speed]

Figures: `import llmcourse` beside `import sympy, pint` (fresh interpreters, median of 5);
`plan()` and `replica()` call time (median and p95 of a few hundred calls of a typical call, after a warm-up);
calculator update time (median and p95 of the successful updates of each calculator, each setting one load or
length control to a new valid value: UPDATES);
book build time from clean and from the execution cache; test time (`scripts/test.sh`).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import math
import pkgutil
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
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


def calculators() -> list[tuple[str, object]]:
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


#: Per calculator, the control each update changes and its value at the i-th update: a load or length control (not
#: the first numeric control, which for several calculators is the GPUs-per-replica slider, where the next value is
#: usually an error whose fast error path would flatter the figure), a new valid value at every update (so that
#: no update finds its inputs in a calculator's cache; the own benchmark's cached fit of its rows aside, see NOTES).
UPDATES: dict[str, tuple[str, Callable[[int], object]]] = {
    "batching.batching_calculator": ("batch", lambda i: 1 + i),
    "bill.bill_calculator": ("batch", lambda i: 16 + i),
    "decode.decode_calculator": ("batch", lambda i: 1 + i),
    "design_review.design_review_calculator": ("requests_per_second", lambda i: 10.0 + 0.5 * i),
    "disagg.disagg_calculator": ("requests_per_second", lambda i: 10.0 + 0.5 * i),
    "first_estimate.serving_plan_calculator": ("prompt", lambda i: 1_000 + 50 * i),
    "fleet.fleet_calculator": ("demand", lambda i: 100_000 + 1_000 * i),
    "gqa.gqa_calculator": ("context", lambda i: 8_192 + 512 * i),
    "kv_cache.kv_calculator": ("context", lambda i: 1_024 + 128 * i),
    "many_gpus.many_gpus_calculator": ("batch", lambda i: 1 + i),
    "own_machine.own_machine_calculator": ("context", lambda i: 4_096 + 128 * i),
    "moe.moe_calculator": ("context", lambda i: 1_024 + 128 * i),  # the routing simulation runs at every update
    "prefill.prefill_calculator": ("prompt_tokens", lambda i: 1_024 + 64 * i),
    "queueing.queueing_calculator": ("load", lambda i: 0.5 + 0.008 * i),
    "speculative.speculative_calculator": ("batch", lambda i: 1 + i),
    "speculative.speculative_twin_calculator": ("acceptance", lambda i: 0.5 + 0.008 * i),
    "tokens.answer_time_calculator": ("characters", lambda i: 2_000 + 100 * i),
    "tokens.traffic_calculator": ("requests_per_day", lambda i: 100_000 + 5_000 * i),
    "validation.calibration_calculator": ("bandwidth_efficiency", lambda i: 0.5 + 0.005 * i),
    "validation.own_benchmark_calculator": ("requests_per_second", lambda i: 5 + i),
    "weights.weights_calculator": ("usable_fraction", lambda i: 0.8 + 0.002 * i),
}
#: Calculators that simulate (a queue of requests, the speculative cycle's draws, the routing of tokens to
#: experts): their update time is the simulation's, aside from the 2 ms goal.
SIMULATIONS = {"queueing.queueing_calculator", "speculative.speculative_twin_calculator", "moe.moe_calculator"}
#: What an update of these does not redo, said beside their figure: the own-benchmark calculator refits the pasted
#: rows only when the text changes (a change of the brief re-plans only).
NOTES = {"validation.own_benchmark_calculator": "the pasted rows unchanged: their fit is cached, the fleet re-planned"}


def _update_control(name: str, calc: object) -> tuple[str | None, Callable[[int], object]]:
    """The control an update changes and its value at the i-th update (UPDATES; else the first numeric control,
    stepped up and down)."""
    if name in UPDATES:
        return UPDATES[name]
    controls = calc.controls  # type: ignore[attr-defined]
    key = next(
        (k for k, c in controls.items() if isinstance(c.value, int | float) and not isinstance(c.value, bool)), None
    )
    if key is None:
        return None, lambda i: None
    v = controls[key].value
    return key, lambda i: v + (i % 2) * (1 if isinstance(v, int) else 0.01)


def _update_times(name: str, calc: object, n: int = 50) -> tuple[str, list[float], int]:
    """(what changes, times of the successful updates, number of updates that were input errors) of n updates,
    the i-th setting the calculator's update control (:func:`_update_control`) to its i-th value."""
    key, value = _update_control(name, calc)
    times, errors = [], 0
    for i in range(n):
        t = time.perf_counter()
        if key is None:
            calc.update()  # type: ignore[attr-defined]
        else:
            calc.set(**{key: value(i)})  # type: ignore[attr-defined]
        dt = time.perf_counter() - t
        if calc.error:  # type: ignore[attr-defined]
            errors += 1
        else:
            times.append(dt)
    shown = lambda v: f"{v:,}" if isinstance(v, int) else f"{v:,.4g}"  # noqa: E731
    what = "update()" if key is None else f"{key} {shown(value(0))} .. {shown(value(n - 1))}"
    return what, times, errors


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
    """A typical plan() (the design-review chapter's brief): with a new prompt length at each call, so that no
    call finds its replica's set-up kept (llmcourse.replica.setups keeps 256; the calls cycle through 1,000 lengths), and
    the same plan again (its set-up kept, as a calculator's update finds it when its control is not a length);
    and replica() (one chat replica)."""
    from llmcourse.planner.design import Brief, plan
    from llmcourse.replica.model import replica
    from llmcourse.units import Q_

    brief = Brief(20, 4_000, 400, Q_(1_000, "ms"), Q_(40, "ms"))
    calls = iter(range(10**9))

    def new_prompt() -> object:
        b = Brief(20, 3_500 + next(calls) % 1_000, 400, brief.ttft_target, brief.tpot_target)  # no unit to parse
        return plan("Llama-3.1-70B", "H100 SXM", b, tensor_parallel=2, weight_bytes="fp8")

    return [
        ('plan("Llama-3.1-70B", "H100 SXM", tp 2, fp8), a new prompt', new_prompt),
        (
            'plan("Llama-3.1-70B", "H100 SXM", tp 2, fp8), the same',
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
    print("calculator update time (ms, 50 updates each, successful updates only; the control each one changes):")
    for name, calc in calculators():
        key, times, errors = _update_times(name, calc)
        med, p95 = _percentiles(times) if times else (math.nan, math.nan)
        shown = f"median {med:7.2f}  p95 {p95:7.2f}" if times else "no successful update"
        note = f"; {errors} of 50 updates were input errors, left out" if errors else ""
        note += "; a simulation" if name in SIMULATIONS else ""
        note += f"; {NOTES[name]}" if name in NOTES else ""
        print(f"  {name:45s} {shown}  ({key}{note})")


def _control_values(control: object, n: int = 40) -> list[object] | None:
    """n values a reader might give ``control`` in turn: a slider dragged a step at a time from its value (up, and
    down past it where the top is near), a number box typed in steps of 5% of its value, a dropdown's options in
    turn (each asked again later, as a reader going back and forth); None for a control of another kind."""
    v = getattr(control, "value", None)
    options = getattr(control, "options", None)
    if options is not None:
        opts = [o[1] if isinstance(o, tuple) else o for o in options]
        return [opts[i % len(opts)] for i in range(1, n + 1)]
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    step = getattr(control, "step", None)
    if step is None or not hasattr(control, "max"):  # a number box: 5% steps, at least 1 for a whole number
        step = max(abs(v) * 0.05, 1 if isinstance(v, int) else 1e-9)
    lo, hi = getattr(control, "min", -math.inf), getattr(control, "max", math.inf)
    vals, x, sign = [], v, 1
    for _ in range(n):
        if not lo <= x + sign * step <= hi:
            sign = -sign
        x = x + sign * step
        vals.append(round(x) if isinstance(v, int) else x)
    return vals


class _Collections:
    """The time CPython's cyclic garbage collector spends in collections of its older generations (1 and 2) while
    it is on: the pauses that land in whichever update allocates past a threshold, whatever that update does."""

    def __init__(self) -> None:
        self.ms, self._t = 0.0, 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if info["generation"] == 0:
            return
        if phase == "start":
            self._t = time.perf_counter()
        else:
            self.ms += (time.perf_counter() - self._t) * 1e3

    def __enter__(self) -> _Collections:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)


def _every_control(calc: object) -> list[tuple[str, float, float, int, int, int, float]]:
    """(control, median ms, p95 ms, successful updates, input errors, updates that ran an older generation's
    collection, the most one of them spent in it) of 40 updates of each control (:func:`_control_values`), the others
    at their values; the control set back after."""
    out = []
    for key, control in calc.controls.items():  # type: ignore[attr-defined]
        vals = _control_values(control)
        if vals is None:
            continue
        before, times, errors, collected = control.value, [], 0, []
        try:
            for x in vals:
                with _Collections() as gcs:
                    t = time.perf_counter()
                    calc.set(**{key: x})  # type: ignore[attr-defined]
                    dt = time.perf_counter() - t
                if calc.error:  # type: ignore[attr-defined]
                    errors += 1
                else:
                    times.append(dt)
                    if gcs.ms:
                        collected.append(gcs.ms)
        finally:
            calc.set(**{key: before})  # type: ignore[attr-defined]
        if times:
            out.append((key, *_percentiles(times), len(times), errors, len(collected), max(collected, default=0.0)))
    return out


def _controls() -> None:
    """Every calculator's update time for each of its controls; the slowest control's figures first."""
    print(
        "calculator update time for every numeric control and dropdown (ms, 40 updates per control: a slider dragged "
        "step by step, a number box in 5% steps, a dropdown's options in turn; successful updates only; check boxes "
        "and text areas not changed). Slowest control by p95:"
    )
    for name, calc in calculators():
        if name in SIMULATIONS:
            continue
        got = sorted(_every_control(calc), key=lambda r: -r[2])
        if not got:
            continue
        key, med, p95, ok, errors, collections, gc_ms = got[0]
        over = [r[0] for r in got if r[2] > 2.0]
        note = f"; {ok} successful updates" + (f", {errors} input errors left out" if errors else "")
        note += f"; p95 over 2 ms: {', '.join(over)}" if over else "; every control's p95 within 2 ms"
        if collections:
            note += f"; {collections} of its updates ran an older-generation collection, up to {gc_ms:.1f} ms"
        print(f"  {name:45s} {key:20s} median {med:7.2f}  p95 {p95:7.2f}  ({len(got)} controls{note})")


def _timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def _llama_cpp() -> None:
    """llama.cpp's kernels on the public llama-bench rows: the fit on every row, each machine held out, and the
    datacenter factors' error on the same rows (llmcourse.validation.llama_cpp)."""
    from llmcourse.validation import llama_cpp as llc
    from llmcourse.validation.fit import error_stats

    t = time.perf_counter()
    rows = llc.public_rows()
    fit = llc.fit_llama_cpp(rows)
    held = llc.held_out(rows)
    print(
        f"llama.cpp public rows: {len(rows)} from {len({r.source for r in rows})} sources, "
        f"{len({r.gpu for r in rows})} machines, GGUF types {', '.join(sorted({r.gguf for r in rows}))} "
        f"({time.perf_counter() - t:.1f} s)"
    )
    print(
        f"  fitted on every row: decode {fit.bandwidth_efficiency:.2f} of the bandwidth (8/16-bit), "
        f"{fit.four_bit_share:.2f} (4-bit), {fit.step_overhead_ms:g} ms a token; prompt processing "
        f"{fit.compute_efficiency:.2f} of the FLOP/s"
    )
    for kind, h in held.items():
        before = [r for r in rows if r.kind == kind]
        b = error_stats([llc.predicted(r, llc.general()) for r in before], [r.tokens_per_s for r in before],
                        [r.id for r in before])  # fmt: skip
        print(
            f"  {kind:8s} held out by machine ({h.machines} folds, {h.stats.n} rows): median factor "
            f"{h.stats.median_factor:.2f}, within 2x {h.stats.within_2x:.0%}, worst {h.stats.worst_id} "
            f"({h.stats.worst_factor:.2f}); 80% band {h.band[0]:.2f}-{h.band[1]:.2f} x predicted, held-out coverage "
            f"{h.coverage:.0%}; at the datacenter factors: median factor {b.median_factor:.2f}, within 2x "
            f"{b.within_2x:.0%}"
        )


def _vendors() -> None:
    """The published AMD and Intel rows (llmcourse.validation.vendors): per vendor the course's error, each group held
    out with a vendor factor, and each group's median measured / predicted (below 1: the model is too fast)."""
    import statistics

    from llmcourse.validation import vendors as vd

    t = time.perf_counter()
    rows = vd.vendor_rows()
    held = vd.vendor_held_out(rows)
    print(f"vendor rows: {len(rows)} ({time.perf_counter() - t:.1f} s)")
    for v, h in held.items():
        print(
            f"  {v:6s} {', '.join(h.gpus)}: {h.raw.n} rows, {h.groups} groups; median factor {h.raw.median_factor:.2f}, "
            f"within 2x {h.raw.within_2x:.0%}, median measured / predicted {h.median_ratio:.2f}; held out by group "
            f"with a vendor factor: median factor {h.held.stats.median_factor:.2f}, within 2x "
            f"{h.held.stats.within_2x:.0%}, 80% band coverage {h.held.coverage:.0%}"
        )
        for g in dict.fromkeys(r.group for r in rows if r.id in h.ratios):
            mine = [h.ratios[r.id] for r in rows if r.group == g and r.id in h.ratios]
            print(f"      {g}: {len(mine)} rows, measured / predicted {statistics.median(mine):.2f} "
                  f"({min(mine):.2f} to {max(mine):.2f})")  # fmt: skip


def _measured() -> None:
    """Load the shipped measured rows, predict them, fit held out; print the times and the error tables."""
    import llmcourse.validation as lcv

    _llama_cpp()
    _vendors()

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
    print("  not predicted, by reason (every other row counts in every statistic):")
    for reason, n in lcv.not_predicted_reasons(ev).items():
        print(f"    {n:5,}: {reason}")
    for which in ("predicted", "calibrated", *(f"held_out_{k}" for k in ev.held_out)):
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
    _groups(lcv, ev)


def _groups(lcv: object, ev: object) -> None:
    """Leave one (model, GPU, engine) group out: the median factors overall and per group of 20+ rows, the bands'
    coverage per metric (pooled and by fold), and the client models' held-out errors (the targets of issue 34)."""
    t = time.perf_counter()
    cov = lcv.coverage(ev)
    cov_s = time.perf_counter() - t
    n_groups = len(lcv.folds(ev.facets, "group"))
    print(f"leave one (model, GPU, engine) group out: {n_groups} folds (warm-started from the fit on every row)")
    for metric in ("tpot_ms", "ttft_ms"):
        s = ev.summary("held_out_group", {"metric": metric})
        rows = lcv.tables.groups_table(ev, metric)
        worst = rows[0] if rows else ["-", "0", "-", "-"]
        print(
            f"  {metric}: median factor {s.median_factor:.3f} over {s.n:,} rows; {len(rows)} groups of 20+ rows, "
            f"worst {worst[0]} ({worst[3]}, {worst[1]} rows)"
        )
    for metric, c in cov.items():
        lo, q1, med, q3, hi = c.spread()
        print(
            f"  coverage of the 80% band, {metric}: {c.share:.1%} of {c.rows:,} held-out rows, "
            f"{c.fold_mean():.1%} group-weighted (mean of the {len(c.fold_shares())} folds' shares); folds of 20+ rows "
            f"{lo:.0%} / {q1:.0%} / {med:.0%} / {q3:.0%} / {hi:.0%} (least / quartiles / most) ({cov_s:.1f} s)"
        )
    for metric in ("tpot_ms", "ttft_ms"):
        print(lcv.tables.groups_markdown(ev, metric))
    t = time.perf_counter()
    alts = lcv.client_alternatives(base=ev)
    print(f"client models, held out by group ({time.perf_counter() - t:.1f} s):")
    print(lcv.tables.client_markdown(alts))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--skip-tests", action="store_true")
    ap.add_argument("--only-measured", action="store_true", help="print only the measured-rows section")
    ap.add_argument("--only-speed", action="store_true", help="print only the plan() and calculator times")
    ap.add_argument("--controls", action="store_true", help="with --only-speed: also every control's update time")
    args = ap.parse_args()
    if args.only_measured:
        _measured()
        return
    if args.only_speed:
        _speed()
        if args.controls:
            _controls()
        return
    _measured()

    print(f"import sympy, pint : {_fresh_import('import sympy, pint'):.2f} s (median of 5 fresh interpreters)")
    print(f"import llmcourse   : {_fresh_import('import llmcourse'):.2f} s")

    _speed()
    _controls()

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
