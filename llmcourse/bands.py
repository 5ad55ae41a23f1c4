"""The bands on the course's answers: the table of 80% bands shipped in ``llmcourse/data/bands.json``, read.

A band says how far measured serving results landed from the one replica model's predictions, over a family of
setups like the one asked about (chapter *How good is the estimate?*, ``book/12_validation.md``).
:func:`llmcourse.validation.band_table` writes the table from the held-out evidence (``scripts/make_bands.py``);
this module only reads it (:func:`shipped_bands`, :func:`band_for`), so that a plan (:func:`plan_bands`, what
``Plan.rows()`` shows) and the first-estimate calculator draw a band without importing the validation package.

It also holds what the table and the validation share: the metrics and their units, the table's constants, and
the families rows are grouped by (a GPU's generation, a model's architecture, the concurrency and replica-size
bands).

Standard library only (with the catalog and the units): it runs in the live book.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from typing import Any

from llmcourse.catalog import gpus, models
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.units import Q_, as_quantity, parsed_unit, plain_number, to

__all__ = [
    "BANDS_FILE",
    "BAND_METRICS",
    "BAND_PERCENTILES",
    "BAND_WHICH",
    "GENERATIONS",
    "GPU_VENDORS",
    "LLAMA_CPP_BANDS_FILE",
    "METRICS",
    "METRIC_NAMES",
    "MIN_BAND_ROWS",
    "MIN_MODEL_BAND_ROWS",
    "VENDOR_FACTOR_FILE",
    "Band",
    "VendorFactor",
    "architecture",
    "band_for",
    "concurrency_band",
    "gpu_generation",
    "gpus_band",
    "in_reading_order",
    "llama_cpp_band",
    "llama_cpp_band_scope",
    "model_key",
    "nearest_catalog_gpu",
    "plan_bands",
    "shipped_bands",
    "shipped_llama_cpp_bands",
    "shipped_vendor_factors",
    "vendor_factor",
    "vendor_factor_for",
    "vendor_factor_row",
]


#: The metrics a row may report, and their units.
METRICS = {"output_tokens_per_s": "1/s", "itl_ms": "ms", "ttft_ms": "ms", "tpot_ms": "ms"}
#: What each metric is, in words.
METRIC_NAMES = {
    "output_tokens_per_s": "output tokens per second",
    "itl_ms": "inter-token latency",
    "ttft_ms": "time to first token",
    "tpot_ms": "time per output token",
}

#: The predictions the shipped bands come from: each (model, GPU, engine) group's rows predicted with the parameters
#: fitted without that group (leave one group out), so that a band says how far a setup not yet measured lands; the
#: validation chapter measures the bands' coverage on the same folds (``llmcourse.validation.coverage``).
BAND_WHICH = "held_out_group"
#: Where a family's median measured / predicted lies outside this range, a band's text shows the figure corrected
#: by that median beside the model's own (the band is around the corrected one, not the model's).
CORRECTED_OUTSIDE = (0.8, 1.25)
#: The metrics bands are drawn for (those of the closed-loop rows), and the band's percentiles.
BAND_METRICS = ("tpot_ms", "ttft_ms")
BAND_PERCENTILES = (10, 90)
#: The shipped table of bands, in ``llmcourse/data`` (written by ``scripts/make_bands.py``).
BANDS_FILE = "bands.json"

#: Fewest held-out rows a band is drawn from; a family with fewer is widened (see
#: :meth:`llmcourse.validation.Evidence.band`).
MIN_BAND_ROWS = 30
#: Fewest rows a model's own family would need. The bands no longer draw on a model's own rows: held out by
#: (model, GPU, engine) group, a band from the model's other groups held 57% of the time-per-token rows, one from
#: its architecture on the GPU's generation 77% (the validation chapter); kept for the tables that name it.
MIN_MODEL_BAND_ROWS = 20
#: Fewest groups (harnesses, models) of a vendor's published rows for a factor an answer shows: with fewer, holding
#: one group out leaves a band drawn from one or two rows, which covers nothing; the answer shows what the rows ran.
MIN_VENDOR_GROUPS = 3
#: Rows at which a (model, GPU, engine) setup counts in full. A band is read for a setup, often one nobody has
#: measured, so each setup of this many rows or more counts once in a band's percentiles, and a smaller one in
#: proportion to its rows (one of 2 rows counts a tenth: a stray row cannot draw a band's edge). Also the rows a
#: group needs to be listed on its own in the validation chapter's tables.
SETUP_ROWS = 20

#: A GPU's generation, for the family tables (a GPU not listed is its own family).
GENERATIONS = {
    "H100 SXM": "Hopper", "H100 PCIe": "Hopper", "H200 SXM": "Hopper", "B200": "Blackwell", "GB200": "Blackwell",
    "B300": "Blackwell Ultra", "GB300": "Blackwell Ultra", "A100 SXM 80GB": "Ampere", "A100 SXM 40GB": "Ampere",
    "A10G": "Ampere", "L4": "Ada", "L40S": "Ada", "RTX 4090": "Ada", "MI300X": "CDNA 3", "MI325X": "CDNA 3",
}  # fmt: skip
#: The shipped vendor factors, in ``llmcourse/data`` (written by ``scripts/make_vendor_factors.py`` from the
#: published AMD, Intel and AWS rows, ``llmcourse.validation.vendors.vendor_factor_table``).
VENDOR_FACTOR_FILE = "vendor_factors.json"
#: The table of llama.cpp's bands (``scripts/make_llama_cpp_bands.py``): one person's machine, one sequence.
LLAMA_CPP_BANDS_FILE = "llama_cpp_bands.json"
#: The vendor of each catalog accelerator whose answers may carry a vendor factor (:func:`vendor_factor_for`): AMD's,
#: Intel's and AWS's. NVIDIA's answers carry the bands of the NVIDIA rows instead; Google's TPUs carry none until a
#: published row of theirs is read (the vendor has no factor in the shipped table), and Apple's have no rows here.
GPU_VENDORS = {
    "MI300X": "AMD", "MI325X": "AMD", "MI350X": "AMD", "MI355X": "AMD", "Gaudi 3": "Intel", "Arc Pro B60": "Intel",
    "Trainium2": "AWS", "TPU v5e": "Google", "TPU v6e": "Google", "TPU v7": "Google",
}  # fmt: skip
#: The concurrency families: the most requests in flight of each, and its label (above the last: ``"257+"``).
_BANDS = ((4, "1-4"), (16, "5-16"), (64, "17-64"), (256, "65-256"))


@dataclass(frozen=True)
class Band:
    """An 80% band around a predicted value from the held-out errors of a family of measured rows."""

    value: float
    low: float
    high: float
    n: int
    family: str
    unit: str = ""
    median: float = 1.0
    setups: int | None = None

    @property
    def corrected(self) -> float:
        """The value times the family's median measured / predicted: where the family's setups landed."""
        return self.value * self.median

    @property
    def needs_correction(self) -> bool:
        """Whether the family's median measured / predicted lies outside :data:`CORRECTED_OUTSIDE`."""
        return not CORRECTED_OUTSIDE[0] <= self.median <= CORRECTED_OUTSIDE[1]

    def text(self, what: str = "prediction") -> str:
        """One line: the value (and, where the family's median measured / predicted is far from 1, the corrected
        figure, which the band is around), then the band, the measured setups and rows it is drawn from, and the
        family.

        Examples
        --------
        >>> Band(21.2, 17.04, 27.4, 212, "time per output token, dense models, Hopper GPUs", "ms", setups=7).text("time per token")
        'time per token 21 ms; 80% band 17 to 27 ms, from 7 measured setups like this one (212 rows; family: time per output token, dense models, Hopper GPUs)'
        >>> print(Band(172.0, 82.0, 137.0, 300, "time to first token, MoE models, Hopper GPUs", "ms", 0.62).text("first token"))
        first token 172 ms by the model, 107 ms corrected (measured setups like this one ran 0.62x the model's figure); 80% band 82 to 137 ms, from 300 measured rows like this one (family: time to first token, MoE models, Hopper GPUs)
        """
        u = f" {self.unit}" if self.unit else ""
        head = f"{what} {_figure(self.value)}{u}"
        if self.needs_correction:
            head += (
                f" by the model, {_figure(self.corrected)}{u} corrected (measured setups like this one ran "
                f"{self.median:.2f}x the model's figure)"
            )
        band = f"80% band {_figure(self.low)} to {_figure(self.high)}{u}"
        if self.setups is None:
            return f"{head}; {band}, from {self.n:,} measured rows like this one (family: {self.family})"
        return (
            f"{head}; {band}, from {self.setups} measured setups like this one ({self.n:,} rows; family: {self.family})"
        )


def _figure(x: float) -> str:
    """A figure as a reader reads it: whole numbers from 10 up (with thousands separators), else two
    significant digits, never an exponent.

    Examples
    --------
    >>> _figure(21.2), _figure(1234.5), _figure(8.46), _figure(0.0123)
    ('21', '1,234', '8.5', '0.012')
    """
    x = float(x)
    if not math.isfinite(x) or x == 0 or abs(x) >= 10:
        return f"{x:,.0f}"
    return f"{x:,.{max(0, 1 - math.floor(math.log10(abs(x))))}f}"


def gpu_generation(gpu: Any) -> str:
    """A GPU's generation, the family the bands and tables use (a GPU not in :data:`GENERATIONS` is
    its own family).

    Examples
    --------
    >>> gpu_generation("H200"), gpu_generation("B300"), gpu_generation("A10G")
    ('Hopper', 'Blackwell Ultra', 'Ampere')
    """
    name = gpus[getattr(gpu, "name", gpu)].name
    return GENERATIONS.get(name, name)


def nearest_catalog_gpu(gpu: Any) -> str:
    """The catalog GPU of a generation in :data:`GENERATIONS` whose datasheet is nearest a GPU's: the least sum
    of squared log ratios of the memory bandwidth and the dense BF16 FLOP/s (the two figures a replica's step
    runs on). What the bands of a GPU outside the catalog (a hand-made :class:`~llmcourse.catalog.GPU`) are
    drawn from: the nearest family, never a measured one.

    Examples
    --------
    >>> from llmcourse.catalog import GPU
    >>> from llmcourse.units import Q_
    >>> nearest_catalog_gpu(GPU("MI355X", memory=Q_(288, "GB"), bandwidth=Q_(8, "TB/s"), flops=Q_(2300, "TFLOP/s")))
    'B300'
    """
    bw, fl = (float(to(gpu.bandwidth, "TB/s").magnitude), float(to(gpu.flops, "TFLOP/s").magnitude))

    def distance(g: Any) -> float:
        gb, gf = float(to(g.bandwidth, "TB/s").magnitude), float(to(g.flops, "TFLOP/s").magnitude)
        return math.log(bw / gb) ** 2 + math.log(fl / gf) ** 2

    return min((g for g in gpus.values() if g.name in GENERATIONS), key=distance).name


def _in_catalog(table: Any, thing: Any) -> Any | None:
    """The catalog's entry of a name or of an object of the catalog's (by its name and equal to the entry), else
    None (a model from ``Model.from_hf_config``, a hand-made GPU): what its bands are looked up under."""
    if isinstance(thing, str):
        return table[thing]  # an unknown name raises, as the catalog's look-up says
    try:
        got = table[str(thing.name)]
    except UnknownNameError:
        return None
    return got if got is thing or got == thing else None  # the catalog's name on other figures: not the measured one


def architecture(model: Any) -> str:
    """``"MoE"`` for a mixture-of-experts model, else ``"dense"``.

    Examples
    --------
    >>> architecture("Llama-3.1-8B"), architecture("DeepSeek-V3")
    ('dense', 'MoE')
    """
    return "MoE" if models[getattr(model, "name", model)].is_moe else "dense"


def concurrency_band(concurrency: int | None) -> str:
    """The concurrency family of a row: ``"1-4"``, ``"5-16"``, ``"17-64"``, ``"65-256"`` or ``"257+"``."""
    if concurrency is None:
        return "n/a"
    return next((label for top, label in _BANDS if concurrency <= top), "257+")


def gpus_band(n_gpus: int) -> str:
    """The replica-size family of a row: ``"1 GPU"``, ``"2 GPUs"``, ``"4 GPUs"``, ``"8 GPUs"`` or ``"9+ GPUs"``.

    Examples
    --------
    >>> gpus_band(1), gpus_band(4), gpus_band(16)
    ('1 GPU', '4 GPUs', '9+ GPUs')
    """
    if n_gpus == 1:
        return "1 GPU"
    return f"{n_gpus} GPUs" if n_gpus in (2, 4, 8) else ("9+ GPUs" if n_gpus > 8 else f"{n_gpus} GPUs")


def in_reading_order(facet: str, values: Iterable[str]) -> list[str]:
    """A facet's values in reading order: concurrency bands from the lowest, anything else sorted."""
    if facet == "concurrency_band":
        order = [b for _, b in _BANDS] + ["257+", "n/a"]
        return sorted(values, key=lambda v: order.index(v) if v in order else len(order))
    return sorted(values)


def model_key(metric: str, model: str, generation: str | None = None) -> str:
    """The key of a model's own family in the table of bands: ``"tpot_ms/model=GLM-5"``, and with a GPU
    generation ``"tpot_ms/model=GLM-5/Hopper"``."""
    return f"{metric}/model={model}" + (f"/{generation}" if generation else "")


#: The tables shipped in ``llmcourse/data``, by file name, each read once.
_SHIPPED: dict[str, dict[str, Any]] = {}


def _shipped(file: str, script: str) -> dict[str, Any]:
    """The JSON table ``llmcourse/data/<file>`` (read once); a missing file names the script that writes it."""
    if file not in _SHIPPED:
        try:
            text = resources.files("llmcourse.data").joinpath(file).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise InputError(f"llmcourse/data/{file} is missing: run {script}.") from None
        _SHIPPED[file] = json.loads(text)
    return _SHIPPED[file]


def shipped_llama_cpp_bands() -> dict[str, Any]:
    """The table of llama.cpp's bands shipped in ``llmcourse/data/llama_cpp_bands.json`` (read once)."""
    return _shipped(LLAMA_CPP_BANDS_FILE, "scripts/make_llama_cpp_bands.py")


def llama_cpp_band(kind: str) -> dict[str, Any]:
    """The 80% band of llama.cpp's measured / predicted tokens per second for ``kind`` ``"decode"`` (typing one
    sequence's tokens) or ``"prefill"`` (reading a prompt), with its rows, machines and held-out coverage, from the
    shipped table (``llmcourse/data/llama_cpp_bands.json``, public ``llama-bench`` rows held out by machine).

    Examples
    --------
    >>> b = llama_cpp_band("decode")
    >>> b["low"] < 1 < b["high"], b["machines"] >= 6
    (True, True)
    """
    table = shipped_llama_cpp_bands()
    kinds = table["kinds"]
    if kind not in kinds:
        raise UnknownNameError(f"no llama.cpp band for {kind!r}: give one of {', '.join(sorted(kinds))}.")
    return {**kinds[kind], **{k: table[k] for k in ("method", "models", "weights", "gpus")}}


def llama_cpp_band_scope(band: dict[str, Any]) -> str:
    """What a llama.cpp band (:func:`llama_cpp_band`) was measured on, in words: its runs' models, weights and machines,
    and its held-out coverage.

    Examples
    --------
    >>> "llama-bench" in llama_cpp_band_scope(llama_cpp_band("decode"))
    True
    """
    models_ = ", ".join(band["models"])
    weights = " and ".join(w.upper() for w in band["weights"])
    cov = band["coverage"]
    held = (
        "its coverage not measured (fewer than three machines)"
        if cov is None
        else f"with each machine held out in turn, {cov:.0%} of its runs fell inside"
    )
    return (
        f"public llama-bench runs of {models_} in {weights} on {band['machines']} machines, one sequence at short "
        f"contexts; {held}"
    )


def shipped_bands() -> dict[str, Any]:
    """The table of bands shipped in ``llmcourse/data/bands.json`` (read once)."""
    return _shipped(BANDS_FILE, "scripts/make_bands.py")


def band_for(metric: str, model: Any, gpu: Any, value: Any = 1.0, *, table: dict[str, Any] | None = None) -> Band:
    """An 80% band around a prediction of ``metric`` (``"tpot_ms"`` or ``"ttft_ms"``) for a model on a
    GPU, from the shipped table (:func:`shipped_bands`, or ``table``): the first family the table has, of
    the metric and, in turn, the model's architecture on the GPU's generation; the architecture on any GPU;
    the metric alone. A model's own rows are not a family of their own: held out by (model, GPU, engine)
    group, the spread of a model's rows on its other GPUs and engines is narrower than how far a new pairing
    lands (the validation chapter's coverage); the family says what was measured of the model. A model or a GPU
    outside the catalog (``Model.from_hf_config``, a hand-made ``GPU``) gets the nearest family, labelled
    "not measured". ``value`` is the prediction, in ms or as a time quantity (1 by default: the band is then
    the ratios); the band carries the family's median measured / predicted (:attr:`Band.corrected`).
    Standard library only (it runs in the live book).

    Examples
    --------
    >>> b = band_for("tpot_ms", "Llama-3.1-70B", "H100 SXM", 20.0)
    >>> b.family, b.low < 20.0 < b.high, b.n > 100
    ('time per output token, dense models, Hopper GPUs; Llama-3.1-70B measured on Blackwell and Hopper GPUs', True, True)
    >>> band_for("tpot_ms", "Llama-3.1-8B", "B200").family
    'time per output token, dense models, Blackwell GPUs; Llama-3.1-8B measured on Hopper GPUs only'
    >>> band_for("tpot_ms", "Mixtral-8x7B", "H100 SXM").family
    'time per output token, MoE models, Hopper GPUs; Mixtral-8x7B not measured'
    """
    t = shipped_bands() if table is None else table
    if metric not in BAND_METRICS:
        raise InputError(f"metric {metric!r}: bands are drawn for {', '.join(BAND_METRICS)}.")
    known_model, known_gpu = _in_catalog(models, model), _in_catalog(gpus, gpu)
    arch = architecture(model) if known_model is not None else ("MoE" if model.is_moe else "dense")
    near = None if known_gpu is not None else nearest_catalog_gpu(gpu)
    gen = gpu_generation(known_gpu if near is None else near)
    unit = METRICS[metric]
    if type(value) is Q_ and value._units == parsed_unit(unit)[0]._units:  # in the metric's unit already
        value = float(value._magnitude)  # what the conversion below gives: the magnitude itself
    elif hasattr(value, "to") and hasattr(value, "magnitude"):
        value = float(to(as_quantity(value, "s", "value"), unit).magnitude)  # to(): the unit parsed once
    v = plain_number(value, "value")
    name, fams, few = METRIC_NAMES[metric], t["families"], t["min_rows"]
    label = f"{name}, {arch} models"
    who = known_model.name if known_model is not None else str(model.name)
    seen = t.get("measured", {}).get(metric, {}).get(who) if known_model is not None else None
    gens = seen["generations"] if seen else []
    on = ", ".join(gens[:-1]) + (" and " if len(gens) > 1 else "") + (gens[-1] if gens else "")
    if near is not None or known_model is None:  # outside the catalog: the nearest family, said so
        out = [f"{who} (not in the catalog)" if known_model is None else who]
        if near is not None:
            out.append(f"{getattr(gpu, 'name', gpu)} (not in the catalog; its datasheet is nearest the {near}'s)")
        why = f"; not measured: nearest family for {' on '.join(out)}"
    elif seen is None:
        why = f"; {who} not measured"
    elif gen not in gens:
        why = f"; {who} measured on {on} GPUs only"
    else:
        why = f"; {who} measured on {on} GPUs"
    for key, text in (
        (f"{metric}/{arch}/{gen}", f"{label}, {gen} GPUs{why}"),
        (f"{metric}/{arch}", f"{label}, all GPUs (fewer than {few} measured {gen} rows){why}"),
        (metric, f"{name}, all models and GPUs (fewer than {few} measured {arch} rows){why}"),
    ):
        if key in fams:
            f = fams[key]
            med, setups = float(f.get("median", 1.0)), f.get("setups")
            return Band(
                v, v * f["low"], v * f["high"], int(f["n"]), text, unit, med, None if setups is None else int(setups)
            )
    raise InputError(f"the table of bands has no family of {metric}: run scripts/make_bands.py.")


@dataclass(frozen=True)
class VendorFactor:
    """A vendor's factor from its published rows (:func:`vendor_factor`): the median measured / predicted output
    tokens per second (``median``) of ``n`` rows in ``groups`` groups measured on ``gpus``, the 80% band of those
    ratios (``low`` to ``high``), and, held out by group, the median factor of a group's rows once divided by the
    other groups' factor (``held_median_factor``), their share within 2x (``held_within_2x``) and the share inside
    the other groups' band (``held_coverage``); the least and most of the ratios (``least``, ``most``) and the
    batches the rows ran at (``batches``: least and most)."""

    vendor: str
    median: float
    low: float
    high: float
    n: int
    groups: int
    gpus: tuple[str, ...]
    held_median_factor: float
    held_within_2x: float
    held_coverage: float
    least: float = 0.0
    most: float = 0.0
    batches: tuple[int, ...] = ()

    @property
    def enough(self) -> bool:
        """Whether the rows are enough for a factor: :data:`MIN_VENDOR_GROUPS` groups or more (with fewer, holding
        one out leaves a band drawn from one or two rows, which covers nothing)."""
        return self.groups >= MIN_VENDOR_GROUPS

    def _measured_at(self) -> str:
        if not self.batches:
            return ""
        lo, hi = self.batches[0], self.batches[-1]
        if hi == 1:
            return ", one request at a time"
        return f", at batches {lo:,} to {hi:,}" if lo != hi else f", at a batch of {lo:,}"

    def time_text(self, gpu: str, value_ms: float, what: str = "time per token") -> str:
        """One line for a time per token of ``value_ms`` on ``gpu``: the model's figure, the figure divided by the
        factor (where the factor lies outside :data:`CORRECTED_OUTSIDE`) and the band, labelled with the vendor,
        the rows, the batches they ran at and the GPUs they were measured on; where the rows are too few for a factor
        (:attr:`enough`), the model's figure and what the rows ran, no factor and no band.

        Examples
        --------
        >>> f = VendorFactor("AMD", 0.4, 0.25, 0.8, 38, 5, ("MI300X",), 1.7, 0.74, 0.55, 0.2, 0.9, (1, 3200))
        >>> print(f.time_text("MI355X", 20.0))
        time per token 20 ms by the model, 50 ms by the AMD factor (38 published rows on MI300X, 5 groups, at batches 1 to 3,200, ran a median 0.40x the model's output tokens per second; MI355X not measured); 80% of those rows put it between 25 and 80 ms; each group held out, the other groups' factor left a median factor of 1.7, 74% within 2x, and their band covered 55% of its rows
        >>> print(VendorFactor("AWS", 1.07, 0.96, 1.19, 2, 2, ("Trainium2",), 1.3, 1.0, 0.0, 0.93, 1.22, (1, 1)).time_text("Trainium2", 20.0))
        time per token 20 ms by the model; too few AWS rows for a factor: 2 published rows on Trainium2 (2 groups, one request at a time) ran 0.93x to 1.22x the model's output tokens per second
        """
        v = float(value_ms)
        head = f"{what} {_figure(v)} ms"
        seen = "" if gpu in self.gpus else f"; {gpu} not measured"
        if not self.enough:
            return (
                f"{head} by the model; too few {self.vendor} rows for a factor: {self.n} published rows on "
                f"{', '.join(self.gpus)} ({self.groups} groups{self._measured_at()}) ran {self.least:.2f}x to "
                f"{self.most:.2f}x the model's output tokens per second{seen}"
            )
        if not CORRECTED_OUTSIDE[0] <= self.median <= CORRECTED_OUTSIDE[1]:
            head += f" by the model, {_figure(v / self.median)} ms by the {self.vendor} factor"
        else:
            head += f", the {self.vendor} factor near 1"
        return (
            f"{head} ({self.n} published rows on {', '.join(self.gpus)}, {self.groups} groups{self._measured_at()}, "
            f"ran a median {self.median:.2f}x the model's output tokens per second{seen}); 80% of those rows put it "
            f"between {_figure(v / self.high)} and {_figure(v / self.low)} ms; each group held out, the other groups' "
            f"factor left a median factor of {self.held_median_factor:.2g}, {self.held_within_2x:.0%} within 2x, "
            f"and their band covered {self.held_coverage:.0%} of its rows"
        )


def shipped_vendor_factors() -> dict[str, Any]:
    """The table of vendor factors shipped in ``llmcourse/data/vendor_factors.json`` (read once)."""
    return _shipped(VENDOR_FACTOR_FILE, "scripts/make_vendor_factors.py")


def vendor_factor(vendor: str, *, table: dict[str, Any] | None = None) -> VendorFactor:
    """A vendor's factor from the shipped table (:func:`shipped_vendor_factors`, or ``table``); an unknown vendor
    gets a "did you mean".

    Examples
    --------
    >>> f = vendor_factor("AMD")
    >>> f.gpus, f.median < 1, f.n >= 30
    (('MI300X',), True, True)
    >>> vendor_factor("AMDD")
    Traceback (most recent call last):
    ...
    llmcourse.errors.UnknownNameError: no vendor factor for 'AMDD'. Did you mean 'AMD'? Known: AMD, AWS, Intel.
    """
    t = shipped_vendor_factors() if table is None else table
    known = t["vendors"]
    if vendor not in known:
        close = difflib.get_close_matches(str(vendor), list(known), n=2, cutoff=0.4)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise UnknownNameError(f"no vendor factor for {vendor!r}.{hint} Known: {', '.join(known)}.")
    v, h = known[vendor], known[vendor]["held_out"]
    return VendorFactor(
        vendor, float(v["median"]), float(v["low"]), float(v["high"]), int(v["n"]), int(v["groups"]),
        tuple(v["gpus"]), float(h["median_factor"]), float(h["within_2x"]), float(h["coverage"]),
        float(v["least"]), float(v["most"]), tuple(int(b) for b in v["batches"]),
    )  # fmt: skip


def vendor_factor_for(gpu: Any, *, table: dict[str, Any] | None = None) -> VendorFactor | None:
    """The factor of a catalog GPU's vendor (:data:`GPU_VENDORS`), or None: an NVIDIA GPU (its answers carry the
    bands of the NVIDIA rows), a vendor with no published rows here, or a GPU outside the catalog (a hand-made
    ``GPU``: its vendor is not known). An unknown GPU name gets the catalog's "did you mean".

    Examples
    --------
    >>> vendor_factor_for("MI355X").vendor, vendor_factor_for("gaudi3").vendor, vendor_factor_for("H200")
    ('AMD', 'Intel', None)
    """
    known = _in_catalog(gpus, gpu)
    if known is None or known.name not in GPU_VENDORS:
        return None
    t = shipped_vendor_factors() if table is None else table
    vendor = GPU_VENDORS[known.name]
    return vendor_factor(vendor, table=t) if vendor in t["vendors"] else None


def vendor_factor_row(gpu: Any, tpot_ms: float, method: str) -> tuple[str, str] | None:
    """The row an answer on an AMD, Intel or AWS accelerator adds for a time per token of ``tpot_ms``: its vendor's factor
    (:meth:`VendorFactor.time_text`), beside the model's own figure, never instead of it (labelled "rows", not
    "factor", where the vendor's rows are too few for one: :attr:`VendorFactor.enough`); None for another GPU or
    under another method than the one the factors were fitted with (``method``: the assumptions' name).

    Examples
    --------
    >>> vendor_factor_row("MI300X", 20.0, "course")[0], vendor_factor_row("H100 SXM", 20.0, "course")
    ('time per token, AMD factor', None)
    >>> vendor_factor_row("MI300X", 20.0, "planner") is None
    True
    """
    factor = vendor_factor_for(gpu) if method == shipped_vendor_factors()["method"] else None
    if factor is None:
        return None
    name = _in_catalog(gpus, gpu).name  # a GPU with a factor is one of the catalog's
    label = f"time per token, {factor.vendor} {'factor' if factor.enough else 'rows'}"
    return label, factor.time_text(name, tpot_ms)


def _llama_cpp_time_band(kind: str, value: Any) -> Band:
    """The 80% band around a time under llama.cpp (``value``, a time): the time over the ends of the band of
    measured / predicted tokens per second of ``kind`` (:func:`llama_cpp_band`; a faster run is a shorter time)."""
    b, ms = llama_cpp_band(kind), to(value, "ms").magnitude
    return Band(ms, ms / b["high"], ms / b["low"], int(b["rows"]), f"llama.cpp, {llama_cpp_band_scope(b)}", "ms")


def plan_bands(plan: Any) -> list[tuple[str, str]]:
    """The band rows of a :class:`~llmcourse.planner.Plan` (what ``Plan.rows()`` shows): the time per
    output token and the time to first token, each with the 80% band of its family (:func:`band_for`);
    none for a plan that does not fit or that was made under another method than the bands'.

    Examples
    --------
    >>> from llmcourse.planner import Brief, plan
    >>> p = plan("Llama-3.1-8B", "H100 SXM", Brief(10, 2_000, 300, Q_(1, "s"), Q_(50, "ms")))
    >>> [k for k, _ in plan_bands(p)]
    ['time per token, 80% band', 'first token, 80% band']
    >>> plan_bands(plan("Llama-3.1-8B", "H100 SXM", Brief(10, 2_000, 300, Q_(1, "s"), Q_(50, "ms")), assumptions="planner"))
    []
    """
    if not plan.fits or plan.replica is None or plan.replica.assumptions.name != shipped_bands()["method"]:
        return []
    if plan.replica.engine == "llama.cpp":  # its own kernels' runs, not the datacenter engines' families
        batch = "" if plan.batch <= 1 else f"; this plan runs {plan.batch} at once, which no run measured"
        return [
            ("time per token, 80% band", _llama_cpp_time_band("decode", plan.tpot).text("time per token") + batch),
            ("first token, 80% band", _llama_cpp_time_band("prefill", plan.ttft).text("time to first token") + batch
             + " (and its request's fixed overhead, which llama-bench does not run)"),
        ]  # fmt: skip
    out = []
    for metric, value, label, what in (
        ("tpot_ms", plan.tpot, "time per token, 80% band", "time per token"),
        ("ttft_ms", plan.ttft, "first token, 80% band", "time to first token"),
    ):
        model, gpu = plan.specs if plan.specs is not None else (plan.model, plan.gpu)  # a hand-made one's own
        out.append((label, band_for(metric, model, gpu, value).text(what)))
    row = vendor_factor_row(gpu, to(plan.tpot, "ms").magnitude, plan.replica.assumptions.name)
    return out if row is None else [*out, row]
