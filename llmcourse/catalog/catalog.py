"""Model and GPU catalogs, read from the data files in ``llmcourse/data``.

Every row of ``models.csv`` and ``gpus.csv`` cites its source. Look-ups are by name
(case and punctuation are ignored, aliases are accepted) and an unknown name gets a
"did you mean" answer.

Defined in the chapter *Weights* (``book/02_weights.md``).

Examples
--------
>>> from llmcourse import models, gpus
>>> models["Qwen2.5-72B"].kv_heads
8
>>> gpus["H100 SXM"].memory
<Quantity(80, 'gigabyte')>
>>> models["qwen 2.5 72b"].name
'Qwen2.5-72B'
"""

from __future__ import annotations

import csv
import difflib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Generic, TypeVar

import pint

from llmcourse.catalog.layers import LAYER_SHAPES, check_layer_types
from llmcourse.catalog.precision import (
    GROUPS,
    PRECISIONS,
    bytes_per_value,
    checkpoint_text,
    number_text,
    parse_precisions,
)
from llmcourse.catalog.prices import Cost, HardwarePrice
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.units import Q_, as_quantity, parsed_unit, plain_number, quantity  # noqa: F401 (Q_: the doctests)

__all__ = [
    "GPU",
    "PRECISIONS",
    "Catalog",
    "Cost",
    "HardwarePrice",
    "Link",
    "Model",
    "bytes_per_value",
    "costs",
    "gpus",
    "hardware_prices",
    "links",
    "models",
]


def _positive(value: Any, name: str, *, allow_zero: bool = False) -> float:
    return plain_number(value, name, allow_zero=allow_zero)


def _count(value: Any, name: str, *, allow_zero: bool = False) -> int:
    return int(plain_number(value, name, integer=True, allow_zero=allow_zero))


@dataclass(frozen=True)
class Model:
    """A transformer's shape: what the memory and speed estimates need.

    Counts are plain numbers. ``params`` is the total parameter count; ``active_params``
    the parameters one token uses (equal to ``params`` for a dense model). ``head_dim``
    defaults to ``hidden // heads`` and ``kv_heads`` to ``heads`` (no GQA), as in the
    Hugging Face configs.

    ``weight_dtype`` is the published checkpoint's precision (a name of
    :data:`~llmcourse.catalog.precision.PRECISION_TABLE`), of its routed experts where ``weight_dtypes`` gives other
    groups another (gpt-oss: ``weight_dtype="mxfp4"``, ``weight_dtypes={"attention": "bf16", ...}``); a per-group text
    such as ``weight_dtype="experts=mxfp4 other=bf16"`` gives both. ``tied_embeddings``: the output head is the
    embedding matrix (counted once).

    Examples
    --------
    >>> m = Model("toy", params=1e9, layers=16, hidden=2048, heads=16, kv_heads=4)
    >>> m.head_dim, m.attention, m.active_params
    (128, 'GQA', 1000000000.0)
    >>> Model("bad", params=-1, layers=16, hidden=2048, heads=16)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: Model 'bad': params must be greater than zero; got -1.
    """

    name: str
    params: float
    layers: int
    hidden: int
    heads: int
    kv_heads: int | None = None
    head_dim: int | None = None
    active_params: float | None = None
    intermediate: int | None = None
    moe_intermediate: int | None = None
    vocab: int | None = None
    experts: int | None = None
    experts_per_token: int | None = None
    shared_experts: int | None = None
    dense_layers: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    max_position: int | None = None
    sliding_window: int | None = None
    sliding_window_layers: int | None = None
    qk_nope_head_dim: int | None = None
    attention_chunk: int | None = None
    chunked_layers: int | None = None
    linear_layers: int | None = None
    linear_key_heads: int | None = None
    linear_value_heads: int | None = None
    linear_key_dim: int | None = None
    linear_value_dim: int | None = None
    linear_conv: int | None = None
    linear_state_bytes: float | None = None
    index_topk: int | None = None
    index_heads: int | None = None
    index_head_dim: int | None = None
    expert_groups: int | None = None
    topk_groups: int | None = None
    weight_dtype: str = "bf16"
    weight_dtypes: tuple[tuple[str, str], ...] = ()
    tied_embeddings: bool = False
    source: str = "user-defined"
    aliases: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        where = f"Model {self.name!r}"

        def fix(attr: str, value: Any, kind: type = int, allow_zero: bool = False) -> None:
            try:
                checked = _count(value, attr, allow_zero=allow_zero) if kind is int else _positive(value, attr)
            except InputError as exc:
                raise InputError(f"{where}: {exc}") from None
            object.__setattr__(self, attr, checked)

        fix("params", self.params, float)
        for attr in ("layers", "hidden", "heads"):
            fix(attr, getattr(self, attr))
        if self.kv_heads is None:
            object.__setattr__(self, "kv_heads", self.heads)
        if self.head_dim is None:
            if self.hidden % self.heads:
                raise InputError(
                    f"{where}: hidden ({self.hidden}) is not a multiple of heads ({self.heads}); give head_dim."
                )
            object.__setattr__(self, "head_dim", self.hidden // self.heads)
        if self.active_params is None:
            object.__setattr__(self, "active_params", self.params)
        for attr in ("kv_heads", "head_dim"):
            fix(attr, getattr(self, attr))
        fix("active_params", self.active_params, float)
        optional = (
            "intermediate",
            "moe_intermediate",
            "vocab",
            "experts",
            "experts_per_token",
            "kv_lora_rank",
            "qk_rope_head_dim",
            "max_position",
            "sliding_window",
            *LAYER_SHAPES,
        )
        for attr in optional:
            if getattr(self, attr) is not None:
                fix(attr, getattr(self, attr))
        for attr in ("shared_experts", "dense_layers", "sliding_window_layers", "chunked_layers", "linear_layers",
                     "linear_conv"):  # fmt: skip
            if getattr(self, attr) is not None:
                fix(attr, getattr(self, attr), allow_zero=True)
        if self.linear_state_bytes is not None:
            fix("linear_state_bytes", self.linear_state_bytes, float)
        check_layer_types(self, where)
        if self.kv_heads > self.heads:
            raise InputError(f"{where}: kv_heads ({self.kv_heads}) cannot exceed heads ({self.heads}).")
        if self.heads % self.kv_heads:
            raise InputError(f"{where}: heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads}).")
        if self.active_params > self.params:
            raise InputError(f"{where}: active_params ({self.active_params:.4g}) exceeds params ({self.params:.4g}).")
        if (self.experts is None) != (self.experts_per_token is None):
            raise InputError(f"{where}: give both experts and experts_per_token for a mixture-of-experts model.")
        if self.experts is not None and self.experts_per_token >= self.experts:
            raise InputError(
                f"{where}: experts_per_token ({self.experts_per_token}) must be fewer than experts ({self.experts}): "
                "a model whose every token uses every expert is dense; leave experts and experts_per_token out."
            )
        if self.sliding_window_layers is not None and self.sliding_window_layers > self.layers:
            raise InputError(
                f"{where}: sliding_window_layers ({self.sliding_window_layers}) cannot exceed layers ({self.layers})."
            )
        if self.dense_layers is not None and self.dense_layers > self.layers:
            raise InputError(f"{where}: dense_layers ({self.dense_layers}) cannot exceed layers ({self.layers}).")
        self._check_groups(where)
        if (self.kv_lora_rank is None) != (self.qk_rope_head_dim is None):
            raise InputError(f"{where}: an MLA model needs both kv_lora_rank and qk_rope_head_dim.")
        self._check_precisions(where)

    def _check_precisions(self, where: str) -> None:
        """``weight_dtype`` and ``weight_dtypes`` checked and in their one spelling: the table's names, the groups
        that differ from ``weight_dtype`` in :data:`~llmcourse.catalog.precision.GROUPS` order (a per-group text
        given as ``weight_dtype`` is split into both)."""
        try:
            if not isinstance(self.weight_dtype, str):
                raise InputError(f"weight_dtype must be a precision name such as 'bf16', not {self.weight_dtype!r}.")
            given = parse_precisions(self.weight_dtype, "weight_dtype")
            extra = self.weight_dtypes
            if isinstance(extra, Mapping):
                extra = tuple(extra.items())
            if not isinstance(extra, tuple | list) or not all(
                isinstance(e, tuple | list) and len(e) == 2 for e in extra
            ):
                raise InputError(
                    f"weight_dtypes must map tensor groups to precisions, e.g. {{'experts': 'mxfp4'}}, not {extra!r}."
                )
            for group, name in parse_precisions(dict(extra), "weight_dtypes").items():
                if group in given:
                    raise InputError(f"weight_dtypes: tensor group {group!r} is also given in weight_dtype.")
                given[group] = name
            rest = given.get("other", "bf16")
            groups = {g: v if isinstance(v, str) else f"{v!r}" for g in GROUPS for v in [given.get(g, rest)]}
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None
        main = groups["experts"] if "experts" in given else rest
        object.__setattr__(self, "weight_dtype", main)
        object.__setattr__(self, "weight_dtypes", tuple((g, v) for g, v in groups.items() if v != main))
        object.__setattr__(self, "tied_embeddings", bool(self.tied_embeddings))

    @property
    def checkpoint(self) -> dict[str, str | float]:
        """The published checkpoint's precision of each tensor group (:data:`~llmcourse.catalog.precision.GROUPS`):
        ``weight_dtype``, except the groups ``weight_dtypes`` names. The estimates store the weights at it unless
        given ``weight_bytes``.

        Examples
        --------
        >>> from llmcourse import models
        >>> models["gpt-oss-120b"].checkpoint["experts"], models["gpt-oss-120b"].checkpoint["attention"]
        ('mxfp4', 'bf16')
        >>> models["gpt-oss-120b"].checkpoint_text, models["Llama-3.1-8B"].checkpoint_text
        ('experts=mxfp4 other=bf16', 'bf16')
        """
        own = {g: dict(self.weight_dtypes).get(g, self.weight_dtype) for g in GROUPS}
        return {g: float(v) if number_text(v) else v for g, v in own.items()}  # a number of bytes, kept as text

    @property
    def checkpoint_text(self) -> str:
        """:attr:`checkpoint` in one line (``"experts=mxfp4 other=bf16"``; one name when every group agrees)."""
        return checkpoint_text(self.checkpoint)

    def _check_groups(self, where: str) -> None:
        """The router's expert groups (DeepSeek-V3's ``n_group`` 8, ``topk_group`` 4): whole numbers, for a mixture of
        experts, the groups dividing the experts and the groups a token may use at most the groups."""
        g, t = self.expert_groups, self.topk_groups
        if g is None and t is None:
            return
        for attr, v in (("expert_groups", g), ("topk_groups", t)):
            if v is not None:
                try:
                    object.__setattr__(self, attr, _count(v, attr))
                except InputError as exc:
                    raise InputError(f"{where}: {exc}") from None
        g, t = self.expert_groups or 1, self.topk_groups or 1
        if self.experts is None:
            raise InputError(f"{where}: expert_groups and topk_groups route experts; a dense model leaves them out.")
        if self.experts % g:
            raise InputError(
                f"{where}: expert_groups (a config's n_group: {g}) must divide the experts ({self.experts})."
            )
        if t > g:
            raise InputError(
                f"{where}: topk_groups (a config's topk_group: {t}) cannot exceed expert_groups (n_group: {g})."
            )
        if t * self.experts // g < self.experts_per_token:
            raise InputError(
                f"{where}: topk_groups (a config's topk_group: {t}) of expert_groups (n_group: {g}) hold "
                f"{t * self.experts // g} experts, fewer than experts_per_token ({self.experts_per_token}): raise "
                "topk_groups."
            )

    @property
    def attention(self) -> str:
        """``"MLA"``, ``"MHA"`` (one KV head per query head), ``"MQA"`` (one KV head) or ``"GQA"``."""
        if self.kv_lora_rank is not None:
            return "MLA"
        if self.kv_heads == self.heads:
            return "MHA"
        return "MQA" if self.kv_heads == 1 else "GQA"

    @property
    def layer_types(self) -> dict[str, int]:
        """How many layers of each type: ``"full"`` attention (every past token; a sparse model's MLA layers, which
        keep every token and attend to ``index_topk`` of them, are ``"sparse"``), ``"sliding"`` (the last
        ``sliding_window`` tokens), ``"chunked"`` (the current ``attention_chunk``) and ``"linear"`` (a fixed state).

        Examples
        --------
        >>> from llmcourse import models
        >>> models["gpt-oss-120b"].layer_types
        {'full': 18, 'sliding': 18, 'chunked': 0, 'linear': 0, 'sparse': 0}
        """
        win = (
            (self.sliding_window_layers if self.sliding_window_layers is not None else self.layers)
            if (self.sliding_window)
            else 0
        )
        chunked, linear = self.chunked_layers or 0, self.linear_layers or 0
        rest = self.layers - win - chunked - linear
        sparse = rest if self.index_topk is not None else 0
        return {"full": rest - sparse, "sliding": win, "chunked": chunked, "linear": linear, "sparse": sparse}

    @property
    def qk_head_dim(self) -> int:
        """The width of one head's query-key dot product: ``head_dim``, or MLA's ``qk_nope_head_dim`` (the
        ``head_dim`` when not given) plus ``qk_rope_head_dim`` (DeepSeek-V3: 128 + 64 = 192)."""
        if self.kv_lora_rank is None:
            return self.head_dim
        return (self.qk_nope_head_dim or self.head_dim) + self.qk_rope_head_dim

    @property
    def is_moe(self) -> bool:
        """Whether tokens are routed to a subset of experts."""
        return self.experts is not None

    @property
    def expert_params(self) -> float:
        """Parameters in routed experts (zero for a dense model); shared weights are the rest.

        Derived from ``params`` and ``active_params``: with E experts and k per token,
        ``params - active = expert_params x (1 - k/E)``.
        """
        if not self.is_moe:
            return 0.0
        return (self.params - self.active_params) / (1 - self.experts_per_token / self.experts)

    def with_(self, **changes: Any) -> Model:
        """A copy with some fields changed (validated again).

        Examples
        --------
        >>> from llmcourse import models
        >>> models["Llama-3.1-8B"].with_(kv_heads=32).attention
        'MHA'
        >>> models["Llama-3.1-8B"].with_(params=7e9).active_params
        7000000000.0
        """
        if "params" in changes and "active_params" not in changes and not self.is_moe:
            changes["active_params"] = None  # a dense model uses all its parameters: re-derive
        return replace(self, **changes)

    @classmethod
    def from_hf_config(
        cls,
        config: str | Path | Mapping[str, Any],
        *,
        name: str | None = None,
        params: float | None = None,
        active_params: float | None = None,
    ) -> Model:
        """Build a model from a Hugging Face ``config.json`` (a path or the parsed dict).

        Reads ``head_dim`` when present (else ``hidden_size / num_attention_heads``; an MLA model's is
        ``v_head_dim``), ``num_key_value_heads`` (GQA; absent means one KV head per query head), the MoE
        fields (``num_local_experts``/``num_experts``/``n_routed_experts``, ``num_experts_per_tok``,
        ``moe_intermediate_size``, the router's groups (``n_group``, ``topk_group``), ``n_shared_experts`` or ``shared_expert_intermediate_size``, and the dense
        layers: ``first_k_dense_replace``, ``moe_layer_freq``, ``decoder_sparse_step``, ``mlp_only_layers``),
        the MLA fields (``kv_lora_rank``, ``qk_rope_head_dim``, ``qk_nope_head_dim``, ``v_head_dim``) and the
        sliding window (``sliding_window`` and the layers it applies to: ``layer_types``,
        ``sliding_window_pattern``, ``max_window_layers``, ``use_sliding_window``) and the other layer types
        (:func:`llmcourse.catalog.params.layer_pattern`: Llama 4's chunked attention, Qwen3-Next / Qwen3.5 Gated
        DeltaNet and MiniMax lightning linear attention, DeepSeek-V3.2 / GLM-5's sparse-attention indexer). A multimodal config's
        ``text_config`` is read (the text model only). The checkpoint's precision per tensor group comes from
        ``quantization_config`` (``quant_method`` fp8 with its ``weight_block_size``, mxfp4, compressed-tensors, awq,
        gptq, modelopt; the layers it leaves out: ``modules_to_not_convert``, ``ignored_layers``, ``ignore``) and
        ``torch_dtype`` (:func:`llmcourse.catalog.quantization.checkpoint_precisions`); ``tie_word_embeddings``
        counts the output head once. The parameter count is computed from the shapes
        (:func:`llmcourse.catalog.params.count_params`) unless ``params`` is given.

        Every field is checked (:func:`llmcourse.catalog.params.read_config`): a number given as text, a
        flag where a number goes, a zero or an implausibly large count, a boolean spelled ``"false"``,
        head counts that do not divide, MLA fields missing, a file that is not a config.json: each raises
        :class:`~llmcourse.errors.InputError` naming the field. A config with layers the package cannot
        model yet (state-space or recurrent layers, a layer type it does not know) is refused the same way,
        never read as all full attention.

        Examples
        --------
        >>> cfg = {"num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
        ...        "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256}
        >>> m = Model.from_hf_config(cfg, name="Llama-3.1-8B")
        >>> m.head_dim, m.kv_heads, round(m.params / 1e9, 3)
        (128, 8, 8.03)
        >>> Model.from_hf_config(cfg | {"num_attention_heads": 0})
        Traceback (most recent call last):
        ...
        llmcourse.errors.InputError: config.json: num_attention_heads must be at least 1; got 0.
        """
        from llmcourse.catalog.params import count_params, model_shape, read_config
        from llmcourse.catalog.quantization import checkpoint_precisions

        if name is not None and not isinstance(name, str):
            raise InputError(f"from_hf_config: name must be text such as 'my-model', not {name!r}.")
        cfg = read_config(config)
        shape = model_shape(cfg)
        experts = shape["experts"]
        shape["weight_dtype"] = checkpoint_precisions(cfg)
        shape["tied_embeddings"] = bool(cfg.get("tie_word_embeddings"))
        total, active = count_params(cfg)
        model_name = name or cfg.get("_name_or_path") or cfg.get("model_type") or "custom"
        if not isinstance(model_name, str):
            raise InputError(f"config.json: _name_or_path must be text, not {model_name!r}; or give name=.")
        return cls(
            name=model_name,
            params=params if params is not None else total,
            active_params=active_params if active_params is not None else (active if experts else None),
            source="config.json",
            **shape,
        )


@dataclass(frozen=True)
class GPU:
    """An accelerator's datasheet figures (dense, no sparsity) and an hourly price.

    Examples
    --------
    >>> g = GPU("mine", memory=Q_(24, "GB"), bandwidth=Q_(1, "TB/s"), flops=Q_(165, "TFLOP/s"))
    >>> g.memory.to("GiB").m  # doctest: +ELLIPSIS
    22.35...
    >>> g.link is None, g.with_(link="PCIe 5 x16").link  # no link named: a replica of it is one GPU
    (True, 'PCIe 5 x16')
    >>> GPU("bad", memory=24, bandwidth=Q_(1, "TB/s"), flops=Q_(165, "TFLOP/s"))
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: GPU 'bad': memory needs a unit: write Q_(24, 'GB') (or any unit of [information], such as GB or GiB), not the bare number 24.
    """

    name: str
    memory: pint.Quantity
    bandwidth: pint.Quantity
    flops: pint.Quantity
    fp8_flops: pint.Quantity | None = None
    fp4_flops: pint.Quantity | None = None
    power: pint.Quantity | None = None
    price_per_hour: pint.Quantity | None = None
    price_source: str = ""
    source: str = "user-defined"
    aliases: tuple[str, ...] = field(default=(), compare=False, repr=False)
    #: The link its GPUs talk over (a name in ``links``, or a :class:`Link`); None (a hand-made GPU that names
    #: none): a replica of it is one GPU, and a tensor-parallel one is refused, naming ``link``.
    link: str | Link | None = None
    #: A unified-memory machine (Apple M-series): the share of the system's memory its GPU may use (macOS's default
    #: wired limit), in (0, 1]. Given, ``memory`` is the system's memory and becomes what the GPU may use,
    #: ``unified_memory`` keeping the system's; None (a GPU with its own memory): ``memory`` is all the GPU's.
    memory_share: float | None = None
    unified_memory: pint.Quantity | None = None

    def __post_init__(self) -> None:
        units = {
            "memory": "GB",
            "bandwidth": "TB/s",
            "flops": "TFLOP/s",
            "fp8_flops": "TFLOP/s",
            "fp4_flops": "TFLOP/s",
            "power": "W",
            "price_per_hour": "USD/hour",
        }
        for attr, unit in units.items():
            value = getattr(self, attr)
            if value is None and attr not in ("memory", "bandwidth", "flops"):
                continue
            try:
                q = as_quantity(value, unit, attr)
                _positive(q.magnitude, attr)
            except InputError as exc:
                raise InputError(f"GPU {self.name!r}: {exc}") from None
            object.__setattr__(self, attr, q)
        self._share_memory()

    def _share_memory(self) -> None:
        """``memory`` as the GPU's share of a unified memory (:attr:`memory_share`), checked."""
        share, total = self.memory_share, self.unified_memory
        if share is None:
            if total is not None:
                raise InputError(f"GPU {self.name!r}: unified_memory needs memory_share, the share the GPU may use.")
            return
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
            raise InputError(
                f"GPU {self.name!r}: memory_share (the share of a unified memory the GPU may use) must be a number "
                f"in (0, 1], such as 0.75; got {share!r}."
            )
        if total is None:  # memory given as the system's: the GPU's is its share
            object.__setattr__(self, "unified_memory", self.memory)
            object.__setattr__(self, "memory", self.memory * share)
            return
        try:
            total = as_quantity(total, "GB", "unified_memory")
            _positive(total.magnitude, "unified_memory")
        except InputError as exc:
            raise InputError(f"GPU {self.name!r}: {exc}") from None
        object.__setattr__(self, "unified_memory", total)
        if abs((self.memory - total * share).to("GB").m) > 1e-9 * total.to("GB").m:
            raise InputError(
                f"GPU {self.name!r}: memory ({self.memory:~P}) is not memory_share ({share:g}) x unified_memory "
                f"({total:~P}); give the system's memory as memory and leave unified_memory out."
            )

    def peak_flops(self, precision: str = "bf16") -> pint.Quantity:
        """Peak dense FLOP/s at a compute precision (``"bf16"``, ``"fp8"`` or ``"fp4"``).

        Examples
        --------
        >>> from llmcourse import gpus
        >>> gpus["H100 SXM"].peak_flops("fp8")
        <Quantity(1979, 'teraFLOP / second')>
        """
        if not isinstance(precision, str):
            raise InputError(f"compute precision must be a name, 'bf16', 'fp8' or 'fp4'; got {precision!r}.")
        p = precision.lower()
        value = {"bf16": self.flops, "fp16": self.flops, "fp8": self.fp8_flops, "fp4": self.fp4_flops}.get(p, "?")
        if isinstance(value, str):  # "?": not a precision (a quantity is never compared with text: pint's slow path)
            raise InputError(f"compute precision {precision!r} unknown: use 'bf16', 'fp8' or 'fp4'.")
        if value is None:
            raise InputError(f"{self.name} has no {p.upper()} figure in the catalog; use 'bf16'.")
        return value

    def with_(self, **changes: Any) -> GPU:
        """A copy with some fields changed, e.g. ``gpu.with_(price_per_hour=Q_(3, "USD/hour"))``; on a unified-memory
        machine ``memory`` is the system's and ``memory_share`` the GPU's share of it, as when made.

        Examples
        --------
        >>> from llmcourse import gpus
        >>> m = gpus["M3 Ultra"]
        >>> m.unified_memory, m.memory, m.with_(memory_share=1).memory
        (<Quantity(256, 'gigabyte')>, <Quantity(192.0, 'gigabyte')>, <Quantity(256, 'gigabyte')>)
        """
        if self.memory_share is not None and ({"memory", "memory_share"} & set(changes)):
            changes.setdefault("memory", self.unified_memory)
            changes["unified_memory"] = None  # re-derived from the system's memory and the share
        return replace(self, **changes)


@dataclass(frozen=True)
class Link:
    """The link a collective runs on: its bandwidth per GPU and direction, and the two latency
    terms of the alpha-beta model (a fixed cost per collective and a cost per ring step).

    ``domain`` is the most GPUs one such link joins (an NVLink board: 8; an NVL72 rack: 72);
    ``kind`` is ``"scale-up"`` (inside a node or rack) or ``"scale-out"`` (between nodes);
    ``scale_out`` names the link a group larger than ``domain`` falls back to between nodes.
    ``peer_kernels`` says whether each GPU can read and write its peers' memory over the link at full speed, so
    that the engines' own all-reduce kernels run on it (vLLM's ``custom_all_reduce`` needs a fully connected NVLink
    or xGMI board beyond two GPUs; TensorRT-LLM's ONESHOT / TWOSHOT need NVLink peer access): NVLink and Infinity
    Fabric yes, PCIe and the scale-out links no (their all-reduce is NCCL's ring).
    ``mesh`` says whether the link is fully connected without a switch (AMD's Infinity Fabric boards, Gaudi 3's
    scale-up ports): each GPU has a link of its own to each of its ``domain - 1`` peers, ``bandwidth`` is their sum,
    and a group of N GPUs reaches its peers over N - 1 of them (formula ``mesh_link_bandwidth``).

    Examples
    --------
    >>> from llmcourse import links
    >>> nv = links["NVLink 4"]
    >>> nv.bandwidth, nv.latency, nv.domain
    (<Quantity(450, 'gigabyte / second')>, <Quantity(0.8, 'microsecond')>, 8)
    >>> Link("mine", bandwidth=Q_(50, "GB/s"), latency=Q_(2, "us"), base=Q_(5, "us"), domain=0)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: link 'mine': domain (the most GPUs the link joins) must be a whole number of at least 1; got 0.
    """

    name: str
    bandwidth: pint.Quantity
    latency: pint.Quantity
    base: pint.Quantity
    domain: int = 8
    kind: str = "scale-up"
    scale_out: str = "InfiniBand NDR"
    source: str = "user-defined"
    aliases: tuple[str, ...] = field(default=(), compare=False, repr=False)
    peer_kernels: bool = False
    mesh: bool = False

    def __post_init__(self) -> None:
        for flag in ("peer_kernels", "mesh"):
            if not isinstance(getattr(self, flag), bool):
                raise InputError(f"link {self.name!r}: {flag} must be True or False; got {getattr(self, flag)!r}.")
        for attr, unit in (("bandwidth", "GB/s"), ("latency", "us"), ("base", "us")):
            try:
                q = as_quantity(getattr(self, attr), unit, attr)
                _positive(q.magnitude, attr, allow_zero=attr != "bandwidth")
            except InputError as exc:
                raise InputError(f"link {self.name!r}: {exc}") from None
            object.__setattr__(self, attr, q)
        d = self.domain
        if isinstance(d, bool) or not isinstance(d, int) or d < 1:
            raise InputError(
                f"link {self.name!r}: domain (the most GPUs the link joins) must be a whole number of at least 1; "
                f"got {d!r}."
            )
        if self.kind not in ("scale-up", "scale-out"):
            raise InputError(f"link {self.name!r}: kind must be 'scale-up' or 'scale-out'; got {self.kind!r}.")


T = TypeVar("T", Model, GPU, Link, HardwarePrice, Cost)


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _model_key(name: str) -> str:
    """The key of a model's name as a checkpoint spells it: a Hugging Face organisation (``meta-llama/``), a leading
    ``Meta-`` and the tuning suffixes ``-Instruct``, ``-Chat``, ``-hf`` dropped (the same shape as the base model)."""
    key = _key(name.rsplit("/", 1)[-1]).removeprefix("meta")
    while key.endswith(_TUNED):
        key = next(key.removesuffix(s) for s in _TUNED if key.endswith(s))
    return key


_TUNED = ("instruct", "chat", "hf")


class Catalog(Mapping[str, T], Generic[T]):
    """A read-only mapping from name to entry, forgiving about case, spaces and dashes."""

    def __init__(self, kind: str, entries: list[T]) -> None:
        self.kind = kind
        self._entries = {e.name: e for e in entries}
        self._index: dict[str, str] = {}
        self._asked: dict[str, T] = {}  # the entry of each name asked, as asked (a look-up normalises it anew)
        for e in entries:
            for n in (e.name, *e.aliases):
                self._index[_key(n)] = e.name

    def __getitem__(self, name: str) -> T:
        if type(name) is str:
            got = self._asked.get(name)
            if got is not None:
                return got
        if isinstance(name, Model | GPU | Link | HardwarePrice | Cost):
            if any(isinstance(name, type(e)) for e in self._entries.values()):
                return name  # type: ignore[return-value]
            raise UnknownNameError(f"{self.kind} catalog: {name.name!r} is a {type(name).__name__}, not a {self.kind}.")
        if not isinstance(name, str):
            raise UnknownNameError(
                f"{self.kind} names are strings such as {next(iter(self._entries))!r}, not {name!r}."
            )
        hit = self._index.get(_key(name))
        if hit is None and self.kind == "model":  # a checkpoint's name: meta-llama/Llama-3.1-70B-Instruct
            hit = self._index.get(_model_key(name))
        if hit is None:
            close = difflib.get_close_matches(name, list(self._entries), n=3, cutoff=0.4)
            if not close:
                keys = difflib.get_close_matches(_key(name), list(self._index), n=3, cutoff=0.5)
                close = list(dict.fromkeys(self._index[k] for k in keys))
            hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise UnknownNameError(f"no {self.kind} named {name!r}.{hint} Known: {', '.join(self._entries)}.")
        entry = self._entries[hit]
        if type(name) is str and len(self._asked) < 1_024:  # the catalog is read-only: a name's entry stays
            self._asked[name] = entry
        return entry

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"<{self.kind} catalog: {', '.join(self._entries)}>"


def _read_csv(filename: str) -> list[dict[str, str]]:
    text = resources.files("llmcourse.data").joinpath(filename).read_text(encoding="utf-8")
    return list(csv.DictReader(text.splitlines()))


def _num(text: str) -> float | None:
    return float(text) if text.strip() else None


def _int(text: str) -> int | None:
    return int(float(text)) if text.strip() else None


def _q(value: float, unit: str) -> pint.Quantity:
    """``Q_(value, unit)`` for a data file's number, the unit string parsed once (pint parses it at every call)."""
    return quantity(value, parsed_unit(unit)[0])


def _load_models() -> list[Model]:
    out = []
    ints = (
        "layers",
        "hidden",
        "heads",
        "kv_heads",
        "head_dim",
        "intermediate",
        "moe_intermediate",
        "vocab",
        "experts",
        "experts_per_token",
        "shared_experts",
        "dense_layers",
        "kv_lora_rank",
        "qk_rope_head_dim",
        "max_position",
        "sliding_window",
        "sliding_window_layers",
    )
    layers = {row["name"]: row for row in _read_csv("model_layers.csv")}
    for row in _read_csv("models.csv"):
        row = {**row, "expert_groups": row.get("expert_groups") or "", "topk_groups": row.get("topk_groups") or ""}
        kwargs: dict[str, Any] = {k: _int(row[k]) for k in (*ints, "expert_groups", "topk_groups")}
        shape = layers.pop(row["name"], None)  # the layer types of the models whose layers differ
        if shape is not None:
            kwargs |= {k: _int(v) for k, v in shape.items() if k not in ("name", "source", "linear_state_bytes")}
            kwargs["linear_state_bytes"] = _num(shape["linear_state_bytes"])
        out.append(
            Model(
                name=row["name"],
                params=_num(row["params"]),
                active_params=_num(row["active_params"]),
                weight_dtype=row["weight_dtype"],
                source=row["source"],
                aliases=tuple(a for a in row["aliases"].split(";") if a),
                tied_embeddings=(row.get("tied_embeddings") or "").strip().lower() == "yes",
                **kwargs,
            )
        )
    if layers:  # a data-file slip, caught at import
        raise InputError(f"model_layers.csv names models that models.csv lacks: {', '.join(layers)}.")
    return out


def _load_gpus() -> list[GPU]:
    out = []
    for row in _read_csv("gpus.csv"):

        def q(col: str, unit: str, row: dict[str, str] = row) -> pint.Quantity | None:
            v = _num(row[col])
            return None if v is None else _q(int(v) if v == int(v) else v, unit)

        out.append(
            GPU(
                name=row["name"],
                memory=q("memory_GB", "GB"),
                bandwidth=q("bandwidth_TB_s", "TB/s"),
                flops=q("bf16_TFLOP_s", "TFLOP/s"),
                fp8_flops=q("fp8_TFLOP_s", "TFLOP/s"),
                fp4_flops=q("fp4_TFLOP_s", "TFLOP/s"),
                power=q("power_W", "W"),
                price_per_hour=q("price_USD_per_hour", "USD/hour"),
                price_source=row["price_source"],
                source=row["source"],
                aliases=tuple(a for a in row["aliases"].split(";") if a),
                link=row["link"] or None,  # none: a machine of one GPU
                memory_share=_num(row["gpu_memory_share"]),
            )
        )
    return out


def _load_links() -> list[Link]:
    def q(text: str, unit: str) -> pint.Quantity:
        v = float(text)
        return _q(int(v) if v == int(v) else v, unit)

    return [
        Link(
            name=row["name"],
            bandwidth=q(row["bandwidth_GB_s"], "GB/s"),
            latency=q(row["latency_us"], "us"),
            base=q(row["base_us"], "us"),
            domain=int(row["domain"]),
            kind=row["kind"],
            scale_out=row["scale_out"],
            source=row["source"],
            aliases=tuple(a for a in row["aliases"].split(";") if a),
            peer_kernels=row["peer_kernels"].strip().lower() == "yes",
            mesh=row["mesh"].strip().lower() == "yes",
        )
        for row in _read_csv("links.csv")
    ]


def _load_hardware_prices(gpu_catalog: Catalog[GPU]) -> list[HardwarePrice]:
    out = []
    for row in _read_csv("hardware_prices.csv"):
        g = gpu_catalog[row["gpu"]]  # a data-file slip (a GPU the catalog lacks) is caught at import
        out.append(
            HardwarePrice(
                name=g.name,
                gpu_price=_q(int(float(row["gpu_price_USD"])), "USD"),
                server_price=_q(int(float(row["server_price_USD_per_gpu"])), "USD"),
                source=row["source"],
                as_of=row["as_of"],
                aliases=g.aliases,
            )
        )
    return out


def _load_costs() -> list[Cost]:
    out = []
    for row in _read_csv("costs.csv"):
        v = float(row["value"])
        out.append(
            Cost(
                name=row["name"],
                kind=row["kind"],
                value=_q(v, row["unit"]) if row["unit"] else v,
                source=row["source"],
                as_of=row["as_of"],
                model=row["model"],
                default=row["default"].strip().lower() == "yes",
                input_value=_q(float(row["input_value"]), row["unit"]) if row["input_value"].strip() else None,
                aliases=tuple(a for a in row["aliases"].split(";") if a),
            )
        )
    return out


models: Catalog[Model] = Catalog("model", _load_models())
gpus: Catalog[GPU] = Catalog("GPU", _load_gpus())
links: Catalog[Link] = Catalog("link", _load_links())
hardware_prices: Catalog[HardwarePrice] = Catalog("hardware price", _load_hardware_prices(gpus))
costs: Catalog[Cost] = Catalog("cost", _load_costs())
_defaults = {k: [c.name for c in costs.values() if c.kind == k and c.default] for k in ("electricity", "pue")}
if any(len(v) != 1 for v in _defaults.values()):  # a data-file slip, caught at import
    raise InputError(f"costs.csv must mark one default row of each kind (electricity, pue); got {_defaults}.")
_unknown_links = sorted(
    ({g.link for g in gpus.values() if g.link} | {k.scale_out for k in links.values()}) - set(links)
)
if _unknown_links:  # a data-file slip, caught at import
    raise InputError(f"gpus.csv or links.csv names links that links.csv lacks: {', '.join(_unknown_links)}.")
