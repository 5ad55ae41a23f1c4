"""The source texts' worked examples as data: every figure the course reproduces, in one file.

The course is built from four source texts: the back-of-the-envelope method (``"000"``), the
interactive lab (``"001"``), the capacity-planning method (``"002"``) and "the estimation that
matters" (``"004"``). Each figure they print that the course reproduces is one entry of
``llmcourse/data/source_figures.json``: the source's own words (``quote``), the function of the
package that computes it with its arguments, the assumptions preset whose method the source uses
(``preset``), the printed value (``expected``) in its ``unit``, and the rounding the source prints
(``tolerance``). Entries with ``source="course"`` are not source figures but the course's own
numbers for the same scenarios (what an erratum box shows beside the source's), each with its hand
arithmetic in ``derivation``.

Where a source's figure does not follow from its own method, the entry says so in ``erratum`` and
keeps both numbers: ``expected`` is what the source printed, ``erratum_value`` what its method
gives; the figure then "reproduces" when the package gives ``erratum_value`` and not the printed
number.

An entry's computation is data, never code: ``call`` names a public function of ``llmcourse``
(``"serving_plan"``), a formula (``"FORMULAS.replicas_needed"``), a function of
``llmcourse.planner.roofline`` or ``llmcourse.planner.moe`` (``"roofline.crossover_batch"``) or a small scenario
of this module (``"scenario.step_traffic"``); ``args`` and ``kwargs`` are JSON values, where
``{"Q": [value, unit]}`` is a quantity, ``{"call": ..., "args": ..., "kwargs": ..., "get": ...}`` a
nested call, ``{"model": name, "with": {...}}`` a catalog model (optionally changed),
``{"gpu": name, "get": "bandwidth"}`` a catalog GPU and ``{"assumption": field}`` a field of the
entry's preset; ``get`` is a dotted attribute path into the result and ``times`` a plain
multiplier. The preset goes to every call whose signature has an ``assumptions`` parameter, changed by
the entry's ``what_if`` if it has one (fields of the assumptions, ``{"memory_fraction": 1.0}``: a text that
counts all of a GPU's memory).

Examples
--------
>>> from llmcourse.planner.sources import FIGURES, figure
>>> f = figure("envelope-table-72b-fp8-throughput")
>>> f.source, f.preset, f.expected, f.unit
('000', 'envelope', 4387, '1/s')
>>> f.text(), f.reproduces()
('4,387', True)
>>> e = figure("envelope-cost-at-30pct")
>>> e.source_text(), e.text(), e.reproduces()
('1.05', '1.06', True)
>>> figure("envelope-table-72b-fp8-thruput")
Traceback (most recent call last):
...
llmcourse.errors.UnknownNameError: no source figure 'envelope-table-72b-fp8-thruput'. Did you mean 'envelope-table-72b-fp8-throughput', 'envelope-table-7b-throughput', 'envelope-table-72b-fp8-batch'?
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import json
import math
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import pint

from llmcourse.errors import InputError, UnknownNameError
from llmcourse.units import Q_

__all__ = ["FIGURES", "SCENARIOS", "SOURCES", "Figure", "StepTraffic", "figure", "memory_for_kv", "step_traffic"]

#: The keys an entry's ``source`` may take: the four source texts, or the course's own figure.
SOURCES = ("000", "001", "002", "004", "course")

_FIELDS = {
    "id",
    "source",
    "preset",
    "call",
    "args",
    "kwargs",
    "get",
    "times",
    "expected",
    "unit",
    "tolerance",
    "quote",
    "comment",
    "erratum",
    "erratum_value",
    "erratum_tolerance",
    "derivation",
    "hand",
    "what_if",
}
_REQUIRED = ("id", "source", "preset", "call", "expected", "unit")
_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_ATTR = re.compile(r"^[a-z][a-z0-9_]*$")
_MODULES = ("roofline", "moe")  # submodules whose __all__ functions an entry may call
_UNSET = object()


# --- scenarios: what a figure needs beyond one call and an attribute -------------------------------
@dataclass(frozen=True)
class StepTraffic:
    """Bytes one decode step of a replica reads, its time, and the bandwidth that implies."""

    bytes: pint.Quantity
    time: pint.Quantity

    @property
    def bandwidth(self) -> pint.Quantity:
        return (self.bytes / self.time).to("TB/s")


def step_traffic(model: Any, gpu: Any, *, assumptions: Any = None, **replica_kwargs: Any) -> StepTraffic:
    """The bytes a decode step of ``replica(model, gpu, assumptions=assumptions, **replica_kwargs)``
    reads (weights plus every sequence's KV cache) and its step time.

    Examples
    --------
    >>> t = step_traffic("Llama-3.1-70B", "H100 SXM", tensor_parallel=2, batch=64, context_tokens=2_400,
    ...                  weight_bytes="fp8", assumptions="capacity")
    >>> round(t.bytes.to("GB").m), round(t.bandwidth.m, 1)
    (121, 4.7)
    """
    from llmcourse.replica.model import replica

    step = replica(model, gpu, assumptions=assumptions, **replica_kwargs).step
    if step is None:
        raise InputError(f"{model} on {gpu}: the replica does not fit, so it has no decode step.")
    return StepTraffic(bytes=(step.weights_read + step.kv_read).to("GB"), time=step.step_time)


def memory_for_kv(gpu: Any, n_gpus: int, weights: pint.Quantity, *, assumptions: Any = None) -> pint.Quantity:
    """What the usable memory of ``n_gpus`` GPUs leaves for the KV cache after ``weights``.

    Examples
    --------
    >>> from llmcourse.assumptions import resolve
    >>> memory_for_kv("H100 SXM", 2, Q_(140, "GB"), assumptions=resolve().replace(memory_fraction=1.0))
    <Quantity(20.0, 'gigabyte')>
    """
    from llmcourse.replica.memory import usable_memory

    return (usable_memory(gpu, n_gpus, weights=weights, assumptions=assumptions) - weights).to("GB")


#: Named scenario functions an entry may call as ``"scenario.<name>"``.
SCENARIOS = {"memory_for_kv": memory_for_kv, "step_traffic": step_traffic}


# --- the evaluator ----------------------------------------------------------------------------------
def _suggest(name: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(name, choices, n=3, cutoff=0.5)
    return f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""


def _function(name: Any) -> Any:
    """The callable an entry names; anything else is refused with the closest names."""
    if not isinstance(name, str):
        raise InputError(f"'call' must be a function's name (a string); got {name!r}.")
    head, _, tail = name.partition(".")
    if not tail:
        pkg = importlib.import_module("llmcourse")
        choices = [n for n in pkg.__all__ if inspect.isfunction(getattr(pkg, n))]
        if name in choices:
            return getattr(pkg, name)
    elif head == "FORMULAS":
        formulas = importlib.import_module("llmcourse.formulas").FORMULAS
        if tail in formulas:
            return formulas[tail]
        choices = [f"FORMULAS.{k}" for k in formulas]
    elif head == "scenario":
        if tail in SCENARIOS:
            return SCENARIOS[tail]
        choices = [f"scenario.{k}" for k in SCENARIOS]
    elif head in _MODULES:
        module = importlib.import_module(f"llmcourse.planner.{head}")
        choices = [f"{head}.{n}" for n in module.__all__ if inspect.isfunction(getattr(module, n))]
        if name in choices:
            return getattr(module, tail)
    else:
        choices = [f"{m}.<name>" for m in (*_MODULES, "FORMULAS", "scenario")]
    raise UnknownNameError(
        f"no function {name!r} for a source figure.{_suggest(name, choices)} A call names a public function "
        "of llmcourse ('serving_plan'), a formula ('FORMULAS.replicas_needed'), 'roofline.<name>', "
        "'moe.<name>' or 'scenario.<name>'."
    )


def _get(obj: Any, path: Any, where: str) -> Any:
    if path is None:
        return obj
    if not isinstance(path, str) or not all(_ATTR.match(p) for p in path.split(".")):
        raise InputError(
            f"{where}: 'get' must be a dotted path of public attribute names, e.g. 'step.step_time'; got {path!r}."
        )
    for part in path.split("."):
        if not hasattr(obj, part):
            raise InputError(f"{where}: {type(obj).__name__} has no attribute {part!r} (get={path!r}).")
        obj = getattr(obj, part)
    return obj


def _unit(unit: str, where: str) -> None:
    """Refuse, at load time, a unit the registry does not know."""
    try:
        Q_(1, unit)
    except (pint.UndefinedUnitError, AttributeError, ValueError, TypeError):
        raise InputError(
            f"{where}: unknown unit {unit!r}; use a unit of llmcourse.units, e.g. 'GB', 'ms', '1/s'."
        ) from None


def _check_value(v: Any, where: str) -> None:
    """Refuse, at load time, a JSON value that is none of the forms an entry may use."""
    if v is None or isinstance(v, bool | int | float | str):
        return
    if isinstance(v, list):
        for x in v:
            _check_value(x, where)
        return
    if not isinstance(v, dict):
        raise InputError(f"{where}: cannot use {v!r}.")
    forms = {
        "Q": {"Q"},
        "call": {"call", "args", "kwargs", "get", "times"},
        "model": {"model", "with", "get"},
        "gpu": {"gpu", "get"},
        "assumption": {"assumption"},
    }
    kind = next((k for k in forms if k in v), None)
    if kind is None or not set(v) <= forms[kind]:
        raise InputError(
            f'{where}: {json.dumps(v)} is not a value form; use {{"Q": [value, unit]}}, {{"call": ...}}, '
            '{"model": name, "with": {...}}, {"gpu": name, "get": attr} or {"assumption": field}.'
        )
    if kind == "Q":
        q = v["Q"]
        if not (isinstance(q, list) and len(q) == 2 and isinstance(q[0], int | float) and isinstance(q[1], str)):
            raise InputError(f'{where}: a quantity is {{"Q": [value, "unit"]}}; got {json.dumps(v)}.')
        _unit(q[1], where)
    elif kind == "call":
        _check_call(v, where)
    elif kind == "model" and not isinstance(v.get("with", {}), dict):
        raise InputError(f"{where}: 'with' must be an object of model fields; got {v['with']!r}.")


def _check_call(spec: dict, where: str) -> None:
    if not isinstance(spec.get("call"), str):
        raise InputError(f"{where}: 'call' must name a function; got {spec.get('call')!r}.")
    if not isinstance(spec.get("args", []), list) or not isinstance(spec.get("kwargs", {}), dict):
        raise InputError(f"{where}: 'args' must be a list and 'kwargs' an object.")
    if "assumptions" in spec.get("kwargs", {}):
        raise InputError(f"{where}: do not pass 'assumptions' in kwargs; the entry's 'preset' is passed.")
    times = spec.get("times")
    if times is not None and (isinstance(times, bool) or not isinstance(times, int | float)):
        raise InputError(f"{where}: 'times' must be a plain number; got {times!r}.")
    for a in spec.get("args", []):
        _check_value(a, where)
    for a in spec.get("kwargs", {}).values():
        _check_value(a, where)


def _value(v: Any, preset: Any, where: str) -> Any:
    if isinstance(v, list):
        return [_value(x, preset, where) for x in v]
    if not isinstance(v, dict):
        return v
    if "Q" in v:
        return Q_(*v["Q"])
    if "call" in v:
        return _run(v, preset, where)
    if "model" in v:
        from llmcourse.catalog import models

        m = models[v["model"]]
        return _get(m.with_(**v["with"]) if v.get("with") else m, v.get("get"), where)
    if "gpu" in v:
        from llmcourse.catalog import gpus

        return _get(gpus[v["gpu"]], v.get("get"), where)
    from llmcourse.assumptions import resolve

    a = resolve(preset)
    if not hasattr(a, v["assumption"]) or v["assumption"].startswith("_"):
        raise InputError(f"{where}: the assumptions have no field {v['assumption']!r}.")
    return getattr(a, v["assumption"])


def _run(spec: dict, preset: Any, where: str) -> Any:
    fn = _function(spec["call"])
    args = [_value(a, preset, where) for a in spec.get("args", [])]
    kwargs = {k: _value(a, preset, where) for k, a in spec.get("kwargs", {}).items()}
    try:
        takes = "assumptions" in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # pragma: no cover - every allowed callable has a signature
        takes = False
    if takes:
        kwargs["assumptions"] = preset
    out = _get(fn(*args, **kwargs), spec.get("get"), where)
    if spec.get("times") is not None:
        out = out * spec["times"]
    return out


# --- tolerance and printing -------------------------------------------------------------------------
def _check_tolerance(tol: Any, where: str) -> None:
    if not isinstance(tol, dict) or not isinstance(tol.get("digits"), int) or isinstance(tol.get("digits"), bool):
        raise InputError(
            f'{where}: a tolerance is {{"digits": d}} (the source\'s rounding), optionally with "abs" or "rel"; got {tol!r}.'
        )
    if not set(tol) <= {"digits", "abs", "rel"} or ("abs" in tol and "rel" in tol):
        raise InputError(f"{where}: a tolerance has 'digits' and at most one of 'abs' or 'rel'; got {tol!r}.")
    for k in ("abs", "rel"):
        if k in tol and not (isinstance(tol[k], int | float) and tol[k] >= 0):
            raise InputError(f"{where}: tolerance {k!r} must be a number >= 0; got {tol[k]!r}.")


def _matches(value: Any, target: Any, tol: dict | None) -> bool:
    """``value`` is the ``target`` figure to its tolerance: within ``abs``/``rel`` if given, else
    the same when rounded to ``digits`` (booleans, strings and None must be equal)."""
    if target is None or isinstance(target, bool | str):
        return type(value) is type(target) and value == target
    if value is None or isinstance(value, bool | str):
        return False
    if "abs" in tol:
        return abs(value - target) <= tol["abs"] + 1e-12
    if "rel" in tol:
        return abs(value - target) <= tol["rel"] * abs(target) + 1e-12
    return math.isclose(round(value, tol["digits"]), target, rel_tol=1e-9, abs_tol=1e-12)


def _show(value: Any, digits: int) -> str:
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, bool):
        return {None: "none", True: "yes", False: "no"}[value]
    return f"{round(value, digits):,.{max(digits, 0)}f}"


# --- the figures ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Figure:
    """One worked figure of a source text (or the course's own figure for the same scenario).

    Build one with :meth:`from_dict` (which checks every field); the loaded ones are in
    :data:`FIGURES`. See the module docstring for the fields.
    """

    id: str
    source: str
    preset: str
    call: str
    expected: Any
    unit: str | None
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    get: str | None = None
    times: float | None = None
    tolerance: dict | None = None
    quote: str | None = None
    comment: str | None = None
    erratum: str | None = None
    erratum_value: Any = None
    erratum_tolerance: dict | None = None
    derivation: str | None = None
    hand: dict | None = None
    what_if: dict | None = None

    @classmethod
    def from_dict(cls, entry: dict) -> Figure:
        """A checked :class:`Figure` from one entry of the data file (bad entry -> InputError)."""
        if not isinstance(entry, dict):
            raise InputError(f"a source figure is a JSON object; got {entry!r}.")
        where = f"source figure {entry.get('id', '<no id>')!r}"
        missing = [k for k in _REQUIRED if k not in entry]
        if missing:
            raise InputError(f"{where}: missing {', '.join(missing)} (every entry has {', '.join(_REQUIRED)}).")
        unknown = sorted(set(entry) - _FIELDS)
        if unknown:
            raise InputError(f"{where}: unknown field {unknown[0]!r}.{_suggest(unknown[0], sorted(_FIELDS))}")
        if not isinstance(entry["id"], str) or not _ID.match(entry["id"]):
            raise InputError(f"{where}: an id is lower-case words joined by '-', e.g. 'envelope-batch-72b-fp8'.")
        if entry["source"] not in SOURCES:
            raise InputError(f"{where}: source must be one of {', '.join(SOURCES)}; got {entry['source']!r}.")
        from llmcourse.assumptions import resolve

        preset = resolve(entry["preset"])  # an unknown preset: UnknownNameError with "did you mean"
        what_if = entry.get("what_if")
        if what_if is not None:
            if not isinstance(what_if, dict) or not what_if:
                raise InputError(
                    f"{where}: 'what_if' is an object of assumption fields, e.g. {{\"memory_fraction\": 1.0}}."
                )
            preset.replace(**what_if)  # an unknown field or a bad value: InputError naming it
        _check_call(entry, where)
        if entry["source"] == "course":
            if not entry.get("derivation"):
                raise InputError(f"{where}: a course figure needs its hand arithmetic in 'derivation'.")
        elif not entry.get("quote"):
            raise InputError(f"{where}: a source figure needs the source's own words in 'quote'.")
        _check_target(entry["expected"], entry["unit"], entry.get("tolerance"), where)
        if entry.get("erratum"):
            if "erratum_value" not in entry:
                raise InputError(
                    f"{where}: an erratum keeps both numbers: add 'erratum_value' (what the method gives)."
                )
            _check_target(
                entry["erratum_value"], entry["unit"], entry.get("erratum_tolerance", entry.get("tolerance")), where
            )
        elif "erratum_value" in entry or "erratum_tolerance" in entry:
            raise InputError(f"{where}: 'erratum_value' needs an 'erratum' line saying what is wrong and why.")
        if entry.get("hand") is not None:
            hand = entry["hand"]
            if not isinstance(hand, dict) or set(hand) != {"value", "tolerance", "derivation"}:
                raise InputError(f'{where}: \'hand\' is {{"value", "tolerance", "derivation"}}; got {hand!r}.')
            _check_target(hand["value"], entry["unit"], hand["tolerance"], where)
        values = {k: v for k, v in entry.items() if k not in ("args", "kwargs")}
        return cls(args=tuple(entry.get("args", [])), kwargs=dict(entry.get("kwargs", {})), **values)

    @property
    def target(self) -> Any:
        """The value the package must give: the source's figure, or ``erratum_value`` for an erratum."""
        return self.erratum_value if self.erratum else self.expected

    @property
    def target_tolerance(self) -> dict | None:
        return (self.erratum_tolerance or self.tolerance) if self.erratum else self.tolerance

    def compute(self) -> Any:
        """The value the package gives now, in :attr:`unit`, under the figure's preset."""
        where = f"source figure {self.id!r}"
        spec = {"call": self.call, "args": list(self.args), "kwargs": self.kwargs, "get": self.get, "times": self.times}
        from llmcourse.assumptions import resolve

        preset = self.preset if self.what_if is None else resolve(self.preset).replace(**self.what_if)
        value = _run(spec, preset, where)
        return _in_unit(value, self.unit, where)

    def problems(self, value: Any = _UNSET) -> list[str]:
        """What does not match (empty when the figure reproduces); ``value`` defaults to :meth:`compute`."""
        v = self.compute() if value is _UNSET else value
        out = []
        if not _matches(v, self.target, self.target_tolerance):
            what = "the course's value (erratum_value)" if self.erratum else "the source's figure"
            unit = f" {self.unit}" if self.unit else ""
            out.append(f"{self.id}: the package gives {v!r}{unit}, not {what} {self.target!r}")
        if self.erratum and _matches(v, self.expected, self.tolerance):
            out.append(f"{self.id}: the package now gives the source's printed {self.expected!r}: drop the erratum")
        if self.hand and not _matches(v, self.hand["value"], self.hand["tolerance"]):
            out.append(f"{self.id}: the package gives {v!r}, not the hand-derived {self.hand['value']!r}")
        return out

    def reproduces(self) -> bool:
        """True when the package gives the figure under its preset (for an erratum: the course's
        ``erratum_value``, and no longer the source's printed number), and any hand check holds."""
        return not self.problems()

    def shows(self, value: Any) -> bool:
        """True when the figure reproduces and ``value`` (a quantity, or a number in the figure's unit),
        a number a page shows, is that figure too, to the source's rounding.

        Examples
        --------
        >>> f = figure("envelope-table-72b-fp8-throughput")
        >>> f.shows(f.compute()), f.shows(4_400)
        (True, False)
        """
        if isinstance(value, pint.Quantity):
            value = value.to(self.unit).m if self.unit else value.to("").m
        return self.reproduces() and not self.problems(value)

    def text(self, value: Any = _UNSET) -> str:
        """The package's value (or ``value``) printed as the source prints it, for a chapter to glue."""
        v = self.compute() if value is _UNSET else value
        return _show(v, (self.target_tolerance or {}).get("digits", 0))

    def source_text(self) -> str:
        """The figure as the source printed it."""
        return _show(self.expected, (self.tolerance or {}).get("digits", 0))


def _check_target(value: Any, unit: Any, tol: Any, where: str) -> None:
    if value is None or isinstance(value, bool | str):
        if unit is not None:
            raise InputError(f"{where}: a yes/no, a word or 'none' has unit null; got unit {unit!r}.")
        return
    if not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(f"{where}: an expected value is a number, true/false, a string or null; got {value!r}.")
    if not isinstance(unit, str):
        raise InputError(f"{where}: a number needs a unit ('' for a count); got {unit!r}.")
    _unit(unit, where)
    _check_tolerance(tol, where)


def _in_unit(value: Any, unit: str | None, where: str) -> Any:
    if isinstance(value, pint.Quantity):
        if unit is None:
            raise InputError(f"{where}: the result is a quantity ({value:~P}) but the unit is null.")
        try:
            m = value.to(unit or "dimensionless").m
        except pint.DimensionalityError:
            raise InputError(f"{where}: the result ({value:~P}) cannot be expressed in {unit!r}.") from None
        return int(m) if isinstance(m, int) else float(m)
    if isinstance(value, bool) or value is None or isinstance(value, str):
        if unit is not None:
            raise InputError(f"{where}: the result is {value!r}, which has no unit; set unit to null.")
        return value
    if isinstance(value, int | float):
        if unit:
            raise InputError(f"{where}: the result {value!r} is a plain number; its unit must be ''.")
        return value
    raise InputError(f"{where}: the result is a {type(value).__name__}; use 'get' to pick a number from it.")


def _load() -> dict[str, Figure]:
    text = resources.files("llmcourse.data").joinpath("source_figures.json").read_text(encoding="utf-8")
    out: dict[str, Figure] = {}
    for entry in json.loads(text)["figures"]:
        f = Figure.from_dict(entry)
        if f.id in out:
            raise InputError(f"source figure {f.id!r} appears twice in source_figures.json.")
        out[f.id] = f
    return out


#: Every source figure, by id, in the data file's order.
FIGURES: dict[str, Figure] = _load()


def figure(name: str) -> Figure:
    """The :class:`Figure` with id ``name`` (unknown id -> UnknownNameError with "did you mean")."""
    if name in FIGURES:
        return FIGURES[name]
    raise UnknownNameError(f"no source figure {name!r}.{_suggest(str(name), list(FIGURES))}")
