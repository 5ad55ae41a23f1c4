"""The layer types a :class:`~llmcourse.catalog.Model` may hold besides full attention (a sliding window, chunked
attention, linear-attention layers, a sparse-attention indexer): their fields, and the check that they fit together.
"""

from __future__ import annotations

from typing import Any

from llmcourse.errors import InputError

__all__ = ["INDEXER_FIELDS", "LAYER_SHAPES", "LINEAR_FIELDS", "check_layer_types"]

#: The fields of a model's layer types besides the sliding window (each a whole number when given).
LAYER_SHAPES = ("qk_nope_head_dim", "attention_chunk", "linear_key_heads", "linear_value_heads", "linear_key_dim",
                 "linear_value_dim", "index_topk", "index_heads", "index_head_dim")  # fmt: skip
LINEAR_FIELDS = ("linear_key_heads", "linear_value_heads", "linear_key_dim", "linear_value_dim", "linear_conv")
INDEXER_FIELDS = ("index_topk", "index_heads", "index_head_dim")


def check_layer_types(m: Any, where: str) -> None:
    """The layer-type fields of a model, checked together: each type's layers need its shape, and the types' layers
    cannot outnumber the model's."""
    counts = {"sliding_window_layers": m.sliding_window_layers if m.sliding_window else 0,
              "chunked_layers": m.chunked_layers or 0, "linear_layers": m.linear_layers or 0}  # fmt: skip
    if sum(counts.values()) > m.layers:
        given = " + ".join(f"{k} ({v})" for k, v in counts.items() if v)
        raise InputError(f"{where}: {given} cannot exceed layers ({m.layers}).")
    if bool(m.chunked_layers) != (m.attention_chunk is not None):
        raise InputError(f"{where}: chunked attention needs both attention_chunk (tokens) and chunked_layers.")
    if m.linear_layers:
        missing = [k for k in LINEAR_FIELDS if getattr(m, k) is None]
        if missing:
            raise InputError(f"{where}: linear_layers ({m.linear_layers}) needs {', '.join(missing)}.")
    if len({getattr(m, k) is None for k in INDEXER_FIELDS}) > 1:
        raise InputError(f"{where}: a sparse-attention indexer needs all of {', '.join(INDEXER_FIELDS)}.")
    if m.qk_nope_head_dim is not None and m.kv_lora_rank is None:
        raise InputError(f"{where}: qk_nope_head_dim is an MLA field: give kv_lora_rank and qk_rope_head_dim too.")
