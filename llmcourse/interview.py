"""The interview track: a bank of estimate questions with model answers, and the sheet of numbers.

Each :class:`Question` holds a prompt, what a weak, a good and a strong answer sound like
(templates), and a ``worked()`` function that computes every number of the strong answer with
the planner. :meth:`Question.numbers` returns those values (quantities, counts) for tests and
:meth:`Question.render` fills a template with them, so no number in an answer is typed by hand.

A question that reproduces a source text's worked example computes it under that source's
assumptions (``"envelope"``, ``"lab"``, ``"capacity"``, see :mod:`llmcourse.assumptions`); where
the source's method leaves out something that changes the answer (prefill, the bandwidth real
kernels reach), the worked answer gives the course's figure beside it, computed with the default.

:func:`sheet` computes the one-page sheet of numbers of the chapter *Numbers to know by heart*
from the catalog and the formulas.

Defined in the chapters *Numbers to know by heart* (``book/13_cheat_sheet.md``) and
*Interview questions* (``book/14_interview_questions.md``).

Examples
--------
>>> q = QUESTIONS["kv_per_token"]
>>> q.level, q.numbers()["kv72"]
('L4', <Quantity(320.0, 'kibibyte')>)
>>> q.render("weak")
'"It depends on the model; a few kilobytes per token?"'
>>> len(QUESTIONS) >= 20
True
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pint

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.catalog import GPU, Model, bytes_per_value, gpus, models
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.formulas import FORMULAS as F
from llmcourse.planner import (
    compute_budget,
    cost_per_million,
    decode_step,
    fleet,
    gpus_for_weights,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    matmul_precision,
    max_batch,
    prefill,
    prefill_pool,
    replica,
    request_cycle,
    serving_plan,
    traffic,
    usable_memory,
    weight_bytes,
)
from llmcourse.roofline import decode_flops_per_token, ridge_intensity, weight_read_ceiling
from llmcourse.units import HOURS_PER_MONTH, Q_, sig

__all__ = [
    "CATALOG_NAMES",
    "LEVELS",
    "MIN_REPLICAS",
    "QUESTIONS",
    "SHEET_GPUS",
    "SHEET_MODELS",
    "SOURCES",
    "Question",
    "levels_markdown",
    "num",
    "sheet",
    "sheet_tables",
]

#: Interview levels, in order, with what the interviewer listens for at each.
LEVELS: dict[str, str] = {
    "L4": "knows the formulas and gets one number right, with its unit",
    "L5": "chains the numbers into a decision and names the bottleneck",
    "Staff+": "sizes the whole system, states the assumptions, and says which one moves the answer most",
}

_USD, _USD_PER_HOUR = Q_(1, "USD"), Q_(1, "USD/hour")

#: The assumptions the worked answers use (see :mod:`llmcourse.assumptions`): each source's own
#: method where a question reproduces its worked example, the course's (``None``) elsewhere.
ENVELOPE, LAB, CAPACITY, COURSE = "envelope", "lab", "capacity", None

#: The texts the questions' figures come from, as the chapter names them.
SOURCES: dict[str, str] = {
    "000": "the back-of-the-envelope method",
    "001": "the interactive lab",
    "002": "the capacity-planning method",
    "004": "the system-design lesson",
    "course": "the course's own arithmetic",
}

#: Replicas a service runs at the least, so that one failure or deployment does not take it down
#: (the back-of-the-envelope method's "at least two replicas").
MIN_REPLICAS = 2


# --- formatting numbers into answer templates ---------------------------------------------------------
class _Num:
    """A value that formats itself for prose: the format spec is the number of significant figures."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __format__(self, spec: str) -> str:
        return num(self.value, int(spec) if spec else 3)

    def __getattr__(self, name: str) -> _Num:
        if name == "m" and isinstance(self.value, pint.Quantity):  # {H100.bandwidth.m}: the number alone
            return _Num(float(self.value.m))
        if name == "m":  # a plain number for LaTeX: no thousands separator ({L70.hidden.m} is 8192)
            return _Num(_Bare(self.value))
        raise AttributeError(name)


class _Bare(float):
    """A number printed without thousands separators (inside LaTeX a comma adds a space)."""


class _Ref:
    """A catalog entry in a template: ``{H100.bandwidth}`` is '3.35 TB/s', ``{H100.bandwidth.m}`` '3.35',
    ``{Q72.layers}`` '80', ``{Q72.billions}`` '72.7' (parameters in billions)."""

    def __init__(self, entry: Model | GPU) -> None:
        self._entry = entry

    def __getattr__(self, name: str) -> _Num:
        if name == "billions":
            return _Num(self._entry.params / 1e9)
        if name == "active_billions":
            return _Num(self._entry.active_params / 1e9)
        return _Num(getattr(self._entry, name))


#: Short names templates use for catalog entries, so no catalog figure is typed in a question.
CATALOG_NAMES: dict[str, tuple[str, str]] = {
    "H100": ("gpu", "H100 SXM"),
    "H200": ("gpu", "H200 SXM"),
    "L4": ("gpu", "L4"),
    "Q72": ("model", "Qwen2.5-72B"),
    "Q7": ("model", "Qwen2.5-7B"),
    "L8": ("model", "Llama-3.1-8B"),
    "L70": ("model", "Llama-3.1-70B"),
    "L2": ("model", "Llama-2-7B"),
    "Q30": ("model", "Qwen3-30B-A3B"),
}


def _refs() -> dict[str, _Ref]:
    return {k: _Ref(gpus[n] if kind == "gpu" else models[n]) for k, (kind, n) in CATALOG_NAMES.items()}


def num(value: Any, digits: int = 3, *, escape: bool = True) -> str:
    """A value in prose: quantities with their unit symbol, counts with thousands separators.

    Dollars print as ``\\$1.05`` for MyST Markdown (a bare ``$`` opens math there); pass
    ``escape=False`` for text that is not parsed as Markdown (``{glue:text}``).

    Examples
    --------
    >>> num(Q_(327_680, "B").to("KiB")), num(10_851), num(23.93), num(Q_(0.29431, "s"), 2), num(Q_(80.0, "GB"))
    ('320 KiB', '10,851', '23.9', '0.29 s', '80 GB')
    """
    if isinstance(value, pint.Quantity):
        dollar = "\\$" if escape else "$"  # a bare $ opens math in MyST
        if value.dimensionality == _USD.dimensionality:
            return f"{dollar}{sig(float(value.to('USD').m), digits)}"
        if value.dimensionality == _USD_PER_HOUR.dimensionality:
            return f"{dollar}{float(value.to('USD/hour').m):.2f}/h"
        return f"{_digits(float(value.m), digits)} {value.units:~P}".strip()
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, _Bare):
        return f"{float(value):g}"
    return _digits(float(value), digits)


def _digits(x: float, digits: int) -> str:
    """Whole numbers as they are (80, 989, 10,851); others to ``digits`` significant figures."""
    if x.is_integer() and abs(x) < 1e15:
        return f"{int(x):,}"
    text = sig(x, digits)
    return text.rstrip("0").rstrip(".") if "." in text else text


# --- the question type ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Question:
    """One interview question with graded model answers.

    ``prompt``, ``weak``, ``good``, ``strong`` and ``answer`` (the worked strong answer, MyST
    Markdown) are templates over the names ``worked()`` returns: ``{kv72}`` or ``{kv72:4}``
    (four significant figures). ``source`` names the source text whose figures the question
    reproduces (a value of :data:`SOURCES`), or says that it is the course's own arithmetic.
    """

    id: str
    level: str
    topic: str
    title: str
    prompt: str
    weak: str
    good: str
    strong: str
    answer: str
    worked: Callable[[], dict[str, Any]]
    source: str = SOURCES["course"]

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise InputError(f"question {self.id!r}: level must be one of {', '.join(LEVELS)}, not {self.level!r}.")

    def numbers(self) -> dict[str, Any]:
        """Every number of the worked answer, computed now with the planner."""
        return self.worked()

    def fields(self) -> set[str]:
        """Names the templates use (each a key of :meth:`numbers` or of :data:`CATALOG_NAMES`)."""
        names = set()
        for text in (self.prompt, self.weak, self.good, self.strong, self.answer):
            names |= {f.split(".")[0] for _, f, _, _ in string.Formatter().parse(text) if f}
        return names

    def render(self, part: str = "answer", values: Mapping[str, Any] | None = None) -> str:
        """Fill one template (``"prompt"``, ``"weak"``, ``"good"``, ``"strong"`` or ``"answer"``)."""
        if part not in ("prompt", "weak", "good", "strong", "answer"):
            raise InputError(f"part must be prompt, weak, good, strong or answer; got {part!r}.")
        vals = self.numbers() if values is None else values
        return getattr(self, part).format_map(_refs() | {k: _Num(v) for k, v in vals.items()})

    def markdown(self) -> dict[str, str]:
        """All five parts rendered with one computation of the numbers."""
        vals = self.numbers()
        return {p: self.render(p, vals) for p in ("prompt", "weak", "good", "strong", "answer")}


class _Bank(Mapping[str, Question]):
    def __init__(self) -> None:
        self._q: dict[str, Question] = {}

    def add(self, q: Question) -> Question:
        if q.id in self._q:
            raise ValueError(f"question {q.id!r} defined twice")
        self._q[q.id] = q
        return q

    def __getitem__(self, key: str) -> Question:
        try:
            return self._q[key]
        except KeyError:
            raise UnknownNameError(f"no interview question {key!r}; known: {', '.join(self._q)}.") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._q)

    def __len__(self) -> int:
        return len(self._q)


#: The question bank, in the order the chapter asks them.
QUESTIONS = _Bank()


def _q(**kw: Any) -> Callable[[Callable[[], dict[str, Any]]], Callable[[], dict[str, Any]]]:
    def deco(fn: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
        QUESTIONS.add(Question(worked=fn, **kw))
        return fn

    return deco


def _seed004_model() -> Model:
    """The system-design lesson's "70B-class model": 70 billion parameters, 80 layers, 64 query
    heads, 8 KV heads (source 004)."""
    return models["Llama-3.1-70B"].with_(name="70B-class", params=70e9, active_params=70e9)


def _read_time(
    memory: pint.Quantity, gpu: GPU | str, n_gpus: int = 1, *, assumptions: Assumptions | str | None = None
) -> pint.Quantity:
    """Time to read ``memory`` bytes once at the assumptions' share of the bandwidth (the step of a
    GPU whose batch fills its usable memory)."""
    g = gpus[gpu] if isinstance(gpu, str) else gpu
    return F["weight_read_time"](
        weights=memory,
        n_gpus=n_gpus,
        bandwidth=g.bandwidth,
        bandwidth_efficiency=resolve(assumptions).bandwidth_efficiency,
    ).to("ms")


def _per_s(rate: pint.Quantity) -> float:
    """A rate (or the inverse of a step time) as a plain number per second."""
    q = rate if rate.dimensionality == Q_(1, "1/s").dimensionality else 1 / rate
    return float(q.to("1/s").m)


def _pct(share: float) -> float:
    """A share as a percentage for prose (seven tenths -> 70)."""
    return 100 * share


# --- L4: one number, right, with its unit ------------------------------------------------------------------
@_q(
    id="weights_fit",
    level="L4",
    topic="memory",
    title="Do the weights fit?",
    source=SOURCES["000"],
    prompt="Qwen2.5-72B has {Q72.billions} billion parameters. How many {H100.memory} H100s do its weights need in BF16, "
    "and in FP8?",
    weak='"{Q72.billions:2} billion parameters, {H100.memory} per GPU: one GPU."',
    good='"In BF16 that is {w16} of weights, so two GPUs at least; in FP8 {w8}, one GPU."',
    strong='"{w16} in BF16. The server gets about {mem_pct}% of each GPU, {per_gpu}, so {n16} GPUs by memory, and '
    "tensor parallelism splits the heads over a power of two GPUs: {tp16}. In FP8 it is {w8}: {n8} GPUs, with room "
    'left for the KV cache, which is what decides how many users fit."',
    answer="Weights are parameters times bytes per parameter: ${Q72.billions} \\times 10^9 \\times 2$ B = {w16} in BF16 and "
    "{w8} in FP8. A serving engine keeps about {reserve_pct}% of memory for itself, leaving {per_gpu} per H100. BF16 "
    "needs {w16} / {per_gpu}, rounded up: {n16} GPUs; tensor parallelism splits the heads over 1, 2, 4 or 8 GPUs, "
    "so round up to {tp16}. FP8 needs {n8}. Two GPUs hold only {mem2} in all: the BF16 weights miss by "
    "{miss}, which is why quantization is the first lever a serving team pulls.",
)
def _weights_fit() -> dict[str, Any]:
    a, g = resolve(ENVELOPE), gpus["H100 SXM"]
    w16, w8 = weight_bytes("Qwen2.5-72B", "bf16").to("GB"), weight_bytes("Qwen2.5-72B", "fp8").to("GB")
    mem2 = usable_memory(g, 2, assumptions=a).to("GB")
    return dict(
        w16=w16,
        w8=w8,
        per_gpu=usable_memory(g, assumptions=a).to("GB"),
        mem_pct=_pct(a.memory_fraction),
        reserve_pct=_pct(1 - a.memory_fraction),
        n16=gpus_for_weights("Qwen2.5-72B", g, "bf16", assumptions=a, power_of_two=False),
        tp16=gpus_for_weights("Qwen2.5-72B", g, "bf16", assumptions=a),
        n8=gpus_for_weights("Qwen2.5-72B", g, "fp8", assumptions=a),
        mem2=mem2,
        miss=(w16 - mem2).to("GB"),
    )


@_q(
    id="kv_per_token",
    level="L4",
    topic="KV cache",
    title="KV cache per token",
    source=SOURCES["000"],
    prompt="How many bytes of KV cache does one token take in Qwen2.5-72B ({Q72.layers} layers, {Q72.kv_heads} KV heads of dimension "
    "{Q72.head_dim}) and in Qwen2.5-7B ({Q7.layers} layers, {Q7.kv_heads} KV heads of {Q7.head_dim}), in BF16?",
    weak='"It depends on the model; a few kilobytes per token?"',
    good='"Two times layers times hidden size times two bytes." (The right shape, but with the hidden size it is the '
    "cache of a model without grouped-query attention: {mha72} for the 72B.)",
    strong='"Keys and values, in every layer, for every KV head: 2 x {Q72.layers} x {Q72.kv_heads} x {Q72.head_dim} x 2 B = {kv72}, and {kv7} for the '
    '7B. Grouped-query attention is why it is not {mha72}."',
    answer="$\\kappa = 2\\,L\\,H_{{kv}}\\,d_{{head}}\\,b_{{kv}}$. For the 72B: $2 \\times {Q72.layers} \\times {Q72.kv_heads} "
    "\\times {Q72.head_dim} \\times 2$ = {b72:6} bytes = {kv72}. For the 7B: $2 \\times {Q7.layers} \\times {Q7.kv_heads} \\times {Q7.head_dim} \\times 2$ = {b7:5} "
    "bytes = {kv7}. Using the hidden size in place of $H_{{kv}} d_{{head}}$ counts all {Q72.heads} query heads and gives "
    "{mha72}, eight times too much.",
)
def _kv_per_token() -> dict[str, Any]:
    kv72, kv7 = kv_bytes_per_token("Qwen2.5-72B"), kv_bytes_per_token("Qwen2.5-7B")
    m = models["Qwen2.5-72B"]
    mha = kv_bytes_per_token(m.with_(kv_heads=m.heads))
    return dict(
        kv72=kv72.to("KiB"), kv7=kv7.to("KiB"), b72=int(kv72.to("B").m), b7=int(kv7.to("B").m), mha72=mha.to("MiB")
    )


@_q(
    id="kv_context",
    level="L4",
    topic="KV cache",
    title="KV cache of one conversation",
    source=SOURCES["000"],
    prompt="A conversation on Qwen2.5-72B holds 2,300 tokens (2,000 prompt, 300 answer). How much KV cache does it "
    "take in BF16? And at 32,768 tokens?",
    weak='"Tokens are small, a few megabytes."',
    good='"320 KiB per token times 2,300 tokens: about {kv2300:2}."',
    strong='"{kv2300:2} at 2,300 tokens and {kv32k} at 32K: linear in the context. One 32K conversation takes '
    "{share32k:2}% of an H100's usable memory.\"",
    answer="KV per conversation is $\\kappa\\,T_{{ctx}}$: {kvtok} x 2,300 = {kv2300} (about {kv2300:2}, the source's "
    "figure). At 32,768 tokens it is {kvtok} x 32,768 = {kv32k}, or {kv32k_gb} of the {usable} an H100 "
    "lets the server use.",
)
def _kv_context() -> dict[str, Any]:
    short = kv_bytes_per_sequence("Qwen2.5-72B", 2_300).to("GB")
    long = kv_bytes_per_sequence("Qwen2.5-72B", 32_768)
    use = usable_memory("H100 SXM", assumptions=ENVELOPE).to("GB")
    return dict(
        kvtok=kv_bytes_per_token("Qwen2.5-72B").to("KiB"),
        kv2300=short,
        kv32k=long.to("GiB"),
        kv32k_gb=long.to("GB"),
        usable=use,
        share32k=float((long / use).to("").m * 100),
    )


@_q(
    id="traffic",
    level="L4",
    topic="tokens",
    title="Requests to tokens",
    source=SOURCES["000"],
    prompt="A support assistant gets 200,000 requests a day, each a 2,000-token prompt and a 300-token answer; the "
    "peak hour is three times the daily average. What load is that at peak?",
    weak='"200,000 a day is about 2 requests a second."',
    good='"{rps:2} requests a second at peak."',
    strong='"{rps:2} requests a second at peak, which is {tin:2} prompt tokens and {tout:4} answer tokens per second: '
    'the two are different work, prefill and decode, so I keep them apart."',
    answer="200,000 / 86,400 s = {avg:3} requests/s on average; times 3 at peak: {rps:3} requests/s. In tokens: "
    "{rps:3} x 2,000 = {tin:4} prompt tokens/s and {rps:3} x 300 = {tout:4} answer tokens/s.",
)
def _traffic() -> dict[str, Any]:
    t = traffic(Q_(200_000, "1/day"), 2_000, 300, peak_factor=3)
    avg = traffic(Q_(200_000, "1/day"), 2_000, 300).request_rate
    return dict(
        avg=float(avg.to("1/s").m),
        rps=float(t.request_rate.to("1/s").m),
        tin=float(t.input_tokens_per_s.to("1/s").m),
        tout=float(t.output_tokens_per_s.to("1/s").m),
    )


@_q(
    id="single_stream",
    level="L4",
    topic="decode speed",
    title="The fastest one user can go",
    source=SOURCES["004"],
    prompt="A 70B-parameter model in BF16 on H100s ({H100.bandwidth} each). What is the fastest a single user can get tokens?",
    weak='"H100s do about 1,000 TFLOP/s, so thousands of tokens a second."',
    good='"Decode reads all {w} of weights per token: {w} / {H100.bandwidth} is {t1}, about {r1} tokens a second."',
    strong='"Decode is bandwidth-bound: each token reads all {w}. But {w} does not fit in one {H100.memory} GPU, so it runs on '
    "two and they read their halves in parallel: {t2}, so about {r2} tokens a second at best, before kernels "
    'reach only 60-80% of peak."',
    answer="One token needs one read of the weights, $70 \\times 10^9 \\times 2$ B = {w}. At one H100's {H100.bandwidth} "
    "that is {t1}, or {r1} tokens/s: the source's figure. The weights need two GPUs to fit, though, and with "
    "tensor parallelism each GPU reads its own half: {t2}, {r2} tokens/s. At a realistic {bw_pct}% of peak "
    "bandwidth (the course's method): {r2_70} tokens/s.",
)
def _single_stream() -> dict[str, Any]:
    m = _seed004_model()
    one = weight_read_ceiling(m, "H100 SXM", assumptions=ENVELOPE)
    two = weight_read_ceiling(m, "H100 SXM", n_gpus=2, assumptions=ENVELOPE)
    real = weight_read_ceiling(m, "H100 SXM", n_gpus=2, assumptions=COURSE)
    return dict(
        w=one.weights,
        t1=one.step_time,
        t2=two.step_time,
        r1=_per_s(one.tokens_per_s_per_user),
        r2=_per_s(two.tokens_per_s_per_user),
        r2_70=_per_s(real.tokens_per_s_per_user),
        bw_pct=_pct(resolve(COURSE).bandwidth_efficiency),
    )


@_q(
    id="memory_bound",
    level="L4",
    topic="decode speed",
    title="Memory-bound or compute-bound?",
    source=SOURCES["001"],
    prompt="Llama 3.1 8B in BF16 on one H100, one user, 2,304 tokens of context. Is a decode step limited by "
    "memory or by compute? Assume {bw_pct}% of peak bandwidth and {fl_pct}% of peak FLOP/s.",
    weak='"Compute: GPUs are for arithmetic."',
    good='"Memory: each token reads the {w} of weights, about {mem:2}, and the arithmetic is tiny."',
    strong='"Memory by a factor of {ratio:2}: reading {w} takes {mem:2}, the {flops} take {comp:1}. So faster matmuls '
    "do nothing here; fewer bytes (quantization, a smaller KV cache) or a bigger batch do. On an L4 with a "
    'tenth of the bandwidth it is {l4:2} a token."',
    answer="Bytes: {w} of weights plus {kv} of KV cache, at ${H100.bandwidth.m} \\times {eta_b}$ TB/s: {mem:3}. FLOPs: "
    "{fpp} per parameter, {flops}, at ${H100.flops.m} \\times {eta_c}$ TFLOP/s: {comp:2}. The memory time is {ratio:2} "
    "times longer, so the step takes {mem:2} ({rate:3} tokens/s). On an L4 ({L4.bandwidth}): {l4:2}.",
)
def _memory_bound() -> dict[str, Any]:
    a = resolve(LAB)
    s = decode_step("Llama-3.1-8B", "H100 SXM", batch=1, context_tokens=2_304, assumptions=a)
    l4 = decode_step("Llama-3.1-8B", "L4", batch=1, context_tokens=2_304, assumptions=a)
    return dict(
        w=s.weights_read,
        kv=s.kv_read.to("GB"),
        flops=s.flops,
        mem=s.memory_time,
        comp=s.compute_time,
        ratio=float((s.memory_time / s.compute_time).to("").m),
        rate=_per_s(s.step_time),
        l4=l4.step_time,
        bw_pct=_pct(a.bandwidth_efficiency),
        fl_pct=_pct(a.compute_efficiency),
        eta_b=a.bandwidth_efficiency,
        eta_c=a.compute_efficiency,
        fpp=a.flops_per_param,
    )


@_q(
    id="prefill_time",
    level="L4",
    topic="prefill",
    title="Time to first token",
    source=SOURCES["000"],
    prompt="Qwen2.5-72B in FP8 on two H100s ({H100.flops} each in BF16, assume {fl_pct}% of it) gets a 2,000-token prompt. "
    "How long before the first token?",
    weak='"One token takes about 20 ms, so 2,000 tokens take 40 seconds."',
    good='"{fpp} FLOPs per parameter per token: {flops:3}; at {fl_pct}% of two GPUs\' peak, {t:2}."',
    strong='"Prefill is compute-bound: {flops:3} over {rate:3} is {t:2}, against {mem:2} to read the weights once. '
    "An H100 runs FP8 weights' matmuls at twice its BF16 peak, so with FP8 kernels it is nearer half that; the "
    "attention term, quadratic in the prompt, and the two GPUs' all-reduces bring it to {t_course:2}. A queue adds "
    'its wait: TTFT is more than prefill."',
    answer="FLOPs: ${fpp} \\times {Q72.billions} \\times 10^9 \\times 2000$ = {flops:4}. Compute: $2 \\times {H100.flops.m} "
    "\\times {eta_c}$ TFLOP/s = {rate:3}. Time: {t:3}, far more than one read of the {w} of weights ({mem:2}), so "
    "prefill is compute-bound and the prompt length sets the time to first token. That is the source's figure, with "
    "the matmuls at the BF16 peak. The course's method runs FP8 weights' matmuls at the FP8 peak ({H100.fp8_flops}) "
    "and counts the attention term and the all-reduces between the two GPUs ({comm_course:2}): {t_course:2}.",
)
def _prefill_time() -> dict[str, Any]:
    a = resolve(ENVELOPE)
    kw = dict(n_gpus=2, weight_bytes="fp8")
    p = prefill("Qwen2.5-72B", "H100 SXM", 2_000, assumptions=a, **kw)
    course = prefill("Qwen2.5-72B", "H100 SXM", 2_000, assumptions=COURSE, **kw)
    return dict(
        flops=p.flops,
        rate=(p.flops / p.compute_time).to("PFLOP/s"),
        t=p.time.to("s"),
        mem=p.memory_time,
        w=weight_bytes("Qwen2.5-72B", "fp8").to("GB"),
        fl_pct=_pct(a.compute_efficiency),
        eta_c=a.compute_efficiency,
        fpp=a.flops_per_param,
        t_course=course.time.to("s"),
        comm_course=course.comm_time,
    )


# --- L5: chain numbers into a decision ------------------------------------------------------------------------
@_q(
    id="max_batch",
    level="L5",
    topic="memory",
    title="How many conversations at once?",
    source=SOURCES["000"],
    prompt="Qwen2.5-72B in FP8 on two H100s, conversations of 2,300 tokens (2,000 prompt, 300 answer), {mem_pct}% "
    "of memory usable. How many conversations run at once?",
    weak='"As many as the scheduler allows."',
    good='"Free memory over KV per conversation: ({mem} - {w}) / {kv:2}, about {batch}."',
    strong='"{batch}: {free} free after the {w} of weights, {kv:2} per conversation. That is the worst case, every '
    "slot at full length; paged KV allocation usually runs more. And it is the memory limit, not the latency "
    "one: the per-user speed at that batch is {user:2} tokens/s at the datasheet bandwidth, {user_step:2} at the "
    "{bw_pct}% real kernels reach (with {o:2} a step and the two GPUs' all-reduces), and {user_course:2} once the prompts of the other conversations, prefilled "
    "between a user's steps, are counted.\"",
    answer="Usable: $2 \\times {H100.memory.m} \\times {mem_frac}$ GB = {mem}. Weights: {w}. Free for the cache: {free}. "
    "KV per conversation: {kvtok} x 2,300 = {kv:3}. Batch: {free} / {kv:3}, rounded down: {batch}. Each "
    "decode step then reads about {read:3}, giving {user:2} tokens/s per user at the datasheet bandwidth. By the "
    "course's method ({bw_pct}% of it, each cache read at its average length, prompt + half the answer, plus {o:2} "
    "a step and {comm:2} of all-reduces between the two GPUs) the step gives {user_step:2}, and the other {others} "
    "prompts' prefills between a user's steps bring it to {user_course:2}.",
)
def _max_batch() -> dict[str, Any]:
    a = resolve(ENVELOPE)
    p = serving_plan("Qwen2.5-72B", "H100 SXM", 2, 2_300, weight_bytes="fp8", assumptions=a)
    c = replica(
        "Qwen2.5-72B", "H100 SXM", tensor_parallel=2, prompt_tokens=2_000, answer_tokens=300, weight_bytes="fp8"
    )
    return dict(
        kvtok=kv_bytes_per_token("Qwen2.5-72B").to("KiB"),
        mem=p.usable_memory,
        mem_pct=_pct(a.memory_fraction),
        mem_frac=a.memory_fraction,
        w=p.weights,
        free=(p.usable_memory - p.weights).to("GB"),
        kv=p.kv_per_sequence,
        batch=p.batch,
        user=_per_s(p.tokens_per_s_per_user),
        read=(p.weights + p.batch * p.kv_per_sequence).to("GB"),
        user_step=_per_s(c.step.tokens_per_s_per_user),
        user_course=_per_s(c.tokens_per_s_per_user),
        bw_pct=_pct(c.assumptions.bandwidth_efficiency),
        o=c.step.overhead_time,
        comm=c.step.comm_time,
        others=c.batch - 1,
    )


@_q(
    id="full_gpu_step",
    level="L5",
    topic="decode speed",
    title="Why every full GPU feels the same",
    source=SOURCES["000"],
    prompt="A fully loaded H100 serves a 7B model, another serves a 72B model; both fill memory with conversations. "
    "Which one gives each user more tokens per second?",
    weak='"The 7B model: it is ten times smaller, so ten times faster."',
    good='"About the same: a full step reads the whole usable memory either way."',
    strong='"The same, about {rate:2} tokens/s: a full GPU reads its usable {mem} every step, whatever the mix of weights '
    "and cache, and {mem} / {H100.bandwidth} is {step:3}. Model size decides how many users fit ({b7} conversations "
    "of the 7B on one GPU, {b72} of the 72B on two), not how fast each goes at full load. At the {bw_pct}% of the "
    'bandwidth real kernels reach, both are slower alike: about {rate_course:2}."',
    answer="A full step reads weights plus every cache, which together fill the usable memory: ${mem_frac} \\times "
    "{H100.memory.m}$ GB = {mem}. At {H100.bandwidth}: {step:3}, so {rate:3} tokens/s per user. The planner agrees: "
    "Qwen2.5-7B on one H100 ({b7} conversations) gives {u7:2} tokens/s each, Qwen2.5-72B in FP8 on two ({b72}) gives "
    "{u72:2}. On an H200 the full step is {h200:3}, on a B200 {b200:3}. Those are datasheet ceilings; at {bw_pct}% of "
    "the bandwidth (the course's method) the full H100 step is {step_course:3}, {rate_course:2} tokens/s per user.",
)
def _full_gpu_step() -> dict[str, Any]:
    a = resolve(ENVELOPE)
    mem = usable_memory("H100 SXM", assumptions=a).to("GB")
    step = _read_time(mem, "H100 SXM", assumptions=a)
    course = _read_time(mem, "H100 SXM", assumptions=COURSE)
    p7 = serving_plan("Qwen2.5-7B", "H100 SXM", 1, 2_300, assumptions=a)
    p72 = serving_plan("Qwen2.5-72B", "H100 SXM", 2, 2_300, weight_bytes="fp8", assumptions=a)
    return dict(
        mem=mem,
        mem_frac=a.memory_fraction,
        step=step,
        rate=_per_s(step),
        b7=p7.batch,
        b72=p72.batch,
        u7=_per_s(p7.tokens_per_s_per_user),
        u72=_per_s(p72.tokens_per_s_per_user),
        h200=_read_time(usable_memory("H200 SXM", assumptions=a), "H200 SXM", assumptions=a),
        b200=_read_time(usable_memory("B200", assumptions=a), "B200", assumptions=a),
        step_course=course,
        rate_course=_per_s(course),
        bw_pct=_pct(resolve(COURSE).bandwidth_efficiency),
    )


@_q(
    id="batching",
    level="L5",
    topic="batching",
    title="Why batching is nearly free",
    source=SOURCES["004"],
    prompt="A 70B model in BF16 decodes at about 24 tokens/s for one user on an H100's bandwidth. What happens to "
    "throughput and to each user's speed at a batch of 8, 32, 128 and 256?",
    weak='"Each user slows down in proportion: the GPU is shared."',
    good='"Throughput grows with the batch and each user stays near {r1:2} tokens/s, because the weights are read once '
    'per step for the whole batch."',
    strong='"If only the weights were read: {x8}, {x32}, {x128}, {x256} tokens/s, each user still at {r1:2}. That '
    "holds until two things bite: compute, and the KV cache, which is read per sequence and has to fit. On two "
    '{H100.memory} GPUs with {w} of weights only {b} conversations of 4,000 tokens fit, not 256."',
    answer="One step reads {w} in {t} and makes one token per sequence. At batch $B$, throughput is $B / t$: "
    "{x1:2}, {x8}, {x32}, {x128} and {x256} tokens/s for $B$ = 1, 8, 32, 128, 256, each user at {r1:3}. "
    "The sequences ride along on the same weight read. The table ignores the KV reads and whether the "
    "caches fit; see the next question: {b} fit.",
)
def _batching() -> dict[str, Any]:
    m = _seed004_model()
    c = {b: weight_read_ceiling(m, "H100 SXM", batch=b, assumptions=ENVELOPE) for b in (1, 8, 32, 128, 256)}
    x = {f"x{b}": round(_per_s(c[b].throughput)) for b in (8, 32, 128, 256)}
    b = max_batch(m, "H100 SXM", 4_000, n_gpus=2, usable_fraction=1)  # the source counts all 160 GB as usable
    return dict(
        w=c[1].weights, t=c[1].step_time, r1=_per_s(c[1].tokens_per_s_per_user), x1=_per_s(c[1].throughput), b=b, **x
    )


@_q(
    id="kv_limit",
    level="L5",
    topic="KV cache",
    title="What really limits the batch",
    source=SOURCES["004"],
    prompt="A 70B-class model ({L70.layers} layers, hidden size {L70.hidden}, {L70.heads} query heads, {L70.kv_heads} KV "
    "heads) in BF16 on two {H100.memory} GPUs, "
    "4,000-token contexts. How many sequences fit? Count all 160 GB as usable, as the source does.",
    weak='"160 GB is a lot; hundreds."',
    good='"KV per token is 2 x {L70.layers} x {L70.hidden} x 2 bytes = {mha_tok:3}, so {mha_seq:3} per sequence: one fits."',
    strong='"With {L70.kv_heads} KV heads, not {L70.heads}, it is {gqa_tok:3} per token, {gqa_seq:3} per sequence; the weights leave {free}; '
    "so {b_gqa}. Grouped-query attention is the difference between {b_mha} and {b_gqa}, and the fixes all buy "
    'KV space back: more GPUs, FP8 weights, FP8 cache, shorter contexts."',
    answer="Without GQA: $2 \\times {L70.layers} \\times {L70.hidden.m} \\times 2$ = {mha_tok:3} per token, {mha_seq:3} per 4,000-token "
    "sequence. With {L70.kv_heads} KV heads of {L70.head_dim}: {gqa_tok:3} per token ({gqa_kib}), {gqa_seq:3} per sequence. Free "
    "memory: 160 GB - {w} = {free}. Sequences: {b_gqa} with GQA, {b_mha} without.",
)
def _kv_limit() -> dict[str, Any]:
    m = _seed004_model()
    mha = m.with_(kv_heads=m.heads)
    w = weight_bytes(m).to("GB")
    every = dict(n_gpus=2, usable_fraction=1)  # the source counts all 160 GB as usable
    return dict(
        mha_tok=kv_bytes_per_token(mha).to("MB"),
        mha_seq=kv_bytes_per_sequence(mha, 4_000).to("GB"),
        gqa_tok=kv_bytes_per_token(m).to("MB"),
        gqa_kib=kv_bytes_per_token(m).to("KiB"),
        gqa_seq=kv_bytes_per_sequence(m, 4_000).to("GB"),
        w=w,
        free=(usable_memory("H100 SXM", 2, 1) - w).to("GB"),
        b_gqa=max_batch(m, "H100 SXM", 4_000, **every),
        b_mha=max_batch(mha, "H100 SXM", 4_000, **every),
    )


@_q(
    id="long_context",
    level="L5",
    topic="KV cache",
    title="Why does long context cost more?",
    source=f"{SOURCES['001']} and {SOURCES['004']}",
    prompt="Llama 3.1 8B on one H100, 512-token answers. With 2,048-token prompts a million output tokens cost one "
    "price; why does the same model with 32,768-token prompts cost far more, when the FLOPs per generated token "
    "barely change?",
    weak='"Because providers charge more for it."',
    good='"The KV cache grows linearly with context, so fewer conversations fit at once."',
    strong='"At {kvtok} per token a 32K conversation holds {kv32k:2}; the batch drops from {b_short} to {b_long}, so '
    "throughput drops from {x_short:3} to {x_long:3} tokens/s on the same GPU-hour: {c_short:2} against "
    "{c_long:3} per million tokens, {ratio:2} times. Each step still reads every cache, and each 32K prompt's "
    "prefill, quadratic in its length, takes {share_long:2}% of the replica's time.\"",
    answer="KV per token: {kvtok}. At 2,560 tokens a conversation holds {kv_short:3}; {b_short} fit beside the "
    "weights, and with each batch's prefill charged (the course's method) the GPU makes {x_short:3} tokens/s, "
    "{c_short:2} per million at the catalog's {H100.price_per_hour}. At 33,280 tokens: {kv_long:3} each, {b_long} "
    "fit, {x_long:3} tokens/s, {c_long:3} per million. The price is the GPU-hour divided by the tokens it makes, and "
    "the cache decides how many conversations share the hour. The prompts' prefill, whose attention term grows with "
    "the square of the prompt, takes {share_short:2}% of the replica's time at 2K and {share_long:2}% at 32K.",
)
def _long_context() -> dict[str, Any]:
    short = replica("Llama-3.1-8B", "H100 SXM", prompt_tokens=2_048, answer_tokens=512)
    long = replica("Llama-3.1-8B", "H100 SXM", prompt_tokens=32_768, answer_tokens=512)
    return dict(
        kvtok=kv_bytes_per_token("Llama-3.1-8B").to("KiB"),
        kv32k=kv_bytes_per_sequence("Llama-3.1-8B", 32_768).to("GiB"),
        kv_short=short.kv_per_sequence,
        kv_long=long.kv_per_sequence,
        b_short=short.batch,
        b_long=long.batch,
        x_short=_per_s(short.throughput),
        x_long=_per_s(long.throughput),
        c_short=short.cost_per_million_output_tokens,
        c_long=long.cost_per_million_output_tokens,
        ratio=float((long.cost_per_million_output_tokens / short.cost_per_million_output_tokens).to("").m),
        share_short=_pct(short.prefill_share),
        share_long=_pct(long.prefill_share),
    )


@_q(
    id="gqa",
    level="L5",
    topic="KV cache",
    title="A bigger model with a smaller cache",
    source=SOURCES["001"],
    prompt="Llama 2 7B and Llama 3.1 8B both have {L8.layers} layers and {L8.heads} query heads of {L8.head_dim}. Which has the larger KV cache "
    "per token, and how many 32K-token conversations (plus 512 answer tokens) fit on one H100?",
    weak='"The 8B: more parameters, more cache."',
    good='"Llama 2 7B: {kv2} against {kv3}, because Llama 3.1 shares {L8.kv_heads} KV heads among {L8.heads} query heads."',
    strong='"Llama 2 7B, by {ratio:1}x: {kv2} against {kv3} (grouped-query attention, {L8.kv_heads} KV heads). At 32K that is '
    '{b2} conversations on an H100 against {b3}. Architecture beats parameter count for serving cost."',
    answer="Llama 2 7B: $2 \\times {L2.layers} \\times {L2.kv_heads} \\times {L2.head_dim} \\times 2$ = {kv2}. Llama 3.1 8B: $2 \\times {L8.layers} \\times {L8.kv_heads} "
    "\\times {L8.head_dim} \\times 2$ = {kv3}, {ratio:1} times less. At 33,280 tokens per conversation and {mem_pct}% of "
    "{H100.memory} usable: {b2} conversations of Llama 2 7B fit and {b3} of Llama 3.1 8B.",
)
def _gqa() -> dict[str, Any]:
    a = resolve(LAB)
    kv2, kv3 = kv_bytes_per_token("Llama-2-7B"), kv_bytes_per_token("Llama-3.1-8B")
    return dict(
        kv2=kv2.to("KiB"),
        kv3=kv3.to("KiB"),
        ratio=float((kv2 / kv3).to("").m),
        b2=max_batch("Llama-2-7B", "H100 SXM", 33_280, assumptions=a),
        b3=max_batch("Llama-3.1-8B", "H100 SXM", 33_280, assumptions=a),
        mem_pct=_pct(a.memory_fraction),
    )


@_q(
    id="quantization",
    level="L5",
    topic="decode speed",
    title="Why quantization speeds up decode",
    source=SOURCES["001"],
    prompt="Llama 3.1 8B on one H100, one user, 2,304 tokens of context, {bw_pct}% of peak bandwidth. BF16 decodes in "
    "about 7 ms a token. What does INT4 give, and why?",
    weak='"INT4 arithmetic is faster."',
    good='"About four times fewer bytes to read: roughly {t4:2}."',
    strong='"Decode is memory-bound, so the time follows the bytes: {w4:2} of weights instead of {w16:3}, plus the same '
    "{kv:2} of cache: {t4:2}, or {t4s:2} once the 16-bit scale per 128 weights is counted. The multiply is not "
    'faster; there is less to move."',
    answer="BF16: {w16:3} of weights + {kv:2} of KV at {eta_b} x {H100.bandwidth} = {t16:2}. INT4 at half a byte: {w4:2} + "
    "{kv:2} = {t4:3}. Real INT4 formats carry a 16-bit scale for each group of 128 weights, {scale:3} per "
    'weight in all: {t4s:3}, the source\'s "about 1.9 ms".',
)
def _quantization() -> dict[str, Any]:
    a = resolve(LAB)
    kw = dict(batch=1, context_tokens=2_304, assumptions=a)
    s16 = decode_step("Llama-3.1-8B", "H100 SXM", **kw)
    s4 = decode_step("Llama-3.1-8B", "H100 SXM", weight_bytes="int4", **kw)
    # 4-bit values plus one FP16 scale per group of 128 weights
    scale = Q_(bytes_per_value("int4"), "B") + Q_(bytes_per_value("fp16"), "B") / 128
    s4s = decode_step("Llama-3.1-8B", "H100 SXM", weight_bytes=scale, **kw)
    return dict(
        w16=s16.weights_read,
        w4=s4.weights_read,
        kv=s16.kv_read,
        t16=s16.step_time,
        t4=s4.step_time,
        t4s=s4s.step_time,
        scale=scale,
        bw_pct=_pct(a.bandwidth_efficiency),
        eta_b=a.bandwidth_efficiency,
    )


@_q(
    id="batch_cost",
    level="L5",
    topic="cost",
    title="What a batch does to the price",
    source=SOURCES["001"],
    prompt="Llama 3.1 8B on one H100 at \\$3 per GPU-hour; prompts of 256 tokens, answers of 64. What happens to time "
    "per token, throughput and cost per million output tokens going from 1 to 64 concurrent requests?",
    weak='"64 times the work costs 64 times as much."',
    good='"The time per token barely moves, so throughput and cost improve about 50-fold."',
    strong='"The step goes from {t1:2} to {t64:2}, so throughput goes from {x1:3} to {x64:3} tokens/s and the price per '
    "million output tokens from {c1:3} to {c64:2}. Batching is the business model; it stops paying when compute "
    'or the KV reads catch up with the weight read."',
    answer="Batch 1: {t1:2} per step, {x1:3} tokens/s. Batch 64: {t64:2} (the weights are read once; only the small "
    "caches are extra), {x64:3} tokens/s. Counting prefill and decode time, a GPU-hour makes {c1:3} per "
    "million tokens at batch 1 and {c64:2} at 64.",
)
def _batch_cost() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for b in (1, 64):
        c = request_cycle(
            "Llama-3.1-8B",
            "H100 SXM",
            batch=b,
            prompt_tokens=256,
            answer_tokens=64,
            price_per_hour=Q_(3, "USD/hour"),
            assumptions=LAB,
        )
        out |= {f"t{b}": c.decode.step_time, f"x{b}": _per_s(c.throughput), f"c{b}": c.cost_per_million_output_tokens}
    return out


@_q(
    id="cost_per_million",
    level="L5",
    topic="cost",
    title="Cost per million tokens",
    source=SOURCES["000"],
    prompt="Qwen2.5-72B in FP8 on two H100s at {H100.price_per_hour}, 2,000-token prompts and 300-token answers, "
    "running full at {x:4} output tokens/s. What does a million output tokens cost, and what if the fleet averages "
    "{util_pct}% utilisation?",
    weak='"About a cent: GPUs are fast."',
    good='"Two GPUs at {H100.price_per_hour} each make {x:4} x 3,600 tokens an hour: {c:2} per million."',
    strong='"{c:2} per million at full load, but GPUs bill when idle: at {util_pct}% average utilisation, {c30:3}. And '
    "{x:4} tokens/s assumes the datasheet bandwidth and free prefill; at {bw_pct}% of the bandwidth, with {o:2} a step, "
    "the two GPUs' all-reduces and every prompt's prefill charged, the replica makes {x_course:4}: {c_course:3} per million, {c30_course:3} at "
    "{util_pct}%. The 7B model on one GPU is {c7_course:2} by the same method, {ratio7:2} times cheaper: routing easy "
    'requests to it beats any serving trick."',
    answer="Price per hour over tokens per hour: $2 \\times {H100.price_per_hour.m}$ USD/h / ({x:4} x 3,600 tokens/h) x "
    "$10^6$ = {c:3}. At {util_pct}% average utilisation: {c:3} / {util} = {c30:3}. For comparison, Qwen2.5-7B on one "
    "H100 runs {x7:4} tokens/s: {c7:1} per million. Those are the back-of-the-envelope method's figures: the datasheet "
    "bandwidth, and prefill not charged. By the course's method ({bw_pct}% of the bandwidth, {o:2} a step, the "
    "all-reduces between the two GPUs, each batch's prefill charged) the 72B replica makes {x_course:4} tokens/s, {c_course:3} per million ({c30_course:3} at "
    "{util_pct}%), and the 7B {x7_course:4} tokens/s, {c7_course:2} per million.",
)
def _cost_per_million() -> dict[str, Any]:
    a = resolve(ENVELOPE)
    util = 0.3  # the question's given: the fleet is busy 30% of the hours it is billed
    p = serving_plan("Qwen2.5-72B", "H100 SXM", 2, 2_300, weight_bytes="fp8", assumptions=a)
    p7 = serving_plan("Qwen2.5-7B", "H100 SXM", 1, 2_300, assumptions=a)
    work = dict(prompt_tokens=2_000, answer_tokens=300)
    c = replica("Qwen2.5-72B", "H100 SXM", tensor_parallel=2, weight_bytes="fp8", assumptions=COURSE, **work)
    c7 = replica("Qwen2.5-7B", "H100 SXM", assumptions=COURSE, **work)

    def at_util(cost: pint.Quantity) -> pint.Quantity:
        return F["cost_at_utilisation"](cost_full=cost, utilisation=util).to("USD")

    return dict(
        x=_per_s(p.output_tokens_per_s),
        c=p.cost_per_million_output_tokens,
        c30=at_util(p.cost_per_million_output_tokens),
        x7=_per_s(p7.output_tokens_per_s),
        c7=p7.cost_per_million_output_tokens,
        util=util,
        util_pct=_pct(util),
        x_course=_per_s(c.throughput),
        c_course=c.cost_per_million_output_tokens,
        c30_course=at_util(c.cost_per_million_output_tokens),
        x7_course=_per_s(c7.throughput),
        c7_course=c7.cost_per_million_output_tokens,
        ratio7=float((c.cost_per_million_output_tokens / c7.cost_per_million_output_tokens).to("").m),
        share_course=_pct(c.prefill_share),
        bw_pct=_pct(c.assumptions.bandwidth_efficiency),
        o=c.step.overhead_time,
    )


@_q(
    id="scale_traffic",
    level="L5",
    topic="fleet",
    title="Ten times the traffic",
    source=SOURCES["000"],
    prompt="The support assistant ({tout:4} answer tokens/s at peak) runs on Qwen2.5-72B in FP8, two H100s per "
    "replica at {x:4} tokens/s. How many GPUs now, and at ten times the traffic?",
    weak='"Ten times the traffic, ten times two GPUs: twenty."',
    good='"{tout10:5} / {x:4} = {exact:2}, so {r10} replicas, {g10} GPUs."',
    strong='"Today one replica covers it, but I run {r1} for redundancy: {g1} GPUs. At ten times: {tout10:5} / {x:4} = '
    "{exact:2}, so {r10} replicas, {g10} GPUs, at full load with no headroom for bursts. But {x:4} tokens/s is the "
    "datasheet bandwidth with prefill free: charging prefill, a replica makes {x_course:4}, and with {h_course:2}x "
    'headroom that is {g1_course} GPUs today and {g10_course} at ten times."',
    answer="Replicas are $\\lceil D / X \\rceil$. Now: {tout:4} / {x:4} = {exact1:2}, one replica; two for "
    "redundancy, {g1} GPUs. At ten times: {tout10:5} / {x:4} = {exact:3}, so {r10} replicas, {g10} GPUs. "
    "Capacity is linear in traffic. Those are the back-of-the-envelope method's figures. By the course's method "
    "({bw_pct}% of the bandwidth, {o:2} a step, the all-reduces between the two GPUs, each batch's prefill charged) "
    "a replica makes {x_course:4} tokens/s, and a fleet "
    "keeps {h_course:2}x headroom, $\\lceil {h_course:2}\\,D / X \\rceil$: {exact1_course:2}, so {r1_course} replicas "
    "({g1_course} GPUs) now, and {exact_course:4}, so {r10_course} replicas ({g10_course} GPUs), at ten times.",
)
def _scale_traffic() -> dict[str, Any]:
    t = traffic(Q_(200_000, "1/day"), 2_000, 300, peak_factor=3)
    t10 = traffic(Q_(2_000_000, "1/day"), 2_000, 300, peak_factor=3)
    shape = dict(tensor_parallel=2, weight_bytes="fp8")
    env = replica("Qwen2.5-72B", "H100 SXM", context_tokens=2_300, assumptions=ENVELOPE, **shape)
    course = replica("Qwen2.5-72B", "H100 SXM", prompt_tokens=2_000, answer_tokens=300, assumptions=COURSE, **shape)
    e1, e10 = fleet(t.output_tokens_per_s, env), fleet(t10.output_tokens_per_s, env)
    c1, c10 = fleet(t.output_tokens_per_s, course), fleet(t10.output_tokens_per_s, course)
    r1, r1c = max(MIN_REPLICAS, e1.replicas), max(MIN_REPLICAS, c1.replicas)
    return dict(
        tout=_per_s(t.output_tokens_per_s),
        tout10=_per_s(t10.output_tokens_per_s),
        x=_per_s(env.throughput),
        exact1=e1.replicas_exact,
        exact=e10.replicas_exact,
        r1=r1,
        g1=r1 * env.tensor_parallel,
        r10=e10.replicas,
        g10=e10.gpus,
        x_course=_per_s(course.throughput),
        h_course=c10.headroom,
        exact1_course=c1.replicas_exact,
        r1_course=r1c,
        g1_course=r1c * course.tensor_parallel,
        exact_course=c10.replicas_exact,
        r10_course=c10.replicas,
        g10_course=c10.gpus,
        bw_pct=_pct(course.assumptions.bandwidth_efficiency),
        o=course.step.overhead_time,
    )


@_q(
    id="littles_law",
    level="L5",
    topic="fleet",
    title="How many conversations are live?",
    source=SOURCES["004"],
    prompt="A service answers 1.5 billion requests a day with 1,250-token answers streamed at 50 tokens/s. How many "
    "requests are in flight at once, and what does that mean per GPU on a fleet of {gpus:5} GPUs?",
    weak='"17,000 requests a second, so 17,000 at a time."',
    good='"Each answer takes 1,250 / 50 = {t:2}; Little\'s law: {rps:5} x {t:2} = {n:3} in flight."',
    strong="\"{n:3} in flight by Little's law, about {per_gpu:2} conversations on every GPU, each holding its KV cache "
    "for {t:2}. So the question is whether {per_gpu:2} caches fit beside the weights: memory, not compute, "
    'decides."',
    answer="Arrival rate: $1.5 \\times 10^9$ / 86,400 s = {rps:5} requests/s. Time in the system: 1,250 tokens / 50 "
    "tokens/s = {t:2}. Little's law, $N = \\lambda t$: {n:4} requests in flight. Over {gpus:5} GPUs: "
    "{per_gpu:2} each.",
)
def _littles_law() -> dict[str, Any]:
    rate = traffic(Q_(1.5e9, "1/day"), 1, 1).request_rate.to("1/s")
    t = F["generation_time"](tokens_per_request=1_250, token_rate=Q_(50, "1/s")).to("s")
    n = float(F["littles_law"](request_rate=rate, time_in_system=t).m)
    g = QUESTIONS["huge_fleet"].numbers()["g2000"]
    return dict(rps=float(rate.m), t=t, n=n, gpus=g, per_gpu=n / g)


@_q(
    id="h200",
    level="L5",
    topic="hardware",
    title="H100 or H200?",
    source=SOURCES["course"],
    prompt="Llama 3.1 70B in FP8, 2,000-token prompts and 400-token answers: one H200 ({H200.memory}, "
    "{H200.bandwidth}, {H200.price_per_hour}) or two H100s ({H100.memory}, {H100.bandwidth}, {H100.price_per_hour} "
    "each)?",
    weak='"The H200 is newer, so it is better."',
    good='"The weights fit on one H200; two H100s have more memory and bandwidth in all."',
    strong='"Two H100s: {b_h100} conversations at {u_h100:2} tokens/s each, {c_h100:3} per million; one H200: {b_h200} at '
    "{u_h200:2}, {c_h200:3}. The H200 holds the weights on one GPU and pays no tensor-parallel all-reduces, which "
    'cost the pair {comm:2} a step; even so the pair wins on latency and on price."',
    answer="Two H100s: {mem_h100} usable, {w} of weights, {b_h100} conversations of {kv:3}. A full step reads the "
    "weights and every cache (at its average length, prompt + half the answer) at {bw_pct}% of twice "
    "{H100.bandwidth}, plus {o:2} and {comm:2} of all-reduces; with the other requests' prompts prefilled between a user's steps that is {u_h100:2} "
    "tokens/s per user; with each batch's prefill charged, {x_h100:4} tokens/s in all, "
    "{c_h100:3} per million tokens. One H200: {mem_h200} usable, {b_h200} conversations, {u_h200:2} tokens/s each, "
    "{x_h200:3} in all, {c_h200:3} per million.",
)
def _h200() -> dict[str, Any]:
    work = dict(prompt_tokens=2_000, answer_tokens=400, weight_bytes="fp8", assumptions=COURSE)
    a = replica("Llama-3.1-70B", "H100 SXM", tensor_parallel=2, **work)
    b = replica("Llama-3.1-70B", "H200 SXM", **work)
    return dict(
        w=a.weights,
        kv=a.kv_per_sequence,
        mem_h100=a.usable_memory,
        mem_h200=b.usable_memory,
        b_h100=a.batch,
        b_h200=b.batch,
        u_h100=_per_s(a.tokens_per_s_per_user),
        u_h200=_per_s(b.tokens_per_s_per_user),
        x_h100=_per_s(a.throughput),
        x_h200=_per_s(b.throughput),
        c_h100=a.cost_per_million_output_tokens,
        c_h200=b.cost_per_million_output_tokens,
        bw_pct=_pct(a.assumptions.bandwidth_efficiency),
        o=a.step.overhead_time,
        comm=a.step.comm_time,
    )


# --- Staff+: the whole system, assumptions stated ---------------------------------------------------------------
@_q(
    id="roofline_fleet",
    level="Staff+",
    topic="fleet",
    title="Size a chat fleet",
    source=SOURCES["002"],
    prompt="A chat product peaks at 350 requests/s, 2,000 prompt and 400 answer tokens each, and needs at least 30 "
    "tokens/s per user. Serve Llama 3.1 70B in FP8 on H100s: how many GPUs, and what does it cost a month?",
    weak='"350 requests a second, maybe 350 GPUs."',
    good='"{demand:3} answer tokens/s; a two-GPU replica at batch 64 makes about {x:3}; so about {naive} replicas."',
    strong='"TP=2 so the {w} of weights leave room for cache. Batch 64 at 2,400 tokens: {read:3} a step over {bw_pct}% '
    "of twice {H100.bandwidth}, {step:3}, {user:2} tokens/s per user, over the 30 target; {x:4} tokens/s per replica. "
    "Keep {hf_pct}% for prefill and bursts: {usable:4}. {replicas} replicas, {gpus} H100s, about {cost:3} a month "
    "always on. Then I check prefill: at that rate a replica's prompts need {need:2} of compute, and decode leaves "
    "only {idle:2} idle, so the headroom cannot hold it. Charging each batch's prefill, a replica makes "
    '{x_course:4} tokens/s, and the fleet is {gpus_course} H100s, {cost_course:3} a month."',
    answer="Demand: 350 x 400 = {demand:3} answer tokens/s. Replica: TP=2 (the {w} of FP8 weights leave {left1:2} "
    "on one GPU). KV per sequence: 2,400 x {kvtok} = {kv:2}. Batch 64: {read:3} per step at $2 \\times "
    "{H100.bandwidth.m} \\times {eta_b}$ TB/s = {step:3} (compute: {comp:1}, so memory-bound); {user:2} tokens/s per "
    "user; {x:4} tokens/s per replica; memory used {used:3} of {mem:3}. With {hf_pct}% headroom: {usable:4} usable. "
    "Replicas: {demand:3} / {usable:4} = {exact:3}, so {replicas}; {gpus} GPUs; {gpus} x {hours} x "
    "{H100.price_per_hour} = {cost:3} a month. That is the capacity-planning method, which charges no prefill. Its "
    "{hf_pct}% headroom is said to absorb prefill, but at {usable:4} usable tokens/s a replica's prompts need "
    "{need:2} of prefill compute, while decode leaves only {idle:2} of the replica's {roof:2} idle. The course's "
    "method charges each batch's prefill (at the FP8 peak, with the attention term, each cache read at its average "
    "length, {o:2} a step and the all-reduces between the two GPUs): a replica makes {x_course:4} tokens/s ({share_course:2}% of its time prefilling), and with "
    "{h_course:2}x headroom the fleet is {replicas_course} replicas, {gpus_course} H100s, {cost_course:3} a month.",
)
def _roofline_fleet() -> dict[str, Any]:
    a, g, prompt, answer = resolve(CAPACITY), gpus["H100 SXM"], 2_000, 400
    shape = dict(tensor_parallel=2, batch=64, weight_bytes="fp8")
    r = replica("Llama-3.1-70B", g, context_tokens=prompt + answer, assumptions=a, **shape)
    demand = F["token_rate"](request_rate=Q_(350, "1/s"), tokens_per_request=answer).to("1/s")
    f = fleet(demand, r)
    # does decode's idle compute hold the prefill the capacity method leaves out? (per replica, at the usable rate)
    budget = compute_budget(
        replica("Llama-3.1-70B", g, prompt_tokens=prompt, answer_tokens=answer, assumptions=a, **shape),
        f.usable_throughput_per_replica,
    )
    need, roof, used = budget.prefill, budget.usable, budget.decode
    c = replica("Llama-3.1-70B", g, prompt_tokens=prompt, answer_tokens=answer, assumptions=COURSE, **shape)
    fc = fleet(demand, c)
    return dict(
        demand=_per_s(demand),
        kvtok=kv_bytes_per_token("Llama-3.1-70B").to("KiB"),
        hours=HOURS_PER_MONTH,
        left1=(g.memory - weight_bytes("Llama-3.1-70B", "fp8")).to("GB"),
        w=r.weights,
        kv=r.kv_per_sequence,
        read=(r.step.weights_read + r.step.kv_read).to("GB"),
        step=r.step.step_time,
        comp=r.step.compute_time,
        user=_per_s(r.tokens_per_s_per_user),
        x=_per_s(r.throughput),
        used=r.memory_used,
        mem=r.usable_memory,
        usable=_per_s(f.usable_throughput_per_replica),
        exact=f.replicas_exact,
        replicas=f.replicas,
        gpus=f.gpus,
        cost=f.monthly_cost,
        naive=int(F["replicas_needed"](demand=demand, throughput=r.throughput).m),
        bw_pct=_pct(a.bandwidth_efficiency),
        eta_b=a.bandwidth_efficiency,
        hf_pct=_pct(a.headroom_fraction),
        need=need,
        roof=roof,
        used_flops=used,
        idle=budget.idle,
        x_course=_per_s(c.throughput),
        share_course=_pct(c.prefill_share),
        h_course=fc.headroom,
        replicas_course=fc.replicas,
        gpus_course=fc.gpus,
        cost_course=fc.monthly_cost,
        o=c.step.overhead_time,
    )


@_q(
    id="prefill_pool",
    level="Staff+",
    topic="prefill",
    title="Don't forget prefill",
    source=SOURCES["002"],
    prompt="The same chat product takes 700,000 prompt tokens/s at peak on Llama 3.1 70B. If prefill ran on its own "
    "H100s at {fl_pct}% of peak BF16, how many would it need? What would you do about it?",
    weak='"Prefill is one pass; it is free compared to decode."',
    good='"{fpp} x {L70.billions}B x 700,000 = {rate:2} of compute: about {gpus} H100s."',
    strong='"{rate:2}, about {gpus} H100s on their own: more than the decode fleet. A 50% prefix-cache hit rate, '
    "common in multi-turn chat, halves it to {gpus_cached}. The hope is that prefill fills the compute that "
    "memory-bound decode leaves idle, inside the {hf_pct}% headroom; but per replica the prompts need {need:2} and "
    "decode leaves {idle:2}. So I charge prefill to the replicas ({gpus_course} H100s for the whole fleet by the "
    "course's method), and for 20K-token RAG prompts I would size a separate prefill pool.\"",
    answer="FLOP/s: ${fpp} \\times {L70.billions} \\times 10^9 \\times 700{{,}}000$ = {rate:3}. One H100 at {fl_pct}% "
    "gives {per_gpu:3}; GPUs: {rate:3} / {per_gpu:3}, rounded up: {gpus}. With half the prompt tokens served from the "
    "prefix cache: {gpus_cached}. Can decode's idle compute do it instead? A replica of two H100s has {roof:2} at "
    "{fl_pct}% of peak; decoding its {usable:4} usable tokens/s takes {used_flops:2}, leaving {idle:2}, while its "
    "requests' prompts need {need:2}. It does not fit, so the fleet must be sized with prefill charged: "
    "{gpus_course} H100s rather than {gpus_capacity}.",
)
def _prefill_pool() -> dict[str, Any]:
    a, g = resolve(CAPACITY), gpus["H100 SXM"]
    p = prefill_pool(Q_(700_000, "1/s"), "Llama-3.1-70B", g, assumptions=a)
    half = prefill_pool(Q_(350_000, "1/s"), "Llama-3.1-70B", g, assumptions=a)
    fl = QUESTIONS["roofline_fleet"].numbers()
    return dict(
        rate=p.compute_rate,
        gpus=p.gpus,
        gpus_cached=half.gpus,
        per_gpu=(g.peak_flops(matmul_precision(2, g, a)) * a.compute_efficiency).to("PFLOP/s"),
        fl_pct=_pct(a.compute_efficiency),
        fpp=a.flops_per_param,
        gpus_capacity=fl["gpus"],
        **{k: fl[k] for k in ("hf_pct", "need", "idle", "roof", "used_flops", "usable", "gpus_course")},
    )


@_q(
    id="huge_fleet",
    level="Staff+",
    topic="fleet",
    title="A billion requests a day",
    source=SOURCES["004"],
    prompt="1.5 billion requests a day, each answered with about 5 KB of text. A GPU makes about 2,000 tokens/s "
    "batched. How many GPUs? How sensitive is that to the per-GPU figure?",
    weak='"1.5 billion a day is 17,000 a second; a few hundred servers."',
    good='"5,000 characters at 4 per token is {tok} tokens; {rps:5} x {tok} = {demand:3} tokens/s; over 2,000: about '
    '{g2000:3} GPUs."',
    strong='"{demand:3} tokens/s over 2,000 is {g2000:3} GPUs; at 1,000 tokens/s {g1000:3}, at 4,000 {g4000:3}. '
    "Doubling per-GPU throughput halves the fleet, so batching and the KV cache are worth more than anything "
    'in the web tier, and every feature is judged by whether it moves work off the GPUs."',
    answer="Requests: $1.5 \\times 10^9$ / 86,400 s = {rps:5}/s. Tokens per answer: 5,000 characters / 4 = {tok}. "
    "Demand: {rps:5} x {tok} = {demand:3} tokens/s. GPUs, $\\lceil D / X \\rceil$: {g1000:5} at 1,000 "
    "tokens/s each, {g2000:5} at 2,000, {g4000:4} at 4,000.",
)
def _huge_fleet() -> dict[str, Any]:
    tok = int(F["tokens_from_characters"](characters=5_000, chars_per_token=4).m)
    t = traffic(Q_(1.5e9, "1/day"), 1, tok)
    g = {
        f"g{x}": int(F["replicas_needed"](demand=t.output_tokens_per_s, throughput=Q_(x, "1/s")).m)
        for x in (1_000, 2_000, 4_000)
    }
    return dict(rps=float(t.request_rate.to("1/s").m), tok=tok, demand=float(t.output_tokens_per_s.to("1/s").m), **g)


@_q(
    id="moe",
    level="Staff+",
    topic="mixture of experts",
    title="Is a mixture of experts cheap to serve?",
    source=SOURCES["001"],
    prompt="Qwen3-30B-A3B has {Q30.billions}B parameters, {Q30.active_billions}B active per token "
    "({Q30.experts_per_token} of {Q30.experts} experts). On one H100 with 2,304 "
    "tokens of context, how fast is decode at batch 1 and at batch 32, against Llama 3.1 8B?",
    weak='"It uses 3B parameters a token, so it is ten times faster than a 30B model, at any batch."',
    good='"At batch 1 it reads only the active weights, {w1:2}: {t1:2} a token, faster than the 8B\'s {t8:2}."',
    strong='"At batch 1, {t1:3}, faster than Llama 3.1 8B ({t8:2}). At batch 32 the tokens pick different experts: '
    "with uniform routing {phi:2}% of experts are touched, so a step reads {w32:2} and takes {t32:2}. All "
    '{w:3} must sit in memory anyway. Cheap at low batch, dense-like at high batch."',
    answer="Batch 1: the shared weights plus {Q30.experts_per_token} of {Q30.experts} experts, {w1:2}, and the cache: {t1:2} a step. Batch 32: the "
    "chance an expert is untouched is $(1 - {Q30.experts_per_token}/{Q30.experts})^{{32}}$, so a fraction {phi:2}% is read, {w32:2} of the "
    "{w:3}: {t32:2} a step. Llama 3.1 8B at batch 1: {t8:2}.",
)
def _moe() -> dict[str, Any]:
    kw = dict(context_tokens=2_304, assumptions=LAB)
    s1 = decode_step("Qwen3-30B-A3B", "H100 SXM", batch=1, **kw)
    s32 = decode_step("Qwen3-30B-A3B", "H100 SXM", batch=32, **kw)
    s8 = decode_step("Llama-3.1-8B", "H100 SXM", batch=1, **kw)
    return dict(
        w=weight_bytes("Qwen3-30B-A3B").to("GB"),
        w1=s1.weights_read,
        w32=s32.weights_read,
        t1=s1.step_time,
        t32=s32.step_time,
        t8=s8.step_time,
        phi=100 * s32.fraction_of_experts,
    )


@_q(
    id="pushback",
    level="Staff+",
    topic="review",
    title="Check a colleague's estimate",
    source=SOURCES["004"],
    prompt='A colleague says: "a 70B model on H100s is capped at 24 tokens/s per user, and 4,000-token contexts '
    'need 10.5 GB of KV each." What do you check?',
    weak='"Sounds right."',
    good='"The KV figure uses the hidden size; with 8 KV heads it is {gqa_seq:3}, not {mha_seq:3}."',
    strong='"Two things. The cache: {mha_seq:3} assumes a KV head per query head; Llama-style 70B models have 8, so '
    "{gqa_seq:3}, and {b_gqa} sequences fit on two GPUs instead of {b_mha}. The cap: 24 tokens/s is 140 GB "
    "over one GPU's bandwidth, but 140 GB needs two GPUs and they read in parallel: {r2:2} tokens/s. Both "
    'errors make the service look worse than it is."',
    answer="KV: {mha_seq:3} per sequence is $2 \\times {L70.layers} \\times {L70.hidden.m} \\times 2$ B per token, the MHA size; with "
    "{L70.kv_heads} KV heads it is {gqa_seq:3}, and the sequences that fit go from {b_mha} to {b_gqa}. Speed: {w} / {H100.bandwidth} "
    "gives {r1:2} tokens/s, but the weights only fit on two GPUs, whose twice {H100.bandwidth} gives {r2:2}.",
)
def _pushback() -> dict[str, Any]:
    a, b = QUESTIONS["kv_limit"].numbers(), QUESTIONS["single_stream"].numbers()
    return {k: a[k] for k in ("mha_seq", "gqa_seq", "b_gqa", "b_mha")} | {k: b[k] for k in ("w", "r1", "r2")}


# --- speculative decoding (book/08b_speculative.md) ---------------------------------------------------------------
def _spec() -> Any:
    """The speculative-decoding module, imported when a question needs it (its formulas are solved at import)."""
    from llmcourse import speculative

    return speculative


@_q(
    id="spec_expected",
    level="L4",
    topic="speculative decoding",
    title="What does a draft buy?",
    prompt="A draft proposes {k} tokens and the target accepts each with probability {alpha}. How many tokens does a "
    "verification step yield? How much faster does one user of Llama 3.1 70B (FP8, 2 x H100, 2,000-token prompts, "
    "300-token answers) go with a Llama 3.1 8B draft?",
    weak='"{k} tokens per step, so {k} times faster."',
    good='"1 + {alpha} + {alpha}^2 + ... + {alpha}^{k} = {tau:4} tokens per step, so about {tau:2} times faster."',
    strong='"{tau:4} tokens per verification step: the first rejection ends it. At batch 1 the verification of '
    "{positions} positions reads what a plain step reads and costs about one, {verify:3}, so it is nearly free; but "
    "the 8B draft's {k} steps cost {draft:2} each, every one a decode step with its own {over:2} of overhead and its "
    "all-reduces: {cycle:3} a cycle for {tau:3} tokens, {speedup:3}x, from {user_plain:2} to {user_spec:3} "
    'tokens/s."',
    answer="Expected tokens: $\\sum_{{i=0}}^{{{k}}} {alpha}^i = (1 - {alpha}^{{{positions}}}) / (1 - {alpha})$ = "
    "{tau:5}. Plain step, by the course's method: ({w70:3} of weights + the cache at 2,150 tokens) / (2 x "
    "{bw_pct}% of {H100.bandwidth}) = {plain_read:3}, plus {over:2} of fixed overhead and {plain_comm:2} of "
    "all-reduces (two per layer) = {plain:3}. The verification of {positions} positions per sequence is still "
    "memory-bound and reads the same bytes; only its all-reduces carry {positions} tokens' activations: {verify:3}. "
    "A step of the FP8 8B draft is a decode step too: {draft_read:3} of reads + {over:2} + {draft_comm:2} of "
    "all-reduces = {draft:3}. A cycle, {verify:3} + {k} x {draft:3} = {cycle:3}, yields {tau:3} tokens: "
    "{per_token:3} a token instead of {plain:3}, a speed-up of {speedup:3}.",
)
def _spec_expected() -> dict[str, Any]:
    sp = _spec()
    spec = sp.Speculation("draft model", 4, 0.8, "Llama-3.1-8B")
    s = sp.speculative_step(
        "Llama-3.1-70B", "H100 SXM", spec, context_tokens=2_000 + 300 / 2, tensor_parallel=2, weight_bytes="fp8"
    )
    return dict(
        k=spec.draft_tokens,
        alpha=spec.acceptance,
        positions=spec.draft_tokens + 1,
        tau=s.expected_tokens,
        w70=weight_bytes("Llama-3.1-70B", "fp8").to("GB"),
        bw_pct=_pct(resolve(COURSE).bandwidth_efficiency),
        plain=s.plain.step_time,
        plain_read=s.plain.memory_time,
        plain_comm=s.plain.comm_time,
        over=s.plain.overhead_time,
        verify=s.verify.step_time,
        draft=s.draft_step_time,
        draft_read=s.draft.memory_time,
        draft_comm=s.draft.comm_time,
        cycle=s.cycle_time,
        per_token=s.time_per_token,
        speedup=s.speedup,
        user_plain=_per_s(s.plain.tokens_per_s_per_user),
        user_spec=_per_s(s.tokens_per_s_per_user),
    )


@_q(
    id="spec_crossover",
    level="L5",
    topic="speculative decoding",
    title="When does speculation stop paying?",
    prompt="Llama 3.1 8B on one H100 serves short chats (each cache read at {ctx} tokens) with its EAGLE-3 head: "
    "{k} draft tokens, each accepted with probability {alpha}. At a batch of {batch}, is speculation still helping? "
    "Where does it stop?",
    weak='"Speculation always helps: more tokens per step."',
    good='"While decode is memory-bound the verification is nearly free, so it helps; at large batches the '
    'verification does {positions} times the FLOPs, and it stops helping."',
    strong='"It stops paying from a batch of {cross}: there the verification of {positions} positions per sequence '
    "is compute-bound and costs more than its {tau:3} tokens are worth. At {batch} it gives {speedup:2}x: {x:3} "
    "tokens/s instead of {x_plain:3}. Engines turn it off above a batch like that, or shorten k. With a long "
    'context the cache reads keep decode memory-bound: at 2,150 tokens it pays at every batch that fits ({fit_long})."',
    answer="Speculation pays while $\\tau\\,t_{{step}} > t_{{ver}} + k\\,t_{{draft}}$, every one of those steps "
    "paying the fixed {over:2} a decode step costs: a cycle pays it {positions} times for {tau:3} tokens, which "
    "plain decode pays {tau:3} times. With the plain step and the head memory-bound and the verification "
    "compute-bound, SymPy's solution for the batch gives {estimate:4}; the full model's first losing batch is "
    "{cross}. At {batch}: plain step {plain:3}, verification {verify:3} (compute-bound), head steps {k} x {draft:2} "
    "(mostly the overhead); speed-up {tau:3} x {plain:3} / ({verify:3} + {k} x {draft:2}) = {speedup:3}.",
)
def _spec_crossover() -> dict[str, Any]:
    sp = _spec()
    spec, ctx, batch = sp.Speculation("eagle head", 4, 0.7), 288, 200
    s = sp.speculative_step("Llama-3.1-8B", "H100 SXM", spec, batch=batch, context_tokens=ctx)
    return dict(
        ctx=ctx,
        k=spec.draft_tokens,
        alpha=spec.acceptance,
        positions=spec.draft_tokens + 1,
        batch=batch,
        tau=s.expected_tokens,
        cross=sp.crossover_batch("Llama-3.1-8B", "H100 SXM", spec, context_tokens=ctx),
        estimate=sp.crossover_estimate("Llama-3.1-8B", "H100 SXM", spec, context_tokens=ctx),
        speedup=s.speedup,
        x=_per_s(s.throughput),
        x_plain=_per_s(s.plain_throughput),
        plain=s.plain.step_time,
        verify=s.verify.step_time,
        draft=s.draft_step_time,
        over=s.plain.overhead_time,
        fit_long=sp.speculative_memory("Llama-3.1-8B", "H100 SXM", spec, context_tokens=2_150).max_batch,
    )


@_q(
    id="spec_mtp",
    level="L5",
    topic="speculative decoding",
    title="Multi-token prediction on a mixture of experts",
    prompt="DeepSeek-V3 (FP8, 8 x H200, each cache read at 2,150 tokens) drafts one token per step with its MTP "
    "block, accepted with probability {alpha}. How much faster is each user at batch 1, and at batch 256?",
    weak='"{tau:3} tokens per step, so {tau:3} times faster at any batch."',
    good='"At a large batch about {s256:2}x: the verification reads what a plain step reads. DeepSeek reports '
    '{published:2}x."',
    strong='"At batch 1 only {s1:2}x: the second position routes to its own {Q30.experts_per_token} experts per layer, '
    "so the verification reads {w_ver1:2} of weights instead of {w_plain1:2}; the fixed overhead and the "
    "all-reduces of each step, which hardly grow with the tokens checked, soften that. From a few hundred sequences every "
    "expert is read anyway, and it gives {s256:3}x, close to DeepSeek's {published:2}x and to the {tau:3} tokens per "
    'step. On a mixture of experts MTP pays most where a fleet runs: at large batches."',
    answer="Tokens per step: 1 + {alpha} = {tau:3}. Batch 1: a plain step reads the shared weights and the experts "
    "one token picks, {w_plain1:3} ({t_plain1:3}, {fixed1:2} of it the fixed overhead and the all-reduces "
    "over 8 GPUs); two tokens touch about twice the experts, {w_ver1:3} ({t_ver1:3}); the MTP block "
    "reads {w_mtp1:2} ({t_mtp1:2}, nearly all of it its own step's overhead). Speed-up {tau:3} x {t_plain1:3} / "
    "({t_ver1:3} + {t_mtp1:2}) = {s1:3}. Batch 256: plain and verification steps both read nearly every expert ({w_plain256:3}) "
    "and the speed-up is {s256:3}.",
)
def _spec_mtp() -> dict[str, Any]:
    sp = _spec()
    spec = sp.Speculation("mtp", 1, 0.85)
    kw = dict(context_tokens=2_150, tensor_parallel=8, weight_bytes="fp8")
    one, full = (sp.speculative_step("DeepSeek-V3", "H200 SXM", spec, batch=b, **kw) for b in (1, 256))
    row = next(r for r in sp.published("mtp", figure="speedup") if r.target == "DeepSeek-V3")
    return dict(
        alpha=spec.acceptance,
        tau=one.expected_tokens,
        s1=one.speedup,
        s256=full.speedup,
        w_plain1=one.plain.weights_read,
        w_ver1=one.verify.weights_read,
        w_mtp1=one.draft.weights_read,
        t_plain1=one.plain.step_time,
        fixed1=one.plain.overhead_time + one.plain.comm_time,
        t_ver1=one.verify.step_time,
        t_mtp1=one.draft_step_time,
        w_plain256=full.plain.weights_read,
        published=row.value,
    )


@_q(
    id="spec_fleet",
    level="Staff+",
    topic="speculative decoding",
    title="A draft model or an EAGLE head for the fleet?",
    prompt="A chat fleet of Llama 3.1 70B (FP8, replicas of 2 x H100, 2,000-token prompts, 300-token answers) serves "
    "10,000 output tokens/s. Would you add a Llama 3.1 8B draft model or an EAGLE-3 head ({k} draft tokens, each "
    "accepted with probability {alpha})? What does each do to the batch, the users' speed and the GPUs?",
    weak='"The 8B draft: a bigger draft guesses better."',
    good='"The head: its weights are {w_head:2} against {w_draft:3}, and its cache is one layer, not {L8.layers}."',
    strong="\"Each replica holds {b_plain} conversations without speculation; the 8B draft's weights and "
    "{L8.layers}-layer cache cut that to {b_draft}, the head's to {b_head}. Throughput per replica, prefill charged: "
    "{x_plain:3} tokens/s plain, {x_draft:3} with the draft, {x_head:3} with the head, so {g_plain}, {g_draft} and "
    "{g_head} GPUs at {headroom}x headroom. Users see {u_plain:2}, {u_draft:2} and {u_head:2} tokens/s: the prefills "
    "of the other requests, which run between a user's steps, are not sped up, and a smaller batch has fewer of "
    "them. The head buys the most throughput for the least memory; I would take it, and measure its acceptance on "
    'our own traffic before sizing the fleet on it."',
    answer="Usable memory {mem:3}: the weights, {w70:3}, leave room for {b_plain} caches of 2,300 tokens; with the "
    "8B draft ({w_draft:3} of weights, {kv_draft:3} of cache per sequence) {b_draft}; with the head ({w_head:2}, "
    "{kv_head:2} per sequence) {b_head}. Time per token at the full batch, the prefills of the batch's other "
    "requests included: {t_plain:3} plain, {t_draft:3} with the draft, {t_head:3} with the head. Throughput with "
    "prefill charged: {x_plain:4}, {x_draft:4} and {x_head:4} tokens/s per replica; for 10,000 tokens/s at "
    "{headroom}x: {g_plain}, {g_draft} and {g_head} GPUs, at {c_plain:3}, {c_draft:3} and {c_head:3} per million "
    "output tokens.",
)
def _spec_fleet() -> dict[str, Any]:
    sp = _spec()
    kw = dict(tensor_parallel=2, prompt_tokens=2_000, answer_tokens=300, weight_bytes="fp8")
    draft, head = sp.Speculation("draft model", 4, 0.7, "Llama-3.1-8B"), sp.Speculation("eagle head", 4, 0.7)
    reps = {
        "plain": replica("Llama-3.1-70B", "H100 SXM", **kw),
        "draft": sp.speculative_replica("Llama-3.1-70B", "H100 SXM", draft, **kw),
        "head": sp.speculative_replica("Llama-3.1-70B", "H100 SXM", head, **kw),
    }
    demand = Q_(10_000, "1/s")
    out: dict[str, Any] = dict(
        k=head.draft_tokens,
        alpha=head.acceptance,
        headroom=resolve(COURSE).headroom,
        mem=reps["plain"].usable_memory,
        w70=reps["plain"].weights,
    )
    for key, r in reps.items():
        out |= {
            f"b_{key}": r.batch,
            f"u_{key}": _per_s(r.tokens_per_s_per_user),
            f"t_{key}": r.tpot,
            f"x_{key}": _per_s(r.throughput),
            f"g_{key}": fleet(demand, r).gpus,
            f"c_{key}": r.cost_per_million_output_tokens,
        }
    for key, spec in (("draft", draft), ("head", head)):
        m = sp.speculative_memory(
            "Llama-3.1-70B", "H100 SXM", spec, context_tokens=2_300, tensor_parallel=2, weight_bytes="fp8"
        )
        out |= {f"w_{key}": m.draft_weights, f"kv_{key}": m.draft_kv_per_sequence.to("MB")}
    return out


# --- many GPUs (book/08c_many_gpus.md) -----------------------------------------------------------------------------
def _many_gpus_parts(gpu: str, n: int, **kw: Any) -> tuple[Any, dict[str, Any]]:
    """A replica of Llama 3.1 70B on ``n`` x ``gpu`` and its time per token split into parts."""
    from llmcourse.parallel import time_per_token_parts

    r = replica("Llama-3.1-70B", gpu, tensor_parallel=n, weight_bytes="fp8", **kw)
    return r, time_per_token_parts(r)


@_q(
    id="tp8_not_8x",
    level="L5",
    topic="many GPUs",
    title="Why doesn't TP8 give 8x?",
    prompt="Llama 3.1 70B in FP8 runs on one B200 at {t1:3} per token with four requests in flight (1,024 tokens in, "
    "8,192 out). Moved to eight B200s with tensor parallelism, what time per token do you expect, and why?",
    weak='"Eight times the bandwidth: {ideal:3} per token."',
    good='"Less than 8x: the GPUs must all-reduce the activations twice per layer, and that is not free."',
    strong='"About {t8:3}, {x:2}x faster, not 8x. Each GPU reads an eighth of the weights, {w8:3}, but 2 x 80 '
    "all-reduces of a few KiB each cost {ar:3} apiece in fixed cost and ring latency, {c8:3} a step, more than the "
    'weight reads; the {o:2} fixed step cost does not shrink at all. TP8 buys memory for bigger batches, not 8x."',
    answer="One GPU: the 70.6 GB of weights at {bw_pct}% of {bw} plus the cache and a fixed {o:2}: "
    "{t1:3}. Eight GPUs: weight reads {w8:3}; two all-reduces per layer of 4 x 8,192 x 2 bytes, each $t_0 + "
    "2(N-1)\\alpha$ + the bytes = {ar:3} on NVLink 5, 160 a step: {c8:3}; the fixed {o:2}; the others' prefills "
    "{sp:2}. Total {t8:3}, a speed-up of {x:2}x; the chapter compares it with the measured rows.",
)
def _tp8_not_8x() -> dict[str, Any]:
    from llmcourse.widgets.many_gpus import allreduce_latency

    kw = dict(batch=4, prompt_tokens=1_024, answer_tokens=8_192)
    r1, _ = _many_gpus_parts("B200", 1, **kw)
    r8, p8 = _many_gpus_parts("B200", 8, **kw)
    return dict(
        t1=r1.tpot,
        t8=r8.tpot,
        ideal=(r1.tpot / 8).to("ms"),
        x=float((r1.tpot / r8.tpot).m),
        w8=p8["weight reads"],
        ar=allreduce_latency("Llama-3.1-70B", r8),
        c8=p8["communication"],
        o=p8["overhead"],
        sp=p8["shared prefill"],
        bw_pct=_pct(r8.assumptions.bandwidth_efficiency),
        bw=gpus["B200"].bandwidth.to("TB/s"),
    )


@_q(
    id="nvlink_or_pcie",
    level="L5",
    topic="many GPUs",
    title="NVLink or PCIe?",
    prompt="You can serve Llama 3.1 70B in FP8 on four H100 SXM (NVLink) or four H100 PCIe cards, 16 requests in "
    "flight, 1,024 tokens in and out. How much does the link cost the user?",
    weak='"The same GPU chip, so the same speed."',
    good='"PCIe is slower for the all-reduces, and the PCIe card has less memory bandwidth too."',
    strong='"{t_p:3} per token on PCIe against {t_s:3} on NVLink, {ratio:2}x. At decode the all-reduce messages are '
    "tiny, so it is the per-collective latency that counts: {ar_p:2} per all-reduce on PCIe against {ar_s:2}, 160 "
    'per step: {c_p:2} against {c_s:2}. Tensor parallelism over PCIe pays for itself only at large batches."',
    answer="Weight reads: a quarter of 70.6 GB at {bw_pct}% of each card's bandwidth, {w_s:3} (SXM) and {w_p:3} "
    "(PCIe). All-reduces: 160 per step of 16 x 8,192 x 2 bytes, {ar_s:3} each on NVLink 4 and {ar_p:3} on PCIe 5, "
    "{c_s:3} and {c_p:3} a step. With the fixed step cost and the shared prefills: {t_s:3} and {t_p:3} per token.",
)
def _nvlink_or_pcie() -> dict[str, Any]:
    from llmcourse.widgets.many_gpus import allreduce_latency

    kw = dict(batch=16, prompt_tokens=1_024, answer_tokens=1_024)
    (rs, ps), (rp, pp) = (_many_gpus_parts(g, 4, **kw) for g in ("H100 SXM", "H100 PCIe"))
    return dict(
        t_s=rs.tpot,
        t_p=rp.tpot,
        ratio=float((rp.tpot / rs.tpot).m),
        ar_s=allreduce_latency("Llama-3.1-70B", rs),
        ar_p=allreduce_latency("Llama-3.1-70B", rp),
        c_s=ps["communication"],
        c_p=pp["communication"],
        w_s=ps["weight reads"],
        w_p=pp["weight reads"],
        bw_pct=_pct(rs.assumptions.bandwidth_efficiency),
    )


# --- the sheet of numbers ---------------------------------------------------------------------------------------
#: Models whose KV per token the sheet lists, and GPUs whose datasheet figures it lists.
SHEET_MODELS = (
    "Llama-3.1-8B",
    "Qwen2.5-7B",
    "Llama-3.1-70B",
    "Qwen2.5-72B",
    "Llama-3.1-405B",
    "Mixtral-8x7B",
    "Qwen3-235B-A22B",
    "DeepSeek-V3",
)
SHEET_GPUS = ("H100 SXM", "H200 SXM", "B200")


def sheet(assumptions: Assumptions | str | None = None) -> dict[str, Any]:
    """Every number of the one-page sheet, computed from the catalog and the formulas.

    Speeds are given twice: at the datasheet bandwidth (the back-of-the-envelope method's ceiling,
    the figure the sources quote) and under ``assumptions`` (the course's method by default).
    Returns a dict of named quantities and counts plus the rows of its tables (``"kv_rows"``,
    ``"gpu_rows"``, ``"weight_rows"``).

    Examples
    --------
    >>> s = sheet()
    >>> round(s["h100_step"].to("ms").m, 2), round(s["h100_step_course"].to("ms").m, 1)
    (21.49, 30.7)
    """
    a, peak = resolve(assumptions), resolve(ENVELOPE)
    out: dict[str, Any] = {"bw_pct": _pct(a.bandwidth_efficiency), "fl_pct": _pct(a.compute_efficiency)}
    out["kv_rows"] = [
        (
            name,
            models[name].attention,
            kv_bytes_per_token(name).to("KiB"),
            kv_bytes_per_sequence(name, 4_096).to("GB"),
            kv_bytes_per_sequence(name, 131_072).to("GB"),
        )
        for name in SHEET_MODELS
    ]
    out["gpu_rows"] = []
    for name in SHEET_GPUS:
        g = gpus[name]
        step = _read_time(usable_memory(g, assumptions=peak), g, assumptions=peak)
        step_a = _read_time(usable_memory(g, assumptions=a), g, assumptions=a)
        out["gpu_rows"].append(
            (
                name,
                g.memory,
                g.bandwidth.to("TB/s"),
                g.flops.to("TFLOP/s"),
                g.peak_flops("fp8").to("TFLOP/s"),
                step,
                _per_s(step),
                g.price_per_hour,
                step_a,
                _per_s(step_a),
            )
        )
    h100 = gpus["H100 SXM"]
    out["h100_usable"] = usable_memory(h100, assumptions=peak).to("GB")
    out["h100_step"] = _read_time(out["h100_usable"], h100, assumptions=peak)
    out["h100_step_rate"] = _per_s(out["h100_step"])
    out["h100_step_course"] = _read_time(usable_memory(h100, assumptions=a), h100, assumptions=a)
    out["h100_step_course_rate"] = _per_s(out["h100_step_course"])
    out["ridge"] = ridge_intensity(h100, bandwidth_efficiency=1, compute_efficiency=1)  # the datasheet's peaks
    out["ridge_course"] = ridge_intensity(h100, assumptions=a)
    out["weight_rows"] = [
        (
            p,
            Q_(bytes_per_value(p), "B"),
            weight_bytes("Llama-3.1-8B", p).to("GB"),
            weight_bytes("Llama-3.1-70B", p).to("GB"),
            weight_bytes("Llama-3.1-405B", p).to("GB"),
        )
        for p in ("bf16", "fp8", "int4")
    ]
    m70 = _seed004_model()  # a round 70 billion parameters
    out["fpp"] = a.flops_per_param
    out["flops_70b"] = decode_flops_per_token(m70, 1, attention_flops=False, assumptions=a)
    out["prefill_70b_2k"] = F["prefill_flops_linear"](
        flops_per_param=Q_(a.flops_per_param, "FLOP"), params=m70.active_params, prompt_tokens=2_000
    ).to("PFLOP")
    out["kv_8b"] = kv_bytes_per_token("Llama-3.1-8B").to("KiB")
    out["kv_70b"] = kv_bytes_per_token("Llama-3.1-70B").to("KiB")
    for key, model, n in (("w70_read", "Llama-3.1-70B", 2), ("w8_read", "Llama-3.1-8B", 1)):
        out[key] = weight_read_ceiling(model, h100, n_gpus=n, assumptions=peak).step_time
        out[f"{key}_course"] = weight_read_ceiling(model, h100, n_gpus=n, assumptions=a).step_time
    ll = F["littles_law"](request_rate=Q_(10, "1/s"), time_in_system=Q_(15, "s"))
    out["little_example"] = float(ll.m)
    out["cost_example"] = cost_per_million(h100.price_per_hour, Q_(1_000, "1/s"))
    out["cost_example_price"] = h100.price_per_hour
    out["day_rate"] = float(Q_(1_000_000, "1/day").to("1/s").m)
    out["month_hours"] = HOURS_PER_MONTH
    out["month_cost"] = F["fleet_cost"](gpus=1, price=h100.price_per_hour, hours=out["month_hours"]).to("USD")
    return out


def sheet_tables(values: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The sheet's tables as Markdown: ``"gpus"``, ``"kv"`` and ``"weights"``.

    Examples
    --------
    >>> sheet_tables()["kv"].splitlines()[0]
    '| model | attention | KV per token (BF16) | one 4,096-token sequence | one 131,072-token sequence |'
    """
    s = sheet() if values is None else values
    pct = f"{num(s['bw_pct'])}%"
    gpu = [
        f"| GPU | memory | bandwidth | BF16 | FP8 | full-memory step (datasheet / {pct}) "
        f"| tok/s per user, full (datasheet / {pct}) | price (assumed) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    gpu += [
        f"| {n} | {num(m)} | {num(b)} | {num(f, 4)} | {num(f8, 4)} | {num(t)} / {num(ta)} | {num(r, 2)} / {num(ra, 2)} "
        f"| {p.m:.2f} USD/h |"
        for n, m, b, f, f8, t, r, p, ta, ra in s["gpu_rows"]
    ]
    kv = [
        "| model | attention | KV per token (BF16) | one 4,096-token sequence | one 131,072-token sequence |",
        "|---|---|---|---|---|",
    ]
    kv += [f"| {n} | {a} | {num(k)} | {num(k4)} | {num(k128)} |" for n, a, k, k4, k128 in s["kv_rows"]]
    wt = ["| precision | bytes per weight | Llama 3.1 8B | Llama 3.1 70B | Llama 3.1 405B |", "|---|---|---|---|---|"]
    wt += [f"| {p.upper()} | {num(b)} | {num(a)} | {num(c)} | {num(d)} |" for p, b, a, c, d in s["weight_rows"]]
    return {"gpus": "\n".join(gpu), "kv": "\n".join(kv), "weights": "\n".join(wt)}


def levels_markdown(parts: Mapping[str, str]) -> str:
    """Weak, good and strong answers as a Markdown list (``parts`` from :meth:`Question.markdown`)."""
    return "\n".join(f"- **{p.capitalize()}:** {parts[p]}" for p in ("weak", "good", "strong"))
