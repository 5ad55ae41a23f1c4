"""The reader of ``llama-bench`` results (llama.cpp's benchmark: ``llama-bench -o json``, ``-o jsonl`` or ``-o csv``)
into the course's :class:`~llmcourse.validation.measured.Measurement` rows, so that a reader's own llama.cpp run refits.

The format is llama.cpp's ``tools/llama-bench/README.md`` ("Output formats"): one record per test, with
``model_filename``, ``model_type`` (``"llama 7B mostly Q4_0"``), ``gpu_info``, ``n_prompt``, ``n_gen``, ``n_depth`` (newer
builds), ``avg_ts`` (tokens per second, the mean of ``samples_ts``) and ``build_commit``. A text-generation test
(``n_prompt`` 0, ``n_gen`` N: ``tg N``) times one sequence decoding N tokens: its time per output token is
1000 / ``avg_ts`` ms, at a concurrency of 1, after ``n_depth`` tokens of context. A prompt-processing test (``pp N``:
``n_prompt`` N, ``n_gen`` 0) times the prompt alone: its time to first token is 1000 x N / ``avg_ts`` ms. A test of both
(``-pg``) is skipped: its rate mixes the two.

The model comes from ``model=`` (a catalog name) or the file name (its folder, ``.gguf`` and a GGUF quantization suffix
such as ``-Q4_K_M`` dropped); the GPU from ``gpu=`` or ``gpu_info``; the weights' precision from ``weights=`` or the
GGUF type in ``model_type`` or the file name (``Q4_K - Medium`` is ``q4_k_m``).

Examples
--------
>>> from llmcourse.validation.measured import parse_measurements
>>> text = ('[{"build_commit": "3469684", "model_filename": "Qwen3-8B-Q4_K_M.gguf", "model_type": "qwen3 8B Q4_K - '
...         'Medium", "gpu_info": "NVIDIA GeForce RTX 5090", "n_prompt": 0, "n_gen": 128, "avg_ts": 125.0}]')
>>> got = parse_measurements(text, gpu="RTX 5090")
>>> got.format, [(r.model, r.weights, r.metric, r.value) for r in got.rows]
('llama-bench', [('Qwen3-8B', 'q4_k_m', 'tpot_ms', 8.0)])
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from llmcourse.catalog.precision import GGUF_TABLE
from llmcourse.errors import InputError
from llmcourse.validation.cells import (
    RowError,
    cell,
    engine_name,
    gpu_name,
    model_name,
    number,
    precision_name,
    shortened,
    whole,
)

__all__ = ["LLAMA_BENCH_KEYS", "is_llama_bench", "is_llama_bench_load", "read_llama_bench"]

#: The load of a row read from llama-bench (:func:`read_llama_bench`): its test, and the depth it ran at if any.
_BENCH_LOAD = re.compile(r"^(tg|pp) \d+( at depth \d+)?$")


def is_llama_bench_load(load: str) -> bool:
    """Whether a row's load is a llama-bench test (``"tg 128"``, ``"pp 512 at depth 4096"``): llama-bench runs one
    sequence (its context's ``n_seq_max`` is 1), not llama-server's slots.

    Examples
    --------
    >>> is_llama_bench_load("tg 128 at depth 30000"), is_llama_bench_load("concurrency 4")
    (True, False)
    """
    return bool(_BENCH_LOAD.match(load))


#: The keys that mark a llama-bench record (JSON) or header (CSV).
LLAMA_BENCH_KEYS = frozenset({"model_filename", "n_prompt", "n_gen", "avg_ts"})

#: llama.cpp's names of its file types (``llama_model_ftype_name``: ``"Q4_K - Medium"``) and GGUF type names in a
#: file name, longest first.
_GGUF = re.compile(r"(?i)(I?Q\d_K_[SML]|I?Q\d_K|IQ\d_(?:XXS|XS|S|M|NL)|Q\d_[01])")
_PLAIN = re.compile(r"(?i)(?:^|[\s_.-])(B?F16)(?:$|[\s_.-])")
_FTYPE = re.compile(r"(?i)\b(I?Q\d_K|Q\d_[01]|IQ\d_\w+)\s*-\s*(Small|Medium|Large)\b")


def is_llama_bench(record: Any) -> bool:
    """Whether a JSON record (or a CSV header, as a dict of its columns) is a llama-bench result."""
    return isinstance(record, dict) and set(record) >= LLAMA_BENCH_KEYS


def _gguf_type(text: str) -> str | None:
    """The GGUF type a llama-bench ``model_type`` or file name names (``"Q4_K - Medium"``, ``-Q4_K_M.gguf``), if any
    the precision table has."""
    plain = _PLAIN.search(text)
    if plain and not _GGUF.search(text):  # llama.cpp's unquantized files: F16, BF16
        return {"f16": "fp16", "bf16": "bf16"}[plain.group(1).lower()]
    found = _FTYPE.search(text)
    if found:
        name = f"{found.group(1)}_{found.group(2)[0]}".lower()
    else:
        found = _GGUF.search(text)
        name = found.group(1).lower() if found else ""
    return name if name in GGUF_TABLE else None


def _model_of(filename: str) -> str:
    base = re.split(r"[\\/]", filename.strip())[-1]
    base = re.sub(r"(?i)\.gguf$", "", base)
    base = re.sub(r"(?i)[-_.](?:ud-)?(?:" + _GGUF.pattern.removeprefix("(?i)") + r"|B?F16)$", "", base)
    return model_name(base)


def read_llama_bench(
    records: Iterable[dict[str, Any]], given: dict[str, Any], first_line: int = 1
) -> tuple[list[dict[str, Any]], list[tuple[int, str, str]]]:
    """llama-bench records as (rows, skipped): each row the fields of a
    :class:`~llmcourse.validation.measured.Measurement`, each skipped row (line, id, reason); ``given`` the keywords of
    :func:`~llmcourse.validation.measured.parse_measurements` (``gpu``, ``model``, ``weights``, ``kv``, ``engine``)."""
    rows: list[dict[str, Any]] = []
    skipped: list[tuple[int, str, str]] = []
    for k, r in enumerate(records):
        line = k + first_line
        rid = f"llama-bench#{line}"
        try:
            if not isinstance(r, dict):
                raise RowError("not a llama-bench result (a JSON object with model_filename, n_prompt, n_gen, avg_ts)")
            model = given.get("model") or _model_of(cell(r, "model_filename"))
            gpu = gpu_name(str(given.get("gpu") or cell(r, "gpu_info")))
            n_prompt = 0 if str(r.get("n_prompt", "")).strip() in ("0", "") else whole(r, "n_prompt")
            n_gen = 0 if str(r.get("n_gen", "")).strip() in ("0", "") else whole(r, "n_gen")
            depth = 0 if str(r.get("n_depth", "") or "").strip() in ("0", "") else whole(r, "n_depth")
            rate = number(r, "avg_ts")
            if n_prompt and n_gen:
                raise RowError("a prompt-and-generation test (-pg): its rate mixes prefill and decode; use pp and tg")
            if not (n_prompt or n_gen):
                raise RowError("neither n_prompt nor n_gen above 0: no test")
            w = given.get("weights")
            if w is None:
                w = _gguf_type(str(r.get("model_type") or "")) or _gguf_type(str(r.get("model_filename") or ""))
            if w is None:
                raise RowError(
                    "no GGUF type in model_type or model_filename: give --weights (weights= to load_measurements)"
                )
            weights = precision_name(str(w), "weights") if w not in GGUF_TABLE else w
            kv_text = str(given.get("kv") or r.get("type_k") or "f16")
            kv = "bf16" if kv_text.lower() in ("f16", "bf16") else precision_name(kv_text, "type_k")
            metric, value = ("tpot_ms", 1000 / rate) if n_gen else ("ttft_ms", 1000 * n_prompt / rate)
            build = shortened(str(r.get("build_commit") or ""))
            rows.append(
                dict(
                    id=f"{rid}:{metric.split('_')[0]}",
                    source=f"llama-bench result {line}" + (f" (build {build})" if build else ""),
                    gpu=gpu,
                    n_gpus=1,
                    tp=1,
                    model=model,
                    weights=weights,
                    kv=kv,
                    engine=engine_name(str(given.get("engine") or "llama.cpp"), build),
                    isl=max(n_prompt or depth, 1),
                    osl=max(n_gen, 1),
                    load=f"{'tg' if n_gen else 'pp'} {n_gen or n_prompt}" + (f" at depth {depth}" if depth else ""),
                    # (is_llama_bench_load reads this form back)
                    load_kind="concurrency",
                    metric=metric,
                    value=value,
                    unit="ms",
                    concurrency=1,
                )
            )
        except (RowError, InputError) as exc:
            skipped.append((line, rid, str(exc)))
    return rows, skipped
