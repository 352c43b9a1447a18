"""Parsing a profile's rank lines: orjson when it is installed (about 4x faster than
the standard library on a rank line), else the standard library's json.

`loads(raw)` returns the parsed value, or MISS when orjson is absent, refuses the
text, or could read it differently from json: orjson reads an integer beyond 64
bits as a float (json as an int), refuses NaN, Infinity, a number that overflows to
infinity and a lone surrogate (json accepts them).  The caller then parses with
json, so a line reads, and is refused, the same with or without orjson.
"""

from __future__ import annotations

import re
from typing import Any

try:
    import orjson
except ImportError:  # the standard library's json alone (slower)
    orjson = None  # type: ignore[assignment]

MISS: Any = object()
# digit -> "9", the rest of a number's fraction or exponent -> ".", anything else -> " "
_DIGITS = bytes(0x39 if 0x30 <= b <= 0x39 else 0x2E if b in b".eE" else 0x20
                for b in range(256))
_LONG = b" " + b"9" * 19  # an integer of 19 digits or more may lie beyond int64 / uint64
_LONG_INT = re.compile(rb" 9{19,}(?![9.])")


def loads(raw: bytes) -> Any:
    """The JSON value of raw (UTF-8 bytes), or MISS: parse it with json instead."""
    if orjson is None:
        return MISS
    digits = raw.translate(_DIGITS)
    if _LONG in digits and _LONG_INT.search(digits):
        return MISS
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return MISS


def available() -> bool:
    return orjson is not None
