"""The HTML report's per-rank imbalance figure: the dashed line is the mean time in MPI
and sits on the scale of the "in MPI" bars, which start at 0 (issue 15: the line was
measured from 0 while the bars were stacked on the time outside MPI)."""

from __future__ import annotations

import pytest
from conftest import read_profile
from matplotlib.container import BarContainer
from mpilens.report.html import imbalance_data, imbalance_figure
from mpilens.report.profile import load
from test_cli_support import real_profile


@pytest.fixture(scope="module")
def prof4(build):
    return real_profile(4)


def test_mean_line_is_the_mean_of_the_in_mpi_bars(prof4) -> None:
    _, lines = read_profile(prof4)
    mpi = [ln["mpi_s"] for ln in lines]
    outside = [max(0.0, ln["wall_s"] - ln["mpi_s"]) for ln in lines]
    prof = load(prof4)
    d = imbalance_data(prof)
    assert d is not None
    assert (d.in_mpi, d.outside, d.mean_in_mpi) == (mpi, outside, sum(mpi) / len(mpi))

    fig = imbalance_figure(prof)
    [ax] = fig.axes
    bars = {c.get_label(): c for c in ax.containers if isinstance(c, BarContainer)}
    assert set(bars) == {"in MPI", "outside MPI"}
    in_mpi = [(p.get_x() + p.get_width() / 2, p.get_y(), p.get_height()) for p in bars["in MPI"]]
    assert in_mpi == [(float(r), 0.0, m) for r, m in enumerate(mpi)]  # from 0, as the line
    # stacked on the time in MPI (matplotlib keeps corners: the height is top - bottom)
    assert [p.get_y() for p in bars["outside MPI"]] == mpi
    assert [p.get_height() for p in bars["outside MPI"]] == pytest.approx(outside, rel=1e-9)
    [line] = [ln for ln in ax.get_lines() if ln.get_label().startswith("mean in MPI")]
    assert set(line.get_ydata()) == {sum(mpi) / len(mpi)}
    assert line.get_linestyle() == "--"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[0] == line.get_label() and legend[1:] == ["in MPI", "outside MPI"]


def test_time_per_rank_layers_are_the_functions_times(prof4) -> None:
    """The stacked per-rank figure (one collection of rectangles per function): each
    rank's rectangle of a function is that rank's time_s of it, stacked in the legend's
    order, "other" the rest of mpi_s; the rectangles are 0.8 wide, centred on the rank."""
    from matplotlib.collections import PolyCollection
    from mpilens.report import analysis
    from mpilens.report.html import time_per_rank_figure

    _, lines = read_profile(prof4)
    prof = load(prof4)
    fig = time_per_rank_figure(prof, analysis.function_rows(prof))
    [ax] = fig.axes
    layers = [c for c in ax.collections if isinstance(c, PolyCollection)]
    names = [c.get_label() for c in layers]
    assert names == [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(names) == 8 and names[-1] == "other"  # MAX_STACKED functions and the rest
    bottom = [0.0] * len(lines)
    for name, layer in zip(names, layers):
        want = ([ln["mpi_s"] - sum(ln["functions"].get(n, {}).get("time_s", 0.0)
                                   for n in names[:-1]) for ln in lines] if name == "other"
                else [ln["functions"].get(name, {}).get("time_s", 0.0) for ln in lines])
        rects = [p.vertices[:4] for p in layer.get_paths()]
        assert [x for r in rects for x in (r[:, 0].min(), r[:, 0].max())] == pytest.approx(
            [k + d for k in range(len(lines)) for d in (-0.4, 0.4)], abs=1e-12)
        assert [r[:, 1].min() for r in rects] == pytest.approx(bottom, abs=1e-12)
        assert [r[:, 1].max() - r[:, 1].min() for r in rects] == pytest.approx(
            [max(0.0, w) for w in want], rel=1e-9, abs=1e-15)
        bottom = [b + max(0.0, w) for b, w in zip(bottom, want)]
    assert ax.get_ylim()[0] == 0.0
