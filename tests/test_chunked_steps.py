"""An engine that mixes prompts into its decode steps, as vLLM and TensorRT-LLM run it at their default token budget:
a waiting prompt goes whole (or in a few chunks) into a step of its own, the other steps decode alone (formulas
``prompt_step_share`` and ``chunked_mean_step``), not a little of every prompt in every step."""

from __future__ import annotations

import itertools
import math
import statistics

import pytest

import llmcourse as lc
from llmcourse.formulas import FORMULAS as F
from llmcourse.replica.chunked import chunked_steps
from llmcourse.simulator import simulate


def test_prompt_step_share_by_hand() -> None:
    """32 requests with 300-token answers let in 32 prompts over an answer's length; each fits one step: 32 / 300 of
    the steps carry one. Three chunks each for 150 requests would need 450 of 300 steps: every step carries chunks."""
    assert F["prompt_step_share"].value(chunks_per_prompt=1, batch=32, answer_tokens=300) == pytest.approx(32 / 300)
    assert F["prompt_step_share"].value(chunks_per_prompt=3, batch=150, answer_tokens=300) == 1
    mean = F["chunked_mean_step"].value(prompt_step_share=0.1, chunk_step_time=0.070, step_time=0.012)
    assert mean == pytest.approx(0.1 * 0.070 + 0.9 * 0.012)


def test_a_lone_request_sees_no_other_prompt() -> None:
    """At a batch of 1 no other request's prompt comes in while the request decodes: its time per token is the step
    that decodes alone, the same with a 2,000-token prompt as with a 100-token one (its own prompt is its first
    token); the replica's rate still pays for each request's prompt, so a longer prompt lowers it."""
    long, short = (
        lc.replica("Llama-3.1-8B", "H100 SXM", batch=1, prompt_tokens=p, answer_tokens=300) for p in (2_000, 100)
    )
    assert long.tpot.to("ms").m == pytest.approx(short.tpot.to("ms").m, rel=0.02)  # the KV read differs a little
    assert long.throughput < short.throughput


@pytest.mark.parametrize(
    ("model", "n_gpus", "batch", "weights"),
    [("Llama-3.1-8B", 1, 32, None), ("Llama-3.1-8B", 1, 128, None), ("Llama-3.1-70B", 2, 39, "fp8"),
     ("Qwen3-30B-A3B", 1, 32, None)],
)  # fmt: skip
def test_the_closed_form_follows_the_event_simulation(model: str, n_gpus: int, batch: int, weights: str | None) -> None:
    """The replica's closed form against the discrete-event simulation, which schedules every iteration as the engine
    does (its 8,192-token budget, each prompt's real chunks beside the running requests' decode tokens): a closed
    loop of ``batch`` clients, 2,000-token prompts and 300-token answers, 3,000 requests. The mean time per token and
    the tokens per second agree within 8% (measured, the worst 7.5%: 18.5 against 18.0 ms at 32 users of Llama 3.1 8B; 50.3 against
    46.8 ms at 128; 43.1 against 40.3 ms for the 70B in FP8 on two H100s; 28.4 against 28.5 ms for Qwen3-30B-A3B).
    The even spread this replaced gave 13.5 ms for the first, 25% under the simulation."""
    kw = {"weight_bytes": weights} if weights else {}
    rep = lc.replica(
        model, "H100 SXM", tensor_parallel=n_gpus, batch=batch, prompt_tokens=2_000, answer_tokens=300, **kw
    )
    sim = simulate(
        model, "H100 SXM", concurrency=batch, prompt_tokens=2_000, answer_tokens=300, requests=3_000,
        prompt_cv=0, answer_cv=0, n_gpus=n_gpus, **kw,
    )  # fmt: skip
    assert rep.tpot.to("s").m == pytest.approx(statistics.fmean(sim.tpot_s), rel=0.08)
    assert rep.throughput.to("1/s").m == pytest.approx(sim.throughput.to("1/s").m, rel=0.08)


def test_mixed_steps_and_separate_prefill_batches_come_close() -> None:
    """The same prompts' FLOPs, run whole in a step beside the decode tokens (vLLM) or in prefill batches of their own
    that pause decoding (SGLang's default): at 32 users of Llama 3.1 8B on an H100 neither hides the prompts behind the
    weight reads, so the two write within 10% of each other's tokens."""
    kw = dict(prompt_tokens=2_000, answer_tokens=300, batch=32)
    v = lc.replica("Llama-3.1-8B", "H100 SXM", engine="vLLM", **kw).throughput
    s = lc.replica("Llama-3.1-8B", "H100 SXM", engine="SGLang", **kw).throughput
    assert 0.9 < (v / s).to("").m < 1.1


def _enumerated(data_parallel: int, s: float, sizes: list[float]) -> tuple[list[float], list[float], float]:
    """By enumeration, independent of the formulas: j of D attention groups have a chunk (binomial, given j >= 1), each
    at a place in its prompt of ``sizes`` chunks drawn alike and apart. For each chunk (by rank in size order), how
    often it is the step's largest, and the step's total tokens in those steps (each over all chunk steps); and
    E[largest chunk]."""
    k, none = len(sizes), (1 - s) ** data_parallel
    order = sorted(range(k), key=lambda i: sizes[i])
    rank = {c: r for r, c in enumerate(order)}
    p_max, tok_max, e_max = [0.0] * k, [0.0] * k, 0.0
    for j in range(1, data_parallel + 1):
        pj = math.comb(data_parallel, j) * s**j * (1 - s) ** (data_parallel - j) / (1 - none)
        for draw in itertools.product(range(k), repeat=j):
            p = pj / k**j
            top = max(rank[c] for c in draw)
            p_max[top] += p
            tok_max[top] += p * sum(sizes[c] for c in draw)
            e_max += p * sizes[order[top]]
    return p_max, tok_max, e_max


@pytest.mark.parametrize(
    ("data_parallel", "sizes", "batch", "answer"),
    [(8, [8_004.0, 188.0], 512, 1_024), (4, [8_004.0, 188.0, 3_000.0], 40, 100), (3, [8_004.0, 188.0], 600, 200),
     (4, [8_004.0, 8_004.0, 188.0], 40, 100), (8, [2_000.0], 64, 1_024)],
)  # fmt: skip
def test_the_busiest_groups_chunk_by_enumeration(
    data_parallel: int, sizes: list[float], batch: int, answer: int
) -> None:
    """With attention data parallel each group prefills its own prompt, at its own place in it: a step waits for the
    group with the costliest chunk. The formulas dp_busiest_chunk_within and dp_chunk_tokens_within against an
    enumeration of every count of groups with a chunk and every place of theirs (the third case: every group's steps
    carry a chunk, s = 1; then two chunks alike, and a prompt of one chunk)."""
    chunks = len(sizes)
    s = min(1.0, chunks * batch / (data_parallel * answer))
    p_max, tok_max, e_max = _enumerated(data_parallel, s, sizes)
    ordered = sorted(sizes)
    given = dict(chunks_per_prompt=chunks, batch=batch, answer_tokens=answer, data_parallel=data_parallel)
    for i in range(chunks + 1):
        within = F["dp_busiest_chunk_within"].value(chunks_within=i, **given)
        tokens = F["dp_chunk_tokens_within"].value(chunks_within=i, tokens_within=sum(ordered[:i]), **given)
        assert within == pytest.approx(sum(p_max[:i]), abs=1e-12)
        assert tokens == pytest.approx(sum(tok_max[:i]), rel=1e-9, abs=1e-9)

    # the chunk steps chunked_steps builds, with a toy step: its time the busiest group's tokens (the step's tokens
    # over its groups, a chunk costing its tokens), the step's tokens carried beside
    def mixed(n, c, f, r, groups=1.0):
        return (c / groups, (c, 0.0), (0.0, 0.0))

    cs = chunked_steps(mixed, batch, [(t, 0.0, 0.0) for t in sizes], answer, data_parallel)
    if cs is None:  # every group's prompts fill its steps: one steady step
        assert chunks * batch >= data_parallel * answer
        return
    assert math.fsum(cs.weights) == pytest.approx(1.0)
    assert cs.chunk_time == pytest.approx(e_max)  # the mean busiest chunk, not the mean chunk
    g = F["dp_chunk_groups"].value(chunks_per_prompt=chunks, batch=batch, answer_tokens=answer,
                                   prompt_step_share=1 - (1 - s) ** data_parallel)  # fmt: skip
    step_tokens = math.fsum(w * c[1][0] for w, c in zip(cs.weights, cs.chunks, strict=True))
    assert step_tokens == pytest.approx(g * sum(sizes) / chunks)  # every group's chunks, g of them on average
