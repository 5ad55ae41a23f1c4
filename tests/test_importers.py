"""llama-bench's JSON and CSV (llama.cpp ``tools/llama-bench/README.md``, "Output formats"), AIPerf / GenAI-Perf
profile exports (ai-dynamo/aiperf ``docs/tutorials/working-with-profile-exports.md``) and GuideLLM's benchmarks JSON
(vllm-project/guidellm ``docs/guides/outputs.md``) read into the course's measured rows. The fixtures under
tests/data are written from those documents' examples, with this course's models."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import llmcourse.validation as lcv
from llmcourse.errors import InputError

DATA = Path(__file__).parent / "data"


def test_llama_bench_json():
    got = lcv.load_measurements(DATA / "llama_bench.json", gpu="RTX 5090")
    assert got.format == "llama-bench" and not got.skipped
    pp, tg = got.rows
    # pp 512 at 5120 tokens/s: the prompt takes 512 / 5120 s = 100 ms; tg 128 at 125 tokens/s: 1000 / 125 = 8 ms a token
    assert (pp.metric, pp.value, pp.isl) == ("ttft_ms", pytest.approx(100.0), 512)
    assert (tg.metric, tg.value, tg.osl, tg.concurrency) == ("tpot_ms", pytest.approx(8.0), 128, 1)
    assert tg.model == "Qwen3-8B" and tg.weights == "q4_k_m" and tg.gpu == "RTX 5090"
    assert tg.engine.startswith("llama.cpp")


def test_llama_bench_csv_and_its_skipped_rows():
    got = lcv.load_measurements(DATA / "llama_bench.csv")  # gpu_info "Apple M3 Max" names a catalog GPU
    assert got.format == "llama-bench"
    assert [(r.metric, round(r.value, 3), r.weights, r.gpu) for r in got.rows] == [
        ("ttft_ms", 250.0, "q8_0", "M3 Max"),  # 512 / 2048 s
        ("tpot_ms", 25.0, "q8_0", "M3 Max"),  # 1000 / 40
    ]
    reasons = [s.reason for s in got.skipped]
    assert "prompt-and-generation" in reasons[0]
    assert "no model named 'mystery-7b'" in reasons[1]


def test_llama_bench_without_a_gpu_the_catalog_knows_says_so():
    text = (DATA / "llama_bench.json").read_text()
    got = lcv.parse_measurements(text)  # gpu_info "NVIDIA GeForce RTX 5090": not a catalog spelling
    assert not got.rows and all("GPU" in s.reason for s in got.skipped)


def test_llama_bench_jsonl_and_bad_values():
    line = ('{"model_filename": "Qwen3-8B-Q4_K_M.gguf", "model_type": "qwen3 8B Q4_K - Medium", "gpu_info": "x",'
            ' "n_prompt": 0, "n_gen": 128, "avg_ts": %s}')  # fmt: skip
    got = lcv.parse_measurements("\n".join(line % v for v in ("50", "0", '"fast"', "[1]")), gpu="H100")
    assert [r.value for r in got.rows] == [20.0]
    assert len(got.skipped) == 3 and all(s.reason for s in got.skipped)


def test_llama_bench_refuses_an_unknown_model_keyword():
    with pytest.raises(InputError):
        lcv.load_measurements(DATA / "llama_bench.json", gpu="RTX 5090", model="Qwen3-9B")


def test_aiperf_json_is_a_closed_loop_of_its_concurrency():
    got = lcv.load_measurements(DATA / "aiperf_profile_export.json", gpu="H100")
    assert got.format == "aiperf" and not got.skipped
    # the fixture's avg of each statistic, read as it stands; the lengths from input/output_sequence_length
    assert [(r.metric, r.value) for r in got.rows] == [
        ("ttft_ms", 41.3),
        ("tpot_ms", 9.98),
        ("output_tokens_per_s", 780.2),
    ]
    r = got.rows[0]
    assert (r.model, r.gpu, r.isl, r.osl) == ("Llama-3.1-8B", "H100 SXM", 1000, 200)
    assert (r.load_kind, r.concurrency) == ("concurrency", 8)  # input_config.loadgen.concurrency


def test_aiperf_json_gpu_from_telemetry_not_in_the_catalog_says_so():
    got = lcv.load_measurements(DATA / "aiperf_profile_export.json")  # telemetry: "NVIDIA H100 80GB HBM3"
    assert not got.rows and "GPU" in got.skipped[0].reason


def test_genai_perf_json_at_a_request_rate_is_open_loop():
    got = lcv.load_measurements(DATA / "genai_perf_profile_export.json", gpu="H100")
    assert {r.load_kind for r in got.rows} == {"online_rate"}
    assert all(r.concurrency is None and "2/s" in r.load for r in got.rows)
    assert (got.rows[0].isl, got.rows[0].osl, got.rows[0].model) == (550, 250, "Llama-3.1-8B")


def test_aiperf_csv_needs_the_keywords_the_file_lacks():
    got = lcv.load_measurements(DATA / "aiperf_profile_export.csv", gpu="H100", model="Llama-3.1-8B", concurrency=8)
    assert got.format == "aiperf-csv"
    # "Time to First Token (ms)" avg 41.30; "Inter Token Latency (ms)" 9.98; the Metric,Value section's 780.20
    assert [(r.metric, r.value, r.concurrency) for r in got.rows] == [
        ("ttft_ms", 41.3, 8),
        ("tpot_ms", 9.98, 8),
        ("output_tokens_per_s", 780.2, 8),
    ]
    bare = lcv.load_measurements(DATA / "aiperf_profile_export.csv", gpu="H100", model="Llama-3.1-8B")
    assert not bare.rows and "--concurrency" in bare.skipped[0].reason
    assert "--model" in lcv.load_measurements(DATA / "aiperf_profile_export.csv").skipped[0].reason


def test_guidellm_strategies_become_load_kinds():
    got = lcv.load_measurements(DATA / "guidellm_benchmarks.json", gpu="RTX 5090")
    assert got.format == "guidellm"
    kinds = {r.id.split(":")[0]: (r.load_kind, r.concurrency) for r in got.rows}
    assert kinds == {
        "guidellm#1": ("concurrency", 1),  # synchronous: one request at a time
        "guidellm#2": ("concurrency", 16),  # concurrent, streams 16
        "guidellm#3": ("online_rate", None),  # constant, rate 4.5
        "guidellm#4": ("online_unbounded", None),  # throughput
    }
    tpot = next(r for r in got.rows if r.id == "guidellm#1:tpot")
    assert tpot.value == 13.4 and (tpot.isl, tpot.osl, tpot.model) == (512, 128, "Qwen3-8B")  # inter_token_latency_ms
    assert "teleport" in got.skipped[0].reason and got.skipped[0].line == 5


@pytest.mark.parametrize(
    "text, says",
    [
        (
            '{"time_to_first_token": {"unit": "s", "avg": 0.04}, "input_config": {"concurrency": 2, "synthetic_input_tokens_mean": 9, "output_tokens_mean": 9}}',
            "ms",
        ),
        (
            '{"inter_token_latency": {"avg": 9}, "time_to_first_token": 40, "input_config": {"concurrency": 2, "synthetic_input_tokens_mean": 9, "output_tokens_mean": 9}}',
            "statistics",
        ),
        (
            '{"benchmarks": [{"metrics": {}, "config": {"strategy": {"type_": "concurrent", "streams": 0}}}]}',
            "at least 1",
        ),
        ('{"benchmarks": [7]}', "GuideLLM benchmark"),
    ],
)
def test_bad_exports_are_row_reasons(text: str, says: str):
    got = lcv.parse_measurements(text, gpu="H100", model="Llama-3.1-8B")
    assert not got.rows and says in got.skipped[0].reason, got.skipped


def test_concurrency_keyword_is_checked():
    with pytest.raises(InputError, match="concurrency"):
        lcv.parse_measurements("x", concurrency=0)


def test_a_llama_bench_row_runs_one_sequence(tmp_path):
    """llama-bench runs one sequence (n_seq_max 1), so a sliding-window model's row is charged one window, not
    llama-server's four slots. Gemma 3 27B Q8_0 on an RTX 5090, tg 128 at a depth of 30,000 tokens: one sequence's
    cache, 8,192 B x (10 x 30,064 + 52 x 1,536 cells), fits beside the weights (about 34,900 tokens would); with the
    server's 4 x 1,024 + 512 = 4,608 cells a sequence, about 18,900 tokens fit, and the row would be refused."""
    import json

    record = {
        "build_commit": "3469684", "gpu_info": "NVIDIA GeForce RTX 5090", "model_filename": "gemma-3-27b-it-Q8_0.gguf",
        "model_type": "gemma3 27B Q8_0", "n_prompt": 0, "n_gen": 128, "n_depth": 30_000, "avg_ts": 40.0,
    }  # fmt: skip
    path = tmp_path / "bench.json"
    path.write_text(json.dumps([record]))
    (row,) = lcv.load_measurements(path, gpu="RTX 5090", model="Gemma-3-27B").rows
    assert row.load == "tg 128 at depth 30000" and row.engine.startswith("llama.cpp")
    assert lcv.predict(row).value > 0
    server = dataclasses.replace(row, load="concurrency 1")  # the same request to llama-server's four slots
    with pytest.raises(InputError, match="KV cache"):
        lcv.predict(server)
