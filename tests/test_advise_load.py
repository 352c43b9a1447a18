"""How advise loads a profile (advise/ranks.py): one pass of the reader, the rank lines
as views over folded arrays.  On real jobs of tests/progs/advise_app: every rank's view
holds exactly the values of its JSON line (read here independently with json); advise
gives the same result from the views as from the reader's lines read again; the file is
not read a second time; a field advise does not fold is refused loudly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mpilens.advise import engine, netmodel
from mpilens.advise import ranks as advise_ranks
from mpilens.advise.collectives import FAMILIES
from mpilens.report import fastread
from mpilens.report.profile import load as reader_load
from test_advise import profile, write_model

LATE_DEFAULTS = {"sampled": 0, "every": 0, "clear": 0, "why": "", "last_clear": 0, "gap_s": 0.0}


def _expected(line: dict[str, Any]) -> dict[str, Any]:
    """The JSON line reduced to what advise folds (advise/ranks.py's docstring)."""
    out: dict[str, Any] = {}
    for key in advise_ranks.RANK_KEYS & set(line):
        v = line[key]
        if key == "functions":
            v = {n: {k: f.get(k, 0) for k in advise_ranks.FUNCTION_KEYS} for n, f in v.items()}
        elif key == "late_arrival":
            v = {k: v.get(k, d) for k, d in LATE_DEFAULTS.items()}
        elif key == "peers":
            v = {"sent": v.get("sent", []), "recv": v.get("recv", [])}
        elif key == "callsites":
            v = [{k: s.get(k) for k in advise_ranks.SITE_KEYS} for s in v
                 if s["function"] in FAMILIES]
        out[key] = v
    return out


def _plain(view: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in view:
        v = view[key]
        if key == "functions":
            v = {n: dict(v[n]) for n in v}
        elif key in ("late_arrival", "peers"):
            v = dict(v)
        elif key == "callsites":
            v = [dict(s) for s in v]
        out[key] = v
    return out


# mixed: two Allreduce call sites of different sizes (rule 3 splits by site, with their
# hists); poll: MPI_Testany and peers.recv (rule 10); imbalance: late_arrival (rule 7)
CASES = [("mixed", 2, ("mixed", 100, 65536)), ("poll", 3, ("poll", 100, 3000, 300)),
         ("imbalance", 2, ("imbalance", 24, 50000))]


@pytest.mark.parametrize("name,np_,args", CASES, ids=[c[0] for c in CASES])
def test_views_hold_the_lines_values(build: Path, tmp_path: Path, name: str, np_: int,
                                     args: tuple[Any, ...]) -> None:
    path = profile(name, np_, *args)
    rows = [json.loads(x) for x in path.read_text().splitlines()[1:] if x.strip()]
    prof = advise_ranks.load(path)
    # the reader's C fast path checked and folded the lines (report/fastread.py), and
    # advise's own view was folded from them parsed once more (profile._load_fast)
    assert fastread.last_used
    assert isinstance(prof.ranks, advise_ranks.AdviseRanks) and len(prof.ranks) == np_
    for line, view in zip(rows, prof.ranks):
        assert _plain(view) == _expected(line)
    # what each case is there for is in the views
    if name == "mixed":
        sites = [s for s in prof.ranks[0]["callsites"] if s["function"] == "MPI_Allreduce"]
        assert sorted(s["calls"] for s in sites) == [100, 100]
        assert sorted(max(range(25), key=lambda b: s["hist"][b]) for s in sites) == [4, 17]
    if name == "poll":
        assert sum(p[1] for p in prof.ranks[0]["peers"]["recv"]) == (np_ - 1) * 100
        assert prof.ranks[0]["functions"]["MPI_Testany"]["calls"] == \
            rows[0]["functions"]["MPI_Testany"]["calls"] > 0
    if name == "imbalance":
        assert prof.ranks[1]["late_arrival"]["sampled"] == rows[1]["late_arrival"]["sampled"] > 0


@pytest.mark.parametrize("name,np_,args", CASES, ids=[c[0] for c in CASES])
def test_advice_same_from_views_file_read_once(build: Path, tmp_path: Path, name: str,
                                               np_: int, args: tuple[Any, ...]) -> None:
    """The same result as with the reader's lines (read again from the file on use); the
    views need the file no more once loaded (the reader's lines refuse a changed file)."""
    src = profile(name, np_, *args)
    path = tmp_path / "job.prof"
    path.write_bytes(src.read_bytes())
    model = netmodel.load(str(write_model(tmp_path / "m.json", src)))
    again = engine.advise(reader_load(path), model)
    prof = advise_ranks.load(path)
    path.write_text("replaced\n")
    assert engine.advise(prof, model) == again
    with pytest.raises(Exception, match="changed while it was being read"):
        engine.advise(_stale(src, tmp_path), model)


def _stale(src: Path, tmp_path: Path) -> Any:
    """A profile loaded by the reader alone whose file changed afterwards."""
    path = tmp_path / "stale.prof"
    path.write_bytes(src.read_bytes())
    prof = reader_load(path)
    path.write_text("replaced\n")
    return prof


def test_a_field_not_folded_is_refused(build: Path) -> None:
    prof = advise_ranks.load(profile("imbalance", 2, "imbalance", 24, 50000))
    r = prof.ranks[0]
    with pytest.raises(advise_ranks.NotFolded, match="'timeline'"):
        r.get("timeline")
    with pytest.raises(advise_ranks.NotFolded, match="'hist_send'"):
        r["functions"]["MPI_Allreduce"].get("hist_send")
    with pytest.raises(advise_ranks.NotFolded, match="'threshold_s'"):
        r["late_arrival"]["threshold_s"]
    assert r.get("affinity") == json.loads(
        profile("imbalance", 2, "imbalance", 24, 50000).read_text().splitlines()[1]
    ).get("affinity")
