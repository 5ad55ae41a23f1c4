"""Dump what every calculator shows (rows, error, the HTML of every HTML widget in its display) after a fixed
sequence of control changes, or compare a dump with what the code shows now (a check, not a test).

    PYTHONPATH=<tree> .venv/bin/python scripts/check_calcs.py dump /tmp/calcs-before.pkl
    PYTHONPATH=<tree> .venv/bin/python scripts/check_calcs.py compare /tmp/calcs-before.pkl

Each calculator (every zero-argument ``*_calculator`` factory of ``llmcourse.widgets.*``, as
``scripts/benchmark.py`` finds them) is driven through: each control set to a few values in turn (the options
of a dropdown, a step up and down and twice and half a number, a toggled box), then a seeded random walk of
changes; after each change the rows, the error and every HTML value in the widget tree are kept, and compared
exactly.
"""

from __future__ import annotations

import pickle
import random
import re
import sys
import time
from typing import Any

import ipywidgets as w
from benchmark import calculators  # the same calculators the benchmark times (scripts/ is on the path)

import llmcourse

WALK = 40  # random changes per calculator after the one-control-at-a-time pass
SLOW = {"queueing", "speculative_twin"}  # simulations: a shorter walk


def candidates(c: Any) -> list[Any]:
    v = c.value
    if isinstance(c, w.Checkbox) or isinstance(v, bool):
        return [not v, v]
    if hasattr(c, "options") and c.options is not None and not isinstance(c, w.Textarea):
        opts = [o[1] if isinstance(o, tuple) else o for o in c.options]
        step = max(1, len(opts) // 6)
        return [*opts[::step], v]
    if isinstance(v, int):
        return [v + 1, v - 1, v * 2, max(v // 2, 0), 0, v]
    if isinstance(v, float):
        return [v + 0.05, v - 0.05, v * 2, v / 2, 0.0, v]
    if isinstance(v, str):
        return [v[: len(v) // 2], v + "\n" + v.splitlines()[-1] if v else "x", "", "no table here", v]
    return [v]


def html_values(widget: Any, out: list[str]) -> list[str]:
    if isinstance(widget, w.HTML | w.HTMLMath):
        out.append(widget.value)
    if isinstance(widget, w.Output):
        out.append(repr(widget.outputs))
    for child in getattr(widget, "children", ()):
        html_values(child, out)
    return out


WALL = re.compile(r"(\(wall time\)(?:</th><td>|', '))([\d,]+) \([\d.,]+ m?s\)")


def shown(calc: Any) -> str:
    """What the calculator shows, with the simulators' own wall time masked (it differs run to run)."""
    return WALL.sub(r"\1\2 (wall time masked)", repr((calc.error, list(calc.rows), html_values(calc.widget, []))))


def drive(name: str, calc: Any) -> list[tuple]:
    got = [("start", shown(calc))]
    controls = calc.controls
    for key, c in controls.items():
        for v in candidates(c):
            try:
                calc.set(**{key: v})
            except Exception as exc:  # a widget refusing a value (bounds) is part of what is shown
                got.append((f"{key}={v!r}", ("RAISED", type(exc).__name__, str(exc))))
                continue
            got.append((f"{key}={v!r}", shown(calc)))
    rng = random.Random(name)
    keys = list(controls)
    for _ in range(WALK // 4 if name.split(".")[0] in SLOW or "twin" in name else WALK):
        key = rng.choice(keys)
        v = rng.choice([x for x in candidates(controls[key]) if x not in (0, "", "no table here")] or [None])
        if v is None:
            continue
        try:
            calc.set(**{key: v})
        except Exception as exc:
            got.append((f"walk {key}={v!r}", ("RAISED", type(exc).__name__, str(exc))))
            continue
        got.append((f"walk {key}={v!r}", shown(calc)))
    return got


def main() -> None:
    print("llmcourse from", llmcourse.__file__)
    mode, path = sys.argv[1], sys.argv[2]
    now = {}
    for name, calc in calculators():
        t = time.perf_counter()
        now[name] = drive(name, calc)
        print(f"  {name:45s} {len(now[name]):4d} states in {time.perf_counter() - t:.1f} s")
    if mode == "dump":
        with open(path, "wb") as fh:
            pickle.dump(now, fh)
        print("dumped", path)
        return
    with open(path, "rb") as fh:
        before = pickle.load(fh)
    diffs = []
    if set(before) != set(now):
        diffs.append(f"calculators: {sorted(set(before) ^ set(now))}")
    states = 0
    for name in before:
        a, b = before[name], now.get(name, [])
        states += len(a)
        if len(a) != len(b):
            diffs.append(f"{name}: {len(a)} states before, {len(b)} now")
        for x, y in zip(a, b, strict=False):
            if x != y:
                diffs.append(f"{name} after {x[0]}: {x[1]!r:.300} != {y[1]!r:.300}")
    print(f"compared {states} states of {len(before)} calculators: {len(diffs)} differences")
    for d in diffs[:30]:
        print("  ", d)
    by_calculator: dict[str, int] = {}
    for d in diffs:
        name = d.split(" ", 1)[0].rstrip(":")
        by_calculator[name] = by_calculator.get(name, 0) + 1
    for name, n in sorted(by_calculator.items()):
        print(f"   {name}: {n} differences")
    sys.exit(1 if diffs else 0)


if __name__ == "__main__":
    main()
