"""What the benchmarks that write a document's table share (bench/reader/bench.py,
bench/store/ingest.py): the provenance's commit and CPU model, the command that
measured the results as the document shows it, and the rewrite of the lines between
the document's markers."""

from __future__ import annotations

import platform
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def git(*args: str) -> str:
    """git's output in the checkout ("" when git fails)."""
    proc = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                          check=False)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def command_block(argv: list[str]) -> list[str]:
    """The results' argv as a shell block: paths relative to the checkout, run by the
    checkout's venv python; nothing when the results have no argv."""
    args = [a.replace(str(ROOT) + "/", "") for a in argv]
    if not args:
        return []
    return ["", "```sh", " ".join([".venv/bin/python", *args[1:]]), "```"]


def rewrite(doc: Path, begin: str, end: str, body: str, who: str) -> None:
    """The lines of doc between the begin marker's line and end replaced by body; a
    document without the markers, or one that cannot be read or written: one line."""
    try:
        text = doc.read_text()
        m = re.search(re.escape(begin) + r".*?-->\n(.*?)" + re.escape(end), text, re.DOTALL)
        if not m:
            raise SystemExit(f"{who}: {doc} has no {begin} ... {end} markers")
        doc.write_text(text[:m.start(1)] + body + text[m.end(1):])
    except OSError as exc:
        raise SystemExit(f"{who}: --doc {doc}: {exc.strerror or exc}") from None
