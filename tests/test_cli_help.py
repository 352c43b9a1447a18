"""Every `--help` of the `mpilens` command works: the test walks the whole argparse
tree (sub-commands, their sub-commands, the bench families' option parsers) and
runs `--help` at each node in this process; each prints its usage and exits 0.

And the command lines the README prints, as printed: `mpilens bench p2p -- mpirun
-np 2` (no option before `--`) reaches the launcher, not mpilens-bench's options."""

from __future__ import annotations

import argparse

import pytest
from mpilens import cli
from mpilens.commands import bench as bench_cmd
from test_cli_support import mpilens_inproc


def _walk(parser: argparse.ArgumentParser, path: list[str]) -> list[list[str]]:
    """The argv of every node of the parser tree below (and including) path."""
    out = [path]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out += _walk(sub, [*path, name])
    return out


NODES = _walk(cli.build_parser(), [])


def test_tree_has_every_command() -> None:
    names = {tuple(n) for n in NODES}
    for name in cli.COMMANDS:
        assert (name,) in names, f"mpilens {name} is not in the parser"


@pytest.mark.parametrize("argv", NODES, ids=lambda a: " ".join(a) or "mpilens")
def test_help(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    proc = mpilens_inproc(*argv, "--help")
    wide = [ln for ln in proc.stdout.splitlines() if len(ln) > 80]
    assert not wide, wide  # descriptions too fit an 80-column terminal
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("usage: mpilens" + "".join(f" {a}" for a in argv)), \
        proc.stdout[:300]
    assert "Traceback" not in proc.stderr and proc.stderr == ""


@pytest.mark.parametrize("family", bench_cmd.C_FAMILIES)
def test_bench_family_help(family: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`mpilens bench p2p --help`: the family's own options (bench_cmd.FAMILY_OPTIONS)."""
    monkeypatch.setenv("COLUMNS", "80")
    proc = mpilens_inproc("bench", family, "--help")
    assert max(len(ln) for ln in proc.stdout.splitlines()) <= 80
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith(f"usage: mpilens bench {family} [options]")
    assert bench_cmd.FAMILY_OPTIONS[family].split()[0] in " ".join(proc.stdout.split())


def test_launcher_after_double_dash_without_options() -> None:
    """argparse drops the `--` of `bench p2p -- mpirun -np 2`; cli.parse keeps it, so
    the launcher line is told apart from the family's options (also for run and tune)."""
    p = cli.build_parser()
    a = cli.parse(p, ["bench", "p2p", "--", "mpirun", "-np", "2"])
    assert a.rest == ["--", "mpirun", "-np", "2"]
    a = cli.parse(p, ["bench", "p2p", "--samples", "2", "--", "mpirun", "-np", "2"])
    assert a.rest == ["--samples", "2", "--", "mpirun", "-np", "2"]
    a = cli.parse(p, ["run", "--", "mpirun", "-np", "2", "./app", "--", "x"])
    assert a.command == ["--", "mpirun", "-np", "2", "./app", "--", "x"]
    a = cli.parse(p, ["tune", "--np", "2", "--", "mpiexec", "-n", "{np}"])
    assert a.launcher == ["--", "mpiexec", "-n", "{np}"] and a.np == "2"
    a = cli.parse(p, ["advise", "x.prof", "--", "mpirun", "-np", "2", "./app"])
    assert a.rest == ["--", "mpirun", "-np", "2", "./app"] and a.profile == "x.prof"
    # `--` of the other commands keeps argparse's meaning (what follows is positional)
    a = cli.parse(p, ["report", "--", "-odd.prof"])
    assert a.profile == ["-odd.prof"]


@pytest.mark.parametrize("family", sorted(bench_cmd.MODULE_FAMILIES))
def test_bench_module_help_fits_80(family: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`mpilens bench alltoall --help`, `bench repro --help`: their descriptions fit."""
    monkeypatch.setenv("COLUMNS", "80")
    proc = mpilens_inproc("bench", family, "--help")
    assert proc.returncode == 0 and proc.stdout.startswith(f"usage: mpilens bench {family}")
    assert max(len(ln) for ln in proc.stdout.splitlines()) <= 80
