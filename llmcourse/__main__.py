"""Command line: ``python -m llmcourse plan ...`` and ``python -m llmcourse check NOTEBOOK``.

Examples
--------
>>> main(["plan", "--model", "Llama-3.1-8B", "--gpu", "H100 SXM", "--rps", "10", "--prompt", "2000",
...       "--answer", "300", "--ttft-ms", "1000", "--tpot-ms", "50"])  # doctest: +ELLIPSIS
Llama-3.1-8B on H100 SXM
...
0
"""

from __future__ import annotations

import argparse
import sys

from llmcourse.errors import InputError, UnknownNameError

__all__ = ["main"]


def _plan(args: argparse.Namespace) -> int:
    import llmcourse as lc
    from llmcourse.units import Q_

    brief = lc.Brief(args.rps, args.prompt, args.answer, Q_(args.ttft_ms, "ms"), Q_(args.tpot_ms, "ms"))
    p = lc.plan(
        args.model,
        args.gpu,
        brief,
        weight_bytes=args.weights,
        kv_bytes=args.kv,
        tensor_parallel=args.tp,
        assumptions=args.method,
    )
    print(f"{p.model} on {p.gpu} ({lc.resolve(args.method).summary})")
    print(p)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "check":
        try:
            from llmcourse.exercises.cli import main as check_main
        except ImportError:  # pragma: no cover - the exercise engine ships with the package
            print("the exercise checker is not installed", file=sys.stderr)
            return 2
        return check_main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m llmcourse", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plan", help="size a fleet for a brief (the design planner)")
    p.add_argument("--model", required=True)
    p.add_argument("--gpu", required=True)
    p.add_argument("--rps", type=float, required=True, help="requests per second at peak")
    p.add_argument("--prompt", type=float, required=True, help="prompt tokens per request")
    p.add_argument("--answer", type=float, required=True, help="answer tokens per request")
    p.add_argument("--ttft-ms", type=float, required=True, help="time-to-first-token target in ms")
    p.add_argument("--tpot-ms", type=float, required=True, help="time-per-output-token target in ms")
    p.add_argument("--weights", default="bf16", help="weight precision (bf16, fp8, int8, int4)")
    p.add_argument("--kv", default="bf16", help="KV cache precision")
    p.add_argument("--tp", type=int, default=1, help="GPUs per replica (tensor parallel)")
    p.add_argument(
        "--method",
        default="course",
        help="assumptions preset: course (default), envelope, lab, capacity or planner",
    )
    sub.add_parser("check", help="grade an exercise notebook: check NOTEBOOK [--seed S]")
    args = parser.parse_args(argv)
    try:
        return _plan(args)
    except (InputError, UnknownNameError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
