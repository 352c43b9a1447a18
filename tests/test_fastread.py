"""The reader's fast path (runtime/reader/fastread.c through report/fastread.py) reads
every profile exactly as the Python reader does (docs/scale.md, The fast path).

Each profile is loaded twice, by the fast path and with MPILENS_FASTREAD=off by the
Python reader (the reference): the columns (RankTable) and the load-time views
(call sites, communicators, regions, time line) must be equal bit for bit, or both
must refuse the file with the same one line.  Profiles: a real heat2d run under this
session's MPI (Open MPI, MPICH), compressed one gzip member per line, synthesized to
300 ranks by bench/reader/synth.py (plain and compressed), and a fixed sample of the
fuzz corpus of test_profile_fuzz.py.
"""

from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from fastread_check import compare
from mpilens.report import fastread, profile
from test_cli_support import real_profile
from test_profile_fuzz import _canonical, deletions, mutations


@pytest.fixture(scope="module")
def real(build) -> Path:
    return real_profile(4)


def _gzip_lines(src: Path, dst: Path) -> Path:
    """One gzip member per line, as the runtime writes a compressed profile with
    MPILENS_COMPRESS_GROUP=1 (its default, blocks of 16 lines per member, is read by
    the same gzip stream: tests/test_scale.py)."""
    dst.write_bytes(b"".join(gzip.compress(ln) for ln in src.read_bytes().splitlines(True)))
    return dst


def _same_and_fast(path: Path) -> None:
    diffs, used = compare(path)
    assert diffs == [], (path, diffs[:5])
    assert used, f"{path}: the fast path refused it"


def test_library_is_built_and_loaded(build) -> None:
    assert fastread.available(), "lib/libmpilens_read.so not built or not loadable"


def test_real_profile_reads_the_same(real: Path, tmp_path: Path) -> None:
    _same_and_fast(real)
    _same_and_fast(_gzip_lines(real, tmp_path / "real.prof.gz"))
    prof = profile.load(real)
    assert fastread.last_used and prof.columns().n == 4
    assert prof.columns().sums["MPI_Allreduce"][0] == sum(
        json.loads(ln)["functions"]["MPI_Allreduce"]["calls"]
        for ln in real.read_text().splitlines()[1:])


def test_synthesized_profile_reads_the_same(real: Path, tmp_path: Path) -> None:
    """300 ranks: two batches of time lines (256 a batch), one rank 3x slower."""
    out = tmp_path / "s.prof"
    subprocess.run([sys.executable, str(REPO / "bench/reader/synth.py"), str(real), "300",
                    str(out)], check=True, capture_output=True)
    _same_and_fast(out)
    _same_and_fast(_gzip_lines(out, tmp_path / "s.prof.gz"))


def test_fuzz_corpus_reads_the_same(real: Path, tmp_path: Path) -> None:
    text = "".join(json.dumps(_canonical(json.loads(ln)), separators=(",", ":")) + "\n"
                   for ln in real.read_text().splitlines())
    cases = list(mutations(text))[::7] + list(deletions(text))[::3]  # a fixed sample
    path = tmp_path / "f.prof"
    fast = 0
    for label, data in cases:
        path.write_bytes(data)
        diffs, used = compare(path)
        assert diffs == [], (label, diffs[:5])
        fast += used
    assert fast >= 10, fast  # valid mutations do take the fast path


def test_regions_read_the_same(real: Path, tmp_path: Path) -> None:
    """Regions (none in heat2d's profile): added to the real lines, summed exactly."""
    docs = [json.loads(ln) for ln in real.read_text().splitlines()]
    for k, d in enumerate(docs[1:]):
        fns = {"MPI_Allreduce": {"calls": k + 1, "time_s": 0.25, "bytes_sent": 8 * (k + 1)}}
        d["regions"] = [{"name": "solve", "parent": None, "entries": 2, "wall_s": 0.5,
                         "functions": fns},
                        {"name": "halo", "parent": "solve", "entries": 1, "wall_s": 0.125,
                         "functions": {}}]
        d["regions_dropped"] = {"labels": 1, "calls": 0, "unmatched": 2}
    path = tmp_path / "regions.prof"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    _same_and_fast(path)
    got = profile.load(path).folds["regions"]
    solve = got["regions"]["solve"]
    assert (solve["ranks"], solve["entries"], solve["wall_s"]) == (4, 8, 2.0)
    assert solve["functions"]["MPI_Allreduce"] == {"calls": 10, "time_s": 1.0,
                                                   "bytes_sent": 80, "bytes_recv": 0}
    assert got["regions"]["halo"]["parent"] == "solve"
    assert got["dropped"] == {"labels": 4, "calls": 0, "unmatched": 8}


def test_what_the_library_leaves_to_python(real: Path, tmp_path: Path) -> None:
    """An escaped string: read by the Python reader, the same result; MPILENS_FASTREAD=off
    or a library that does not load: the Python reader."""
    docs = [json.loads(ln) for ln in real.read_text().splitlines()]
    path = tmp_path / "escaped.prof"
    docs[3]["host"] = "n\\u0030de"  # an escape: decoded by json
    path.write_text("".join(json.dumps(d).replace("\\\\u0030", "\\u0030") + "\n" for d in docs))
    diffs, used = compare(path)
    assert diffs == [] and not used
    assert "n0de" in profile.load(path).columns().hosts
    for setting in ("off", str(tmp_path / "missing.so")):
        fastread._lib.cache_clear()
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("MPILENS_FASTREAD", setting)
            assert profile.load(real).columns().n == 4 and not fastread.last_used
        fastread._lib.cache_clear()


def test_numbers_read_as_python_reads_them(real: Path, tmp_path: Path) -> None:
    """-0 (an integer: 0.0, not -0.0), -0.0, an integer time beyond 2^53, exponents, a
    count of 2^63; a sum beyond 64 bits and a count beyond 2^64-1 left to Python."""
    docs = [json.loads(ln) for ln in real.read_text().splitlines()]
    fns = docs[1]["functions"]
    name = min(fns)
    text = [json.dumps(d, separators=(",", ":")) for d in docs]
    entry = json.dumps(fns[name], separators=(",", ":"))
    edited = dict(fns[name], time_s=0.5, calls=7)
    for time_s, calls, fast in (("-0", "7", True), ("-0.0", "7", True),
                                ("12345678901234567", "7", True), ("2.5E-3", "7", True),
                                ("0.5", str(2**63), True),
                                # a sum over ranks beyond 64 bits, a count beyond: Python
                                ("0.5", str(2**64 - 1), False), ("0.5", str(2**64), False)):
        new = json.dumps(edited, separators=(",", ":"))
        new = new.replace('"time_s":0.5', f'"time_s":{time_s}').replace('"calls":7',
                                                                        f'"calls":{calls}')
        path = tmp_path / "n.prof"
        path.write_text("\n".join([text[0], text[1].replace(entry, new), *text[2:]]) + "\n")
        diffs, used = compare(path)
        assert diffs == [] and used == fast, (time_s, calls, diffs[:3])
        if fast:
            t = profile.load(path).columns()
            got = t.fn_time[t.functions.index(name)][0]
            assert got.hex() == float(int(time_s) if time_s.lstrip("-").isdigit()
                                      else float(time_s)).hex()


def _decimals(rng: random.Random) -> str:
    """A time >= 0 written one of the ways a writer may: shortest repr, 1-17 significant
    digits, exponents, mantissas either side of 2^53, powers of ten beyond 10^22,
    trailing zeros, subnormals (the library's own conversion and strtod's)."""
    x = rng.random() * 10.0 ** rng.randint(-12, 4)
    form = rng.randrange(9)
    if form == 0:
        return repr(x)
    if form == 1:
        return f"{x:.{rng.randint(1, 17)}g}"
    if form == 2:
        return f"{x:.{rng.randint(0, 17)}e}".replace("e", rng.choice("eE"))
    if form == 3:  # 2^53 = 9007199254740992
        return f"{rng.randrange(2**53 - 4, 2**53 + 4)}e-{rng.randint(1, 23)}"
    if form == 4:
        return f"0.{'0' * rng.randint(0, 26)}{rng.randrange(1, 10**rng.randint(1, 16))}"
    if form == 5:
        return f"{rng.randrange(1, 10**rng.randint(1, 15))}e{rng.randint(-30, 30):+d}"
    if form == 6:
        return f"{rng.randrange(10**6)}.{rng.randrange(10**4):04d}{'0' * rng.randint(0, 20)}"
    if form == 7:
        return f"{rng.randrange(1, 10**5)}.{rng.randrange(10**12):012d}e-{rng.randint(0, 330)}"
    return f"{rng.randrange(1, 10**rng.randint(1, 17))}.{rng.randrange(10**5)}"


def test_decimals_convert_as_python_does(real: Path, tmp_path: Path) -> None:
    """Every function's time_s of 300 ranks written as _decimals does: each rank's time is
    float(text) bit for bit, by both readers, and the fast path reads the file."""
    src = tmp_path / "s.prof"
    subprocess.run([sys.executable, str(REPO / "bench/reader/synth.py"), str(real), "300",
                    str(src)], check=True, capture_output=True)
    rng = random.Random(11)
    lines = src.read_text().splitlines()
    out, want = [lines[0]], []
    for ln in lines[1:]:
        d = json.loads(ln)
        texts = {}
        for k, name in enumerate(sorted(d["functions"])):
            d["functions"][name]["time_s"] = 7770000.0 + k  # a placeholder, replaced below
            texts[name] = _decimals(rng)
        ln = json.dumps(d, separators=(",", ":"))
        for k, name in enumerate(sorted(d["functions"])):
            assert ln.count(f":{7770000.0 + k!r}") == 1
            ln = ln.replace(f":{7770000.0 + k!r}", ":" + texts[name])
        out.append(ln)
        want.append(texts)
    path = tmp_path / "decimals.prof"
    path.write_text("\n".join(out) + "\n")
    _same_and_fast(path)
    t = profile.load(path).columns()
    got = {(name, r): t.fn_time[t.functions.index(name)][r].hex()
           for r, texts in enumerate(want) for name in texts}
    assert got == {(name, r): float(text).hex()
                   for r, texts in enumerate(want) for name, text in texts.items()}


def test_unknown_keys_and_a_line_longer_than_a_read(real: Path, tmp_path: Path) -> None:
    """Keys the reader does not know are skipped (as Python ignores them), also in a line
    longer than the library's read chunk (fastread.CHUNK)."""
    docs = [json.loads(ln) for ln in real.read_text().splitlines()]
    docs[1]["future"] = {"a": [1, 2.5, None, True, "x" * 1000] * (3 * fastread.CHUNK // 1000)}
    docs[2]["functions"][min(docs[2]["functions"])]["future"] = [[[]], {}]
    path = tmp_path / "long.prof"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    assert path.stat().st_size > 2 * fastread.CHUNK
    _same_and_fast(path)


def test_communicator_chains_read_the_same(real: Path, tmp_path: Path) -> None:
    """Communicator records with parents (chains, cycles, repeated ids: the last record of
    an id is its parent), sizes, names and inter flags, grouped by description."""
    rng = random.Random(7)
    docs = [json.loads(ln) for ln in real.read_text().splitlines()]
    for d in docs[1:]:
        recs = []
        for _ in range(rng.randrange(1, 60)):
            r = {"id": rng.randrange(-1, 40), "kind": rng.choice(["dup", "split", "other"]),
                 "calls": rng.randrange(100), "time_s": rng.random(),
                 "bytes_sent": rng.randrange(1000), "bytes_recv": rng.randrange(1000)}
            if rng.random() < 0.7:
                r["parent"] = rng.choice([None, rng.randrange(0, 40)])
            if rng.random() < 0.6:
                r["size"] = rng.randrange(1, 9)
            if rng.random() < 0.5:
                r["inter"] = rng.random() < 0.3
            if rng.random() < 0.4:
                r["name"] = rng.choice(["half", "row"])
            recs.append(r)
        d["comms"] = recs
    path = tmp_path / "comms.prof"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    _same_and_fast(path)
    assert len(profile.load(path).folds["comms"]["comms"]) > 20
