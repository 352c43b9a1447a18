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
import os
import random
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import launcher, mpi_env
from mpilens.report import limits
from test_cli_support import cli_env, mpilens_inproc, real_profile

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


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def strict_json(text: str, label: str) -> Any:
    """text parsed as strict JSON: NaN, Infinity and -Infinity are refused."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        raise AssertionError(f"{label}: the JSON output is not strict JSON: {exc}") from None


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
    data = strict_json(proc.stdout, label)
    assert {r["function"]: r["calls"] for r in data["functions"]} == \
        {n: f.get("calls", 0) for n, f in header["functions"].items()}, label  # absent: 0
    some = min(header["functions"])
    steps: list[tuple[Any, ...]] = [
        ("report", path, "--ranks", "--function", some), ("report", path, "--format", "csv"),
        ("report", path, "--format", "csv", "--function", some), ("diff", original, path),
        ("diff", path, original, "--format", "json")]
    strict_json(_run(label, "diff", original, path, "--format", "json").stdout, label)
    if data.get("ranks"):
        steps.append(("report", path, "--format", "csv", "--ranks"))
    if with_html:
        steps.append(("html", path, "-o", html, "--force"))
    for args in steps:
        got = _run(label, *args)
        assert got.returncode == 0, (label, args, got.stderr)
    return True


@pytest.mark.reader_only
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
    ("warmup_calls -5", lambda h: h["timing"].update(warmup_calls=-5), False),
    ("warmup_calls 2^64", lambda h: h["timing"].update(warmup_calls=2**64), False),
    ("warmup_calls 2^31-1", lambda h: h["timing"].update(warmup_calls=2**31 - 1), True),
    ("sample_period 0", lambda h: h["timing"].update(sample_period=0), False),
    ("an unknown timing mode", lambda h: h["timing"].update(mode="never"), False),
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


# ---- hostile files: never read past the limits (report/limits.py) ----

READERS: list[tuple[str, ...]] = [("report",), ("report", "--format", "json"),
                                  ("report", "--format", "csv"), ("html", "-o", "{html}"),
                                  ("advise",), ("diff", "{original}")]


def _refused_everywhere(path: Path | str, original: Path, tmp_path: Path, needle: str) -> None:
    for args in READERS:
        argv = [a.format(html=tmp_path / "h.html", original=original) for a in args]
        if argv[0] == "diff":
            argv = ["diff", str(original), str(path)]
        else:
            argv = [argv[0], str(path), *argv[1:]]
        proc = _run(f"{path} {args}", *argv)
        assert _one_line_error(proc), (argv, proc.returncode, proc.stderr)
        assert needle in proc.stderr, (argv, proc.stderr)


def test_devices_fifos_and_directories_refused_at_once(original: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no writer: opening it for reading the usual way would wait forever
    _refused_everywhere("/dev/zero", original, tmp_path,
                        "/dev/zero: is a device, not a regular file")
    _refused_everywhere(fifo, original, tmp_path, f"{fifo}: is a FIFO, not a regular file")
    long = tmp_path / ("a" * 5000)
    _refused_everywhere(long, original, tmp_path, f"{long}: cannot read: File name too long")
    # a directory is read as a partial profile's directory by report, refused by the others
    _refused_everywhere(tmp_path, original, tmp_path, f"mpilens: {tmp_path}: ")


def test_deep_nesting_refused_without_recursion(original: Path, tmp_path: Path) -> None:
    lines = original.read_text().splitlines()
    header = json.loads(lines[0])
    deep = tmp_path / "deep.prof"
    cases = {
        "a deep value in the header": json.dumps(header)[:-1] + ',"x":' + "[" * 5000 + "]" * 5000
        + "}",
        "a deep rank line": "[" * 5000 + "]" * 5000,
        "an unclosed deep line": "{" + '"a":[' * 5000,
    }
    for what, line in cases.items():
        text = line + "\n" + "\n".join(lines[1:]) + "\n" if what.endswith("header") else \
            "\n".join(lines[:2] + [line] + lines[3:]) + "\n"
        deep.write_text(text)
        _refused_everywhere(deep, original, tmp_path,
                            f"corrupted profile: JSON nested deeper than {limits.MAX_DEPTH} levels")
    # the limit itself: 64 levels pass the reader's check (the profile is then refused for
    # what the value is, or read), 65 do not
    for depth, ok in ((limits.MAX_DEPTH, True), (limits.MAX_DEPTH + 1, False)):
        deep.write_text(json.dumps(header)[:-1] + ',"x":' + "[" * (depth - 1) + "]" * (depth - 1)
                        + "}\n" + "\n".join(lines[1:]) + "\n")
        proc = _run("depth", "report", deep, "--format", "json")
        assert (proc.returncode == 0) == ok, proc.stderr


def test_long_lines_refused(original: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                            ) -> None:
    lines = original.read_text().splitlines()
    longest = max(len(ln.encode()) for ln in lines)
    monkeypatch.setattr(limits, "MAX_LINE_BYTES", longest)
    assert _run("at the limit", "report", original, "--format", "json").returncode == 0
    monkeypatch.setattr(limits, "MAX_LINE_BYTES", longest - 1)
    n = 1 + max(range(len(lines)), key=lambda i: len(lines[i].encode()))
    _refused_everywhere(original, original, tmp_path,
                        f"corrupted profile: line {n} is longer than")


def test_control_characters_escaped_in_every_output(original: Path, tmp_path: Path) -> None:
    """Escape sequences and newlines in names reach no output raw: the terminal report,
    CSV rows and the HTML page show them as \\u001b, \\n ...; the JSON output holds the
    same visible text."""
    lines = original.read_text().splitlines()
    header = json.loads(lines[0])
    evil = "x\x1b[2J\x1b]0;owned\x07\nrow\r\x7f\x85"
    header["command"] = "./app " + evil
    ranks = [json.loads(ln) for ln in lines[1:]]
    for r in ranks:
        for c in r.get("comms", []):
            if c.get("kind") == "world":
                c["name"] = "W" + evil
        r["host"] = "node1" + evil
    p = tmp_path / "evil.prof"
    p.write_text("\n".join(json.dumps(d) for d in [header, *ranks]) + "\n")
    shown = "x\\u001b[2J\\u001b]0;owned\\u0007\\nrow\\r\\u007f\\u0085"

    def clean(text: str, what: str) -> None:
        bad = [c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f]
        assert not bad, (what, bad)

    text = _run("text", "report", p, "--ranks").stdout
    clean(text, "text")
    assert text.count("\\u001b") >= 2 and "owned" in text  # shown, escaped
    data = strict_json(_run("json", "report", p, "--format", "json").stdout, "json")
    assert data["summary"]["command"] == "./app " + shown
    for args in (("--format", "csv"), ("--format", "csv", "--ranks")):
        out = _run("csv", "report", p, *args).stdout
        clean(out.replace("\n", ""), "csv")
        assert len(out.splitlines()) == len(list(csv_rows(out))), "a name broke a CSV row"
    html = tmp_path / "evil.html"
    assert _run("html", "html", p, "-o", html, "--force").returncode == 0
    clean(html.read_text().replace("\n", ""), "html")
    assert "\\u001b" in html.read_text()


def csv_rows(text: str) -> list[list[str]]:
    import csv
    import io
    return list(csv.reader(io.StringIO(text)))


# ---- random fuzzing of complete and partial profiles: a fixed number of seeded cases ----

# corrupted profiles each random fuzz test reads (CI): a fixed count from a fixed seed, so
# a loaded machine covers as much as an idle one (it only takes longer).
# MPILENS_FUZZ_CASES runs a longer sweep by hand (and MPILENS_FUZZ_SEED another seed):
# MPILENS_FUZZ_CASES=5000 pytest -s -k random_fuzz.  The reader under test is the same for
# every MPI: the long sweep runs under Open MPI, a shorter one on the other MPIs' profiles
# (CI runs the suite once per MPI).
FUZZ_CASES = int(os.environ.get(
    "MPILENS_FUZZ_CASES", "150" if os.environ.get("MPILENS_MPI", "openmpi") == "openmpi" else "50"))
FUZZ_SEED = int(os.environ.get("MPILENS_FUZZ_SEED", str(SEED)))
HOSTILE: list[bytes] = [b"[" * 3000, b"]" * 50, b'"\\u001b[31m"', b"NaN", b"Infinity",
                        b"-Infinity", b"1e400", b"-0", b"18446744073709551616", b'"\\ud800"',
                        b"\x00", b"\xff\xfe", b"\n", b"\r\n", b"{}", b"[]", b"null", b"true",
                        b'"' + b"a" * 5000 + b'"']


def random_value_mutation(rng: random.Random, raw: bytes) -> bytes:
    """raw with a few values anywhere in its JSON lines replaced by NASTY ones (or deleted):
    still JSON, so the checks and the reports behind the parser get the bad values."""
    lines = raw.decode().splitlines()
    for _ in range(rng.choice((1, 1, 2, 4))):
        k = 0 if rng.random() < 0.5 else rng.randrange(len(lines))
        doc = json.loads(lines[k])
        paths = [p for p in _paths(doc) if p]
        if paths:
            _set(doc, rng.choice(paths), rng.choice(NASTY), rng.random() < 0.15)
            lines[k] = json.dumps(doc, separators=(",", ":"))
    return ("\n".join(lines) + "\n").encode()


def random_mutation(rng: random.Random, raw: bytes) -> bytes:
    """One random corruption of raw (a few edits of a few kinds)."""
    if rng.random() < 0.5:
        return random_value_mutation(rng, raw)
    b = bytearray(raw)
    for _ in range(rng.choice((1, 1, 2, 3, 5))):
        kind = rng.randrange(6)
        i = rng.randrange(len(b) + 1)
        if kind == 0 and b:  # flip bits
            j = min(i, len(b) - 1)
            b[j] ^= 1 << rng.randrange(8)
        elif kind == 1:  # insert a hostile fragment
            b[i:i] = rng.choice(HOSTILE)
        elif kind == 2:  # delete a span
            del b[i:i + rng.randrange(1, 64)]
        elif kind == 3:  # duplicate a span
            j = rng.randrange(len(b) + 1)
            b[i:i] = b[j:j + rng.randrange(1, 256)]
        elif kind == 4:  # truncate
            del b[i:]
        else:  # replace a number by a hostile number
            m = list(re.finditer(rb"-?\d+(\.\d+)?(e-?\d+)?", bytes(b)))
            if m:
                t = rng.choice(m)
                b[t.start():t.end()] = rng.choice((b"1e400", b"-1", b"NaN", b"2e-400", b"1.5",
                                                   b"99999999999999999999999", b"-Infinity"))
    return bytes(b)


def _fuzz_loop(label: str, seed: int, raw: bytes, write: Callable[[bytes], None],
               commands: list[tuple[Any, ...]]) -> dict[str, int]:
    rng = random.Random(seed)
    counts = {"files": 0, "loaded": 0, "refused": 0, "tracebacks": 0}
    for _ in range(FUZZ_CASES):
        write(random_mutation(rng, raw))
        counts["files"] += 1
        for args in commands:  # the first refusing: the others would refuse it the same way
            proc = _run(f"{label} #{counts['files']} (seed {seed})", *args)  # a traceback fails
            if proc.returncode != 0:
                assert _one_line_error(proc), (label, counts["files"], args, proc.stderr)
                counts["refused"] += 1  # (a partial directory reads on without a bad rank file)
                break
            if "json" in args:
                strict_json(proc.stdout, f"{label} #{counts['files']}")
            counts["loaded"] += args is commands[0]
    print(f"\nfuzz {label}: {counts}")
    return counts


@pytest.mark.reader_only
def test_random_fuzz_complete_profiles(original: Path, tmp_path: Path) -> None:
    path = tmp_path / "r.prof"  # (html is drawn by the boundary tests: too slow to fuzz)
    counts = _fuzz_loop("complete", FUZZ_SEED, original.read_bytes(), path.write_bytes,
                        [("report", path, "--format", "json"), ("report", path),
                         ("report", path, "--format", "csv", "--ranks"),
                         ("diff", original, path, "--format", "json")])
    assert counts["files"] == FUZZ_CASES and counts["refused"] > 0 and counts["tracebacks"] == 0


@pytest.fixture(scope="module")
def partial_dir(build, tmp_path_factory) -> Path:
    """A real partial profile: tests/progs/sig_wait on 2 ranks dumps at MPILENS_DUMP_AT,
    then is killed (it never reaches MPI_Finalize)."""
    tmp = tmp_path_factory.mktemp("partial")
    out = tmp / "job.prof"
    env = mpi_env({"MPILENS_OUTPUT": str(out), "MPILENS_DUMP_AT": "0.2"})
    proc = subprocess.Popen(launcher(2) + [str(build / "bin" / "mpilens-exec"),
                                           str(build / "tests" / "sig_wait"), str(tmp)],
                            env=env, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    d = Path(f"{out}.partial")
    try:
        end = time.monotonic() + 60
        while time.monotonic() < end and not (len(list(d.glob("rank-[0-9]"))) == 2
                                              and len(list(tmp.glob("rank-*.pid"))) == 2):
            time.sleep(0.05)
        time.sleep(0.2)
    finally:
        for pidfile in tmp.glob("rank-*.pid"):
            try:
                os.kill(int(pidfile.read_text()), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        proc.kill()
        proc.communicate()
    assert sorted(p.name for p in d.glob("rank-[0-9]")) == ["rank-0", "rank-1"]
    assert _run("partial", "report", d, "--format", "json").returncode == 0
    return d


@pytest.mark.reader_only
def test_random_fuzz_partial_profiles(partial_dir: Path, tmp_path: Path) -> None:
    d = tmp_path / "job.prof.partial"
    d.mkdir()
    (d / "rank-1").write_bytes((partial_dir / "rank-1").read_bytes())
    counts = _fuzz_loop("partial", FUZZ_SEED + 1, (partial_dir / "rank-0").read_bytes(),
                        (d / "rank-0").write_bytes,
                        [("report", d, "--format", "json"), ("report", d),
                         ("report", d / "rank-0", "--format", "json")])
    assert counts["files"] == FUZZ_CASES and counts["refused"] > 0 and counts["tracebacks"] == 0


def test_network_model_file_within_the_same_limits(original: Path, tmp_path: Path) -> None:
    """advise --model reads its JSON file through the same limits (report/limits.py)."""
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 5000 + "]" * 5000)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for model, needle in (("/dev/zero", "/dev/zero: is a device, not a regular file"),
                          (fifo, f"{fifo}: is a FIFO, not a regular file"),
                          (deep, f"{deep}: corrupted network model: JSON nested deeper than")):
        proc = _run("model", "advise", original, "--model", model)
        assert _one_line_error(proc) and needle in proc.stderr, proc.stderr


def test_huge_nranks_claim_under_a_memory_limit(original: Path, tmp_path: Path) -> None:
    """A header claiming nranks = 10^8 over 4 rank lines, read under a 1.5 GB address
    space limit: one line saying the file cannot hold that many rank lines, before any
    per-rank array is made (was numpy's ArrayMemoryError traceback), plain and gzip."""
    import gzip
    import resource
    import subprocess
    import sys

    lines = original.read_text().splitlines()
    header = json.loads(lines[0])
    header["nranks"] = 10**8
    text = "\n".join([json.dumps(header)] + lines[1:]) + "\n"
    plain, packed = tmp_path / "big.prof", tmp_path / "big.prof.gz"
    plain.write_text(text)
    packed.write_bytes(gzip.compress(text.encode()))

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1500 << 20, 1500 << 20))

    for path in (plain, packed):
        for cmd in (["report"], ["report", "--format", "json"], ["html", "-o",
                                                                  str(tmp_path / "b.html")]):
            proc = subprocess.run([sys.executable, "-m", "mpilens.cli", cmd[0], str(path),
                                   *cmd[1:]], preexec_fn=limit, capture_output=True, text=True,
                                  env=cli_env(), timeout=120, check=False)
            assert _one_line_error(proc), (cmd, proc.returncode, proc.stderr[-500:])
            assert proc.stderr == (f"mpilens: {path}: truncated profile: the header says "
                                   f"100000000 ranks, but its {path.stat().st_size} bytes "
                                   f"cannot hold 100000000 rank lines\n")
