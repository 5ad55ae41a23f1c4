"""Exercises for *Sizing the fleet* and *What a fleet costs* (``book/09_fleet.md``, ``book/09b_fleet_cost.md``):
replicas, GPUs, monthly cost, Little's law, the whole bill.

``fleet_ex1``, ``_ex2``, ``_ex3``, ``_ex5`` and ``_ex6`` follow the exercises of the same labels in *Sizing the
fleet* (their numeric part); ``fleet_ex4`` (the break-even API price at an average utilisation) and ``_ex11`` ..
``_ex13`` those of *What a fleet costs*. ``fleet_ex7`` .. ``fleet_ex10`` are extra, on the chat fleet.

The replica exercises (``fleet_ex1``, ``_ex2``, ``_ex4``, ``_ex7`` .. ``_ex9``) are a decode-only first cut of the
chapter's chat fleet (25.8 ms a step, 81 replicas, ~$296K a month): the capacity preset (``assumptions="capacity"``:
decode only, each conversation's KV read at its full length, 70% / 50%, a share of the throughput kept back for
prefill and bursts), and their stories state those shares; the chapter sizes the same fleet with its prompts charged.
"""

from __future__ import annotations

import llmcourse as lc
from llmcourse import Q_
from llmcourse.exercises._common import CAPACITY, COURSE, Story, define, pct, pick
from llmcourse.units import HOURS_PER_MONTH, fmt

EXERCISES: list = []

#: The method the notebook says these exercises follow (shown above its first exercise).
NOTEBOOK_METHOD = """
**The method.** Several replica exercises use a decode-only first cut of the chapter's chat fleet: decode steps
only, each conversation's whole KV cache read at every step, and a share of each replica's throughput kept back for
prefill and bursts. Each story states the shares it uses; the chapter sizes the same fleet with its prompts charged.
"""

#: The method of the decode-only first cut, and the share of throughput it keeps back, in percent.
METHOD = "capacity"
_HELD_BACK = round(100 * CAPACITY.headroom_fraction)

FLEET = dict(
    model="Llama-3.1-70B",
    precision="fp8",
    gpu="H100 SXM",
    tp=2,
    batch=64,
    context=2_400,
    demand=140_000,
    headroom_pct=_HELD_BACK,
)
_SETUPS = (
    ("Llama-3.1-70B", "fp8", "H100 SXM", 2),
    ("Llama-3.1-70B", "fp8", "H200 SXM", 2),
    ("Qwen2.5-72B", "fp8", "H100 SXM", 2),
    ("Llama-3.1-70B", "fp8", "B200", 1),
    ("Llama-3.1-8B", "bf16", "H100 SXM", 1),
)


def _usd(q) -> str:
    """A catalog price as a story prints it: ``$2.50``."""
    return f"${q.to('USD').m:,.2f}".removesuffix(".00")


def _words(v: dict) -> dict:
    """The variant with display keys, as the story prints them (no answer reads them): the GPU's catalog price per
    hour, and where the variant has them, the replica's GPUs and the weights' precision."""
    words = dict(price=_usd(lc.gpus[v["gpu"]].price_per_hour * Q_(1, "hour")))
    if "tp" in v:
        words["replica"] = f"one {v['gpu']}" if v["tp"] == 1 else f"{v['tp']} x {v['gpu']} (tensor parallel)"
    if "precision" in v:
        words["weights"] = v["precision"].upper()
    return v | words


def _vary(r):
    return _words(
        dict(zip(("model", "precision", "gpu", "tp"), pick(r, _SETUPS), strict=True))
        | dict(
            batch=pick(r, (24, 32, 40, 48, 56, 64)),
            context=pick(r, range(1_200, 3_201, 100)),
            demand=pick(r, range(20_000, 300_001, 10_000)),
            headroom_pct=pick(r, (20, _HELD_BACK, 50)),
        )
    )


def _replica(v):
    return lc.replica(
        v["model"],
        v["gpu"],
        tensor_parallel=v["tp"],
        batch=v["batch"],
        context_tokens=v["context"],
        weight_bytes=v["precision"],
        assumptions=METHOD,
    )


def _fleet(v):
    return lc.fleet(Q_(v["demand"], "1/s"), _replica(v), headroom_fraction=v["headroom_pct"] / 100)


_STORY = (
    "A public chat product serves {model} with {weights} weights and a BF16 KV cache. One replica is {replica}, "
    "running a batch of {batch} conversations of {context} tokens. Size it by a decode-only first cut: "
    "each decode step reads the weights and every "
    f"conversation's whole KV cache at {pct(CAPACITY.bandwidth_efficiency)} of peak bandwidth (or does "
    f"{CAPACITY.flops_per_param:g} FLOPs per parameter per conversation at {pct(CAPACITY.compute_efficiency)} of the "
    "BF16 peak, if slower), and a replica's throughput counts its decode steps only. "
)
_HINTS = (
    f"Bytes per step = weights + {{batch}} x KV per sequence; step time = bytes / ({{tp}} x "
    f"{CAPACITY.bandwidth_efficiency:g} x bandwidth).",
    "Replica throughput = {batch} / step time; usable = (100% - {headroom_pct}%) x that.",
    "Replicas = demand / usable throughput, rounded up; GPUs = replicas x {tp}.",
)

define(
    EXERCISES,
    "fleet_ex1",
    "GPUs for the demand",
    _STORY + "At peak the product needs {demand} output tokens per second, and each replica keeps {headroom_pct}% of "
    "its throughput back for prefill and bursts. How many GPUs does the fleet need?",
    "",
    _words(dict(FLEET, model="Llama-3.1-8B", precision="bf16", tp=1)),
    _vary,
    lambda v: _fleet(v).gpus,
    _HINTS,
    integer=True,
    bare_ok=True,
)

define(
    EXERCISES,
    "fleet_ex2",
    "More headroom",
    _STORY + "The product needs {demand} output tokens per second; each replica now keeps {headroom_pct}% of its "
    "throughput back. How many GPUs does the fleet need?",
    "",
    _words(dict(FLEET, headroom_pct=50)),
    _vary,
    lambda v: _fleet(v).gpus,
    _HINTS,
    integer=True,
    bare_ok=True,
    followup="How many replicas is that?",
)

define(
    EXERCISES,
    "fleet_ex3",
    "A fleet at national scale",
    "A national service needs {demand} tokens per second; measurements say one GPU sustains {per_gpu} tokens per "
    "second. How many GPUs?",
    "",
    dict(demand=21_701_250, per_gpu=3_000),
    lambda r: dict(demand=pick(r, range(1_000_000, 30_000_001, 250_000)), per_gpu=pick(r, range(1_000, 6_001, 250))),
    lambda v: lc.FORMULAS["replicas_needed"](demand=Q_(v["demand"], "1/s"), throughput=Q_(v["per_gpu"], "1/s")),
    ("GPUs = demand / tokens per second per GPU, rounded up.",),
    integer=True,
    bare_ok=True,
)


def _break_even(v):
    f = lc.FORMULAS
    served = f["tokens_served"](demand=Q_(v["demand"], "1/s"), utilisation=v["util_pct"] / 100, hours=HOURS_PER_MONTH)
    return f["break_even_price"](cost=_fleet(v).monthly_cost, tokens_served=served) * 1e6


define(
    EXERCISES,
    "fleet_ex4",
    "Build or buy",
    _STORY + "The fleet is sized for a peak of {demand} output tokens per second with {headroom_pct}% headroom per "
    "replica, runs always on (730 hours a month) at the GPU's catalog price of {price} per GPU-hour, and averages {util_pct}% of the peak "
    "demand over the month. At what API price per million output tokens would buying cost the same?",
    "USD",
    _words(FLEET | dict(util_pct=60)),
    lambda r: _vary(r) | dict(util_pct=pick(r, (30, 45, 60))),
    _break_even,
    (
        *_HINTS,
        "Monthly cost = GPUs x price per hour x 730 h.",
        "Tokens served = {demand} per s x {util_pct}% x 730 h; price per million = cost / tokens x 10^6.",
    ),
    tolerance=0.02,
    mistakes=lambda v: [(v["util_pct"] / 100, "did you divide by the peak demand instead of the average?")],
)

define(
    EXERCISES,
    "fleet_ex5",
    "Loading the weights of a new replica",
    Story(
        "An autoscaler starts a new replica of {model} with {precision_name} weights, read at {rate} GB/s. How long "
        "does loading the weights take?",
        lambda v: dict(precision_name=v["precision"].upper()),
    ),
    "s",
    dict(model="Llama-3.1-405B", precision="fp8", rate=2),
    lambda r: dict(
        model=pick(
            r, ("Llama-3.1-405B", "Llama-3.1-70B", "DeepSeek-V3", "Qwen3-235B-A22B", "Qwen2.5-72B", "gpt-oss-120b")
        ),
        precision=pick(r, ("fp8", "bf16", "int4")),
        rate=pick(r, (1, 1.5, 2, 3, 5, 8, 10, 12.5, 20, 25, 40)),
    ),
    lambda v: lc.FORMULAS["weight_read_time"](
        weights=lc.weight_bytes(v["model"], v["precision"]),
        n_gpus=1,
        bandwidth=Q_(v["rate"], "GB/s"),
        bandwidth_efficiency=1,
    ),
    ("Time = weight bytes / read rate.",),
    followup="And at a rate ten times faster, from local NVMe drives?",
)


def _vary_kv(r):
    """A replica, a request count and a length whose KV cache fits beside the weights (drawn again until it does)."""
    while True:
        v = dict(zip(("model", "precision", "gpu", "tp"), pick(r, _SETUPS), strict=True)) | dict(
            requests=pick(r, range(8, 129, 4)), context=pick(r, range(1_000, 16_001, 500))
        )
        top = lc.max_batch(v["model"], v["gpu"], v["context"], n_gpus=v["tp"], weight_bytes=v["precision"])
        if top >= v["requests"]:
            return _kv_words(v)


def _kv_words(v: dict) -> dict:
    """The variant with the model's KV cache per token as the story prints it (a display key)."""
    return v | dict(kv_token=fmt(lc.kv_bytes_per_sequence(v["model"], 1), "KiB"), weights=v["precision"].upper())


define(
    EXERCISES,
    "fleet_ex6",
    "KV of a replica full of long documents",
    "Two replicas of the chat fleet, each {model} with {weights} weights and a BF16 KV cache ({kv_token} per "
    "token) on {tp} x {gpu}, each run {requests} requests. Replica A's are short chats; replica B's are "
    "{context}-token document conversations. How much KV cache does replica B hold?",
    "GB",
    _kv_words(dict(model="Llama-3.1-70B", precision="fp8", gpu="H100 SXM", tp=2, requests=40, context=5_000)),
    _vary_kv,
    lambda v: v["requests"] * lc.kv_bytes_per_sequence(v["model"], v["context"]),
    ("KV = requests x context x KV per token.",),
    kv=True,
    followup="How much does replica A hold if its chats are a thousand tokens each, and how much room is left "
    "beside the weights on each? Which replica should the next request go to, and why does a least-requests router "
    "get it wrong?",
)

define(
    EXERCISES,
    "fleet_ex7",
    "Step time of a replica",
    _STORY + "How long is one decode step?",
    "ms",
    _words(FLEET),
    _vary,
    lambda v: _replica(v).step.step_time,
    _HINTS[:1],
    mistakes=lambda v: [(v["tp"], "did you use one GPU's bandwidth only?")] if v["tp"] > 1 else [],
)

define(
    EXERCISES,
    "fleet_ex8",
    "Replicas for the demand",
    _STORY + "At peak the product needs {demand} output tokens per second. Each replica keeps {headroom_pct}% of its "
    "throughput back for prefill and bursts. How many replicas are needed?",
    "",
    _words(FLEET),
    _vary,
    lambda v: _fleet(v).replicas,
    _HINTS,
    integer=True,
    bare_ok=True,
)

define(
    EXERCISES,
    "fleet_ex9",
    "The monthly bill",
    _STORY + "The fleet must serve {demand} output tokens per second with {headroom_pct}% headroom per replica, "
    "always on (730 hours a month), at the GPU's catalog price of {price} per GPU-hour. What does it cost per month?",
    "USD",
    _words(FLEET),
    _vary,
    lambda v: _fleet(v).monthly_cost,
    (*_HINTS, "Cost = GPUs x lc.gpus['{gpu}'].price_per_hour x 730 hours."),
    mistakes=lambda v: [(1 / v["tp"], "did you count replicas instead of GPUs?")] if v["tp"] > 1 else [],
)

define(
    EXERCISES,
    "fleet_ex10",
    "Requests in flight",
    "A voice assistant receives {rate} requests per second; each spends {time} s in the system from arrival to "
    "last token. On average, how many requests are in flight?",
    "",
    dict(rate=50, time=12),
    lambda r: dict(rate=pick(r, range(5, 501, 5)), time=pick(r, (2, 3, 4.5, 6.5, 8, 10, 12, 15, 20, 30))),
    lambda v: lc.FORMULAS["littles_law"](request_rate=Q_(v["rate"], "1/s"), time_in_system=Q_(v["time"], "s")),
    ("Little's law: in flight = arrival rate x time in system.",),
    bare_ok=True,
)


# --- the whole bill: energy, owning, an API (the chapter's section "The whole bill") ---------------------------------
#: The power model the stories state, from the course's assumptions (the sources' methods have none).
_POWER = (
    f"The course's power model: a GPU draws {pct(COURSE.gpu_idle_power_fraction)} of its rated power when idle and "
    f"{pct(COURSE.gpu_load_power_fraction)} at full load, in proportion to its utilisation in between; the server "
    f"around it draws {pct(COURSE.host_power_fraction)} of the GPU's rated power, busy or idle; the site multiplies "
    "the lot by its PUE. "
)
_BILL_GPUS = ("H100 SXM", "H200 SXM", "B200", "A100 SXM 80GB", "L40S", "MI300X")
_OWNED_GPUS = tuple(lc.hardware_prices)  # the GPUs with a purchase price in hardware_prices.csv


def _site_power(v):
    f = lc.FORMULAS
    tdp = lc.gpus[v["gpu"]].power
    draw = f["gpu_power_draw"](
        gpu_power=tdp,
        gpu_idle_power_fraction=COURSE.gpu_idle_power_fraction,
        gpu_load_power_fraction=COURSE.gpu_load_power_fraction,
        utilisation=v["util_pct"] / 100,
    )
    return f["site_power"](gpu_draw=draw, gpu_power=tdp, host_power_fraction=COURSE.host_power_fraction, pue=v["pue"])


def _per_million_at_u(v, price):
    full = lc.cost_per_million(price, Q_(v["tokens"], "1/s"), v["n"])
    return lc.FORMULAS["cost_at_utilisation"](cost_full=full, utilisation=v["util_pct"] / 100)


def _electricity_per_million(v):
    rate = lc.FORMULAS["electricity_rate"](electricity_price=Q_(v["cents"] / 100, "USD/kWh"), site_power=_site_power(v))
    return _per_million_at_u(v, rate)


def _site_words(v: dict) -> dict:
    """The variant with its GPU's catalog figures as the stories print them (display keys: each answer reads the
    catalog): the rated power, and the purchase prices where the catalog has them."""
    words = dict(power=fmt(lc.gpus[v["gpu"]].power, "W"))
    if v["gpu"] in lc.hardware_prices:
        hw = lc.hardware_prices[v["gpu"]]
        words |= dict(gpu_cost=_usd(hw.gpu_price), server_cost=f"{hw.server_price.to('USD').m:,.0f}")
    return v | words


def _vary_site(r, gpus=_BILL_GPUS):
    return _site_words(
        dict(
            gpu=pick(r, gpus),
            n=pick(r, (1, 2, 4, 8)),
            tokens=pick(r, range(400, 6_001, 100)),
            util_pct=pick(r, (20, 25, 30, 40, 50, 60, 75)),
            pue=pick(r, (1.1, 1.2, 1.3, 1.4, 1.5, 1.58)),
            cents=pick(r, (5, 6, 7, 8, 9, 10, 12, 15, 18)),
        )
    )


_SITE_STORY = (
    "A replica of {n} x {gpu} (rated at {power} each) delivers {tokens} output tokens "
    "per second at full load and is busy {util_pct}% of the time on average. Its site has a PUE of {pue} and pays "
    "{cents} US cents per kWh. " + _POWER
)
_SITE_HINTS = (
    "GPU draw = rated power x (idle share + (full-load share - idle share) x {util_pct}%).",
    "Site power per GPU = (GPU draw + server share x rated power) x {pue}.",
    "Per million tokens the replica is busy 10^6 / ({tokens} x {util_pct}%) seconds, drawing {n} x the site power.",
)

define(
    EXERCISES,
    "fleet_ex11",
    "The electricity in a million tokens",
    _SITE_STORY + "What does the electricity for one million output tokens cost?",
    "USD",
    _site_words(dict(gpu="H100 SXM", n=2, tokens=1_200, util_pct=30, pue=1.58, cents=8)),
    _vary_site,
    _electricity_per_million,
    (*_SITE_HINTS, "Cost = energy (kWh) x {cents} cents per kWh."),
    mistakes=lambda v: [
        (1 / v["pue"], "did you leave out the PUE?"),
        (
            v["util_pct"] / 100,
            "did you divide by the "
            "utilisation? Idle hours draw power too, and the tokens come only from the busy share.",
        ),
    ],
)


def _owning_per_million(v):
    hw = lc.hardware_prices[v["gpu"]]
    price = lc.FORMULAS["owning_price"](
        gpu_price=hw.gpu_price,
        server_price=hw.server_price,
        service_life=v["years"] * 12 * HOURS_PER_MONTH,
        electricity_price=Q_(v["cents"] / 100, "USD/kWh"),
        site_power=_site_power(v),
    )
    return _per_million_at_u(v, price)


define(
    EXERCISES,
    "fleet_ex12",
    "Owning a replica, per million tokens",
    _SITE_STORY + "The GPUs are bought at the catalog's prices, {gpu_cost} a GPU and {server_cost} more for its "
    "share of the server, and written off over {years} years of 8,760 hours, always on. What does owning cost per "
    "million output tokens, hardware and electricity together?",
    "USD",
    _site_words(dict(gpu="H100 SXM", n=2, tokens=1_200, util_pct=30, pue=1.58, cents=8, years=5)),
    lambda r: _vary_site(r, _OWNED_GPUS) | dict(years=pick(r, (3, 4, 5, 6))),
    _owning_per_million,
    (
        "Hardware per hour = (GPU price + server share) / ({years} x 8,760 h); electricity per hour = site power "
        "x {cents} cents per kWh.",
        *_SITE_HINTS[:2],
        "Per million tokens the replica runs 10^6 / ({tokens} x {util_pct}% x 3,600) hours on {n} GPUs.",
    ),
    tolerance=0.02,
)


def _break_even_rented(v):
    return lc.FORMULAS["break_even_utilisation_rented"](
        n_gpus=v["n"],
        price=lc.gpus[v["gpu"]].price_per_hour,
        throughput=Q_(v["tokens"], "1/s"),
        api_price=Q_(v["api"], "USD") / 1e6,
    )


def _vary_api(r):
    """A rented replica and an API that costs more per token than the replica at full load (so a break-even exists)."""
    while True:
        v = dict(
            gpu=pick(r, ("H100 SXM", "H200 SXM", "B200", "A100 SXM 80GB", "L40S", "MI300X")),
            n=pick(r, (1, 2, 4, 8)),
            tokens=pick(r, range(400, 6_001, 100)),
            api=pick(r, (0.2, 0.3, 0.4, 0.5, 0.6, 0.75, 0.9, 1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0)),
        )
        if 0.02 < _break_even_rented(v).m < 1:
            return _words(v)


define(
    EXERCISES,
    "fleet_ex13",
    "When renting beats an API",
    "A replica of {n} x {gpu} rented at the catalog's {price} per GPU-hour (power included) delivers {tokens} output "
    "tokens per second at full load. An API sells the same model's output at {api} US dollars per million tokens, "
    "all-in. Above what average utilisation (a fraction of the time) is renting the replica cheaper per "
    "token than the API?",
    "",
    _words(dict(gpu="H100 SXM", n=2, tokens=1_200, api=5.0)),
    _vary_api,
    _break_even_rented,
    (
        "Cost per million at full load = {n} x price per hour / ({tokens} x 3,600) x 10^6.",
        "At utilisation U it is the full-load cost / U; set that equal to ${api} and solve for U.",
    ),
    mistakes=lambda v: (
        [(1 / v["n"], "did you price one GPU instead of the replica's {n}?".format(**v))] if v["n"] > 1 else []
    ),
)
