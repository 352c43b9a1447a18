"""Read and validate an mpilens profile (docs/profile-format.md, JSON Lines).

`load(path)` returns a `Profile` or raises `UserError` with one line that says
what is wrong with the file: missing, not a profile, truncated, corrupted, or
written by a newer mpilens.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UserError
from . import limits
from .schema import (
    ALLTOALL_KEYS,
    FORMAT,
    HEADER_KEYS,
    HIST_LABELS,
    NBINS,
    RANK_KEYS,
    SECTION_VERSIONS,
    STATS_KEYS,
    VERSION,
)
from .validate import check_values

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
    ranks: list[dict[str, Any]] = field(default_factory=list)
    partial: dict[str, Any] | None = None  # a flight recorder's partial profile (partial.py)

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
    return header


def load(path: str | Path) -> Profile:
    """Read and validate the profile at path (UserError with one line if unusable)."""
    p = Path(path)
    raw = limits.read_bytes(p)  # regular files only, bounded lines and nesting (limits.py)
    if not raw.strip():
        raise _bad(p, "is empty, not an mpilens profile")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _bad(p, "not an mpilens profile (not UTF-8 text)") from None
    lines = text.split("\n")
    header = _parse_header(p, lines[0])
    body = [(i + 2, ln) for i, ln in enumerate(lines[1:]) if ln.strip()]
    ranks: list[dict[str, Any]] = []
    for lineno, ln in body:
        try:
            rec = json.loads(ln)
        except json.JSONDecodeError:
            last = lineno == body[-1][0]
            what = "truncated profile: the last line is incomplete" if last and \
                not text.endswith("\n") else f"corrupted profile: line {lineno} is not valid JSON"
            raise _bad(p, what) from None
        if not isinstance(rec, dict):
            raise _bad(p, f"corrupted profile: line {lineno} is not a JSON object")
        _check_fields(p, f"line {lineno}", rec, _RANK_KEYS)
        if rec["rank"] != len(ranks):
            raise _bad(p, f"corrupted profile: line {lineno} holds rank {rec['rank']}, "
                          f"expected rank {len(ranks)}")
        for name, frec in rec["functions"].items():
            _check_function(p, f"rank {rec['rank']}", name, frec)
        ranks.append(rec)
    expected = header["nranks"] if header.get("detail", True) else len(ranks)
    if len(ranks) != expected:
        raise _bad(p, f"truncated profile: {len(ranks)} of {header['nranks']} rank lines")
    check_values(p, header, ranks)  # every count, time and rank in range (validate.py)
    return Profile(path=p, header=header, ranks=ranks)
