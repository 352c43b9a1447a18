"""The reader's low-level limits, in one place (docs/profile-format.md, Reading limits).

Every file mpilens reads as a profile (complete or partial) goes through `read_bytes`:

- regular files only: a FIFO, a device (/dev/zero), a socket or a directory is refused
  at once, before any byte is read (the file is opened non-blocking, so a FIFO without
  a writer cannot hang the reader either);
- no line longer than `MAX_LINE_BYTES`;
- no JSON nested deeper than `MAX_DEPTH` levels (Python's json would otherwise raise
  RecursionError, and everything that walks the data after it);
- control characters inside JSON strings (C0 but the tab, DEL, C1; written as JSON
  escapes such as \\u001b or \\n, or raw) are turned into visible text (the six
  characters ``\\u001b``),
  so that no name from a profile can move the cursor, colour or clear a terminal, or
  break a table, a CSV row or an HTML page.

Each refusal is a `UserError` with one line.  `strict` makes data safe for
`json.dumps(allow_nan=False)`: NaN and infinities become null.
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UserError

MAX_LINE_BYTES = 256 << 20
MAX_DEPTH = 64

_STRING = re.compile(rb'"(?:[^"\\\n]|\\.)*"')
_PAIR = re.compile(rb"\[\]|\{\}")
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
# a JSON escape of a control character not preceded by an escaped backslash
# (a tab, \t or \u0009, stays: it moves no cursor, and MPICH's version string has one)
_ESCAPED_CTRL = re.compile(rb"(?<!\\)((?:\\\\)*)\\"
                           rb"(u000[0-8a-fA-F]|u001[0-9a-fA-F]|u007[fF]|u00[89][0-9a-fA-F]|[bfnr])")
_RAW_CTRL = re.compile(rb"\x7f|\xc2[\x80-\x9f]")


def open_regular(path: Path, what: str = "profile") -> tuple[int, int]:
    """(fd, size) of a regular file opened for reading, or one line (a streaming
    reader opens its file with this, then passes each line to `line`)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory, not an mpilens {what}") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror}") from None
    st = os.fstat(fd)
    why = None
    if stat.S_ISDIR(st.st_mode):
        why = f"is a directory, not an mpilens {what}"
    elif stat.S_ISFIFO(st.st_mode):
        why = f"is a FIFO, not a regular file: mpilens reads {what}s from regular files only"
    elif stat.S_ISSOCK(st.st_mode):
        why = f"is a socket, not a regular file: mpilens reads {what}s from regular files only"
    elif not stat.S_ISREG(st.st_mode):
        why = f"is a device, not a regular file: mpilens reads {what}s from regular files only"
    if why:
        os.close(fd)
        raise UserError(f"{path}: {why}")
    return fd, st.st_size


def _read_all(path: Path, fd: int, size: int) -> bytes:
    chunks: list[bytes] = []
    try:
        with os.fdopen(fd, "rb", closefd=True) as f:
            while True:  # to the end, even if the file grew since fstat
                chunk = f.read(max(size, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror}") from None
    return b"".join(chunks)


def check_line_lengths(path: Path, raw: bytes, what: str = "profile") -> None:
    """One line if a line of raw is longer than MAX_LINE_BYTES."""
    if len(raw) <= MAX_LINE_BYTES:
        return
    start, n = 0, 1
    while True:
        end = raw.find(b"\n", start)
        stop = len(raw) if end < 0 else end
        if stop - start > MAX_LINE_BYTES:
            raise UserError(f"{path}: corrupted {what}: line {n} is longer than "
                            f"{MAX_LINE_BYTES >> 20} MiB")
        if end < 0:
            return
        start, n = end + 1, n + 1


def check_depth(path: Path, raw: bytes, what: str = "profile") -> None:
    """One line if JSON in raw (one line or many) nests deeper than MAX_DEPTH levels."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:
        return
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKET)
    for _ in range(MAX_DEPTH):  # each pass removes the innermost level
        brackets, n = _PAIR.subn(b"", brackets)
        if not n:
            break
    # still a pair after MAX_DEPTH levels, or more unmatched openings than that
    if _PAIR.search(brackets) or brackets.count(b"[") + brackets.count(b"{") > MAX_DEPTH:
        raise UserError(f"{path}: corrupted {what}: JSON nested deeper than {MAX_DEPTH} levels")


_DEPTH_STEP = bytes(1 if b in b"[{" else 255 if b in b"]}" else 0 for b in range(256))  # +1 / -1


def check_depth_fast(path: Path, raw: bytes, what: str = "profile") -> None:
    """check_depth for a reader of many lines (a rank line: ~5 us instead of ~150):
    the depth counted over the brackets alone (a few passes removing the innermost
    pairs settle a shallow line, else their running count); only a line that seems
    deeper than MAX_DEPTH (brackets in strings count too) is checked exactly."""
    kept = raw.translate(None, _NOT_BRACKET)
    if len(kept) <= MAX_DEPTH:
        return
    left = kept
    for _ in range(4):  # a pass removes at most two levels: empty after 4, no deeper than 8
        left = left.replace(b"[]", b"").replace(b"{}", b"")
        if not left:
            return
    steps = np.frombuffer(kept.translate(_DEPTH_STEP), np.int8)
    if int(np.cumsum(steps, dtype=np.int32).max()) > MAX_DEPTH:
        check_depth(path, raw, what)


def neutralize_controls(raw: bytes) -> bytes:
    """JSON text with every control character in its strings made visible text."""
    if b"\\" not in raw and b"\x7f" not in raw and b"\xc2" not in raw:
        return raw
    raw = _ESCAPED_CTRL.sub(rb"\1\\\\\2", raw)
    return _RAW_CTRL.sub(lambda m: b"\\\\u%04x" % ord(m.group().decode("utf-8", "replace")), raw)


def read_bytes(path: str | Path, what: str = "profile") -> bytes:
    """The contents of a profile file (or another JSON file mpilens reads: `what` names
    it in the messages) within the limits above (UserError otherwise), control
    characters in its strings made visible."""
    p = Path(path)
    fd, size = open_regular(p, what)
    raw = _read_all(p, fd, size)
    check_line_lengths(p, raw, what)
    check_depth(p, raw, what)
    return neutralize_controls(raw)


def line(path: Path, n: int, raw: bytes, what: str = "profile") -> bytes:
    """Line n of a file read line by line: the same limits as read_bytes, for one line."""
    if len(raw) > MAX_LINE_BYTES:
        raise UserError(f"{path}: corrupted {what}: line {n} is longer than "
                        f"{MAX_LINE_BYTES >> 20} MiB")
    check_depth(path, raw, what)
    return neutralize_controls(raw)


def strict(obj: Any) -> Any:
    """obj with every NaN or infinite float replaced by None (JSON null): the
    report's JSON is strict JSON (RFC 8259 has no NaN or Infinity)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: strict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict(v) for v in obj]
    if isinstance(obj, Sequence) and not isinstance(obj, (str, bytes)):
        return [strict(v) for v in obj]  # a lazy sequence (callsites.PerRank)
    return obj
