"""The drills' questions (``book/15_drills.md``) as exercises of the checking engine, one per kind.

Each kind of question the drill deals is an :class:`~llmcourse.exercises.engine.Exercise`: a story over
a variant, ``vary(rng)`` to draw one (the givens, with the figures the story states computed by the
planner), ``answer(variant)`` from the planner, its unit, the working as its hint, the kind's
factor-of-two slips as its ``mistakes``, and :data:`FACTOR` as its band. :class:`llmcourse.widgets.
drills.Drill` deals a variant with its own seeded :class:`random.Random` and checks the typed answer
with :func:`llmcourse.exercises.engine.check`.

These exercises are not registered: they are no chapter's problem set (chapter key ``"drills"`` is
not in :data:`~llmcourse.exercises.engine.CHAPTERS`), have no notebook, and ``exercises()`` does not
list them. The figures are the course's method, except the single-user decode speed, which asks for
the ceiling at the datasheet bandwidth (the back-of-the-envelope method's, ``"envelope"``) and shows
the course's figure beside it in the working.

Examples
--------
>>> import random
>>> ex = DRILLS["weights"]
>>> ex.id, ex.unit, ex.factor
('drills_ex3', 'GB', 1.5)
>>> v = ex.vary(random.Random(1))
>>> v["model"], v["precision"], ex.answer(v).to("GB")
('Llama-3.1-8B', 'int4', <Quantity(4.015, 'gigabyte')>)
"""

from __future__ import annotations

import random
from typing import Any

import pint

from llmcourse.assumptions import resolve
from llmcourse.catalog import gpus, models
from llmcourse.exercises.engine import Exercise
from llmcourse.planner.serving import fleet, traffic
from llmcourse.replica.memory import (
    gpus_for_weights,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    max_batch,
    weight_bytes,
)
from llmcourse.replica.model import replica
from llmcourse.replica.step import decode_step
from llmcourse.units import Q_, sig

__all__ = ["DRILLS", "FACTOR", "KINDS", "SLIPS_2X", "shown"]

#: The kinds of question a drill deals, in the order of their exercise ids (``drills_ex1`` ...).
KINDS: tuple[str, ...] = ("kv_per_token", "kv_context", "weights", "max_batch", "decode_speed", "gpus_for_traffic")

#: A pass is an answer within this factor of the planner's figure, either way: wide enough for
#: rounding every given to two figures and for KiB vs kB (1.024x) or GiB vs GB (1.074x), narrow
#: enough that a factor-of-two slip (2x) misses.
FACTOR = 1.5

#: How close a miss must come to a slip's factor for the check to name it (counts are rounded).
_SLIP_TOLERANCE = 0.1

#: The factor-of-two slips behind a miss of about 2x (``"high"``) or 1/2 (``"low"``), by kind of question.
SLIPS_2X: dict[str, dict[str, str]] = {
    "kv_per_token": {
        "high": "bytes per cached value: BF16 is 2, FP8 is 1?",
        "low": "keys and values: did you count both?",
    },
    "kv_context": {
        "high": "bytes per cached value: BF16 is 2, FP8 is 1?",
        "low": "keys and values: did you count both?",
    },
    "weights": {
        "high": "bytes per parameter: BF16 2, FP8 1, INT4 half a byte?",
        "low": "bytes per parameter: BF16 2, FP8 1, INT4 half a byte?",
    },
    "max_batch": {
        "high": "did you count both keys and values in the KV per token?",
        "low": "the cache fills the memory of every GPU of the replica: per GPU vs per replica?",
    },
    "decode_speed": {
        "high": "bytes per weight: BF16 2, FP8 1, INT4 half a byte?",
        "low": "the GPUs of a tensor-parallel replica read their shares at once: per GPU vs per replica?",
    },
    "gpus_for_traffic": {
        "high": "replicas x GPUs per replica: per GPU vs per replica?",
        "low": "replicas x GPUs per replica: per GPU vs per replica?",
    },
}

_MODELS = ("Llama-2-7B", "Llama-3.1-8B", "Qwen2.5-7B", "Llama-2-13B", "Mixtral-8x7B", "Llama-3.1-70B", "Qwen2.5-72B")
_GPUS = ("H100 SXM", "H200 SXM", "B200", "A100 SXM 80GB", "L40S")
_CONTEXTS = (2_048, 4_096, 8_192, 32_768, 131_072)
_PRECISIONS = {"bf16": "BF16", "fp8": "FP8", "int4": "INT4"}

#: The drills' method: the course's (the default of every estimate); the single-user question asks for the
#: ceiling, the back-of-the-envelope method's reading at the datasheet bandwidth.
_COURSE = resolve()
_CEILING = "envelope"


def shown(q: pint.Quantity, unit: str) -> str:
    """A figure written the way a reader would type it: ``"320 KiB"``, ``"47 tok/s"``, a count ``"94"``.

    Examples
    --------
    >>> shown(Q_(327_680, "B"), "KiB"), shown(Q_(47.26, "1/s"), "tok/s"), shown(Q_(94, ""), "")
    ('320 KiB', '47.3 tok/s', '94')
    """
    if unit == "tok/s":
        return f"{sig(float(q.to('1/s').m), 3)} tok/s"
    if unit == "":
        return f"{float(q.to('').m):,.0f}"
    return f"{sig(float(q.to(unit).m), 3)} {unit}"


def _shape(name: str) -> str:
    m = models[name]
    if m.attention == "MLA":
        return f"{m.layers} layers, an MLA latent of {m.kv_lora_rank} + {m.qk_rope_head_dim}"
    return f"{m.layers} layers, {m.kv_heads} KV heads of dimension {m.head_dim}"


def _short(x: float) -> str:
    """A number to three figures without trailing zeros (1.3, 90, 1.43)."""
    text = sig(x, 3)
    return text.rstrip("0").rstrip(".") if "." in text else text


def _pct(share: float) -> str:
    """A share as a percentage ("90%")."""
    return _short(100 * share) + "%"


def _slips(kind: str) -> Any:
    return lambda v: [(2.0, SLIPS_2X[kind]["high"]), (0.5, SLIPS_2X[kind]["low"])]


# --- the variants: the givens each story states ---------------------------------------------------------------
def _vary_kv_per_token(rng: random.Random) -> dict[str, Any]:
    name, prec = rng.choice(_MODELS), rng.choice(("bf16", "fp8"))
    return dict(model=name, precision=prec, shape=_shape(name), cached_in=_PRECISIONS[prec])


def _vary_kv_context(rng: random.Random) -> dict[str, Any]:
    name, ctx = rng.choice(_MODELS), rng.choice(_CONTEXTS)
    return dict(model=name, context=ctx, shape=_shape(name), kv_token=shown(kv_bytes_per_token(name), "KiB"))


def _vary_weights(rng: random.Random) -> dict[str, Any]:
    name, prec = rng.choice(_MODELS), rng.choice(tuple(_PRECISIONS))
    return dict(model=name, precision=prec, billions=f"{models[name].params / 1e9:.1f}", stored_in=_PRECISIONS[prec])


def _vary_max_batch(rng: random.Random) -> dict[str, Any]:
    a = _COURSE
    while True:  # a setup where at least one conversation fits
        name, gpu, prec, ctx = (
            rng.choice(_MODELS),
            rng.choice(_GPUS),
            rng.choice(("bf16", "fp8")),
            rng.choice(_CONTEXTS[:4]),
        )
        n = gpus_for_weights(name, gpu, prec, assumptions=a)
        if max_batch(name, gpu, ctx, n_gpus=n, weight_bytes=prec, assumptions=a) >= 1:
            break
    return dict(
        model=name,
        gpu=gpu,
        precision=prec,
        context=ctx,
        n=n,
        stored_in=_PRECISIONS[prec],
        memory=f"{gpus[gpu].memory.to('GB').m:g}",
        usable=_pct(a.memory_fraction),
        kv_token=shown(kv_bytes_per_token(name), "KiB"),
    )


def _answer_max_batch(v: dict[str, Any]) -> int:
    return max_batch(
        v["model"], v["gpu"], v["context"], n_gpus=v["n"], weight_bytes=v["precision"], assumptions=_COURSE
    )


def _decode_steps(v: dict[str, Any]) -> tuple[Any, Any]:
    """The single-user step at the ceiling (datasheet bandwidth) and under the course's method."""
    kw = dict(batch=1, context_tokens=1_000, n_gpus=v["n"], weight_bytes=v["precision"])
    return (decode_step(v["model"], v["gpu"], assumptions=_CEILING, **kw), decode_step(v["model"], v["gpu"], **kw))


def _vary_decode_speed(rng: random.Random) -> dict[str, Any]:
    dense = tuple(m for m in _MODELS if not models[m].is_moe)  # a MoE model reads only the experts it uses
    name, gpu, prec = rng.choice(dense), rng.choice(_GPUS), rng.choice(tuple(_PRECISIONS))
    n = gpus_for_weights(name, gpu, prec, assumptions=_COURSE)
    v = dict(model=name, gpu=gpu, precision=prec, n=n, stored_in=_PRECISIONS[prec])
    _, real = _decode_steps(v)
    return v | dict(
        bandwidth=f"{gpus[gpu].bandwidth.to('TB/s').m:g}",
        tp=", tensor parallel" if n > 1 else "",
        share=_pct(_COURSE.bandwidth_efficiency),
        real=shown(real.tokens_per_s_per_user, "tok/s"),
    )


def _replica(v: dict[str, Any]) -> Any:
    return replica(
        v["model"],
        v["gpu"],
        tensor_parallel=v["n"],
        prompt_tokens=2_000,
        answer_tokens=v["answer"],
        weight_bytes=v["precision"],
        assumptions=_COURSE,
    )


def _vary_gpus_for_traffic(rng: random.Random) -> dict[str, Any]:
    while True:  # a replica that fits
        name = rng.choice(("Llama-3.1-8B", "Qwen2.5-7B", "Llama-3.1-70B", "Qwen2.5-72B"))
        prec, gpu = rng.choice(("bf16", "fp8")), rng.choice(("H100 SXM", "H200 SXM", "B200"))
        rate, answer = rng.choice((20, 50, 100, 300, 1_000, 3_000)), rng.choice((200, 300, 500, 1_000))
        n = gpus_for_weights(name, gpu, prec, assumptions=_COURSE)
        v = dict(model=name, gpu=gpu, precision=prec, rate=rate, answer=answer, n=n, stored_in=_PRECISIONS[prec])
        rep = _replica(v)
        if rep.fits:
            break
    h = _COURSE.headroom
    return v | dict(
        throughput=shown(rep.throughput, "tok/s"),
        prefill=", prefill included" if rep.counts_prefill else "",
        spare="" if h == 1 else f", sized with {_short(h)}x headroom",
        times_headroom="" if h == 1 else f" x {_short(h)}",
        per_replica=f"{n} GPU{'s' if n > 1 else ''}",
    )


def _answer_gpus_for_traffic(v: dict[str, Any]) -> int:
    return fleet(traffic(Q_(v["rate"], "1/s"), 2_000, v["answer"]).output_tokens_per_s, _replica(v)).gpus


# --- the exercises ----------------------------------------------------------------------------------------------------
_SPECS: dict[str, dict[str, Any]] = {
    "kv_per_token": dict(
        title="KV cache per token",
        story="KV cache per token of {model} ({shape}), cached in {cached_in}?",
        unit="KiB",
        vary=_vary_kv_per_token,
        answer=lambda v: kv_bytes_per_token(v["model"], v["precision"]),
        how="2 x layers x KV heads x head dimension x bytes per value",
    ),
    "kv_context": dict(
        title="KV cache of a conversation",
        story="KV cache of one {context}-token conversation on {model} ({shape}), in BF16?",
        unit="GB",
        vary=_vary_kv_context,
        answer=lambda v: kv_bytes_per_sequence(v["model"], v["context"]),
        how="KV per token ({kv_token}) x {context} tokens",
    ),
    "weights": dict(
        title="Weights",
        story="Weights of {model} ({billions} billion parameters) in {stored_in}?",
        unit="GB",
        vary=_vary_weights,
        answer=lambda v: weight_bytes(v["model"], v["precision"]),
        how="parameters x bytes per parameter",
    ),
    "max_batch": dict(
        title="The largest batch",
        story="How many {context}-token conversations fit at once: {model} in {stored_in} on {n} x {gpu} "
        "({memory} GB each, {usable} usable), KV cache in BF16 ({kv_token} per token)?",
        unit="",
        vary=_vary_max_batch,
        answer=_answer_max_batch,
        how="(usable memory - weights) / (KV per token x tokens), rounded down",
    ),
    "decode_speed": dict(
        title="Single-user decode speed",
        story="Fastest single-user decode of {model} in {stored_in} on {n} x {gpu} ({bandwidth} TB/s each{tp}, at "
        "full peak bandwidth), 1,000 tokens of context?",
        unit="1/s",
        vary=_vary_decode_speed,
        answer=lambda v: _decode_steps(v)[0].tokens_per_s_per_user,
        how="GPUs x bandwidth / (weight bytes + KV bytes of the context): the ceiling; at the {share} of the "
        "bandwidth real kernels reach it is {real}",
    ),
    "gpus_for_traffic": dict(
        title="GPUs for a traffic figure",
        story="{rate} requests/s, each a 2,000-token prompt and a {answer}-token answer. One replica of {model} in "
        "{stored_in} on {n} x {gpu} makes {throughput} at full load{prefill}. How many GPUs{spare}?",
        unit="",
        vary=_vary_gpus_for_traffic,
        answer=_answer_gpus_for_traffic,
        how="requests/s x answer tokens{times_headroom} / replica tok/s, rounded up, times {per_replica} per replica",
    ),
}


def _exercise(number: int, kind: str, spec: dict[str, Any]) -> Exercise:
    vary = spec["vary"]
    return Exercise(
        id=f"drills_ex{number}",
        title=spec["title"],
        story=spec["story"],
        unit=spec["unit"],
        default=vary(random.Random(0)),
        vary=vary,
        answer=spec["answer"],
        hints=(spec["how"],),
        tolerance=_SLIP_TOLERANCE,
        mistakes=_slips(kind),
        factor=FACTOR,
    )


#: The drill's exercises by kind (not registered: see the module's docstring).
DRILLS: dict[str, Exercise] = {kind: _exercise(i, kind, _SPECS[kind]) for i, kind in enumerate(KINDS, 1)}
