"""`mpilens html PROFILE [-o report.html]`: one self-contained HTML report with plots."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import outfile
from ..errors import UserError
from ..report import fastread
from ..report.partial import is_partial, load_any


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("html", help="self-contained HTML report with plots",
                       description=__doc__)
    p.add_argument("profile", nargs="+",
                   help="profile file written by mpilens, or a partial profile (its directory "
                        "or rank files)")
    p.add_argument("-o", "--output", default=None,
                   help="HTML file to write (default: the profile's name with .html)")
    p.add_argument("--force", action="store_true", help="overwrite an existing output file")
    p.set_defaults(func=run)


def write_html(profile: str | Path | list[str], output: str | Path | None, force: bool) -> Path:
    """Render profile to output (refusing to overwrite without force); returns the path."""
    paths = [str(p) for p in profile] if isinstance(profile, list) else [str(profile)]
    prof = load_any(paths)
    fastread.say_fallback(bool(prof.ranks) and not is_partial(paths[0]))
    plain = prof.path.with_name(prof.path.name.removesuffix(".gz"))  # x.prof.gz: x.html
    out = Path(output) if output else (prof.path.with_name(prof.path.name + ".html")
                                       if prof.partial is not None else plain.with_suffix(".html"))
    if out.resolve() == prof.path.resolve():
        raise UserError(f"{out}: the output would overwrite the profile itself")
    outfile.check_output(out, force, "HTML report")
    from ..report.html import render  # matplotlib is slow to import: only when needed

    text = render(prof)
    outfile.write_text(out, text)
    return out


def run(args: argparse.Namespace) -> int:
    out = write_html(args.profile, args.output, args.force)
    print(f"mpilens: HTML report written to {out}", file=sys.stderr)
    return 0
