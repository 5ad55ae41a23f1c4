"""Validation: the course's predictions against published, measured serving results.

Used by the chapter *How good is the estimate?* (``book/12_validation.md``). One module per idea:

* :mod:`~llmcourse.validation.measured` - the measured rows: the published tables shipped with the package
  (:func:`measurements`), and the readers of measured files (:func:`load_measurements`, :func:`parse_measurements`:
  the course's CSV, aiconfigurator's silicon CSV, ``vllm bench serve`` JSON; :func:`silicon`, the shipped rows).
* :mod:`~llmcourse.validation.prediction` - a row's metric from its own fields through the one replica model
  (:func:`predict`), and the same split into the times the efficiencies divide (:func:`components`,
  :func:`load_components`), so that a fit can try many values quickly.
* :mod:`~llmcourse.validation.fit` - the published tables: two global efficiencies fitted by least squares in log
  space, and the error held out (:func:`fit_efficiencies`, :func:`leave_one_out`, :func:`validate`).
* :mod:`~llmcourse.validation.client` - the one closed-loop client model (:func:`client_wave_share`).
* :mod:`~llmcourse.validation.held_out` - the closed-loop evidence: the parameters fitted, each model, GPU, engine and
  (model, GPU, engine) group held out (:func:`folds`), the errors by family (:func:`evidence`), the 80% bands drawn
  from them (:func:`band_table`) and their coverage fold by fold (:func:`coverage`).
* :mod:`~llmcourse.validation.llama_cpp` - llama.cpp's kernels fitted on public llama-bench rows, held out by machine
  (:func:`~llmcourse.validation.llama_cpp.fit_llama_cpp`, :func:`~llmcourse.validation.llama_cpp.held_out`;
  used by the chapter *On your own machine*).
* :mod:`~llmcourse.validation.vendors` - published AMD, Intel and AWS rows, kept aside from every fit: the course's method
  on them, and each group held out with a vendor factor (:func:`~llmcourse.validation.vendors.vendor_held_out`).
* :mod:`~llmcourse.validation.own` - the reader's own benchmark, refitted and re-planned (:func:`own_benchmark`).
* :mod:`~llmcourse.validation.tables` - the chapter's tables (:func:`held_out_markdown`, :func:`compare_methods`, ...).

The shipped table of bands is read by :mod:`llmcourse.bands` (a lower floor: the planner shows a plan's bands
without importing this package); its names are exported here too.

Plain Python (the standard library and SymPy, no numpy), so that the chapter's calculators also run
in the reader's browser.

Examples
--------
>>> rows = measurements()
>>> len(rows), rows[0].id, rows[0].model
(26, 'T1', 'Llama-3.1-8B')
>>> p = predict(rows[0])
>>> p.batch, p.compute_precision
(5120, 'fp8')
"""

from llmcourse.bands import (
    BAND_METRICS,
    BAND_PERCENTILES,
    BAND_WHICH,
    BANDS_FILE,
    GENERATIONS,
    METRIC_NAMES,
    METRICS,
    MIN_BAND_ROWS,
    MIN_MODEL_BAND_ROWS,
    Band,
    architecture,
    band_for,
    concurrency_band,
    gpu_generation,
    gpus_band,
    plan_bands,
    shipped_bands,
)
from llmcourse.validation.cells import ARCHITECTURE_GAPS
from llmcourse.validation.client import CLIENT_MODEL, CLIENT_MODELS, client_wave_share
from llmcourse.validation.fit import (
    GRID,
    Dataset,
    ErrorStats,
    Fit,
    Validation,
    dataset,
    error_stats,
    fit_efficiencies,
    leave_one_out,
    validate,
)
from llmcourse.validation.held_out import (
    FACETS,
    FIT_GRIDS,
    FIT_METRICS,
    FIT_OBJECTIVES,
    FIT_PARAMETERS,
    HOLD_OUT,
    SUMMARY_HEAD,
    ClientAlternative,
    Coverage,
    Evidence,
    Summary,
    band,
    band_table,
    client_alternatives,
    coverage,
    evidence,
    folds,
    group_name,
    not_predicted_reasons,
    summarize,
)
from llmcourse.validation.measured import (
    AICONFIGURATOR,
    COURSE_COLUMNS,
    DISAGGREGATED_REASON,
    ENABLED_LAYOUTS,
    FORMATS,
    LAYOUT_KEYWORDS,
    LAYOUT_REASON,
    LOAD_KINDS,
    REPEAT_REASON,
    TWIN_KEY,
    Loaded,
    Measurement,
    Skipped,
    course_csv,
    layout_gap,
    layout_keywords,
    load_measurements,
    measurements,
    parse_measurements,
    silicon,
)
from llmcourse.validation.own import OWN_LISTED, OWN_MAX_ROWS, REPLAN_EXAMPLE, OwnBenchmark, Replan, own_benchmark
from llmcourse.validation.prediction import (
    KV_STARVED_SHARE,
    Components,
    LoadComponents,
    Prediction,
    closed_loop_ttft,
    components,
    engine_usable_fraction,
    family,
    kv_share,
    load_components,
    predict,
    wave_share,
)
from llmcourse.validation.row_replica import SEPARATE_PREFILL_ENGINES, SHARE_SETTING_ENGINES, hand_set_share
from llmcourse.validation.tables import (
    bands_markdown,
    compare_methods,
    end_to_end,
    grid_markdown,
    held_out_markdown,
    held_out_table,
    parameters_markdown,
    parameters_table,
)
from llmcourse.validation.twins import TWIN_REASON, TWIN_TOLERANCE, disaggregated_twins

__all__ = [
    "AICONFIGURATOR",
    "ARCHITECTURE_GAPS",
    "BANDS_FILE",
    "BAND_METRICS",
    "BAND_PERCENTILES",
    "BAND_WHICH",
    "CLIENT_MODEL",
    "CLIENT_MODELS",
    "COURSE_COLUMNS",
    "DISAGGREGATED_REASON",
    "ENABLED_LAYOUTS",
    "FACETS",
    "FIT_GRIDS",
    "FIT_METRICS",
    "FIT_OBJECTIVES",
    "FIT_PARAMETERS",
    "FORMATS",
    "GENERATIONS",
    "GRID",
    "HOLD_OUT",
    "KV_STARVED_SHARE",
    "LAYOUT_KEYWORDS",
    "LAYOUT_REASON",
    "LOAD_KINDS",
    "METRICS",
    "METRIC_NAMES",
    "MIN_BAND_ROWS",
    "MIN_MODEL_BAND_ROWS",
    "OWN_LISTED",
    "OWN_MAX_ROWS",
    "REPEAT_REASON",
    "REPLAN_EXAMPLE",
    "SEPARATE_PREFILL_ENGINES",
    "SHARE_SETTING_ENGINES",
    "SUMMARY_HEAD",
    "TWIN_KEY",
    "TWIN_REASON",
    "TWIN_TOLERANCE",
    "Band",
    "ClientAlternative",
    "Components",
    "Coverage",
    "Dataset",
    "ErrorStats",
    "Evidence",
    "Fit",
    "LoadComponents",
    "Loaded",
    "Measurement",
    "OwnBenchmark",
    "Prediction",
    "Replan",
    "Skipped",
    "Summary",
    "Validation",
    "architecture",
    "band",
    "band_for",
    "band_table",
    "bands_markdown",
    "client_alternatives",
    "client_wave_share",
    "closed_loop_ttft",
    "compare_methods",
    "components",
    "concurrency_band",
    "course_csv",
    "coverage",
    "dataset",
    "disaggregated_twins",
    "end_to_end",
    "engine_usable_fraction",
    "error_stats",
    "evidence",
    "family",
    "fit_efficiencies",
    "folds",
    "gpu_generation",
    "gpus_band",
    "grid_markdown",
    "group_name",
    "hand_set_share",
    "held_out_markdown",
    "held_out_table",
    "kv_share",
    "layout_gap",
    "layout_keywords",
    "leave_one_out",
    "load_components",
    "load_measurements",
    "measurements",
    "not_predicted_reasons",
    "own_benchmark",
    "parameters_markdown",
    "parameters_table",
    "parse_measurements",
    "plan_bands",
    "predict",
    "shipped_bands",
    "silicon",
    "summarize",
    "validate",
    "wave_share",
]
