"""The engines' schedulers in the replica model (issue 34): the engine table, admission on KV blocks in use, the
mixed step, the queue beyond the engine's cap. Expected values are worked out by hand in the comments."""

from __future__ import annotations

import math

import pytest

from llmcourse.assumptions import resolve
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.formulas import FORMULAS as F
from llmcourse.replica import Deployment, replica
from llmcourse.replica.memory import admitted_batch_si
from llmcourse.replica.scheduler import scheduler_of
from llmcourse.validation.prediction import queued_wait_s


def test_engine_defaults_as_the_engines_set_them():
    # vLLM EngineArgs.get_batch_defaults: >= 70 GiB and not an A100 -> 8192 tokens, 1024 seqs; else 2048, 256
    assert (scheduler_of("vLLM", "H100 SXM").token_budget, scheduler_of("vLLM", "H100 SXM").max_running) == (8192, 1024)
    assert (scheduler_of("vLLM", "A100 SXM 80GB").token_budget, scheduler_of("vLLM", "L4").max_running) == (2048, 256)
    # SGLang ServerArgs: chunked_prefill_size 2048 under 35 GiB (L4: 24 GB), 8192 under 160 GiB, 16384 above
    assert [scheduler_of("SGLang", g).token_budget for g in ("L4", "H200 SXM", "B300")] == [2048, 8192, 16384]
    assert scheduler_of("SGLang", "H100 SXM").mixed_prefill is False
    assert scheduler_of("SGLang", "H100 SXM", mixed_prefill=True).mixed_prefill is True
    # TensorRT-LLM llm_args: max_num_tokens 8192, max_batch_size 2048
    t = scheduler_of("trtllm", "B200")
    assert (t.engine, t.token_budget, t.max_running, t.mixed_prefill) == ("TensorRT-LLM", 8192, 2048, True)


def test_bad_engine_and_settings_are_refused_by_name():
    with pytest.raises(UnknownNameError, match="Did you mean 'vLLM'"):
        Deployment("Llama-3.1-8B", "H100 SXM", engine="vllmm")
    with pytest.raises(InputError, match="max_batched_tokens"):
        replica("Llama-3.1-8B", "H100 SXM", prompt_tokens=100, answer_tokens=10, max_batched_tokens=0)
    with pytest.raises(InputError, match="max_running"):
        replica("Llama-3.1-8B", "H100 SXM", prompt_tokens=100, answer_tokens=10, max_running=-3)


def test_vllm_caps_running_requests_at_its_budget():
    """vLLM's SchedulerConfig will not start with max_num_batched_tokens < max_num_seqs; when max_num_seqs is not
    set, EngineArgs lowers its default (1,024 on an H100) to the budget. So a 300-token budget alone runs at most 300
    requests, an explicit cap of 301 is refused (naming both fields), and SGLang, whose cap is its KV pool's, keeps
    none."""
    assert scheduler_of("vLLM", "H100 SXM", max_batched_tokens=300).max_running == 300
    assert scheduler_of("vLLM", "H100 SXM", max_batched_tokens=300, max_running=300).max_running == 300
    assert scheduler_of("vLLM", "H100 SXM", max_batched_tokens=4_096).max_running == 1_024
    with pytest.raises(InputError, match=r"max_batched_tokens \(300\) below max_running \(301"):
        scheduler_of("vLLM", "H100 SXM", max_batched_tokens=300, max_running=301)
    with pytest.raises(InputError, match="max_running"):
        replica(
            "Llama-3.1-8B", "H100 SXM", prompt_tokens=100, answer_tokens=10, max_batched_tokens=300, max_running=512
        )
    assert scheduler_of("SGLang", "H100 SXM", max_batched_tokens=300).max_running is None


def test_every_replica_says_its_engine():
    r = replica("Llama-3.1-8B", "H100 SXM", prompt_tokens=2_000, answer_tokens=300)
    assert r.engine == "vLLM" and "engine='vLLM'" in repr(r)


def test_admission_on_blocks_in_use_by_hand():
    # room 80 bytes, a conversation 3 on average, its answer adds 2, 2 spreads: 3 B + 2 x 2 sqrt(B / 12) <= 80.
    # B = 24: 72 + 4 x 1.414 = 77.7 fits; B = 25: 75 + 4 x 1.443 = 80.8 does not.
    assert admitted_batch_si(100.0, 20.0, 4.0, 3.0, 2.0, 2.0) == 24
    # no spread: 80 / 3 = 26.7 -> 26; at the final length 80 / 4 = 20
    assert admitted_batch_si(100.0, 20.0, 4.0, 3.0, 2.0, 0.0) == 26
    # one conversation does not fit at its final length: nothing is admitted
    assert admitted_batch_si(100.0, 97.0, 4.0, 3.0, 2.0, 0.0) == 0


def test_admission_runs_more_than_a_static_batch():
    # the example: 2,000 + 2,000 tokens on 2 x H100, Qwen2.5-72B at FP8: 54 at the final length; a
    # conversation holds 3,000 tokens on average (3/4 of 4,000), so about 54 x 4/3 = 72 less the spreads
    kw = dict(tensor_parallel=2, prompt_tokens=2_000, answer_tokens=2_000, weight_bytes="fp8")
    static = replica("Qwen2.5-72B", "H100 SXM", **kw, assumptions=resolve().replace(admission="final"))
    paged = replica("Qwen2.5-72B", "H100 SXM", **kw)
    assert static.batch == 54
    assert 1.2 <= paged.batch / static.batch <= 1.33
    # the source presets keep admission at the final length
    assert replica("Qwen2.5-72B", "H100 SXM", **kw, assumptions="lab").max_batch == 54


def test_mixed_step_by_hand():
    # the formula mixed_step_time: weights 10 GB read once at 1 TB/s (10 ms) against 100 tokens x 2e9 FLOPs at
    # 1e15 FLOP/s (0.2 ms): 10 ms; attention: 8 decodes x 0.1 GB of KV + 0.4 GB of the chunk's prefix = 1.2 GB
    # (1.2 ms) against 92 prompt tokens x 1e9 attention FLOPs (0.092 ms): 1.2 ms. The step: 11.2 ms.
    t = F["mixed_step_time"].value(
        decode_tokens=8, chunk_tokens=92, flops_per_token=2e9, attention_flops_per_token=0.0, chunk_attention_flops=1e9,
        bytes_read=10e9, kv_per_sequence=0.1e9, chunk_kv_read=0.4e9, n_gpus=1, bandwidth=1e12,
        bandwidth_efficiency=1.0, peak_flops=1e15, compute_efficiency=1.0,
    )  # fmt: skip
    assert t == pytest.approx(0.0112)
    # a first chunk on an idle replica (no decode tokens): the weights' 10 ms against 92 x 2e9 FLOPs (0.184 ms), then
    # the chunk's 0.4 GB of prefix (0.4 ms) against its 0.092 ms of attention FLOPs: 10.4 ms
    alone = F["mixed_step_time"].value(
        decode_tokens=0, chunk_tokens=92, flops_per_token=2e9, attention_flops_per_token=0.0, chunk_attention_flops=1e9,
        bytes_read=10e9, kv_per_sequence=0.1e9, chunk_kv_read=0.4e9, n_gpus=1, bandwidth=1e12,
        bandwidth_efficiency=1.0, peak_flops=1e15, compute_efficiency=1.0,
    )  # fmt: skip
    assert alone == pytest.approx(0.0104)
    # a steady batch of 64 with 1,000-token prompts and 100-token answers carries 64 x 1000 / 100 = 640 prompt
    # tokens a step; a budget of 512 binds: 512 x 100 / 1100 = 46.5 requests decode a step
    assert F["steady_chunk_tokens"].value(batch=64, prompt_tokens=1_000, answer_tokens=100) == 640
    assert F["decoding_batch"].value(batch=64, token_budget=512, answer_tokens=100, prompt_tokens=1_000) == (
        pytest.approx(512 * 100 / 1_100)
    )


def test_mixed_engine_hides_prefill_that_a_separate_one_pays():
    # Llama-3.1-8B on an H100, 32 running, 2,000 in and 300 out: vLLM's step carries 32 x 2000 / 300 = 213 prompt
    # tokens and stays under the separate engine's decode step plus the prefills it waits for
    kw = dict(prompt_tokens=2_000, answer_tokens=300, batch=32)
    v = replica("Llama-3.1-8B", "H100 SXM", engine="vLLM", **kw)
    s = replica("Llama-3.1-8B", "H100 SXM", engine="SGLang", **kw)
    assert v.engine_step.chunk_tokens == pytest.approx(32 * 2_000 / 300)
    assert v.engine_step.decoding == 32
    assert v.tpot < s.tpot
    assert s.engine_step.chunk_tokens == 0
    # every engine step is at least the decode step alone
    assert v.tpot >= v.step.step_time and s.tpot >= s.step.step_time


def test_a_batch_of_one_has_a_first_token():
    # one request on an idle vLLM replica: its prompt's chunks run with no other decode tokens beside them (a batch
    # of 1 was refused: "batch must be greater than zero"), and its first token waits for them
    r = replica("Llama-3.1-8B", "H100 SXM", prompt_tokens=1_000, answer_tokens=200, batch=1)
    assert r.fits and r.engine_step.first_token_prefill > 0 * r.tpot
    assert r.ttft > r.engine_step.first_token_prefill


def test_engine_cap_limits_the_batch():
    r = replica("Llama-3.1-8B", "H100 SXM", prompt_tokens=200, answer_tokens=50, max_running=16)
    assert r.max_batch == 16
    over = replica("Llama-3.1-8B", "H100 SXM", prompt_tokens=200, answer_tokens=50, max_running=16, batch=20)
    assert not over.fits and "max_running" in over.reason


def test_queue_beyond_the_cap_by_hand():
    # 64 in flight, 32 running: a service is the first token at 32 (prefill 40 ms and the queue's wait w; a queued
    # request is admitted when a running one finishes, at a step's end, so no half step) and 999 more tokens at
    # 22 ms: (64 / 32 - 1) = 1 service more than w
    from llmcourse.validation.prediction import _wait_s

    w = _wait_s(0.04, 0.02, 0.022, 1_000, 32)
    assert queued_wait_s(0.04, 0.02, 0.022, 1_000, 64, 32) == pytest.approx(w + 0.04 + w + 999 * 0.022)
    # no more in flight than run: the closed loop's own wait only
    assert queued_wait_s(0.04, 0.02, 0.022, 1_000, 16, 32) == pytest.approx(_wait_s(0.04, 0.02, 0.022, 1_000, 16))
    assert math.isfinite(queued_wait_s(0.04, 0.02, 0.022, 1_000, 128, 32))


def test_plan_runs_under_the_engine_named():
    from llmcourse import Q_, Brief, EngineSettings, plan

    b = Brief(10, 2_000, 300, Q_(1, "s"), Q_(50, "ms"))
    v = plan("Llama-3.1-8B", "H100 SXM", b)
    assert v.engine.startswith("vLLM (8,192 tokens a step, prompt chunks mixed into decode steps")
    assert "engine: vLLM" in str(v)
    s = plan("Llama-3.1-8B", "H100 SXM", b, engine="SGLang")
    assert s.engine == "SGLang (8,192 tokens a step, separate prefill batches)"
    # SGLang with its mixed chunks on runs the steps vLLM runs (the same budget; no cap binds at this batch)
    m = plan("Llama-3.1-8B", "H100 SXM", b, engine=EngineSettings("SGLang", mixed_prefill=True))
    assert (m.batch, m.tpot) == (v.batch, v.tpot) and m.batch != s.batch
    # a cap on running requests caps the plan's batch
    assert plan("Llama-3.1-8B", "H100 SXM", b, engine=EngineSettings(max_running=16)).batch == 16
    # a source's method does not model the scheduler, and says so
    assert "not modelled" in plan("Llama-3.1-8B", "H100 SXM", b, assumptions="planner").engine
    with pytest.raises(UnknownNameError, match="Did you mean 'TensorRT-LLM'"):
        plan("Llama-3.1-8B", "H100 SXM", b, engine="tensort-llm")
    with pytest.raises(InputError, match="engine must be an engine's name"):
        plan("Llama-3.1-8B", "H100 SXM", b, engine=2)


# --- the memory each engine lends its weights and KV cache ---------------------------------------------------------
def test_sglang_mem_fraction_static_by_hand():
    """SGLang's default share (ServerArgs._handle_gpu_memory_settings), by hand, in MiB:
    * one H100 (81,920 MiB as the course reads "80 GB"): 512 + 8,192 x 1.5 + 256 x 2 + 1 / 8 x 1,024 = 13,440
      reserved (above the 10 GiB floor): 1 - 13,440 / 81,920 = 0.8359 -> 0.836;
    * eight H100s: the graphs' batch 512 and 8 / 8 x 1,024: 512 + 12,288 + 1,024 + 1,024 = 14,848: 0.8188 -> 0.819;
    * four B200s (184,320 MiB): 512 + 16,384 x 1.5 + 512 x 2 + 512 = 26,624: 0.85556 -> 0.856;
    * a 24 GiB GPU alone (24,576 MiB): 512 + 2,048 x 1.5 + 24 x 2 + 128 = 3,760 (no floor under 60 GiB): 0.847."""
    from llmcourse.replica.scheduler import sglang_mem_fraction_static as f

    assert f(81_920, 1) == 0.836
    assert f(81_920, 8) == 0.819
    assert f(184_320, 4) == 0.856
    assert f(24_576, 1) == 0.847
    assert f(100_000, 8) < f(100_000, 1)  # more GPUs, more reserved per GPU


def test_engine_memory_rules_by_hand():
    """The course's rule 'engine': vLLM 0.9 of the total, as the sources' 90% (4 x 180 GB x 0.9 = 648 GB); SGLang its
    own share (4 x 180 GB x 0.856 = 616.32 GB); TensorRT-LLM the weights plus 0.9 of what they leave (DeepSeek-V3's
    671 GB of FP8 weights on 4 x B200: 671 + 0.9 x 49 = 715.1 GB). The sources' presets keep their own rule."""
    import llmcourse as lc
    from llmcourse.units import Q_

    w = Q_(671, "GB")
    got = {e: lc.usable_memory("B200", 4, weights=w, engine=e).to("GB").m for e in ("vLLM", "SGLang", "TensorRT-LLM")}
    assert got == pytest.approx({"vLLM": 648.0, "SGLang": 616.32, "TensorRT-LLM": 715.1})
    assert lc.usable_memory("B200", 4).to("GB").m == pytest.approx(648.0)  # no engine named: vLLM's
    for preset in ("envelope", "lab", "capacity", "planner"):
        a = resolve(preset)
        assert lc.usable_memory("B200", 4, weights=w, engine="TensorRT-LLM", assumptions=a).to("GB").m == (
            pytest.approx(4 * 180 * a.memory_fraction)
        )
    with pytest.raises(InputError, match="needs the weights' bytes"):
        lc.usable_memory("B200", 4, engine="TensorRT-LLM")


def test_deepseek_fp8_on_four_b200s_fits_under_tensorrt_llm_only():
    """671 GB of weights: TensorRT-LLM's rule leaves 44.1 GB for the KV cache; vLLM's 648 GB and SGLang's 616 GB
    do not hold the weights (those servers need a share of at least 671 / 720 = 0.932 given by hand)."""
    kw = dict(tensor_parallel=4, weight_bytes="fp8", prompt_tokens=8_192, answer_tokens=1_024)
    assert replica("DeepSeek-V3", "B200", engine="TensorRT-LLM", **kw).fits
    for engine in ("vLLM", "SGLang"):
        r = replica("DeepSeek-V3", "B200", engine=engine, **kw)
        assert not r.fits and "don't fit" in r.reason
