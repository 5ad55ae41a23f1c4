"""Read a transformer's Hugging Face config: check its fields, find its layer pattern, count its parameters.

Covers the families in the catalog: Llama/Mistral/Qwen2 (GQA, optional QKV bias),
Mixtral/Qwen3-MoE/gpt-oss (routed experts), DeepSeek-V3 (MLA, shared experts,
leading dense layers), Qwen2-MoE's shared expert of its own size, and sliding-window layers
(every layer, gpt-oss's ``layer_types``, Gemma's ``sliding_window_pattern``, Qwen2's
``max_window_layers``), and the other layer types (:func:`layer_pattern`: Llama 4's chunked attention and its
shared expert, Qwen3-Next / Qwen3.5 Gated DeltaNet and MiniMax lightning linear attention, DeepSeek-V3.2 / GLM-5's
sparse-attention indexer). Norm weights are counted; small biases of gpt-oss experts are not.

:func:`read_config` is the one gate: every field the estimates read is checked (a whole number in a
plausible range, or a strict JSON boolean), and a config whose layers the package cannot model
(state-space or recurrent layers, a layer type it does not know, or a modelled type whose shape fields are
missing) is refused with an :class:`~llmcourse.errors.InputError` that names the
field, rather than read as if every layer were full attention.

Defined in the chapter *Weights* (``book/02_weights.md``).
"""

from __future__ import annotations

import json
import math
import numbers
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from llmcourse.errors import InputError

__all__ = [
    "MAX_CONFIG_BYTES",
    "count_params",
    "dense_layer_count",
    "layer_pattern",
    "model_shape",
    "read_config",
    "sliding_window_layers",
]

#: The largest config.json read (a published one is a few kilobytes; one listing every layer, well under 1 MB).
MAX_CONFIG_BYTES = 10_000_000

_ANY = 10**12  # no model has a count this large: the bound of a field with no tighter one

#: The whole-number fields read, each with its least and greatest accepted value. The greatest are far beyond any
#: published model (the largest have about 130 layers, hidden 25,000, 512 experts, a vocabulary of 262,000 and
#: a context of 10 million tokens): a value above one is a typo, and would only overflow the arithmetic.
_WHOLE: dict[str, tuple[int, int]] = {
    "num_hidden_layers": (1, 10_000),
    "hidden_size": (1, 1_000_000),
    "num_attention_heads": (1, 100_000),
    "num_key_value_heads": (1, 100_000),
    "head_dim": (1, 100_000),
    "intermediate_size": (1, 10_000_000),
    "intermediate_size_mlp": (1, 10_000_000),
    "moe_intermediate_size": (1, 10_000_000),
    "shared_expert_intermediate_size": (0, 10_000_000),
    "shared_intermediate_size": (0, 10_000_000),
    "vocab_size": (1, 100_000_000),
    "num_local_experts": (1, 1_000_000),
    "num_experts": (1, 1_000_000),
    "n_routed_experts": (1, 1_000_000),
    "num_experts_per_tok": (1, 1_000_000),
    "experts_per_token": (1, 1_000_000),
    "n_shared_experts": (0, 10_000),
    "first_k_dense_replace": (0, 10_000),
    "n_group": (1, 1_000_000),
    "topk_group": (1, 1_000_000),
    "moe_layer_freq": (1, 10_000),
    "decoder_sparse_step": (1, 10_000),
    "interleave_moe_layer_step": (1, 10_000),
    "kv_lora_rank": (1, 1_000_000),
    "q_lora_rank": (1, 1_000_000),
    "qk_nope_head_dim": (0, 100_000),
    "qk_rope_head_dim": (1, 100_000),
    "v_head_dim": (1, 100_000),
    "max_position_embeddings": (1, 10_000_000_000),
    "sliding_window": (1, 10_000_000_000),
    "max_window_layers": (0, 10_000),
    "sliding_window_pattern": (1, 10_000),
    "attention_chunk_size": (1, 10_000_000_000),
    "no_rope_layer_interval": (1, 10_000),
    "full_attention_interval": (1, 10_000),
    "linear_num_key_heads": (1, 100_000),
    "linear_num_value_heads": (1, 100_000),
    "linear_key_head_dim": (1, 100_000),
    "linear_value_head_dim": (1, 100_000),
    "linear_conv_kernel_dim": (1, 10_000),
    "index_topk": (1, 10_000_000_000),
    "index_n_heads": (1, 100_000),
    "index_head_dim": (1, 100_000),
}
_FLAGS = ("use_sliding_window", "tie_word_embeddings", "attention_bias")
_REQUIRED = ("num_hidden_layers", "hidden_size", "num_attention_heads")
_EXPERTS = ("num_local_experts", "num_experts", "n_routed_experts")
_PER_TOKEN = ("num_experts_per_tok", "experts_per_token")
_MLA = ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
_LAYER_TYPES = ("full_attention", "sliding_attention", "chunked_attention", "linear_attention")  # those modelled
#: A Gated DeltaNet layer's shape (Qwen3-Next, Qwen3.5): the fields that must all be given with its layers.
_GDN = ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
        "linear_conv_kernel_dim")  # fmt: skip
#: Bytes per value of a linear-attention state's dtype (``mamba_ssm_dtype``), as the configs spell it.
_STATE_DTYPES = {"float32": 4.0, "float16": 2.0, "bfloat16": 2.0}

#: Model types whose Transformers code sets a window pattern the config may not spell out: ``(i + 1) % p``
#: is nonzero for a sliding-window layer ``i`` (Gemma 2 alternates; Gemma 3 has 5 local then 1 global).
_DEFAULT_PATTERN = {"gemma2": 2, "gemma3": 6, "gemma3_text": 6, "cohere2": 4}

#: Model types whose layers are not all attention layers (state-space, recurrent or convolution layers, or linear
#: attention the package does not read), for configs that do not list their layers in ``layer_types``.
_HYBRID_TYPES = frozenset((
    "mamba", "mamba2", "falcon_mamba", "jamba", "zamba", "zamba2", "bamba", "falcon_h1", "nemotron_h",
    "granitemoehybrid", "recurrent_gemma", "lfm2", "lfm2_moe", "rwkv", "xlstm", "kimi_linear",
))  # fmt: skip
#: Model types with Gated DeltaNet layers, read from ``layer_types`` or ``full_attention_interval``.
_GDN_TYPES = frozenset(("qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text"))
#: Fields that only a config with state-space or linear-attention layers has.
_HYBRID_FIELDS = (
    "attn_layer_period",
    "attn_layer_offset",
    "hybrid_override_pattern",
    "layers_block_type",
    "block_types",
    "attn_layer_indices",
    "linear_attn_config",
)
_HYBRID_PREFIXES = ("ssm_",)
_INDEXER = ("index_topk", "index_n_heads", "index_head_dim")

_CANNOT = (
    "which this package cannot model yet (it models full-attention, sliding-window, chunked, Gated DeltaNet and "
    "lightning linear-attention, and DeepSeek-style sparse-attention layers, and reading the others as full attention "
    "would misstate both the cache and the parameter count): use a model whose every layer is one of those"
)


def _show(value: Any) -> str:
    """``value`` as JSON spells it (``"4096"``, ``true``, ``NaN``), cut to a readable length."""
    try:
        text = json.dumps(value)
    except Exception:  # not JSON (a set, an object), or an integer too long to print
        try:
            text = repr(value)
        except Exception:
            return f"a {type(value).__name__}"
    return text if len(text) <= 60 else text[:57] + "..."


def _cut(text: str, most: int = 80) -> str:
    return text if len(text) <= most else text[: most - 3] + "..."


def _whole(cfg: Mapping[str, Any], key: str, where: str) -> int | None:
    """The field ``key`` as an int (``None`` when absent or null), or an InputError that names it."""
    value = cfg.get(key)
    if value is None:
        return None
    least, most = _WHOLE[key]
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        raise InputError(f"{where}: {key} is a number, not {_show(value)}: write it as a number, not a flag.")
    if isinstance(value, str | bytes):
        try:
            spelled = float(value)
            example = f"{int(spelled)}" if spelled.is_integer() and abs(spelled) < 1e18 else "4096"
        except (ValueError, OverflowError):
            example = "4096"
        raise InputError(
            f'{where}: {key} must be a number, not text: write "{key}": {example} (no quotes), not "{key}": '
            f"{_show(value)}."
        )
    if not isinstance(value, numbers.Real):
        raise InputError(f"{where}: {key} must be a whole number, not {_show(value)}.")
    if isinstance(value, numbers.Integral):
        n = int(value)
    else:
        x = float(value)
        if not math.isfinite(x):
            raise InputError(f"{where}: {key} must be a finite whole number, not {_show(value)}.")
        if not x.is_integer():
            raise InputError(f"{where}: {key} must be a whole number; got {_show(value)}.")
        n = int(x)
    if n < least:
        raise InputError(f"{where}: {key} must be at least {least}; got {n}.")
    if n > most:
        shown = str(n) if n < 10**30 else f"about 10^{int(n.bit_length() * math.log10(2))}"
        raise InputError(
            f"{where}: {key} must be at most {most:,} (far beyond any published model: is it a typo?); got {shown}."
        )
    return n


def _flag(cfg: Mapping[str, Any], key: str, where: str) -> bool | None:
    """The field ``key`` as a strict JSON boolean (``None`` when absent or null): ``"false"`` is refused."""
    value = cfg.get(key)
    if value is None or value is True or value is False:
        return value
    what = "the text" if isinstance(value, str) else "the value"
    raise InputError(f"{where}: {key} must be true or false (a JSON boolean, no quotes), not {what} {_show(value)}.")


def _load(path: Path, where: str) -> Any:
    """The parsed JSON of a config file, or an InputError that says what is wrong with the file."""
    try:
        if path.is_dir():
            raise IsADirectoryError
        if path.exists() and not path.is_file():  # a device or a pipe, which could be read for ever
            raise InputError(f"{where} is not a regular file: give the path to a config.json.")
        with path.open("rb") as f:
            data = f.read(MAX_CONFIG_BYTES + 1)
    except IsADirectoryError:
        raise InputError(f"{where} is a folder: give the path to the config.json file inside it.") from None
    except InputError:
        raise
    except (OSError, ValueError) as exc:  # none there, no permission, a name too long, a null byte in the path
        text = str(path).lstrip()
        hint = " (to pass the JSON text itself, give json.loads(text))" if text[:1] in ("{", "[") else ""
        if isinstance(exc, FileNotFoundError):
            raise InputError(f"no config file at {_cut(str(path))!r}: give the path to a config.json{hint}.") from None
        raise InputError(f"{where} cannot be read ({type(exc).__name__}: {_cut(str(exc))}){hint}.") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise InputError(
            f"{where} is over {MAX_CONFIG_BYTES:,} bytes, the most read: a config.json is a few kilobytes. Is it the "
            "right file (not the weights)?"
        )
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(f"{where} is not UTF-8 text: is it a config.json?") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{where} is not valid JSON ({exc}).") from None
    except RecursionError:
        raise InputError(f"{where} is not a config.json: its JSON is nested too deeply to read.") from None
    except ValueError as exc:  # an integer of thousands of digits
        raise InputError(f"{where} cannot be read as a config.json ({exc}).") from None


def _positive_int(value: Any) -> bool:
    return type(value) is int and 0 < value < 10**12


def _refuse_unsupported(cfg: Mapping[str, Any], where: str) -> None:
    """An InputError naming the field when the config's layers are ones the package cannot model."""
    types = cfg.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
            raise InputError(
                f'{where}: layer_types must be a list of layer names such as ["sliding_attention", "full_attention"]; '
                f"got {_show(types)}."
            )
        other = [t for t in types if t not in _LAYER_TYPES]
        if other:
            kind = max(dict.fromkeys(other), key=other.count)
            raise InputError(
                f"{where}: layer_types: {other.count(kind)} of {len(types)} layers are {kind!r}, {_CANNOT}."
            )
    model_type = cfg.get("model_type") or ""
    for key in _HYBRID_FIELDS:
        value = cfg.get(key)
        if value is None:
            continue
        every = f"one layer in {value:,}" if _positive_int(value) else "some layers"
        what = {
            "attn_layer_period": f"{every} is attention; the others are Mamba (state-space) layers",
            "hybrid_override_pattern": f"the pattern {_show(value)} marks Mamba ('M') layers beside attention ('*')",
        }.get(key, "this config interleaves attention with state-space (Mamba) or other non-attention layers")
        raise InputError(f"{where}: {key}: {what}, {_CANNOT}.")
    kinds = cfg.get("attn_type_list")
    if kinds is not None and (not isinstance(kinds, list) or any(type(v) is not int or v not in (0, 1) for v in kinds)):
        raise InputError(
            f"{where}: attn_type_list must list 0 (linear, lightning attention) or 1 (softmax attention) for each "
            f"layer; got {_show(kinds)}."
        )
    mamba_layers = cfg.get("layers_block_type") is not None or any(
        isinstance(k, str) and k.startswith("mamba_") and k != "mamba_ssm_dtype" for k in cfg
    )
    for key in cfg:
        if isinstance(key, str) and (key.startswith(_HYBRID_PREFIXES) or (mamba_layers and key.startswith("mamba_"))):
            raise InputError(f"{where}: {key}: this config has state-space (Mamba) layers, {_CANNOT}.")
    listed = types is not None or cfg.get("full_attention_interval") is not None
    if not listed and (model_type in _HYBRID_TYPES or model_type in _GDN_TYPES):
        raise InputError(
            f"{where}: model_type {model_type!r} has state-space, linear-attention, recurrent or convolution layers "
            f"beside (or instead of) attention, {_CANNOT}."
        )


def read_config(config: str | os.PathLike[str] | Mapping[str, Any]) -> dict[str, Any]:
    """A Hugging Face config, checked: the fields the estimates read, each a whole number or a boolean.

    ``config`` is a path to ``config.json`` or the parsed dict. A multimodal config's ``text_config``
    is merged over its top level (the text model's fields win; two different values of a field the
    estimates read are refused). Every malformed field, and every layer pattern the package cannot
    model, raises :class:`~llmcourse.errors.InputError` naming the field. Reading the result again
    gives the same dict.

    Examples
    --------
    >>> read_config({"num_hidden_layers": 32, "hidden_size": 4096.0, "num_attention_heads": 32})["hidden_size"]
    4096
    >>> read_config({"num_hidden_layers": 32, "hidden_size": "4096", "num_attention_heads": 32})
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: config.json: hidden_size must be a number, not text: write "hidden_size": 4096 (no quotes), not "hidden_size": "4096".
    >>> read_config({"num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 4,
    ...              "layer_types": ["mamba"] * 3 + ["full_attention"]})
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: config.json: layer_types: 3 of 4 layers are 'mamba', which this package cannot model yet ...
    """
    where = "config.json"
    if isinstance(config, str | os.PathLike):
        try:
            path = Path(config)
        except (TypeError, ValueError) as exc:
            raise InputError(f"from_hf_config: {config!r} is not a path ({exc}).") from None
        where = f"config file {_cut(str(path))!r}"
        config = _load(path, where)
        if not isinstance(config, dict):
            raise InputError(f"{where} must hold a JSON object ({{...}}), not {_show(config)}.")
    if not isinstance(config, Mapping):
        raise InputError(
            f"from_hf_config needs a path to config.json or the parsed dict (a mapping), not {_show(config)}."
        )
    cfg = dict(config)
    text = cfg.pop("text_config", None)
    if text is not None:
        if not isinstance(text, Mapping):
            raise InputError(
                f"{where}: text_config must be a JSON object holding the text model's fields, not {_show(text)}."
            )
        for key in (*_WHOLE, *_FLAGS):
            top, inner = cfg.get(key), text.get(key)
            if top is not None and inner is not None and not _same(top, inner):
                raise InputError(
                    f"{where}: {key} is {_show(top)} at the top level but {_show(inner)} in text_config: which is "
                    "the text model's? Remove the wrong one."
                )
        name = cfg.get("_name_or_path")
        cfg = {**cfg, **{k: v for k, v in text.items() if k != "text_config"}}
        if name is not None:
            cfg["_name_or_path"] = name
    model_type = cfg.get("model_type")
    if model_type is not None and not isinstance(model_type, str):
        raise InputError(f'{where}: model_type must be text such as "llama", not {_show(model_type)}.')
    _refuse_unsupported(cfg, where)
    missing = [k for k in _REQUIRED if cfg.get(k) is None]
    if missing:
        raise InputError(f"{where} lacks {', '.join(missing)}: is this a decoder-only transformer's config?")
    for key in _WHOLE:
        if key in cfg:
            cfg[key] = _whole(cfg, key, where)
    for key in _FLAGS:
        _flag(cfg, key, where)
    _check_shape(cfg, where)
    return cfg


def _same(a: Any, b: Any) -> bool:
    """Whether two values of a field agree (``1`` and ``true`` do not)."""
    try:
        return (type(a) is bool) == (type(b) is bool) and bool(a == b)
    except Exception:  # a value whose comparison fails
        return False


def _first(cfg: Mapping[str, Any], keys: tuple[str, ...], where: str) -> int | None:
    """The first of the synonym fields ``keys`` given; two that disagree are refused."""
    given = [(k, cfg[k]) for k in keys if cfg.get(k) is not None]
    if len({v for _, v in given}) > 1:
        raise InputError(f"{where}: {' and '.join(f'{k} ({v})' for k, v in given)} disagree: give one.")
    return given[0][1] if given else None


def _check_shape(cfg: dict[str, Any], where: str) -> None:
    """Fields that must agree with each other, checked in the config's own terms."""
    layers, h, heads = cfg["num_hidden_layers"], cfg["hidden_size"], cfg["num_attention_heads"]
    kv_heads = cfg.get("num_key_value_heads") or heads
    mla = cfg.get("kv_lora_rank") is not None
    if mla:
        missing = [k for k in _MLA if cfg.get(k) is None]
        if missing:
            raise InputError(
                f"{where}: kv_lora_rank is given (multi-head latent attention, as in DeepSeek-V3) but "
                f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not: an MLA config needs all of "
                f"{', '.join(_MLA)}."
            )
    elif cfg.get("head_dim") is None and h % heads:
        raise InputError(
            f"{where}: hidden_size ({h}) is not a multiple of num_attention_heads ({heads}): correct one, or give "
            "head_dim."
        )
    if kv_heads > heads:
        raise InputError(f"{where}: num_key_value_heads ({kv_heads}) cannot exceed num_attention_heads ({heads}).")
    if heads % kv_heads:
        raise InputError(
            f"{where}: num_attention_heads ({heads}) must be a multiple of num_key_value_heads ({kv_heads}): each "
            "KV head serves a whole group of query heads."
        )
    experts = _first(cfg, _EXPERTS, where)
    k = _first(cfg, _PER_TOKEN, where)
    if (experts is None) != (k is None):
        raise InputError(
            f"{where}: a mixture-of-experts config needs both an expert count ({', '.join(_EXPERTS)}) and "
            f"{' or '.join(_PER_TOKEN)}; this one gives only {'the count' if k is None else 'the experts per token'}."
        )
    if experts is not None and k >= experts:
        raise InputError(
            f"{where}: num_experts_per_tok ({k}) must be fewer than the experts ({experts}): a model whose every "
            "token uses every expert is dense."
        )
    first = cfg.get("first_k_dense_replace")
    if first is not None and first > layers:
        raise InputError(f"{where}: first_k_dense_replace ({first}) cannot exceed num_hidden_layers ({layers}).")
    only = cfg.get("mlp_only_layers")
    if only is not None and (
        not isinstance(only, list)
        or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < layers for i in only)
    ):
        raise InputError(
            f"{where}: mlp_only_layers must be a list of layer indices from 0 to {layers - 1} (num_hidden_layers "
            f"- 1); got {_show(only)}."
        )
    types = cfg.get("layer_types")
    if types is not None and len(types) != layers:
        raise InputError(
            f"{where}: layer_types lists {len(types)} layers but num_hidden_layers is {layers}: give one entry a layer."
        )
    sliding_window_layers(cfg, where=where)
    layer_pattern(cfg, where=where)


def layer_pattern(cfg: Mapping[str, Any], *, where: str = "config.json") -> dict[str, Any]:
    """The layer types of a checked config besides the sliding window, as :class:`~llmcourse.catalog.Model` fields:
    chunked attention (Llama 4), linear attention (Gated DeltaNet, MiniMax's lightning attention), a sparse-attention
    indexer (DeepSeek-V3.2, GLM-5) and MLA's key width (``qk_nope_head_dim``); empty for a config with none.

    Read as Transformers reads them: ``layer_types`` lists the layers (``"chunked_attention"``,
    ``"linear_attention"``); otherwise ``full_attention_interval`` f (Qwen3-Next: layer ``i`` is full attention when
    ``i + 1`` is a multiple of f, the others Gated DeltaNet), MiniMax's ``attn_type_list`` (0: lightning attention),
    and Llama 4's ``attention_chunk_size`` (8,192 when not given) in its RoPE layers: ``no_rope_layers`` (1: RoPE)
    or, when empty, every layer but each ``no_rope_layer_interval``-th (4). A Gated DeltaNet layer needs all of
    ``linear_num_key_heads``, ``linear_num_value_heads``, ``linear_key_head_dim``, ``linear_value_head_dim`` and
    ``linear_conv_kernel_dim``: one missing is an :class:`~llmcourse.errors.InputError` that names it.

    Examples
    --------
    >>> cfg = {"num_hidden_layers": 48, "hidden_size": 2048, "num_attention_heads": 16, "head_dim": 256,
    ...        "num_key_value_heads": 2, "model_type": "qwen3_next", "full_attention_interval": 4,
    ...        "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128,
    ...        "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4}
    >>> layer_pattern(read_config(cfg))["linear_layers"]
    36
    """
    layers, types = cfg["num_hidden_layers"], cfg.get("layer_types")
    model_type = cfg.get("model_type") or ""
    out: dict[str, Any] = {}
    if cfg.get("kv_lora_rank") is not None and cfg.get("qk_nope_head_dim"):
        out["qk_nope_head_dim"] = cfg["qk_nope_head_dim"]
    given = [k for k in _INDEXER if cfg.get(k) is not None]
    if given:
        missing = [k for k in _INDEXER if cfg.get(k) is None]
        if missing or cfg.get("kv_lora_rank") is None:
            need = ", ".join(missing) if missing else "kv_lora_rank (the indexer selects tokens of an MLA cache)"
            raise InputError(f"{where}: {given[0]}: a sparse-attention indexer needs {need} too.")
        out |= dict(
            index_topk=cfg["index_topk"], index_heads=cfg["index_n_heads"], index_head_dim=cfg["index_head_dim"]
        )
    chunk = cfg.get("attention_chunk_size") or (8_192 if model_type.startswith("llama4") else None)
    if types is not None:
        chunked = sum(t == "chunked_attention" for t in types)
        linear = sum(t == "linear_attention" for t in types)
    else:
        rope = cfg.get("no_rope_layers")
        if chunk is None:
            chunked = 0
        elif isinstance(rope, list) and rope:
            if len(rope) != layers or any(type(v) is not int or v not in (0, 1) for v in rope):
                raise InputError(f"{where}: no_rope_layers must list 0 or 1 for each of the {layers} layers.")
            chunked = sum(rope)
        else:
            chunked = layers - layers // (cfg.get("no_rope_layer_interval") or 4)
        interval, kinds = cfg.get("full_attention_interval"), cfg.get("attn_type_list")
        linear = (layers - layers // interval) if interval else (kinds.count(0) if kinds else 0)
    n_win = sliding_window_layers(cfg, where=where)[1] or 0
    if n_win + chunked + linear > layers:
        raise InputError(
            f"{where}: sliding_window ({n_win} layers), attention_chunk_size ({chunked} layers) and linear attention "
            f"({linear} layers) together cover more than num_hidden_layers ({layers}): each layer has one type."
        )
    if chunked:
        if chunk is None:
            raise InputError(
                f"{where}: layer_types lists {chunked} 'chunked_attention' layers: give attention_chunk_size."
            )
        out |= dict(attention_chunk=chunk, chunked_layers=chunked)
    if linear:
        out |= _linear_shape(cfg, linear, where)
    return out


def _linear_shape(cfg: Mapping[str, Any], linear: int, where: str) -> dict[str, Any]:
    """The Model fields of ``linear`` linear-attention layers: Gated DeltaNet's, or lightning attention's (MiniMax:
    the attention heads' shape, a key-by-value state per head, no convolution)."""
    if cfg.get("attn_type_list") is not None and cfg.get("layer_types") is None:
        d = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
        heads = cfg["num_attention_heads"]
        shape = dict(linear_key_heads=heads, linear_value_heads=heads, linear_key_dim=d, linear_value_dim=d,
                     linear_conv=0)  # fmt: skip
    else:
        missing = [k for k in _GDN if cfg.get(k) is None]
        if missing:
            raise InputError(
                f"{where}: {missing[0]}: this config has {linear} linear-attention (Gated DeltaNet) layers, whose "
                f"state needs {', '.join(_GDN)}; {' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} "
                "missing."
            )
        shape = dict(linear_key_heads=cfg["linear_num_key_heads"], linear_value_heads=cfg["linear_num_value_heads"],
                     linear_key_dim=cfg["linear_key_head_dim"], linear_value_dim=cfg["linear_value_head_dim"],
                     linear_conv=cfg["linear_conv_kernel_dim"] - 1)  # fmt: skip
    dtype = cfg.get("mamba_ssm_dtype")
    if dtype is not None and (not isinstance(dtype, str) or dtype not in _STATE_DTYPES):
        raise InputError(f"{where}: mamba_ssm_dtype must be one of {', '.join(_STATE_DTYPES)}; got {_show(dtype)}.")
    return shape | dict(linear_layers=linear, linear_state_bytes=_STATE_DTYPES.get(dtype))


def sliding_window_layers(cfg: Mapping[str, Any], *, where: str = "config.json") -> tuple[int | None, int | None]:
    """``(sliding_window, how many layers use it)`` of a checked config, as Transformers reads it; ``(None, None)``
    when no layer has a window.

    ``layer_types`` lists the layers when present; otherwise ``sliding_window_pattern`` p (Gemma 3, Cohere 2:
    layer ``i`` is global when ``i + 1`` is a multiple of p; Gemma 2 alternates, p = 2, and Gemma 3 defaults
    to 6), then Qwen2's ``max_window_layers`` (layers from that index on use the window, and only with
    ``use_sliding_window`` true); else the window applies to every layer.

    Examples
    --------
    >>> cfg = {"num_hidden_layers": 62, "hidden_size": 5376, "num_attention_heads": 32, "head_dim": 128,
    ...        "num_key_value_heads": 16, "sliding_window": 1024, "sliding_window_pattern": 6}
    >>> sliding_window_layers(read_config(cfg))
    (1024, 52)
    """
    layers = cfg["num_hidden_layers"]
    model_type = cfg.get("model_type") or ""
    use = _flag(cfg, "use_sliding_window", where)
    if use is None:
        use = not model_type.startswith("qwen")  # Qwen's configs switch the window on; the others set it or not
    window = cfg.get("sliding_window") if use else None
    types = cfg.get("layer_types")
    if types is not None:
        n = sum(t == "sliding_attention" for t in types)
        if n and window is None:
            raise InputError(
                f"{where}: layer_types lists {n} 'sliding_attention' layers but the config has no sliding_window"
                + (" (use_sliding_window is false)" if cfg.get("use_sliding_window") is False else "")
                + ": give the window's length in tokens."
            )
    elif window is None:
        n = 0
    elif cfg.get("sliding_window_pattern") is not None or model_type in _DEFAULT_PATTERN:
        p = cfg.get("sliding_window_pattern") or _DEFAULT_PATTERN[model_type]
        n = layers - layers // p
    elif cfg.get("max_window_layers") is not None:
        n = max(0, layers - cfg["max_window_layers"])
    else:
        n = layers
    return (window, n) if n else (None, None)


def dense_layer_count(cfg: Mapping[str, Any]) -> int | None:
    """How many layers of a checked mixture-of-experts config have a dense MLP instead of experts; ``None`` for a
    dense model, or for one whose every layer has experts and no ``first_k_dense_replace`` says so.

    DeepSeek's ``first_k_dense_replace`` and ``moe_layer_freq``, Qwen-MoE's ``decoder_sparse_step`` and
    ``mlp_only_layers``, read as Transformers reads them.

    Examples
    --------
    >>> cfg = {"num_hidden_layers": 24, "hidden_size": 2048, "num_attention_heads": 16, "intermediate_size": 5632,
    ...        "num_experts": 60, "num_experts_per_tok": 4, "mlp_only_layers": [0, 1], "decoder_sparse_step": 2}
    >>> dense_layer_count(read_config(cfg))
    13
    """
    if _first(cfg, _EXPERTS, "config.json") is None:
        return None
    keys = ("first_k_dense_replace", "moe_layer_freq", "decoder_sparse_step", "interleave_moe_layer_step",
            "mlp_only_layers")  # fmt: skip
    if all(cfg.get(k) is None for k in keys):
        return None
    first = cfg.get("first_k_dense_replace") or 0
    freq = cfg.get("moe_layer_freq") or 1
    step = cfg.get("decoder_sparse_step") or cfg.get("interleave_moe_layer_step") or 1  # Llama 4's is the same
    only = set(cfg.get("mlp_only_layers") or ())
    layers = cfg["num_hidden_layers"]
    moe = sum(i >= first and i % freq == 0 and (i + 1) % step == 0 and i not in only for i in range(layers))
    return layers - moe if layers > moe or cfg.get("first_k_dense_replace") is not None else None


def _attention(cfg: Mapping[str, Any]) -> int:
    h = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    if cfg.get("kv_lora_rank"):
        q_lora = cfg.get("q_lora_rank")
        nope, rope, v = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
        kv_lora = cfg["kv_lora_rank"]
        q = h * heads * (nope + rope) if not q_lora else h * q_lora + q_lora + q_lora * heads * (nope + rope)
        kv = h * (kv_lora + rope) + kv_lora + kv_lora * heads * (nope + v)
        return q + kv + heads * v * h
    d = cfg.get("head_dim") or h // heads
    kv_heads = cfg.get("num_key_value_heads") or heads
    qkv_bias = cfg.get("attention_bias")
    if qkv_bias is None:
        qkv_bias = cfg.get("model_type") == "qwen2"
    n = h * heads * d + 2 * h * kv_heads * d + heads * d * h
    if cfg.get("attn_output_gate"):  # Qwen3-Next, Qwen3.5: q_proj gives a gate per query value too
        n += h * heads * d
    if qkv_bias:
        n += heads * d + 2 * kv_heads * d + (h if cfg.get("model_type") == "gpt_oss" else 0)
    if (cfg.get("model_type") or "").startswith("qwen3"):
        n += 2 * d  # q_norm and k_norm
    return n


def _attention_by_type(cfg: Mapping[str, Any]) -> int:
    """Attention parameters of all layers, each by its type: softmax attention (``_attention``), a linear-attention
    layer (Gated DeltaNet's projections, convolution, gates and norm; lightning attention's q, k, v, output gate and
    o), and a sparse-attention indexer's query and key projections, key norm and head weights in every layer."""
    pattern = layer_pattern(cfg)
    layers, h = cfg["num_hidden_layers"], cfg["hidden_size"]
    linear = pattern.get("linear_layers", 0)
    n = (layers - linear) * _attention(cfg)
    if linear and pattern["linear_conv"] == 0:  # lightning attention: softmax attention's projections and a gate
        heads, d = pattern["linear_value_heads"], pattern["linear_value_dim"]
        n += linear * (4 * h * heads * d + heads * d)
    elif linear:
        hk, hv = pattern["linear_key_heads"], pattern["linear_value_heads"]
        dk, dv, kernel = pattern["linear_key_dim"], pattern["linear_value_dim"], pattern["linear_conv"] + 1
        conv = 2 * hk * dk + hv * dv
        n += linear * (h * (conv + hv * dv) + h * 2 * hv + conv * kernel + 2 * hv + dv + hv * dv * h)
    if "index_topk" in pattern:
        hi, di = pattern["index_heads"], pattern["index_head_dim"]
        q_in = cfg.get("q_lora_rank") or h
        n += layers * (q_in * hi * di + h * di + 2 * di + h * hi)
    return n


def count_params(cfg: str | os.PathLike[str] | Mapping[str, Any]) -> tuple[float, float]:
    """Total and active (per-token) parameter counts from a config (checked first by :func:`read_config`).

    Examples
    --------
    >>> cfg = {"num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
    ...        "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256}
    >>> total, active = count_params(cfg)
    >>> round(total / 1e9, 3), total == active
    (8.03, True)
    """
    cfg = read_config(cfg)
    h = cfg["hidden_size"]
    layers = cfg["num_hidden_layers"]
    vocab = cfg.get("vocab_size") or 0
    experts = _first(cfg, _EXPERTS, "config.json")
    k = _first(cfg, _PER_TOKEN, "config.json") or 0
    llama4 = (cfg.get("model_type") or "").startswith("llama4")
    dense_layers = (dense_layer_count(cfg) or 0) if experts else layers
    moe_layers = layers - dense_layers
    inter = cfg.get("intermediate_size") or 0
    moe_inter = cfg.get("moe_intermediate_size") or inter
    if llama4:  # experts of intermediate_size; dense layers (if any) of intermediate_size_mlp
        inter = cfg.get("intermediate_size_mlp") or inter
    shared = (cfg.get("n_shared_experts") or (1 if llama4 else 0)) * 3 * h * moe_inter  # Llama 4: one shared
    shared += 3 * h * (cfg.get("shared_intermediate_size") or 0)
    if cfg.get("shared_expert_intermediate_size"):  # Qwen-MoE: one shared expert of its own size, and its gate
        shared += 3 * h * cfg["shared_expert_intermediate_size"] + h

    embed = vocab * h * (1 if cfg.get("tie_word_embeddings") else 2)
    expert = 3 * h * moe_inter
    total = embed + h + _attention_by_type(cfg) + layers * 2 * h + dense_layers * 3 * h * inter
    active = total
    if experts:
        router = h * experts
        total += moe_layers * (experts * expert + shared + router)
        active += moe_layers * (k * expert + shared + router)
    return float(total), float(active)


def model_shape(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a :class:`~llmcourse.catalog.Model` that a checked config (:func:`read_config`) gives: its
    shapes, experts, MLA, sliding window and other layer types (:func:`layer_pattern`) and the router's groups.

    Examples
    --------
    >>> cfg = read_config({"num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
    ...                    "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256})
    >>> shape = model_shape(cfg)
    >>> shape["layers"], shape["kv_heads"], shape["experts"]
    (32, 8, None)
    """

    def get(*keys: str) -> Any:
        for k in keys:
            if cfg.get(k) is not None:
                return cfg[k]
        return None

    experts = get("num_local_experts", "num_experts", "n_routed_experts")
    mla = get("kv_lora_rank") is not None
    moe_inter = get("moe_intermediate_size") or (get("intermediate_size") if experts else None)
    shared = get("n_shared_experts")
    shared_size = get("shared_expert_intermediate_size", "shared_intermediate_size")
    if experts and shared is None and shared_size is not None and moe_inter and shared_size % moe_inter == 0:
        shared = shared_size // moe_inter  # Qwen-MoE's shared expert, in routed experts' sizes
    window, window_layers = sliding_window_layers(cfg)
    shape: dict[str, Any] = dict(
        layers=cfg["num_hidden_layers"],
        hidden=cfg["hidden_size"],
        heads=cfg["num_attention_heads"],
        kv_heads=get("num_key_value_heads"),
        head_dim=get("head_dim") or (get("v_head_dim") if mla else None),
        intermediate=get("intermediate_size"),
        moe_intermediate=moe_inter,
        vocab=get("vocab_size"),
        experts=experts,
        experts_per_token=get("num_experts_per_tok", "experts_per_token"),
        shared_experts=shared if experts else None,
        dense_layers=dense_layer_count(cfg),
        kv_lora_rank=get("kv_lora_rank"),
        qk_rope_head_dim=get("qk_rope_head_dim") if mla else None,
        max_position=get("max_position_embeddings"),
        sliding_window=window,
        sliding_window_layers=window_layers,
        **layer_pattern(cfg),
        expert_groups=get("n_group") if experts else None,  # DeepSeek-V3's group-limited router
        topk_groups=get("topk_group") if experts else None,
    )
    return shape
