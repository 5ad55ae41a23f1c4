"""GGUF quantization types in the precision table: bits per weight from ggml's block sizes (ggml-common.h), the
quantize mixes at their typical effective figure, dequantized to multiply; unknown names get "did you mean"."""

from __future__ import annotations

import pytest

from llmcourse.catalog.precision import GGUF_TABLE, bytes_per_value, compute_of, precision_name
from llmcourse.errors import InputError
from llmcourse.replica.model import replica


@pytest.mark.parametrize(
    ("name", "bpw"),
    [
        ("Q4_0", 4.5),  # 2-byte scale + 16 bytes of nibbles = 18 bytes per 32 weights
        ("Q8_0", 8.5),  # 34 bytes per 32
        ("Q4_K", 4.5),  # block_q4_K: 2 + 2 + 12 + 128 = 144 bytes per 256
        ("Q5_K", 5.5),  # 2 + 2 + 12 + 32 + 128 = 176 per 256
        ("Q6_K", 6.5625),  # 128 + 64 + 16 + 2 = 210 per 256
        ("Q2_K", 2.625),  # 16 + 64 + 4 = 84 per 256
        ("Q3_K", 3.4375),  # 32 + 64 + 12 + 2 = 110 per 256
        ("IQ4_XS", 4.25),  # 2 + 2 + 4 + 128 = 136 per 256
        ("IQ3_XXS", 3.0625),  # 2 + 96 = 98 per 256
        ("IQ2_XXS", 2.0625),  # 2 + 64 = 66 per 256
        ("Q4_K_M", 4.89),  # a mix: llama.cpp reports about 4.8-4.9 for dense models
    ],
)
def test_bits_per_weight(name, bpw):
    assert bytes_per_value(name) * 8 == pytest.approx(bpw)
    assert compute_of(name) == "bf16"  # dequantized to multiply


def test_q4_k_m_is_between_its_parts():
    assert bytes_per_value("q4_k") < bytes_per_value("q4_k_m") < bytes_per_value("q6_k")


def test_unknown_gguf_name_did_you_mean():
    with pytest.raises(InputError, match="did you mean 'q4_k_m'"):
        precision_name("Q4_KM")
    with pytest.raises(InputError, match="GGUF types"):
        bytes_per_value("Q9_K")


def test_weights_at_a_gguf_type():
    # Qwen3-8B at Q4_K_M: 8.19e9 weights x 4.89 / 8 B = 5.01 GB of weights; decoding reads them: finite, and faster
    # than BF16 on one RTX 5090 (memory bound)
    q = replica("Qwen3-8B", "RTX 5090", prompt_tokens=1000, answer_tokens=200, batch=1, weight_bytes="q4_k_m")
    b = replica("Qwen3-8B", "RTX 5090", prompt_tokens=1000, answer_tokens=200, batch=1)
    assert q.weights.to("GB").m == pytest.approx(8190735360 * 4.89 / 8 / 1e9, rel=1e-6)
    assert q.tpot < b.tpot
    assert set(GGUF_TABLE) >= {"q4_k_m", "q5_k_m", "q6_k", "q8_0", "q4_0", "iq4_xs", "iq3_xxs", "iq2_xxs"}
