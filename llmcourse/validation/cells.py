"""Reading one cell of a measured file, and showing a file's text: each reader raises :class:`RowError` with the
reason a row cannot be expressed (a number out of range, a model or GPU the catalog lacks, a context past the
model's positions); :func:`escaped` shows any text from a file with no control character left raw (nothing a file
holds reaches a terminal as it is); :func:`check_given` checks the keywords that fill what a file does not say,
naming the flag a reader typed. The bounds of what a cell may hold (:data:`MOST_WHOLE`, :data:`MOST_SIZE`,
:data:`LEAST_NUMBER` to :data:`MOST_NUMBER`) are here."""

from __future__ import annotations

import math
from typing import Any

from llmcourse.catalog import gpus, models
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.units import plain_number

#: Models whose attention the planner has no term for, with the reason; ``max_context`` (if given) is the longest
#: context at which the catalog's row is still exact. None now: Qwen3.5's linear-attention layers and GLM-5's sparse
#: attention are layer types of the replica model (:mod:`llmcourse.replica.attention`), so their rows are predicted.
ARCHITECTURE_GAPS: dict[str, tuple[str, int | None]] = {}


#: aiconfigurator's quantization modes as the course's precisions.
_QUANT = {"fp8": "fp8", "fp8_block": "fp8", "nvfp4": "fp4", "int4_wo": "int4", "bf16": "bf16", "fp16": "fp16"}


_PRECISION = {"fp8": "fp8", "fp4": "fp4", "int4": "int4", "bf16": "bf16", "fp16": "fp16", "int8": "int8"}


_ENGINES = {"trtllm": "TensorRT-LLM", "tensorrt-llm": "TensorRT-LLM", "sglang": "SGLang", "vllm": "vLLM"}


def escaped(text: str) -> str:
    """``text`` with every character that is not printable written as its Python escape (``\\x1b``, ``\\u202e``),
    line breaks kept: the control characters, escape sequences and direction overrides a file may hold never reach
    a terminal raw.

    Examples
    --------
    >>> escaped("id\\x1b[2J\\u202eok\\nnext")
    'id\\\\x1b[2J\\\\u202eok\\nnext'
    """
    if text.isprintable():
        return text
    return "\n".join(
        line if line.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in line)
        for line in text.split("\n")
    )


def one_line(text: str) -> str:
    """:func:`escaped`, its line breaks escaped too: a name from a file (a path, an id) inside a line of the
    package's own, which no line break in it may split into a line that reads as the package's.

    Examples
    --------
    >>> one_line("bench.json\\nall rows read")
    'bench.json\\\\nall rows read'
    """
    return escaped(text).replace("\n", "\\n")


class RowError(Exception):
    """A reason a row cannot be expressed (caught per row, by the readers here and by
    :func:`llmcourse.validation.disagg.measured_rows`; never reaches the caller)."""


def cell(r: dict[str, Any], col: str) -> str:
    if col not in r or r[col] is None:
        raise RowError(f"missing column {col!r}")
    value = r[col]
    if isinstance(value, dict | list):  # a JSON object or array where a value belongs
        raise RowError(f"column {col!r} is a JSON {'object' if isinstance(value, dict) else 'array'}, not a value")
    text = str(value).strip()
    if not text:
        raise RowError(f"column {col!r} is empty")
    return text


def shown(text: str) -> str:
    """A cell's text for a reason: cut to a readable length (:func:`shortened`), non-printable characters escaped."""
    return escaped(shortened(text))


def number(r: dict[str, Any], col: str, *, allow_zero: bool = False) -> float:
    """A measured number of column ``col``: finite, above zero (or zero, with ``allow_zero``: a spread of lengths
    that are all the same), at most :data:`MOST_NUMBER` and, unless zero, at least :data:`LEAST_NUMBER`."""
    text = cell(r, col)
    try:
        x = float(text)
    except ValueError:
        raise RowError(f"column {col!r}: {shortened(text)!r} is not a number") from None
    if allow_zero and x == 0:
        return 0.0
    if not math.isfinite(x) or x <= 0:
        least = "0 or a number above zero" if allow_zero else "a number above zero"
        raise RowError(f"column {col!r} must be {least}; got {shown(text)}")
    if not LEAST_NUMBER <= x <= MOST_NUMBER:
        raise RowError(f"column {col!r} must be from {LEAST_NUMBER:g} to {MOST_NUMBER:g}; got {shown(text)}")
    return x


#: The range of a measured number (a time in ms, a rate, a count): outside it, ratios and logarithms of predicted over
#: measured leave the floats (a time of 5e-324 ms, the smallest float, is no measurement).
LEAST_NUMBER, MOST_NUMBER = 1e-9, 1e12


#: The largest whole number a measured file's column may hold (a count of tokens, requests or GPUs), and the
#: largest parallel size (:data:`SIZE_COLUMNS`: a replica of at most 1,024 GPUs along any one axis, the
#: planner's bound on ``tensor_parallel``).
MOST_WHOLE = 10**9


MOST_SIZE = 1_024


#: The columns :func:`whole` bounds by :data:`MOST_SIZE` (the parallel sizes of the three formats).
SIZE_COLUMNS = frozenset(
    {"tp", "pp", "attention_dp", "ep", "tp_size", "pp_size", "attention_dp_size", "moe_ep_size", "n_gpus"}
)


def whole(r: dict[str, Any], col: str, default: int | None = None) -> int:
    if default is not None and (col not in r or r[col] is None or not str(r[col]).strip()):
        return default
    text = cell(r, col)
    try:
        x = float(text)
    except ValueError:
        raise RowError(f"column {col!r}: {shortened(text)!r} is not a whole number") from None
    if not math.isfinite(x):
        raise RowError(f"column {col!r} must be a whole number; got {shown(text)}")
    if x != int(x):
        raise RowError(f"column {col!r}: {shortened(text)!r} is not a whole number")
    if x < 1:
        what = "requests in flight" if "concurrency" in col or col == "batch_size" else "a size"
        raise RowError(f"column {col!r} must be at least 1 ({what}); got {shown(text)}")
    most = MOST_SIZE if col in SIZE_COLUMNS else MOST_WHOLE
    if x > most:
        raise RowError(f"column {col!r} must be at most {most:,}; got {shown(text)}")
    return int(x)


#: The most characters of a row's id a message shows (the rest counted).
ID_SHOWN = 100


def shortened(text: str, most: int = 40) -> str:
    """Text cut to about ``most`` characters for a message (the rest counted): a file's cell, or a row's id
    (:data:`ID_SHOWN`)."""
    return text if len(text) <= most else f"{text[: most // 2]}...{text[-8:]} ({len(text):,} characters)"


#: The longest model or GPU name a file's cell may give (longer text is named by its length, not looked up).
MOST_NAME = 200


#: Suffixes of a Hugging Face checkpoint's name that say its quantization, not its shape (dropped by :func:`model_name`).
QUANT_SUFFIXES = ("-NVFP4", "-FP8", "-FP4", "-AWQ", "-GPTQ", "-INT4")


def model_name(text: str) -> str:
    """A catalog model name from a file's model field (a Hugging Face id such as
    ``nvidia/DeepSeek-R1-NVFP4``: the organisation and a quantization suffix dropped here; a leading ``Meta-`` and
    ``-Instruct``, ``-Chat``, ``-hf`` by the model catalog's look-up, :meth:`llmcourse.catalog.Catalog.__getitem__`)."""
    if len(text) > MOST_NAME:
        raise RowError(f"a model name of {len(text):,} characters: not a model name")
    name = text.strip().rstrip("/")
    for suffix in QUANT_SUFFIXES:
        if name.upper().endswith(suffix):
            name = name[: -len(suffix)]
    name = name.split("/")[-1]
    if name in ARCHITECTURE_GAPS and ARCHITECTURE_GAPS[name][1] is None:
        raise RowError(f"{name}: {ARCHITECTURE_GAPS[name][0]}")
    try:
        return models[name].name
    except UnknownNameError as exc:
        raise RowError(str(exc).split(" Known:")[0]) from None


def gpu_name(text: str) -> str:
    if len(text) > MOST_NAME:
        raise RowError(f"a GPU name of {len(text):,} characters: not a GPU name")
    try:
        return gpus[text.strip()].name
    except UnknownNameError as exc:
        raise RowError(str(exc).split(" Known:")[0]) from None


def precision_name(text: str, col: str) -> str:
    key = text.strip().lower()
    if key in _QUANT:
        return _QUANT[key]
    if key in _PRECISION:
        return _PRECISION[key]
    raise RowError(f"column {col!r}: precision {text!r} unknown; use one of {', '.join(sorted(_PRECISION))}")


def context_gap(model: str, isl: int, osl: int) -> None:
    gap = ARCHITECTURE_GAPS.get(model)
    if gap is not None and gap[1] is not None and isl + osl > gap[1]:
        raise RowError(f"{model}: {gap[0]}")


def engine_name(text: str, version: str = "") -> str:
    name = _ENGINES.get(text.strip().lower(), text.strip())
    return f"{name} {version.strip()}".strip()


#: The keywords of :func:`parse_measurements` that fill what a file does not say, and the flag of
#: ``python -m llmcourse validate`` that sets each (its messages name the flag).
GIVEN_FLAGS = {
    "gpu": "--gpu", "tensor_parallel": "--tp", "weights": "--weights", "kv": "--kv", "engine": "--engine",
    "model": "--model", "concurrency": "--concurrency",
}  # fmt: skip


def check_given(given: dict[str, Any], names: dict[str, str] | None = None) -> dict[str, Any]:
    """The keywords of :func:`parse_measurements` (:data:`GIVEN_FLAGS`) checked, names in the catalog's spelling:
    an :class:`InputError` names the keyword, or ``names[keyword]`` (the command line passes :data:`GIVEN_FLAGS`, so
    that a message names the flag typed).

    Examples
    --------
    >>> check_given({"gpu": "h100", "model": "meta-llama/Llama-3.1-70B-Instruct", "weights": "FP8"})
    {'gpu': 'H100 SXM', 'model': 'Llama-3.1-70B', 'weights': 'fp8'}
    >>> check_given({"tensor_parallel": 0}, GIVEN_FLAGS)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: --tp must be greater than zero; got 0.
    """
    out: dict[str, Any] = {}
    for key, value in given.items():
        if key not in GIVEN_FLAGS:
            raise InputError(
                f"no keyword {key!r}: the keywords that fill what a file does not say are {', '.join(GIVEN_FLAGS)}."
            )
        name = (names or {}).get(key, key)
        if value is None:
            out[key] = None
            continue
        if key == "tensor_parallel":
            why = " (GPUs per replica)"
            out[key] = int(plain_number(value, name, integer=True, at_least=1, at_most=MOST_SIZE, why=why))
            continue
        if key == "concurrency":
            why = " (requests in flight)"
            out[key] = int(plain_number(value, name, integer=True, at_least=1, at_most=MOST_WHOLE, why=why))
            continue
        if not isinstance(value, str) or not value.strip():
            raise InputError(f"{name} must be a name; got {shortened(repr(value))}.")
        try:
            if key == "gpu":
                out[key] = gpu_name(value)
            elif key == "model":
                out[key] = model_name(value)
            elif key in ("weights", "kv"):
                key_ = value.strip().lower()
                if key_ not in _QUANT and key_ not in _PRECISION:
                    raise RowError(
                        f"precision {shortened(value)!r} unknown; use one of {', '.join(sorted(_PRECISION))}"
                    )
                out[key] = precision_name(value, key)
            else:
                if len(value) > MOST_NAME or not value.isprintable():
                    raise RowError(f"{shortened(value)!r} is not an engine's name (such as 'vLLM 0.11')")
                out[key] = value.strip()
        except RowError as exc:
            text = str(exc)
            raise InputError(f"{name}: {text}" + ("" if text.endswith((".", "?")) else ".")) from None
    return out
