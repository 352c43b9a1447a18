"""Result files (profiles, JSON, plots, HTML): never overwritten unless asked, never
left half-written, and only ever replacing a file mpilens wrote.  The checks run
before the work (a benchmark can take minutes), the write goes to a temporary file
in the same directory, renamed over the target only once complete.

What may be replaced (with --force) is decided in one place, replace_refusal: a
regular file -- not a symbolic link, device, FIFO, socket or directory -- whose
content is one mpilens writes (a profile, an HTML report, benchmark JSON, a tuning
file, a plot).  Anything else is refused with or without --force."""

from __future__ import annotations

import os
import re
import stat
import zlib
from collections.abc import Callable
from pathlib import Path

from .errors import UserError

HEAD = 1 << 16  # bytes of a file looked at to tell whether mpilens wrote it
OURS = "a profile, HTML report or benchmark JSON"
_TEXT = re.compile(
    rb'\{\s*"format"\s*:\s*"mpilens-'  # profiles, mpilens-bench, kept files, caches
    rb'|\{\s*"family"\s*:\s*"alltoall"'  # bench alltoall --json
    rb'|\{\s*"bench"\s*:\s*"repro"'  # bench repro --json
    rb'|<!DOCTYPE html>\s*<html[^>]*>\s*<head>\s*<meta charset="utf-8">\s*<title>mpilens '
    rb'|mpilens-tuning\t')  # mpilens tune --output
_PLOT = (b"\x89PNG", b"%PDF", b"<?xml")  # bench --plot, drawn by Matplotlib


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _head(path: Path) -> bytes:
    """The first HEAD bytes of the regular file at path, decompressed if gzip; b"" if
    unreadable.  O_NONBLOCK|O_NOFOLLOW: a FIFO put there meanwhile cannot block us."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        data = os.read(fd, HEAD)
    except OSError:
        return b""
    finally:
        os.close(fd)
    if data[:2] == b"\x1f\x8b":
        try:
            data = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data, HEAD)
        except zlib.error:
            return b""
    return data


def written_by_mpilens(path: Path, also: re.Pattern[bytes] | None = None) -> bool:
    """Whether the regular file at path holds what mpilens writes, by its content (also:
    a pattern the whole head must match, for a file with no mark of its own)."""
    data = _head(path)
    if _TEXT.match(data.lstrip()):
        return True
    if data.startswith(_PLOT) and b"Matplotlib" in data:
        return True
    return bool(also is not None and data and also.fullmatch(data))


def replace_refusal(path: Path, force: bool, what: str,
                    also: re.Pattern[bytes] | None = None) -> str | None:
    """Why path must not be written (None: it may).  Nothing there: fine.  A file
    mpilens wrote: only with force.  Anything else: never, and the message does not
    suggest --force."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"{what} {path}: {e.strerror}"
    if stat.S_ISDIR(st.st_mode):
        return f"{what} {path} is a directory: expected a file name"
    if not stat.S_ISREG(st.st_mode):
        return (f"{what} {path} is {_kind(st.st_mode)}: mpilens replaces only regular files "
                f"it wrote; choose another file")
    if not written_by_mpilens(path, also):
        return (f"{what} {path} exists and is not {OURS} written by mpilens: choose another "
                f"file")
    if not force:
        return f"{what} {path} exists: choose another file or add --force"
    return None


def check_output(path: Path | None, force: bool, what: str,
                 also: re.Pattern[bytes] | None = None) -> None:
    """Refuse what may not be replaced (replace_refusal) or a missing directory, up front."""
    if path is None:
        return
    why = replace_refusal(path, force, what, also)
    if why:
        raise UserError(why)
    if not path.parent.is_dir():
        raise UserError(f"{what} {path}: directory {path.parent} does not exist")


def write_with(path: Path, writer: Callable[[Path], None],
               also: re.Pattern[bytes] | None = None) -> None:
    """writer(tmp) writes the whole content to tmp; it then replaces path, if nothing
    but a file mpilens wrote is there (checked again: it may have changed since the
    command's check_output).  On any failure path is left as it was and tmp is removed."""
    tmp = path.with_name(f".{path.stem}.tmp-{os.getpid()}{path.suffix}")
    try:
        writer(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        why = replace_refusal(path, True, "output", also)
        if why:
            tmp.unlink(missing_ok=True)
            raise UserError(why)
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UserError(f"{path}: cannot write: {exc.strerror or exc}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text(path: Path, text: str, also: re.Pattern[bytes] | None = None) -> None:
    write_with(path, lambda tmp: tmp.write_text(text, encoding="utf-8"), also)
