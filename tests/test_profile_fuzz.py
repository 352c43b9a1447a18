"""Corrupted profiles: every command that reads a profile gives a correct report or one
line with exit status 2, never a traceback (docs/cli.md, bad input).

A real profile of the bundled example (heat2d, 4 ranks) is truncated, byte-flipped,
shuffled and value-mutated (a fixed seed: the same few hundred profiles every run), and
each is fed to `report` (text, json, csv, csv --ranks, --function), `diff` (both ways)
and `html`, in this process (test_cli_support.mpilens_inproc).  A mutation that is still
a valid profile must give the report of what the file now says.
"""

from __future__ import annotations

import copy
import itertools
import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_cli_support import mpilens_inproc, real_profile

SEED = 20261123
NASTY: list[Any] = [-1, 10**23, 2**64, 2**64 - 1, 0, 1.5, float("nan"), float("inf"), -0.5,
                    1e308, "x", "", None, True, [], {}, [1, 2], {"a": 1}, "\ud800", "[/]"]


def _canonical(obj: Any) -> Any:
    """The profile with its run-to-run variation removed (times, job id, paths, pids), so
    that each mutation hits the same byte in every run: counts and structure stay real."""
    if isinstance(obj, dict):
        fixed = {"job_id": "job-1", "created": "2026-01-01T00:00:00Z", "command": "./heat2d",
                 "output": "p.prof", "host": "node1", "pid": 1000}
        return {k: fixed[k] if k in fixed else _canonical(v)
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [_canonical(v) for v in obj]
    if isinstance(obj, float):
        return 0.00125
    return obj


@pytest.fixture(scope="module")
def original(build, tmp_path_factory) -> Path:
    lines = real_profile(4).read_text().splitlines()
    path = tmp_path_factory.mktemp("fuzz") / "canonical.prof"
    path.write_text("".join(json.dumps(_canonical(json.loads(ln)), separators=(",", ":")) + "\n"
                            for ln in lines))
    return path


def _paths(obj: Any, prefix: tuple = ()) -> Iterator[tuple]:
    """Every path to a value inside a JSON document (dict keys and list indices)."""
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


def _set(doc: Any, path: tuple, value: Any, delete: bool = False) -> None:
    for k in path[:-1]:
        doc = doc[k]
    if delete and isinstance(doc, dict):
        del doc[path[-1]]
    else:
        doc[path[-1]] = value


def mutations(text: str) -> Iterator[tuple[str, bytes]]:
    """(label, profile bytes): a few hundred corruptions of one profile, always the same."""
    rng = random.Random(SEED)
    raw = text.encode()
    lines = text.splitlines()
    docs = [json.loads(ln) for ln in lines]
    for _ in range(50):
        cut = rng.randrange(1, len(raw))
        yield f"truncated at byte {cut}", raw[:cut]
    for _ in range(80):
        b = bytearray(raw)
        for _ in range(rng.choice((1, 1, 2, 4))):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        yield "byte-flipped", bytes(b)
    for _ in range(20):
        order = lines[:]
        rng.shuffle(order)
        yield "lines shuffled", ("\n".join(order) + "\n").encode()
    for _ in range(10):
        body = lines[1:]
        i, j = rng.randrange(len(body)), rng.randrange(len(body))
        body[i], body[j] = body[j], body[i]
        yield f"rank lines {i} and {j} swapped", ("\n".join([lines[0]] + body) + "\n").encode()
    for _ in range(170):
        k = 0 if rng.random() < 0.6 else rng.randrange(len(docs))
        doc = copy.deepcopy(docs[k])
        paths = [p for p in _paths(doc) if p]
        path = rng.choice(paths)
        delete = rng.random() < 0.15
        value = rng.choice(NASTY)
        _set(doc, path, value, delete)
        out = [json.dumps(d, separators=(",", ":")) for d in docs]
        out[k] = json.dumps(doc, separators=(",", ":"))
        what = "deleted" if delete else f"= {value!r}"
        yield f"line {k + 1} {'.'.join(map(str, path))} {what}", ("\n".join(out) + "\n").encode()


def deletions(text: str) -> Iterator[tuple[str, bytes]]:
    """Each key of the header, of one header function entry, of one rank line and of one of
    its function entries deleted in turn: absent fields are zero or refused, never a crash."""
    lines = text.splitlines()
    docs = [json.loads(ln) for ln in lines]
    fn = min(docs[0]["functions"])
    rank_fn = min(docs[1]["functions"])
    targets = [(0, ()), (0, ("functions", fn)), (0, ("functions", fn, "rank_time_s")),
               (1, ()), (1, ("functions", rank_fn)), (1, ("peers",))]
    for k, base in targets:
        obj = docs[k]
        for key in base:
            obj = obj[key]
        for key in list(obj):
            doc = copy.deepcopy(docs[k])
            _set(doc, base + (key,), None, delete=True)
            out = [json.dumps(d, separators=(",", ":")) for d in docs]
            out[k] = json.dumps(doc, separators=(",", ":"))
            yield (f"line {k + 1} {'.'.join(base + (key,))} deleted",
                   ("\n".join(out) + "\n").encode())


def _one_line_error(proc: Any) -> bool:
    lines = proc.stderr.splitlines()
    return (proc.returncode == 2 and proc.stdout == "" and len(lines) == 1
            and lines[0].startswith("mpilens: ") and "Traceback" not in proc.stderr)


def _run(label: str, *args: str | Path) -> Any:
    try:
        return mpilens_inproc(*args)
    except Exception as exc:  # a traceback: name the mutation that caused it
        raise AssertionError(f"{label}: mpilens {' '.join(map(str, args))} raised "
                             f"{type(exc).__name__}: {exc}") from exc


def check_commands(label: str, path: Path, original: Path, html: Path, with_html: bool) -> bool:
    """All commands on one (possibly corrupted) profile; True if it loaded."""
    proc = _run(label, "report", path, "--format", "json")
    if proc.returncode != 0:
        assert _one_line_error(proc), f"{label}: {proc.returncode} {proc.stderr!r}"
        # the other readers refuse it the same way
        for args in (("diff", original, path), ("html", path, "-o", html, "--force")):
            again = _run(label, *args)
            assert _one_line_error(again) and again.stderr == proc.stderr, (label, args)
        return False
    # a valid profile: the report says what the file says
    header = json.loads(path.read_text().splitlines()[0])
    data = json.loads(proc.stdout)
    assert {r["function"]: r["calls"] for r in data["functions"]} == \
        {n: f.get("calls", 0) for n, f in header["functions"].items()}, label  # absent: 0
    some = min(header["functions"])
    steps: list[tuple[Any, ...]] = [
        ("report", path, "--ranks", "--function", some), ("report", path, "--format", "csv"),
        ("report", path, "--format", "csv", "--function", some), ("diff", original, path),
        ("diff", path, original, "--format", "json")]
    if data.get("ranks"):
        steps.append(("report", path, "--format", "csv", "--ranks"))
    if with_html:
        steps.append(("html", path, "-o", html, "--force"))
    for args in steps:
        got = _run(label, *args)
        assert got.returncode == 0, (label, args, got.stderr)
    return True


def test_corrupted_profiles_give_a_report_or_one_line(original: Path, tmp_path: Path) -> None:
    text = original.read_text()
    path, html = tmp_path / "m.prof", tmp_path / "m.html"
    outcomes = {"loaded": 0, "refused": 0}
    html_left = 4  # matplotlib is slow: draw the first accepted ones (the boundary test draws more)
    n = 0
    for label, data in itertools.chain(mutations(text), deletions(text)):
        path.write_bytes(data)
        loaded = check_commands(label, path, original, html, with_html=html_left > 0)
        html_left -= loaded
        outcomes["loaded" if loaded else "refused"] += 1
        n += 1
    assert n >= 330 + 60
    # both kinds occur: the test exercises the refusals and the reports of valid changes
    assert outcomes["loaded"] >= 20 and outcomes["refused"] >= 200, outcomes


BOUNDARY: list[tuple[str, Callable[[dict], None], bool]] = [
    # (what, change to the header, still valid)
    ("a histogram bin of 10^23", lambda h: h["functions"]["MPI_Isend"]["hist_send"]
     .__setitem__(9, 10**23), False),
    ("a histogram bin of 2^64", lambda h: h["functions"]["MPI_Isend"]["hist_send"]
     .__setitem__(9, 2**64), False),
    ("a histogram bin of 2^64-1", lambda h: h["functions"]["MPI_Isend"]["hist_send"]
     .__setitem__(9, 2**64 - 1), True),
    ("2^64-1 bytes and calls", lambda h: h["functions"]["MPI_Isend"].update(
        bytes_sent=2**64 - 1, calls=2**64 - 1), True),
    ("a time of 1e308 s", lambda h: h["functions"]["MPI_Isend"].update(time_s=1e308), True),
    ("a negative time", lambda h: h["functions"]["MPI_Isend"].update(time_s=-1e-6), False),
    ("a NaN wall time", lambda h: h["wall_s"].update(mean=float("nan")), False),
    ("an infinite time", lambda h: h["mpi_s"].update(max=float("inf")), False),
    ("a fractional count", lambda h: h["functions"]["MPI_Isend"].update(calls=2.5), False),
    ("a slowest rank out of range", lambda h: h["functions"]["MPI_Isend"]["rank_time_s"]
     .update(max_rank=4), False),
    ("markup in the command", lambda h: h.update(command="./app [/bold] [x]"), True),
    ("a recorded 2 x 2 grid", lambda h: h.update(topologies=[
        {"kind": "cart", "dims": [2, 2], "periods": [True, False], "ranks": [3, 2, 1, 0]}]), True),
    ("a grid of the wrong size", lambda h: h.update(topologies=[
        {"kind": "cart", "dims": [2, 3], "periods": [True, False], "ranks": [0, 1, 2, 3]}]), False),
    ("a topology rank out of the job", lambda h: h.update(topologies=[
        {"kind": "dist_graph", "ranks": [0, 1, 2, 7], "edges": [[1], [0], [3], [2]]}]), False),
]


@pytest.mark.parametrize("what,change,valid", BOUNDARY, ids=[b[0] for b in BOUNDARY])
def test_boundary_values(original: Path, tmp_path: Path, what: str,
                         change: Callable[[dict], None], valid: bool) -> None:
    lines = original.read_text().splitlines()
    header = json.loads(lines[0])
    change(header)
    path = tmp_path / "b.prof"
    path.write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n")
    loaded = check_commands(what, path, original, tmp_path / "b.html", with_html=True)
    assert loaded == valid
    if not valid:
        err = mpilens_inproc("report", path).stderr
        assert err.startswith(f"mpilens: {path}: corrupted profile: header ")
