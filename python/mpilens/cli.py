"""The `mpilens` command: one module per sub-command under mpilens.commands."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from .errors import UserError

# Each module in mpilens.commands defines register(subparsers) -> None and sets
# the parser's `func` default to a callable(args) -> int.
COMMANDS = ["run", "report", "diff", "html", "demo", "bench", "tune", "config"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mpilens", description=__doc__)
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




def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"mpilens: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # output piped into e.g. `head`: stop quietly, as the shell tools do
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 141


if __name__ == "__main__":
    sys.exit(main())
