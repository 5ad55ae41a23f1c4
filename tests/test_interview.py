"""The interview question bank and the sheet of numbers (llmcourse.interview).

Expected values are the source texts' figures (000: the back-of-the-envelope method; 001: the
interactive lab; 002: the capacity-planning method; 004: the system-design lesson), which the bank
computes under that source's assumptions preset, or hand arithmetic written out in the comments
(the course's method: 70% of the bandwidth, 50% of the FLOP/s, FP8 matmuls for FP8 weights on an
H100, each cache read at its average context prompt + answer / 2, 1 ms more per decode step and 23 us per layer
per forward pass, on two GPUs two all-reduces per layer of the step's (or the prompts') activations by the
engines' one-shot or two-shot kernel, each batch's prefill charged
to the cycle B x answer / (prefill of B prompts + answer x step), 1.3x headroom); never output of the
code under test.
"""

from __future__ import annotations

import math

import pint
import pytest
from interview_bank import BANK

from llmcourse import Q_
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.interview import CATALOG_NAMES, LEVELS, QUESTIONS, Question, num, sheet

# The course's method by hand. H100: 3.35 TB/s x 0.7 = 2.345 TB/s; 989 TFLOP/s x 0.5 = 494.5 TFLOP/s in BF16,
# 1,979 x 0.5 = 989.5 TFLOP/s in FP8. Prefill FLOPs of one prompt of T tokens: 2 P T + 2 L H d T^2.
H100_BW, H100_BF16, H100_FP8 = 3.35e12 * 0.7, 989e12 * 0.5, 1_979e12 * 0.5


#: The course's fixed cost of every decode step, and of each layer's kernels in a forward pass (seconds).
OVERHEAD, FLOOR = 1e-3, 23e-6


def _prefill_flops(params: float, layers: int, heads: int, head_dim: int, tokens: int) -> float:
    return 2 * params * tokens + 2 * layers * heads * head_dim * tokens**2


def _allreduces(layers: int, tokens: float, hidden: int = 8_192, n: int = 2) -> float:
    """Seconds of two all-reduces per layer of ``tokens`` tokens' BF16 activations on NVLink 4 (links.csv: 0.8 us a
    latency, 450 GB/s at the course's 80%) by the faster of the engines' kernels (the course's 3.5 us each): the
    one-shot, 3.5 + 0.8 us + (N-1) x bytes / bw, or the two-shot, 2 x (3.5 + 0.8) us + 2(N-1)/N x bytes / bw (the
    ring, 4.5 + 2(N-1) x 0.8 us + 2(N-1)/N x bytes / bw, is never the faster on NVLink)."""
    s = tokens * hidden * 2 / (0.8 * 450e9)
    return 2 * layers * min(4.3e-6 + (n - 1) * s, 8.6e-6 + 2 * (n - 1) / n * s)


def _admitted(free: float, kv: float, prompt: int, answer: int) -> int:
    """The batch a paged engine admits (the course's method): B staggered conversations hold on average B x kv x
    (prompt + answer / 2) bytes of KV (each its prompt and a uniform share of its answer), with a spread kv x answer x
    sqrt(B / 12); the largest B whose mean plus 2 spreads (never more than B at the final length) fits in ``free``."""

    def held(n: int) -> float:
        return min(n * kv * (prompt + answer), n * kv * (prompt + answer / 2) + 2 * kv * answer * math.sqrt(n / 12))

    n = 0
    while held(n + 1) <= free:
        n += 1
    return n


def _mixed(w: float, params: float, batch: int, prompt: int, answer: int, kv: float, attn: float, bw: float,
           flops: float, gpus: int = 1, layers: int = 80, budget: int = 8_192) -> tuple[float, float, float]:  # fmt: skip
    """(a user's time per token, the replica's mean step, the decode step alone) in seconds under vLLM's scheduler.

    A step decodes ``batch`` tokens and reads the weights once: matmuls max(w / bw, tokens x 2 x params / flops),
    attention max((the decodes' KV at prompt + answer / 2, plus the earlier KV a chunk reads) / bw, the chunk's
    causal attention FLOPs / flops), + 1 ms, the ``layers``' floor and, on 2 GPUs, the all-reduces of all its tokens.
    The scheduler fills what the budget leaves beside the decode tokens (budget - batch) with a waiting prompt, whole
    when it fits, else in k chunks of that size; a chunk of n tokens from ``s`` has ``attn`` x ((s + n)^2 - s^2) / n
    attention FLOPs a token (``attn`` = 2 x layers x heads x head dim) and reads s tokens' KV. Over an answer's
    length each of p requests lets a new prompt in: a share min(1, k x p / answer) of the steps carries a chunk
    (their mean time), the rest decode alone. A user's own steps see the other batch - 1 prompts; the replica runs
    all batch of them. When the share reaches 1 the prompts are spread over every step: batch x prompt / answer
    prompt tokens in each (a chunk carrying chunk / prompt of each chunk's read and attention)."""
    room = budget - batch
    chunks = [(s, min(room, prompt - s)) for s in range(0, prompt, room)]
    reads = batch * kv * (prompt + answer / 2)
    ar = (lambda t: _allreduces(layers, t)) if gpus == 2 else (lambda t: 0.0)

    def step(tokens: float, attention: float, earlier: float) -> float:
        return (max(w / bw, (batch + tokens) * 2 * params / flops) + max((reads + earlier) / bw, attention / flops)
                + OVERHEAD + layers * FLOOR + ar(batch + tokens))  # fmt: skip

    alone = step(0, 0, 0)
    if len(chunks) * batch >= answer:  # chunks in every step: the steady step
        chunk = batch * prompt / answer
        assert batch + chunk <= budget  # the budget does not bind on these replicas
        earlier = chunk / prompt * kv * sum(s for s, _ in chunks)
        steady = step(chunk, chunk * attn * prompt, earlier)
        return steady, steady, alone
    with_chunk = sum(step(n, attn * ((s + n) ** 2 - s**2), kv * s) for s, n in chunks) / len(chunks)

    def mean(prompts: int) -> float:
        share = min(1, len(chunks) * prompts / answer)
        return share * with_chunk + (1 - share) * alone

    return mean(batch - 1), mean(batch), alone


# The course's replicas by hand under vLLM (8,192 tokens a step on an H100 or H200; one token of every running request
# a step). KV per token: 327,680 B (the 70B/72B), 57,344 B (Qwen2.5-7B), 131,072 B (the 8B).
# Qwen2.5-72B FP8 on 2 x H100, 2,000 + 300: admitted (144 - 72.7) GB on 2,150-token conversations, spread 300 tokens:
# 100 (70.45 + 0.57 GB; 94 at the final 2,300 tokens). Decode step alone (72.7e9 + 100 x 327,680 x 2,150) / 4.69
# TB/s = 30.52 ms + 1 ms + 1.84 ms of layers' floor + 1.42 ms of all-reduces = 34.78 ms. A 2,000-token prompt fits
# whole in what the budget leaves (8,092): one step of 2,100 tokens, 2,100 x 145.4 GFLOP / 1,979 TFLOP/s = 154.29 ms
# of matmuls, 15.02 ms of KV reads, 1 ms, 1.84 ms, 15.98 ms of all-reduces = 188.13 ms. 100 prompts over a 300-token
# answer: 1/3 of the replica's steps carry one, a mean step of 1/3 x 188.13 + 2/3 x 34.78 = 85.90 ms, 100 / 85.90 ms =
# 1,164 tok/s; a user's steps see the other 99 prompts: 99/300 x 188.13 + 201/300 x 34.78 = 85.39 ms a token
Q72_B = _admitted(0.9 * 160e9 - 72.7e9, 327_680, 2_000, 300)
Q72_TPOT, Q72_MEAN, Q72_STEP = _mixed(
    72.7e9, 72.7e9, Q72_B, 2_000, 300, 327_680, 2 * 80 * 64 * 128, 2 * H100_BW, 2 * H100_FP8, 2
)
Q72_X = Q72_B / Q72_MEAN
# Qwen2.5-7B BF16 on one H100 (no all-reduces), 2,000 + 300: admitted on (72 - 15.2) GB at 57,344 B per token: 458,
# whose 458 prompts over a 300-token answer need a step each more than there are steps: every step carries
# 458 x 2,000 / 300 = 3,053 prompt tokens (the steady step, 133.7 ms)
Q7_B = _admitted(0.9 * 80e9 - 15.2e9, 57_344, 2_000, 300)
Q7_X = Q7_B / _mixed(15.2e9, 7.6e9, Q7_B, 2_000, 300, 57_344, 2 * 28 * 28 * 128, H100_BW, H100_BF16, layers=28)[1]


# Llama-3.1-70B FP8 on 2 x H100 at batch 64, 2,000 + 400: 64 / 400 = 0.16 of the steps carry a whole prompt (175.56
# ms), the rest decode alone (28.87 ms): 52.35 ms a step, 1,222.7 tok/s; a user's 63 / 400: 51.98 ms, 19.2 tok/s
def _l70_step(batch: int) -> tuple[float, float, float]:
    """The 70B FP8 pair's (user's time per token, mean step, decode step alone) at ``batch`` (2,000 + 400)."""
    return _mixed(70.554e9, 70.554e9, batch, 2_000, 400, 327_680, 2 * 80 * 64 * 128, 2 * H100_BW, 2 * H100_FP8, 2)


L70_TPOT, L70_MEAN, _ = _l70_step(64)
L70_X = 64 / L70_MEAN


# the largest batch whose users each see the brief's 30 tok/s: 1 / a user's time per token >= 30 holds up to batch 28
# (27 / 400 x 167.20 + 373 / 400 x 23.08 = 32.81 ms, 30.48 tok/s; batch 29 is 29.9996 tok/s, just under); the
# replica's mean step 28 / 400 x 167.20 + 372 / 400 x 23.08 = 33.17 ms, 28 / 33.17 ms = 844.2 tok/s;
# ceil(1.3 x 140,000 / 844.2) = ceil(215.6) = 216 replicas
L70_B30 = max(b for b in range(1, 101) if 1 / _l70_step(b)[0] >= 30)
L70_X30 = L70_B30 / _l70_step(L70_B30)[1]
# Llama-3.1-8B BF16 on one H100, 512-token answers, 2,048- and 32,768-token prompts, admitted on (72 - 16.06) GB; the
# long prompt does not fit beside the decode tokens: it goes in chunks of 8,192 - B tokens, each reading the KV of its
# prompt's earlier tokens
L8_B = {p: _admitted(0.9 * 80e9 - 16.06e9, 131_072, p, 512) for p in (2_048, 32_768)}
L8_SHORT_TPOT, L8_SHORT_MEAN, L8_SHORT_STEP = _mixed(
    16.06e9, 8.03e9, L8_B[2_048], 2_048, 512, 131_072, 2 * 32 * 32 * 128, H100_BW, H100_BF16, layers=32
)
L8_LONG_TPOT, L8_LONG_MEAN, L8_LONG_STEP = _mixed(
    16.06e9, 8.03e9, L8_B[32_768], 32_768, 512, 131_072, 2 * 32 * 32 * 128, H100_BW, H100_BF16, layers=32
)
L8_SHORT_X, L8_LONG_X = L8_B[2_048] / L8_SHORT_MEAN, L8_B[32_768] / L8_LONG_MEAN
# Llama-3.1-70B FP8, 2,000 + 400. 2 x H100: admitted on (144 - 70.554) GB; one H200 (0.9 x 141 GB, 4.8 TB/s, $3.50/h;
# no all-reduces) on (126.9 - 70.554) GB
H2_B = _admitted(0.9 * 160e9 - 70.554e9, 327_680, 2_000, 400)
H200_B = _admitted(0.9 * 141e9 - 70.554e9, 327_680, 2_000, 400)
H2_TPOT, H2_MEAN, _ = _mixed(
    70.554e9, 70.554e9, H2_B, 2_000, 400, 327_680, 2 * 80 * 64 * 128, 2 * H100_BW, 2 * H100_FP8, 2
)
H200_TPOT, H200_MEAN, _ = _mixed(
    70.554e9, 70.554e9, H200_B, 2_000, 400, 327_680, 2 * 80 * 64 * 128, 4.8e12 * 0.7, H100_FP8
)
H2_X, H200_X = H2_B / H2_MEAN, H200_B / H200_MEAN


# Speculative decoding, the course's method. Llama 3.1 70B FP8 on 2 x H100 at batch 1, the cache read at 2,150 tokens:
# (70.554e9 + 327,680 x 2,150) B / 4.69 TB/s = 15.1937 ms, + 1 ms, + 160 all-reduces of 1 x 8,192 x 2 B (6.1455 us
# each: 0.98328 ms) = 17.1770 ms; the verification of 5 positions is memory-bound and reads the same bytes, its
# all-reduces carry 5 tokens (6.3276 us each: 1.01242 ms) = 17.2061 ms; the FP8 8B draft (8.03e9 + 131,072 x 2,150) /
# 4.69 TB/s = 1.77224 ms, + 0.1 ms (a separate draft model's step inside the cycle's engine step: the 1 ms is paid
# once per cycle, with the verification), + 64 all-reduces of 4,096 x 2 B (6.1228 us: 0.39186 ms) = 2.26410 ms.
DRAFT_MODEL_OVER, HEAD_OVER = 0.1e-3, 0.03e-3  # the course's fixed time per draft step: a draft model, a head (s)
# (With the engines' one-shot all-reduces and the layers' floor: 80 x 23 us for the 70B, 32 x 23 us for the draft.)
SPEC_PLAIN = (70.554e9 + 327_680 * 2_150) / (2 * H100_BW) + OVERHEAD + 80 * FLOOR + _allreduces(80, 1)
SPEC_VERIFY = (70.554e9 + 327_680 * 2_150) / (2 * H100_BW) + OVERHEAD + 80 * FLOOR + _allreduces(80, 5)
SPEC_DRAFT = (
    (8.03e9 + 131_072 * 2_150) / (2 * H100_BW) + DRAFT_MODEL_OVER + 32 * FLOOR + _allreduces(32, 1, hidden=4_096)
)
# Llama 3.1 8B + its EAGLE-3 head (0.425e9 parameters, 4,096 B of KV per token) at 288 tokens, k = 4, alpha = 0.7, on
# one H100 (no all-reduces), the plain step and the verification + 1 ms (o), each head step + 0.03 ms (o_d):
# tau ((W + B K) / D + o) = 5 B F / C + o + 4 ((W_d + B K_d) / D + o_d), solved for B. At batch 200: plain
# (16.06e9 + 200 x 131,072 x 288) / 2.345 TB/s = 10.068 ms + 1 ms; verification 200 x 5 x 16.06e9 / 494.5 TFLOP/s =
# 32.477 ms + 1 ms; head (0.85e9 + 200 x 4,096 x 288) / 2.345 TB/s = 0.46308 ms + 0.03 ms.
# (o: 1 ms and the 8B's 32 layers' floor; o_d: 0.03 ms and the head's one layer's)
O_8B, O_HEAD = OVERHEAD + 32 * FLOOR, HEAD_OVER + FLOOR
SPEC_X = ((2.7731 * 16.06e9 - 4 * 0.85e9) / H100_BW + (2.7731 - 1) * O_8B - 4 * O_HEAD) / (
    5 * 16.06e9 / H100_BF16 + (4 * 4_096 * 288 - 2.7731 * 131_072 * 288) / H100_BW
)
SPEC_P200 = (16.06e9 + 200 * 131_072 * 288) / H100_BW + O_8B
SPEC_V200 = 200 * 5 * 16.06e9 / H100_BF16 + O_8B
SPEC_D200 = (0.85e9 + 200 * 4_096 * 288) / H100_BW + O_HEAD


def _moe_read(params: float, active: float, tokens: int) -> float:
    """FP8 bytes a DeepSeek-V3-shaped layer stack reads for ``tokens`` tokens: the shared weights and the share
    1 - (1 - 8/256)^tokens of the routed experts, whose parameters are (total - active) / (1 - 8/256)."""
    experts = (params - active) / (1 - 8 / 256)
    return params - experts + experts * (1 - (1 - 8 / 256) ** tokens)


# DeepSeek-V3 FP8 on 8 x H200 (8 x 4.8 x 0.7 = 26.88 TB/s), cache read at 2,150 tokens, MLA's 70,272 B per token kept
# on all 8 GPUs; MTP block 11.61e9 / 0.688e9 parameters, one layer: 1,152 B per token (x 8). The FLOPs never bind.
# Every step of the model + 1 ms, the MTP block's + 0.03 ms (it runs inside the verification's engine step), and,
# tensor-parallel over 8 GPUs on NVLink 4 (the experts split like matrices), an all-reduce
# after each layer's attention and after each layer's MLP or MoE: 2 x 61 for the model, 2 for the MTP block, each
# of the step's tokens' 7,168 x 2 B of activations (the verification's: 2 per sequence).
_DS_BW, _DS_KV, _MTP_KV = 8 * 4.8e12 * 0.7, 8 * 70_272 * 2_150, 8 * 1_152 * 2_150


def _ds(layers: int, tokens: int, overhead: float = OVERHEAD) -> float:
    """A DeepSeek-V3 step's fixed part: the 1 ms (or ``overhead``), the ``layers``' floor and the all-reduces of
    ``tokens`` tokens over ``layers`` layers."""
    return overhead + layers * FLOOR + _allreduces(layers, tokens, hidden=7_168, n=8)


MTP_PLAIN1 = (_moe_read(671e9, 37e9, 1) + _DS_KV) / _DS_BW + _ds(61, 1)
MTP_VER1 = (_moe_read(671e9, 37e9, 2) + _DS_KV) / _DS_BW + _ds(61, 2)
MTP_MTP1 = (_moe_read(11.61e9, 0.688e9, 1) + _MTP_KV) / _DS_BW + _ds(1, 1, HEAD_OVER)
MTP_PLAIN256 = (_moe_read(671e9, 37e9, 256) + 256 * _DS_KV) / _DS_BW + _ds(61, 256)
MTP_VER256 = (_moe_read(671e9, 37e9, 512) + 256 * _DS_KV) / _DS_BW + _ds(61, 512)
MTP_MTP256 = (_moe_read(11.61e9, 0.688e9, 256) + 256 * _MTP_KV) / _DS_BW + _ds(1, 256, HEAD_OVER)


def _per_million(usd_per_hour: float, tokens_per_s: float) -> float:
    return usd_per_hour / 3_600 / tokens_per_s * 1e6


# (value, unit, relative tolerance); unit "" for plain numbers. A count with tolerance 0 must match exactly.
EXPECTED: dict[str, dict[str, tuple[float, str, float]]] = {
    "weights_fit": {  # seed 000: 145 GB in BF16 does not fit in 144 GB, needs four GPUs; FP8 fits on two
        "w16": (145.4, "GB", 1e-6),
        "w8": (72.7, "GB", 1e-6),
        "per_gpu": (72, "GB", 1e-9),
        "n16": (3, "", 0),
        "tp16": (4, "", 0),
        "n8": (2, "", 0),
        "mem2": (144, "GB", 1e-9),
        "miss": (1.4, "GB", 1e-6),
    },
    "kv_per_token": {  # seed 000: 2x80x8x128x2 = 327,680 B; 2x28x4x128x2 = 57,344 B; MHA: 64 KV heads
        "kv72": (320, "KiB", 1e-9),
        "kv7": (56, "KiB", 1e-9),
        "b72": (327_680, "", 0),
        "b7": (57_344, "", 0),
        "mha72": (2.5, "MiB", 1e-9),
    },
    "kv_context": {  # seed 000: "about 0.75 GB"; 327,680 x 2,300 = 753,664,000 B; x 32,768 = 10 GiB
        "kv2300": (0.753664, "GB", 1e-9),
        "kv32k": (10, "GiB", 1e-9),
        "kv32k_gb": (10.737418, "GB", 1e-6),
        "share32k": (14.913, "", 1e-3),
    },
    "traffic": {  # seed 000: 6.9 requests/s, about 14,000 prompt and 2,083 output tokens/s
        "avg": (200_000 / 86_400, "", 1e-9),
        "rps": (6.944, "", 1e-3),
        "tin": (13_889, "", 1e-4),
        "tout": (2_083.3, "", 1e-4),
    },
    "single_stream": {  # seed 004: 140 GB / 3,350 GB/s = 23.9 tok/s; two GPUs: 140 / 6,700 = 20.9 ms; course 6.7 x 0.7
        "w": (140, "GB", 1e-9),
        "t1": (41.791, "ms", 1e-4),
        "r1": (23.93, "", 1e-3),
        "t2": (20.896, "ms", 1e-4),
        "r2": (47.86, "", 1e-3),
        "r2_70": (33.50, "", 1e-3),
    },
    "memory_bound": {  # seed 001: about 7 ms memory vs 0.03 ms compute; L4 about 78 ms
        # (16.06 GB + 2,304 x 131,072 B) / (3.35 x 0.7 TB/s) = 16.362 / 2.345 = 6.977 ms
        "mem": (6.977, "ms", 1e-3),
        "comp": (0.032477, "ms", 1e-3),
        "l4": (77.91, "ms", 1e-3),
        "ratio": (214.8, "", 2e-3),
    },
    "prefill_time": {  # seed 000: 2 x 72.7e9 x 2,000 = 290.8 TFLOP over 2 x 989 x 0.5 TFLOP/s = 0.29 s
        "flops": (290.8, "TFLOP", 1e-6),
        "rate": (0.989, "PFLOP/s", 1e-9),
        "t": (0.29403, "s", 1e-4),
        "mem": (72.7 / 6.7, "ms", 1e-6),  # one read of the weights at the datasheet's 2 x 3.35 TB/s
        # course: FP8 matmuls and the attention term, (290.8 + 5.243) TFLOP / (2 x 989.5 TFLOP/s) = 0.1496 s, plus
        # 160 all-reduces of 2,000 x 8,192 x 2 B on NVLink 4 (97.1 us each: 15.5 ms) = 0.1651 s
        "t_course": (_prefill_flops(72.7e9, 80, 64, 128, 2_000) / (2 * H100_FP8) + _allreduces(80, 2_000), "s", 1e-6),
    },
    "max_batch": {  # seed 000: batch 94 (the static worst case), 47 tok/s per user; the engine admits 100
        "batch": (94, "", 0),
        "mem": (144, "GB", 1e-9),
        "free": (71.3, "GB", 1e-6),
        "kv": (0.753664, "GB", 1e-9),
        "user": (47, "", 0.01),
        "user_step": (1 / Q72_STEP, "", 1e-6),  # the decode step alone at the admitted 100: 1 / 34.78 ms = 28.75 tok/s
        "user_course": (1 / Q72_TPOT, "", 1e-6),  # with the other 99 prompts' steps: 1 / 85.39 ms = 11.71
    },
    "full_gpu_step": {  # seed 000: 72 GB / 3.35 TB/s = 21 ms, 47 tok/s per user for 7B and 72B alike
        "step": (21.49, "ms", 1e-3),
        "rate": (46.53, "", 1e-3),
        "b7": (430, "", 0),
        "b72": (94, "", 0),
        "u7": (47, "", 0.01),
        "u72": (47, "", 0.01),
        "h200": (26.44, "ms", 1e-3),
        "b200": (21.04, "ms", 1e-3),  # 0.9 x 141 / 4.8; 0.9 x 180 / 7.7
        "step_course": (72 / (3.35 * 0.7), "ms", 1e-6),  # 72 GB / 2.345 TB/s = 30.70 ms
        "rate_course": (2_345 / 72, "", 1e-6),
    },
    "batching": {  # seed 004 table: 24, 191, 766, 3,063, 6,126 tok/s; 15 sequences fit
        "r1": (23.93, "", 1e-3),
        "x8": (191, "", 0),
        "x32": (766, "", 0),
        "x128": (3_063, "", 0),
        "x256": (6_126, "", 0),
        "b": (15, "", 0),
    },
    "kv_limit": {  # seed 004: 2.62 MB/token, 10.5 GB at 4,000; GQA about 1.3 GB; 20 GB free; 15 sequences
        "mha_tok": (2.62144, "MB", 1e-6),
        "mha_seq": (10.48576, "GB", 1e-6),
        "gqa_tok": (0.32768, "MB", 1e-6),
        "gqa_seq": (1.31072, "GB", 1e-6),
        "free": (20, "GB", 1e-9),
        "b_gqa": (15, "", 0),
        "b_mha": (1, "", 0),
    },
    "long_context": {  # seed 001: 128 KiB/token, 4 GiB at 32K, 166 and 12 conversations; the rest the course's method
        # admitted 183 and 12 (the static worst case: 166 and 12); B / the engine's step; the prompts' share of it
        "kvtok": (128, "KiB", 1e-9),
        "kv32k": (4, "GiB", 1e-9),
        # the lab's static count: (80 GB x 0.9 - 16.06 GB) / (2,560 x 131,072 B) = 55.94e9 / 335,544,320 = 166.7
        "b_static": (166, "", 0),
        "b_short": (L8_B[2_048], "", 0),
        "b_long": (L8_B[32_768], "", 0),
        "x_short": (L8_SHORT_X, "", 1e-4),
        "x_long": (L8_LONG_X, "", 1e-4),
        "c_short": (_per_million(2.5, L8_SHORT_X), "USD", 1e-4),
        "c_long": (_per_million(2.5, L8_LONG_X), "USD", 1e-4),
        "ratio": (L8_SHORT_X / L8_LONG_X, "", 1e-4),
        "share_short": (100 * (1 - L8_SHORT_STEP / L8_SHORT_TPOT), "", 1e-4),
        "share_long": (100 * (1 - L8_LONG_STEP / L8_LONG_TPOT), "", 1e-4),
    },
    "gqa": {  # seed 001: 512 vs 128 KiB; 3 vs 12 conversations at 32K
        "kv2": (512, "KiB", 1e-9),
        "kv3": (128, "KiB", 1e-9),
        "ratio": (4, "", 1e-9),
        "b2": (3, "", 0),
        "b3": (12, "", 0),
    },
    "quantization": {  # seed 001: 7 ms -> about 1.9 ms; scales: 0.5 + 2/128 B = 0.515625 B per weight
        # (8.03e9 x 0.515625 + 0.302e9) B / 2.345 TB/s = 1.894 ms; without scales (4.015 + 0.302) / 2.345 = 1.841 ms
        "t16": (6.977, "ms", 1e-3),
        "t4": (1.841, "ms", 1e-3),
        "t4s": (1.894, "ms", 1e-3),
        "scale": (0.515625, "B", 1e-9),
    },
    "batch_cost": {  # seed 001: 6.9 -> 7.9 ms, about 145 -> 8,100 tok/s, $5.83 -> $0.21 at $3/h
        "t1": (6.9, "ms", 0.01),
        "t64": (7.9, "ms", 0.01),
        "x1": (145, "", 0.01),
        "x64": (8_100, "", 0.01),
        "c1": (5.83, "USD", 1e-3),
        "c64": (0.21, "USD", 0.01),
        # one kind of throughput with its own price: $3/h / (x tok/s x 3,600 s) x 1e6; decode only 145.67 -> $5.72,
        # with prefill $5.83 -> 3e6 / 3,600 / 5.8293 = 142.96 tok/s
        "cd1": (3e6 / 3_600 / 145.6725, "USD", 1e-5),
        "xe1": (3e6 / 3_600 / 5.829303, "", 1e-5),
    },
    "cost_per_million": {  # seed 000: 4,387 tok/s, $0.32/M, about $1.05 at 30%; 7B: 20,031 tok/s, $0.03
        "x": (4_387, "", 2e-4),
        "c": (0.3166, "USD", 1e-3),
        "c30": (1.055, "USD", 1e-3),
        "x7": (20_031, "", 1e-4),
        "c7": (0.03467, "USD", 1e-3),
        "x_course": (Q72_X, "", 1e-4),  # 1,164 tok/s
        "c_course": (_per_million(5.0, Q72_X), "USD", 1e-4),  # $1.19/M
        "c30_course": (_per_million(5.0, Q72_X) / 0.3, "USD", 1e-4),
        "x7_course": (Q7_X, "", 1e-4),
        "c7_course": (_per_million(2.5, Q7_X), "USD", 1e-4),
        # the prompts' share of a user's time per token: 1 - 34.78 / 85.39 = 59.3%
        "share_course": (100 * (1 - Q72_STEP / Q72_TPOT), "", 1e-4),
    },
    "scale_traffic": {  # seed 000: 20,833 / 4,387 = 4.7 -> 5 replicas, 10 GPUs; two replicas minimum: four GPUs
        "tout10": (20_833, "", 1e-4),
        "exact": (4.749, "", 1e-3),
        "r10": (5, "", 0),
        "g10": (10, "", 0),
        "r1": (2, "", 0),
        "g1": (4, "", 0),
        # course: ceil(1.3 x 2,083.3 / 1,164.2) = ceil(2.326) = 3 replicas, 6 GPUs; x 10: ceil(23.26) = 24, 48 GPUs
        "x_course": (Q72_X, "", 1e-4),
        "exact1_course": (1.3 * 2_083.333 / Q72_X, "", 1e-5),
        "r1_course": (3, "", 0),
        "g1_course": (6, "", 0),
        "r10_course": (24, "", 0),
        "g10_course": (48, "", 0),
    },
    "littles_law": {  # seed 004: 17,361 req/s, 1,250 / 50 = 25 s; 17,361.1 x 25 = 434,028 on the mean; at the peak
        # (3x) 1,302,083 over the peak-sized fleet (see huge_fleet: 42,318 GPUs) = 30.77 per GPU
        "rps": (17_361.1, "", 1e-5),
        "t": (25, "s", 1e-9),
        "n": (434_028, "", 1e-5),
        "n_peak": (3 * 434_027.78, "", 1e-6),
        "gpus": (42_318, "", 0),
        "per_gpu": (3 * 434_027.78 / 42_318, "", 1e-6),
    },
    "h200": {  # the course's method by hand (see H2_X, H200_X above): 14.0 vs 10.8 tok/s per user, $1.00 vs $1.18/M
        "b_h100": (H2_B, "", 0),
        "b_h200": (H200_B, "", 0),
        "kv": (0.786432, "GB", 1e-9),
        "u_h100": (1 / H2_TPOT, "", 1e-6),
        "u_h200": (1 / H200_TPOT, "", 1e-6),
        "x_h100": (H2_X, "", 1e-4),
        "x_h200": (H200_X, "", 1e-4),
        "c_h100": (_per_million(5.0, H2_X), "USD", 1e-4),
        "c_h200": (_per_million(3.5, H200_X), "USD", 1e-4),
        # the price is stated: $3.50 over $2.50; the H200 matches the pair at $3.50 x $1.00 / $1.18 = $2.97 an hour
        "price_ratio": (1.4, "", 1e-12),
        "breakeven": (3.5 * _per_million(5.0, H2_X) / _per_million(3.5, H200_X), "USD/hour", 1e-4),
    },
    "roofline_fleet": {  # seed 002: 25.8 ms, 39 tok/s, 2,480 tok/s, 1,740 usable, 81 replicas, 162 H100s, $296K
        "demand": (140_000, "", 1e-9),
        "w": (70.554, "GB", 1e-6),
        "kv": (0.79, "GB", 0.01),
        "read": (121, "GB", 0.01),
        "step": (25.8, "ms", 0.005),
        "comp": (9.13, "ms", 0.01),
        "user": (39, "", 0.01),
        "x": (2_480, "", 0.005),
        "usable": (1_740, "", 0.005),
        "replicas": (81, "", 0),
        "gpus": (162, "", 0),
        "cost": (296_000, "USD", 0.005),
        "naive": (57, "", 0),  # 140,000 / 2,483 = 56.4 -> 57 with no headroom
        # does the headroom hold prefill? 1,738 usable tok/s / 400 x 2,000 prompt tokens x 2 x 70.554e9 = 1.226 PFLOP/s
        # needed, against 2 x 989 x 0.5 = 0.989 PFLOP/s less decode's 1,738 x 2 x 70.554e9 = 0.245: 0.744 idle
        "need": (2_483.0 * 0.7 / 400 * 2_000 * 2 * 70.554e9 / 1e15, "PFLOP/s", 1e-3),
        "roof": (0.989, "PFLOP/s", 1e-9),
        "idle": (0.989 - 2_483.0 * 0.7 * 2 * 70.554e9 / 1e15, "PFLOP/s", 1e-3),
        # course: batch 64 gives a user 51.98 ms a token, 19.2 tok/s, under the brief's 30; the largest batch that
        # meets it, L70_B30 = 28, makes 844.2 tok/s; ceil(1.3 x 140,000 / 844.2) = 216 replicas, 432 H100s
        "user64": (1 / L70_TPOT, "", 1e-4),
        "b_course": (L70_B30, "", 0),
        "x_course": (L70_X30, "", 1e-4),
        "replicas_course": (math.ceil(1.3 * 140_000 / L70_X30), "", 0),
        "gpus_course": (432, "", 0),
        "cost_course": (432 * 730 * 2.5, "USD", 1e-9),
        # TensorRT-LLM's measured row T10 (measurements.csv): 4,390.53 tok/s from 2 x H100 on the 70B FP8
        "row_measured": (4_390.53, "", 1e-9),
    },
    "prefill_pool": {  # seed 002: 99 PFLOP/s, about 200 H100s; half the tokens: 49.39 / 0.4945 = 99.9 -> 100
        "rate": (98.78, "PFLOP/s", 1e-3),
        "gpus": (200, "", 0),
        "gpus_cached": (100, "", 0),
        "per_gpu": (0.4945, "PFLOP/s", 1e-6),
        # the FP8 model at the FP8 peak: 1,979 x 0.5 = 0.9895 PFLOP/s; 98.7756 / 0.9895 = 99.8 -> 100; half: 50
        "per_gpu8": (0.9895, "PFLOP/s", 1e-9),
        "gpus_fp8": (100, "", 0),
        "gpus_cached8": (50, "", 0),
    },
    "huge_fleet": {  # seed 004: 1,250 tokens, 21.7 M tok/s, 21,700 / 10,900 / 5,400 GPUs (hand: 21,702 / 10,851 / 5,426)
        "tok": (1_250, "", 0),
        "rps": (17_361.1, "", 1e-5),
        "demand": (21.7e6, "", 1e-3),
        "g1000": (21_702, "", 0),
        "g2000": (10_851, "", 0),
        "g4000": (5_426, "", 0),
        # on the peak: 21,701,389 x 3 = 65,104,167 tok/s, x 1.3 headroom / 2,000 = 42,317.7 -> 42,318 GPUs
        "demand_peak": (65_104_166.7, "", 1e-8),
        "g_peak": (42_318, "", 0),
    },
    "moe": {  # seed 001: 61 GB of weights, about 2.9 ms at batch 1, about 26 ms at 32; 1 - (120/128)^32 = 0.8732
        "w": (61.06, "GB", 1e-6),
        "t1": (2.9, "ms", 0.03),
        "t32": (26, "ms", 0.01),
        "t8": (6.977, "ms", 1e-3),
        "phi": (87.32, "", 1e-3),
    },
    "pushback": {  # seed 004's two figures and their corrections (see kv_limit and single_stream)
        "mha_seq": (10.48576, "GB", 1e-6),
        "gqa_seq": (1.31072, "GB", 1e-6),
        "b_gqa": (15, "", 0),
        "b_mha": (1, "", 0),
        "r1": (23.93, "", 1e-3),
        "r2": (47.86, "", 1e-3),
    },
    "spec_expected": {  # 1 + .8 + .64 + .512 + .4096; SPEC_PLAIN, SPEC_DRAFT below
        "tau": (3.3616, "", 1e-12),
        "plain": (SPEC_PLAIN * 1e3, "ms", 1e-6),
        "plain_comm": (_allreduces(80, 1) * 1e3, "ms", 1e-6),
        "over": (OVERHEAD * 1e3, "ms", 1e-12),
        "verify": (SPEC_VERIFY * 1e3, "ms", 1e-6),
        "draft": (SPEC_DRAFT * 1e3, "ms", 1e-6),
        "cycle": ((SPEC_VERIFY + 4 * SPEC_DRAFT) * 1e3, "ms", 1e-6),
        "draft_over": (DRAFT_MODEL_OVER * 1e3, "ms", 1e-12),
        "speedup": (
            3.3616 * SPEC_PLAIN / (SPEC_VERIFY + 4 * SPEC_DRAFT),
            "",
            1e-6,
        ),  # 2.199 (1.934 at 1 ms a draft step)
    },
    "spec_crossover": {  # see SPEC_X and the batch-200 times below
        "tau": (2.7731, "", 1e-12),
        "estimate": (SPEC_X, "", 1e-6),
        "cross": (math.ceil(SPEC_X), "", 0),
        "speedup": (2.7731 * SPEC_P200 / (SPEC_V200 + 4 * SPEC_D200), "", 1e-6),  # 0.8664 (0.7804 at 1 ms a head step)
        "draft_over": (HEAD_OVER * 1e3, "ms", 1e-12),
        "fit_long": (189, "", 0),
    },
    "spec_mtp": {  # see MTP_* below
        "tau": (1.85, "", 1e-12),
        "w_plain1": (37.0, "GB", 1e-9),
        "w_ver1": (56.8125, "GB", 1e-6),
        "s1": (1.85 * MTP_PLAIN1 / (MTP_VER1 + MTP_MTP1), "", 1e-6),  # 1.552 (1.307 at 1 ms an MTP step)
        "fixed1": (_ds(61, 1) * 1e3, "ms", 1e-6),
        "s256": (1.85 * MTP_PLAIN256 / (MTP_VER256 + MTP_MTP256), "", 1e-6),  # 1.729 (1.692 at 1 ms an MTP step)
    },
    "spec_fleet": {  # 70B FP8 on 2 x H100, 2,000 + 300, admitted on the KV blocks in use (the target's 327,680 B a
        # token; with the 8B draft's 131,072 B more, beside 78.584 GB of weights; with the head's 4,096 B, beside
        # 71.954 GB): 103, 65 and 100 (at the final 2,304 tokens, a block's worth: 97, 61 and 94)
        "b_plain": (_admitted(0.9 * 160e9 - 70.554e9, 327_680, 2_000, 300), "", 0),
        "b_draft": (_admitted(0.9 * 160e9 - 78.584e9, 458_752, 2_000, 300), "", 0),
        "b_head": (_admitted(0.9 * 160e9 - 71.954e9, 331_776, 2_000, 300), "", 0),
        "w_draft": (8.03, "GB", 1e-9),
        "w_head": (1.4, "GB", 1e-9),
        "kv_draft": (2_304 * 131_072 / 1e6, "MB", 1e-9),
        "kv_head": (2_304 * 4_096 / 1e6, "MB", 1e-9),
    },
    "gqa70_32k": {  # 32,768 x 327,680 B = 10.737 GB; (160 - 140) / 10.737 = 1.86 -> 1
        "kv": (10.73741824, "GB", 1e-9),
        "b_gqa": (1, "", 0),
    },
    "gqa70_kv8": {"kv": (5.36870912, "GB", 1e-9), "b_gqa": (3, "", 0)},  # 20 / 5.369 = 3.7 -> 3
    "billion_long": {  # 2,500 tokens; 17,361.1 x 2,500 x 3 = 130,208,333 tok/s; x 1.3 / 2,000 = 84,635.4 -> 84,636
        "tok": (2_500, "", 0),
        "demand_peak": (130_208_333.3, "", 1e-9),
        "g_peak": (84_636, "", 0),
    },
    "tp8_not_8x": {  # 70B FP8 on 8 x B200: 70.554 GB / (8 x 0.7 x 7.7 TB/s); the engines' one-shot all-reduce of
        # 4 x 8,192 x 2 B on NVLink 5: 3.5 + 1.23 us + 7 x 65,536 B / (0.8 x 900 GB/s); two per layer, 80 layers; the
        # layers' floor 80 x 23 us
        "w8": (70.554e9 / (8 * 0.7 * 7.7e12) * 1e3, "ms", 1e-9),
        "ar": (3.5 + 1.23 + 7 * 65_536 / (0.8 * 900e9) * 1e6, "us", 1e-9),
        "c8": (160 * (3.5e-6 + 1.23e-6 + 7 * 65_536 / (0.8 * 900e9)) * 1e3, "ms", 1e-9),
        "o": (1.0, "ms", 1e-12),
        "f8": (80 * 23e-3, "ms", 1e-9),
    },
    "nvlink_or_pcie": {  # 16 x 8,192 x 2 B on 4 GPUs: NVLink 4 by the engines' one-shot, 3.5 + 0.8 us + 3 x the bytes
        # (the two-shot: 2 x 4.3 us + 6/4 of them, more); PCIe 5 by the ring, 10 + 6 x 2 us + 6/4 of the bytes
        "ar_s": (3.5 + 0.8 + 3 * 262_144 / (0.8 * 450e9) * 1e6, "us", 1e-9),
        "ar_p": (10 + 6 * 2 + 6 / 4 * 262_144 / (0.8 * 63e9) * 1e6, "us", 1e-9),
        "w_s": (70.554e9 / (4 * 0.7 * 3.35e12) * 1e3, "ms", 1e-9),
        "w_p": (70.554e9 / (4 * 0.7 * 2.0e12) * 1e3, "ms", 1e-9),
    },
    # --- the 2026 staples (08_staples.md) with the book's variant only
    "pr_gptoss": {  # MXFP4: 4 bits + an 8-bit scale per 32 = 4.25; the model card's checkpoint: 60.8 GiB = 65.3 GB
        "bits": (4.25, "", 0),
        "w": (60.8 * 2**30 / 1e9, "GB", 0.01),
    },
    "c_pp_tp": {"ib": (50, "GB/s", 1e-12), "nv": (450, "GB/s", 1e-12)},  # NDR 400 Gb/s; NVLink 4 900 GB/s both ways
    "c_dp_attention": {  # DeepSeek-V3: 576 values x 2 B x 61 layers = 70,272 B a token x 2,400 tokens, once (DP) or x 8
        "kv_dp": (70_272 * 2_400 / 1e6, "MB", 1e-9),
        "kv_tp": (8 * 70_272 * 2_400 / 1e6, "MB", 1e-9),
    },
    "c_cp": {  # Llama 4 Scout: 12 of 48 layers full attention, 36 chunked at 8,192; 2 x 8 KV heads x 128 x 2 B a layer
        "kv": ((12 * 1_048_576 + 36 * 8_192) * 2 * 8 * 128 * 2 / 1e9, "GB", 1e-9),
        "tokens": (1_048_576, "", 0),
    },
    "c_chunk": {"chunk": (8_192, "", 0), "chunks": (4, "", 0)},  # ceil(32,000 / 8,192) = 4
    "c_structured": {"batch": (64, "", 0)},  # the given batch
}


def _value(v: object, unit: str) -> float:
    if isinstance(v, pint.Quantity):
        assert unit, f"{v} has a unit; the expectation is a plain number"
        return float(v.to(unit).m)
    assert not unit, f"{v!r} is a plain number; expected {unit}"
    return float(v)


@pytest.mark.parametrize("qid", list(EXPECTED))
def test_worked_answer_reproduces(qid: str) -> None:
    """Every listed figure of the question's worked answer matches the seed or hand arithmetic."""
    got = QUESTIONS[qid].numbers()
    for name, (value, unit, tol) in EXPECTED[qid].items():
        x = _value(got[name], unit)
        if tol == 0:
            assert x == value, f"{qid}.{name}: {x} != {value}"
        else:
            assert math.isclose(x, value, rel_tol=tol), f"{qid}.{name}: {x} vs {value}"


#: Follow-ups of the chains checked by their `moves` (tests/test_interview_practice.py) rather than by figures here:
#: the course's fleet of roofline_fleet at other givens, and huge_fleet's at a per-GPU rate the course computes.
BY_MOVES = {"fleet350_triple", "fleet350_bf16", "billion_70b"}


def test_every_question_has_expectations() -> None:
    """No question in the bank goes unchecked: those with the book's variant only have figures here; those with
    variants are rendered under 40 variants and their chains' moves checked (tests/test_interview_practice.py; the
    simulated design questions' variants in tests/test_interview_variants_design.py), and
    the first questions of the bank, which drew variants later, keep their book variant's figures here too."""
    single = {q.id for q in QUESTIONS.values() if not q.varies}
    assert set(EXPECTED) <= set(QUESTIONS) and single - BY_MOVES <= set(EXPECTED)


def test_bank_size_and_levels() -> None:
    """At least 20 questions, at least four at each level."""
    assert len(QUESTIONS) >= 20
    for level in LEVELS:
        assert sum(q.level == level for q in QUESTIONS.values()) >= 4, level


@pytest.mark.parametrize("qid", list(QUESTIONS))
def test_templates_use_only_computed_names(qid: str) -> None:
    """Every {name} in the texts is a number the worked function computes, and every part renders."""
    q = BANK[qid]  # the numbers computed once per variant in the process (tests/interview_bank.py), for both calls
    known = set(q.numbers()) | set(CATALOG_NAMES)
    assert q.fields() <= known, q.fields() - known
    parts = q.markdown()
    assert len({parts["weak"], parts["good"], parts["strong"]}) == 3
    assert all(parts[p].strip() for p in parts)


def test_bank_covers_the_issue_topics() -> None:
    """The bank asks how many GPUs and why long context costs more."""
    titles = " ".join(q.title.lower() + " " + q.prompt.lower() for q in QUESTIONS.values())
    assert "how many gpus" in titles and "long context" in titles


def test_dollars_are_escaped_for_myst() -> None:
    """Dollar amounts render as \\$ so MyST does not read them as math."""
    assert num(Q_(0.3166, "USD"), 2) == "\\$0.32"
    text = QUESTIONS["cost_per_million"].render("strong")
    assert "\\$0.32" in text


def test_unknown_question_says_what_exists() -> None:
    """An unknown id names the known ones."""
    with pytest.raises(UnknownNameError, match="kv_per_token"):
        QUESTIONS["nope"]


def test_bad_level_and_part_are_refused() -> None:
    """A question with an unknown level, or an unknown part to render, is refused with a message."""
    with pytest.raises(InputError, match="level"):
        Question("x", "L9", "t", "t", "p", "w", "g", "s", "a", dict)
    with pytest.raises(InputError, match="part"):
        QUESTIONS["traffic"].render("middling")


# --- the sheet of numbers ---------------------------------------------------------------------------------------
def test_sheet_gpu_figures_match_the_datasheets() -> None:
    """H100/H200/B200 memory, bandwidth and FLOP/s as in the reference datasheet table (reference/gpus.md)."""
    rows = {r[0]: r for r in sheet()["gpu_rows"]}
    expected = {"H100 SXM": (80, 3.35, 989, 1979), "H200 SXM": (141, 4.8, 989, 1979), "B200": (180, 7.7, 2250, 4500)}
    for name, (mem, bw, bf16, fp8) in expected.items():
        _, m, b, f, f8, *_ = rows[name]
        assert m == Q_(mem, "GB") and b.to("TB/s").m == pytest.approx(bw)
        assert f.to("TFLOP/s").m == pytest.approx(bf16) and f8.to("TFLOP/s").m == pytest.approx(fp8)


def test_sheet_full_gpu_step() -> None:
    """0.9 x 80 GB / 3.35 TB/s = 21.49 ms (seed 000: about 21 ms); H200 26.44 ms; B200 21.04 ms."""
    s = sheet()
    assert s["h100_step"].to("ms").m == pytest.approx(21.4925, rel=1e-4)
    assert s["h100_step_rate"] == pytest.approx(46.53, rel=1e-3)
    steps = {r[0]: r[5].to("ms").m for r in s["gpu_rows"]}
    assert steps["H200 SXM"] == pytest.approx(26.4375, rel=1e-4) and steps["B200"] == pytest.approx(21.039, rel=1e-4)


def test_sheet_kv_per_token_rows() -> None:
    """KV per token, by hand: 2 x L x H_kv x d x 2 B (DeepSeek-V3: 61 x (512 + 64) x 2 B)."""
    rows = {r[0]: r[2].to("B").m for r in sheet()["kv_rows"]}
    assert rows["Llama-3.1-8B"] == 2 * 32 * 8 * 128 * 2
    assert rows["Qwen2.5-72B"] == 327_680
    assert rows["Llama-3.1-405B"] == 2 * 126 * 8 * 128 * 2
    assert rows["Qwen3-235B-A22B"] == 2 * 94 * 4 * 128 * 2
    assert rows["DeepSeek-V3"] == 61 * (512 + 64) * 2
    kv4k = {r[0]: r[3].to("GB").m for r in sheet()["kv_rows"]}
    assert kv4k["Qwen2.5-72B"] == pytest.approx(327_680 * 4_096 / 1e9)


def test_sheet_rules_of_thumb() -> None:
    """2 FLOPs/param/token, weights per precision, Little's law and cost examples, by hand."""
    s = sheet()
    assert s["flops_70b"].to("GFLOP").m == pytest.approx(140)  # 2 x 70e9
    assert s["prefill_70b_2k"].to("PFLOP").m == pytest.approx(0.28)  # 2 x 70e9 x 2,000
    w = {r[0]: r for r in s["weight_rows"]}
    assert w["bf16"][2].to("GB").m == pytest.approx(16.06) and w["fp8"][3].to("GB").m == pytest.approx(70.554)
    assert w["int4"][4].to("GB").m == pytest.approx(202.9265)
    assert s["little_example"] == pytest.approx(150)  # 10/s x 15 s
    assert s["cost_example"].to("USD").m == pytest.approx(2.5e6 / (1_000 * 3_600))  # $2.50/h at 1,000 tok/s
    assert s["month_cost"].to("USD").m == pytest.approx(2.5 * 730)
    assert s["ridge"].to("FLOP/B").m == pytest.approx(989 / 3.35)
    assert s["w8_read"].to("ms").m == pytest.approx(16.06 / 3.35, rel=1e-6)


def test_chapter_asks_every_question_in_the_bank() -> None:
    """book/14_interview_questions.md has a heading and the three glued parts for each question, in bank order."""
    from pathlib import Path

    text = (Path(__file__).parent.parent / "book" / "14_interview_questions.md").read_text(encoding="utf-8")
    titles = [line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("### Question ")]
    # the chains' questions (llmcourse/data/interview/06_chains.md) are rendered together, chain by chain; the operations
    # questions (07_operations.md) in their chains and, outside one, in their own section; the 2026 staples'
    # (08_staples.md) in their own section, by topic and chain
    together = {
        "llmcourse.interview.worked_chains",
        "llmcourse.interview.worked_operations",
        "llmcourse.interview.worked_designs",
        "llmcourse.interview.worked_staples",
    }
    chained = {q.id for q in QUESTIONS.values() if q.worked.__module__ in together}
    by_level = [q for level in LEVELS for q in QUESTIONS.values() if q.level == level and q.id not in chained]
    assert titles == [q.title for q in by_level]
    assert "```{glue:md} iq_chains" in text and "for cid, qs in QUESTIONS.chains().items()" in text
    assert "```{glue:md} iq_operations" in text and "```{glue:md} iq_staples" in text
    for q in by_level:
        for part in ("prompt", "levels", "answer"):
            assert f"```{{glue:md}} iq_{q.id}_{part}" in text, (q.id, part)


def test_sheet_gives_the_course_figures_beside_the_datasheet() -> None:
    """At 70% of 3.35 TB/s: 72 GB / 2.345 TB/s = 30.70 ms (32.6 tok/s); 16.06 GB / 2.345 TB/s = 6.849 ms;
    ridge 494.5 / 2.345 = 210.9 FLOP/B (datasheet 989 / 3.35 = 295.2)."""
    s = sheet()
    assert s["h100_step_course"].to("ms").m == pytest.approx(72 / 2.345, rel=1e-9)
    assert s["h100_step_course_rate"] == pytest.approx(2_345 / 72, rel=1e-9)
    assert s["w8_read_course"].to("ms").m == pytest.approx(16.06 / 2.345, rel=1e-6)
    assert s["ridge_course"].to("FLOP/B").m == pytest.approx(494.5 / 2.345, rel=1e-9)
    steps = {r[0]: r[8].to("ms").m for r in s["gpu_rows"]}
    assert steps["H200 SXM"] == pytest.approx(0.9 * 141 / (4.8 * 0.7), rel=1e-9)


def test_the_162_h100_answer_gives_the_course_figure_and_why() -> None:
    """The capacity-planning answer states the source's 162 H100s under its preset, the course's 432 beside it (the
    engine's steps at the largest batch that gives each user 30 tok/s, by hand in EXPECTED: batch 28, 216 replicas),
    and the reason: prefill needs about 1.2 PFLOP/s per replica where decode leaves about 0.74 idle at BF16, a prompt
    put whole into a step makes that step compute-bound (at batch 64 a user gets 19.2 tok/s), and the measured row
    (4,390 tok/s) is what the prompts-charged replica predicts, not the prefill-free one."""
    for part in ("strong", "answer"):
        text = QUESTIONS["roofline_fleet"].render(part)
        assert "162" in text and "432 H100s" in text and "302" not in text
        assert "1.2 PFLOP/s" in text and "0.74 PFLOP/s" in text and "compute-bound" in text
        assert "4,390" in text and "19.2 tokens/s" in text
    assert "432 H100s" in QUESTIONS["prefill_pool"].render("answer") and "4,390" in QUESTIONS["prefill_pool"].render(
        "answer"
    )


def test_source_figures_are_shown_with_the_courses_where_they_differ() -> None:
    """$0.32/M (envelope) beside $1.19/M (course, the engine's steps with the prompts); 10 GPUs beside 48; 0.29 s (BF16
    matmuls) beside 0.16 s (FP8 matmuls, the attention term and the all-reduces; figures by hand in EXPECTED)."""
    cost = QUESTIONS["cost_per_million"].render("answer")
    assert "\\$0.317" in cost and "\\$1.19" in cost
    scale = QUESTIONS["scale_traffic"].render("answer")
    assert "10 GPUs" in scale and "48 GPUs" in scale
    ttft = QUESTIONS["prefill_time"].render("answer")
    assert "0.294 s" in ttft and "0.16 s" in ttft


# --- the bank as data -----------------------------------------------------------------------------------------------
_ONE = """# a note for the reader of the file

## q1
level: L4 · topic: memory · source: 000, 004 · kind: concept

### A title

#### prompt
Two lines of
one paragraph: {x}.

A second paragraph.

#### weak
w {x:2}

#### good
g {H100.bandwidth}

#### strong
s {x.m}

#### answer
a {{literal}} {x}
"""


def _load(text: str = _ONE, worked: dict | None = None) -> list[Question]:
    from llmcourse.interview import load_questions

    return load_questions({"one.md": text}, worked if worked is not None else {"q1": lambda: {"x": 2.5}})


def test_data_file_is_parsed_as_markdown() -> None:
    """A paragraph's lines join with a space, paragraphs keep a blank line, sources join with 'and', braces escape."""
    [q] = _load()
    assert (q.id, q.level, q.topic, q.title) == ("q1", "L4", "memory", "A title")
    assert q.source == "the back-of-the-envelope method and the system-design lesson"
    assert q.prompt == "Two lines of one paragraph: {x}.\n\nA second paragraph."
    assert q.render("prompt") == "Two lines of one paragraph: 2.5.\n\nA second paragraph."
    assert q.render("answer") == "a {literal} 2.5" and q.render("good") == "g 3.35 TB/s"


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (("#### weak\nw {x:2}\n", ""), "no '#### weak'"),
        (("#### good\n", "#### weak\n"), "each once"),
        (("level: L4", "level: L9"), "level must be one of"),
        (("source: 000, 004", "source: 003"), "unknown source '003'"),
        (("source: 000, 004", "source: 000 · cost: 1"), "level: L4"),
        (("{x:2}", "{x:.2f}"), "digit count"),
        (("{x.m}", "{x.units}"), "no attribute but .m"),
        (("{H100.bandwidth}", "{H100.colour}"), "H100 SXM has no 'colour'"),
        (("{x}.", "{x."), "prompt: expected '}'"),
        (("### A title\n", ""), "title"),
    ],
)
def test_malformed_data_is_refused_naming_the_question(change: tuple[str, str], words: str) -> None:
    """A missing or repeated part, an unknown level or source, a bad field: InputError naming the question."""
    old, new = change
    assert old in _ONE
    with pytest.raises(InputError, match="q1") as info:
        _load(_ONE.replace(old, new, 1))
    assert words in str(info.value), str(info.value)


def test_every_question_needs_its_worked_function_and_vice_versa() -> None:
    """A data question without a worked() function, or a function without its question, is refused by name."""
    with pytest.raises(InputError, match="'q1' has no worked"):
        _load(worked={"other": dict})
    with pytest.raises(InputError, match="'q2' has no question"):
        _load(worked={"q1": dict, "q2": dict})


def test_a_field_the_worked_function_does_not_return_is_named() -> None:
    """A template name that is neither a returned number nor a catalog entry is refused when the numbers are computed."""
    [q] = _load(worked={"q1": lambda: {"y": 1}})
    with pytest.raises(InputError, match=r"question 'q1': template field \{x\}"):
        q.markdown()


def test_the_bank_is_read_from_the_packaged_data_files() -> None:
    """Every question comes from llmcourse/data/interview/*.md, and pyproject ships those files."""
    from importlib import resources

    folder = resources.files("llmcourse.data").joinpath("interview")
    text = "".join(f.read_text(encoding="utf-8") for f in folder.iterdir() if f.name.endswith(".md"))
    ids = [line[3:] for line in text.splitlines() if line.startswith("## ")]
    assert sorted(ids) == sorted(QUESTIONS)
    from pathlib import Path

    pyproject = (Path(__file__).parent.parent / "pyproject.toml").read_text(encoding="utf-8")
    assert '"interview/*.md"' in pyproject


# --- the fixes of issue 37 ------------------------------------------------------------------------------------------
def test_quantization_is_about_2x_at_batch_1_and_fades_at_batch_64() -> None:
    """W4A16 by the course's method: about 2x at batch 1 (the cache and the fixed step cost do not shrink), less at
    batch 64 (the 64 caches, read at the usual share whatever the weights' format, dominate: 64 x 2,304 x 131,072 B
    = 19.3 GB against 4.14 GB of 4-bit weights); served with its prompts, each whole in one step whose matmuls W4A16
    runs at BF16 (as long as BF16's: 2,112 tokens' FLOPs) while the other steps decode alone (1.3x faster), W4A16
    keeps less than its 1.3x, and FP8 is faster than both (the same FLOPs at twice the peak); and the 3.7x claim gone
    from the text."""
    n = QUESTIONS["quantization"].numbers()
    assert 1.5 < n["speedup1"] < 2.5 and 1 < n["speedup64"] < n["speedup1"]
    assert n["sfp8_64"] < n["sw4a16_64"] < n["sbf16_64"]
    assert 1 < n["served4"] < n["speedup64"]
    assert n["served4"] == pytest.approx((n["sbf16_64"] / n["sw4a16_64"]).to("").m)
    text = QUESTIONS["quantization"].render("strong")
    assert "3.7" not in text and "BF16" in text and "FP8" in text


def test_staff_fleets_are_sized_on_the_peak() -> None:
    """huge_fleet's answer and littles_law size on the peak with headroom, and say the mean alone is not enough."""
    strong = QUESTIONS["huge_fleet"].render("strong")
    assert "42,318 GPUs" in strong and "daily mean" in strong and "whose 2,000 tokens/s" in strong
    assert "42,318" in QUESTIONS["littles_law"].render("prompt")


def test_h200_states_the_prices_and_the_break_even() -> None:
    """The H200 answer states the price ratio and the H200 price that breaks even ($2.97/h, EXPECTED by hand)."""
    text = QUESTIONS["h200"].render("strong")
    assert "\\$3.50/h" in text and "\\$2.50/h" in text and "\\$2.97/h" in text


def test_prefill_is_counted_at_the_fp8_peak_for_the_fp8_model() -> None:
    """roofline_fleet and prefill_pool count the FP8 model's prefill at the FP8 peak (1.979 PFLOP/s a replica:
    1.979 - 0.245 = 1.73 PFLOP/s idle) beside the capacity method's BF16."""
    assert QUESTIONS["roofline_fleet"].numbers()["idle8"].to("PFLOP/s").m == pytest.approx(1.979 - 1.2263 / 5, rel=1e-3)
    assert "100 H100s" in QUESTIONS["prefill_pool"].render("strong")


def test_the_fleet_chain_keeps_the_replica_that_meets_the_speed_per_user() -> None:
    """roofline_fleet's brief asks 30 tokens/s per user, and its answer runs the batch that gives it; the chain's next
    steps (traffic triples, no FP8) keep that promise instead of the batch of 64 the capacity method ran, which gives
    each user less once the prompts ride in the steps."""
    first = QUESTIONS["roofline_fleet"].numbers()
    triple, bf16 = (QUESTIONS[q].numbers() for q in ("fleet350_triple", "fleet350_bf16"))
    assert first["user64"] < 30 <= first["user_course"]
    assert triple["batch"] == first["b_course"] and triple["user"] >= 30
    assert triple["x_course"] == pytest.approx(first["x_course"])
    # the same replica at three times the demand: about three times the GPUs (whole replicas of two GPUs)
    assert 3 * first["gpus_course"] - 2 <= triple["gpus_course"] <= 3 * first["gpus_course"] + 2
    # BF16 pairs hold a few conversations (as many as fit); the four-GPU replica keeps the promise
    assert bf16["batch"] < first["b_course"] and bf16["user4"] >= 30
    assert bf16["meets"] == ("meets" if bf16["user"] >= 30 else "misses")
    assert bf16["gpus_tp4"] < bf16["gpus_course"]
