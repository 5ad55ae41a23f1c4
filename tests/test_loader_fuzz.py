"""The measured-data loader and ``python -m llmcourse validate`` against hostile files.

Each format (the course's CSV, aiconfigurator's CSV, the JSON of ``vllm bench serve``) is fuzzed from a file that
reads: hypothesis changes cells, columns and values to hostile ones (NaN, infinities, 5,000-digit numbers, control
characters, quotes, nested JSON, ...) and cuts or splices the text; the bytes of a file are fuzzed too (other
encodings, random bytes). Every input must give rows (each skipped row with a printable reason) or one
:class:`~llmcourse.errors.InputError` line, printable; never another exception. Then one test per hostile case of
the issue, and the command line run in-process: its exit status, and no raw control character in what it prints.
Derandomized under ``HYPOTHESIS_PROFILE=ci``; a few hundred examples in all, bounded by small sizes.
"""

from __future__ import annotations

import csv
import io
import json
import tempfile
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import llmcourse.validation as lcv
from llmcourse import Q_, Brief, models
from llmcourse.__main__ import main
from llmcourse.errors import InputError
from llmcourse.validation import bounded

COURSE_COLS, COURSE_ROW, AIC_COLS, AIC_ROW = csv.reader(
    [
        "id,gpu,tp,model,weights,kv,engine,isl,osl,load_kind,concurrency,metric,value",
        "A,H100,1,Llama-3.1-8B,bf16,bf16,vLLM 0.9,1000,200,concurrency,8,tpot_ms,9.5",
        "id,silicon_data_source,backend,backend_version,model_path,system,precision,mode,isl,osl,gemm_quant_mode,"
        "moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,silicon_ttft_ms,"
        "silicon_tpot_ms",
        "x1,db; silicon_concurrency=32,trtllm,1.2.0,meta-llama/Llama-3.1-70B,h200_sxm,fp8,agg,1024,1024,fp8,fp8,32,4,1,"
        "1,4,1,120.5,11.25",
    ]
)
VLLM = {
    "date": "20260101-120000",
    "backend": "vllm",
    "model_id": "meta-llama/Llama-3.1-8B-Instruct",
    "request_rate": "inf",
    "max_concurrency": 64,
    "completed": 640,
    "total_input_tokens": 640_000,
    "total_output_tokens": 128_000,
    "output_throughput": 2100.0,
    "mean_ttft_ms": 95.0,
    "mean_tpot_ms": 21.0,
    "mean_itl_ms": 20.5,
    "gpu": "H100",
    "tp": "2",
}
ESC = "\x1b[2J\x1b]0;owned\x07"  # clear the screen, set the terminal's title

#: Cells a hostile file holds: non-numbers where numbers belong, numbers out of every range, control characters,
#: CSV's own punctuation, names near the catalog's, and text of a few hundred characters.
HOSTILE_TEXT = [
    "", " ", "nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e400", "-1", "0", "0.0", "0.5", "1e9", "1e10", "2e9",
    "9" * 5_000, "1_000", "\u0661\u0662", "0x10", "True", "\x00", ESC, "\u202e", "\ud800", '"', '""', ",", "\n",
    "\r", "\r\n", "a,b", '"a,b"', "H100", "h200_sxm", "Llama-3.1-8B", "meta-llama/Llama-3.1-70B-Instruct", "x" * 300,
    "concurrency", "offline_max", "tpot_ms", "ttft_ms", "bf16", "fp8", "nvfp4", "disagg", "silicon_concurrency=0",
    "silicon_concurrency=" + "9" * 50, "1024", "4096",
]  # fmt: skip
CELL = st.one_of(st.sampled_from(HOSTILE_TEXT), st.text(max_size=12))
JSON_SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**60), max_value=10**60),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(HOSTILE_TEXT),
    st.text(max_size=12),
)
JSON_VALUE = st.recursive(
    JSON_SCALAR,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
FUZZ = settings(
    max_examples=120, deadline=2_000, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


def one_line(text: str) -> bool:
    """One line, every character printable (no control character, escape or direction override)."""
    return text.isprintable()


def answered(read) -> lcv.Loaded | None:
    """What a read gives: its rows (each skipped row with a printable reason), or None for one InputError line."""
    try:
        got = read()
    except InputError as exc:
        assert one_line(str(exc)), repr(str(exc))
        return None
    assert isinstance(got, lcv.Loaded) and got.format in lcv.FORMATS
    assert all(isinstance(r, lcv.Measurement) for r in got.rows)
    for sk in got.skipped:
        assert one_line(str(sk)), repr(str(sk))
    assert all(one_line(line) for line in got.report().splitlines())
    return got


def csv_text(cols: list[str], rows: list[list[str]]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([cols, *rows])
    return buf.getvalue()


@st.composite
def csv_file(draw, cols: list[str], good: list[str]) -> str:
    """A file of a CSV format: its header (a column dropped or added, maybe), rows from the good one with a few
    cells hostile, and maybe a splice of text or a cut anywhere."""
    cols = list(cols)
    if draw(st.booleans()):
        cols.pop(draw(st.integers(0, len(cols) - 1)))
    if draw(st.booleans()):
        cols.insert(draw(st.integers(0, len(cols))), draw(CELL))
    rows = []
    for _ in range(draw(st.integers(0, 4))):
        row = dict(zip(cols, good, strict=False))
        row.update(draw(st.dictionaries(st.sampled_from(cols), CELL, max_size=3)))
        cells = [row.get(c, "") for c in cols]
        rows.append(cells + draw(st.lists(CELL, max_size=2)))  # and cells past the header
    text = csv_text(cols, rows)
    cut = draw(st.integers(0, len(text)))
    how = draw(st.sampled_from(["as is", "splice", "cut"]))
    if how == "splice":
        text = text[:cut] + draw(st.one_of(st.text(max_size=20), st.sampled_from(HOSTILE_TEXT))) + text[cut:]
    elif how == "cut":
        text = text[:cut]
    return text


@st.composite
def vllm_file(draw) -> str:
    """A vllm bench result with keys changed to hostile JSON values (or dropped), as one object, a list or lines;
    maybe cut short."""
    recs = []
    for _ in range(draw(st.integers(1, 3))):
        rec = dict(VLLM)
        for key in draw(st.lists(st.sampled_from(sorted(VLLM)), max_size=2)):
            rec.pop(key, None)
        rec.update(
            draw(st.dictionaries(st.sampled_from([*VLLM, "tensor_parallel_size", "input_len"]), JSON_VALUE, max_size=3))
        )
        recs.append(rec)
    form = draw(st.sampled_from(["object", "list", "lines"]))
    text = (
        json.dumps(recs[0])
        if form == "object"
        else json.dumps(recs)
        if form == "list"
        else "\n".join(json.dumps(r) for r in recs)
    )
    if draw(st.booleans()):
        text = text[: draw(st.integers(0, len(text)))]
    return text


# --- the fuzz: one per format, and the bytes of a file -------------------------------------------------------------
@FUZZ
@given(csv_file(COURSE_COLS, COURSE_ROW))
def test_fuzz_course_csv(text: str) -> None:
    """The course's CSV, hostile: rows or one InputError line."""
    answered(lambda: lcv.parse_measurements(text))


@FUZZ
@given(csv_file(AIC_COLS, AIC_ROW))
def test_fuzz_aiconfigurator_csv(text: str) -> None:
    """aiconfigurator's CSV, hostile: rows or one InputError line."""
    answered(lambda: lcv.parse_measurements(text))


@FUZZ
@given(vllm_file())
def test_fuzz_vllm_json(text: str) -> None:
    """vllm bench serve's JSON, hostile: rows or one InputError line."""
    answered(lambda: lcv.parse_measurements(text, gpu="H100"))


LB_COLS, LB_ROW = csv.reader(
    [
        "build_commit,gpu_info,model_filename,model_type,n_prompt,n_gen,n_depth,avg_ts,stddev_ts",
        "3469684,RTX 5090,Qwen3-8B-Q4_K_M.gguf,qwen3 8B Q4_K - Medium,0,128,0,125.0,1.2",
    ]
)
LB_JSON = dict(zip(LB_COLS, LB_ROW, strict=True))


@FUZZ
@given(csv_file(LB_COLS, LB_ROW))
def test_fuzz_llama_bench_csv(text: str) -> None:
    """llama-bench's CSV, hostile: rows or one InputError line."""
    answered(lambda: lcv.parse_measurements(text))


@FUZZ
@given(st.lists(st.dictionaries(st.sampled_from(sorted(LB_JSON)), JSON_VALUE, max_size=3), min_size=1, max_size=3))
def test_fuzz_llama_bench_json(changes: list[dict]) -> None:
    """llama-bench's JSON with keys set to hostile JSON values: rows or one InputError line."""
    text = json.dumps([{**LB_JSON, **c} for c in changes])
    answered(lambda: lcv.parse_measurements(text))


AIPERF = {
    "time_to_first_token": {"unit": "ms", "avg": 41.3, "p99": 66.1},
    "inter_token_latency": {"unit": "ms", "avg": 9.98},
    "output_token_throughput": {"unit": "tokens/sec", "avg": 780.2},
    "input_sequence_length": {"unit": "tokens", "avg": 1000.0},
    "output_sequence_length": {"unit": "tokens", "avg": 200.0},
    "input_config": {"endpoint": {"model_names": ["meta-llama/Llama-3.1-8B-Instruct"]}, "loadgen": {"concurrency": 8}},
}
GUIDELLM_BENCH = {
    "config": {"strategy": {"type_": "concurrent", "streams": 16}, "backend": {"model": "Qwen/Qwen3-8B"}},
    "metrics": {
        "time_to_first_token_ms": {"successful": {"mean": 61.5}},
        "inter_token_latency_ms": {"successful": {"mean": 16.9}},
        "prompt_token_count": {"successful": {"mean": 512.0}},
        "output_token_count": {"successful": {"mean": 128.0}},
    },
}
AIPERF_CSV = (
    "Metric,avg,min,max,p50,p99\nTime to First Token (ms),41.3,30,70,39.8,66.1\nInter Token Latency (ms),9.98,9.6,10.8,"
    "9.95,10.61\nInput Sequence Length (tokens),1000,1000,1000,1000,1000\nOutput Sequence Length (tokens),200,200,200,"
    "200,200\n\nMetric,Value\nOutput Token Throughput (tokens/sec),780.2\n"
)


@FUZZ
@given(st.dictionaries(st.sampled_from(sorted(AIPERF)), JSON_VALUE, max_size=3), JSON_VALUE)
def test_fuzz_aiperf_json(change: dict, config: object) -> None:
    """An AIPerf / GenAI-Perf export with statistics and its input_config set to hostile JSON: rows or one line."""
    text = json.dumps(
        {**AIPERF, **change, "input_config": config if change.get("input_config") else AIPERF["input_config"]}
    )
    answered(lambda: lcv.parse_measurements(text, gpu="H100"))


@FUZZ
@given(
    st.lists(
        st.dictionaries(st.sampled_from(["config", "metrics", "args", "worker"]), JSON_VALUE, max_size=2), max_size=3
    ),
    st.dictionaries(st.sampled_from(sorted(GUIDELLM_BENCH["metrics"])), JSON_VALUE, max_size=2),
)
def test_fuzz_guidellm_json(changes: list[dict], metrics: dict) -> None:
    """GuideLLM benchmarks with keys and metrics set to hostile JSON values: rows or one InputError line."""
    benches = [{**GUIDELLM_BENCH, **c} for c in changes] + [
        {**GUIDELLM_BENCH, "metrics": {**GUIDELLM_BENCH["metrics"], **metrics}}
    ]
    answered(lambda: lcv.parse_measurements(json.dumps({"benchmarks": benches}), gpu="RTX 5090"))


@FUZZ
@given(st.lists(st.tuples(st.integers(min_value=0, max_value=12), CELL), max_size=4))
def test_fuzz_aiperf_csv(cuts: list[tuple[int, str]]) -> None:
    """An AIPerf CSV with hostile text spliced into its lines: rows or one InputError line."""
    lines = AIPERF_CSV.split("\n")
    for where, junk in cuts:
        lines[where % len(lines)] += junk
    answered(lambda: lcv.parse_measurements("\n".join(lines), gpu="H100", model="Llama-3.1-8B", concurrency=4))


GOOD_FILES = [
    csv_text(COURSE_COLS, [COURSE_ROW]),
    csv_text(AIC_COLS, [AIC_ROW]),
    json.dumps(VLLM),
    csv_text(LB_COLS, [LB_ROW]),
    json.dumps(AIPERF),
    json.dumps({"benchmarks": [GUIDELLM_BENCH]}),
    AIPERF_CSV,
]


@settings(max_examples=80, deadline=2_000, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(GOOD_FILES),
    st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-32", "latin-1", "cp1252"]),
    st.binary(max_size=40),
    st.integers(min_value=0),
    st.booleans(),
)
def test_fuzz_file_bytes(text: str, encoding: str, junk: bytes, where: int, raw: bool) -> None:
    """A file's bytes, hostile: a good file in another encoding with bytes spliced in, or bytes alone."""
    data = text.replace("vLLM 0.9", "vLLM \u00e9").encode(encoding, errors="replace")
    where %= len(data) + 1
    data = junk if raw else data[:where] + junk + data[where:]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.csv"
        path.write_bytes(data)
        answered(lambda: lcv.load_measurements(path, gpu="H100"))


# --- each case of the issue ------------------------------------------------------------------------------------------
def course(**change: str) -> str:
    return csv_text(COURSE_COLS, [[change.get(c, v) for c, v in zip(COURSE_COLS, COURSE_ROW, strict=True)]])


def aic(**change: str) -> str:
    return csv_text(AIC_COLS, [[change.get(c, v) for c, v in zip(AIC_COLS, AIC_ROW, strict=True)]])


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "1e400", "9" * 5_000])
@pytest.mark.parametrize(
    ("make", "col"),
    [
        (lambda b: course(tp=b), "tp"),
        (lambda b: course(isl=b), "isl"),
        (lambda b: course(concurrency=b), "concurrency"),
        (lambda b: aic(tp_size=b), "tp_size"),
        (lambda b: aic(batch_size=b, silicon_data_source="none"), "batch_size"),
        (lambda b: json.dumps(VLLM | {"max_concurrency": b}), "max_concurrency"),
        (lambda b: json.dumps(VLLM | {"tp": b}), "tp"),
    ],
)
def test_non_finite_whole_number_is_a_row_reason(make, col: str, bad: str) -> None:
    """NaN, infinities and numbers past a float in a whole-number column: the row is skipped, saying which column."""
    got = answered(lambda: lcv.parse_measurements(make(bad)))
    assert got is not None and not got.rows
    (sk,) = got.skipped
    assert f"column {col!r} must be a whole number" in sk.reason or f"column {col!r} must be at most" in sk.reason


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400", "9" * 5_000])
def test_json_number_literals(literal: str) -> None:
    """JSON's NaN and Infinity and a whole number of 5,000 digits (Python reads at most 4,300) as a count: a reason."""
    text = json.dumps(VLLM).replace('"max_concurrency": 64', f'"max_concurrency": {literal}')
    (sk,) = answered(lambda: lcv.parse_measurements(text)).skipped
    assert "column 'max_concurrency' must be" in sk.reason and len(sk.reason) < 200


def test_count_past_its_bound_is_a_reason() -> None:
    """A parallel size past 1,024 GPUs and a count past a billion: reasons, not clamped."""
    assert "column 'tp' must be at most 1,024; got 4096" in str(lcv.parse_measurements(course(tp="4096")).skipped[0])
    assert "must be at most 1,000,000,000" in str(lcv.parse_measurements(course(isl="2e9")).skipped[0])


@pytest.mark.parametrize("value", ["5e-324", "1e-10", "1.7976931348623157e308", "2e12"])
def test_measured_number_out_of_range_is_a_reason(value: str) -> None:
    """The smallest float, or the largest, as a time: a reason (their ratios to a prediction leave the floats)."""
    (sk,) = lcv.parse_measurements(course(value=value)).skipped
    assert "column 'value' must be from 1e-09 to 1e+12" in sk.reason


def test_a_setup_the_planner_cannot_take_is_a_line_of_the_report() -> None:
    """The most-measured setup at a tensor-parallel size that does not divide the heads: the refit is reported, and
    the re-plan says why it is missing (no error)."""
    rows = [COURSE_ROW] + [[f"t{c}", "H100", "7", *COURSE_ROW[3:10], str(c), "tpot_ms", "9.5"] for c in (1, 4, 16)]
    got = lcv.own_benchmark(csv_text(COURSE_COLS, rows), brief=Brief(10, 1, 1, Q_(2, "s"), Q_(50, "ms")))
    assert got.replan is None and "does not divide" in dict(got.rows())["not re-planned"]


def write(tmp_path: Path, data: bytes, name: str = "bench.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_utf16_and_utf32_with_a_byte_order_mark_are_read(tmp_path: Path) -> None:
    """What PowerShell's > and Excel's "Unicode text" write: UTF-16 with its mark; read like UTF-8."""
    for enc in ("utf-16", "utf-32", "utf-8-sig"):
        got = lcv.load_measurements(write(tmp_path, course().encode(enc)))
        assert [r.id for r in got.rows] == ["A"], enc


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (bytes(range(256)) * 4, "is a binary file"),
        (course().encode("utf-16-le"), "UTF-16 text without a byte-order mark"),
        (course(engine="vLLM caf\u00e9").encode("latin-1"), "line 2 holds the byte 0xe9, which is not UTF-8"),
        (b"\xff\xfe" + "id".encode("utf-16-le") + b"\x00", "not valid UTF-16 text"),
    ],
)
def test_files_not_in_utf8_are_refused_with_a_line(tmp_path: Path, data: bytes, says: str) -> None:
    """Binary bytes, UTF-16 without its mark, Latin-1 (the line of the first byte named), UTF-16 cut mid-character."""
    with pytest.raises(InputError, match=says) as err:
        lcv.load_measurements(write(tmp_path, data))
    assert one_line(str(err.value))


def test_folder_and_missing_file_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a folder"):
        lcv.load_measurements(tmp_path)
    with pytest.raises(InputError, match="no file at"):
        lcv.load_measurements(tmp_path / "none.csv")


@pytest.mark.parametrize("size", [bounded.MAX_CELL + 1, 3 * bounded.MAX_LINE])
@pytest.mark.parametrize("quoted", [False, True])
def test_cell_over_128_kib_is_refused_with_row_and_column(tmp_path: Path, size: int, quoted: bool) -> None:
    """A cell over 128 KiB (in a line under the line limit, or one of 3 MiB) names its row and column."""
    big = "x" * size
    text = csv_text(
        COURSE_COLS, [COURSE_ROW, [big if c == "engine" else v for c, v in zip(COURSE_COLS, COURSE_ROW, strict=True)]]
    )
    if not quoted:
        text = text.replace(f'"{big}"', big)
    with pytest.raises(InputError, match=r"row 3, column 'engine': a cell longer than 128 KiB") as err:
        lcv.load_measurements(write(tmp_path, text.encode()))
    assert one_line(str(err.value)) and len(str(err.value)) < 300


@pytest.mark.parametrize(
    ("depth", "says"), [(100_000, "nested deeper than Python's reader"), (100, "nested more than 64")]
)
def test_deeply_nested_json_is_refused(depth: int, says: str) -> None:
    with pytest.raises(InputError, match=says):
        lcv.parse_measurements('{"mean_tpot_ms": ' + "[" * depth + "]" * depth + "}")


def test_rows_past_the_limit_are_not_read_and_the_file_streams(tmp_path: Path, monkeypatch) -> None:
    """A file of 40,000 rows under a limit of 50 rows: the first 50 read, a line says so, and the reading holds far
    less than the file in memory (it is a stream)."""
    monkeypatch.setattr(bounded, "MAX_ROWS", 50)
    row = ",".join(COURSE_ROW) + "\n"
    path = write(tmp_path, (",".join(COURSE_COLS) + "\n" + row * 40_000).encode())
    tracemalloc.start()
    try:
        got = lcv.load_measurements(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(got.rows) == 50 and "read the first 50 rows" in got.stopped and got.stopped in got.report()
    assert peak < path.stat().st_size / 4, (peak, path.stat().st_size)
    json_path = write(tmp_path, json.dumps([VLLM] * 60).encode(), "bench.json")
    assert "read the first 50 results" in lcv.load_measurements(json_path).stopped


def test_text_past_the_size_limit(tmp_path: Path, monkeypatch) -> None:
    """Past MAX_BYTES a CSV stops at a row's end with a line saying so; a JSON document is refused."""
    monkeypatch.setattr(bounded, "MAX_BYTES", 4_096)
    row = ",".join(COURSE_ROW) + "\n"
    got = lcv.load_measurements(write(tmp_path, (",".join(COURSE_COLS) + "\n" + row * 500).encode()))
    assert 0 < len(got.rows) < 100 and "lines (4 KiB) of the file" in got.stopped
    with pytest.raises(InputError, match="more than 4 KiB of JSON"):
        lcv.load_measurements(write(tmp_path, json.dumps([VLLM] * 100).encode(), "bench.json"))


def test_json_of_one_long_line_is_read(tmp_path: Path) -> None:
    """A result saved with --save-detailed (every request's times) is one line of megabytes: read, not refused as a
    CSV line would be."""
    rec = VLLM | {"itls": [20.5] * 200_000}
    assert len(json.dumps(rec)) > bounded.MAX_LINE
    assert len(lcv.load_measurements(write(tmp_path, json.dumps(rec).encode(), "b.json")).rows) == 4


def test_blank_lines_past_the_line_limit(tmp_path: Path, monkeypatch) -> None:
    """Millions of blank lines cost no more than MAX_LINES lines: before the header, a refusal; after it, a stop."""
    monkeypatch.setattr(bounded, "MAX_LINES", 1_000)
    with pytest.raises(InputError, match="has only blank lines in its first 1,001 lines"):
        lcv.load_measurements(write(tmp_path, b"\n" * 100_000))
    got = lcv.load_measurements(write(tmp_path, course().encode() + b"\n" * 100_000 + course().encode()))
    assert len(got.rows) == 1 and "read the first 1,000 lines" in got.stopped


def test_text_from_a_file_is_escaped() -> None:
    """An id with escape sequences and a direction override: the reasons and the report show them escaped."""
    got = lcv.parse_measurements(course(id=f"A{ESC}\u202e", tp="0"))
    text = str(got.skipped[0]) + got.report()
    assert "\x1b" not in text and "\\x1b[2J" in text and "\\u202e" in text
    (long,) = lcv.parse_measurements(course(id="i" * 10_000, tp="0")).skipped
    assert len(str(long)) < 250 and "(10,000 characters)" in str(long)


def test_vllm_metadata_wins_over_the_keywords() -> None:
    """--metadata tp=2 and gpu=H100 in the JSON win over tensor_parallel=4 and gpu='B200' given; the keywords fill
    what the JSON does not say."""
    got = lcv.parse_measurements(json.dumps(VLLM), tensor_parallel=4, gpu="B200")
    assert {(r.tp, r.gpu) for r in got.rows} == {(2, "H100 SXM")}
    bare = {k: v for k, v in VLLM.items() if k not in ("tp", "gpu")}
    got = lcv.parse_measurements(json.dumps(bare), tensor_parallel=4, gpu="B200")
    assert {(r.tp, r.gpu) for r in got.rows} == {(4, "B200")}


# --- model names ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("meta-llama/Llama-3.1-70B-Instruct", "Llama-3.1-70B"),
        ("meta-llama/Meta-Llama-3.1-8B-Instruct", "Llama-3.1-8B"),
        ("LLAMA-3.1-70B-INSTRUCT", "Llama-3.1-70B"),
        ("meta-llama/Llama-2-7b-chat-hf", "Llama-2-7B"),
        ("Qwen/Qwen2.5-72B-Instruct", "Qwen2.5-72B"),
    ],
)
def test_checkpoint_names_resolve_in_the_catalog(name: str, model: str) -> None:
    """The model catalog's look-up (Catalog.__getitem__) drops an organisation, Meta-, -Instruct, -Chat and -hf."""
    assert models[name].name == model


def test_checkpoint_names_do_not_stretch_to_another_version() -> None:
    """DeepSeek-V3.1 is not DeepSeek-V3 by the aliases (the shipped file's one V3.1 row stays skipped)."""
    with pytest.raises(KeyError, match=r"no model named 'deepseek-ai/DeepSeek-V3\.1'"):
        models["deepseek-ai/DeepSeek-V3.1"]


def test_vllm_instruct_checkpoint_and_model_keyword() -> None:
    """The vllm result of the issue is read as Llama-3.1-70B; model= names a model for a result without one, and
    in place of one."""
    rec = VLLM | {"model_id": "meta-llama/Llama-3.1-70B-Instruct", "tp": 4}
    assert {r.model for r in lcv.parse_measurements(json.dumps(rec)).rows} == {"Llama-3.1-70B"}
    bare = {k: v for k, v in rec.items() if k != "model_id"}
    assert "no model named: give --model" in lcv.parse_measurements(json.dumps(bare)).skipped[0].reason
    assert {r.model for r in lcv.parse_measurements(json.dumps(bare), model="Llama-3.1-70B").rows} == {"Llama-3.1-70B"}
    over = lcv.parse_measurements(course(), model="meta-llama/Llama-3.1-70B-Instruct")
    assert {r.model for r in over.rows} == {"Llama-3.1-70B"}
    with pytest.raises(InputError, match="model: no model named 'Lama-3'"):
        lcv.parse_measurements(course(), model="Lama-3")


# --- the command line, in-process --------------------------------------------------------------------------------------
def run(capsys, argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    for line in (out + err).splitlines():
        assert line.isprintable(), repr(line)  # no raw escape sequence reaches the terminal
    return code, out, err


def test_cli_vllm_without_gpu_exits_1_with_the_reasons(tmp_path: Path, capsys) -> None:
    """Nothing read: exit 1, the reasons summarised in one line on stderr; with --gpu and --tp, read (exit 0)."""
    path = str(
        write(
            tmp_path,
            json.dumps(
                {k: v for k, v in VLLM.items() if k not in ("gpu", "tp")}
                | {"model_id": "meta-llama/Llama-3.1-70B-Instruct"}
            ).encode(),
            "b.json",
        )
    )
    code, out, err = run(capsys, ["validate", path])
    assert code == 1 and "0 measurements, 1 row skipped" in out
    assert err.count("\n") == 1 and "nothing read from b.json: 1 row skipped: 1 x no GPU named: give --gpu" in err
    code, out, _ = run(capsys, ["validate", path, "--gpu", "H100", "--tp", "4", "--weights", "fp8"])
    assert code == 0 and "Llama-3.1-70B (fp8) on 4 x H100 SXM" in out


def test_cli_model_flag_and_escaped_ids(tmp_path: Path, capsys) -> None:
    """A file naming an unknown model (with escape sequences in it and in its id): exit 1, the hint names --model,
    nothing raw printed; --model names the model and the rows are read."""
    text = course(id=f"A{ESC}", model=f"Mystery{ESC}")
    path = str(write(tmp_path, text.encode()))
    code, out, err = run(capsys, ["validate", path])
    assert code == 1 and "\\x1b[2J" in out and "(give --model to name what the file does not)" in err
    code, out, _ = run(capsys, ["validate", path, "--model", "Llama-3.1-8B"])
    assert code == 0 and "1 measurements, 0 rows skipped" in out


def test_cli_notes_a_refit_on_a_bound(tmp_path: Path, capsys) -> None:
    """Rows far faster than the method: the refit sits on its grid's bound, and the report says so."""
    rows = [[*COURSE_ROW[:10], str(c), "tpot_ms", "1.0"] for c in (1, 4, 16)]
    code, out, _ = run(capsys, ["validate", str(write(tmp_path, csv_text(COURSE_COLS, rows).encode()))])
    assert code == 0 and "refit on a bound: bandwidth_efficiency 1 is the highest value of its grid" in out


@pytest.mark.parametrize(
    ("flags", "says", "internal"),
    [
        (["--rps", "nan"], "--rps must be a finite number", "requests_per_second"),
        (["--ttft-ms", "inf"], "--ttft-ms must be a finite number", "ttft_target"),
        (["--tpot-ms", "0"], "--tpot-ms must be greater than zero", "tpot_target"),
        (["--tp", "0"], "--tp must be greater than zero", "tensor_parallel"),
        (["--tp", "4096"], "--tp must be at most 1024", "tensor_parallel"),
        (["--weights", "fp7"], "--weights: precision 'fp7' unknown", "weights="),
        (["--kv", "fp7"], "--kv: precision 'fp7' unknown", "kv="),
        (["--gpu", "Z100"], "--gpu: no GPU named 'Z100'", "gpu="),
        (["--model", "Lama-3"], "--model: no model named 'Lama-3'", "model="),
        (["--engine", ESC], "--engine: ", "engine="),
        (["--method", "cours"], "--method: no assumptions preset named 'cours'", "assumptions="),
    ],
)
def test_cli_errors_name_the_flag_typed(tmp_path: Path, capsys, flags: list[str], says: str, internal: str) -> None:
    """A bad flag: exit 2, one line naming the flag (not the function's argument), before the file is read."""
    code, out, err = run(capsys, ["validate", str(tmp_path / "not-read.csv"), *flags])
    assert code == 2 and not out and err.count("\n") == 1 and says in err and internal not in err, err


HOSTILE_FILES = {
    "binary": bytes(range(256)),
    "latin-1": course(engine="caf\u00e9").encode("latin-1"),
    "utf-16, no mark": course().encode("utf-16-le"),
    "big cell": course(engine="x" * (bounded.MAX_CELL + 1)).encode(),
    "deep JSON": b"[" * 50_000 + b"]" * 50_000,
    "broken JSON": b'{"mean_tpot_ms": 1',
    "not a format": f"name,age\n{ESC},3\n".encode(),
    "empty": b"\n \n",
    "header only": (",".join(COURSE_COLS) + "\n").encode(),
    "5,000 digits": json.dumps(VLLM).replace('"max_concurrency": 64', '"max_concurrency": ' + "9" * 5_000).encode(),
    "NaN": course(tp="nan", id=ESC).encode(),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_FILES))
def test_cli_hostile_files(tmp_path: Path, capsys, name: str) -> None:
    """Each hostile file: exit 1 (read, nothing expressible) or 2 (refused), one printable line on stderr."""
    code, _, err = run(capsys, ["validate", str(write(tmp_path, HOSTILE_FILES[name]))])
    assert code in (1, 2) and err.count("\n") == 1 and err.startswith("error: "), err


def test_cli_folder(tmp_path: Path, capsys) -> None:
    code, _, err = run(capsys, ["validate", str(tmp_path)])
    assert code == 2 and "is a folder" in err


def test_a_file_name_cannot_split_the_stop_line(tmp_path: Path, monkeypatch) -> None:
    """The line saying where reading stopped names the file on one line: a line break in the name is shown escaped,
    never as a second line that reads as the package's own (found by the review)."""
    monkeypatch.setattr(bounded, "MAX_ROWS", 5)
    row = ",".join(COURSE_ROW) + "\n"
    path = tmp_path / "bench\nall rows read.csv"
    path.write_bytes((",".join(COURSE_COLS) + "\n" + row * 20).encode())
    got = lcv.load_measurements(path)
    assert "read the first 5 rows" in got.stopped and "\n" not in got.stopped
    assert "\\n" in got.stopped and "\n" not in got.report().split("\n")[-1]
