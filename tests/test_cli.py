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
