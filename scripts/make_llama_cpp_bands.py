"""Write ``llmcourse/data/llama_cpp_bands.json``: the 80% bands of llama.cpp's speed an answer for one person's machine
shows.

    .venv/bin/python scripts/make_llama_cpp_bands.py [--check]

The table is :func:`llmcourse.validation.llama_cpp.llama_cpp_band_table` of the public ``llama-bench`` rows in
``llmcourse/data/llama_cpp_public.csv`` under the course's method (decode and prompt processing: the 80% band of
measured / predicted tokens per second, the median held out by machine, and the band's coverage of held-out rows).
``--check`` writes nothing and exits 1 if the shipped file differs (tests/test_llama_cpp_public.py makes the same
check). It takes a few seconds.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from shipped_table import write_or_check  # noqa: E402

from llmcourse.bands import LLAMA_CPP_BANDS_FILE  # noqa: E402
from llmcourse.validation.llama_cpp import llama_cpp_band_table  # noqa: E402

OUT = ROOT / "llmcourse" / "data" / LLAMA_CPP_BANDS_FILE


def _coverage(k: dict) -> str:
    """The band's coverage of held-out rows, or why it is not measured (rows from fewer than three machines)."""
    return "not measured (fewer than three machines)" if k["coverage"] is None else f"{k['coverage']:.0%}"


def _report(table: dict) -> list[str]:
    return [
        f"{kind:8s} {k['rows']} rows on {k['machines']} machines: 80% band of measured / predicted {k['low']:.3g} to "
        f"{k['high']:.3g}; held out by machine: median {k['median_held_out']:.3g}, band coverage {_coverage(k)}"
        for kind, k in table["kinds"].items()
    ]


def main(argv: list[str] | None = None) -> int:
    return write_or_check(__file__, __doc__, OUT, llama_cpp_band_table, _report, argv)


if __name__ == "__main__":
    sys.exit(main())
