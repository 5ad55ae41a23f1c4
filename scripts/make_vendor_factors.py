"""Write ``llmcourse/data/vendor_factors.json``: the AMD and Intel factors an answer on their GPUs shows.

    .venv/bin/python scripts/make_vendor_factors.py [--check]

The table is :func:`llmcourse.validation.vendors.vendor_factor_table` of the published rows in
``llmcourse/data/vendor_published.csv`` under the course's method (each vendor's median measured / predicted, its
80% band, and its error held out by group). ``--check`` writes nothing and exits 1 if the shipped file differs
(tests/test_vendors.py makes the same check). It takes a few seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from llmcourse.bands import VENDOR_FACTOR_FILE  # noqa: E402
from llmcourse.validation.vendors import vendor_factor_table  # noqa: E402

OUT = ROOT / "llmcourse" / "data" / VENDOR_FACTOR_FILE


def render(table: dict) -> str:
    """The file's text: sorted keys, two-space indents, a final newline (stable diffs)."""
    return json.dumps(table, indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the shipped file; write nothing")
    args = ap.parse_args(argv)
    t = time.perf_counter()
    table = vendor_factor_table()
    took = time.perf_counter() - t
    if args.check:
        same = OUT.exists() and json.loads(OUT.read_text(encoding="utf-8")) == table
        print(f"{OUT.relative_to(ROOT)}: {'up to date' if same else 'STALE: run scripts/make_vendor_factors.py'}")
        return 0 if same else 1
    OUT.write_text(render(table), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)} ({took:.1f} s)")
    for vendor, f in table["vendors"].items():
        h = f["held_out"]
        print(
            f"  {vendor:6s} {f['n']} rows on {', '.join(f['gpus'])}, {f['groups']} groups: factor {f['median']:.3g} "
            f"(80% of rows {f['low']:.3g} to {f['high']:.3g}); held out by group: median factor "
            f"{h['median_factor']:.3g}, {h['within_2x']:.0%} within 2x, band coverage {h['coverage']:.0%}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
