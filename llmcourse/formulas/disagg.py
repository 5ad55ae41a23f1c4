"""The formulas of disaggregated serving, each written once as a SymPy expression (chapter
*Disaggregated serving*, ``book/10b_disaggregation.md``).

A disaggregated deployment runs prefill and decode on separate pools of GPUs: a prefill pool of
replicas that only prefill prompts, a decode pool of replicas that only decode answers. A request
is prefilled in the first pool, its KV cache is handed to the second over the link between them,
and it decodes there. Its time to first token is the request's fixed overhead, its wait for a free
prefill replica, its prefill, and the hand-off of its KV.

The hand-off follows the alpha-beta model of the links catalog: a fixed cost, one latency, and the
prompt's KV bytes over the bandwidth of the lanes that carry them (each GPU of a replica sends its
share over its own link, so a prompt's KV travels over as many lanes as the smaller replica has
GPUs).

The wait for a prefill replica is a queue with Poisson arrivals, a fixed service time (one prompt's
prefill) and ``c`` servers: M/D/c. Its mean wait has no closed form; Sakasegawa's approximation
(1977; the Kingman-Sakasegawa formula of Hopp and Spearman, *Factory Physics*, eq. 8.10)

.. math:: W_q \\approx \\frac{\\rho^{\\sqrt{2(c+1)} - 1}}{c (1 - \\rho)} \\frac{c_a^2 + c_s^2}{2} t_{pre}

with ``c_a^2 = 1`` (Poisson arrivals) and ``c_s^2 = 0`` (a fixed prefill time) is written here. With
one server it is exactly the Pollaczek-Khinchine mean wait of M/D/1, ``rho t / (2 (1 - rho))``.

The symbols and formulas are registered in :data:`llmcourse.formulas.SYMBOLS` and
:data:`~llmcourse.formulas.FORMULAS` when this module is imported (``llmcourse.formulas`` imports it, with every
topic module, after :mod:`~llmcourse.formulas.core`).

Examples
--------
>>> from llmcourse.formulas import FORMULAS
>>> from llmcourse.units import Q_
>>> t = FORMULAS["kv_handoff_time"](
...     collective_base=Q_(5, "us"), link_latency=Q_(2.5, "us"), kv_per_sequence=Q_(655.36, "MB"),
...     kv_lanes=1, link_bandwidth=Q_(50, "GB/s"), link_efficiency=1)
>>> round(t.to("ms").m, 4)
13.1147
>>> w = FORMULAS["mdc_wait"](prefill_utilisation=0.5, prefill_servers=1, prefill_time=Q_(100, "ms"))
>>> round(w.to("ms").m, 6)
50.0
"""

from __future__ import annotations

from llmcourse.formulas import parallel, serving  # noqa: F401  (the symbols taken by name below, defined there first)
from llmcourse.formulas.core import FORMULAS, built, defer, deferred_getattr, formula, section, sp, symbol, symbols

__all__: list[str] = []
__getattr__ = deferred_getattr(globals())  # the names the sections below define, made on first use

CHAPTER = "10b_disaggregation"
request_rate, prefill_time, request_overhead = symbols("request_rate", "prefill_time", "request_overhead")
kv_per_sequence, link_bandwidth, link_efficiency = symbols("kv_per_sequence", "link_bandwidth", "link_efficiency")
collective_base, link_latency = symbols("collective_base", "link_latency")
replicas, batch, answer_tokens, step_time = symbols("replicas", "batch", "answer_tokens", "step_time")
message_bytes = symbols("message_bytes")[0]

# --- symbols --------------------------------------------------------------------------------------
kv_lanes = symbol(
    "kv_lanes",
    r"n_{lane}",
    "",
    "links that carry one prompt's KV between the pools at once (one per GPU of the smaller replica)",
    integer=True,
)
kv_handoff = symbol(
    "kv_handoff", r"t_{kv}", "s", "time to hand one prompt's KV cache from the prefill to the decode pool"
)
prefill_servers = symbol(
    "prefill_servers", r"c_{pre}", "", "prompts the prefill pool prefills at once (its replicas)", integer=True
)
prefill_utilisation = symbol(
    "prefill_utilisation",
    r"\rho_{pre}",
    "",
    "share of the time the prefill pool's replicas are busy",
    at_most=1,
    bound_note=" (at or above 1 the queue grows without end)",
)
queue_wait = symbol("prefill_queue_wait", r"W_{q,pre}", "s", "mean wait for a free prefill replica", allow_zero=True)
disagg_ttft = symbol("disagg_ttft", r"t_{first,dis}", "s", "time to first token of a disaggregated deployment")
pool_rate = symbol("pool_rate", r"\mu_{pool}", "1/s", "requests per second a pool completes at full load")

# --- the hand-off ---------------------------------------------------------------------------------


@section
def _handoff() -> None:
    global _send, _message_bytes
    _send, _message_bytes = FORMULAS["send_time"].expr, message_bytes
    formula(
        "kv_handoff_time",
        "kv_handoff",
        # the alpha-beta send of formulas.parallel (one stage to the next), each lane carrying its share of the KV
        built("kv_handoff_time", lambda: _send.subs(_message_bytes, kv_per_sequence / kv_lanes)),
        "one prompt's KV handed from the prefill to the decode pool (alpha-beta): a fixed cost, one latency, and "
        "the KV bytes over the lanes' bandwidth",
        CHAPTER,
    )


# --- the prefill pool's queue (M/D/c, Sakasegawa's approximation) ---------------------------------
# A benchmark's closed loop of n clients with equal prompt and answer lengths starts them together, so they
# finish together and their next prompts arrive together: waves of n prompts, c at a time. With w = n / c
# waves the k-th waits (k - 1) prefills; the mean over the waves is (w - 1) / 2 prefills.
burst_prompts = symbol("burst_prompts", r"n_{wave}", "", "prompts that arrive together (a wave)", integer=True)


@section
def _prefill_queue() -> None:
    global _rho, _c
    _rho, _c = prefill_utilisation, prefill_servers
    formula(
        "prefill_pool_utilisation",
        "prefill_utilisation",
        request_rate * prefill_time / _c,
        "share of the time the prefill replicas are busy: arrivals x prefill time over the replicas",
        CHAPTER,
    )
    formula(
        "mdc_wait",
        "prefill_queue_wait",
        built("mdc_wait", lambda: _rho ** (sp.sqrt(2 * (_c + 1)) - 1) / (_c * (1 - _rho)) * prefill_time / 2),
        "mean wait for one of c prefill replicas (M/D/c: Poisson arrivals, a fixed prefill time), Sakasegawa's "
        "approximation; exact (Pollaczek-Khinchine) for one replica",
        CHAPTER,
    )
    formula(
        "wave_wait",
        "prefill_queue_wait",
        (burst_prompts - _c) / (2 * _c) * prefill_time,
        "mean wait of a wave of n prompts arriving together at c prefill replicas (n at least c; exact when c divides n)",
        CHAPTER,
    )
    formula(
        "disagg_ttft",
        "disagg_ttft",
        request_overhead + queue_wait + prefill_time + kv_handoff,
        "time to first token, disaggregated: the request's overhead, its wait for a prefill replica, its prefill, "
        "and the hand-off of its KV",
        CHAPTER,
    )


# --- what each pool completes ---------------------------------------------------------------------


@section
def _pools() -> None:
    formula(
        "prefill_pool_rate",
        "pool_rate",
        _c / prefill_time,
        "requests per second the prefill pool completes at full load: its replicas over one prefill",
        CHAPTER,
    )
    formula(
        "decode_pool_rate",
        "pool_rate",
        replicas * batch / (answer_tokens * step_time),
        "requests per second the decode pool completes at full load: replicas x batch over one answer's decode",
        CHAPTER,
    )


defer(globals())  # the symbols above are made when SymPy is first needed
