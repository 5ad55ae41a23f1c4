"""One model on your own machine (a laptop's unified memory, a desktop GPU), one person typing: will it fit, how fast
will it type, how long a context, how long until the first token. Every figure is the one replica model's
(:func:`~llmcourse.replica.model.replica`) at a batch of one, run by llama.cpp (:data:`ENGINE`), under the assumptions
given (the course's by default).

Defined in the chapter *On your own machine* (``book/17_own_machine.md``).

Examples
--------
>>> m = own_machine("Llama-3.1-8B", "RTX 5090", "q4_k_m", context=8_192)
>>> m.fits, round(m.weight_bytes.to("GB").m, 2), round(m.bound_tokens_per_s)
(True, 4.91, 365)
>>> round(m.gpu_memory.to("GiB").m), round(m.usable.to("GiB").m, 2)  # 32 GiB less 0.5 + 0.25 + 1 GiB
(32, 30.25)
>>> m.verdict
'fits'
>>> own_machine("Llama-3.1-8B", "M1 8GB", "q4_k_m", context=512).verdict  # 4.63 GiB: over 4.08, within 5.08
'inside margin'
>>> own_machine("Llama-3.1-8B", "RTX 5090", "q4_km")
Traceback (most recent call last):
...
llmcourse.errors.UnknownNameError: unknown GGUF type 'q4_km': did you mean 'q4_k_m' or 'q4_k' or 'q5_k_m'? GGUF types: iq1_s, iq2_s, iq2_xs, iq2_xxs, iq3_s, iq3_xxs, iq4_nl, iq4_xs, q2_k, q3_k, q3_k_m, q4_0, q4_1, q4_k, q4_k_m, q5_0, q5_1, q5_k, q5_k_m, q6_k, q8_0 (or bf16, fp16).
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any

import pint

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.bands import llama_cpp_band, llama_cpp_band_scope
from llmcourse.catalog import gpus, models
from llmcourse.catalog.precision import GGUF_TABLE
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.replica.deployment import Deployment
from llmcourse.replica.memory import (
    LLAMA_CPP_KV_PAD,
    gpu_memory_read,
    llama_cpp_pad,
    llama_cpp_window_pool,
    memory_rule_of,
)
from llmcourse.replica.memory import weight_bytes as weights_of
from llmcourse.replica.model import replica
from llmcourse.units import Q_, to

__all__ = [
    "DISPLAY_GIB", "LOGGED_CONTEXT_GIB", "ONE_SEQUENCE", "SERVER_SLOTS", "VERDICTS", "OwnMachine", "gguf_type",
    "longest_context", "no_margin", "own_machine",
]  # fmt: skip

#: The three answers to "does it fit?" under llama.cpp: with its --fit margin; only inside the margin (--fit off);
#: not even so.
VERDICTS = ("fits", "inside margin", "does not fit")

#: The engine a GGUF file runs under: llama.cpp, whose own kernels' shares the assumptions hold (the course's
#: ``llama_cpp_*`` fields, fitted on public llama-bench rows: :mod:`llmcourse.validation.llama_cpp`).
ENGINE = "llama.cpp"

#: The sequences llama-server runs at once by default (its "auto" slots: 4 sharing one KV cache), and what
#: ``llama-cli`` and ``llama-bench`` run (one): see :mod:`llmcourse.replica.scheduler`.
SERVER_SLOTS, ONE_SEQUENCE = 4, 1

#: GiB a CUDA GPU loses to the desktop it drives, beyond a headless CUDA context (the assumptions'
#: ``cuda_context_gib``): the course's range, from public llama.cpp logs (see the assumptions' comment on
#: ``cuda_context_gib`` in :mod:`llmcourse.assumptions`). ``own_machine(..., display_gib=...)`` takes one value.
DISPLAY_GIB = (0.3, 1.5)

#: GiB below its size a CUDA device's free memory sat in public llama.cpp logs, a display likely among it: an
#: RTX 4090 (23,633 MiB free of 24,576) and an RTX 5090 (31,518-31,600 MiB free of 32,768).
LOGGED_CONTEXT_GIB = (0.92, 1.2)

#: The unquantized types a GGUF file may also hold (llama.cpp's F16 and BF16).
PLAIN = ("bf16", "fp16")


def gguf_type(name: Any) -> str:
    """A GGUF type's name in the catalog's spelling (``"Q4_K_M"`` -> ``"q4_k_m"``), or an
    :class:`~llmcourse.errors.UnknownNameError` with the closest names.

    Examples
    --------
    >>> gguf_type("Q8_0"), gguf_type(" f16 ")
    ('q8_0', 'fp16')
    """
    if not isinstance(name, str) or not name.strip():
        raise InputError(f"a GGUF type must be a name such as 'Q4_K_M'; got {name!r}.")
    key = name.strip().lower().replace("-", "_")
    key = {"f16": "fp16", "f32": "fp32"}.get(key, key)
    if key in GGUF_TABLE or key in PLAIN:
        return key
    known = sorted(GGUF_TABLE)
    near = difflib.get_close_matches(key, known + list(PLAIN), n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(repr(n) for n in near)}? " if near else ""
    raise UnknownNameError(f"unknown GGUF type {name.strip()!r}: {hint}GGUF types: {', '.join(known)} (or bf16, fp16).")


#: The largest share of the bytes a conversation holds that its KV cache may be for an answer to carry llama.cpp's
#: bands: the runs behind them were at 512 tokens or fewer, where the cache is under 2% (Llama-3.1-8B in Q4_K_M:
#: 67 MB beside 4.9 GB of weights); past a quarter, attention the runs did not exercise is a good part of each step,
#: and an answer says that no band was measured there (a choice of how far to carry the runs, not a fitted value).
BAND_KV_SHARE = 0.25


@dataclass(frozen=True)
class OwnMachine:
    """The answers for one model on one machine at one context, for one person (a batch of one)."""

    model: str
    gpu: str
    weights: str
    context: int
    #: Whether the weights and the context's KV cache fit in what the GPU may use with llama.cpp's --fit margin;
    #: if not, why (:attr:`reason`).
    fits: bool
    reason: str
    weight_bytes: pint.Quantity
    kv_bytes: pint.Quantity
    #: The memory the GPU may use as the engine reads it (llama.cpp: the device's GiB from the driver; a unified-memory
    #: machine: its share of the system's, Metal's recommendedMaxWorkingSetSize) and what is left of it for weights
    #: and KV cache (llama.cpp: less :func:`~llmcourse.replica.memory.llama_cpp_reserve_gib`, its CUDA context,
    #: compute buffers and --fit margin).
    gpu_memory: pint.Quantity
    usable: pint.Quantity
    #: Tokens per second typing at this context (None if it does not fit), and the bound at 100% of the bandwidth
    #: with the weights alone read once per token.
    tokens_per_s: float | None
    bound_tokens_per_s: float
    #: The time to read the prompt of ``context`` tokens before the first token (None if it does not fit).
    first_token_s: float | None
    #: The longest context of one sequence that fits (0 if not even 256 tokens do), at most the model's positions:
    #: a multiple of 256, as llama.cpp pads the context it allocates (:func:`~llmcourse.replica.memory.llama_cpp_pad`),
    #: so the longest ``-c`` that fits; and the time to read a prompt that long before the first token (None if none
    #: fits).
    longest_context: int
    longest_first_token_s: float | None = None
    #: One of :data:`VERDICTS`: "fits" (with llama.cpp's --fit margin), "inside margin" (only with the margin used:
    #: ``--fit off -ngl 99`` and a ``-c`` of at most :attr:`longest_context_no_margin`; under the defaults llama.cpp
    #: shrinks the context, then moves layers to the CPU, which runs slower) or "does not fit".
    verdict: str = "fits"
    longest_context_no_margin: int = 0
    #: The sequences sharing the KV cache (llama-server's slots, :data:`SERVER_SLOTS` by default; ``llama-cli`` and
    #: ``llama-bench``: 1): a sliding-window layer keeps a window for each.
    slots: int = SERVER_SLOTS
    #: The assumptions' name the answers were computed under (a band is drawn only under its own method's).
    method: str = "course"

    def banded(self) -> bool:
        """Whether the answers carry llama.cpp's bands: they fit, under the method the bands were measured against,
        at a context whose KV cache is at most :data:`BAND_KV_SHARE` of the weights and cache together (the runs
        behind the bands were at short contexts, where the weights are nearly all of it)."""
        if self.tokens_per_s is None or self.method != llama_cpp_band("decode")["method"]:
            return False
        kv, w = self.kv_bytes.to("B").m, self.weight_bytes.to("B").m
        return kv <= BAND_KV_SHARE * (w + kv)

    def tokens_per_s_band(self) -> tuple[float, float]:
        """The 80% band around :attr:`tokens_per_s`: llama.cpp's measured / predicted typing speed on public
        llama-bench runs (:func:`~llmcourse.bands.llama_cpp_band`); (nan, nan) where there is none (:meth:`banded`)."""
        if not self.banded() or self.tokens_per_s is None:
            return math.nan, math.nan
        b = llama_cpp_band("decode")
        return self.tokens_per_s * b["low"], self.tokens_per_s * b["high"]

    def first_token_band_s(self) -> tuple[float, float]:
        """The 80% band around :attr:`first_token_s` (seconds), from llama.cpp's measured / predicted prompt speed
        on public llama-bench runs; (nan, nan) where there is none (:meth:`banded`)."""
        if not self.banded() or self.first_token_s is None:
            return math.nan, math.nan
        b = llama_cpp_band("prefill")
        return self.first_token_s / b["high"], self.first_token_s / b["low"]

    def rows(self) -> list[tuple[str, str]]:
        """(label, value) rows for a calculator."""
        g = gpus[self.gpu]
        gb = self.gpu_memory.to("GB").m
        binary = abs(gb - to(g.memory, "GB").m) > 1e-9  # read as GiB (llama.cpp's reading)
        unit = "GiB" if binary else "GB"
        mem = f"{self.gpu_memory.to(unit).m:,.1f} {unit}" + (f" = {gb:,.1f} GB" if binary else "")
        if g.memory_share is not None:
            mem += f" ({g.memory_share:.0%} of {to(g.unified_memory, 'GB').m:,.0f} {unit} unified memory)"
        fit = {
            "fits": "yes, with llama.cpp's --fit margin",
            "inside margin": "only inside llama.cpp's margin: run with --fit off -ngl 99 and -c at most "
            f"{self.longest_context_no_margin:,} (under the defaults llama.cpp offloads layers to the CPU)",
        }.get(self.verdict, f"no: {self.reason}")
        alloc = _allocated(self.model, self.context)
        padded = f" (as allocated: {alloc:,} tokens, a multiple of {LLAMA_CPP_KV_PAD})" if alloc != self.context else ""
        runs = "llama-server's default" if self.slots == SERVER_SLOTS else "llama-cli, llama-bench"
        runs = runs if self.slots in (SERVER_SLOTS, ONE_SEQUENCE) else f"--parallel {self.slots} --kv-unified"
        out = [
            ("fits", fit),
            ("sequences sharing the KV cache", f"{self.slots} ({runs})"),
            ("weights", f"{self.weight_bytes.to('GB').m:,.2f} GB ({self.weights.upper()})"),
            (f"KV cache at {self.context:,} tokens", f"{self.kv_bytes.to('GB').m:,.2f} GB{padded}"),
            ("memory the GPU may use", mem),
            ("left for weights and KV cache", f"{self.usable.to('GB').m:,.1f} GB"),
            ("bound: bandwidth / weight bytes", f"{self.bound_tokens_per_s:,.0f} tokens/s"),
        ]
        if self.tokens_per_s is not None and self.first_token_s is not None:
            (t_lo, t_hi), (f_lo, f_hi) = self.tokens_per_s_band(), self.first_token_band_s()
            none = f"none measured: {_no_band(self)}"
            out += [
                ("typing speed", f"{self.tokens_per_s:,.1f} tokens/s"),
                ("typing speed, 80% band",
                 f"{t_lo:,.1f} to {t_hi:,.1f} tokens/s ({_band_source('decode')})" if self.banded() else none),
                (f"first token after {_a(self.context)}-token prompt", f"{self.first_token_s:,.2f} s"),
                ("first token, 80% band",
                 f"{f_lo:,.2f} to {f_hi:,.2f} s ({_band_source('prefill')})" if self.banded() else none),
            ]  # fmt: skip
        out.append(("longest context that fits", f"{self.longest_context:,} tokens"))
        if self.longest_first_token_s is not None:
            out.append(
                (f"first token after {_a(self.longest_context)}-token prompt", f"{self.longest_first_token_s:,.1f} s")
            )
        return out


def _band_source(kind: str) -> str:
    """Where a llama.cpp band comes from, in words (:func:`~llmcourse.bands.llama_cpp_band_scope`)."""
    return llama_cpp_band_scope(llama_cpp_band(kind))


def _no_band(m: OwnMachine) -> str:
    """Why an answer carries no band (:meth:`OwnMachine.banded` false for an answer that fits)."""
    if m.method != llama_cpp_band("decode")["method"]:
        return f"the bands were measured against the course's method, not {m.method!r}"
    return (
        f"at {m.context:,} tokens the KV cache is over {BAND_KV_SHARE:.0%} of what the conversation holds, and the "
        "runs behind the bands were at short contexts"
    )


def _allocated(model: str, context: int) -> int:
    """The context llama.cpp allocates for ``-c context``: padded (:func:`~llmcourse.replica.memory.llama_cpp_pad`:
    -c 3500 holds 3,584 cells), which decides whether it fits. llama.cpp pads past the model's positions too; capped
    here, which matters only for a model whose positions are not a multiple of 256: none of the catalog's."""
    return min(int(models[model].max_position), llama_cpp_pad(context))


def _a(n: int) -> str:
    """A count of tokens with its article, as read aloud: "an 8,192", "an 11,000", "a 22,399"."""
    text = f"{n:,}"
    return f"{'an' if text.startswith('8') or text.split(',')[0] in ('11', '18') else 'a'} {text}"


def _one(model: str, gpu: str, weights: str, n: int, a: Assumptions, slots: int) -> Any:
    """The replica of one person's conversation of ``n`` prompt tokens and one answer token under llama.cpp."""
    return replica(
        model, gpu, batch=1, prompt_tokens=n, answer_tokens=1, weight_bytes=weights, assumptions=a, engine=ENGINE,
        max_running=slots,
    )  # fmt: skip


def _fits(model: str, gpu: str, weights: str, n: int, a: Assumptions, slots: int) -> bool:
    return bool(_one(model, gpu, weights, n, a, slots).fits)


def longest_context(
    model: str, gpu: str, weights: str, assumptions: Assumptions | str | None = None, slots: int = SERVER_SLOTS
) -> int:
    """The longest context of one sequence whose KV cache fits beside the weights (a bisection on the one replica
    model's fit, so sliding-window layers, which keep only their window, a window for each of the ``slots``
    sequences sharing the cache, count as they hold), rounded down to a multiple of :data:`LLAMA_CPP_KV_PAD`: llama.cpp
    pads the context it allocates up to one (:func:`~llmcourse.replica.memory.llama_cpp_pad`), so this is the longest
    ``-c`` whose cache fits. At most the model's positions; 0 if not even 256 tokens fit.

    Examples
    --------
    >>> longest_context("Llama-3.1-8B", "RTX 5090", "q4_k_m")
    131072
    >>> longest_context("Gemma-3-27B", "RTX 5090", "q8_0") < longest_context("Gemma-3-27B", "RTX 5090", "q8_0", slots=1)
    True
    """
    a = resolve(assumptions)
    top = int(models[model].max_position)
    if _fits(model, gpu, weights, top - 1, a, slots):
        return top
    if not _fits(model, gpu, weights, 1, a, slots):
        return 0
    lo, hi = 1, top - 1  # fits at lo, not at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if _fits(model, gpu, weights, mid, a, slots) else (lo, mid)
    return (lo + 1) // LLAMA_CPP_KV_PAD * LLAMA_CPP_KV_PAD  # the prompt and the one answer token, padded as allocated


def _with_display(a: Assumptions, display_gib: Any, gpu: Any) -> Assumptions:
    """The assumptions with ``display_gib`` more of a CUDA GPU's memory taken before llama.cpp allocates anything."""
    if isinstance(display_gib, bool) or not isinstance(display_gib, (int, float)) or not 0 <= display_gib < 1e3:
        raise InputError(
            "display_gib (the GiB a GPU loses to the desktop it drives: 0 for none, "
            f"{DISPLAY_GIB[0]:g}-{DISPLAY_GIB[1]:g} typically) must be a number of GiB, 0 or more; got {display_gib!r}."
        )
    if not display_gib:
        return a
    if gpu.memory_share is not None:
        raise InputError(
            f"display_gib is for a GPU with memory of its own; {gpu.name} shares its memory with the system, and the "
            "share the GPU may use already leaves the desktop its own: leave display_gib at 0."
        )
    return a.replace(cuda_context_gib=a.cuda_context_gib + float(display_gib))


def no_margin(a: Assumptions) -> Assumptions:
    """The assumptions with llama.cpp's --fit margin spent (``--fit off``: 0 GiB of margin); unchanged where they
    hold no llama.cpp margin."""
    return a if a.llama_cpp_fit_margin_gib is None else a.replace(llama_cpp_fit_margin_gib=0.0)


def own_machine(
    model: str,
    gpu: str,
    weights: str = "q4_k_m",
    context: int = 8_192,
    *,
    slots: int = SERVER_SLOTS,
    display_gib: float = 0.0,
    assumptions: Assumptions | str | None = None,
) -> OwnMachine:
    """One model on one machine for one person: whether ``weights`` (a GGUF type) and a ``context``-token KV cache
    fit, the typing speed at that context, the first token's time after a ``context``-token prompt, and the longest
    context that fits. ``slots``: the sequences sharing the KV cache, llama-server's default 4 (its "auto"
    ``--parallel``) or 1 (``llama-cli``, ``llama-bench``); a model with sliding-window layers keeps a window for
    each. Another count is ``--parallel N --kv-unified`` (one shared cache; without ``--kv-unified`` each slot gets
    the context divided by N, which this does not model). ``display_gib``: the GiB a CUDA GPU loses to the desktop it drives (0 for one that drives none; the course's
    range is :data:`DISPLAY_GIB`), beside its CUDA context; a Mac's share of its unified memory already leaves the
    desktop its own. Names the catalog lacks get a "did you mean".

    Examples
    --------
    >>> server = own_machine("Gemma-3-27B", "RTX 5090", "q8_0")
    >>> cli = own_machine("Gemma-3-27B", "RTX 5090", "q8_0", slots=1)
    >>> server.slots, cli.slots, server.longest_context < cli.longest_context
    (4, 1, True)
    >>> own_machine("Gemma-3-27B", "RTX 5090", "q8_0", slots=0)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: slots (the sequences sharing llama.cpp's KV cache: llama-server's --parallel, 4 by default; llama-cli and llama-bench run 1) must be a whole number of at least 1; got 0.
    """
    a = _with_display(resolve(assumptions), display_gib, gpus[gpu])
    m, g, w = models[model].name, gpus[gpu].name, gguf_type(weights)
    if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
        raise InputError(
            "slots (the sequences sharing llama.cpp's KV cache: llama-server's --parallel, 4 by default; llama-cli and "
            f"llama-bench run 1) must be a whole number of at least 1; got {slots!r}."
        )
    if isinstance(context, bool) or not isinstance(context, int) or context < 2:
        raise InputError(f"context must be a whole number of tokens, at least 2; got {context!r}.")
    top = int(models[m].max_position)
    if context > top:
        raise InputError(f"context ({context:,} tokens) is beyond the {top:,} positions of {m}: give at most {top:,}.")
    r = _one(m, g, w, context - 1, a, slots)
    alloc = _allocated(m, context)  # what the server allocates for it, which decides whether it fits
    held = r if alloc == context else _one(m, g, w, alloc - 1, a, slots)
    wb = weights_of(m, w)
    bound = float((gpus[g].bandwidth / wb).to("1/s").m)
    rule, _ = memory_rule_of(a, ENGINE, gpus[g], 1)
    longest = longest_context(m, g, w, a, slots)
    at_longest = _one(m, g, w, longest - 1, a, slots) if longest >= 2 else None
    bare = no_margin(a)
    hard = held.fits or _fits(m, g, w, alloc - 1, bare, slots)
    verdict = VERDICTS[0] if held.fits else VERDICTS[1] if hard else VERDICTS[2]
    pool = llama_cpp_window_pool(Deployment(m, g, weight_bytes=w, engine=ENGINE, max_running=slots))
    return OwnMachine(
        model=m,
        gpu=g,
        weights=w,
        context=context,
        fits=held.fits,
        reason="" if held.fits else held.reason,
        weight_bytes=wb.to("GB"),
        # one conversation's cache as a server started with this context allocates it (padded): its own and (a model
        # with window layers) llama.cpp's window cache, fitting or not
        kv_bytes=(held.kv_per_sequence + Q_(0.0 if pool is None else pool.held(1, alloc), "B")).to("GB"),
        gpu_memory=gpu_memory_read(gpus[g], a, rule).to("GB"),
        usable=r.usable_memory.to("GB"),
        # one person: the prompt is read before the first token (first_token_s), then each token is one decode
        # step at the context; the replica's tpot would spread the prompt over the steps (an engine mixing the
        # prompts of other requests into its decode steps), which at a batch of one and one answer token is the
        # prompt's whole prefill per token
        tokens_per_s=float((1 / r.step.step_time).to("1/s").m) if held.fits else None,
        bound_tokens_per_s=bound,
        first_token_s=float(r.first_prefill.time.to("s").m) if held.fits else None,
        longest_context=longest,
        longest_first_token_s=float(at_longest.first_prefill.time.to("s").m) if at_longest is not None else None,
        verdict=verdict,
        longest_context_no_margin=longest_context(m, g, w, bare, slots),
        slots=slots,
        method=a.name,
    )
