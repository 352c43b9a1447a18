"""A profile's bytes as a stream, plain or gzip (one or more members, docs/profile-format.md)."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import IO

GZIP_MAGIC = b"\x1f\x8b"


def open_bytes(p: Path) -> IO[bytes]:
    """The file's bytes, decompressed when it starts with the gzip magic."""
    with open(p, "rb") as f:
        gz = f.read(2) == GZIP_MAGIC
    return gzip.open(p, "rb") if gz else open(p, "rb")
