"""Exercises for *Queueing* (``book/10_queueing.md``): the closed forms behind the simulation.

One replica is modelled as a single server with Poisson arrivals and exponential service (M/M/1):
utilisation rho = lambda / mu, mean time in system W = 1 / (mu - lambda), and Little's law N = lambda W.
The chapter's own exercises ``queueing_ex1`` .. ``queueing_ex6`` run its simulator and are open questions;
the auto-checked ones here are numbered from ``queueing_ex7``. These closed forms are registered here with :func:`llmcourse.formulas.formula` (section *10_queueing*).
"""

from __future__ import annotations

import llmcourse as lc
from llmcourse import Q_
from llmcourse.exercises._common import define, pick
from llmcourse.formulas import FORMULAS, SYMBOLS, formula

EXERCISES: list = []

_lam, _mu, _t = (SYMBOLS[n].sym for n in ("request_rate", "rps_per_gpu", "time_in_system"))
if "exercises_utilisation" not in FORMULAS:
    formula(
        "exercises_utilisation",
        "utilisation",
        _lam / _mu,
        "utilisation of one server (arrival / service rate)",
        "10_queueing",
    )
    formula(
        "exercises_mm1_time_in_system",
        "time_in_system",
        1 / (_mu - _lam),
        "mean time in an M/M/1 system",
        "10_queueing",
    )
    formula(
        "exercises_mm1_max_rate",
        "request_rate",
        _mu - 1 / _t,
        "highest arrival rate whose M/M/1 mean time in system is t_sys",
        "10_queueing",
    )


def _rates(r):
    mu = pick(r, (4, 5, 8, 10, 20))
    return dict(mu=mu, lam=round(mu * pick(r, (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)), 2))


def _w(v):
    if v["lam"] >= v["mu"]:  # pragma: no cover - the variants keep lambda < mu
        raise ValueError("arrivals at or above the service rate: the queue grows without bound")
    return FORMULAS["exercises_mm1_time_in_system"](request_rate=Q_(v["lam"], "1/s"), rps_per_gpu=Q_(v["mu"], "1/s"))


_STORY = (
    "A replica of a translation service completes requests at {mu} per second on average when busy "
    "(exponential service times); requests arrive at random (Poisson) at {lam} per second. "
)

define(
    EXERCISES,
    "queueing_ex7",
    "Utilisation",
    _STORY + "What fraction of the time is the replica busy?",
    "",
    dict(mu=10, lam=8),
    _rates,
    lambda v: FORMULAS["exercises_utilisation"](request_rate=Q_(v["lam"], "1/s"), rps_per_gpu=Q_(v["mu"], "1/s")),
    ("Utilisation = arrival rate / service rate.",),
    bare_ok=True,
)

define(
    EXERCISES,
    "queueing_ex8",
    "Mean time in the system",
    _STORY + "Modelled as an M/M/1 queue, how long does a request spend in the system on average (waiting plus "
    "being served)?",
    "s",
    dict(mu=10, lam=8),
    _rates,
    _w,
    ("For M/M/1: W = 1 / (service rate - arrival rate).",),
    mistakes=lambda v: [((v["mu"] - v["lam"]) / v["mu"], "that is the service time alone: add the wait")],
)

define(
    EXERCISES,
    "queueing_ex9",
    "Requests in the system",
    _STORY + "How many requests are in the system on average?",
    "",
    dict(mu=10, lam=8),
    _rates,
    lambda v: lc.FORMULAS["littles_law"](request_rate=Q_(v["lam"], "1/s"), time_in_system=_w(v)),
    ("Little's law: N = arrival rate x mean time in system.", "The M/M/1 time in system is 1 / (mu - lambda)."),
    bare_ok=True,
)

define(
    EXERCISES,
    "queueing_ex10",
    "How much slower near saturation",
    _STORY + "By what factor is the mean time in system longer than the service time alone (1 / service rate)?",
    "",
    dict(mu=10, lam=9.5),
    _rates,
    lambda v: (_w(v) * Q_(v["mu"], "1/s")).to(""),
    ("Divide W = 1 / (mu - lambda) by 1 / mu.", "The result is 1 / (1 - utilisation)."),
    bare_ok=True,
)

define(
    EXERCISES,
    "queueing_ex11",
    "The highest rate a latency target allows",
    "A replica completes {mu} requests per second when busy. The product promises a mean time in system of at "
    "most {target} s. Under the M/M/1 model, what is the highest arrival rate the replica may take?",
    "1/s",
    dict(mu=10, target=0.5),
    lambda r: dict(mu=pick(r, (4, 8, 10, 20)), target=pick(r, (0.5, 1.0, 2.0))),
    lambda v: FORMULAS["exercises_mm1_max_rate"](rps_per_gpu=Q_(v["mu"], "1/s"), time_in_system=Q_(v["target"], "s")),
    ("Solve 1 / (mu - lambda) = target for lambda.", "lambda = mu - 1 / target."),
)


def _little_time(v):
    # Little's law solved for the time: the formula gives N for (lambda, W); N is linear in W.
    one_second = lc.FORMULAS["littles_law"](request_rate=Q_(v["rate"], "1/s"), time_in_system=Q_(1, "s")).m
    return Q_(v["inflight"] / one_second, "s")


define(
    EXERCISES,
    "queueing_ex12",
    "Little's law backwards",
    "A dashboard shows {inflight} requests in flight on average while {rate} requests per second arrive. What is "
    "the average time a request spends in the system?",
    "s",
    dict(inflight=300, rate=50),
    lambda r: dict(inflight=pick(r, (40, 120, 300, 900)), rate=pick(r, (10, 25, 50, 200))),
    _little_time,
    ("Little's law: N = lambda x W, so W = N / lambda.",),
)
