"""Write ``llmcourse/data/bands.json``: the 80% bands every answer shows, from the shipped measured rows.

    .venv/bin/python scripts/make_bands.py [--check]

The table is :func:`llmcourse.validation.band_table` of :func:`llmcourse.validation.evidence` (the
shipped aiconfigurator rows under the course's method, held out model by model). ``--check`` writes
nothing and exits 1 if the shipped file differs (the validation chapter makes the same check, so a
stale table fails the book build). It takes about as long as one ``evidence()`` (half a minute to a
minute).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import llmcourse.validation as lcv  # noqa: E402

OUT = ROOT / "llmcourse" / "data" / lcv.BANDS_FILE


def render(table: dict) -> str:
    """The file's text: sorted keys, two-space indents, a final newline (stable diffs)."""
    return json.dumps(table, indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the shipped file; write nothing")
    args = ap.parse_args(argv)
    t = time.perf_counter()
    table = lcv.band_table(lcv.evidence())
    text = render(table)
    took = time.perf_counter() - t
    if args.check:
        same = OUT.exists() and json.loads(OUT.read_text(encoding="utf-8")) == table
        print(f"{OUT.relative_to(ROOT)}: {'up to date' if same else 'STALE: run scripts/make_bands.py'} ({took:.0f} s)")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    fams = table["families"]
    print(f"wrote {OUT.relative_to(ROOT)}: {len(fams)} families from {table['rows']:,} measurements ({took:.0f} s)")
    for key, f in fams.items():
        print(f"  {key:32s} n={f['n']:5,}  80% of measured/predicted in {f['low']:.2f} to {f['high']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
