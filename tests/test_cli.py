"""The command line."""

from llmcourse.__main__ import main


def test_plan_prints_a_review(capsys):
    """`plan` prints the review table."""
    assert (
        main(
            [
                "plan",
                "--model",
                "Llama-3.1-8B",
                "--gpu",
                "H100 SXM",
                "--rps",
                "10",
                "--prompt",
                "2000",
                "--answer",
                "300",
                "--ttft-ms",
                "1000",
                "--tpot-ms",
                "50",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "time per output token" in out and "GPUs" in out


def test_plan_unknown_model_is_a_clear_error(capsys):
    """A typo exits 2 with a suggestion, no traceback."""
    assert (
        main(
            [
                "plan",
                "--model",
                "Qwen2.5-70B",
                "--gpu",
                "H100 SXM",
                "--rps",
                "1",
                "--prompt",
                "10",
                "--answer",
                "10",
                "--ttft-ms",
                "1000",
                "--tpot-ms",
                "50",
            ]
        )
        == 2
    )
    assert "Did you mean" in capsys.readouterr().err


def test_plan_method_names_a_preset(capsys):
    """--method picks the assumptions; a typo gets 'did you mean' and exit 2."""
    args = ["plan", "--model", "Llama-3.1-8B", "--gpu", "H100 SXM", "--rps", "10", "--prompt", "2000", "--answer", "300",
            "--ttft-ms", "1000", "--tpot-ms", "50"]  # fmt: skip
    assert main([*args, "--method", "planner"]) == 0
    assert "six-step planner" in capsys.readouterr().out
    assert main([*args, "--method", "plannr"]) == 2
    assert "Did you mean 'planner'" in capsys.readouterr().err


def test_check_key_prints_the_teachers_answer_key(capsys):
    """`check --key CHAPTER` prints one expected answer per exercise of the chapter (the teacher's key)."""
    assert main(["check", "--key", "tokens"]) == 0
    out = capsys.readouterr().out
    assert "book's variants" in out and out.count("tokens_ex") == 6
    assert main(["check", "--key", "tokens", "--seed", "alice"]) == 0
    assert "student alice" in capsys.readouterr().out


def test_plan_errors_name_the_flag_typed(capsys):
    """An absurd --tp is refused, and the message names --tp (not the function's tensor_parallel)."""
    argv = "plan --model Llama-3.1-8B --gpu H100 --rps 1 --prompt 100 --answer 100 --ttft-ms 500 --tpot-ms 50 --tp 4096"
    assert main(argv.split()) == 2
    err = capsys.readouterr().err
    assert "--tp must be at most 1024" in err and "tensor_parallel" not in err


_BRIEF = "plan --model Llama-3.1-8B --gpu H100 --rps 10 --prompt 2000 --answer 300 --ttft-ms 1000 --tpot-ms 50"


def _refused(capsys, extra: str) -> str:
    assert main([*_BRIEF.split(), *extra.split()]) == 2
    got = capsys.readouterr()
    assert got.out == "" and got.err.count("\n") == 1  # one line, no traceback
    return got.err


def test_every_plan_flag_error_names_the_flag(capsys):
    """Each flag refused names the flag typed, never plan()'s parameter."""
    for extra, flag, param in (
        ("--weights fp9", "--weights", "bytes_per_param"),
        ("--rps nan", "--rps", "requests_per_second"),
        ("--price -1", "--price", "price_per_hour"),
        ("--ttft-p 100", "--ttft-p", "ttft_percentile"),
        ("--tpot-p 0", "--tpot-p", "tpot_percentile"),
        ("--tp x", "--tp", "tensor_parallel"),
    ):
        err = _refused(capsys, extra)
        assert flag in err and param not in err, err


def test_a_flag_argparse_refuses_is_one_line(capsys):
    assert "argument --tpot-p: invalid float value" in _refused(capsys, "--tpot-p abc")


def test_plan_prints_tp_price_and_percentiles(capsys):
    """--tp auto says the replica size chosen and why; --price is the $/GPU-hour behind "$ per hour"; --ttft-p."""
    assert main([*_BRIEF.split(), "--tp", "auto", "--price", "2", "--ttft-p", "99"]) == 0
    out = capsys.readouterr().out
    assert "tensor parallel: 1 GPU per replica; auto: the cheapest of 1, 2, 4, 8 GPUs per replica" in out
    assert "(2 GPUs x $2.00 per GPU-hour)" in out and "time to first token, p99" in out


def test_plan_always_prints_the_tensor_parallel_degree(capsys):
    assert main([*_BRIEF.split(), "--tp", "2"]) == 0
    assert "tensor parallel: 2 GPUs per replica" in capsys.readouterr().out
    assert main(_BRIEF.split()) == 0
    assert "tensor parallel: 1 GPU per replica" in capsys.readouterr().out


def test_plan_says_the_engine_and_takes_its_settings(capsys):
    """--engine names the engine (vLLM by default, said in the output); its settings change the plan's scheduler;
    an unknown engine gets "did you mean"; a setting out of range is refused naming its flag."""
    assert main(_BRIEF.split()) == 0
    assert "engine: vLLM (8,192 tokens a step, prompt chunks mixed into decode steps" in capsys.readouterr().out
    assert main([*_BRIEF.split(), "--engine", "sglang"]) == 0
    assert "engine: SGLang (8,192 tokens a step, separate prefill batches)" in capsys.readouterr().out
    assert main([*_BRIEF.split(), "--engine", "sglang", "--prefill", "mixed", "--max-batched-tokens", "4096"]) == 0
    assert "engine: SGLang (4,096 tokens a step, prompt chunks mixed into decode steps)" in capsys.readouterr().out
    assert main([*_BRIEF.split(), "--engine", "sglng"]) == 2
    assert "Did you mean 'SGLang'" in capsys.readouterr().err
    for extra, flag in (("--max-running -2", "--max-running"), ("--max-batched-tokens 0", "--max-batched-tokens")):
        err = _refused(capsys, extra)
        assert flag in err and "max_" not in err.replace(flag, ""), err


def test_bank_prints_its_counts_at_once_and_refuses_a_negative_variant_count(capsys):
    """``bank`` counts questions, kinds, chains and design prompts without computing an answer (the variants'
    distinct answers only on request); a negative ``--variants`` is a one-line error, exit status 2."""
    from llmcourse.interview.bank import QUESTIONS

    assert main(["bank"]) == 0
    out = capsys.readouterr().out
    assert f"questions: {len(QUESTIONS)}" in out and "design prompts: " in out and "not counted" in out
    assert main(["bank", "--variants", "-1"]) == 2
    err = capsys.readouterr().err
    assert "--variants -1" in err and "Traceback" not in err
