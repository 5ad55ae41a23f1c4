"""The parallel layout of an aiconfigurator row, read from all its parallel columns (:func:`aic_layout`) and, for a
TensorRT-LLM run, from its name where the columns add up to more GPUs than it gives (:func:`named_layout`)."""

from __future__ import annotations

import re

from llmcourse.validation.cells import RowError

__all__ = [
    "GENERATOR_MIXED_CHUNK",
    "MIXED_CHUNK_NOTE",
    "NAMED_LAYOUT",
    "SQUARED_EXPORTS",
    "aic_layout",
    "generator_mixed_chunk",
    "named_layout",
    "unsquared",
]

#: The layout in an aiconfigurator TensorRT-LLM run's id (``..._tp8_ep8_945``, ``..._tp8_0_ep8_0_974``): its GPUs per
#: pipeline stage (TensorRT-LLM's tensor-parallel size, which its attention DP runs as that many ranks, with
#: moe_tp x moe_ep = tp). Where a row's columns add up to more GPUs than its name, the name is read
#: (:func:`named_layout`): the file's 2026-03-25 export writes its tp8_ep8 runs as tp 8 (attention DP 1, moe_tp 1,
#: moe_ep 8) or as tp 1, attention DP 8. The exports that square such runs' GPUs (:data:`SQUARED_EXPORTS`, every
#: engine's names counting the same way) are read by :func:`unsquared` first, so in the shipped file no row reaches
#: this rule; it stays for a TensorRT-LLM file of another export that writes them so.
NAMED_LAYOUT = re.compile(r"_tp(\d+)(?:_0)?_ep(\d+)(?:_0)?_")


def named_layout(tp: int, dp: int, gpus: int, name: str, note: str) -> tuple[int, int, str]:
    """(tensor_parallel, attention data_parallel, note) of a TensorRT-LLM row whose columns add up to more GPUs than
    its name (:data:`NAMED_LAYOUT`: ``name``, ``gpus`` GPUs): its attention data-parallel over the name's GPUs where
    ``gpus`` is a multiple of ``tp`` (a tp8_ep8 run written as tp 1, attention DP 64: attention DP 8); its
    tensor-parallel size the name's where the columns wrote ``tp_size`` as moe_tp x moe_ep (a tp8_ep8 run written as
    tp 64, moe_tp 8, moe_ep 8, attention DP 1: tensor-parallel 8, as the file's other export writes such runs); else
    the columns as they are.

    Examples
    --------
    >>> named_layout(1, 64, 8, "tp8_ep8", "")[:2], named_layout(64, 1, 8, "tp8_ep8", "")[:2]
    ((1, 8), (8, 1))
    >>> named_layout(4, 1, 2, "tp2_ep2", "")
    (2, 1, 'tp2_ep2: 2 GPUs, as the run is named')
    >>> named_layout(3, 2, 4, "tp4_ep4", "as read")
    (3, 2, 'as read')
    """
    said = f"{name}: {gpus} GPUs, as the run is named"
    if gpus % tp == 0:
        return tp, gpus // tp, said
    if dp == 1 and tp % gpus == 0:
        return gpus, 1, said
    return tp, dp, note


def aic_layout(tp: int, attention_dp: int, moe_tp: int | None, moe_ep: int) -> tuple[int, int, str]:
    """(tensor_parallel, attention data_parallel, note) of an aiconfigurator row from all its parallel columns:
    ``tp_size`` (``tp``), ``attention_dp_size`` (``attention_dp``), ``moe_tp_size`` (``moe_tp``, None where the
    row leaves it empty or the model is dense) and ``moe_ep_size`` (``moe_ep``). aiconfigurator's own configs have
    ``tp x attention_dp = moe_tp x moe_ep`` (``ModelConfig.resolve_moe_parallelism`` in
    ``src/aiconfigurator/sdk/config.py``): one set of GPUs, cut two ways. The note says what was read beyond the
    columns, "" where nothing was.

    A MoE group larger than ``tp x attention_dp`` (vLLM rows with ``tp_size`` 1 and ``moe_tp_size`` 2): the server
    ran on ``moe_tp x moe_ep`` GPUs, its attention data-parallel over the rest, as vLLM runs ``--data-parallel-size``
    with its MoE layers sharded over every rank (``FusedMoEParallelConfig.make`` in
    ``vllm/model_executor/layers/fused_moe/config.py`` flattens the tensor-parallel ranks across the data-parallel
    ones): ``attention_dp`` becomes ``moe_tp x moe_ep / tp``.

    A ``tp`` that does not divide the model's attention heads is read as it is, and
    :func:`llmcourse.replica.parallel.layout` refuses it with the divisors to use, as every engine refuses it: vLLM's
    ``ModelConfig.verify_with_parallel_config`` ("Total number of attention heads must be divisible by tensor
    parallel size"), TensorRT-LLM's ``Attention.__init__`` (``num_heads % (tp_size * cp_size) == 0``), SGLang's
    ``DeepseekV2AttentionMLA.__init__`` (``num_heads % attn_tp_size == 0``). The file's aggregated rows at such sizes
    are disaggregated runs (:func:`llmcourse.validation.twins.disaggregated_twins`).

    Examples
    --------
    >>> aic_layout(1, 1, 2, 1)[:2]  # Qwen3-235B-A22B on vLLM, 2 GPUs: 2 attention groups, the experts split in 2
    (1, 2)
    >>> aic_layout(36, 1, 36, 1)  # DeepSeek-V3 at 36 (llmcourse.replica.parallel.layout refuses it)
    (36, 1, '')
    >>> aic_layout(2, 1, 3, 1)
    Traceback (most recent call last):
    ...
    llmcourse.validation.cells.RowError: moe_tp_size x moe_ep_size (3 GPUs) must be a multiple of tp_size (2): the attention groups beyond tp_size x attention_dp_size are whole groups of tp_size GPUs
    """
    moe = (moe_tp or 1) * moe_ep
    if moe_tp is None or moe <= tp * attention_dp:
        return tp, attention_dp, ""
    if moe % tp:
        raise RowError(
            f"moe_tp_size x moe_ep_size ({moe} GPUs) must be a multiple of tp_size ({tp}): the attention groups "
            f"beyond tp_size x attention_dp_size are whole groups of tp_size GPUs"
        )
    note = (
        f"moe_tp_size x moe_ep_size = {moe} GPUs, more than tp_size x attention_dp_size = {tp * attention_dp}: "
        f"the attention ran data-parallel over {moe // tp} groups of {tp}"
    )
    return tp, moe // tp, note


#: The exports of aiconfigurator's file (the start of a row's ``silicon_data_source``) that write an expert-parallel
#: run's GPUs squared: an N-GPU run as tp N x N with moe_tp N and moe_ep N (SGLang, TensorRT-LLM), as tp 1 with
#: attention DP N x N (TensorRT-LLM), or as tp N, attention DP N, moe_ep N x N (vLLM). Where the file's 2026-03-25 export
#: or its gap-analysis re-exports hold the same run (the same times), they write it on N GPUs: tp N (or attention DP
#: N), moe_tp 1, moe_ep N.
SQUARED_EXPORTS = ("source_file=2026-04-06.csv", "db-dump/2026-04-27")


def unsquared(tp: int, dp: int, moe_tp: int | None, ep: int, source: str) -> tuple[int, int, int | None, int, str]:
    """(tp, attention DP, moe_tp, moe_ep, note) of a row as it ran: a row of one of the :data:`SQUARED_EXPORTS`
    whose columns square its GPUs is read on N GPUs (expert-parallel N, moe_tp 1), tensor- or data-parallel as its
    columns say; any other row as it is (note "").

    Examples
    --------
    >>> db = "db-dump/2026-04-27; config_id=201"
    >>> unsquared(64, 1, 8, 8, db)[:4], unsquared(1, 64, 8, 8, db)[:4], unsquared(4, 4, 1, 16, db)[:4]
    ((8, 1, 1, 8), (1, 8, 1, 8), (4, 1, 1, 4))
    >>> unsquared(4, 1, 2, 2, "source_file=/Users/x/h100_sxm/trtllm/gpt-oss-120b.csv")[:4]  # a genuine tp 4: as it is
    (4, 1, 2, 2)
    >>> unsquared(8, 1, 1, 8, db)[:4]  # not squared
    (8, 1, 1, 8)
    """
    if not source.strip().startswith(SQUARED_EXPORTS):
        return tp, dp, moe_tp, ep, ""
    n = ep if moe_tp == ep else None
    if n is not None and n > 1 and tp * dp == n * n and 1 in (tp, dp):
        tp, dp = (n, 1) if dp == 1 else (1, n)
    elif (moe_tp or 1) == 1 and tp == dp > 1 and ep == tp * dp:
        n, dp = tp, 1
    else:
        return tp, dp, moe_tp, ep, ""
    gpus = tp * dp
    return tp, dp, 1, n, f"this export writes an expert-parallel run's GPUs squared: {gpus} GPUs, expert-parallel {n}"


#: The SGLang versions whose aggregated servers aiconfigurator's generator launches with ``--enable-mixed-chunk``:
#: its rule sets ``enable_mixed_chunk`` for every aggregated SGLang deployment (``generator/rule_plugin/sglang.rule``:
#: ``agg enable_mixed_chunk = true``, with ``max_prefill_tokens = isl + 1500``), and its launch templates for these
#: versions pass it on (``cli_args.0.5.3.post2.j2``, ``cli_args.0.5.4.post3.j2``, ``cli_args.0.5.6.post2.j2``:
#: ``--enable-mixed-chunk``); ``cli_args.0.5.1.post1.j2`` and the default ``cli_args.j2`` (which any other version
#: gets: the template is picked by exact version) read another key (``enable-mix-chunk``), which nothing sets, and pass
#: nothing. Of these, the file holds runs on 0.5.6.post2 only.
#: An inference, not a record: the rows carry neither their launch arguments nor the generator's version, and the
#: rule and templates read are one stored version each, not dated against the runs. What supports it: the runs'
#: source is the gap analysis's, whose runs the generator launches.
GENERATOR_MIXED_CHUNK = ("0.5.3.post2", "0.5.4.post3", "0.5.6.post2")
#: A row's note where :func:`generator_mixed_chunk` reads it as launched so.
MIXED_CHUNK_NOTE = "read as launched with --enable-mixed-chunk (inferred from its source: aiconfigurator's generator)"
#: The part of a row's ``silicon_data_source`` that names the runs aiconfigurator's gap analysis launched through its
#: generator.
GENERATED_RUNS = "aic-auto-gap-analysis"


def generator_mixed_chunk(record: dict[str, str]) -> bool:
    """Whether an aiconfigurator row appears to be an aggregated SGLang run that aiconfigurator's generator launched
    with ``--enable-mixed-chunk`` (:data:`GENERATOR_MIXED_CHUNK`, which says why this is inferred): a run of its gap
    analysis (:data:`GENERATED_RUNS`) on such a version of SGLang, in the aggregated mode (the rule sets the flag for
    ``agg`` servers only).

    Examples
    --------
    >>> run = {"backend": "sglang", "backend_version": "0.5.6.post2", "mode": "agg",
    ...        "silicon_data_source": "source_file=/Users/x/aic-auto-gap-analysis/data/h200_sxm/sglang/0.5.6.post2/a.csv"}
    >>> generator_mixed_chunk(run), generator_mixed_chunk({**run, "backend_version": "0.5.1.post1"})
    (True, False)
    >>> generator_mixed_chunk({**run, "silicon_data_source": "db-dump/2026-04-27"}), generator_mixed_chunk({**run, "mode": "disagg"})
    (False, False)
    """
    return (
        (record.get("backend") or "").strip().lower() == "sglang"
        and (record.get("mode") or "").strip().lower() == "agg"
        and (record.get("backend_version") or "").strip() in GENERATOR_MIXED_CHUNK
        and GENERATED_RUNS in (record.get("silicon_data_source") or "")
    )
