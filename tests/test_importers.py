"""llama-bench's JSON and CSV (llama.cpp ``tools/llama-bench/README.md``, "Output formats") read into the course's
measured rows. The fixtures under tests/data are written from that README's examples, with this course's models."""

from __future__ import annotations

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
