"""The figures of chapters 1-4 build, with labelled axes and the discussed point marked."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from llmcourse.planner.memory import without_gqa
from llmcourse.plots.gqa import kv_heads_sweep
from llmcourse.plots.kv_cache import batch_vs_context, kv_vs_context
from llmcourse.plots.tokens import stream_time
from llmcourse.plots.weights import weights_by_precision


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def labelled(ax):
    return bool(ax.get_xlabel()) and bool(ax.get_ylabel() or not ax.get_yticks().size)


def marked_texts(ax):
    return [t.get_text() for t in ax.texts]


def test_stream_time_marks_25_s():
    """1,250 tokens at 50 tok/s is marked as 25 s (seed 004)."""
    ax = stream_time(reading_speed=5.3)
    assert labelled(ax) and "(s)" in ax.get_ylabel()
    assert any("25 s" in t for t in marked_texts(ax))


def test_weights_by_precision_marks_145_gb():
    """Qwen2.5-72B in BF16 is marked at 145.4 GB (72.7e9 x 2 B)."""
    ax = weights_by_precision(["Llama-3.1-8B", "Qwen2.5-72B"], mark=("Qwen2.5-72B", "bf16"))
    assert "(GB" in ax.get_xlabel()
    assert "145.4 GB" in marked_texts(ax)


def test_batch_vs_context_marks_166():
    """Llama 3.1 8B at 2,560 tokens is marked with 166 sequences (seed 001)."""
    ax = batch_vs_context(["Llama-3.1-8B", "Llama-2-7B"], mark=("Llama-3.1-8B", 2_560))
    assert labelled(ax) and "tokens" in ax.get_xlabel()
    assert "166 at 2,560 tokens" in marked_texts(ax)


def test_batch_vs_context_stops_each_line_at_its_context_limit():
    """Llama 2 7B's config allows 4,096 positions (max_position_embeddings), Llama 3.1 8B's 131,072: the first
    line ends at 4,096 (with its label saying so), the second runs to the axis's 131,072; 4,096 tokens x 512 KiB
    (2 x 32 layers x 32 heads x 128 x 2 B) = 2.147 GB each, (72 - 13.48) GB / 2.147 GB = 27 at the end."""
    ax = batch_vs_context(["Llama-2-7B", "Llama-3.1-8B"])
    lines = {ln.get_label(): ln for ln in ax.get_lines() if not ln.get_label().startswith("_")}
    assert set(lines) == {"Llama-2-7B (to 4,096)", "Llama-3.1-8B"}
    assert max(lines["Llama-2-7B (to 4,096)"].get_xdata()) == 4_096
    assert lines["Llama-2-7B (to 4,096)"].get_ydata()[-1] == 27
    assert max(lines["Llama-3.1-8B"].get_xdata()) == 131_072


def test_kv_vs_context_bars():
    """The MHA table's bars are labelled 2.62, 10.5, 83.9, 336 GB (2,621,440 B x context)."""
    ax = kv_vs_context([without_gqa("Llama-3.1-70B")])
    assert labelled(ax) and "GB" in ax.get_ylabel()
    assert marked_texts(ax) == ["2.62", "10.5", "83.9", "336"]


def test_kv_heads_sweep_marks_12():
    """Llama 3.1 8B's 8 KV heads at 33,280 tokens: 12 sequences (seed 001)."""
    ax = kv_heads_sweep("Llama-3.1-8B", 33_280)
    assert labelled(ax) and "KiB" in ax.get_ylabel()
    twin = next(a for a in ax.figure.axes if a is not ax)
    assert "8 KV heads: 12 fit" in marked_texts(twin)


def test_weights_by_precision_reads_memory_as_the_assumptions_say():
    """Usable memory of one H100: 80 GB x 0.9 = 72 GB; read as GiB, 80 x 2^30 B x 0.9 = 77.3 GB."""
    import llmcourse as lc

    ax = weights_by_precision(["Qwen2.5-72B"], gpu_counts=(1,))
    assert any("72 GB" in t for t in marked_texts(ax))
    ax = weights_by_precision(["Qwen2.5-72B"], gpu_counts=(1,), assumptions=lc.resolve().replace(memory_unit="GiB"))
    assert any("77 GB" in t for t in marked_texts(ax)) and "GiB" in ax.get_title()


def test_roofline_labels_the_method_efficiencies():
    """The course's roofline is drawn at 70% of bandwidth and 50% of compute, the envelope's at 100% / 50%."""
    from llmcourse.plots.decode import roofline

    assert "70% bandwidth, 50% compute" in roofline("Llama-3.1-8B", "H100 SXM").get_legend_handles_labels()[1][0]
    env = roofline("Llama-3.1-8B", "H100 SXM", assumptions="envelope")
    assert "100% bandwidth" in env.get_legend_handles_labels()[1][0]


def test_step_and_throughput_marks_the_lab_crossover_and_draws_the_per_op_sum():
    """The lab's 256/64 chart: crossover 410.5 (its 411); the per-op sum line lies at or above the max rule."""
    from llmcourse.plots.batching import step_and_throughput

    ax = step_and_throughput("Llama-3.1-8B", "H100 SXM", max_batch=512, assumptions="lab")
    assert any("crossover 410.5" in t for t in marked_texts(ax))
    lines = {ln.get_label(): ln.get_ydata() for ln in ax.get_lines()}
    assert all(s >= m - 1e-9 for s, m in zip(lines["step time, per-op sum"], lines["step time"], strict=True))
    assert lines["step time, per-op sum"][-1] > lines["step time"][-1]  # the matmuls are compute-bound at 512


def test_a_figure_reads_on_a_phone_and_says_what_it_shows():
    """Every text of a 5.4-inch figure is raised to 9.5 px in a 358-px phone column: the saved PNG is 5.4 in + two
    0.1-in pads = 5.6 in wide, so the font is 9.5 x 5.6 x 72 / 358 = 10.70 pt = 14.86 px at 100 dpi; the PNG's
    text chunks carry that size and the alt text, which starts with the figure's lead sentence."""
    import io

    from PIL import Image

    ax = batch_vs_context(["Llama-3.1-8B", "Llama-2-7B"], mark=("Llama-3.1-8B", 2_560))
    fig = ax.get_figure(root=True)
    text = Image.open(io.BytesIO(fig.png())).text
    assert float(text["llmcourse-min-font-px"]) == pytest.approx(14.86, abs=0.02)
    assert text["Description"] == fig.alt
    assert fig.alt.startswith("How many sequences fit in memory") and "166 at 2,560 tokens" in fig.alt
    assert not fig.alt.endswith(".png")
