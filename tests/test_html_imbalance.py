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
