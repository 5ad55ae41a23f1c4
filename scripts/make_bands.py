"""Write ``llmcourse/data/bands.json``: the 80% bands every answer shows, from the shipped measured rows.

    .venv/bin/python scripts/make_bands.py [--check]

The table is :func:`llmcourse.validation.band_table` of :func:`llmcourse.validation.evidence` (the
shipped aiconfigurator rows under the course's method, held out model by model). ``--check`` writes
nothing and exits 1 if the shipped file differs (the validation chapter makes the same check, so a
stale table fails the book build). It takes about as long as one ``evidence()`` (half a minute to a
minute).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from shipped_table import write_or_check  # noqa: E402

import llmcourse.validation as lcv  # noqa: E402

OUT = ROOT / "llmcourse" / "data" / lcv.BANDS_FILE


def _report(table: dict) -> list[str]:
    fams = table["families"]
    return [f"{len(fams)} families from {table['rows']:,} measurements"] + [
        f"{key:32s} n={f['n']:5,} setups={f['setups']:3}  80% band of measured/predicted (each setup once) "
        f"{f['low']:.2f} to {f['high']:.2f}"
        for key, f in fams.items()
    ]


def main(argv: list[str] | None = None) -> int:
    return write_or_check(__file__, __doc__, OUT, lambda: lcv.band_table(lcv.evidence()), _report, argv)


if __name__ == "__main__":
    sys.exit(main())
