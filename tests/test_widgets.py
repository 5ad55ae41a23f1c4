"""The Calculator base and the first chapter's calculator, driven as a reader would."""

import pytest

import llmcourse as lc
from llmcourse.errors import InputError
from llmcourse.widgets import Calculator, int_box, model_dropdown
from llmcourse.widgets.first_estimate import serving_plan_calculator


def test_calculator_recomputes_when_a_control_changes():
    """Changing a widget's value (as a reader's click does) recomputes."""
    c = Calculator(
        lambda model: [("KV", str(lc.kv_bytes_per_token(model).to("KiB").m))], {"model": model_dropdown("Qwen2.5-72B")}
    )
    assert c.rows == [("KV", "320.0")]
    c.controls["model"].value = "Qwen2.5-7B"
    assert c.rows == [("KV", "56.0")] and "56.0" in c.output.value


def test_calculator_shows_input_errors_as_messages():
    """A bad input shows a message in the output, never a traceback."""
    c = Calculator(lambda n: [("x", str(lc.kv_bytes_per_sequence("Qwen2.5-72B", n)))], {"n": int_box(10)})
    c.set(n=0)
    assert c.error and "greater than zero" in c.output.value and c.rows == []
    c.set(n=10)
    assert c.error is None and c.rows


def test_calculator_set_rejects_unknown_controls():
    """set() names the controls it has."""
    c = serving_plan_calculator()
    with pytest.raises(InputError, match="no control"):
        c.set(gpus=4)


def test_first_estimate_calculator_matches_the_seed_table():
    """Under the back-of-the-envelope method the defaults reproduce its table: batch 94 and 4,387 tok/s;
    4 GPUs in BF16 give 189; BF16 on 2 GPUs does not fit; the 7B on one GPU holds 430."""
    c = serving_plan_calculator(method="envelope")
    assert dict(c.rows)["conversations at once"] == "94"
    assert dict(c.rows)["tok/s in all, decode only"] == "4,387"
    assert dict(c.set(n_gpus=4, precision="bf16").rows)["conversations at once"] == "189"
    assert dict(c.set(n_gpus=2).rows)["fits"] == "no"
    assert dict(c.set(model="Qwen2.5-7B", n_gpus=1).rows)["conversations at once"] == "430"


def test_first_estimate_calculator_defaults_to_the_course_method():
    """The course's method charges prefill: fewer tokens per second than the envelope's 4,387, at the batch the
    engine admits on the KV blocks in use (100, not the envelope's 94 at the final length: 704.5 MB a conversation
    on average plus 2 spreads of 300 x 327,680 B x sqrt(100 / 12), 71.02 GB of the 71.3 GB the weights leave)."""
    c = serving_plan_calculator()
    rows = dict(c.rows)
    assert rows["conversations at once"] == "100"
    assert int(rows["tok/s in all, prefill charged"].replace(",", "")) < 4_387
