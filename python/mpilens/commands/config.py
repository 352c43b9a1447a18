"""`mpilens config [--config FILE]`: the MPILENS_* settings in force, and where
each comes from.

The settings are not described here: libmpilens.so holds the one table of them
(the profiler core's and every engine's, runtime/common/settings.h) and reads
them with the same code at MPI_Init.  This command loads the library (without
starting MPI) and asks it: mpilens_settings_json() reads this process's
environment and config file exactly as a rank would and returns every setting
with its value and source (env, file, default), or the one-line error the job
would stop with.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
from typing import Any

from .. import paths
from ..errors import UserError
from ..profiled import DEFAULT_OUTPUT_PLAIN

PREFIX = "mpilens: "


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("config", help="the MPILENS_* settings in force and where each comes from",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", metavar="FILE",
                   help="read this config file, as MPILENS_CONFIG=FILE would")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="every setting as JSON")
    out.add_argument("--markdown", action="store_true",
                     help="the table of every setting for docs/configuration.md")
    p.set_defaults(func=run)


def query(config: str | None = None) -> dict[str, Any]:
    """The library's answer for this environment (and config file, if given)."""
    lib_path = paths.artifact("lib/libmpilens.so")
    try:
        lib = ctypes.CDLL(str(lib_path))
    except OSError as exc:
        raise UserError(f"{lib_path}: cannot be loaded: {exc}") from None
    lib.mpilens_settings_json.restype = ctypes.c_void_p
    lib.mpilens_free.argtypes = [ctypes.c_void_p]
    saved = os.environ.get("MPILENS_CONFIG")
    if config is not None:
        os.environ["MPILENS_CONFIG"] = config
    try:
        ptr = lib.mpilens_settings_json()
    finally:
        if config is not None:
            if saved is None:
                del os.environ["MPILENS_CONFIG"]
            else:
                os.environ["MPILENS_CONFIG"] = saved
    if not ptr:
        raise UserError(f"{lib_path}: mpilens_settings_json returned nothing (out of memory)")
    try:
        text = ctypes.string_at(ptr).decode("utf-8", errors="replace")
    finally:
        lib.mpilens_free(ptr)
    return _effective_output(json.loads(text))


def _effective_output(data: dict[str, Any]) -> dict[str, Any]:
    """The library's rule for the default output (config.c): MPILENS_COMPRESS=off with
    no output given writes the plain mpilens-%j.prof, not the table's default name."""
    by_env = {s["env"]: s for s in data.get("settings", [])}
    out, comp = by_env.get("MPILENS_OUTPUT"), by_env.get("MPILENS_COMPRESS")
    if out and comp and out["source"] == "default" and (comp["value"] or "").strip() == "off":
        out["value"] = DEFAULT_OUTPUT_PLAIN
    return data


def source_text(s: dict[str, Any]) -> str:
    if s["source"] == "file":
        return f"file line {s['line']}"
    return str(s["source"])


def value_text(s: dict[str, Any]) -> str:
    if s["value"] is None:
        return f"unset ({s['unset']})" if s["unset"] else "unset"
    return str(s["value"])


def print_settings(data: dict[str, Any]) -> None:
    rows = [(s["env"], value_text(s), source_text(s)) for s in data["settings"]]
    w0 = max(len(r[0]) for r in rows)
    w1 = min(max(len(r[1]) for r in rows), 48)
    print(f"config file: {data['config'] or 'none (MPILENS_CONFIG unset)'}")
    print(f"{'setting':<{w0}}  {'value':<{w1}}  source")
    for env, value, src in rows:
        print(f"{env:<{w0}}  {value:<{w1}}  {src}")


def _cell(text: str) -> str:
    """Table-cell text shown as written (no emphasis, no HTML tags, no column breaks)."""
    for a, b in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("*", "\\*"), ("|", "\\|")):
        text = text.replace(a, b)
    return text


def markdown(data: dict[str, Any]) -> str:
    """The settings table of docs/configuration.md (tests/test_config.py checks the page)."""
    out = ["| variable | part | default | accepted | meaning |", "|---|---|---|---|---|"]
    for s in data["settings"]:
        default = f"`{s['default']}`" if s["default"] is not None else s["unset"]
        where = "" if s["file_key"] else " (environment only)"
        out.append(f"| `{s['env']}`{where} | {s['part']} | {_cell(default)} "
                   f"| {_cell(s['accepted'])} | {_cell(s['help'])} |")
    return "\n".join(out) + "\n"


def run(args: argparse.Namespace) -> int:
    data = query(args.config)
    if args.markdown:
        sys.stdout.write(markdown(data))
        return 0
    if args.json:
        print(json.dumps(data, indent=1))
        return 0 if data["error"] is None else 2
    if data["error"] is not None:
        err = data["error"]
        raise UserError(err.removeprefix(PREFIX))
    print_settings(data)
    return 0
