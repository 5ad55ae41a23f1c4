"""The formulas of the validation chapter's closed loops (``book/12_validation.md``), each written once as a
SymPy expression: a benchmark's clients each send a request, wait for its answer, and send the next, so a new
request waits behind the prefills of the others (:func:`llmcourse.validation.closed_loop_ttft` uses them).

The symbols and formulas are registered in :data:`llmcourse.formulas.SYMBOLS` and
:data:`~llmcourse.formulas.FORMULAS` when this module is imported (``llmcourse.formulas`` imports it, with every
topic module, after :mod:`~llmcourse.formulas.core`).

Examples
--------
>>> from llmcourse.formulas import FORMULAS
>>> from llmcourse.units import Q_
>>> FORMULAS["closed_loop_wave_wait"](wave_share=1, concurrency=9, prefill_time=Q_(40, "ms")).to("ms")
<Quantity(160.0, 'millisecond')>
"""

from __future__ import annotations

from llmcourse.formulas import serving  # noqa: F401  (the symbols taken by name below are defined there first)
from llmcourse.formulas.core import built, defer, deferred_getattr, formula, section, sp, symbol, symbols

__all__: list[str] = []
__getattr__ = deferred_getattr(globals())  # the names the section below defines, made on first use

CHAPTER = "12_validation"

_conc = symbol(
    "concurrency", r"n_{c}", "", "requests in flight in a closed loop (a benchmark's concurrency)", integer=True
)
_wait = symbol(
    "prefill_wait", r"W_{pre}", "s", "time a new request waits behind the prefills ahead of it", allow_zero=True
)
_ttft = symbol("ttft", r"t_{ttft}", "s", "time to first token")
_share = symbol(
    "wave_share",
    r"s_{w}",
    "",
    "share of the other requests' prefills of a closed loop a new request waits behind, half on average",
    allow_zero=True,
    at_most=1,
)
_wave = symbol(
    "wave_wait", r"W_{wave}", "s", "time a new request waits behind the prefills of its own wave", allow_zero=True
)
_tp, _ts, _ta, _tau = symbols("prefill_time", "step_time", "answer_tokens", "time_per_token")
_queue = symbol(
    "queue_wait", r"W_{q}", "s", "time a request of a closed loop waits for a running one to finish", allow_zero=True
)
_running = symbol("running", r"B_{run}", "", "requests an engine runs at once (what fits, and its cap)", integer=True)


@section
def _closed_loop() -> None:
    global _cycle, _ahead
    #: A client's cycle without the wait: its prefill, half a decode step (the step under way when it
    #: arrives), and the rest of its answer at the time per token.
    _cycle = _tp + _ts / 2 + (_ta - 1) * _tau
    #: The cycle less the prefills of the other clients (negative when the prefills alone fill it).
    _ahead = _cycle - (_conc - 1) * _tp
    formula(
        "closed_loop_prefill_wait",
        "prefill_wait",
        # the positive root of W^2 + A W - (n_c - 1) t_pre^2 / 2 = 0, in the form that does not cancel: rationalised
        # where A >= 0 (the root is then small beside A), as it stands where A < 0
        built(
            "closed_loop_prefill_wait",
            lambda: sp.Piecewise(
                ((_conc - 1) * _tp**2 / (sp.sqrt(_ahead**2 + 2 * (_conc - 1) * _tp**2) + _ahead), _ahead >= 0),
                ((sp.sqrt(_ahead**2 + 2 * (_conc - 1) * _tp**2) - _ahead) / 2, True),
            ),
        ),
        "mean wait behind the prefills of the other n_c - 1 requests of a closed loop (Pollaczek-Khinchine for a "
        "fixed prefill time, at the utilisation the closed loop's own cycle gives)",
        CHAPTER,
    )
    formula(
        "closed_loop_wave_wait",
        "wave_wait",
        _share * (_conc - 1) * _tp / 2,
        "mean wait behind the prefills of a closed loop's wave: a request comes back with the others of its wave, the "
        "share s_w of whose prefills the decode steps let bunch ahead of it (all of them, s_w = 1, when the decode "
        "waits every prefill whole), half of them ahead of it on average",
        CHAPTER,
    )
    formula(
        "closed_loop_ttft",
        "ttft",
        built("closed_loop_ttft", lambda: _tp + _ts / 2 + sp.Max(_wait, _wave)),
        "time to first token at a concurrency: half the decode step under way, the wait (behind the requests' own "
        "wave or the queue's, the longer), then the request's prefill",
        CHAPTER,
    )
    formula(
        "closed_loop_throughput",
        "token_rate",
        _conc * _ta / (_ttft + (_ta - 1) * _tau),
        "output tokens per second of a closed loop of n_c requests (each: first token, then T_a - 1 more)",
        CHAPTER,
    )
    formula(
        "capped_queue_wait",
        "queue_wait",
        (_conc / _running - 1) * (_ttft + (_ta - 1) * _tau),
        "wait of a closed loop of n_c requests on an engine that runs B_run at once: each running request is served "
        "in its first token and T_a - 1 more, the rest queued (Little's law: n_c = X (W_q + service), X = B_run / "
        "service)",
        CHAPTER,
    )
    formula(
        "closed_loop_request_time",
        "time_in_system",
        _ttft + (_ta - 1) * _tau,
        "end-to-end time of one request of a closed loop: its first token, then T_a - 1 more",
        CHAPTER,
    )


defer(globals())  # the symbols above are made when SymPy is first needed
