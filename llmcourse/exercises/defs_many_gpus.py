"""Exercises for *Many GPUs* (``book/08c_many_gpus.md``): the all-reduces of a tensor-parallel step on a
link, the KV cache per GPU once the GPUs outnumber the KV heads, a pipeline's bubble, the bytes expert
parallelism sends per token, the fixed overhead's share of a step at batch 1, and the time per token of a
replica at a concurrency.

``many_gpus_ex1`` .. ``many_gpus_ex6`` follow the chapter's exercises of the same labels; the chapter's
``many_gpus_ex7`` is a derivation and has no auto-checked version. Every figure a story gives about a link
(bandwidth, latency, fixed cost) is read from the link catalog, and every method figure from the course's
preset.
"""

from __future__ import annotations

import llmcourse as lc
from llmcourse.exercises._common import COURSE, FLOOR, Story, define, pct, pick, pool
from llmcourse.formulas import FORMULAS as F
from llmcourse.replica.parallel import decode_comm_time, layout
from llmcourse.replica.scheduler import DEFAULT_ENGINE, scheduler_of
from llmcourse.units import Q_

EXERCISES: list = []

#: The method the notebook says these exercises follow (shown above its first exercise).
NOTEBOOK_METHOD = """
**The method.** Every exercise is the course's method; each story gives the link's figures from the catalog
(`lc.links`). `llmcourse.replica.parallel` has the building blocks (`layout`, `decode_comm_time`, `time_per_token_parts`)
and `lc.FORMULAS` the alpha-beta formulas (`allreduce_time`, `oneshot_allreduce_time`, `twoshot_allreduce_time`,
`alltoall_time`, `pipeline_bubble`, `layer_floor_time`); the chapter shows how to use them.
"""
#: What a student's own variant changes (the notebook's instructions).
VARIES = "a different model, link, GPU count or load"
#: The unit of the example answer in the notebook's instructions.
EXAMPLE_UNIT = "ms"

#: A GPU of the catalog that has each link (the collectives are the link's; the GPU only completes the layout).
LINK_GPUS = {
    "NVLink 3": "A100 SXM 80GB",
    "NVLink 4": "H100 SXM",
    "NVLink 5": "B200",
    "PCIe 4 x16": "L40S",
    "PCIe 5 x16": "H100 PCIe",
    "Infinity Fabric MI300X": "MI300X",
}
_ACT = f"{COURSE.activation_bytes:g}"
_LINK_ETA = pct(COURSE.link_efficiency)
#: Exercise 1 works the textbook ring (NCCL's algorithm for large messages), whatever the course's all-reduce rule.
_RING = COURSE.replace(allreduce_algorithm="ring")
_KERNEL = f"{COURSE.engine_allreduce_us:g} µs"


def _link_words(name: str, n: int = 0) -> dict[str, str]:
    """The link's figures as a story states them; on a fully connected link (``Link.mesh``) a group of ``n`` GPUs
    smaller than the board gets the bandwidth of its own links (formula ``mesh_link_bandwidth``), and says so."""
    lk = lc.links[name]
    bw, note = lk.bandwidth, ""
    if lk.mesh and 1 < n < lk.domain:
        bw = lc.FORMULAS["mesh_link_bandwidth"](link_bandwidth=lk.bandwidth, n_gpus=n, mesh_gpus=lk.domain)
        note = (
            f" to the group's peers (the board joins its {lk.domain} GPUs all to all, a link between each pair: a "
            f"group of {n} uses {n - 1} of each GPU's {lk.domain - 1} links)"
        )
    return dict(
        link=lk.name,
        bw=f"{bw.to('GB/s').m:.4g}",
        mesh_note=note,
        alpha=f"{lk.latency.to('us').m:g}",
        t0=f"{lk.base.to('us').m:g}",
    )


def _model_words(name: str) -> dict[str, object]:
    m = lc.models[name]
    return dict(model=m.name, layers=m.layers, hidden=m.hidden)


# --- 1. the all-reduces of a decode step ------------------------------------------------------------------------
_TP_MODELS = ("Llama-3.1-8B", "Mistral-7B-v0.1", "Llama-3.1-70B", "Qwen2.5-72B", "Llama-3.1-405B")


def _ar_variant(model: str, n: int, batch: int, link: str) -> dict:
    return _model_words(model) | _link_words(link, n) | dict(n=n, batch=batch)


def _ar_answer(v):
    lay = layout(v["model"], LINK_GPUS[v["link"]], tensor_parallel=v["n"], link=v["link"])
    return decode_comm_time(v["model"], lay, tokens=v["batch"], assumptions=_RING)


define(
    EXERCISES,
    "many_gpus_ex1",
    "The all-reduces of a decode step",
    "{model} ({layers} layers, hidden size {hidden}) runs tensor-parallel on {n} GPUs joined by {link}: {bw} GB/s "
    "per GPU and direction{mesh_note}, a latency of {alpha} µs per ring step and a fixed {t0} µs per collective. By the "
    f"course's method a collective reaches {_LINK_ETA} of the link's bandwidth and activations are {_ACT} bytes a "
    "value. A decode step of {batch} sequences does two all-reduces per layer (after attention and after the MLP), "
    "each of the step's activations (sequences x hidden size values), each a ring all-reduce (NCCL's algorithm). "
    "How long do the all-reduces take per step, all layers together?",
    "ms",
    _ar_variant("Llama-3.1-70B", 8, 16, "NVLink 4"),
    lambda r: _ar_variant(
        pick(r, _TP_MODELS), pick(r, (2, 4, 8)), pick(r, (1, 4, 8, 16, 32, 64, 128, 256)), pick(r, tuple(LINK_GPUS))
    ),
    _ar_answer,
    (
        "A ring all-reduce over N GPUs takes 2(N - 1) steps: t = t0 + 2(N - 1) alpha + 2(N - 1)/N x bytes / "
        f"({COURSE.link_efficiency:g} x bandwidth).",
        "The message is {batch} x {hidden} x " + _ACT + " bytes. At decode it is small: the latency terms dominate.",
        "Two all-reduces per layer, {layers} layers: multiply one all-reduce by 2 x {layers}.",
    ),
    mistakes=lambda v: [(0.5, "two all-reduces per layer, not one")],
    followup="Work the same step on PCIe 5 (the H100 PCIe's link). Which term of the all-reduce's time dominates on "
    "each link: the fixed and latency terms, or the bytes?",
)


# --- 2. KV cache per GPU once the GPUs outnumber the KV heads ---------------------------------------------------
_KV_MODELS = ("Llama-3.1-8B", "Llama-3.1-70B", "Qwen2.5-72B", "Llama-3.1-405B", "Mixtral-8x7B", "DeepSeek-V3")


def _kv_variant(model: str, n: int, seqs: int, context: int) -> dict:
    m = lc.models[model]
    heads = (
        "an MLA latent (one per token per layer, shared by all heads)"
        if m.attention == "MLA"
        else (f"{m.kv_heads} KV heads of {m.head_dim} values per layer")
    )
    return dict(model=m.name, layers=m.layers, heads=heads, n=n, seqs=seqs, context=context)


def _kv_vary(r):
    model = pick(r, _KV_MODELS)
    top = lc.models[model].heads
    return _kv_variant(
        model,
        pick(r, tuple(n for n in (2, 4, 8, 16, 16, 32, 32, 64) if top % n == 0)),
        pick(r, (8, 16, 24, 32, 48, 64, 96)),
        pick(r, (2_048, 4_096, 8_192, 16_384)),
    )


def _kv_answer(v):
    per_seq = lc.kv_bytes_per_sequence(v["model"], v["context"])
    return (per_seq * lc.kv_copies(v["model"], v["n"]) * v["seqs"] / v["n"]).to("GB")


define(
    EXERCISES,
    "many_gpus_ex2",
    "KV cache per GPU under replication",
    "{model} ({layers} layers; its attention keeps {heads}) runs tensor-parallel on {n} GPUs, each of {seqs} "
    "sequences holding {context} tokens of BF16 KV cache. Tensor parallelism splits the KV heads over the GPUs, but "
    "each GPU keeps at least one whole head (and an MLA latent cannot be split: every GPU keeps all of it). How much "
    "KV cache does each GPU hold?",
    "GB",
    _kv_variant("Llama-3.1-70B", 16, 32, 8_192),
    _kv_vary,
    _kv_answer,
    (
        "KV per token: 2 (keys and values) x layers x KV heads x head dim x 2 bytes (MLA: layers x (latent + RoPE "
        "key) x 2 bytes).",
        "With N GPUs and H KV heads each sequence's cache is stored max(1, N / H) times: each GPU holds 1/N of that.",
    ),
    kv=True,
    mistakes=lambda v: (
        [(1 / lc.kv_copies(v["model"], v["n"]), "past the KV heads, the heads are copied")]
        if lc.kv_copies(v["model"], v["n"]) > 1
        else []
    ),
    followup="How much would each GPU hold if the KV heads could be split as many ways as there are GPUs?",
)


# --- 3. a pipeline's bubble ----------------------------------------------------------------------------------------
def _bubble(v):
    return F["pipeline_bubble"](stages=v["stages"], micro_batches=v["micro"])


define(
    EXERCISES,
    "many_gpus_ex3",
    "A pipeline's bubble",
    "A model is split into {stages} pipeline stages of equal work. A batch of prompts goes through as {micro} "
    "micro-batches, the pipeline filled at the start of the batch and drained at its end (each micro-batch takes the "
    "same time on every stage). What share of the time does a stage sit idle? (A plain number, e.g. 0.3 for 30%.)",
    "",
    dict(stages=4, micro=8),
    lambda r: dict(stages=pick(r, (2, 3, 4, 5, 6, 8, 16)), micro=pick(r, (1, 2, 3, 5, 6, 10, 12, 16, 24, 32, 48))),
    _bubble,
    (
        "With m micro-batches and P stages the last micro-batch leaves the last stage after m + P - 1 slots.",
        "Each stage works m of those slots: it idles (P - 1) / (m + P - 1) of the time.",
    ),
    bare_ok=True,
    mistakes=lambda v: [
        (((v["stages"] - 1) / v["micro"]) / float(_bubble(v).m), "the fill and drain slots count in the total")
    ],
    followup="How many micro-batches keep the bubble under a tenth of the time?",
)


# --- 4. bytes expert parallelism sends per token ---------------------------------------------------------------------
_EP_MODELS = ("DeepSeek-V3", "Kimi-K2.5", "GLM-5", "Qwen3-235B-A22B", "Qwen3-30B-A3B", "gpt-oss-120b", "Mixtral-8x7B")


def _ep_variant(model: str, ep: int, act: int) -> dict:
    m = lc.models[model]
    moe = m.layers - (m.dense_layers or 0)
    return dict(
        model=m.name,
        moe_layers=moe,
        hidden=m.hidden,
        k=m.experts_per_token,
        experts=m.experts,
        ep=ep,
        act=act,
        act_words={1: "1 byte a value, FP8", 2: "2 bytes a value, BF16"}[act],
    )


def _ep_vary(r):
    model = pick(r, _EP_MODELS)
    e = lc.models[model].experts
    return _ep_variant(model, pick(r, tuple(n for n in (2, 4, 8, 16, 32, 64) if e % n == 0)), pick(r, (1, 2)))


def _ep_bytes(v):
    """The bytes term of the all-to-alls of one token: the all-to-all's time with no latency on a link of 1 B/s,
    dispatch and combine in every MoE layer."""
    msg = F["expert_dispatch_message"](
        step_tokens=1, experts_per_token=v["k"], hidden=v["hidden"], activation_bytes=Q_(v["act"], "B")
    )
    one = F["alltoall_time"](
        collective_base=Q_(0, "s"),
        link_latency=Q_(0, "s"),
        n_gpus=v["ep"],
        message_bytes=msg,
        link_bandwidth=Q_(1, "B/s"),
        link_efficiency=1,
    )
    return (F["ep_alltoall_time"](moe_layers=v["moe_layers"], alltoall_latency=one) * Q_(1, "B/s")).to("KiB")


define(
    EXERCISES,
    "many_gpus_ex4",
    "What expert parallelism sends",
    "{model} has {moe_layers} MoE layers of {experts} experts, hidden size {hidden}, {k} experts per token. Its "
    "experts are split evenly over {ep} GPUs (expert parallel), and the tokens of a decode step evenly too. In each "
    "MoE layer every token's activations ({act_words}) go to each of its {k} experts (dispatch) and come "
    "back from each (combine); a copy whose expert is on the token's own GPU stays there. Routing is uniform. On "
    "average, how many bytes does one token send over the link per decode step, all MoE layers together?",
    "KiB",
    _ep_variant("DeepSeek-V3", 8, 1),
    _ep_vary,
    _ep_bytes,
    (
        "Per MoE layer: a dispatch and a combine, each of {k} x {hidden} x {act} bytes.",
        "Of the {k} copies, a share (N - 1)/N goes to another GPU, N = {ep}.",
        "Times {moe_layers} MoE layers.",
    ),
    mistakes=lambda v: [
        (0.5, "a combine comes back for every dispatch"),
        (v["ep"] / (v["ep"] - 1), "the copies for experts on the token's own GPU do not cross the link"),
    ],
    followup="How many bytes does it send with the experts spread over sixty-four GPUs?",
)


# --- 5. the fixed overhead's share at batch 1 -------------------------------------------------------------------------
def _overhead_setups():
    for model, precision in (
        ("Llama-3.1-8B", "bf16"),
        ("Llama-3.1-8B", "fp8"),
        ("Qwen2.5-7B", "bf16"),
        ("Mistral-7B-v0.1", "bf16"),
        ("Qwen3-32B", "bf16"),
        ("Qwen3-32B", "fp8"),
    ):
        for gpu in ("H100 SXM", "H200 SXM", "B200", "MI300X", "A100 SXM 80GB", "L40S"):
            if lc.weight_bytes(model, precision) < 0.8 * lc.gpus[gpu].memory:
                yield model, precision, gpu


_OVERHEAD_SETUPS = pool(_overhead_setups)


def _step(v):
    return lc.decode_step(v["model"], v["gpu"], batch=1, context_tokens=v["context"], weight_bytes=v["precision"])


def _overhead_share(v):
    s = _step(v)
    return (s.overhead_time / s.step_time).to("")


define(
    EXERCISES,
    "many_gpus_ex5",
    "The fixed overhead's share at batch 1",
    Story(
        "{model} with {precision_name} weights serves one request on one {gpu}, its KV cache (BF16) read at {context} tokens. "
        f"By the course's method a decode step reads the weights and the cache at "
        f"{pct(COURSE.bandwidth_efficiency)} of peak bandwidth, computes at {pct(COURSE.compute_efficiency)} of the "
        f"peak FLOP/s, takes the slower of the two, and pays a fixed {COURSE.step_overhead_ms:g} ms per step on top "
        f"(scheduling, sampling) and a floor of {FLOOR} for each of its {{layers}} layers' kernels. What share of "
        f"the step is the fixed {COURSE.step_overhead_ms:g} ms?",
        lambda v: dict(precision_name=v["precision"].upper(), layers=lc.models[v["model"]].layers),
    ),
    "",
    dict(model="Llama-3.1-8B", precision="bf16", gpu="H200 SXM", context=4_096),
    lambda r: (
        dict(zip(("model", "precision", "gpu"), pick(r, _OVERHEAD_SETUPS()), strict=True))
        | dict(context=pick(r, (512, 1_024, 2_048, 4_096, 8_192)))
    ),
    _overhead_share,
    (
        f"Memory time: (weights + one KV cache) / ({COURSE.bandwidth_efficiency:g} x bandwidth). At batch 1 it is "
        "far above the compute time.",
        f"Share = {COURSE.step_overhead_ms:g} ms / (memory time + {COURSE.step_overhead_ms:g} ms + the model's "
        f"layers x {FLOOR}).",
    ),
    bare_ok=True,
    mistakes=lambda v: [
        (
            float((_step(v).overhead_time / (_step(v).step_time - _step(v).overhead_time)).to("").m)
            / float(_overhead_share(v).m),
            "the share is of the whole step, the overhead included",
        )
    ],
    followup="What would a scheduler that halves the fixed cost buy the user?",
)


# --- 6. the time per token at a concurrency ---------------------------------------------------------------------------
_L70 = lc.models["Llama-3.1-70B"]
# prompts that fit beside the decode tokens in one step (a step of 8,192 tokens less the running requests): each
# prompt goes whole into one step of its own, its attention on no earlier KV; the other steps decode alone
_WORKLOADS = ((1_024, 8_192), (4_096, 1_024), (1_024, 1_024), (2_048, 512))


def _tpot_setups():
    for gpu in ("H100 SXM", "H200 SXM", "B200"):
        budget = scheduler_of(DEFAULT_ENGINE, gpu).token_budget
        for n in (1, 2, 4, 8):
            for c in (1, 2, 4, 8, 16, 32, 64):
                for p, a in _WORKLOADS:
                    if c * (p + a) / a > budget or p > budget - c:  # the budget binds, or a prompt is chunked
                        continue
                    rep = lc.replica(
                        "Llama-3.1-70B",
                        gpu,
                        tensor_parallel=n,
                        batch=c,
                        prompt_tokens=p,
                        answer_tokens=a,
                        weight_bytes="fp8",
                    )
                    if rep.fits:
                        yield gpu, n, c, p, a


_TPOT_SETUPS = pool(_tpot_setups)


def _tpot_variant(gpu, n, c, p, a):
    lk = lc.links[lc.gpus[gpu].link]
    budget = scheduler_of(DEFAULT_ENGINE, gpu).token_budget
    return dict(gpu=gpu, n=n, c=c, prompt=p, answer=a, budget=budget) | _link_words(lk.name, n)


def _tpot(v):
    rep = lc.replica(
        "Llama-3.1-70B",
        v["gpu"],
        tensor_parallel=v["n"],
        batch=v["c"],
        prompt_tokens=v["prompt"],
        answer_tokens=v["answer"],
        weight_bytes="fp8",
    )
    return rep.tpot


define(
    EXERCISES,
    "many_gpus_ex6",
    "Time per token at a concurrency",
    "Llama-3.1-70B with FP8 weights (BF16 KV cache) runs tensor-parallel on {n} x {gpu} ({link}: {bw} GB/s per GPU{mesh_note}, "
    "a latency of {alpha} µs), serving {c} requests at a time, each {prompt} tokens in and "
    "{answer} out, new requests arriving as others finish. The engine (vLLM, at most {budget} tokens a step) "
    "decodes one token of every request each step and puts a new request's whole prompt into the next step beside "
    "the decode tokens (a whole prompt fits beside them, so no prompt is split); the other steps decode alone. While "
    "a user waits for its {answer} tokens, each of the other {c} - 1 requests finishes once and lets in a new "
    "prompt (the user's own prompt is its first token, not its time per token). Each step reads the weights once. "
    "By the course's method: a step's weight matmuls take the "
    f"slower of one read of the weights at {pct(COURSE.bandwidth_efficiency)} of peak bandwidth and all its tokens' "
    f"2 FLOPs per parameter at {pct(COURSE.compute_efficiency)} of the peak FLOP/s at FP8; its attention the slower "
    "of the requests' KV cache, read at the average context, and its prompt tokens' causal attention FLOPs; then "
    f"{COURSE.step_overhead_ms:g} ms per step, a floor of {FLOOR} for each of the {_L70.layers} layers' kernels, and the "
    "all-reduces of all the step's tokens, each the faster of the engines' two kernels, at "
    f"{_LINK_ETA} of the link: the one-shot ({_KERNEL} + one latency + (N - 1) x the message over the link) and the "
    f"two-shot (2 x ({_KERNEL} + one latency) + 2(N - 1)/N x the message). What time per output token does a user "
    "see?",
    "ms",
    _tpot_variant("H100 SXM", 4, 16, 4_096, 1_024),
    lambda r: _tpot_variant(*pick(r, _TPOT_SETUPS())),
    _tpot,
    (
        "A user gets one token a step. A share ({c} - 1) / {answer} of its steps carry a whole {prompt}-token "
        "prompt (lc.FORMULAS['prompt_step_share'], one chunk a prompt), the rest decode alone: the time per token "
        "is that share of the step with a prompt plus the rest of the step alone (lc.FORMULAS['chunked_mean_step']), "
        "each step lc.FORMULAS['mixed_step_time'].",
        "Matmuls: the slower of weights / ({n} x bandwidth x "
        f"{COURSE.bandwidth_efficiency:g}) and ({{c}} + the step's prompt tokens, {{prompt}} or 0) x 2 x parameters "
        f"/ ({{n}} x FP8 peak x {COURSE.compute_efficiency:g}). Attention: the slower of {{c}} caches at prompt + "
        "answer/2 tokens over the same bandwidth and the prompt's attention FLOPs, 2 x layers x heads x head dim x "
        "prompt for each of its tokens on average (the causal term of the prompt's prefill FLOPs over its tokens).",
        f"Add {COURSE.step_overhead_ms:g} ms, {_L70.layers} x {FLOOR} and the 2 x {_L70.layers} all-reduces of "
        f"({{c}} + the step's prompt tokens) x {_L70.hidden:,} x {_ACT} bytes (lc.FORMULAS['oneshot_allreduce_time'], "
        "'twoshot_allreduce_time'; none on one GPU).",
    ),
    tolerance=0.02,
    followup="Which part of it is largest: the weight matmuls, attention's reads, the all-reduces, the layers' floor "
    "or the fixed cost? "
    "How does it compare with the decode step without prompts?",
)
