"""The whole bill (llmcourse.planner.bill, llmcourse.formulas.bill): energy per token, tokens per megawatt, owning vs
renting vs an API. Expected values by hand arithmetic from the data files' figures: an H100 is rated 700 W
(gpus.csv), costs $30,000 with a $9,625 server share (hardware_prices.csv) and rents at $2.50 an hour; the
default site pays $0.0806 per kWh at a PUE of 1.58 (costs.csv); the course's power model idles a GPU at 15% of
its rating, runs it at 100% at full load and gives its server 50% (assumptions.py); hardware is written off
over 4 years of 8,760 hours."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import llmcourse as lc
from llmcourse import Q_
from llmcourse.catalog import Cost, HardwarePrice
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.planner.bill import Site, bill, default_cost

REP = lc.replica("Llama-3.1-8B", "H100 SXM", batch=64, prompt_tokens=1_000, answer_tokens=300)
X = REP.throughput.to("1/s").m  # tokens per second at full load, from the one replica model
REP70 = lc.replica(
    "Llama-3.1-70B", "H100 SXM", tensor_parallel=2, batch=64, prompt_tokens=2_000, answer_tokens=400, weight_bytes="fp8"
)
X70 = REP70.throughput.to("1/s").m
HOURS_A_YEAR = 365 * 24


def api_at(output, input_=None):
    """An API's prices per million output (and input) tokens, as a row of costs.csv is written ("given")."""
    return Cost("given", kind="api", value=Q_(output, "USD"), input_value=None if input_ is None else Q_(input_, "USD"))


def _site_w(u):
    """(700 W x (0.15 + 0.85 u) + 0.5 x 700 W) x 1.58."""
    return (700 * (0.15 + 0.85 * u) + 350) * 1.58


def test_power_per_gpu_by_hand():
    """At 40%: the GPU draws 700 x (0.15 + 0.85 x 0.4) = 343 W; with its server's 350 W, x 1.58: 1,094.94 W."""
    b = bill(REP, utilisation=0.4)
    assert b.gpu_draw.to("W").m == pytest.approx(343)
    assert b.site_power.to("W").m == pytest.approx(1_094.94)
    assert b.site_power_full.to("W").m == pytest.approx(1_659)  # (700 + 350) x 1.58
    assert b.gpus_per_megawatt == 602  # floor(1e6 / 1,659)


def test_energy_per_million_tokens_by_hand():
    """Energy per token = N x site power / (X x U): one GPU, 1,094.94 W, at 40% of X tokens per second."""
    b = bill(REP, utilisation=0.4)
    joules = 1_094.94 / (X * 0.4)
    assert b.energy_per_million.to("kWh").m == pytest.approx(joules * 1e6 / 3.6e6)
    assert b.tokens_per_s_per_megawatt.to("1/s").m == pytest.approx(X * 0.4 / 1_094.94 * 1e6)
    assert b.tokens_per_megawatt_hour == pytest.approx(3.6e9 / joules)


def test_two_gpus_per_replica_double_the_energy_per_token():
    """The 70B replica on two H100s at full load: 2 x 1,659 W over X70 tokens per second."""
    b = bill(REP70, utilisation=1)
    assert b.energy_per_million.to("kWh").m == pytest.approx(2 * 1_659 / X70 * 1e6 / 3.6e6)


def test_owning_and_renting_per_hour_and_per_million_by_hand():
    """Owning: $39,625 over 4 x 8,760 h = $1.1309 an hour, plus 1.09494 kW x $0.0806; renting: $2.50 an hour."""
    b = bill(REP, utilisation=0.4)
    capital = 39_625 / (4 * HOURS_A_YEAR)
    electricity = 1.09494 * 0.0806
    assert b.capital_per_hour.to("USD/hour").m == pytest.approx(capital)
    assert b.electricity_per_hour.to("USD/hour").m == pytest.approx(electricity)
    assert b.own_price_per_hour.to("USD/hour").m == pytest.approx(capital + electricity)
    per_million = 1e6 / (X * 3_600 * 0.4)  # hours of one GPU per million tokens at 40%
    assert b.own_cost_per_million.to("USD").m == pytest.approx((capital + electricity) * per_million)
    assert b.electricity_cost_per_million.to("USD").m == pytest.approx(electricity * per_million)
    assert b.rent_cost_per_million.to("USD").m == pytest.approx(2.50 * per_million)
    assert b.cost_per_million == b.own_cost_per_million
    assert bill(REP, utilisation=0.4, own=False).cost_per_million == b.rent_cost_per_million


def test_break_even_utilisation_rented_by_hand():
    """An API charging twice the full-load rental cost per token breaks even with renting at 50%."""
    full = 2.50 / (X * 3_600) * 1e6
    b = bill(REP, utilisation=0.3, api=api_at(2 * full), own=False)
    assert b.break_even_rented == pytest.approx(0.5)
    assert b.cheaper == "the API"  # at 30% renting costs 1 / 0.3 > 2 times its full-load cost
    assert bill(REP, utilisation=0.6, api=api_at(2 * full), own=False).cheaper == "renting"


def test_break_even_utilisation_owned_makes_owning_cost_the_api_price():
    """At the owned break-even U*, the hand cost per million, (capital + electricity at U*) x 1e6 / (3,600 X U*),
    is the API's price."""
    api = 0.25  # above the full-load owning cost per million of this replica (about $0.10), so U* is below 1
    b = bill(REP, utilisation=0.5, api=api_at(api))
    u = b.break_even_owned
    assert 0 < u < 1
    per_hour = 39_625 / (4 * HOURS_A_YEAR) + _site_w(u) / 1_000 * 0.0806
    assert per_hour * 1e6 / (3_600 * X * u) == pytest.approx(api)
    assert (b.cheaper == "owning") == (u < 0.5)


def test_an_api_cheaper_than_full_load_has_no_break_even():
    """An API below the full-load cost: no utilisation up to 100% pays, owning or renting."""
    b = bill(REP, utilisation=1, api=api_at(0.001))
    assert b.break_even_owned is None and b.break_even_rented is None and b.cheaper == "the API"
    assert "never" in dict(b.rows())["break-even utilisation against the API: owning / renting"]


def test_the_catalog_api_price_of_the_model_is_the_default():
    """With no API price given, the cheapest costs.csv row for the model: DeepInfra's $0.055 per million input and
    output tokens for Llama 3.1 8B, so at 1,000 prompt and 300 answer tokens $0.055 x (1 + 1,000 / 300) per
    million output tokens (Bedrock's $0.22 both ways would be four times that)."""
    b = bill(REP, utilisation=0.3)
    assert b.api_name == "DeepInfra Llama-3.1-8B"
    assert b.api_price_per_million.to("USD").m == pytest.approx(0.055 * (1 + 1_000 / 300))
    assert (b.api_output_price_per_million, b.api_input_price_per_million) == (Q_(0.055, "USD"), Q_(0.055, "USD"))
    other = lc.replica("Qwen2.5-7B", "H100 SXM", batch=32, prompt_tokens=1_000, answer_tokens=300)
    assert bill(other, utilisation=0.3).api_price_per_million is None


def test_the_api_price_includes_its_input_tokens_by_hand():
    """At 2,000 prompt and 400 answer tokens each output token carries 5 prompt tokens: DeepInfra's $0.40 out and
    $0.13 in are $0.40 + 5 x $0.13 = $1.05 per million output tokens, aigateway's $0.60 + 5 x $0.29 = $2.05."""
    deep, gate = bill(REP70, utilisation=0.3, api="DeepInfra 70B"), bill(REP70, utilisation=0.3, api="aigateway 70B")
    assert deep.api_price_per_million.to("USD").m == pytest.approx(1.05)
    assert gate.api_price_per_million.to("USD").m == pytest.approx(2.05)
    assert bill(REP70, utilisation=0.3).api_name == "DeepInfra Llama-3.1-70B"  # the cheaper of the two
    given = bill(REP70, utilisation=0.3, api=api_at(0.40, 0.13))
    assert given.api_price_per_million.to("USD").m == pytest.approx(1.05) and given.api_name == "given"
    # an output price alone is all-in: no input tokens are added to it
    assert bill(REP70, utilisation=0.3, api=api_at(0.40)).api_price_per_million == Q_(0.4, "USD")
    assert bill(REP70, utilisation=0.3, api="illustrative API").api_price_per_million.to("USD").m == pytest.approx(5)


def test_the_break_even_is_against_the_price_with_input_included():
    """Renting breaks even where its full-load cost per million over U is the API's all-in price: aigateway's
    $2.05 at 2,000 / 400 tokens gives U = ($2.50 x 2 GPUs / (3,600 x X70) x 1e6) / $2.05; against its $0.60
    output price alone renting would need more than 100% (about $1.15 / $0.60)."""
    full = 2.50 * 2 / (3_600 * X70) * 1e6
    b = bill(REP70, utilisation=0.3, api="aigateway 70B", own=False)
    assert 0 < full / 2.05 < 1 < full / 0.60
    assert b.break_even_rented == pytest.approx(full / 2.05)
    assert bill(REP70, utilisation=0.3, api=api_at(0.60), own=False).break_even_rented is None


def test_site_figures_default_to_the_marked_rows_and_can_be_given():
    """US industrial electricity and the industry-average PUE by default; Virginia and a hyperscale PUE on request."""
    b = bill(REP, utilisation=0.5)
    assert (b.electricity_name, b.pue_name, b.pue) == ("US industrial average", "industry average", 1.58)
    v = bill(
        REP,
        utilisation=0.5,
        site=Site(electricity_price=lc.costs["Virginia"].value, pue=lc.costs["hyperscale"].value.m),
    )
    assert v.site_power.to("W").m == pytest.approx((700 * (0.15 + 0.85 * 0.5) + 350) * 1.1)
    assert v.electricity_per_hour.to("USD/hour").m == pytest.approx(v.site_power.to("kW").m * 0.0892)


def test_a_fleet_bills_every_gpu():
    """The 70B chat fleet: its GPUs x site power x 730 hours a month, and its GPUs x price per hour x 730."""
    fl = lc.fleet(Q_(140_000, "1/s"), REP70)
    b = bill(REP70, utilisation=0.3, fleet=fl)
    assert (b.replicas, b.gpus) == (fl.replicas, fl.gpus)
    assert b.monthly_energy.to("MWh").m == pytest.approx(fl.gpus * _site_w(0.3) * 730 / 1e6)
    assert b.monthly_rent.to("USD").m == pytest.approx(fl.gpus * 2.50 * 730)
    assert b.tokens_per_s.to("1/s").m == pytest.approx(fl.replicas * X70 * 0.3)
    other = lc.fleet(Q_(140_000, "1/s"), REP)
    with pytest.raises(InputError, match="another replica"):
        bill(REP70, utilisation=0.3, fleet=other)


def test_rows_name_every_figure():
    """The calculator's rows: power, energy, tokens per MW, renting, owning, the API; a fleet adds its totals."""
    labels = [k for k, _ in bill(REP70, utilisation=0.3).rows()]
    assert any("energy per million" in k for k in labels) and any("per MW" in k for k in labels)
    fl = lc.fleet(Q_(140_000, "1/s"), REP70)
    assert len(bill(REP70, utilisation=0.3, fleet=fl).rows()) == len(labels) + 2


# --- properties ----------------------------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(u1=st.floats(0.01, 1), u2=st.floats(0.01, 1), own=st.booleans())
def test_higher_utilisation_never_raises_the_cost_or_energy_per_token(u1, u2, own):
    """Busier GPUs share their idle power and their hourly price over more tokens."""
    lo, hi = sorted((u1, u2))
    a, b = bill(REP, utilisation=lo, own=own), bill(REP, utilisation=hi, own=own)
    assert b.cost_per_million.m <= a.cost_per_million.m * (1 + 1e-12)
    assert b.energy_per_million.m <= a.energy_per_million.m * (1 + 1e-12)


@settings(max_examples=40, deadline=None)
@given(y1=st.floats(0.5, 20), y2=st.floats(0.5, 20), u=st.floats(0.05, 1))
def test_more_years_never_raise_the_owning_cost_per_hour(y1, y2, u):
    """Writing the same hardware off over more years costs less per hour."""
    lo, hi = sorted((y1, y2))
    assert (
        bill(REP, utilisation=u, years=hi).own_price_per_hour.m
        <= bill(REP, utilisation=u, years=lo).own_price_per_hour.m
    )


# --- bad input -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("change", "words"),
    [
        (dict(utilisation=0), "utilisation must be greater than zero"),
        (dict(utilisation=1.2), "utilisation must be at most 1"),
        (dict(utilisation=-0.3), "utilisation must be greater than zero"),
        (dict(utilisation=math.nan), "utilisation"),
        (dict(utilisation="0.3"), "not text"),
        (dict(years=0), "years must be greater than zero"),
        (dict(years=-4), "years must be greater than zero"),
        (dict(gpu_price=Q_(-30_000, "USD")), "gpu_price must be greater than zero"),
        (dict(server_price=Q_(-1, "USD")), "server_price must be zero or more"),
        (dict(price_per_hour=Q_(-2.5, "USD/hour")), "price_per_hour must be greater than zero"),
        (dict(api="US industrial"), "name an api row"),
        (dict(api=lc.costs["US industrial"]), "name an api row"),
        (dict(site=dict(pue=1.3)), "site must be a Site"),
        (dict(price_per_hour=2.5), r"write Q_\(2.5, 'USD/hour'\)"),
        (dict(gpu_power=Q_(0, "W")), "gpu_power must be greater than zero"),
        (dict(gpu_power=Q_(-700, "W")), "gpu_power must be greater than zero"),
        (dict(own="yes"), "own"),
    ],
)
def test_bad_input_says_what_to_change(change, words):
    """Each bad argument gets an InputError naming it and what it must be."""
    with pytest.raises(InputError, match=words):
        bill(REP, **{"utilisation": 0.5, **change})


@pytest.mark.parametrize(
    ("site", "words"),
    [
        (dict(electricity_price=Q_(-0.1, "USD/kWh")), "electricity_price must be greater than zero"),
        (dict(electricity_price=Q_(0, "USD/kWh")), "electricity_price must be greater than zero"),
        (dict(electricity_price=0.08), "electricity_price needs a unit"),
        (dict(electricity_price=0.08), r"write Q_\(0.08, 'USD/kWh'\)"),
        (dict(electricity_price=Q_(0.08, "USD")), "electricity_price"),
        (dict(pue=0.9), "pue must be at least 1"),
        (dict(pue="1.3"), "not text"),
    ],
)
def test_a_bad_site_says_what_to_change(site, words):
    """Each bad figure of the site gets an InputError naming it and what it must be."""
    with pytest.raises(InputError, match=words):
        Site(**site)


@pytest.mark.parametrize(
    ("prices", "words"),
    [((-0.4, None), "value must be greater than zero"), ((0.4, -0.1), "input_value must be zero or more")],
)
def test_bad_api_prices_say_what_to_change(prices, words):
    """An API's prices written as a row of costs.csv are checked as the file's rows are."""
    with pytest.raises(InputError, match=words):
        bill(REP, utilisation=0.5, api=api_at(*prices))


def test_a_gpu_without_a_price_needs_one():
    """An L4 has no purchase price in hardware_prices.csv: owning asks for gpu_price=, renting works."""
    l4 = lc.replica("Llama-3.1-8B", "L4", batch=4, prompt_tokens=500, answer_tokens=200, weight_bytes="fp8")
    with pytest.raises(InputError, match="gpu_price="):
        bill(l4, utilisation=0.5)
    rented = bill(l4, utilisation=0.5, own=False)
    assert rented.own_cost_per_million is None and rented.rent_cost_per_million.m > 0
    assert bill(l4, utilisation=0.5, gpu_price=Q_(2_500, "USD")).own_cost_per_million.m > 0


def test_a_replica_that_does_not_fit_is_refused():
    """A batch beyond the memory is no deployment to bill."""
    big = lc.replica("Llama-3.1-70B", "H100 SXM", tensor_parallel=2, batch=512, prompt_tokens=2_000,
                     answer_tokens=400, weight_bytes="fp8")  # fmt: skip
    with pytest.raises(InputError, match="does not fit"):
        bill(big, utilisation=0.5)
    with pytest.raises(InputError, match="Replica"):
        bill("Llama-3.1-8B", utilisation=0.5)


# --- the data --------------------------------------------------------------------------------------------------------
def test_every_cost_row_has_a_source_and_a_date():
    """No price, PUE or power figure without a source and an 'as of'; one default per site kind."""
    for c in [*lc.costs.values(), *lc.hardware_prices.values()]:
        assert c.source and c.as_of, c
    assert default_cost("electricity").value == Q_(0.0806, "USD/kWh") and default_cost("pue").value.m == 1.58
    assert set(lc.hardware_prices) <= set(lc.gpus)


def test_cost_look_ups_forgive_and_suggest():
    """Aliases and case are accepted; an unknown name gets 'did you mean'."""
    assert lc.costs["us industrial"].name == "US industrial average"
    assert lc.hardware_prices["h100"].gpu_price == Q_(30_000, "USD")
    with pytest.raises(UnknownNameError, match="Did you mean 'hyperscale'"):
        lc.costs["hyperscaler site"]


def test_cost_rows_are_checked():
    """A negative price, a PUE below 1 or an unknown kind is refused."""
    with pytest.raises(InputError, match="at least 1"):
        Cost("x", kind="pue", value=0.5)
    with pytest.raises(InputError, match="kind must be one of"):
        Cost("x", kind="gas", value=1)
    with pytest.raises(InputError, match="greater than zero"):
        Cost("x", kind="electricity", value=Q_(-1, "USD/kWh"))
    with pytest.raises(InputError, match="server_price must be zero or more"):
        HardwarePrice("x", gpu_price=Q_(1, "USD"), server_price=Q_(-1, "USD"))
    with pytest.raises(InputError, match="input_value must be zero or more"):
        Cost("x", kind="api", value=Q_(1, "USD"), input_value=Q_(-1, "USD"))
    with pytest.raises(InputError, match="only an api row has an input_value"):
        Cost("x", kind="pue", value=1.2, input_value=Q_(1, "USD"))
    assert Cost("x", kind="api", value=Q_(1, "USD")).input_value == Q_(0, "USD")  # none given: all-in


def test_api_rows_keep_both_prices_of_their_source():
    """Each api row's input and output prices are the ones its source text quotes."""
    for c in lc.costs.values():
        if c.kind == "api" and c.name != "illustrative API":
            assert f"${c.value.m:g}" in c.source and f"${c.input_value.m:g}" in c.source, c.name
    assert lc.costs["illustrative API"].input_value.m == 0 and "all-in" in lc.costs["illustrative API"].source


def test_every_preset_has_the_same_power_model():
    """The sources' methods have no energy model: every preset carries the course's constants."""
    fields = ("gpu_idle_power_fraction", "gpu_load_power_fraction", "host_power_fraction", "depreciation_years")
    course = lc.resolve()
    assert all(getattr(p, f) == getattr(course, f) for p in lc.PRESETS.values() for f in fields)
    with pytest.raises(InputError, match="host_power_fraction"):
        course.replace(host_power_fraction=-0.1)


def test_rent_rows_and_the_nameplate_fields():
    """Each rent row's hourly price is the one its source quotes ($80.62 / 8 = $10.08 for the 8-GPU instance); the
    nameplate share is a DGX H100's 10.2 kW less 8 x 700 W of GPUs over the GPUs' 5,600 W = 0.821, 1,275 W a GPU;
    a site holds whole servers of 8."""
    rents = [c for c in lc.costs.values() if c.kind == "rent"]
    assert {c.name for c in rents} == {"reserved H100", "neocloud H100 on demand", "hyperscaler H100 on demand"}
    for c in rents:
        assert c.value.units == Q_(1, "USD/hour").units and c.model == "H100 SXM" and c.input_value is None
        assert f"${c.value.m:g}" in c.source or "$80.62" in c.source, c.name
    assert abs(lc.costs["hyperscaler H100 on demand"].value.m - 80.62 / 8) < 0.01
    course = lc.resolve()
    assert abs(course.host_nameplate_power_fraction - 4_600 / 5_600) < 1e-12 and course.gpus_per_server == 8
    assert abs(700 * (1 + course.host_nameplate_power_fraction) - 1_275) < 1e-9
    with pytest.raises(InputError, match="gpus_per_server"):
        course.replace(gpus_per_server=0)
    with pytest.raises(InputError, match="host_nameplate_power_fraction"):
        course.replace(host_nameplate_power_fraction=0.2)  # below the measured peak's 0.5
    with pytest.raises(InputError, match="greater than zero"):
        Cost("x", kind="rent", value=Q_(-1, "USD/hour"))
