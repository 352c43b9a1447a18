"""The `mpilens` command: one module per sub-command under mpilens.commands."""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import sys
from pathlib import Path

from . import __version__
from .errors import JobStopped, UserError

# Each module in mpilens.commands defines register(subparsers) -> None and sets
# the parser's `func` default to a callable(args) -> int.
# The commands whose last argument is a launcher line after `--` (set_defaults(remainder=
# the name of that argument)).
LAUNCHER_COMMANDS = ("run", "bench", "tune", "advise")
COMMANDS = ["run", "report", "diff", "html", "demo", "bench", "tune", "config", "advise",
            "store"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mpilens", description=__doc__)
    parser.add_argument("--version", action="store_true",
                        help="the versions of this command and of the runtime it finds")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            mod = importlib.import_module(f"mpilens.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"mpilens.commands.{name}":
                continue  # command not built yet
            raise
        mod.register(sub)
    return parser



def version_text() -> str:
    """`mpilens --version`: this command, and the runtime paths.runtime() finds."""
    from . import paths

    lines = [f"mpilens {__version__} (Python {sys.version.split()[0]}, {Path(__file__).parent})"]
    try:
        rt = paths.runtime()
    except UserError as exc:
        lines.append(f"runtime: not found ({exc})")
    else:
        info = rt.info()
        built = info.get("mpi_library") or info.get("mpi") or "an unknown MPI"
        lines.append(f"runtime: mpilens {info.get('version', '?')} built for {built}, "
                     f"{rt.root} (found by {rt.found_by})")
    return "\n".join(lines)


def command_name() -> str:
    """How to run this mpilens in a command printed for the user to copy: `mpilens` when
    that is the one on PATH, else the full path of this installation's script (the
    prefix's relocatable bin/mpilens when it started us)."""
    on_path = shutil.which("mpilens")
    launcher = os.environ.get("_MPILENS_LAUNCHER")  # P/bin/mpilens (paths.LAUNCHER_VAR)
    if launcher and Path(launcher).exists():
        same = on_path and Path(on_path).resolve() == Path(launcher).resolve()
        return "mpilens" if same else launcher
    here = Path(sys.executable).parent / "mpilens"
    if on_path and (not here.exists() or Path(on_path).resolve() == here.resolve()):
        return "mpilens"
    if here.exists():
        return str(here)
    return f"PYTHONPATH={Path(__file__).resolve().parents[1]} {sys.executable} -m mpilens.cli"


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """parse_args, but what follows the first `--` is the launcher line of the commands
    that take one (their `remainder` default names it), given to them after a `--` of
    their own: argparse alone drops that `--` when no option comes before it, so
    `mpilens bench p2p -- mpirun -np 2` could not tell the launcher from its options."""
    k = argv.index("--") if "--" in argv else -1
    command = next((a for a in argv[:k] if not a.startswith("-")), None)
    if k < 0 or command not in LAUNCHER_COMMANDS:
        return parser.parse_args(argv)  # `--` means what argparse says it means
    args = parser.parse_args(argv[:k])
    dest = args.remainder
    setattr(args, dest, [*getattr(args, dest), *argv[k:]])
    return args


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parse(parser, sys.argv[1:] if argv is None else list(argv))
    if args.version:
        print(version_text())
        return 0
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe found at this last flush is a BrokenPipeError here
        return status
    except UserError as exc:
        print(f"mpilens: {exc}", file=sys.stderr)
        return 2
    except JobStopped as exc:
        print(f"mpilens: {exc}", file=sys.stderr)
        return exc.status
    except MemoryError:  # a huge (or hostile) input under a memory limit: one line
        print("mpilens: out of memory: the input needs more memory than this process may "
              "use", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # output piped into e.g. `head`: stop quietly with the status of a process that
        # SIGPIPE ended (128 + 13), whatever the format; nothing more goes to the pipe
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 141


if __name__ == "__main__":
    sys.exit(main())
