"""Precisions: the bytes a stored value takes (its scales counted) and the precision its matrix multiplications run
at, in one table (:data:`PRECISION_TABLE`); a checkpoint's precision per tensor group (:data:`GROUPS`), written as
text (``"experts=mxfp4 other=bf16"``) or a mapping.

A 4-bit format's scales are part of its bytes: MXFP4 is 4 bits plus one 8-bit E8M0 scale per 32 values (4.25
bits, OCP Microscaling spec); NVFP4 4 bits plus one FP8 E4M3 scale per 16 values (4.5 bits; its one FP32 scale per
tensor is left out: a few bytes); GPTQ and AWQ 4 bits plus an FP16 scale per 128 values (AWQ also a 4-bit zero
point); DeepSeek-V3's FP8 one FP32 scale per 128 x 128 block. The bare names the course's arithmetic uses (``"fp8"``,
``"int4"``, ``"fp4"``) count no scale, as the sources' worked figures do.

Defined in the chapter *Weights* (``book/02_weights.md``).

Examples
--------
>>> bytes_per_value("mxfp4"), bytes_per_value("NVFP4"), bytes_per_value("fp8_e4m3")
(0.53125, 0.5625, 1.0)
>>> bytes_per_value("nfp4")
Traceback (most recent call last):
...
llmcourse.errors.InputError: unknown precision 'nfp4': did you mean 'nvfp4' or 'fp4'? Use a name (bf16, fp16, fp32, fp8, fp8_block, int8, int4, fp4, mxfp4, nvfp4, w4a16, awq, w4a16_g32; also fp8_e4m3, w8a8, w4a4, gptq; GGUF types such as q4_k_m, q8_0) or a number of bytes such as 2.
>>> bytes_per_value("Q4_K") * 8, bytes_per_value("Q8_0") * 8, bytes_per_value("IQ4_XS") * 8
(4.5, 8.5, 4.25)
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from llmcourse.errors import InputError
from llmcourse.units import plain_number

if TYPE_CHECKING:
    from llmcourse.catalog.catalog import Model

__all__ = [
    "GGUF_TABLE",
    "GROUPS",
    "PRECISIONS",
    "PRECISION_ALIASES",
    "PRECISION_TABLE",
    "Precision",
    "bytes_per_value",
    "checkpoint_text",
    "compute_of",
    "group_precisions",
    "number_text",
    "param_groups",
    "parse_precisions",
    "per_group",
    "precision_label",
    "precision_name",
    "precisions_text",
]


@dataclass(frozen=True)
class Precision:
    """One stored format: ``bytes`` per value with its scales, the precision its matmuls run at on a GPU that has a
    peak for it (``compute``: ``"bf16"`` for a weight-only format, widened to 16 bits to multiply), and what it is."""

    bytes: float
    compute: str
    about: str


#: The one table of precisions (name: bytes per value with its scales, matmul precision, what it is).
PRECISION_TABLE: dict[str, Precision] = {
    "bf16": Precision(2.0, "bf16", "BF16"),
    "fp16": Precision(2.0, "bf16", "FP16"),
    "fp32": Precision(4.0, "bf16", "FP32 (multiplied at BF16)"),
    "fp8": Precision(1.0, "fp8", "FP8 E4M3, W8A8, a scale per tensor or channel (negligible)"),
    "fp8_block": Precision(1 + 4 / (128 * 128), "fp8", "FP8 E4M3 with one FP32 scale per 128 x 128 block (DeepSeek)"),
    "int8": Precision(1.0, "bf16", "INT8 weight-only (W8A16), multiplied at BF16"),
    "int4": Precision(0.5, "bf16", "INT4 weight-only, no scale counted, multiplied at BF16"),
    "fp4": Precision(0.5, "fp4", "FP4 E2M1 weights and activations, no scale counted"),
    "mxfp4": Precision(
        (4 + 8 / 32) / 8, "bf16", "MXFP4: 4 bits + an E8M0 scale per 32 values; weight-only, multiplied at BF16"
    ),
    "nvfp4": Precision((4 + 8 / 16) / 8, "fp4", "NVFP4: 4 bits + an FP8 scale per 16 values, W4A4 at the FP4 peak"),
    "w4a16": Precision((4 + 16 / 128) / 8, "bf16", "INT4 + an FP16 scale per 128 values (GPTQ, Marlin: BF16 matmul)"),
    "awq": Precision(
        (4 + (16 + 4) / 128) / 8, "bf16", "AWQ: INT4 + an FP16 scale and a 4-bit zero per 128 values (BF16 matmul)"
    ),
    "w4a16_g32": Precision((4 + 16 / 32) / 8, "bf16", "INT4 + a 16-bit scale per 32 values (Kimi-K2.5's experts)"),
}


def _gguf(block_bytes: int, block_weights: int, about: str) -> Precision:
    """A llama.cpp (GGUF) block type: ``block_bytes`` per block of ``block_weights`` weights, its scales included;
    llama.cpp dequantizes it to multiply, so its matmuls run at the 16-bit rate (``compute`` ``"bf16"``)."""
    return Precision(block_bytes / block_weights, "bf16", f"GGUF {about}: {block_bytes} bytes per {block_weights} "
                     f"weights = {8 * block_bytes / block_weights:g} bits per weight")  # fmt: skip


#: llama.cpp's GGUF quantization types, in bytes per weight with their scales: each block type's size from the block
#: structs of ggml's ``ggml-common.h`` (``block_q4_0`` ... ``block_iq4_xs``, each checked by a ``static_assert`` on
#: its ``sizeof``; 32 weights per block for the legacy types and IQ4_NL, ``QK_K`` = 256 for the k- and i-quants).
#: Q4_K_M, Q5_K_M and Q3_K_M are not block types but llama.cpp ``quantize``'s mixes (``LLAMA_FTYPE_MOSTLY_Q4_K_M``:
#: most tensors Q4_K, half of the attention V and FFN down tensors Q6_K); their figure is the effective bits per
#: weight llama.cpp's loader prints for a dense model (``model size = ... (4.89 BPW)``), a course figure within the
#: 4.8-4.9 range of dense 7-8B models: a mixture of experts' file, its experts mostly Q4_K, reports less (Mixtral
#: 8x7B Q4_K_M: 4.53 BPW, llama.cpp issue #5206). Pass the file's own size as ``weight_bytes`` where you have it.
GGUF_TABLE: dict[str, Precision] = {
    "q4_0": _gguf(18, 32, "Q4_0 (a 16-bit scale per 32 4-bit weights)"),
    "q4_1": _gguf(20, 32, "Q4_1 (a 16-bit scale and minimum per 32 4-bit weights)"),
    "q5_0": _gguf(22, 32, "Q5_0"),
    "q5_1": _gguf(24, 32, "Q5_1"),
    "q8_0": _gguf(34, 32, "Q8_0 (a 16-bit scale per 32 8-bit weights)"),
    "q2_k": _gguf(84, 256, "Q2_K"),
    "q3_k": _gguf(110, 256, "Q3_K"),
    "q4_k": _gguf(144, 256, "Q4_K (super-blocks of 256 with 6-bit sub-block scales)"),
    "q5_k": _gguf(176, 256, "Q5_K"),
    "q6_k": _gguf(210, 256, "Q6_K"),
    "iq1_s": _gguf(50, 256, "IQ1_S"),
    "iq2_xxs": _gguf(66, 256, "IQ2_XXS"),
    "iq2_xs": _gguf(74, 256, "IQ2_XS"),
    "iq2_s": _gguf(82, 256, "IQ2_S"),
    "iq3_xxs": _gguf(98, 256, "IQ3_XXS"),
    "iq3_s": _gguf(110, 256, "IQ3_S"),
    "iq4_nl": _gguf(18, 32, "IQ4_NL"),
    "iq4_xs": _gguf(136, 256, "IQ4_XS"),
    "q3_k_m": Precision(4.00 / 8, "bf16", "GGUF Q3_K_M mix (Q3_K, some tensors Q4_K/Q5_K): about 4.00 bits per "
                        "weight for a dense model: llama-quantize's list (tools/quantize/quantize.cpp), 'Q3_K_M : "
                        "3.74G, +0.6569 ppl @ Llama-3-8B', 3.74 GiB x 8 / 8.03e9 = 4.00 (as its Q4_K_M 4.58G and "
                        "Q5_K_M 5.33G give 4.89 and 5.70)"),
    "q4_k_m": Precision(4.89 / 8, "bf16", "GGUF Q4_K_M mix (Q4_K, some tensors Q6_K): about 4.89 bits per weight "
                        "for a dense model (course figure)"),
    "q5_k_m": Precision(5.70 / 8, "bf16", "GGUF Q5_K_M mix (Q5_K, some tensors Q6_K): about 5.70 bits per weight "
                        "for a dense model (course figure)"),
}  # fmt: skip
PRECISION_TABLE.update(GGUF_TABLE)

#: Other names users type, each for a name of :data:`PRECISION_TABLE`.
PRECISION_ALIASES: dict[str, str] = {"fp8_e4m3": "fp8", "w8a8": "fp8", "w4a4": "nvfp4", "gptq": "w4a16"}

#: Bytes per stored value of every name (aliases too): :data:`PRECISION_TABLE`'s bytes, for arithmetic by name.
PRECISIONS: dict[str, float] = {
    **{k: p.bytes for k, p in PRECISION_TABLE.items()},
    **{k: PRECISION_TABLE[v].bytes for k, v in PRECISION_ALIASES.items()},
}

#: The tensor groups a checkpoint may store at different precisions. ``experts``: the routed experts' weights;
#: ``mlp``: the MLPs every token uses (a dense model's, a MoE model's dense layers and shared experts);
#: ``attention``: the attention projections, with the norms and routers (under 1% of the weights);
#: ``embeddings`` and ``unembedding`` (the output head).
GROUPS = ("experts", "attention", "mlp", "embeddings", "unembedding")


def _did_you_mean(word: str, known: list[str]) -> str:
    close = difflib.get_close_matches(word, known, n=2, cutoff=0.6)
    return f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""


def precision_name(name: str) -> str:
    """The table's name for a precision name (case ignored, aliases mapped); an unknown one gets "did you mean".

    Examples
    --------
    >>> precision_name("FP8_E4M3"), precision_name("gptq"), precision_name("bf16")
    ('fp8', 'w4a16', 'bf16')
    """
    key = name.strip().lower().replace("-", "_")
    key = PRECISION_ALIASES.get(key, key)
    if key in PRECISION_TABLE:
        return key
    known = (
        ", ".join(k for k in PRECISION_TABLE if k not in GGUF_TABLE)
        + "; also "
        + ", ".join(k for k in PRECISION_ALIASES if PRECISION_ALIASES[k] not in GGUF_TABLE)
        + "; GGUF types such as q4_k_m, q8_0"
    )
    hint = _did_you_mean(key, list(PRECISION_TABLE) + list(PRECISION_ALIASES))
    raise InputError(f"unknown precision {name!r}: {hint}Use a name ({known}) or a number of bytes such as 2.")


def bytes_per_value(precision: str | float | int) -> float:
    """Bytes per stored value for a precision name (``"bf16"``, scales counted) or a number of bytes.

    Examples
    --------
    >>> bytes_per_value("fp8"), bytes_per_value(2), bytes_per_value("INT4"), bytes_per_value("fp8_block")
    (1.0, 2.0, 0.5, 1.000244140625)
    """
    if isinstance(precision, bool):
        raise InputError(f"precision must be a name such as 'bf16' or a number of bytes, not {precision!r}.")
    if isinstance(precision, int | float) or type(precision).__module__ == "numpy":
        return plain_number(precision, "bytes per value")
    if isinstance(precision, str):
        return PRECISION_TABLE[precision_name(precision)].bytes
    raise InputError(f"precision must be a name such as 'bf16' or a number of bytes, not {precision!r}.")


def compute_of(precision: Any) -> str:
    """The matmul precision of a stored format on a GPU that has a peak for it (:attr:`Precision.compute`); a number of
    bytes: 1 byte is read as FP8, anything else as 16-bit arithmetic.

    Examples
    --------
    >>> compute_of("nvfp4"), compute_of("mxfp4"), compute_of("w8a8"), compute_of(1), compute_of(0.5)
    ('fp4', 'bf16', 'fp8', 'fp8', 'bf16')
    """
    if isinstance(precision, str):
        return PRECISION_TABLE[precision_name(precision)].compute
    return "fp8" if bytes_per_value(precision) == 1.0 else "bf16"


_SPLIT = re.compile(r"[\s,;]+")


def parse_precisions(spec: str | Mapping[str, Any], where: str = "weight_bytes") -> dict[str, Any]:
    """A per-group precision (``"experts=mxfp4 other=bf16"``, or ``{"experts": "mxfp4", "other": "bf16"}``) as a
    dict of :data:`GROUPS` (and ``"other"``: every group not named) to a precision name or a number of bytes; a
    bare name (``"fp8"``) is ``{"other": "fp8"}``. Each precision is checked; an unknown group is refused, naming it
    and the known ones.

    Examples
    --------
    >>> parse_precisions("experts=mxfp4, other=BF16")
    {'experts': 'mxfp4', 'other': 'bf16'}
    >>> parse_precisions({"expert": "nvfp4"})
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: weight_bytes: unknown tensor group 'expert': did you mean 'experts'? The groups are experts, attention, mlp, embeddings, unembedding, and other (every group not named).
    """
    if isinstance(spec, str):
        items: list[tuple[str, Any]] = []
        for part in _SPLIT.split(spec.strip()):
            if not part:
                continue
            group, eq, value = part.partition("=")
            items.append((group, value) if eq else ("other", group))
        if not items:
            raise InputError(f"{where}: give a precision such as 'bf16' or 'experts=mxfp4 other=bf16', not {spec!r}.")
    elif isinstance(spec, Mapping):
        items = list(spec.items())
    else:
        raise InputError(f"{where}: give a precision name, a number of bytes, or a mapping of groups, not {spec!r}.")
    out: dict[str, Any] = {}
    for group, value in items:
        key = group.strip().lower() if isinstance(group, str) else group
        if key not in (*GROUPS, "other"):
            hint = _did_you_mean(str(key), [*GROUPS, "other"])
            raise InputError(
                f"{where}: unknown tensor group {group!r}: {hint}The groups are {', '.join(GROUPS)}, and other "
                "(every group not named)."
            )
        if key in out:
            raise InputError(f"{where}: tensor group {key!r} is given twice.")
        try:
            out[key] = (
                precision_name(value)
                if isinstance(value, str) and not number_text(value)
                else bytes_per_value(float(value) if isinstance(value, str) else value)
            )
        except InputError as exc:
            raise InputError(f"{where}[{key!r}]: {exc}") from None
    return out


def number_text(text: str) -> bool:
    """Whether ``text`` spells a number (a number of bytes in a per-group text)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def per_group(weight_bytes: Any) -> bool:
    """Whether ``weight_bytes`` gives precisions per tensor group (a mapping, or text with ``group=``) or is None (the
    checkpoint's, which may differ by group), rather than one precision for every weight."""
    return (
        weight_bytes is None
        or isinstance(weight_bytes, Mapping)
        or (isinstance(weight_bytes, str) and "=" in weight_bytes)
    )


def precisions_text(spec: str | Mapping[str, Any], where: str = "weight_bytes") -> str:
    """A per-group precision (:func:`parse_precisions`, checked) as one line of text, in :data:`GROUPS` order.

    Examples
    --------
    >>> precisions_text({"other": "BF16", "experts": "gptq"})
    'experts=w4a16 other=bf16'
    """
    given = parse_precisions(spec, where)
    return " ".join(f"{k}={given[k]}" for k in (*GROUPS, "other") if k in given)


def checkpoint_text(groups: Mapping[str, Any]) -> str:
    """A per-group precision as text, the most common precision as ``other`` (one name if all agree).

    Examples
    --------
    >>> checkpoint_text({"experts": "mxfp4", "attention": "bf16", "mlp": "bf16", "embeddings": "bf16",
    ...                  "unembedding": "bf16"})
    'experts=mxfp4 other=bf16'
    >>> checkpoint_text(dict.fromkeys(GROUPS, "fp8"))
    'fp8'
    """
    values = [groups[g] for g in GROUPS if g in groups]
    common = max(values, key=values.count)
    named = [f"{g}={groups[g]:g}" if not isinstance(groups[g], str) else f"{g}={groups[g]}" for g in GROUPS
             if g in groups and groups[g] != common]  # fmt: skip
    return " ".join([*named, f"other={common}"]) if named else str(common)


def precision_label(m: Model, weight_bytes: Any = None) -> str:
    """How ``m``'s weights are stored at ``weight_bytes``, in one line for a printout: the groups' precisions
    (:func:`checkpoint_text`), said to be the checkpoint's when ``weight_bytes`` is None.

    Examples
    --------
    >>> from llmcourse import models
    >>> precision_label(models["gpt-oss-120b"]), precision_label(models["gpt-oss-120b"], "FP8"), precision_label(
    ...     models["Llama-3.1-8B"], 2)
    ("experts=mxfp4 other=bf16 (the checkpoint's)", 'fp8', '2 B per weight')
    """
    groups = group_precisions(m, weight_bytes)
    if all(isinstance(v, str) for v in groups.values()):
        text = checkpoint_text(groups)
    else:
        values = set(map(str, groups.values()))
        one = next(iter(groups.values()))
        text = (
            f"{one:g} B per weight"
            if len(values) == 1 and isinstance(one, int | float)
            else (str(one) if len(values) == 1 else " ".join(f"{g}={v}" for g, v in groups.items()))
        )
    return f"{text} (the checkpoint's)" if weight_bytes is None else text


def group_precisions(m: Model, weight_bytes: Any = None) -> dict[str, Any]:
    """The precision of each of :data:`GROUPS` of ``m``'s weights stored at ``weight_bytes``: None, the model's
    checkpoint (:attr:`Model.checkpoint`); one precision (a name, a number or a byte quantity), every group at it; a
    per-group mapping or text, the groups it names at their precision, ``other`` for those it does not, and the
    checkpoint's own for the rest.

    Examples
    --------
    >>> from llmcourse import models
    >>> group_precisions(models["gpt-oss-120b"])["experts"], group_precisions(models["gpt-oss-120b"], "fp8")["mlp"]
    ('mxfp4', 'fp8')
    >>> group_precisions(models["gpt-oss-120b"], {"experts": "nvfp4"})["attention"]
    'bf16'
    """
    own = m.checkpoint
    if weight_bytes is None:
        return dict(own)
    if isinstance(weight_bytes, str) and "=" not in weight_bytes:
        return dict.fromkeys(GROUPS, precision_name(weight_bytes))
    if isinstance(weight_bytes, str | Mapping):
        given = parse_precisions(weight_bytes)
        rest = given.get("other")
        return {g: given.get(g, own[g] if rest is None else rest) for g in GROUPS}
    return dict.fromkeys(GROUPS, weight_bytes)


def param_groups(m: Model) -> dict[str, float]:
    """``m``'s parameters in each of :data:`GROUPS`, summing to ``m.params``. The routed experts are counted from
    the shape (gated: 3 x hidden x moe_intermediate each, in every MoE layer), else :attr:`Model.expert_params`
    (derived from the published, rounded, params and active params); the MLPs every token uses, gated (3 x hidden x intermediate each): a dense
    model's in every layer, a MoE model's in its dense layers and its shared experts; the embeddings and the output
    head vocab x hidden each (one copy if ``tied_embeddings``); attention is the rest (its projections, with the
    norms and routers).

    Examples
    --------
    >>> from llmcourse import models
    >>> g = param_groups(models["Llama-3.1-8B"])
    >>> round(g["mlp"] / 1e9, 3), round(g["embeddings"] / 1e9, 3), round(g["attention"] / 1e9, 3)
    (5.637, 0.525, 1.342)
    """
    experts = m.expert_params
    if m.is_moe:
        dense = m.dense_layers or 0
        if m.moe_intermediate:  # from the shape: the published params and active params are rounded
            experts = (m.layers - dense) * m.experts * 3 * m.hidden * m.moe_intermediate
        mlp = dense * 3 * m.hidden * (m.intermediate or 0)
        mlp += (m.layers - dense) * (m.shared_experts or 0) * 3 * m.hidden * (m.moe_intermediate or 0)
    else:
        mlp = m.layers * 3 * m.hidden * (m.intermediate or 0)
    embed = (m.vocab or 0) * m.hidden
    unembed = 0 if m.tied_embeddings else embed
    attention = m.params - experts - mlp - embed - unembed
    if attention < 0:
        raise InputError(
            f"Model {m.name!r}: params ({m.params:.4g}) is fewer than its routed experts, MLPs and embeddings "
            f"({experts + mlp + embed + unembed:.4g}) counted from its shape: check params, intermediate and vocab."
        )
    return {"experts": experts, "attention": attention, "mlp": float(mlp), "embeddings": float(embed),
            "unembedding": float(unembed)}  # fmt: skip
