"""Advise's findings and the --check table as text."""

from __future__ import annotations

import re
import shutil
import textwrap
from typing import Any

from ..units import fmt_bytes, fmt_time


_UNIT = re.compile(r"(\d) (?=(?:ns|us|ms|s|B|KiB|MiB|GiB|TiB|%|x)(?![\w(]))")


def _fill(text: str, width: int, first: str, indent: str) -> list[str]:
    """text wrapped to width, a number never parted from its unit, a word (a path)
    never cut: only a word longer than the width makes a line longer."""
    lines = textwrap.wrap(_UNIT.sub("\\1\0", text), width=width, initial_indent=first,
                          subsequent_indent=indent, break_on_hyphens=False,
                          break_long_words=False)  # a path stays whole, to copy
    return [ln.replace("\0", " ") for ln in lines]


def _wrap(label: str, text: str, width: int) -> list[str]:
    head = f"   {label:<11}" + (" " if len(label) >= 11 else "")
    return _fill(text, width, head, " " * len(head)) or [head]


def _para(text: str, width: int, indent: str = "   ", first: str = "") -> list[str]:
    """A line of its own, wrapped to width (its continuation indented)."""
    return _fill(text, width, first, indent)


def _gain(f: dict[str, Any]) -> str:
    iv = f.get("gain_interval")
    where = ("the measured candidates' intervals" if "measured" in f.get("figures", {})
             else "the model's intervals")
    span = f", {fmt_time(iv[0])} .. {fmt_time(iv[1])} over {where}" if iv else ""
    return f"gain {fmt_time(f['gain_s'])} ({f['gain_pct']:.1f} % of wall{span})"


def finding_lines(i: int, f: dict[str, Any], width: int) -> list[str]:
    out = _para(f"{i}. [rule {f['rule']}] {f['title']}: {_gain(f)}, confidence "
                f"{f['confidence']}", width)
    out += _wrap("what:", f["what"], width)
    out += _wrap("why:", f["why"], width)
    out += _wrap("change:", f["change"], width)
    out += _wrap("gain:", f["gain_note"], width)
    b = f["basis"]
    for key in ("profile", "model", "assumptions"):
        if b.get(key):
            out += _wrap(f"{key}:", "; ".join(b[key]), width)
    out += _wrap("sure:", f"{f['confidence']}: {f['confidence_why']}", width)
    return out


def _crossover(v: int | None) -> str:
    return "not seen" if v is None else fmt_bytes(v)


def text(result: dict[str, Any]) -> str:
    width = max(min(shutil.get_terminal_size((110, 20)).columns, 140), 80)
    share = 100 * result["mpi_s"] / result["wall_s"] if result["wall_s"] > 0 else 0.0
    m = result["model"]
    lines = [*_para(f"mpilens advise: {result['profile']} ({result['nranks']} ranks on "
                    f"{', '.join(result['hosts'])}; {result['mpi_library'].split(',')[0]}; "
                    f"wall {fmt_time(result['wall_s'])}, MPI {share:.1f} % of it, mean per "
                    f"rank)", width),
             *_para(f"model: {m['source']}: L = {fmt_time(m['L_s'])}, g(0) = "
                    f"{fmt_time(m['g0_s'])}; eager crossover "
                    f"{_crossover(m['eager_crossover'])}, latency crossover "
                    f"{_crossover(m['latency_crossover'])}", width)]
    for w in result["warnings"]:
        lines += _para(f"warning: {w}", width)
    lines.append("")
    if not result["findings"]:
        lines.append("No finding to propose: " + (
            "the rules found only minor or withheld ones (below)."
            if result["minor"] or result["withheld"]
            else "no rule of docs/advise.md applies to this profile."))
    for i, f in enumerate(result["findings"], 1):
        lines += finding_lines(i, f, width) + [""]
    for note in result.get("notes", []):
        lines += textwrap.wrap(note, width=width, initial_indent="note: ",
                               subsequent_indent="      ") + [""]
    if result["minor"]:
        lines.append("Minor (each under 1 % of the wall time):")
        for f in result["minor"]:
            lines += _para(f"[rule {f['rule']}] {f['title']}: {_gain(f)}", width, "      ",
                           "   ")
    if result["withheld"]:
        lines += _para("Withheld, because the job is imbalance-bound (a network change would "
                       "not shorten the waiting):", width, "")
        for f in result["withheld"]:
            lines += _para(f"[rule {f['rule']}] {f['title']}: {_gain(f)}", width, "      ",
                           "   ")
    return "\n".join(lines).rstrip() + "\n"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.1f} %"


def check_text(check: dict[str, Any]) -> str:
    f = check["finding"]
    names = ", ".join(check["functions"])
    iv = check["measured_interval"]
    runs = (f"{check['runs']} of each, alternating" if check["baseline_rerun"] else
            f"{check['runs']} with the change, each against the profile (no baseline run)")
    rows = [("finding", f"[rule {f['rule']}] {f['title']}"),
            ("change applied", check["applied"]),
            ("runs", runs),
            ("decided on", f"time per call of {names}" + (
                f" (its call sites of {fmt_bytes(f['figures']['size'])} calls)"
                if check.get("size_class") is not None else "")),
            ("per call, baseline", ", ".join(fmt_time(x) for x in check["per_call_baseline_s"])),
            ("per call, changed", ", ".join(fmt_time(x) for x in check["per_call_changed_s"])),
            ("gain per pair", ", ".join(_pct(x) for x in check["relative_gains"])),
            ("measured gain", ("-" if iv is None else
                               f"{_pct(check['gain_estimate'])}, "
                               f"{100 * check['interval_coverage']:.1f} % interval "
                               f"{_pct(iv[0])} .. {_pct(iv[1])}")),
            ("predicted gain", (f"{_pct(check['predicted_relative'])} of {names}: "
                                f"{fmt_time(check['predicted_s'])} per rank in the profile, "
                                f"{fmt_time(check['predicted_at_baseline_s'])} at this "
                                f"check's baseline")),
            ("verdict", (f"{check['verdict']} ({check['verdict_why']}); exit status "
                         f"{check['exit_status']}")),
            ("wall (not used)", (f"median pair {check['baseline']} "
                                 f"{fmt_time(check['wall_before_s'])} -> {check['changed']} "
                                 f"{fmt_time(check['wall_after_s'])}: "
                                 f"{fmt_time(check['measured_s'])} "
                                 f"({check['measured_pct']:.1f} % of wall)"))]
    w = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{w}}  {v}" for k, v in rows) + "\n"
