"""Dump every field of replica() / plan() / serving_plan() / decode_step() / prefill() / validation predictions
and of the disaggregated pools (disaggregated(), compare()), the lever ranking and design review, the many-GPU
figures and the whole bill (:func:`pool_cases`) for a fixed grid of configurations, or compare a dump with the code's results now (a check, not a test).

    PYTHONPATH=<tree> .venv/bin/python scripts/check_same.py dump /tmp/before.pkl
    PYTHONPATH=<tree> .venv/bin/python scripts/check_same.py compare /tmp/before.pkl

Every quantity is kept as (magnitude, type of the magnitude, units); every error as (type, message);
floats compare to a relative 1e-12, everything else exactly.
"""

from __future__ import annotations

import dataclasses
import math
import pickle
import random
import sys
import time
from typing import Any

import pint

import llmcourse
from llmcourse.catalog import GPU, Model
from llmcourse.replica.speculative import Speculation
from llmcourse.units import Q_

REL = 1e-12


def dump(x: Any, depth: int = 0) -> Any:
    if depth > 8:
        return ("DEEP",)
    if isinstance(x, pint.Quantity):
        return ("Q", type(x.magnitude).__name__, x.magnitude, str(x.units))
    if isinstance(x, Model | GPU):
        return (type(x).__name__, x.name)
    if isinstance(x, bool | int | float | str | type(None)):
        return x
    if isinstance(x, list | tuple):
        return (type(x).__name__, [dump(v, depth + 1) for v in x])
    if isinstance(x, dict):
        return ("dict", {k: dump(v, depth + 1) for k, v in x.items()})
    if dataclasses.is_dataclass(x):
        out = {f.name: dump(getattr(x, f.name), depth + 1) for f in dataclasses.fields(x)}
        for name in dir(type(x)):
            if name.startswith("_") or not isinstance(getattr(type(x), name, None), property):
                continue
            try:
                out["@" + name] = dump(getattr(x, name), depth + 1)
            except Exception as exc:
                out["@" + name] = ("ERR", type(exc).__name__, str(exc))
        if hasattr(x, "rows") and callable(x.rows):
            try:
                out["rows()"] = dump(x.rows(), depth + 1)
            except Exception as exc:
                out["rows()"] = ("ERR", type(exc).__name__, str(exc))
        if type(x).__name__ in ("Plan", "ServingPlan"):
            out["str()"] = str(x)
        return (type(x).__name__, out)
    return ("REPR", repr(x))


def run(fn: Any, *args: Any, **kw: Any) -> Any:
    try:
        return dump(fn(*args, **kw))
    except Exception as exc:
        return ("ERR", type(exc).__name__, str(exc))


MODELS = [
    "Llama-3.1-8B", "Llama-3.1-70B", "Qwen2.5-72B", "Qwen3-30B-A3B", "DeepSeek-V3", "gpt-oss-120b",
    "Mixtral-8x7B", "Llama-3.1-405B", "gpt-oss-20b", "Mistral-7B-v0.1",
]  # fmt: skip
GPUS = ["H100 SXM", "A100 SXM 80GB", "B200", "L4", "MI300X", "H200 SXM", "GB200"]
PRECISIONS = [(2, 2), ("fp8", "fp8"), ("int4", 2), ("fp4", "fp8"), ("fp8", 2), (Q_(1, "B"), 1)]
PRESETS = ["course", "envelope", "lab", "capacity", "planner"]
LENGTHS = [(2_000, 300), (500, 1_500), (8_000, 200), (100, 100)]
TPS = [1, 2, 4, 8, 16]
BATCHES = [None, 1, 7, 64]


def speculations() -> list[Any]:
    return [None, Speculation("ngram", 4, 0.7), Speculation("eagle head", 3, 0.6)]


def cases() -> list[tuple[str, tuple, dict]]:
    rng = random.Random(18)
    out: list[tuple[str, tuple, dict]] = []
    specs = speculations()
    # replica: a random sample of the full grid, plus the many-GPU shapes
    for _ in range(700):
        m, g = rng.choice(MODELS), rng.choice(GPUS)
        (wb, kb), (p, a) = rng.choice(PRECISIONS), rng.choice(LENGTHS)
        kw = dict(
            tensor_parallel=rng.choice(TPS), batch=rng.choice(BATCHES), prompt_tokens=p, answer_tokens=a,
            weight_bytes=wb, kv_bytes=kb, assumptions=rng.choice(PRESETS),
        )  # fmt: skip
        if rng.random() < 0.2:
            kw["speculation"] = rng.choice(specs[1:])
        elif rng.random() < 0.3:
            shape = rng.choice(
                [
                    dict(pipeline_parallel=2),
                    dict(data_parallel=2),
                    dict(data_parallel=4, tensor_parallel=2),
                    dict(link="InfiniBand NDR"),
                    dict(pipeline_parallel=4, link="NVLink 5 NVL72"),
                    dict(expert_parallel=2),
                    dict(link="PCIe 5 x16", tensor_parallel=4),
                ]
            )
            kw.update(shape)
        if rng.random() < 0.1:
            kw["cached_prompt_tokens"] = p // 2
        if rng.random() < 0.1:
            kw["bandwidth_efficiency"] = 0.55
            kw["compute_efficiency"] = 0.45
        if rng.random() < 0.05:
            kw.pop("prompt_tokens"), kw.pop("answer_tokens")
            kw["context_tokens"] = p + a
        out.append(("replica", (m, g), kw))
    # plan
    for _ in range(250):
        m, g = rng.choice(MODELS), rng.choice(GPUS)
        (wb, kb), (p, a) = rng.choice(PRECISIONS), rng.choice(LENGTHS)
        brief = llmcourse.Brief(rng.choice([1, 10, 200]), p, a, Q_(rng.choice([0.3, 1, 3]), "s"),
                              Q_(rng.choice([20, 50, 120]), "ms"))  # fmt: skip
        kw = dict(
            weight_bytes=wb, kv_bytes=kb, tensor_parallel=rng.choice(TPS), assumptions=rng.choice(PRESETS),
        )  # fmt: skip
        if rng.random() < 0.15:
            kw["speculation"] = rng.choice(specs[1:])
        if rng.random() < 0.1:
            kw["headroom"] = 1.5
            kw["memory_reserve"] = 0.2
        if rng.random() < 0.1:
            kw["cached_prompt_tokens"] = p // 4
        out.append(("plan", (m, g, brief), kw))
    # serving_plan
    for _ in range(120):
        m, g = rng.choice(MODELS), rng.choice(GPUS)
        (wb, kb), (p, a) = rng.choice(PRECISIONS), rng.choice(LENGTHS)
        kw = dict(weight_bytes=wb, kv_bytes=kb, assumptions=rng.choice(PRESETS))
        if rng.random() < 0.7:
            kw["prompt_tokens"] = p
        out.append(("serving_plan", (m, g, rng.choice(TPS), p + a), kw))
    # decode_step / prefill directly
    for _ in range(120):
        m, g = rng.choice(MODELS), rng.choice(GPUS)
        (wb, kb), (p, a) = rng.choice(PRECISIONS), rng.choice(LENGTHS)
        tp = rng.choice(TPS)
        pre = rng.choice(PRESETS)
        out.append(("decode_step", (m, g), dict(batch=rng.choice([1, 5, 64]), context_tokens=p + a, n_gpus=tp,
                                               weight_bytes=wb, kv_bytes=kb, assumptions=pre)))  # fmt: skip
        out.append(("prefill", (m, g, p), dict(prompts=rng.choice([1, 8]), n_gpus=tp, weight_bytes=wb,
                                              assumptions=pre)))  # fmt: skip
    # a few bad inputs: their errors must not change
    bad = [
        ("replica", ("Llama-3.1-8B", "H100 SXM"), dict(tensor_parallel=3, prompt_tokens=10, answer_tokens=10)),
        ("replica", ("Llama-3.1-8B", "H100 SXM"), dict(batch=1.5, prompt_tokens=10, answer_tokens=10)),
        ("replica", ("Llama-3.1-8B", "H100 SXM"), dict(prompt_tokens=-1, answer_tokens=10)),
        ("replica", ("Llama-3.1-8B", "H100 SXM"), dict(prompt_tokens=10, answer_tokens=10, weight_bytes="fp9")),
        ("replica", ("Llama-3.1-8B", "H100 SXM"), dict(prompt_tokens=10, answer_tokens=10, price_per_hour=3)),
        ("replica", ("Llama-3.1-8B", "H100 SXM"), dict(prompt_tokens=10, answer_tokens=10, bogus=3)),
        ("replica", ("Llama-3.1-8B", "H100 SXM", 3), dict(prompt_tokens=10, answer_tokens=10)),
        ("replica", ("Llama-3.1-8B", "H100 SXM"), dict(prompt_tokens=200_000, answer_tokens=10)),
        ("replica", ("Llama-3.1-8B", "H100 SXM"), dict(context_tokens=2_000)),
        ("replica", ("Llama-3.1-8B", "H100 SXM"), dict(prompt_tokens=10, answer_tokens=10, tensor_parallel=True)),
        ("decode_step", ("Llama-3.1-8B", "H100 SXM"), dict(context_tokens=100, attention_flops="yes")),
        ("decode_step", ("Llama-3.1-8B", "H100 SXM", 3), dict(context_tokens=100)),
        ("prefill", ("Llama-3.1-8B", "H100 SXM", 100), dict(cached_tokens=100)),
        ("serving_plan", ("Llama-3.1-8B", "H100 SXM", 1, 100), dict(usable_fraction=1.5)),
        ("plan", ("Llama-3.1-8B", "H100 SXM", "brief"), {}),
    ]
    return out + bad + pool_cases()


#: Functions of other modules the grid calls (by the name its cases give), besides the planner's own.
OTHERS = {
    "disaggregated": ("llmcourse.planner.disagg", "disaggregated"),
    "compare": ("llmcourse.planner.disagg", "compare"),
    "rank_levers": ("llmcourse.planner.levers", "rank_levers"),
    "design_review": ("llmcourse.widgets.design_review", "design_review"),
    "many_gpus": ("llmcourse.widgets.many_gpus", "many_gpus"),
    "bill_of": ("check_same", "bill_of"),
}


def bill_of(model: str, gpu: str, rep_kw: tuple, **bill_kw: Any) -> Any:
    """``bill(replica(model, gpu, **dict(rep_kw)), **bill_kw)``: the whole bill of one replica (the site's figures
    given as a Site, the API's prices as a Cost row named "given", as the bill takes them)."""
    from llmcourse.planner.bill import Site, bill

    if "electricity_price" in bill_kw or "pue" in bill_kw:
        bill_kw["site"] = Site(electricity_price=bill_kw.pop("electricity_price", None), pue=bill_kw.pop("pue", None))
    if "api_price_per_million" in bill_kw:
        out, inp = bill_kw.pop("api_price_per_million"), bill_kw.pop("api_input_price_per_million", None)
        bill_kw["api"] = llmcourse.catalog.Cost("given", kind="api", value=out, input_value=inp)
    return bill(llmcourse.replica(model, gpu, **dict(rep_kw)), **bill_kw)


def pool_cases() -> list[tuple[str, tuple, dict]]:
    """The disaggregated pools (sized and given), their comparison with plan(), and the lever ranking: their own
    searches over the batch and the pool size; targets in ms and in s (the search's two paths)."""
    rng = random.Random(1818)
    out: list[tuple[str, tuple, dict]] = []
    dense = ["Llama-3.1-8B", "Llama-3.1-70B", "Qwen2.5-72B", "Mistral-7B-v0.1", "Llama-3.1-405B"]
    links_ = [None, "NVLink 4", "InfiniBand NDR", "PCIe 5 x16"]
    for _ in range(150):
        m, g = rng.choice(MODELS), rng.choice(GPUS)
        (wb, kb), (p, a) = rng.choice(PRECISIONS), rng.choice(LENGTHS)
        tpot = rng.choice([Q_(rng.choice([20, 40, 80]), "ms"), Q_(0.05, "s"), Q_(35.5, "ms")])
        brief = llmcourse.Brief(rng.choice([1, 5.5, 20, 150]), p, a, Q_(rng.choice([300, 600, 2_000]), "ms"), tpot)
        kw = dict(
            prefill_tensor_parallel=rng.choice(TPS[:4]), decode_tensor_parallel=rng.choice(TPS[:4]),
            link=rng.choice(links_), weight_bytes=wb, kv_bytes=kb, assumptions=rng.choice(PRESETS),
        )  # fmt: skip
        if rng.random() < 0.2:
            kw["prefill_gpus"] = kw["prefill_tensor_parallel"] * rng.choice([1, 3, 12])
        if rng.random() < 0.2:
            kw["decode_gpus"] = kw["decode_tensor_parallel"] * rng.choice([1, 2, 8])
        out.append(("disaggregated", (m, g, brief), kw))
    for _ in range(60):
        m, g = rng.choice(MODELS), rng.choice(GPUS)
        (wb, kb), (p, a) = rng.choice(PRECISIONS), rng.choice(LENGTHS)
        brief = llmcourse.Brief(
            rng.choice([2, 20]), p, a, Q_(rng.choice([0.6, 1]), "s"), Q_(rng.choice([30, 50]), "ms")
        )
        kw = dict(tensor_parallel=rng.choice(TPS[:4]), link=rng.choice(links_), weight_bytes=wb, kv_bytes=kb,
                  assumptions=rng.choice(PRESETS))  # fmt: skip
        out.append(("compare", (m, g, brief), kw))
    for _ in range(60):
        m, g = rng.choice(dense + MODELS), rng.choice(GPUS)
        (wb, kb), (p, a) = rng.choice(PRECISIONS), rng.choice(LENGTHS)
        brief = llmcourse.Brief(rng.choice([1, 10, 60]), p, a, Q_(rng.choice([0.5, 1, 3]), "s"),
                              Q_(rng.choice([25, 40, 100]), "ms"))  # fmt: skip
        kw = dict(weight_bytes=wb, kv_bytes=kb, tensor_parallel=rng.choice(TPS), assumptions=rng.choice(PRESETS),
                  hit_rate=rng.choice([0.3, 0.5, 0.8]), context_fraction=rng.choice([0.25, 0.5]))  # fmt: skip
        out.append(("rank_levers", (m, g, brief), kw))
        out.append(("design_review", (m, g, brief), kw))
    for _ in range(80):
        m, g = rng.choice(MODELS), rng.choice(GPUS)
        (wb, kb), (p, a) = rng.choice(PRECISIONS), rng.choice(LENGTHS)
        kw = dict(tensor_parallel=rng.choice(TPS[:4]), batch=rng.choice([1, 4, 32]), prompt_tokens=p,
                  answer_tokens=a, weight_bytes=rng.choice(["fp8", "bf16", "fp4"]), assumptions=rng.choice(PRESETS),
                  link=rng.choice([None, "PCIe 5 x16"]), expert_parallel=rng.choice([1, 2, 8]))  # fmt: skip
        out.append(("many_gpus", (m, g), kw))
    for _ in range(80):
        m, g = rng.choice(MODELS), rng.choice(GPUS)
        (wb, kb), (p, a) = rng.choice(PRECISIONS), rng.choice(LENGTHS)
        rep_kw = (("tensor_parallel", rng.choice(TPS[:4])), ("batch", rng.choice([4, 32, 100])), ("prompt_tokens", p),
                  ("answer_tokens", a), ("weight_bytes", wb), ("assumptions", rng.choice(PRESETS)))  # fmt: skip
        kw: dict[str, Any] = dict(utilisation=rng.choice([0.1, 0.3, 1.0]), own=rng.choice([True, False]))
        if rng.random() < 0.5:
            kw.update(years=3.0, electricity_price=Q_(0.12, "USD/kWh"), pue=1.3, api_price_per_million=Q_(0.5, "USD"),
                      api_input_price_per_million=Q_(0.1, "USD"))  # fmt: skip
        out.append(("bill_of", (m, g, rep_kw), kw))
    return out


#: The loose keywords the grid's cases kept from before they became fields of the assumptions: (keyword, field,
#: the field's value from the keyword's), in the order the old call applied them (the order names a variant).
LOOSE = {
    "plan": (
        ("memory_reserve", "memory_fraction", lambda reserve: 1 - reserve),
        ("headroom", "headroom", None),
        ("bandwidth_efficiency", "bandwidth_efficiency", None),
        ("compute_efficiency", "compute_efficiency", None),
    ),
    "*": (
        ("bandwidth_efficiency", "bandwidth_efficiency", None),
        ("compute_efficiency", "compute_efficiency", None),
        ("usable_fraction", "memory_fraction", None),
    ),
}


def assumed(kind: str, kw: dict) -> dict:
    """A case's keywords with its loose ones (:data:`LOOSE`) given as what they are now, a what-if of the
    assumptions: ``assumptions=resolve(preset).replace(...)``, the same inputs (the case's key is unchanged)."""
    changes, rest = {}, dict(kw)
    for name, field, value in LOOSE.get(kind, LOOSE["*"]):
        if name in rest:
            x = rest.pop(name)
            changes[field] = x if value is None else value(x)
    if changes:
        rest["assumptions"] = llmcourse.resolve(rest.get("assumptions")).replace(**changes)
    return rest


def function(kind: str) -> Any:
    """The function a case names: the planner's, or one of :data:`OTHERS`."""
    if kind in OTHERS:
        import importlib

        mod, name = OTHERS[kind]
        return getattr(sys.modules[__name__] if mod == "check_same" else importlib.import_module(mod), name)
    return getattr(llmcourse, kind)


def validation_results() -> dict[str, Any]:
    import llmcourse.validation as lcv

    out: dict[str, Any] = {}
    out["predict_course"] = [run(lcv.predict, r) for r in lcv.measurements()]
    loaded = lcv.load_measurements(lcv.AICONFIGURATOR)
    rows = loaded.rows
    out["predict_aic_sample"] = [run(lcv.predict, r) for r in rows[:: max(1, len(rows) // 150)]]
    t = time.perf_counter()
    ev = lcv.evidence(loaded)
    out["evidence_seconds"] = time.perf_counter() - t
    out["evidence"] = {
        "predicted": dump(ev.predicted),
        "calibrated": dump(ev.calibrated),
        "held_out": dump(ev.held_out),
        "fitted": dump(ev.fitted),
        "not_predicted": dump(ev.not_predicted),
    }
    print(f"evidence: {ev.seconds['components']:.2f} s predicting ({ev.seconds['configurations']:.0f} configurations)")
    out["components_seconds"] = ev.seconds["components"]
    return out


def results() -> dict[str, Any]:
    got = []
    t = time.perf_counter()
    for kind, args, kw in cases():
        call = lambda kind=kind, args=args, **k: function(kind)(*args, **assumed(kind, k))  # noqa: E731
        got.append(((kind, repr(args), repr(sorted(kw.items()))), run(call, **kw)))
    print(f"{len(got)} planner calls in {time.perf_counter() - t:.1f} s")
    return {"planner": got, **validation_results()}


def compare(a: Any, b: Any, where: str, worst: list[float], diffs: list[str]) -> None:
    if isinstance(a, float) and isinstance(b, float):
        if a == b or (math.isnan(a) and math.isnan(b)):
            return
        rel = abs(a - b) / max(abs(a), abs(b))
        worst[0] = max(worst[0], rel)
        if rel > REL:
            diffs.append(f"{where}: {a!r} != {b!r} (relative {rel:.3g})")
        return
    if type(a) is not type(b):
        diffs.append(f"{where}: type {type(a).__name__} != {type(b).__name__}: {a!r} vs {b!r}")
        return
    if isinstance(a, list | tuple):
        if len(a) != len(b):
            diffs.append(f"{where}: length {len(a)} != {len(b)}")
            return
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            compare(x, y, f"{where}[{i}]", worst, diffs)
        return
    if isinstance(a, dict):
        if set(a) != set(b):
            diffs.append(f"{where}: keys {sorted(set(a) ^ set(b))}")
            return
        for k in a:
            compare(a[k], b[k], f"{where}.{k}", worst, diffs)
        return
    if a != b:
        diffs.append(f"{where}: {a!r} != {b!r}")


def main() -> None:
    print("llmcourse from", llmcourse.__file__)
    mode, path = sys.argv[1], sys.argv[2]
    now = results()
    if mode == "dump":
        with open(path, "wb") as fh:
            pickle.dump(now, fh)
        print("dumped", path)
        return
    with open(path, "rb") as fh:
        before = pickle.load(fh)
    worst, diffs = [0.0], []
    for key in ("planner", "predict_course", "predict_aic_sample", "evidence"):
        compare(before[key], now[key], key, worst, diffs)
    n = len(before["planner"]) + len(before["predict_course"]) + len(before["predict_aic_sample"])
    errs = sum(1 for _, r in before["planner"] if r[0] == "ERR")
    print(
        f"compared {n} configurations ({errs} planner errors among them) + the evidence's {len(before['evidence']['predicted'][1])} predictions"
    )
    print(f"max relative difference of floats: {worst[0]:.3g}")
    print(f"evidence predicting: before {before['components_seconds']:.2f} s, now {now['components_seconds']:.2f} s")
    print(f"{len(diffs)} differences")
    for d in diffs[:40]:
        print("  ", d)
    sys.exit(1 if diffs else 0)


if __name__ == "__main__":
    main()
