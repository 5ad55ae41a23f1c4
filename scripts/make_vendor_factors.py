"""Write ``llmcourse/data/vendor_factors.json``: the vendor factors (AMD, Intel; AWS's rows, too few for one) an answer on their
accelerators shows.

    .venv/bin/python scripts/make_vendor_factors.py [--check]

The table is :func:`llmcourse.validation.vendors.vendor_factor_table` of the published rows in
``llmcourse/data/vendor_published.csv`` under the course's method (each vendor's median measured / predicted, its
80% band, and its error held out by group). ``--check`` writes nothing and exits 1 if the shipped file differs
(tests/test_vendors.py makes the same check). It takes a few seconds.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from shipped_table import write_or_check  # noqa: E402

from llmcourse.bands import MIN_VENDOR_GROUPS, VENDOR_FACTOR_FILE, vendor_factor  # noqa: E402
from llmcourse.validation.vendors import vendor_factor_table  # noqa: E402

OUT = ROOT / "llmcourse" / "data" / VENDOR_FACTOR_FILE


def _report(table: dict) -> list[str]:
    out = []
    for vendor, f in table["vendors"].items():
        h = f["held_out"]
        out.append(
            f"{vendor:6s} {f['n']} rows on {', '.join(f['gpus'])}, {f['groups']} groups: factor {f['median']:.3g} "
            f"(80% of rows {f['low']:.3g} to {f['high']:.3g}); held out by group: median factor "
            f"{h['median_factor']:.3g}, {h['within_2x']:.0%} within 2x, band coverage {h['coverage']:.0%}"
            + (
                ""
                if vendor_factor(vendor, table=table).enough
                else f" (under {MIN_VENDOR_GROUPS} groups: no factor shown)"
            )
        )
    return out


def main(argv: list[str] | None = None) -> int:
    return write_or_check(__file__, __doc__, OUT, vendor_factor_table, _report, argv)


if __name__ == "__main__":
    sys.exit(main())
