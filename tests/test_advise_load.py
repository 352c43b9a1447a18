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
    # the reader's C fast path checked and folded the lines (report/fastread.py),
    # advise's own view included (test_the_library_folds_advises_view)
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


def _folded_by(path: Path, fast: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, bool]:
    """advise's view of path, folded by the C library (fast) or by ranks._Fold from the
    Python reader's lines; and whether the fast path read the file."""
    monkeypatch.setenv("MPILENS_FASTREAD", "on" if fast else "off")
    if fast:
        monkeypatch.delenv("MPILENS_FASTREAD")
    fastread._lib.cache_clear()
    try:
        prof = advise_ranks.load(path)
    finally:
        fastread._lib.cache_clear()
    return prof.ranks.folded, fastread.last_used


def _edited(src: Path, dst: Path) -> Path:
    """src with the values advise reads varied across ranks: affinities, a late_arrival
    that is null / partial / complete, cpus_online absent on rank 1, a function with
    received bytes only."""
    header, *rows = [json.loads(x) for x in src.read_text().splitlines() if x.strip()]
    for k, r in enumerate(rows):
        r["affinity"] = f"0-{k % 2}"
        r["late_arrival"] = [None, {"sampled": 7, "why": "w"},
                             {"sampled": 3, "every": 4, "clear": 1, "why": "",
                              "last_clear": 2, "gap_s": 0.25}][k % 3]
        r["functions"]["MPI_Bcast"] = {"calls": 1, "time_s": 1e-6, "bytes_recv": 8 + k}
        if k == 1:
            r.pop("cpus_online", None)
    dst.write_text("\n".join(json.dumps(x) for x in [header, *rows]) + "\n")
    return dst


@pytest.mark.parametrize("name,np_,args", CASES, ids=[c[0] for c in CASES])
def test_the_library_folds_advises_view(build: Path, tmp_path: Path, name: str, np_: int,
                                        args: tuple[Any, ...],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The C library folds advise's view in its one pass (runtime/reader/fastread.c): no
    line is parsed by Python, and every array equals ranks._Fold's, bit for bit; a value
    _Fold would read differently (cpus_online 4.0: int() takes it) leaves the file to
    the Python reader."""
    from fastread_check import differences

    src = profile(name, np_, *args)
    for path in (src, _edited(src, tmp_path / "edited.prof")):
        py, used = _folded_by(path, False, monkeypatch)
        assert not used
        with monkeypatch.context() as m:
            m.setattr(advise_ranks._Fold, "add", lambda *a: pytest.fail("a line parsed again"))
            fast, used = _folded_by(path, True, monkeypatch)
        assert used
        assert differences(vars(fast), vars(py)) == []
    # first seen first: rank 0's affinity, rank 1's affinity and why, rank 2's why
    assert fast.strings == ["0-0", "0-1", "w", ""][:2 + min(2, np_ - 1)]
    assert fast.la == bytes([0, 1, 1][:np_])
    assert fast.fbytes["MPI_Bcast"][2].tolist() == [8 + k for k in range(np_)]
    assert fast.cpus[1] == -1 and (np_ < 3 or fast.la_int[2].tolist() == [3, 4, 1, 2])
    float_cpus = tmp_path / "float.prof"
    float_cpus.write_text(src.read_text().replace('"cpus_online":', '"cpus_online":4.0,"x":'))
    got, used = _folded_by(float_cpus, True, monkeypatch)
    assert not used and got.cpus.tolist() == [4] * np_
