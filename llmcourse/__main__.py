"""Command line: ``python -m llmcourse plan ...``, ``python -m llmcourse validate FILE`` and ``python -m llmcourse check NOTEBOOK``.

``drill --progress FILE [--n N] [--today YYYY-MM-DD] [--topic T]`` deals today's interview cards (Leitner boxes,
:mod:`llmcourse.interview.practice`), one answer a line from stdin, and saves the progress; ``mock [--minutes M]
[--chain C] [--seed S]`` runs a timed mock interview; ``bank`` prints the bank's counts.

``validate FILE [--model M] [--gpu G] [--tp N] [--weights P] [--kv P] [--engine E] [--method M] [--rps R]
[--ttft-ms T] [--tpot-ms T]`` reads measured rows (the course's CSV, aiconfigurator's CSV or
``vllm bench serve --save-result`` JSON; the options fill what a vLLM result does not say, ``--model`` names
the model of every row in place of the file's) and prints the rows read and skipped with the reasons, the
error of the course's method on them, the parameters refitted on them (with a note for any on a bound of its
grid), the error of the refit, and the fleet for a brief (``--rps`` requests per second within
the two targets; the example of :data:`llmcourse.validation.REPLAN_EXAMPLE` by default) re-planned for
the most-measured setup before and after the refit (:func:`llmcourse.validation.own_benchmark`). The file's
text is printed escaped (no control character reaches the terminal); at most
:data:`llmcourse.validation.bounded.MAX_ROWS` rows are read. Exit status: 0, 1 when no row was read (the
reasons summarised on stderr), 2 for a flag or a file refused (one line on stderr naming the flag, or saying why).

``plan --model M --gpu G --rps R --prompt P --answer A --ttft-ms T --tpot-ms T [--engine E]
[--max-batched-tokens N] [--prefill mixed|separate] [--max-running N] ...`` plans a fleet for a brief
(:func:`llmcourse.plan`) under the engine named (vLLM by default; an unknown name gets "did you mean") and says
which engine and scheduler it planned for.

``check NOTEBOOK [--seed S] [--cell-timeout T] [--timeout T]`` grades a notebook in an IPython kernel of
its own, each cell limited to ``--cell-timeout`` seconds and the whole notebook to ``--timeout`` seconds
(``python -m llmcourse check --help`` gives the defaults); ``check --key EXERCISE|CHAPTER [--seed S]``
prints the teacher's answer key for a student's variants.

Examples
--------
>>> main(["plan", "--model", "Llama-3.1-8B", "--gpu", "H100 SXM", "--rps", "10", "--prompt", "2000",
...       "--answer", "300", "--ttft-ms", "1000", "--tpot-ms", "50"])  # doctest: +ELLIPSIS
Llama-3.1-8B on H100 SXM (the course's ...)
...
                      engine: vLLM (8,192 tokens a step, prompt chunks mixed into decode steps, at most 1,024 running)
...
0
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from llmcourse.errors import InputError, UnknownNameError

__all__ = ["main"]


def _plan(args: argparse.Namespace) -> int:
    import llmcourse as lc
    from llmcourse.units import Q_

    brief = lc.Brief(
        args.rps, args.prompt, args.answer, Q_(args.ttft_ms, "ms"), Q_(args.tpot_ms, "ms"),
        ttft_percentile=args.ttft_p, tpot_percentile=args.tpot_p,
    )  # fmt: skip
    p = lc.plan(
        args.model,
        args.gpu,
        brief,
        weight_bytes=args.weights,
        kv_bytes=args.kv,
        tensor_parallel=_tp(args.tp),
        assumptions=args.method,
        price_per_hour=None if args.price is None else Q_(args.price, "USD/hour"),
        engine=lc.EngineSettings(
            args.engine,
            max_batched_tokens=args.max_batched_tokens,
            mixed_prefill=None if args.prefill is None else args.prefill == "mixed",
            max_running=args.max_running,
        ),
    )
    print(f"{p.model} on {p.gpu} ({lc.resolve(args.method).summary})")
    print(p)
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse's parser, a refused flag said on one line (``error: argument --rps: invalid float value: 'x'``)."""

    def error(self, message: str) -> Any:
        print(f"error: {_said(message)} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


def _tp(text: str) -> Any:
    """``--tp``: ``auto`` (the cheapest replica size, :func:`llmcourse.plan`'s search), or the number typed (checked,
    and refused naming ``--tp``, by plan())."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        x = float(text)
    except ValueError:
        return text  # plan() refuses text, naming tensor_parallel (--tp here)
    return int(x) if x.is_integer() else x


def _validate(args: argparse.Namespace) -> int:
    """Check the flags (each error names its flag), read the file, print the report; 1 if no row was read."""
    import llmcourse as lc
    from llmcourse.validation import load_measurements, own_benchmark
    from llmcourse.validation.cells import GIVEN_FLAGS, check_given, escaped

    given = {"gpu": args.gpu, "tensor_parallel": args.tp, "weights": args.weights, "kv": args.kv, "engine": args.engine}
    given = check_given({**given, "model": args.model, "concurrency": args.concurrency}, GIVEN_FLAGS)
    try:
        method = lc.resolve(args.method)
    except UnknownNameError as exc:
        raise InputError(f"--method: {exc}") from None
    brief = lc.Brief(args.rps, 1, 1, lc.Q_(args.ttft_ms, "ms"), lc.Q_(args.tpot_ms, "ms"))  # lengths: the setup's
    got = load_measurements(args.file, **{k: v for k, v in given.items() if v is not None})
    print(escaped(own_benchmark(got, assumptions=method, brief=brief).text()))
    if not got.rows:
        print(f"error: {escaped(_nothing_read(got))}", file=sys.stderr)
        return 1
    return 0


def _nothing_read(got: Any) -> str:
    """The line for a file of which no row was read: the reasons the rows were skipped for (the three most
    frequent), and the flag that names what a file does not (where a reason does not say it already)."""
    name = got.source or "the file"
    if not got.skipped:
        return f"nothing read from {name}: no row under its header."
    kinds = list(got.reasons().items())
    said = "; ".join(f"{n:,} x {reason.rstrip('.')}" for reason, n in kinds[:3])
    more = f"; and {len(kinds) - 3:,} other reasons" if len(kinds) > 3 else ""
    hints = [flag for words, flag in _HINTS if any(r.startswith(words) and flag not in r for r, _ in kinds)]
    hint = f" (give {' or '.join(hints)} to name what the file does not)" if hints else ""
    n = len(got.skipped)
    return f"nothing read from {name}: {n:,} row{'' if n == 1 else 's'} skipped: {said}{more}{hint}."


#: The reasons a row is skipped that a flag of validate answers.
_HINTS = (("no model named", "--model"), ("no GPU named", "--gpu"))


def _date(text: str) -> Any:
    """``--today``: a date written YYYY-MM-DD (argparse names the flag when this refuses it)."""
    import datetime as dt

    return dt.date.fromisoformat(text)


def _drill(args: argparse.Namespace) -> int:
    """Today's cards from stdin, graded; the progress file read first (refused whole if unreadable), saved after."""
    import datetime as dt

    from llmcourse.interview.practice import drill_session, load_progress, save_progress

    progress = load_progress(args.progress)
    drill_session(sys.stdin, progress, args.today or dt.date.today(), args.n, topic=args.topic)
    save_progress(progress, args.progress)
    return 0


def _mock(args: argparse.Namespace) -> int:
    import time

    from llmcourse.interview.practice import mock_session

    mock_session(sys.stdin, time.monotonic, minutes=args.minutes, chain=args.chain, seed=args.seed)
    return 0


def _bank(args: argparse.Namespace) -> int:
    from llmcourse.interview.practice import report, report_text

    if args.variants < 0:
        raise InputError(f"--variants {args.variants}: give 0 (the counts alone) or a positive number of variants.")
    print(report_text(report(variants=args.variants)))
    return 0


def _practice_parsers(sub: Any) -> None:
    """The drill, mock and bank commands' flags."""
    d = sub.add_parser("drill", help="spaced practice with the interview bank: today's cards, answers from stdin")
    d.add_argument("--progress", required=True, help="the JSON file your progress is kept in (made if absent)")
    d.add_argument("--n", type=int, default=10, help="cards a day (due ones first, then new ones)")
    d.add_argument("--today", type=_date, help="the date to schedule by, YYYY-MM-DD (today by default)")
    d.add_argument("--topic", help="only this competency (a question topic)")
    m = sub.add_parser("mock", help="a timed mock interview: a design or Staff+ question, then its follow-ups")
    m.add_argument("--minutes", type=float, default=20, help="the time limit in minutes")
    m.add_argument("--chain", help="the chain to ask (one is drawn by default)")
    m.add_argument("--seed", type=int, default=0, help="picks the chain and its variant")
    b = sub.add_parser("bank", help="the interview bank's counts: questions by kind, level and topic, chains, variants")
    b.add_argument(
        "--variants",
        type=int,
        default=0,
        help="also count each numeric question's distinct answers over this many variants (20 takes minutes: every "
        "variant is computed); 0, the default, prints the counts alone",
    )


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
    parser = _Parser(prog="python -m llmcourse", description=__doc__.splitlines()[0])
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
    p.add_argument(
        "--tp", default="1", help="GPUs per replica (tensor parallel, 1 to 1024), or auto: the cheapest of 1, 2, 4, 8"
    )
    p.add_argument("--price", type=float, help="USD per GPU-hour (the catalog's price by default)")
    p.add_argument("--ttft-p", type=float, help="the percentile the TTFT target is for (e.g. 99; the mean by default)")
    p.add_argument("--tpot-p", type=float, help="the percentile the TPOT target is for (e.g. 99; the mean by default)")
    p.add_argument(
        "--method",
        default="course",
        help="assumptions preset: course (default), envelope, lab, capacity or planner",
    )
    p.add_argument("--engine", help="the serving engine: vLLM (default), SGLang, TensorRT-LLM or llama.cpp")
    p.add_argument(
        "--max-batched-tokens", type=int, help="tokens one engine step may carry (the engine's default on the GPU)"
    )
    p.add_argument(
        "--prefill",
        choices=("mixed", "separate"),
        help="prompt chunks mixed into decode steps, or prefill batches of their own (the engine's default)",
    )
    p.add_argument("--max-running", type=int, help="the most requests the engine runs at once (its default)")
    sub.add_parser(
        "check",
        help="grade an exercise notebook: check NOTEBOOK [--seed S] [--cell-timeout T] [--timeout T] "
        "(seconds per cell and per notebook); the teacher's answer key: check --key EXERCISE|CHAPTER [--seed S]",
    )
    v = sub.add_parser("validate", help="your own benchmark: read a measured file, the course's error, the refit")
    v.add_argument("file", help="a measured CSV (the course's or aiconfigurator's) or vllm bench JSON")
    v.add_argument("--model", help="the model of every row, in place of the file's (a name, or a Hugging Face id)")
    v.add_argument("--gpu", help="the GPU of a vllm bench result (its metadata wins)")
    v.add_argument("--tp", type=int, help="the tensor-parallel size of a vllm bench result")
    v.add_argument("--weights", help="the weight precision of a vllm bench result")
    v.add_argument("--kv", help="the KV cache precision (aiconfigurator and vllm files do not say)")
    v.add_argument("--engine", help="the engine of a vllm bench result")
    v.add_argument("--concurrency", type=float, help="requests in flight (an AIPerf or GenAI-Perf CSV does not say)")
    v.add_argument("--method", default="course", help="assumptions preset (course by default)")
    _practice_parsers(sub)
    from llmcourse.validation import REPLAN_EXAMPLE as ex

    v.add_argument("--rps", type=float, default=ex["requests_per_second"], help="requests per second to re-plan")
    v.add_argument("--ttft-ms", type=float, default=ex["ttft_ms"], help="the re-plan's time-to-first-token target")
    v.add_argument("--tpot-ms", type=float, default=ex["tpot_ms"], help="the re-plan's time-per-token target")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0), or a flag refused (2: one line on stderr, said by _Parser)
        return exc.code if isinstance(exc.code, int) else 2
    try:
        commands = {"plan": _plan, "validate": _validate, "drill": _drill, "mock": _mock, "bank": _bank}
        return commands[args.command](args)
    except (InputError, UnknownNameError) as exc:
        message = str(exc)
        flags = {"plan": _PLAN_FLAGS, "validate": _VALIDATE_FLAGS}.get(args.command, {})
        for name, flag in flags.items():  # name the flag the user typed, not the function's argument
            message = re.sub(rf"\b{name}\b", flag, message)
        print(f"error: {_said(message)}", file=sys.stderr)
        return 2


#: The plan command's flags, by the argument of plan()/Brief/replica they set.
_PLAN_FLAGS = {
    "tensor_parallel": "--tp",
    "requests_per_second": "--rps",
    "prompt_tokens": "--prompt",
    "answer_tokens": "--answer",
    "ttft_target": "--ttft-ms",
    "tpot_target": "--tpot-ms",
    "weight_bytes": "--weights",
    "bytes_per_param": "--weights",
    "kv_bytes": "--kv",
    "price_per_hour": "--price",
    "ttft_percentile": "--ttft-p",
    "tpot_percentile": "--tpot-p",
    "max_batched_tokens": "--max-batched-tokens",
    "max_running": "--max-running",
}

#: The validate command's flags that set an argument of Brief (the others are checked by
#: :func:`llmcourse.validation.cells.check_given`, which names the flag itself).
_VALIDATE_FLAGS = {"requests_per_second": "--rps", "ttft_target": "--ttft-ms", "tpot_target": "--tpot-ms"}


def escaped(text: str) -> str:
    """``text`` with its non-printable characters escaped (:func:`llmcourse.validation.cells.escaped`)."""
    from llmcourse.validation.cells import escaped as escape

    return escape(text)


def _said(message: str) -> str:
    """An error message as one printed line: escaped (its line breaks too), each word of more than
    :data:`_LONGEST_WORD` characters (a value typed, a huge number written out) cut and its length said, and the
    line cut at :data:`_WIDEST` characters.

    Examples
    --------
    >>> _said("no GPU named '" + "9" * 5000 + "'")
    "no GPU named '9999999999999999999...9999999' (5,002 characters)"
    """
    from llmcourse.validation.cells import one_line, shortened

    line = re.sub(rf"\S{{{_LONGEST_WORD + 1},}}", lambda m: shortened(m.group()), one_line(message))
    return shortened(line, _WIDEST)


#: The longest word of an error message printed whole, and the longest error line (:func:`_said`).
_LONGEST_WORD, _WIDEST = 60, 1_000  # the widest: the package's own longest refusal (the formats it reads) whole


if __name__ == "__main__":
    sys.exit(main())
