"""Leave-one-(model, GPU, engine)-group-out: the fold builder, the bands' coverage (by hand on a tiny evidence set),
the one closed-loop client model, and the bands of a model and a GPU the reader made."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

import llmcourse as lc
import llmcourse.validation as lcv
from llmcourse import Q_
from llmcourse.catalog import GPU
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.planner import Brief, plan


# --- the fold builder ---------------------------------------------------------------------------------
def test_every_row_is_held_out_once_and_never_fitted_on_in_its_fold() -> None:
    """Five rows of three groups: each row in exactly one fold's held-out rows, and no fold fits on a row of
    the group it holds out (its fitted rows are exactly the others)."""
    facets = [{"group": g} for g in ("a", "b", "a", "c", "b")]
    got = lcv.folds(facets, "group")
    assert got == {"a": ([1, 3, 4], [0, 2]), "b": ([0, 2, 3], [1, 4]), "c": ([0, 1, 2, 4], [3])}
    held = sorted(i for _, test in got.values() for i in test)
    assert held == [0, 1, 2, 3, 4]
    for g, (train, test) in got.items():
        assert all(facets[i]["group"] != g for i in train) and sorted(train + test) == [0, 1, 2, 3, 4]


def test_folds_of_the_shipped_rows_cover_each_row_once() -> None:
    """On the shipped rows' facets (no fit needed): every row held out once, by its own group."""
    rows = lcv.silicon().rows
    facets = [{"group": lcv.group_name(r)} for r in rows]
    got = lcv.folds(facets, "group")
    counts = [0] * len(rows)
    for g, (train, test) in got.items():
        assert not set(train) & set(test)
        for i in test:
            counts[i] += 1
            assert facets[i]["group"] == g
    assert set(counts) == {1}


def test_folds_refuse_an_unknown_facet() -> None:
    with pytest.raises(InputError, match="hold_out names 'colour'"):
        lcv.folds([{"group": "a"}], "colour")


# --- coverage, by hand ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Row:
    metric: str
    value: float
    model: str = "Llama-3.1-8B"
    gpu: str = "H100 SXM"


@dataclass
class _Ev:
    rows: list
    facets: list
    preds: list

    def predictions(self, which: str) -> list:
        assert which == "held_out_group"
        return self.preds


def _facets(group: str) -> dict[str, str]:
    return {
        "metric": "tpot_ms", "architecture": "dense", "gpu_generation": "Hopper", "model": "Llama-3.1-8B",
        "gpu": "H100 SXM", "group": group,
    }  # fmt: skip


def test_coverage_by_hand() -> None:
    """Group A: 10 rows measured 1..10 against a prediction of 1; group B: 5 rows measured 0.5, 2, 5, 9.5, 20.
    Too few rows for a dense or a dense/Hopper family (30), so each band is the metric's own, from the other
    group's ratios (linear percentiles, as numpy's):
    fold A: B's 10th percentile is 0.4 ranks in, 0.5 + 0.4 x 1.5 = 1.1; its 90th 3.6 ranks in,
    9.5 + 0.6 x 10.5 = 15.8: A's 2..10 inside, 1 out: 9 of 10.
    fold B: A's 10th percentile is 1 + 0.9 = 1.9, its 90th 9.1: 2 and 5 inside, 0.5, 9.5 and 20 out: 2 of 5.
    Pooled: 11 of 15."""
    values = [float(k) for k in range(1, 11)] + [0.5, 2.0, 5.0, 9.5, 20.0]
    rows = [_Row("tpot_ms", v) for v in values]
    facets = [_facets("A")] * 10 + [_facets("B")] * 5
    cov = lcv.coverage(_Ev(rows, facets, [1.0] * 15))
    c = cov["tpot_ms"]
    assert (c.rows, c.inside) == (15, 11)
    assert c.folds == (("A", 10, 9), ("B", 5, 2))
    assert c.fold_shares() == [0.9, 0.4]
    assert c.spread(min_rows=1)[0] == 0.4 and c.spread(min_rows=1)[-1] == 0.9
    assert list(cov) == ["tpot_ms"]  # no time-to-first-token rows: no coverage of it
    with pytest.raises(InputError, match="no fold has 20 rows"):
        c.spread()


def test_lean_table_by_hand() -> None:
    """Three rows measured 2, 4 and 1 against predictions 1, 2 and 2: measured / predicted 2, 2 and 0.5, so the
    median is 2 (slower than the estimate) and the median factor exp(median |ln|) = 2; the last row alone: 0.5, and
    a factor of 2. An empty subset and one that mixes metrics are refused by name."""
    rows = [_Row("tpot_ms", 2.0), _Row("tpot_ms", 4.0), _Row("tpot_ms", 1.0), _Row("ttft_ms", 1.0)]
    facets = [_facets("A")] * 3 + [{**_facets("A"), "metric": "ttft_ms"}]
    ev = _Ev(rows, facets, [1.0, 2.0, 2.0, 1.0])
    table = lcv.tables.lean_table(ev, {"all": [0, 1, 2], "last": [2]}, which="held_out_group")
    assert [r[:4] for r in table] == [["all", "3", "2.00", "2.00"], ["last", "1", "0.50", "2.00"]]
    with pytest.raises(InputError, match="'none' has no rows"):
        lcv.tables.lean_table(ev, {"none": []}, which="held_out_group")
    with pytest.raises(InputError, match="'both' mixes metrics"):
        lcv.tables.lean_table(ev, {"both": [0, 3]}, which="held_out_group")


def test_group_folds_on_measured_rows_fit_without_their_group() -> None:
    """Llama-3.1-70B on H200 SXM: a vLLM and a TensorRT-LLM group, one fold each; every row gets a held-out
    prediction, each made with its own fold's fit."""
    rows = [r for r in lcv.silicon().rows if r.model == "Llama-3.1-70B" and r.gpu == "H200 SXM"]
    ev = lcv.evidence(rows, hold_out=("group",))
    assert sorted(ev.fold_fits["group"]) == [
        "Llama-3.1-70B / H200 SXM / TensorRT-LLM",
        "Llama-3.1-70B / H200 SXM / vLLM",
    ]
    preds = ev.predictions("held_out_group")
    assert all(p > 0 for p in preds) and len(preds) == len(ev.rows)


# --- the one client model -----------------------------------------------------------------------------------
def test_client_model_shares() -> None:
    """The course's client model: a whole wave where prefills run on their own, the fitted share elsewhere; the
    alternatives as they say; the rows' share is the one function's."""
    assert lcv.CLIENT_MODEL == "by engine"
    assert lcv.client_wave_share(True, 0.2) == 1.0 and lcv.client_wave_share(False, 0.2) == 0.2
    assert lcv.client_wave_share(True, 0.2, "one share") == 0.2
    assert lcv.client_wave_share(False, 0.2, "lockstep") == 1.0 and lcv.client_wave_share(True, 0.2, "spread") == 0.0
    rows = lcv.silicon().rows
    sg = next(r for r in rows if r.engine.startswith("SGLang"))
    vl = next(r for r in rows if r.engine.startswith("vLLM"))
    share = lc.resolve().closed_loop_wave_share
    assert lcv.wave_share(sg) == 1.0 and lcv.wave_share(vl) == share


def test_unknown_client_model_is_refused_with_a_suggestion() -> None:
    with pytest.raises(UnknownNameError, match="Did you mean 'lockstep'"):
        lcv.client_wave_share(False, 0.1, "lockstp")
    with pytest.raises(UnknownNameError, match="no client model named 'waves'"):
        lcv.evidence(lcv.silicon().rows[:4], client="waves")


# --- bands of what the reader made --------------------------------------------------------------------------
_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
    "max_position_embeddings": 131072,
}  # fmt: skip


def test_plan_of_a_model_and_gpu_the_reader_made_prints_its_bands() -> None:
    """A model from a Hugging Face config and a hand-made GPU: the plan prints, each band from the nearest
    family, labelled "not measured", and each band straddles its own corrected figure."""
    m = lc.Model.from_hf_config(_CONFIG, name="my-llama")
    g = GPU("MyGPU", memory=Q_(96, "GB"), bandwidth=Q_(4, "TB/s"), flops=Q_(1000, "TFLOP/s"))
    p = plan(m, g, Brief(10, 2_000, 300, Q_(1, "s"), Q_(50, "ms")), price_per_hour=Q_(2.5, "USD/hour"))
    text = str(p)
    bands = [line for line in text.splitlines() if "80% band" in line]
    assert len(bands) == 2
    assert all(
        "not measured" in b and "my-llama (not in the catalog)" in b and "MyGPU (not in the catalog" in b for b in bands
    )
    for metric, value in (("tpot_ms", p.tpot), ("ttft_ms", p.ttft)):
        b = lcv.band_for(metric, m, g, value)
        assert b.low <= b.corrected <= b.high
