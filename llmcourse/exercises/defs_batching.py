"""Exercises for *Batching* (``book/08_batching.md``): throughput, cost and the limits of a batch.

``batching_ex2`` .. ``batching_ex6`` follow the chapter's exercises of the same labels (their numeric part:
``batching_ex3`` asks for the ratio that decides whether Llama 2 7B has a crossover at all, ``batching_ex5`` for a
static batch's share of useful slot-steps, :func:`llmcourse.planner.batching.static_batch_utilisation`); the chapter's
``batching_ex1`` is a derivation and has no auto-checked version.
``batching_ex7`` .. ``batching_ex10`` are extra, on the interactive lab's set-up.

The exercises on the lab's set-up (``batching_ex4``, ``_ex7`` .. ``_ex10``; ``_ex7``, ``_ex9`` and ``_ex10``
reproduce the lab's 7.9 ms, $5.83 and $0.21) use the lab's preset (``assumptions="lab"``); the others are the
course's own estimates (the default). Each story states the efficiencies, formatted from the preset.
"""

from __future__ import annotations

import llmcourse as lc
from llmcourse import Q_
from llmcourse.exercises._common import COURSE, FLOOR, LAB, define, pct, pick, pool
from llmcourse.planner.batching import static_batch_utilisation
from llmcourse.replica.memory import largest_batch

EXERCISES: list = []

#: The method the notebook says these exercises follow (shown above its first exercise).
NOTEBOOK_METHOD = """
**The method.** The exercises on the interactive lab's set-up (4 and 7 to 10) follow the lab; the others are the
course's method. The two agree for BF16 weights. Each story states its efficiencies.
"""

LAB_SETUP = dict(model="Llama-3.1-8B", gpu="H100 SXM", prompt=256, answer=64, batch=64, price=3.0)


def _vary_lab(r):
    return dict(
        model=pick(r, ("Llama-3.1-8B", "Qwen2.5-7B")),
        gpu=pick(r, ("H100 SXM", "H200 SXM", "A100 SXM 80GB")),
        prompt=pick(r, (128, 256, 512)),
        answer=pick(r, (32, 64, 128)),
        batch=pick(r, (16, 32, 64)),
        price=pick(r, (2.0, 2.5, 3.0, 4.0)),
    )


def _cycle(v, batch=None):
    return lc.request_cycle(
        v["model"],
        v["gpu"],
        batch=batch or v["batch"],
        prompt_tokens=v["prompt"],
        answer_tokens=v["answer"],
        price_per_hour=Q_(v["price"], "USD/hour"),
        assumptions="lab",
    )


_LAB = (
    "An interactive lab serves {model} (BF16) on one {gpu} at ${price} per GPU-hour. Requests have {prompt} "
    "prompt tokens and {answer} answer tokens. Estimate as the lab does: decode reads each KV cache at the "
    f"average context (prompt + answer / 2), at {pct(LAB.bandwidth_efficiency)} of peak bandwidth and "
    f"{pct(LAB.compute_efficiency)} of the BF16 peak FLOP/s; prefill runs at "
    f"{pct(LAB.compute_efficiency)} of the BF16 peak, its attention term included. "
)
_STEP = (
    "Bytes per step = weights + batch x KV per token x (prompt + answer / 2).",
    f"Step time = the slower of bytes / ({LAB.bandwidth_efficiency:g} x bandwidth) and batch x "
    f"{LAB.flops_per_param:g} x parameters / ({LAB.compute_efficiency:g} x peak FLOP/s).",
)
#: The course's decode efficiencies, as the stories state them.
_ETAS = f"{pct(COURSE.bandwidth_efficiency)} of peak bandwidth, {pct(COURSE.compute_efficiency)} of peak FLOP/s"
_COST = (
    "Time of a cycle = prefill of the batch + {answer} decode steps.",
    "Cost per million = price per hour x cycle time / (batch x {answer} tokens) x 10^6.",
)


def _kv_over_compute(v, context=None):
    """One sequence's KV-read time over its compute time (2 FLOPs per parameter) at the average context, at the
    course's efficiencies."""
    m, g = lc.models[v["model"]], lc.gpus[v["gpu"]]
    ctx = context if context is not None else v["prompt"] + v["answer"] / 2
    kv = lc.kv_bytes_per_token(m) * ctx
    compute = lc.FORMULAS["decode_compute_time"](
        batch=1,
        n_gpus=1,
        flops_per_token=lc.FORMULAS["decode_flops_per_token"](
            flops_per_param=Q_(COURSE.flops_per_param, "FLOP"), active_params=m.active_params
        ),
        peak_flops=g.peak_flops("bf16"),
        compute_efficiency=COURSE.compute_efficiency,
    )
    read = lc.FORMULAS["weight_read_time"](
        weights=kv, n_gpus=1, bandwidth=g.bandwidth, bandwidth_efficiency=COURSE.bandwidth_efficiency
    )
    return (read / compute).to("")


def _no_crossover(v):
    """The average context at which one sequence's KV read takes as long as its FLOPs."""
    return 1 / _kv_over_compute(v, context=1)


@pool
def _ONE_GPU():
    """(dense model, GPU) whose BF16 weights fit in one GPU's usable memory."""
    models = ("Llama-3.1-8B", "Qwen2.5-7B", "Llama-3.1-70B", "Qwen2.5-72B", "Llama-2-7B", "Llama-2-13B", "Llama-2-70B")
    for model in models:
        for gpu in lc.gpus:
            if lc.weight_bytes(model) < lc.usable_memory(gpu):
                yield model, gpu


define(
    EXERCISES,
    "batching_ex2",
    "The context where the crossover disappears",
    f"{{model}} (BF16) decodes on one {{gpu}} at the course's {_ETAS}, {COURSE.flops_per_param:g} FLOPs per "
    "parameter only. Beyond what average context does one sequence's KV read take longer than its FLOPs (the "
    "denominator of the crossover batch's formula turns negative there), so that decode never becomes "
    "compute-bound however large the batch?",
    "",
    dict(model="Llama-3.1-8B", gpu="H100 SXM"),
    lambda r: dict(zip(("model", "gpu"), pick(r, _ONE_GPU()), strict=True)),
    _no_crossover,
    (
        f"One sequence's compute time: {COURSE.flops_per_param:g} x parameters / ({COURSE.compute_efficiency:g} x "
        "peak FLOP/s).",
        f"Its KV read: context x KV per token / ({COURSE.bandwidth_efficiency:g} x bandwidth). Set them equal and "
        "solve for the context.",
    ),
    bare_ok=True,
    kv=True,
)


def _crossover_mistakes(v):
    r = _kv_over_compute(v).m
    full = _kv_over_compute(v, context=v["prompt"] + v["answer"]).m
    m = lc.models[v["model"]]
    out = [
        (1 / r**2, "that is compute over KV read; the question asks for KV-read time over compute time"),
        (full / r, "the batch's requests are at different points of their answers: use prompt + answer / 2"),
    ]
    if m.kv_heads == m.heads:  # no GQA: a GQA-sized KV cache (8 KV heads) is the slip
        out.append((8 / m.kv_heads, f"{m.name} has no GQA: {m.kv_heads} KV heads, not 8"))
    return out


def _kv_words(v: dict) -> dict:
    """batching_ex3's variant with its model's KV heads and cache per token, as the story prints them (display
    keys: the answer reads the catalog)."""
    m = lc.models[v["model"]]
    gqa = "no GQA" if m.kv_heads == m.heads else f"GQA, {m.kv_heads} KV heads for {m.heads} query heads"
    return v | dict(gqa=gqa, kv_token=f"{lc.kv_bytes_per_token(m).to('KiB').m:.4g} KiB")


define(
    EXERCISES,
    "batching_ex3",
    "Is there a crossover at all?",
    "{model} (BF16; {gqa}, {kv_token} of KV cache per token) decodes {prompt}-token prompts and {answer}-token "
    "answers on one {gpu} "
    f"(the course's {_ETAS}, {COURSE.flops_per_param:g} FLOPs per parameter only; the KV cache is read at the "
    "average context). Adding one sequence to the batch adds its KV read to the memory time and its FLOPs to the "
    "compute time; where the first outweighs the second, the denominator of the crossover formula is negative and "
    "there is no crossover batch at all. How many times longer is that one sequence's KV-read time than its "
    "compute time?",
    "",
    _kv_words(dict(model="Llama-2-7B", gpu="H100 SXM", prompt=256, answer=64)),
    lambda r: _kv_words(
        dict(
            model=pick(r, ("Llama-2-7B", "Llama-2-7B", "Llama-3.1-8B", "Qwen2.5-7B")),
            gpu=pick(r, ("H100 SXM", "H200 SXM", "A100 SXM 80GB", "B200")),
            prompt=pick(r, (128, 256, 512)),
            answer=pick(r, (32, 64, 128)),
        )
    ),
    _kv_over_compute,
    (
        "Average context = {prompt} + {answer} / 2. KV per token = 2 x layers x KV heads x head dim x 2 bytes: "
        "lc.kv_bytes_per_token('{model}') (Llama 2 7B has no GQA: 512 KiB).",
        f"KV-read time = context x KV per token / ({COURSE.bandwidth_efficiency:g} x bandwidth); compute time = "
        f"{COURSE.flops_per_param:g} x parameters / ({COURSE.compute_efficiency:g} x peak FLOP/s). The ratio is the "
        "first over the second.",
        "Below 1 the crossover is at a finite batch (llmcourse.planner.roofline.crossover_batch); at 1 or above, "
        "each extra sequence adds more memory time than compute time, so decode stays memory-bound at any batch "
        "(crossover_batch returns None).",
    ),
    bare_ok=True,
    tolerance=0.02,
    kv=True,
    mistakes=_crossover_mistakes,
    followup="Why is there no crossover for it, when Llama 3.1 8B has one?",
)


def _prefill_share(v):
    c = _cycle(v)
    return (1 - c.decode_only_cost_per_million / c.cost_per_million_output_tokens).to("")


define(
    EXERCISES,
    "batching_ex4",
    "How much of the cost is prefill",
    _LAB + "With {batch} requests served together (prefill all, then {answer} decode steps), what fraction of the "
    "cost per million output tokens is the prefill time?",
    "",
    LAB_SETUP,
    _vary_lab,
    _prefill_share,
    (*_COST, "Fraction = prefill time / (prefill time + {answer} x step time)."),
    bare_ok=True,
    tolerance=0.02,
    followup="Would the cost fall if the prompts went into the decode steps, as chunked prefill runs them: a whole "
    "prompt in one step, beside the decode tokens? Which of those steps would its FLOPs stretch?",
)


def _static_share(v):
    return float(static_batch_utilisation(v["batch"], v["longest"]))


define(
    EXERCISES,
    "batching_ex5",
    "Idle slots in a static batch",
    "A server runs static batches: {batch} requests start together and the batch runs until its longest answer "
    "is done; a slot whose answer has ended sits idle until then. Answer lengths are independent and uniform on "
    "1..{longest} tokens. On average (over many batches), what fraction of the slot-steps produce a token?",
    "",
    dict(batch=32, longest=512),
    lambda r: dict(batch=pick(r, range(2, 129)), longest=pick(r, range(64, 2_049, 64))),
    _static_share,
    (
        "Useful slot-steps: each slot produces E[L] = (1 + {longest}) / 2 tokens. All slot-steps: {batch} x the "
        "steps the batch runs, E[max of {batch} lengths]. The fraction is E[L] / E[max].",
        "E[max] = sum over m = 1..{longest} of P(max >= m) = sum of [1 - ((m - 1)/{longest})^{batch}] (the max is "
        "below m only if all {batch} lengths are). A short loop adds it up; it is close to {longest} x {batch} / "
        "({batch} + 1) + 1/2.",
        "Check a tiny case by hand: 2 requests, lengths 1 or 2: E[L] = 1.5, E[max] = 1.75, fraction 6/7. Continuous "
        "batching refills a slot as soon as its answer ends, so its fraction is close to 1.",
    ),
    bare_ok=True,
    mistakes=lambda v: [
        ((v["longest"] + 1) / 2 / v["longest"] / _static_share(v), f"the batch runs E[max] steps, not {v['longest']}"),
        (1 / _static_share(v), "that is continuous batching; a static batch waits for its longest answer"),
    ],
    followup="Compare with continuous batching at the same batch size.",
)


def _largest_batch(v):
    def fast(b):
        s = lc.decode_step(v["model"], v["gpu"], batch=b, context_tokens=v["context"])
        return s.tokens_per_s_per_user >= Q_(v["speed"], "1/s")

    return largest_batch(fast, 4_096)


define(
    EXERCISES,
    "batching_ex6",
    "The largest batch at a speed target",
    f"{{model}} (BF16) runs on one {{gpu}} at a {{context}}-token context (the course's {_ETAS}, and "
    f"{COURSE.step_overhead_ms:g} ms of fixed cost per step, and a floor of {FLOOR} for each of the model's layers). "
    "What is the largest batch that keeps each user at "
    "{speed} tokens per second or more?",
    "",
    dict(model="Qwen3-30B-A3B", gpu="H100 SXM", context=2_304, speed=50),
    lambda r: dict(
        model=pick(r, ("Qwen3-30B-A3B", "Llama-3.1-8B", "Qwen2.5-7B")),
        gpu=pick(r, ("H100 SXM", "H200 SXM")),
        context=pick(r, range(512, 4_097, 256)),
        speed=pick(r, range(20, 101, 5)),
    ),
    _largest_batch,
    (
        "The step time must stay at or below 1 / {speed} s, its fixed costs included.",
        "lc.decode_step(...) for growing batches: the largest whose tokens_per_s_per_user is still {speed} or more.",
    ),
    integer=True,
    bare_ok=True,
    followup="Compare its throughput with that of Llama 3.1 8B at the same target.",
)

define(
    EXERCISES,
    "batching_ex7",
    "Step time of a full batch",
    _LAB + "With {batch} requests decoding together, how long is one decode step?",
    "ms",
    LAB_SETUP,
    _vary_lab,
    lambda v: _cycle(v).decode.step_time,
    _STEP,
)

define(
    EXERCISES,
    "batching_ex8",
    "Throughput of the batch",
    _LAB + "With {batch} requests decoding together, how many output tokens per second does the GPU produce while "
    "decoding?",
    "1/s",
    LAB_SETUP,
    _vary_lab,
    lambda v: _cycle(v).throughput,
    (*_STEP, "Throughput = batch / step time."),
)

define(
    EXERCISES,
    "batching_ex9",
    "Cost per million tokens, one user",
    _LAB + "Serving one request at a time (prefill, then {answer} decode steps), what does a million output tokens "
    "cost?",
    "USD",
    LAB_SETUP,
    _vary_lab,
    lambda v: _cycle(v, 1).cost_per_million_output_tokens,
    _COST + _STEP,
    tolerance=0.02,
)

define(
    EXERCISES,
    "batching_ex10",
    "Cost per million tokens, batched",
    _LAB + "Serving {batch} requests together (prefill all, then {answer} decode steps), what does a million output "
    "tokens cost?",
    "USD",
    LAB_SETUP,
    _vary_lab,
    lambda v: _cycle(v).cost_per_million_output_tokens,
    _COST + _STEP,
    tolerance=0.02,
    mistakes=lambda v: [
        (
            (_cycle(v).decode_only_cost_per_million / _cycle(v).cost_per_million_output_tokens).m,
            "that counts decode time only: the prefill time is paid for too",
        )
    ],
)
