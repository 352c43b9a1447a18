"""Read and validate an mpilens profile (docs/profile-format.md, JSON Lines).

`load(path)` returns a `Profile` or raises `UserError` with one line that says
what is wrong with the file: missing, not a profile, truncated, corrupted, or
written by a newer mpilens.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..errors import UserError
from . import fastjson, fastread, limits, rawfile
from .lazyrows import LazyRows
from .rankdata import Folder, RankTable, fold
from .schema import (
    ALLTOALL_KEYS,
    COLL_CHOICE_KEYS,
    FORMAT,
    HEADER_KEYS,
    HIST_LABELS,
    NBINS,
    RANK_KEYS,
    SECTION_VERSIONS,
    STATS_KEYS,
    VERSION,
)
from .validate import _Checker, rank_line_ok

# The fields every reader relies on (required in schema/profile.json); the rest is optional.
_HEADER_KEYS = HEADER_KEYS
_RANK_KEYS = RANK_KEYS
_STAT_KEYS = tuple(STATS_KEYS)
# adaptive Alltoall records (docs/alltoall.md, Profile); "algorithm" may be null
_A2A_KEYS = ALLTOALL_KEYS


@dataclass
class Profile:
    """A validated profile: the header and (when recorded) one dict per rank."""

    path: Path
    header: dict[str, Any]
    ranks: Sequence[dict[str, Any]] = field(default_factory=list)
    partial: dict[str, Any] | None = None  # a flight recorder's partial profile (partial.py)
    table: RankTable | None = None  # the rank lines as columns (rankdata.py)
    folds: dict[str, Any] = field(default_factory=dict)  # load-time views (FOLDS)

    def columns(self) -> RankTable:
        """The rank lines as columns: folded by load, or now (a profile built in memory)."""
        if self.table is None or self.table.n != len(self.ranks):
            self.table = fold(self.ranks, len(self.ranks), list(self.functions))
        return self.table

    def folded(self, name: str) -> Any:
        """The view `name` of FOLDS summed over the rank lines (at load time, or now)."""
        if name not in self.folds:
            acc = _fold_makers()[name](self.header)
            for r in self.ranks:
                acc.add(r)
            self.folds[name] = acc.result()
        return self.folds[name]

    @property
    def nranks(self) -> int:
        return int(self.header["nranks"])

    @property
    def functions(self) -> dict[str, dict[str, Any]]:
        return self.header["functions"]

    @property
    def has_ranks(self) -> bool:
        return bool(self.ranks)

    def hist_labels(self) -> list[str]:
        labels = self.header.get("hist_labels")
        if isinstance(labels, list) and len(labels) == NBINS:
            return [str(x) for x in labels]
        return default_hist_labels()


class Accumulator(Protocol):
    def add(self, rank_line: dict[str, Any]) -> None: ...
    def result(self) -> Any: ...


# Views summed over the rank lines while they are read (name -> maker(header)):
# registered by the modules that own them (callsites, regions, timeline, comms).
FOLDS: dict[str, Callable[[dict[str, Any]], Accumulator]] = {}


def register_fold(name: str, make: Callable[[dict[str, Any]], Accumulator]) -> None:
    FOLDS[name] = make


def _fold_makers() -> dict[str, Callable[[dict[str, Any]], Accumulator]]:
    from . import callsites, comms, regions, timeline  # noqa: F401  (they register)
    return FOLDS


def default_hist_labels() -> list[str]:
    """Labels of the 25 message-size classes (schema/profile.json): 0, 1, 2-3, ..., >=8Mi."""
    return list(HIST_LABELS)


def _bad(path: Path, what: str) -> UserError:
    return UserError(f"{path}: {what}")


def _check_fields(path: Path, where: str, obj: dict[str, Any],
                  keys: dict[str, type | tuple[type, ...]]) -> None:
    for key, typ in keys.items():
        if key not in obj:
            raise _bad(path, f"corrupted profile: {where} lacks '{key}'")
        if not isinstance(obj[key], typ) or isinstance(obj[key], bool):
            raise _bad(path, f"corrupted profile: {where} has a bad '{key}' value")


def _check_function(path: Path, where: str, name: str, rec: Any) -> None:
    if not isinstance(rec, dict):
        raise _bad(path, f"corrupted profile: {where} entry {name} is not an object")
    for key in ("calls", "bytes_sent", "bytes_recv"):
        v = rec.get(key, 0)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise _bad(path, f"corrupted profile: {where} {name}.{key} is not a count")
    t = rec.get("time_s", 0)
    if not isinstance(t, (int, float)) or isinstance(t, bool):
        raise _bad(path, f"corrupted profile: {where} {name}.time_s is not a number")
    for key in ("hist_send", "hist_recv"):
        h = rec.get(key)
        if h is not None and (not isinstance(h, list) or len(h) != NBINS
                              or not all(isinstance(x, int) for x in h)):
            raise _bad(path, f"corrupted profile: {where} {name}.{key} is not "
                             f"{NBINS} integer bins")


def _parse_header(path: Path, first: str) -> dict[str, Any]:
    not_profile = (f"not an mpilens profile (the first line must be a JSON object "
                   f"with \"format\": \"{FORMAT}\")")
    try:
        header = json.loads(first)
    except json.JSONDecodeError:
        if first.lstrip().startswith("{") and '"' + FORMAT + '"' in first:
            raise _bad(path, "truncated or corrupted profile: the header line is not "
                             "valid JSON") from None
        raise _bad(path, not_profile) from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise _bad(path, not_profile)
    version = header.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _bad(path, f"corrupted profile: bad format version {version!r} "
                         f"(expected an integer 1..{VERSION})")
    if version > VERSION:
        raise _bad(path, f"profile format version {version} is newer than this mpilens "
                         f"understands (up to {VERSION}): upgrade mpilens to read it")
    _check_fields(path, "header", header, _HEADER_KEYS)
    if header["nranks"] < 1:
        raise _bad(path, "corrupted profile: header nranks must be >= 1")
    for key in ("wall_s", "mpi_s"):
        if not all(isinstance(header[key].get(s), (int, float)) for s in _STAT_KEYS):
            raise _bad(path, f"corrupted profile: header {key} needs min, mean and max")
    for name, rec in header["functions"].items():
        _check_function(path, "header", name, rec)
    sections = header.get("sections", {})
    if not isinstance(sections, dict):
        raise _bad(path, "corrupted profile: header sections is not an object")
    for name, known in SECTION_VERSIONS.items():
        v = sections.get(name, 1)
        if isinstance(v, int) and not isinstance(v, bool) and v > known:
            raise _bad(path, f"profile section '{name}' version {v} is newer than this mpilens "
                             f"understands (up to {known}): upgrade mpilens to read it")
    a2a = header.get("alltoall", [])
    if not isinstance(a2a, list):
        raise _bad(path, "corrupted profile: header alltoall is not a list")
    for i, rec in enumerate(a2a):
        if not isinstance(rec, dict):
            raise _bad(path, f"corrupted profile: header alltoall[{i}] is not an object")
        _check_fields(path, f"header alltoall[{i}]", rec, _A2A_KEYS)
        means = rec["learned_mean_s"].values()
        if (not isinstance(rec.get("algorithm"), (str, type(None)))
                or not all(isinstance(c, str) for c in rec["candidates"])
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in means)):
            raise _bad(path, f"corrupted profile: header alltoall[{i}] has a bad 'algorithm', "
                             "'candidates' or 'learned_mean_s' value")
    _check_coll(path, header.get("coll", {}))
    return header


def _check_coll(path: Path, coll: Any) -> None:
    """The node-aware collectives' section (docs/collectives.md): an object per
    collective, each choice row with its fields (what `report` shows)."""
    if not isinstance(coll, dict):
        raise _bad(path, "corrupted profile: header coll is not an object")
    for name, sec in coll.items():
        if not isinstance(sec, dict) or not isinstance(sec.get("choices", []), list):
            raise _bad(path, f"corrupted profile: header coll.{name} is not an object "
                             "with a list of choices")
        for i, rec in enumerate(sec.get("choices", [])):
            where = f"header coll.{name}.choices[{i}]"
            if not isinstance(rec, dict):
                raise _bad(path, f"corrupted profile: {where} is not an object")
            _check_fields(path, where, rec, COLL_CHOICE_KEYS)
            for key in ("ratio", "ratio_lo", "ratio_hi"):
                v = rec.get(key)
                if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool)):
                    raise _bad(path, f"corrupted profile: {where} has a bad '{key}' value")


class RankLines(LazyRows):
    """The rank lines of a loaded profile, read again from its file on demand.

    `load` folds every rank line into `Profile.table` and keeps none of them: the
    views that need a whole line (call sites, regions, time line, communicators)
    are folded at load time too (`Profile.folded`).  Iterating this sequence
    parses the lines once more, one at a time, from the file (plain or gzip);
    a file changed since it was loaded is refused."""

    def __init__(self, path: Path, count: int, stamp: tuple[int, int]) -> None:
        self.path, self.count, self.stamp = path, count, stamp

    def __len__(self) -> int:
        return self.count

    def __bool__(self) -> bool:
        return self.count > 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        st = self.path.stat()
        if (st.st_size, st.st_mtime_ns) != self.stamp:
            raise _bad(self.path, "the profile changed while it was being read")
        for n, raw in _lines(self.path):
            if n > 1 and raw.strip():
                rec = fastjson.loads(raw)
                yield json.loads(raw) if rec is fastjson.MISS else rec

    def _rows(self, idx: range) -> list[dict[str, Any]]:  # one pass over the file
        want = set(idx)
        got = {k: r for k, r in enumerate(self) if k in want}
        return [got[k] for k in idx]

    def _row(self, i: int) -> dict[str, Any]:
        for k, r in enumerate(self):
            if k == i:
                return r
        raise IndexError(i)  # pragma: no cover - the count was checked at load


def _lines(p: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of the file, within the reader's limits (limits.py: no line
    longer than MAX_LINE_BYTES is read whole, control characters in strings made
    visible; nesting is bounded where the line is parsed); gzip errors become one line."""
    with rawfile.open_bytes(p) as f:
        try:
            n = 0
            while raw := f.readline(limits.MAX_LINE_BYTES + 1):
                n += 1
                if len(raw) - raw.endswith(b"\n") > limits.MAX_LINE_BYTES:
                    raise _bad(p, f"corrupted profile: line {n} is longer than "
                                  f"{limits.MAX_LINE_BYTES >> 20} MiB")
                yield n, limits.neutralize_controls(raw)
        except (OSError, EOFError, zlib.error) as exc:
            what = ("truncated compressed profile" if isinstance(exc, EOFError)
                    else f"corrupted compressed profile ({exc})")
            raise _bad(p, what) from None


def _text(p: Path, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _bad(p, "not an mpilens profile (not UTF-8 text)") from None


MIN_RANK_LINE = 16  # bytes: no rank line is shorter ('{"rank":0,...}' and its newline)
GZIP_MAX_RATIO = 1032  # deflate expands at most ~1032:1


def _check_room(p: Path, st: os.stat_result, header: dict[str, Any]) -> None:
    """A header claiming more ranks than the file can hold lines for is refused before
    any per-rank array is made (a corrupted nranks of 1e8 must not ask for gigabytes)."""
    if not header.get("detail", True):
        return
    with open(p, "rb") as f:
        gz = f.read(2) == rawfile.GZIP_MAGIC
    room = st.st_size * (GZIP_MAX_RATIO if gz else 1)
    nranks = int(header["nranks"])
    if nranks * MIN_RANK_LINE > room:
        raise _bad(p, f"truncated profile: the header says {nranks} ranks, but its "
                      f"{st.st_size} bytes cannot hold {nranks} rank lines")


def load(path: str | Path) -> Profile:
    """Read and validate the profile at path (UserError with one line if unusable).

    The file (plain or gzip-compressed, docs/profile-format.md) is read as a
    stream: the header, then each rank line parsed, checked, folded into the
    columns of `Profile.table` and the load-time views (`FOLDS`), and dropped."""
    p = Path(path)
    os.close(limits.open_regular(p)[0])  # regular files only: no FIFO, device (limits.py)
    try:
        st = p.stat()
        lines = _lines(p)
        first = next(lines, None)
    except OSError as exc:
        raise _bad(p, f"cannot read: {exc.strerror}") from None
    if first is None or (not first[1].strip() and _only_blank(lines)):
        raise _bad(p, "is empty, not an mpilens profile")
    limits.check_depth(p, first[1])
    header = _parse_header(p, _text(p, first[1]).rstrip("\n"))
    nranks = int(header["nranks"])
    checker = _Checker(p, nranks)
    checker.count("header nranks", header["nranks"], 1, 2**31 - 1)
    checker.header(header)
    _check_room(p, st, header)
    fast = _load_fast(p, st, header)
    if fast is not None:
        lines.close()  # the header's reader: its file closed now
        return fast
    folder = Folder(nranks, list(header["functions"]))
    folds = {name: make(header) for name, make in _fold_makers().items()}
    folds["timeline"].checker = checker  # checks the time lines a batch at a time
    count = 0
    pending: tuple[int, bytes] | None = None
    try:
        for item in lines:
            if pending is not None:
                _rank_line(p, checker, pending, False, count, folder, folds)
                count += 1
            pending = item if item[1].strip() else None
            if pending is None:
                continue
        if pending is not None:
            _rank_line(p, checker, pending, True, count, folder, folds)
            count += 1
    except UserError:
        folds["timeline"].flush()  # an earlier line's bad time line is the first error
        raise
    folds["timeline"].flush()
    expected = nranks if header.get("detail", True) else count
    if count != expected:
        raise _bad(p, f"truncated profile: {count} of {nranks} rank lines")
    if count and count != nranks:
        raise _bad(p, f"corrupted profile: {count} rank lines for {nranks} ranks")
    prof = Profile(path=p, header=header,
                   ranks=RankLines(p, count, (st.st_size, st.st_mtime_ns)) if count else [])
    prof.table = folder.table()
    prof.folds = {name: acc.result() for name, acc in folds.items()} if count else {}
    return prof


_FAST_FOLDS = {"callsites", "comms", "regions", "timeline"}


def _load_fast(p: Path, st: os.stat_result, header: dict[str, Any]) -> Profile | None:
    """The profile read by the fast path (report/fastread.py: the C library), or None:
    the Python reader reads it (no library, or a line the library leaves to it)."""
    makers = _fold_makers()
    if not _FAST_FOLDS <= set(makers):
        return None
    tl = makers["timeline"](header)
    # advise's view (advise/ranks.py, registered for its load): the library folds it too
    adv = makers.get("advise")
    adv_sites = getattr(adv, "fast_sites", None)
    got = fastread.load_ranks(p, header, tl, advise_sites=adv_sites)
    if got is None:
        return None
    table, views, count = got
    tl.count = count
    views["timeline"] = tl.result()
    if adv_sites is not None:
        views["advise"] = adv.from_fast(views["advise"])  # type: ignore[union-attr]
    prof = Profile(path=p, header=header, ranks=RankLines(p, count, (st.st_size, st.st_mtime_ns)))
    prof.table = table
    prof.folds = {name: views[name] for name in makers if name in views}
    # a view the library does not fold (registered by another module): folded from the
    # lines the library has checked, parsed once more (Profile.folded)
    for name in sorted(set(makers) - set(views)):
        prof.folded(name)
    return prof


def _only_blank(lines: Iterator[tuple[int, bytes]]) -> bool:
    return all(not raw.strip() for _, raw in lines)


def _rank_line(p: Path, checker: _Checker, item: tuple[int, bytes], last: bool, count: int,
               folder: Folder, folds: dict[str, Any]) -> None:
    lineno, raw = item
    limits.check_depth_fast(p, raw)
    rec = fastjson.loads(raw)
    try:
        if rec is fastjson.MISS:
            rec = json.loads(_text(p, raw))
    except RecursionError:  # brackets inside strings hid the depth from the fast check
        raise _bad(p, f"corrupted profile: JSON nested deeper than {limits.MAX_DEPTH} "
                      "levels") from None
    except json.JSONDecodeError:
        what = ("truncated profile: the last line is incomplete"
                if last and not raw.endswith(b"\n")
                else f"corrupted profile: line {lineno} is not valid JSON")
        raise _bad(p, what) from None
    if not isinstance(rec, dict):
        raise _bad(p, f"corrupted profile: line {lineno} is not a JSON object")
    _check_fields(p, f"line {lineno}", rec, _RANK_KEYS)
    if rec["rank"] != count:
        raise _bad(p, f"corrupted profile: line {lineno} holds rank {rec['rank']}, "
                      f"expected rank {count}")
    if count >= folder.n:
        raise _bad(p, f"corrupted profile: more than {folder.n} rank lines for "
                      f"{folder.n} ranks")
    # the fast path (the time line's values: checked by its fold, a batch at a time);
    # else name the bad value
    if not rank_line_ok(rec, checker.nranks, timeline=False):
        for name, frec in rec["functions"].items():
            _check_function(p, f"rank {rec['rank']}", name, frec)
        checker.rank_line(rec)
    folder.add(rec)
    for name, acc in folds.items():
        if name == "timeline":
            # numpy reads a JSON true as the count 1: a batch is checked with numpy only
            # when the line's true/false words are all the communicators' flags
            acc.add(rec, _bools(raw) == _known_bools(rec))
        else:
            acc.add(rec)


def _bools(raw: bytes) -> int:
    return raw.count(b"true") + raw.count(b"false")


def _known_bools(rec: dict[str, Any]) -> int:
    comms = rec.get("comms")
    if type(comms) is not list:
        return -1
    return sum(type(v) is bool for c in comms if type(c) is dict for v in c.values())
