"""Exercises for *Speculative decoding* (``book/08b_speculative.md``): tokens per verification step, the
speed-up, the best draft length, the batch where speculation stops paying, the draft's memory, an MTP case.

``speculative_ex1`` .. ``speculative_ex6`` follow the chapter's exercises of the same labels; the chapter's
``speculative_ex7`` is a derivation and has no auto-checked version. ``speculative_ex8`` is extra: the
acceptance rate behind a published acceptance length. All are the course's own estimates (the default
method); each story that gives an efficiency names the method.
"""

from __future__ import annotations

import llmcourse as lc
from llmcourse.catalog.drafts import drafts
from llmcourse.exercises._common import COURSE, ENGINE_ALLREDUCE, FLOOR, define, pct, pick
from llmcourse.planner.speculation import best_draft_tokens, crossover_batch
from llmcourse.replica.acceptance import published
from llmcourse.replica.speculative import (
    Speculation,
    acceptance_from_length,
    expected_tokens,
    speculative_memory,
    speculative_step,
)

EXERCISES: list = []

#: The method the notebook says these exercises follow (shown above its first exercise).
NOTEBOOK_METHOD = """
**The method.** Every exercise is the course's method (each story states its efficiencies, the fixed
overhead a cycle pays once with its verification, the smaller fixed cost of each draft step run inside that engine
step, the floor of every layer a forward pass runs, and the all-reduces on several GPUs). Draft tokens are
accepted independently, each with the story's probability. `llmcourse.replica.speculative` has the building blocks
(`expected_tokens`, `Speculation`, `speculative_step`, `speculative_memory`); the chapter shows how to use them.
"""
#: What a student's own variant changes (the notebook's instructions).
VARIES = "a different model, GPU, acceptance rate or draft"

#: The course's decode method, as the stories state it: the efficiencies, the fixed cost of a step, the collectives.
_ETAS = (
    f"the course's method: {pct(COURSE.bandwidth_efficiency)} of peak bandwidth, "
    f"{pct(COURSE.compute_efficiency)} of the peak FLOP/s at the weights' precision, a fixed "
    f"{COURSE.step_overhead_ms:g} ms per decode step, paid once per speculative cycle with the verification (each "
    f"draft step runs inside that engine step and pays {COURSE.draft_step_overhead_ms:g} ms for an EAGLE head or an "
    f"MTP block, {COURSE.draft_model_step_overhead_ms:g} ms for a separate draft model), a floor of {FLOOR} for "
    "each layer of every forward pass (the target's, a draft model's, the head's or the MTP block's one) and, on "
    f"several GPUs, two all-reduces per layer of each step's activations over NVLink, {ENGINE_ALLREDUCE}"
)
_OVER = f"{COURSE.step_overhead_ms:g} ms"
_HEAD_OVER = f"{COURSE.draft_step_overhead_ms:g} ms"
_MODEL_OVER = f"{COURSE.draft_model_step_overhead_ms:g} ms"
#: The target and draft pairs of the stories: (target, GPU, GPUs, kind, draft model or None).
PAIRS = (
    ("Llama-3.1-70B", "H100 SXM", 2, "draft model", "Llama-3.1-8B"),
    ("Llama-3.1-70B", "H200 SXM", 1, "draft model", "Llama-3.1-8B"),
    ("Llama-3.1-70B", "H100 SXM", 2, "eagle head", None),
    ("Llama-3.1-70B", "H200 SXM", 1, "eagle head", None),
)


def _draft_words(kind: str, target: str, draft: str | None) -> str:
    """The draft as a story names it, its size read from the data."""
    if kind == "draft model":
        return f"a {draft} draft model (its own {lc.models[draft].layers} layers and KV cache)"
    head = next(d for n, d in drafts().items() if n.startswith("EAGLE") and n.endswith(target))
    return f"its EAGLE-3 head ({head.params / 1e9:g} B parameters, one layer of KV cache)"


def _pair(r, **more):
    target, gpu, tp, kind, draft = pick(r, PAIRS)
    return dict(target=target, gpu=gpu, tp=tp, kind=kind, draft=draft or "-", **more)


def _with_words(v):
    return v | dict(draft_words=_draft_words(v["kind"], v["target"], None if v["draft"] == "-" else v["draft"]))


def _spec(v):
    return Speculation(v["kind"], v["k"], v["alpha"], None if v["draft"] == "-" else v["draft"])


def _kw(v):
    return dict(tensor_parallel=v["tp"], weight_bytes="fp8")


# --- 1. tokens per verification step -------------------------------------------------------------------
define(
    EXERCISES,
    "speculative_ex1",
    "Tokens per verification step",
    "A draft proposes {k} tokens; the target checks them in order in one step, accepts each with probability "
    "{alpha} (independently), stops at the first rejection and adds one token of its own. How many tokens does a "
    "verification step yield on average?",
    "",
    dict(k=5, alpha=0.75),
    lambda r: dict(k=pick(r, range(1, 9)), alpha=pick(r, (0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9))),
    lambda v: expected_tokens(v["alpha"], v["k"]),
    (
        "Draft position i is reached only if the i - 1 before it were accepted: it yields a token with probability "
        "{alpha}^i. The target's own token always comes.",
        "Add them up: 1 + {alpha} + {alpha}^2 + ... + {alpha}^{k} = (1 - {alpha}^({k} + 1)) / (1 - {alpha}).",
    ),
    bare_ok=True,
    mistakes=lambda v: [
        ((expected_tokens(v["alpha"], v["k"]) - 1) / expected_tokens(v["alpha"], v["k"]), "add the target's own token"),
        ((1 + v["k"] * v["alpha"]) / expected_tokens(v["alpha"], v["k"]), "the first rejection ends the step"),
    ],
    followup="What is the most any draft length could give at that acceptance rate?",
)


# --- 2. the speed-up at batch 1 ----------------------------------------------------------------------------
def _vary_pair(r):
    return _with_words(
        _pair(r, alpha=pick(r, (0.6, 0.7, 0.8)), k=pick(r, (2, 3, 4, 5)), context=pick(r, (1_150, 2_150, 4_300)))
    )


_DEFAULT = _with_words(
    dict(
        target="Llama-3.1-70B",
        gpu="H100 SXM",
        tp=2,
        kind="draft model",
        draft="Llama-3.1-8B",
        alpha=0.7,
        k=4,
        context=2_150,
    )
)
_SETUP = (
    "{target} serves one user on {tp} x {gpu} with FP8 weights, its KV cache read at {context} tokens, by "
    f"{_ETAS}. It speculates with {{draft_words}}, FP8 too, on the same GPUs"
)
_WITH_K = ": {k} draft tokens per step, each accepted with probability {alpha}. "


def _step(v, batch=1, **more):
    return speculative_step(
        v["target"], v["gpu"], _spec(v).with_(**more), batch=batch, context_tokens=v["context"], **_kw(v)
    )


define(
    EXERCISES,
    "speculative_ex2",
    "The speed-up at batch 1",
    _SETUP + _WITH_K + "How many times faster than plain decode does the user get tokens?",
    "",
    _DEFAULT | dict(alpha=0.8, k=3),
    _vary_pair,
    lambda v: _step(v).speedup,
    (
        f"Plain step: (weights + one KV cache) / ({{tp}} x {COURSE.bandwidth_efficiency:g} x bandwidth), + {_OVER}, + "
        f"layers x {FLOOR}, + (on more than one GPU) 2 x layers all-reduces of one token's activations. At batch 1 the verification of {{k}} + 1 "
        "positions reads the same bytes and is still memory-bound: it costs a plain step (its all-reduces carry "
        "{k} + 1 tokens, a hair more).",
        "A draft step reads the draft's weights and its own KV cache the same way, and pays its layers' floor and its "
        f"all-reduces (its own layers) and, inside the cycle's engine step, {_MODEL_OVER} (a draft model) or {_HEAD_OVER} (an EAGLE head) "
        "instead of a step's overhead. A cycle is the verification plus {k} draft steps.",
        "Speed-up = (1 + {alpha} + ... + {alpha}^{k}) x plain step / (verification + {k} x draft step).",
    ),
    bare_ok=True,
    tolerance=0.02,
    mistakes=lambda v: [(_step(v).expected_tokens / _step(v).speedup, "the draft's steps take time too")],
    followup="Why is the speed-up well below the tokens a verification step yields on average?",
)


# --- 3. the best draft length -------------------------------------------------------------------------------
def _best(v):
    """The speed-up at the best draft length (the draft length alone takes too few values to tell students apart)."""
    return best_draft_tokens(v["target"], v["gpu"], _spec(v), context_tokens=v["context"], **_kw(v)).speedup


def _vary_best(r):
    """A pair, an acceptance rate and a context: the best draft length and its speed-up differ with each."""
    alphas = (0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)
    return _with_words(_pair(r, alpha=pick(r, alphas), k=3, context=pick(r, (1_150, 2_150, 4_300, 8_300))))


define(
    EXERCISES,
    "speculative_ex3",
    "The best draft length",
    _SETUP + "; the target accepts each draft token with probability {alpha}. Find the number of draft tokens "
    "per step (1 to 16) that gives the user the highest speed: how many times faster than plain decode is the "
    "user served at that draft length?",
    "",
    _DEFAULT | dict(alpha=0.8),
    _vary_best,
    _best,
    (
        "At batch 1 the verification costs about a plain step whatever the draft length, so the speed-up is "
        "tau(k) / (1 + k r), with r a draft step's time over a plain step's (the plain step with its "
        f"{_OVER} of overhead, the draft step with its {_MODEL_OVER} or {_HEAD_OVER}).",
        "Each extra token adds {alpha}^k to tau, less and less, and r to the cost: try k = 1, 2, ... and keep the "
        "best (or solve dS/dk = 0 and check the whole numbers either side); the answer is that best speed-up.",
    ),
    bare_ok=True,
    tolerance=0.02,
    followup="Which draft length is it? Compare it with {eq}`eq-spec-best-k` at the same $r_d$.",
)


# --- 4. the batch where speculation stops paying -------------------------------------------------------------
def _vary_crossover(r):
    kind = pick(r, ("eagle head", "eagle head", "ngram"))
    words = "an n-gram lookup (no GPU time)" if kind == "ngram" else _draft_words(kind, "Llama-3.1-8B", None)
    return dict(
        gpu=pick(r, ("H100 SXM", "H200 SXM")),
        kind=kind,
        draft_words=words,
        k=pick(r, (3, 4)),
        alpha=pick(r, (0.6, 0.7, 0.8)),
        context=pick(r, (288, 416, 544)),
    )


def _crossover(v):
    spec = Speculation(v["kind"], v["k"], v["alpha"])
    return crossover_batch("Llama-3.1-8B", v["gpu"], spec, context_tokens=v["context"])


define(
    EXERCISES,
    "speculative_ex4",
    "Where speculation stops paying",
    "Llama-3.1-8B (BF16) serves short chats on one {gpu}, each KV cache read at {context} tokens, by "
    f"{_ETAS}. It speculates with {{draft_words}}: {{k}} draft tokens per step, each accepted with probability "
    "{alpha}. From what batch on does speculation cost throughput (the first batch whose speed-up is below 1)?",
    "",
    dict(
        gpu="H100 SXM",
        kind="eagle head",
        draft_words=_draft_words("eagle head", "Llama-3.1-8B", None),
        k=3,
        alpha=0.8,
        context=288,
    ),
    _vary_crossover,
    _crossover,
    (
        f"Plain step: the slower of (weights + B KV caches) / ({COURSE.bandwidth_efficiency:g} x bandwidth) and B x "
        f"{COURSE.flops_per_param:g} x parameters / ({COURSE.compute_efficiency:g} x peak FLOP/s), + {_OVER}. "
        "The verification reads the same bytes but does the FLOPs of {k} + 1 positions per sequence, + "
        f"{_OVER}; each head step costs its reads + {_HEAD_OVER} (an n-gram lookup costs nothing).",
        "Speculation pays while (1 + {alpha} + ... + {alpha}^{k}) x plain step > verification + {k} draft steps. "
        "While the verification is memory-bound it always pays; it stops once its FLOPs outgrow the bytes.",
        "Setting the two sides equal with the plain step memory-bound and the verification compute-bound gives "
        "FORMULAS['speculative_crossover_batch']; the answer is the first whole batch past it (check that batch).",
    ),
    integer=True,
    followup="Check the speed-up at that batch and at the one before it.",
)


# --- 5. the draft's memory -------------------------------------------------------------------------------------
def _draft_memory(v):
    m = speculative_memory(v["target"], v["gpu"], _spec(v), context_tokens=v["context"], **_kw(v))
    return m.draft_memory(v["batch"])


define(
    EXERCISES,
    "speculative_ex5",
    "The draft's memory",
    "{target} serves {batch} conversations of {context} tokens on {tp} x {gpu} with FP8 weights and a BF16 KV "
    "cache. It speculates with {draft_words}, FP8 too: {k} draft tokens per step, which sit in the caches until "
    "they are checked. How much GPU memory does the draft take (its weights and its KV caches)?",
    "GB",
    _DEFAULT | dict(batch=32, context=2_300),
    lambda r: _vary_pair(r) | dict(batch=pick(r, (16, 32, 48)), context=pick(r, (2_300, 4_300, 8_300))),
    _draft_memory,
    (
        "The draft's weights: its parameters x 1 byte (FP8).",
        "Its KV cache per sequence: 2 x its layers x its KV heads x head dim x 2 bytes per token, over "
        "{context} + {k} tokens; times {batch} sequences.",
    ),
    kv=True,
    mistakes=lambda v: [
        (
            (
                speculative_memory(v["target"], v["gpu"], _spec(v), context_tokens=v["context"], **_kw(v)).draft_weights
                / _draft_memory(v)
            )
            .to("")
            .m,
            "the draft's KV cache takes memory too",
        )
    ],
    followup="How many conversations does that memory cost the target?",
)


# --- 6. an MTP case ---------------------------------------------------------------------------------------------
def _mtp(v):
    s = speculative_step(
        "DeepSeek-V3",
        "H200 SXM",
        Speculation("mtp", 1, v["alpha"]),
        batch=v["batch"],
        context_tokens=v["context"],
        tensor_parallel=8,
        weight_bytes="fp8",
    )
    return s.tokens_per_s_per_user


_MTP = drafts()["DeepSeek-V3 MTP"]
define(
    EXERCISES,
    "speculative_ex6",
    "Multi-token prediction on DeepSeek-V3",
    "DeepSeek-V3 (FP8) serves {batch} users on 8 x H200 SXM, each KV cache read at {context} tokens, by "
    f"{_ETAS}, each GPU keeping (and reading) the whole MLA cache. Its multi-token-prediction block (one MLA + MoE layer, {_MTP.params / 1e9:.3g} B parameters, "
    f"{_MTP.active_params / 1e9:.3g} B of them per token) drafts 1 token per step, accepted with probability "
    "{alpha}. How many tokens per second does each user get?",
    "1/s",
    dict(batch=64, context=2_150, alpha=0.85),
    lambda r: dict(batch=pick(r, (1, 16, 64, 128)), context=pick(r, (2_150, 4_300)), alpha=pick(r, (0.8, 0.85, 0.9))),
    _mtp,
    (
        "The verification runs 2 positions per sequence: 2 x {batch} tokens pick experts, so it reads the shared "
        "weights plus the experts that many tokens touch (1 - (1 - 8/256)^tokens of them), and the {batch} caches, "
        f"8 copies of each; + {_OVER}, + {lc.models['DeepSeek-V3'].layers} x {FLOOR}, + "
        f"2 x {lc.models['DeepSeek-V3'].layers} all-reduces of the 2 x {{batch}} tokens' activations over 8 GPUs.",
        "An MTP step reads the block's shared weights and the experts {batch} tokens touch, and its one-layer cache; "
        f"+ {_HEAD_OVER} (inside the verification's engine step), + {FLOOR} and 2 all-reduces (one layer).",
        "Time per token = (verification + MTP step) / (1 + {alpha}); the user's speed is one over that.",
    ),
    tolerance=0.02,
    followup="Why is the speed-up smaller at a batch of four than at a batch of one?",
)


# --- 8. the acceptance rate behind a published length --------------------------------------------------------------
_LENGTHS = [r for r in published(figure="acceptance_length") if r.draft_tokens is not None and r.value_high is None]


def _length_variant(row, scale=None):
    """The published row (``scale`` None), or a deployment of the same method measuring ``scale`` times its
    length on its own traffic (held below k + 1, the most a step can yield)."""
    if scale is None:
        where, length = f"{row.method} on {row.target} reports, on {row.benchmark},", row.value
    else:
        where = f"A deployment of {row.method} on {row.target} measures, on its own traffic (the published "
        where += f"{row.benchmark} figure is {row.value:g}),"
        length = round(min(1 + (row.value - 1) * scale, row.draft_tokens + 0.9), 2)
    return dict(where=where, length=length, k=row.draft_tokens)


#: A deployment's measured length as a share of the published one (traffic differs from the benchmark's).
_LENGTH_SCALES = tuple(round(0.70 + 0.02 * i, 2) for i in range(26))  # 0.70 to 1.20

define(
    EXERCISES,
    "speculative_ex8",
    "The acceptance rate behind an acceptance length",
    "{where} a mean acceptance length of {length} tokens per verification step, "
    "with {k} draft tokens per step (the length counts the target's own token). If every draft position were "
    "accepted with the same probability, independently, what would that probability be?",
    "",
    _length_variant(next(r for r in _LENGTHS if r.target == "gpt-oss-20b" and r.benchmark == "MT-Bench")),
    lambda r: _length_variant(pick(r, _LENGTHS), pick(r, _LENGTH_SCALES)),
    lambda v: acceptance_from_length(v["length"], v["k"]),
    (
        "Solve 1 + a + a^2 + ... + a^{k} = {length} for a.",
        "The left side grows with a: bisect between 0 and 1, or try a few values.",
    ),
    bare_ok=True,
    mistakes=lambda v: [
        (
            (v["length"] - 1) / v["k"] / acceptance_from_length(v["length"], v["k"]),
            "that is the accepted tokens over k: a later position needs all the earlier ones",
        )
    ],
)
