"""`mpilens html` opened in a real browser (headless Chromium) from disk.

The report must render every plot (images decoded with a non-zero size), show
the job summary, and fetch nothing: no http(s) reference in the file and no
resource loaded by the page.  A test-only copy of the report gets a small
script that records, at the load event, what the browser rendered; the DOM
dump then carries those figures.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import matplotlib.image
import pytest
from conftest import read_profile
from test_cli_support import STEPS, N, mpilens, per_rank_calls, real_profile

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
PROBE = """<script>
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var ok = imgs.filter(function (i) {
    var r = i.getBoundingClientRect();
    return i.complete && i.naturalWidth > 0 && i.naturalHeight > 0 && r.width > 0 && r.height > 0;
  });
  var res = performance.getEntriesByType('resource').map(function (e) { return e.name; });
  document.body.setAttribute('data-images', String(imgs.length));
  document.body.setAttribute('data-rendered', String(ok.length));
  document.body.setAttribute('data-resources', JSON.stringify(res));
});
</script></body>"""


def chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", "--disable-default-apps", f"--user-data-dir={tmp / 'profile'}",
         *args], capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def report(build, tmp_path_factory) -> tuple[Path, Path]:
    prof = real_profile(4)
    out = tmp_path_factory.mktemp("html") / "report.html"
    proc = mpilens("html", prof, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert f"HTML report written to {out}" in proc.stderr
    return prof, out


def expected_images(prof: Path) -> int:
    """3 figures (per-rank time, imbalance, heatmap) + one histogram per function
    that sent or received messages (heat2d: Bcast, Isend, Irecv, Allreduce, Alltoall)
    + 2 of the time line (heat map ranks x time, stacked classes)."""
    header, ranks = read_profile(prof)
    moved = [n for n, f in header["functions"].items()
             if sum(f.get("hist_send", [])) + sum(f.get("hist_recv", []))]
    assert set(moved) == {"MPI_Bcast", "MPI_Isend", "MPI_Irecv", "MPI_Allreduce",
                          "MPI_Alltoall"}
    return 3 + len(moved) + (2 if any("timeline" in r for r in ranks) else 0)


def test_html_is_self_contained(report) -> None:
    prof, out = report
    text = out.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:|//)""", text, re.IGNORECASE)
    assert "http://" not in text and "https://" not in text
    assert "<script" not in text and "<link" not in text and "url(" not in text
    imgs = re.findall(r'<img [^>]*src="data:image/png;base64,', text)
    assert len(imgs) == expected_images(prof)


def test_browser_renders_plots_and_summary(report, tmp_path: Path) -> None:
    prof, out = report
    header, _ = read_profile(prof)
    probe = tmp_path / "probe.html"
    probe.write_text(out.read_text().replace("</body>", PROBE))
    proc = chromium(tmp_path, "--dump-dom", probe.as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    body = re.search(r"<body([^>]*)>", dom)
    assert body, dom[:2000]
    attrs = dict(re.findall(r'data-(\w+)="([^"]*)"', body.group(1)))
    n = expected_images(prof)
    assert attrs["images"] == str(n)
    assert attrs["rendered"] == str(n)  # every plot decoded and laid out with a size
    assert json.loads(attrs["resources"].replace("&quot;", '"')) == []  # nothing fetched
    # the job summary, as the browser shows it
    assert f"mpilens report: {header['job_id']}" in dom
    assert "Ranks / hosts</td><td>4 / 1" in dom
    assert "1-D stencil on a ring of 4 ranks" in dom
    for name in per_rank_calls():
        assert f"<td>{name}</td>" in dom
    assert f"<td>{4 * 2 * STEPS:,}</td>" in dom  # MPI_Isend calls
    label = header["hist_labels"][(N * 8).bit_length()]
    assert f"of MPI_Isend messages sent ({4 * 2 * STEPS} of {4 * 2 * STEPS}) are {label} B" \
        in dom


def test_browser_screenshot_shows_plots(report, tmp_path: Path) -> None:
    _, out = report
    shot = tmp_path / "shot.png"
    proc = chromium(tmp_path, "--window-size=1200,2400", f"--screenshot={shot}", out.as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    img = matplotlib.image.imread(shot)
    assert img.shape[0] == 2400 and img.shape[1] == 1200
    # a rendered report: many distinct colours (banner, plots), not a blank page
    colours = {tuple(px) for px in img[::7, ::7, :3].reshape(-1, 3).tolist()}
    assert len(colours) > 200
