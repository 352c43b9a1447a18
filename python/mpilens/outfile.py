"""Result files (JSON, plots, HTML): never overwritten unless asked, never left
half-written.  The checks run before the work (a benchmark can take minutes),
the write goes to a temporary file in the same directory, renamed over the
target only once complete."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from .errors import UserError


def check_output(path: Path | None, force: bool, what: str) -> None:
    """Refuse an existing file (without force) or a missing directory, up front."""
    if path is None:
        return
    if path.is_dir():
        raise UserError(f"{what} {path} is a directory: expected a file name")
    if path.exists() and not force:
        raise UserError(f"{what} {path} exists: choose another file or add --force")
    if not path.parent.is_dir():
        raise UserError(f"{what} {path}: directory {path.parent} does not exist")


def write_with(path: Path, writer: Callable[[Path], None]) -> None:
    """writer(tmp) writes the whole content to tmp; it then replaces path.  On any
    failure path is left as it was and tmp is removed."""
    tmp = path.with_name(f".{path.stem}.tmp-{os.getpid()}{path.suffix}")
    try:
        writer(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UserError(f"{path}: cannot write: {exc.strerror or exc}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text(path: Path, text: str) -> None:
    write_with(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
