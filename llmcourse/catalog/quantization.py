"""A checkpoint's precision per tensor group, read from a Hugging Face ``config.json``: its ``quantization_config``
(``quant_method`` fp8, mxfp4, compressed-tensors, awq, gptq, modelopt; the layers left unquantized:
``modules_to_not_convert``, ``ignored_layers``, ``ignore``, ``exclude_modules``), else its ``torch_dtype``.

As engines load them (vLLM's ``QuantizationConfig.get_quant_method`` gives a quantized method to linear and fused-MoE
layers only): the embeddings and the output head stay at the checkpoint's ``torch_dtype`` (BF16), whatever the
method; ``mxfp4`` (gpt-oss) quantizes the routed experts only (vLLM's ``Mxfp4Config``: ``FusedMoE`` gets
``Mxfp4MoEMethod``, every ``LinearBase`` the unquantized method); the others quantize every linear layer (attention,
MLPs, experts) but those their ignore list names.

Examples
--------
>>> checkpoint_precisions({"quantization_config": {"quant_method": "mxfp4",
...     "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens",
...                                "lm_head"]}})
'experts=mxfp4 other=bf16'
>>> checkpoint_precisions({"torch_dtype": "bfloat16", "quantization_config": {"quant_method": "fp8",
...     "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}})
'embeddings=bf16 unembedding=bf16 other=fp8_block'
>>> checkpoint_precisions({"quantization_config": {"quant_method": "bitsandbytes"}})
Traceback (most recent call last):
...
llmcourse.errors.InputError: config.json: quantization_config.quant_method 'bitsandbytes' is not one this package reads: it reads fp8, mxfp4, compressed-tensors, awq, gptq, modelopt. Give the model's weight_dtype yourself (Model(..., weight_dtype='experts=int4 other=bf16')), or remove quantization_config.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llmcourse.catalog.precision import GROUPS, checkpoint_text
from llmcourse.errors import InputError

__all__ = ["checkpoint_precisions"]

_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32"}
_METHODS = ("fp8", "mxfp4", "compressed-tensors", "awq", "gptq", "modelopt")
_LINEAR = ("experts", "attention", "mlp")  # the groups of linear layers a method quantizes


def _groups_of(pattern: str) -> set[str]:
    """The tensor groups a module name or pattern of an ignore list names."""
    p = pattern.lower()
    if "lm_head" in p or p.endswith("output"):
        return {"unembedding"}
    if "embed" in p:
        return {"embeddings"}
    if "attn" in p or "attention" in p:
        return {"attention"}
    if "shared_expert" in p:
        return {"mlp"}
    if "expert" in p:
        return {"experts"}
    if "mlp" in p and not p.rstrip("$").endswith(("gate", "router")):
        return {"mlp"}
    return set()  # routers, norms: under 1% of the weights, in the attention group


def _ignored(q: Mapping[str, Any], where: str) -> set[str]:
    out: set[str] = set()
    for key in ("modules_to_not_convert", "ignored_layers", "ignore", "exclude_modules"):
        names = q.get(key)
        if names is None:
            continue
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise InputError(f"{where}: quantization_config.{key} must be a list of module names, not {names!r}.")
        for n in names:
            out |= _groups_of(n)
    return out


def _whole(value: Any, field: str, where: str) -> int:
    if type(value) is not int or value < 1:
        raise InputError(f"{where}: quantization_config.{field} must be a whole number of at least 1, not {value!r}.")
    return value


def _int4(group: int) -> str | float:
    """INT4 weights with a 16-bit scale per ``group`` values: a name of the table, else bytes per value."""
    return {128: "w4a16", 32: "w4a16_g32"}.get(group, (4 + 16 / group) / 8)


def _compressed(q: Mapping[str, Any], where: str) -> dict[str, Any]:
    """compressed-tensors: each config group's weights (``num_bits``, ``type``, ``group_size``, ``strategy``) on its
    targets (``"Linear"``: every linear layer; a pattern naming experts: the experts)."""
    groups = q.get("config_groups")
    if not isinstance(groups, Mapping) or not groups:
        raise InputError(f"{where}: quantization_config.config_groups must name at least one group of weights.")
    out: dict[str, Any] = {}
    for name, spec in groups.items():
        w = spec.get("weights") if isinstance(spec, Mapping) else None
        if not isinstance(w, Mapping):
            raise InputError(f"{where}: quantization_config.config_groups.{name}.weights must be a JSON object.")
        bits = _whole(w.get("num_bits"), f"config_groups.{name}.weights.num_bits", where)
        kind, size = w.get("type"), w.get("group_size")
        if kind == "float" and bits == 8:
            block = w.get("block_structure")
            prec: str | float = "fp8_block" if block in ([128, 128], "128x128") else "fp8"
        elif kind == "float" and bits == 4:
            prec = "nvfp4" if size in (16, None) else "mxfp4"
        elif kind == "int" and bits == 4:
            prec = _int4(_whole(size, f"config_groups.{name}.weights.group_size", where) if size else 128)
        elif kind == "int" and bits == 8:
            prec = "int8"
        else:
            raise InputError(
                f"{where}: quantization_config.config_groups.{name}.weights: {bits}-bit {kind!r} weights are not a "
                "format this package reads (8- or 4-bit float, 8- or 4-bit int)."
            )
        targets = spec.get("targets") or ["Linear"]
        named = set().union(*(_groups_of(t) for t in targets if isinstance(t, str) and t != "Linear"))
        for g in named if named and "Linear" not in targets else _LINEAR:
            out[g] = prec
    return out


def checkpoint_precisions(cfg: Mapping[str, Any], where: str = "config.json") -> str:
    """The checkpoint's precision per tensor group (text for :class:`~llmcourse.catalog.Model`'s ``weight_dtype``,
    such as ``"experts=mxfp4 other=bf16"``) from a config's ``quantization_config`` and ``torch_dtype``."""
    dtype = cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16"
    base = _DTYPES.get(str(dtype).lower(), "bf16")
    q = cfg.get("quantization_config")
    groups: dict[str, Any] = dict.fromkeys(GROUPS, base)
    if q is None:
        return checkpoint_text(groups)
    if not isinstance(q, Mapping):
        raise InputError(f"{where}: quantization_config must be a JSON object, not {q!r}.")
    method = str(q.get("quant_method", "")).lower().replace("_", "-")
    if method == "fp8":
        block = q.get("weight_block_size")
        if block is None:
            prec: Any = "fp8"
        elif isinstance(block, list) and len(block) == 2:
            rows, cols = (_whole(b, "weight_block_size", where) for b in block)
            prec = "fp8_block" if (rows, cols) == (128, 128) else 1 + 4 / (rows * cols)
        else:
            raise InputError(f"{where}: quantization_config.weight_block_size must be two numbers, not {block!r}.")
        quantized: dict[str, Any] = dict.fromkeys(_LINEAR, prec)
    elif method == "mxfp4":
        quantized = {"experts": "mxfp4"}
    elif method == "compressed-tensors":
        quantized = _compressed(q, where)
    elif method in ("awq", "gptq"):
        bits = _whole(q.get("bits", q.get("w_bit", 4)), "bits", where)
        size = _whole(q.get("group_size", q.get("q_group_size", 128)), "group_size", where)
        if bits != 4:
            raise InputError(f"{where}: quantization_config.bits is {bits}: this package reads 4-bit {method} only.")
        prec = ("awq" if size == 128 else (4 + 20 / size) / 8) if method == "awq" else _int4(size)
        quantized = dict.fromkeys(_LINEAR, prec)
    elif method == "modelopt":
        algo = str(q.get("quant_algo", "")).upper()
        if algo not in ("FP8", "NVFP4"):
            raise InputError(f"{where}: quantization_config.quant_algo {algo!r}: this package reads FP8 and NVFP4.")
        quantized = dict.fromkeys(_LINEAR, algo.lower())
    else:
        raise InputError(
            f"{where}: quantization_config.quant_method {q.get('quant_method')!r} is not one this package reads: it "
            f"reads {', '.join(_METHODS)}. Give the model's weight_dtype yourself (Model(..., "
            "weight_dtype='experts=int4 other=bf16')), or remove quantization_config."
        )
    for g in set(quantized) - _ignored(q, where):
        groups[g] = quantized[g]
    return checkpoint_text(groups)
