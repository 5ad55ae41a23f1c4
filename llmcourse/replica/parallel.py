"""How a replica spreads over GPUs, and what its GPUs pay to talk (chapter *Many GPUs*).

A replica is ``tensor_parallel`` GPUs per group (splitting every layer's heads and matrices), times
``data_parallel`` attention groups (each with its own sequences and its own copy of the attention
weights; the experts of a MoE model are split over all of them), times ``pipeline_parallel``
stages (each holding a slice of the layers). :func:`layout` checks such a shape against the model
and the link; :func:`decode_comm_time` and :func:`prefill_comm_time` price the collectives of a
step by the alpha-beta formulas of :mod:`llmcourse.formulas.parallel`. The planner's
:func:`~llmcourse.replica.step.decode_step`, :func:`~llmcourse.replica.prefilling.prefill` and
:func:`~llmcourse.replica.replica` build on them; nothing here computes a serving figure.

Examples
--------
>>> lay = layout("Llama-3.1-70B", "H100 SXM", tensor_parallel=8)
>>> lay.n_gpus, lay.link.name
(8, 'NVLink 4')
>>> round(decode_comm_time("Llama-3.1-70B", lay, tokens=4).to("ms").m, 2)  # 160 one-shots (the course's engines)
0.89
>>> ring = resolve("course").replace(allreduce_algorithm="ring")
>>> round(decode_comm_time("Llama-3.1-70B", lay, tokens=4, assumptions=ring).to("ms").m, 2)  # 160 ring all-reduces
2.56
>>> layout("Llama-3.1-70B", "H100 SXM", tensor_parallel=6)
Traceback (most recent call last):
...
llmcourse.errors.InputError: tensor_parallel=6 does not divide Llama-3.1-70B's 64 attention heads; use one of 1, 2, 4, 8, 16, 32, 64.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pint

from llmcourse.arith import greater, minus, plus, ratio, times
from llmcourse.assumptions import Assumptions, resolve
from llmcourse.catalog import GPU, Link, Model, gpus, links, models
from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS as F
from llmcourse.formulas import si
from llmcourse.units import Q_, parsed_unit, plain_number, to

# units parsed once (pint parses a unit string at every use)
_MS, _S, _B = (parsed_unit(u)[0] for u in ("ms", "s", "B"))

__all__ = [
    "Layout",
    "Parts",
    "allreduce_algorithm",
    "allreduce_latency",
    "allreduce_seconds",
    "collectives",
    "decode_comm_time",
    "dispatch_gpus",
    "layout",
    "pipeline_send_time",
    "prefill_comm_time",
    "time_per_token_parts",
]


@dataclass(frozen=True)
class Layout:
    """A replica's shape: ``tensor_parallel`` x ``data_parallel`` x ``pipeline_parallel`` GPUs,
    the experts split ``expert_parallel`` ways, the collectives on ``link`` (the GPUs' own link,
    or the scale-out link when a group is larger than the link's domain, said in ``note``)."""

    tensor_parallel: int
    data_parallel: int
    pipeline_parallel: int
    expert_parallel: int
    link: Link | None  # None: one GPU of a hand-made GPU that names no link (nothing to talk over)
    note: str = ""
    node_link: Link | None = None  # the GPUs' own link inside each node, when the group spans nodes over ``link``

    @property
    def n_gpus(self) -> int:
        return self.tensor_parallel * self.data_parallel * self.pipeline_parallel

    @property
    def group(self) -> int:
        """GPUs that take part in every layer's collectives (one pipeline stage)."""
        return self.tensor_parallel * self.data_parallel

    @property
    def expert_tensor_parallel(self) -> int:
        """How many ways each expert's matrices are split (the group's GPUs over the expert-parallel degree)."""
        return self.group // self.expert_parallel

    @property
    def is_single(self) -> bool:
        return self.n_gpus == 1


_US = parsed_unit("us")[0]  # parsed once (pint re-parses a string unit at every conversion)


def _divisors(n: int) -> str:
    return ", ".join(str(d) for d in range(1, n + 1) if n % d == 0)


def _degree(value: Any, name: str) -> int:
    return int(plain_number(value, name, integer=True, at_most=4096))


def layout(
    model: Model | str,
    gpu: GPU | str,
    *,
    tensor_parallel: int = 1,
    data_parallel: int = 1,
    pipeline_parallel: int = 1,
    expert_parallel: int | None = None,
    link: Link | str | None = None,
) -> Layout:
    """A replica's shape, checked: the tensor-parallel degree divides the attention heads, the
    expert-parallel degree divides the experts and the group's GPUs, the stages do not outnumber
    the layers, and the link is in the catalog. ``expert_parallel`` defaults to 1 (experts split
    like any matrix) with one attention group, and to the whole group with several (each group
    keeps a share of the experts). A group larger than the link's domain (16 GPUs on an 8-GPU
    NVLink board) runs its collectives over the link's scale-out partner, and ``note`` says so.

    Examples
    --------
    >>> lay = layout("DeepSeek-V3", "B200", data_parallel=8)
    >>> lay.n_gpus, lay.expert_parallel, lay.expert_tensor_parallel
    (8, 8, 1)
    >>> layout("Llama-3.1-405B", "H100 SXM", tensor_parallel=16).note
    'a group of 16 GPUs is larger than NVLink 4 joins (8): its collectives run over InfiniBand NDR'
    >>> layout("Llama-3.1-8B", "H100 SXM", link="NVlink 9")
    Traceback (most recent call last):
    ...
    llmcourse.errors.UnknownNameError: no link named 'NVlink 9'. Did you mean 'NVLink 5', 'NVLink 4', 'NVLink 3'? Known: NVLink 3, NVLink 4, NVLink 5, NVLink 5 NVL72, PCIe 3 x16, PCIe 4 x16, PCIe 5 x16, Infinity Fabric MI300X, InfiniBand HDR, InfiniBand NDR, InfiniBand XDR, Infinity Fabric MI355X, NVLink 4 bridge, PCIe 5 x8, Gaudi 3 RoCE, Gaudi 3 RoCE scale-out, ICI v5e, ICI v6e, ICI v7, NeuronLink v3, Ethernet 400G RoCE.
    """
    m, g = models[model], gpus[gpu]
    tp = _degree(tensor_parallel, "tensor_parallel")
    dp = _degree(data_parallel, "data_parallel")
    pp = _degree(pipeline_parallel, "pipeline_parallel")
    if m.heads % tp:
        raise InputError(
            f"tensor_parallel={tp} does not divide {m.name}'s {m.heads} attention heads; use one of {_divisors(m.heads)}."
        )
    if pp > m.layers:
        raise InputError(f"pipeline_parallel={pp} exceeds {m.name}'s {m.layers} layers: a stage needs a layer.")
    if expert_parallel is None:
        ep = tp * dp if dp > 1 and m.is_moe else 1
    else:
        ep = _degree(expert_parallel, "expert_parallel")
    if ep > 1:
        if not m.is_moe:
            raise InputError(f"expert_parallel={ep}: {m.name} is dense (it has no experts); leave it at 1.")
        if m.experts % ep:
            raise InputError(
                f"expert_parallel={ep} does not divide {m.name}'s {m.experts} experts; use one of {_divisors(m.experts)}."
            )
        if (tp * dp) % ep:
            raise InputError(
                f"expert_parallel={ep} must divide the {tp * dp} GPUs of a stage "
                f"(tensor_parallel x data_parallel); use one of {_divisors(tp * dp)}."
            )
    if dp > 1 and not m.is_moe:
        raise InputError(
            f"data_parallel={dp} splits attention over groups that share experts; {m.name} is dense, so that is "
            f"{dp} separate replicas: size one replica and let the fleet count them."
        )
    if link is None and g.link is None:  # a hand-made GPU that names no link: one GPU only
        if tp * dp * pp > 1:
            asked = ", ".join(f"{k}={v}" for k, v in (("tensor_parallel", tp), ("data_parallel", dp),
                                                      ("pipeline_parallel", pp)) if v > 1)  # fmt: skip
            raise InputError(
                f"GPU {g.name!r} names no link, so a replica of it is one GPU; {asked} needs one: give the GPU "
                f"a link (GPU(..., link=...): one of {', '.join(links)}, or a Link), or use tensor_parallel=1."
            )
        return Layout(tp, dp, pp, ep, None, "")
    lk = _link(link if link is not None else g.link)
    note, node = "", None
    if tp * dp > lk.domain:
        note = f"a group of {tp * dp} GPUs is larger than {lk.name} joins ({lk.domain}): its collectives run over {lk.scale_out}"
        lk, node = _link(lk.scale_out), lk
    return Layout(tp, dp, pp, ep, lk, note, node)


#: The catalog's links by the names they were asked by (the catalog is read-only; a look-up by name normalises
#: the name with a regular expression, twice per replica).
_LINKS_BY_NAME: dict[str, Link] = {}


def _link(name: Link | str) -> Link:
    """``links[name]``, a name's entry looked up once."""
    if type(name) is not str:
        return links[name]
    got = _LINKS_BY_NAME.get(name)
    if got is None:
        got = links[name]  # an unknown name raises here, as links[] says
        if len(_LINKS_BY_NAME) < 256:
            _LINKS_BY_NAME[name] = got
    return got


def _collective(kind: str, lay: Layout, n: int, message: pint.Quantity, a: Assumptions) -> pint.Quantity:
    if n <= 1:
        return Q_(0, _S)
    return F[kind](n_gpus=n, message_bytes=message, **_link_terms(lay, a))


def _link_terms(lay: Layout, a: Assumptions) -> dict[str, Any]:
    """The alpha-beta inputs a collective on the layout's link takes besides its message (and GPU count)."""
    lk = lay.link
    return dict(
        collective_base=lk.base, link_latency=lk.latency, link_bandwidth=lk.bandwidth, link_efficiency=a.link_efficiency
    )


def _message(m: Model, tokens: float, a: Assumptions) -> pint.Quantity:
    return F["activation_message"](step_tokens=tokens, hidden=m.hidden, activation_bytes=Q_(a.activation_bytes, _B))


def _comm(m: Model, lay: Layout, tokens: float, a: Assumptions) -> pint.Quantity:
    """Collective time of one pass of ``tokens`` tokens (all groups together) through every layer."""
    return Q_(comm_seconds(m, lay, tokens, a), _S)


# --- the same collectives as plain floats in seconds (the planner's internal path; the formulas above, by value)
#: A link's alpha-beta terms as plain floats, by the link (its id, the link kept to check it) and the efficiency.
_LINK_TERMS: dict[int, tuple[Link, Any, dict[str, float]]] = {}


def _link_terms_s(lk: Link, a: Assumptions) -> dict[str, float]:
    eff = a.link_efficiency
    got = _LINK_TERMS.get(id(lk))
    if got is not None and got[0] is lk and got[1] == eff and type(got[1]) is type(eff):
        return got[2]
    terms = dict(
        collective_base=si(lk.base, "collective_base"),
        link_latency=si(lk.latency, "link_latency"),
        link_bandwidth=si(lk.bandwidth, "link_bandwidth"),
        link_efficiency=si(eff, "link_efficiency"),
    )
    if len(_LINK_TERMS) < 256:  # the catalog's links and a few of a reader's own
        _LINK_TERMS[id(lk)] = (lk, eff, terms)
    return terms


def _group_terms_s(lk: Link, n: int, a: Assumptions) -> dict[str, float]:
    """:func:`_link_terms_s` for a collective of ``n`` GPUs on ``lk``: on a fully connected link (``Link.mesh``) a
    group smaller than its domain reaches its peers over ``n - 1`` of each GPU's ``domain - 1`` links (formula
    ``mesh_link_bandwidth``); on a switched link every group has the whole bandwidth."""
    terms = _link_terms_s(lk, a)
    if not lk.mesh or not 1 < n < lk.domain:
        return terms
    bw = F["mesh_link_bandwidth"].value(link_bandwidth=terms["link_bandwidth"], n_gpus=n, mesh_gpus=lk.domain)
    return {**terms, "link_bandwidth": bw}


def _collective_s(kind: str, lay: Layout, n: int, message: float, a: Assumptions) -> float:
    if n <= 1:
        return 0.0
    return F[kind].value(n_gpus=n, message_bytes=message, **_group_terms_s(_a2a_link(lay, n, a), n, a))


def _a2a_link(lay: Layout, n: int, a: Assumptions) -> Link:
    """The link an all-to-all of ``n`` GPUs runs on: the layout's, or, with the engines' dispatch (rule
    ``'per_gpu'``), the node's own link when the ``n`` GPUs fit in one node of a group that spans several (DeepEP's
    intranode kernels run over NVLink)."""
    node = lay.node_link
    if node is not None and a.expert_dispatch == "per_gpu" and n <= node.domain:
        return node
    return lay.link


def allreduce_seconds(lay: Layout, n: int, message: float, a: Assumptions) -> tuple[str, float]:
    """``(algorithm, seconds)`` of one all-reduce of ``message`` bytes over ``n`` GPUs of the layout.

    Under ``allreduce_algorithm='ring'`` it is the ring on the layout's link. Under ``'engine'`` it is what the
    engines run: inside one node, on a link whose GPUs read each other's memory (``Link.peer_kernels``), the fastest
    of the one-shot, the two-shot and the ring, as TensorRT-LLM's ``AllReduceStrategy.AUTO`` picks from its measured
    table (``selectStrategyLookUpTable`` in ``customAllReduceUtils.h``) and vLLM's ``CustomAllreduce::allreduce``
    by size (``csrc/custom_all_reduce.cuh``: one-shot for two GPUs, or below 512 KiB on up to four and 256 KiB on up
    to eight, two-shot above; NCCL beyond its 8 MiB buffer, ``custom_all_reduce.py``); SGLang runs the same kernels
    (``CustomAllreduce.should_custom_ar`` in ``python/sglang/srt/distributed/device_communicators/custom_all_reduce.py``:
    2, 4, 6 or 8 GPUs, fully NVLinked beyond two, below its 8 MiB ``_MAX_CAR_SIZE``; off for a group spanning nodes);
    FlashInfer's ``trtllm_allreduce_fusion`` goes one-shot up to 128 tokens. The ring elsewhere (PCIe, where vLLM and
    SGLang turn their kernel off beyond two GPUs). A group spread over several nodes reduces hierarchically (NCCL): inside each node on its
    link, between the nodes on the scale-out link.

    Examples
    --------
    >>> a = resolve("course").replace(allreduce_algorithm="engine")
    >>> lay = layout("Llama-3.1-70B", "H100 SXM", tensor_parallel=8)
    >>> name, t = allreduce_seconds(lay, 8, 16_384, a)
    >>> name, round(t * 1e6, 2)
    ('one-shot', 4.62)
    >>> allreduce_seconds(lay, 8, 16_384, a.replace(allreduce_algorithm="ring"))[0]
    'ring'
    """
    if n <= 1:
        return "none", 0.0
    node = lay.node_link
    if a.allreduce_algorithm == "ring":
        return "ring", F["allreduce_time"].value(n_gpus=n, message_bytes=message, **_group_terms_s(lay.link, n, a))
    if node is not None and n > node.domain:  # across nodes: hierarchical
        nodes = -(-n // node.domain)
        inner, outer = _group_terms_s(node, -(-n // nodes), a), _link_terms_s(lay.link, a)
        t = F["hierarchical_allreduce_time"].value(
            out_base=outer["collective_base"],
            link_latency=inner["link_latency"],
            node_gpus=-(-n // nodes),
            link_bandwidth=inner["link_bandwidth"],
            link_efficiency=inner["link_efficiency"],
            nodes=nodes,
            out_latency=outer["link_latency"],
            message_bytes=message,
            out_bandwidth=outer["link_bandwidth"],
        )
        return "hierarchical", t
    lk = node if node is not None else lay.link  # a group inside one node runs on the node's link
    terms = _group_terms_s(lk, n, a)
    options = {"ring": F["allreduce_time"].value(n_gpus=n, message_bytes=message, **terms)}
    if lk.peer_kernels:
        engine = dict(
            engine_allreduce_base=a.engine_allreduce_us * 1e-6,
            link_latency=terms["link_latency"],
            n_gpus=n,
            message_bytes=message,
            link_bandwidth=terms["link_bandwidth"],
            link_efficiency=terms["link_efficiency"],
        )
        options["one-shot"] = F["oneshot_allreduce_time"].value(**engine)
        options["two-shot"] = F["twoshot_allreduce_time"].value(**engine)
    name = min(options, key=options.__getitem__)
    return name, options[name]


def _message_s(m: Model, tokens: float, a: Assumptions) -> float:
    return F["activation_message"].value(step_tokens=tokens, hidden=m.hidden, activation_bytes=a.activation_bytes)


def dispatch_gpus(m: Model, expert_parallel: int) -> float:
    """Expected GPUs one token of ``m`` is sent to with its experts split ``expert_parallel`` ways (the
    ``dispatch_gpus`` formula): each GPU that holds at least one of its ``k`` experts, the experts picked at random
    within the router's groups (``topk_groups`` of ``expert_groups``). The groups count where each GPU holds at most
    one group's experts (``expert_parallel`` a multiple of the groups); a GPU holding several groups is counted as
    if the router had none (an upper bound).

    Examples
    --------
    >>> round(dispatch_gpus(models["DeepSeek-V3"], 8), 2)  # 4 of 8 groups, one per GPU: at most 4
    3.63
    >>> round(dispatch_gpus(models["Kimi-K2.5"], 8), 2)  # no groups: up to 8
    5.28
    """
    g, t = m.expert_groups or 1, m.topk_groups or 1
    if expert_parallel % g:
        g, t = 1, 1
    return F["dispatch_gpus"].value(
        ep_gpus=expert_parallel,
        experts=m.experts,
        experts_per_token=m.experts_per_token,
        expert_groups=g,
        topk_groups=t,
    )


def _dispatch_s(m: Model, lay: Layout, tokens: float, a: Assumptions) -> float:
    """Expert-parallel all-to-all time of one pass of ``tokens`` tokens through the MoE layers."""
    ep, moe_layers = lay.expert_parallel, m.layers - (m.dense_layers or 0)
    per_gpu = tokens / lay.group  # each GPU dispatches its share of the tokens to their experts
    if a.expert_dispatch == "per_expert":
        msg = F["expert_dispatch_message"].value(
            step_tokens=per_gpu,
            experts_per_token=m.experts_per_token,
            hidden=m.hidden,
            activation_bytes=a.activation_bytes,
        )
        a2a = _collective_s("alltoall_time", lay, ep, msg, a)
        return F["ep_alltoall_time"].value(moe_layers=moe_layers, alltoall_latency=a2a)
    d = dispatch_gpus(m, ep)
    out = F["dedup_dispatch_message"].value(
        step_tokens=per_gpu, dispatch_gpus=d, hidden=m.hidden, dispatch_bytes=a.dispatch_bytes
    )
    back = F["dedup_combine_message"].value(
        step_tokens=per_gpu, dispatch_gpus=d, hidden=m.hidden, activation_bytes=a.activation_bytes
    )
    return F["ep_dispatch_combine_time"].value(
        moe_layers=moe_layers,
        dispatch_time=_collective_s("alltoall_time", lay, ep, out, a),
        combine_time=_collective_s("alltoall_time", lay, ep, back, a),
    )


#: each token count's answer kept, up to this many (the least recently asked forgotten first): memory stays bounded
_kept = functools.lru_cache(maxsize=100_000)


def comm_seconds_of(m: Model, lay: Layout, a: Assumptions) -> Callable[[float], float]:
    """``lambda tokens: comm_seconds(m, lay, tokens, a)``, for a search or a simulation that asks it of many token
    counts, most of them again and again: each count's answer kept (the same floats), a dense model's all-reduces with
    the model's figures looked up once; a mixture of experts goes to :func:`comm_seconds` itself."""
    if not a.communication or lay.group == 1:
        return lambda tokens: 0.0
    tp, dp = lay.tensor_parallel, lay.data_parallel
    if m.is_moe or dp != 1 or tp <= 1:  # (layout() gives a dense model one attention group, so tp > 1 here)
        return _kept(lambda tokens: comm_seconds(m, lay, tokens, a))
    msg_of, per_layer = F["activation_message"].value, F["tp_allreduce_time"].value
    hidden, act, layers = m.hidden, a.activation_bytes, m.layers

    def of(tokens: float) -> float:
        msg = msg_of(step_tokens=tokens, hidden=hidden, activation_bytes=act)
        return per_layer(layers=layers, allreduce_latency=allreduce_seconds(lay, tp, msg, a)[1])

    return _kept(of)


def comm_seconds(m: Model, lay: Layout, tokens: float, a: Assumptions) -> float:
    """:func:`decode_comm_time` (and :func:`prefill_comm_time`) in seconds, as a plain float, for a checked
    model, layout and assumptions: the planner's internal path."""
    if not a.communication or lay.group == 1:
        return 0.0
    tp, dp = lay.tensor_parallel, lay.data_parallel
    group_tokens = tokens / dp
    ar_tp = allreduce_seconds(lay, tp, _message_s(m, group_tokens, a), a)[1]
    if not m.is_moe:
        return F["tp_allreduce_time"].value(layers=m.layers, allreduce_latency=ar_tp) if tp > 1 else 0.0
    dense = m.dense_layers or 0
    moe_layers = m.layers - dense
    total = F["attention_allreduce_time"].value(layers=m.layers + dense, allreduce_latency=ar_tp) if tp > 1 else 0.0
    ep, etp = lay.expert_parallel, lay.expert_tensor_parallel
    if ep > 1:
        total = total + _dispatch_s(m, lay, tokens, a)
    if etp > 1:
        ar_e = allreduce_seconds(lay, etp, _message_s(m, group_tokens, a), a)[1]
        total = total + F["attention_allreduce_time"].value(layers=moe_layers, allreduce_latency=ar_e)
    return total


def send_seconds(m: Model, lay: Layout, tokens: float, a: Assumptions) -> float | None:
    """:func:`pipeline_send_time` in seconds as a plain float; None where it is zero (one stage, or no
    communication)."""
    if lay.pipeline_parallel == 1 or not a.communication:
        return None
    return F["send_time"].value(
        message_bytes=_message_s(m, tokens / lay.tensor_parallel, a), **_link_terms_s(lay.link, a)
    )


def allreduce_latency(model: Model | str, rep: Any, tokens: float | None = None) -> pint.Quantity:
    """One all-reduce of a decode step's activations (``tokens`` sequences, the replica's batch by default)
    over the replica's tensor-parallel group, by the algorithm its assumptions pick (:func:`allreduce_seconds`;
    :func:`allreduce_algorithm` names it); zero on one GPU.

    Examples
    --------
    >>> from llmcourse.replica.model import replica
    >>> r = replica("Llama-3.1-70B", "H100 SXM", tensor_parallel=8, batch=4, prompt_tokens=1_024,
    ...             answer_tokens=1_024, weight_bytes="fp8")
    >>> round(allreduce_latency("Llama-3.1-70B", r).to("us").m, 2), allreduce_algorithm("Llama-3.1-70B", r)
    (5.57, 'one-shot')
    >>> ring = r.assumptions.replace(allreduce_algorithm="ring")
    >>> e = replica("Llama-3.1-70B", "H100 SXM", tensor_parallel=8, batch=4, prompt_tokens=1_024,
    ...             answer_tokens=1_024, weight_bytes="fp8", assumptions=ring)
    >>> round(allreduce_latency("Llama-3.1-70B", e).to("us").m, 2), allreduce_algorithm("Llama-3.1-70B", e)
    (16.02, 'ring')
    """
    lay, a, m = rep.layout, rep.assumptions, models[model]
    tokens = rep.batch if tokens is None else tokens
    if lay.tensor_parallel <= 1 or lay.link is None:
        return Q_(0.0, _US)
    return to(Q_(allreduce_seconds(lay, lay.tensor_parallel, _message_s(m, tokens, a), a)[1], _S), _US)


def allreduce_algorithm(model: Model | str, rep: Any, tokens: float | None = None) -> str:
    """The name of the all-reduce :func:`allreduce_latency` times: ``'ring'``, ``'one-shot'``, ``'two-shot'``,
    ``'hierarchical'``, or ``'none'`` on one GPU."""
    lay, a, m = rep.layout, rep.assumptions, models[model]
    tokens = rep.batch if tokens is None else tokens
    if lay.tensor_parallel <= 1 or lay.link is None:
        return "none"
    return allreduce_seconds(lay, lay.tensor_parallel, _message_s(m, tokens, a), a)[0]


def collectives(model: Model | str, rep: Any) -> str:
    """What a replica's decode step talks with, in words: the all-reduce's algorithm and link, and the expert
    dispatch; empty when its GPUs do not talk.

    Examples
    --------
    >>> from llmcourse.replica.model import replica
    >>> r = replica("Llama-3.1-70B", "B200", tensor_parallel=8, batch=4, prompt_tokens=1_024, answer_tokens=1_024)
    >>> collectives("Llama-3.1-70B", r)
    'one-shot all-reduce of 64 KiB over 8 GPUs on NVLink 5'
    >>> ds = replica("DeepSeek-V3", "H200 SXM", data_parallel=8, batch=64, prompt_tokens=1_024, answer_tokens=1_024)
    >>> collectives("DeepSeek-V3", ds)
    'dispatch to 3.6 of 8 GPUs per token (1.03125 B a value), combine at 2 B'
    """
    lay, a, m = rep.layout, rep.assumptions, models[model]
    if not a.communication or lay.group == 1 or lay.link is None:
        return ""
    out = []
    tp = lay.tensor_parallel
    if tp > 1:
        msg = _message_s(m, rep.batch / lay.data_parallel, a)
        name = allreduce_seconds(lay, tp, msg, a)[0]
        where = lay.link.name if name in ("ring", "hierarchical") or lay.node_link is None else lay.node_link.name
        if name == "hierarchical":
            where = f"{lay.node_link.name} then {lay.link.name}"
        out.append(f"{name} all-reduce of {msg / 1024:,.0f} KiB over {tp} GPUs on {where}")
    if lay.expert_parallel > 1:
        if a.expert_dispatch == "per_gpu":
            out.append(
                f"dispatch to {dispatch_gpus(m, lay.expert_parallel):.1f} of {lay.expert_parallel} GPUs per token "
                f"({a.dispatch_bytes:g} B a value), combine at {a.activation_bytes:g} B"
            )
        else:
            out.append(f"all-to-all to each of {m.experts_per_token} experts per token over {lay.expert_parallel} GPUs")
    return "; ".join(out)


def decode_comm_time(
    model: Model | str, lay: Layout, *, tokens: float, assumptions: Assumptions | str | None = None
) -> pint.Quantity:
    """Collective time of one decode step of ``tokens`` sequences (one pipeline micro-batch): the
    tensor-parallel all-reduces (two per layer for a dense model), the expert-parallel all-to-alls
    (a dispatch and a combine per MoE layer), zero on one GPU or when the assumptions leave
    communication out.

    Examples
    --------
    >>> one = layout("Llama-3.1-70B", "B200", tensor_parallel=8)
    >>> round(decode_comm_time("Llama-3.1-70B", one, tokens=4).to("ms").m, 2)  # one-shots
    0.86
    >>> ring = resolve("course").replace(allreduce_algorithm="ring")
    >>> round(decode_comm_time("Llama-3.1-70B", one, tokens=4, assumptions=ring).to("ms").m, 2)  # ring all-reduces
    4.03
    >>> decode_comm_time("Llama-3.1-70B", one, tokens=4, assumptions="envelope")
    <Quantity(0.0, 'millisecond')>
    """
    return to(_comm(models[model], lay, tokens, resolve(assumptions)), _MS)


def prefill_comm_time(
    model: Model | str, lay: Layout, *, tokens: float, assumptions: Assumptions | str | None = None
) -> pint.Quantity:
    """Collective time of a prefill of ``tokens`` prompt tokens: the same collectives as a decode
    step, with messages thousands of times larger, so the link's bandwidth term counts.

    Examples
    --------
    >>> one = layout("Llama-3.1-70B", "H100 SXM", tensor_parallel=8)
    >>> round(prefill_comm_time("Llama-3.1-70B", one, tokens=8_192).to("ms").m)  # two-shots of 128 MiB
    106
    """
    return to(_comm(models[model], lay, tokens, resolve(assumptions)), _MS)


def pipeline_send_time(
    model: Model | str, lay: Layout, *, tokens: float, assumptions: Assumptions | str | None = None
) -> pint.Quantity:
    """Time to hand ``tokens`` tokens' activations from one pipeline stage to the next: a collective's
    fixed cost plus the bytes over the link (zero with one stage, or without communication)."""
    m, a = models[model], resolve(assumptions)
    if lay.pipeline_parallel == 1 or not a.communication:
        return Q_(0, _MS)
    return to(F["send_time"](message_bytes=_message(m, tokens / lay.tensor_parallel, a), **_link_terms(lay, a)), _MS)


class Parts(dict):
    """A replica's time per token by part (a dict of name -> time), with ``collectives``: what its GPUs talk
    with (:func:`collectives`), said wherever the parts are printed."""

    collectives: str = ""


def time_per_token_parts(rep: Any) -> Parts:
    """A replica's time per token split into what it is spent on: reading the weights, reading
    the KV cache, compute beyond the memory time (zero while a step is memory-bound), the
    collectives, the layers' floor (``"layer floors"``), the fixed overhead, and the other requests' prefills that share the steps. The
    parts add up to ``rep.tpot`` under the step rule ``"max"`` (with ``"sum"``, the kernels'
    own maxima make the compute part approximate).

    Examples
    --------
    >>> from llmcourse.replica.model import replica
    >>> r = replica("Llama-3.1-70B", "B200", tensor_parallel=8, batch=4, prompt_tokens=1_024,
    ...             answer_tokens=1_024, weight_bytes="fp8")
    >>> parts = time_per_token_parts(r)
    >>> {k: round(v.to("ms").m, 2) for k, v in parts.items()}
    {'weight reads': 1.64, 'KV reads': 0.05, 'compute': 0.0, 'communication': 0.86, 'layer floors': 1.84, 'overhead': 1.0, 'shared prefill': 0.04}
    >>> parts.collectives
    'one-shot all-reduce of 64 KiB over 8 GPUs on NVLink 5'
    >>> round(sum(parts.values()).to("ms").m, 2) == round(r.tpot.to("ms").m, 2)
    True
    """
    s = rep._need_step()
    # the memory time splits between weights and KV in proportion to their bytes, 4-bit weights' bytes counted
    # as the step counts them (DecodeStep.weight_read_scale; pint's arithmetic, on the magnitudes: llmcourse.arith)
    w = times(s.weights_read, s.weight_read_scale)
    share_w = ratio(w, plus(w, s.kv_read))
    memory = s.memory_time
    compute = minus(s.compute_time, memory) if greater(s.compute_time, memory) else times(memory, 0)
    parts = Parts(
        {
            "weight reads": to(times(memory, share_w), _MS),
            "KV reads": to(times(memory, 1 - share_w), _MS),
            "compute": to(compute, _MS),
            "communication": to(s.comm_time, _MS),
            "layer floors": to(s.floor_time, _MS) if s.floor_time is not None else Q_(0.0, _MS),
            "overhead": to(s.overhead_time, _MS),
            "shared prefill": to(minus(rep.tpot, s.step_time), _MS),
        }
    )
    parts.collectives = collectives(rep.model, rep) if hasattr(rep, "model") else ""
    return parts
