"""The shell snippets of README.md and docs/*.md run as printed.

Every line of every ```sh block is classified by RULES (first match wins): run it,
run it only under some MPIs, or skip it with the reason it cannot run here.  A line
no rule matches fails the test, so a new snippet is either run or given a reason.

The lines that run are adapted to this machine only where the text itself says the
command is an example of its kind, and only as ADAPT lists:
- the launcher: `mpirun -np N` / `mpiexec -n N` become this MPI's launcher line for
  min(N, 4) ranks (2 cores; Open MPI as root needs --allow-run-as-root
  --oversubscribe: mpi_env.launcher_line), `build/openmpi` the build under test;
- the placeholders: `./app` is the bundled heat2d example (`args`: a small grid),
  `mpilens-<job>.prof.gz` the newest profile of the snippet's own runs (the default
  output, compressed), `before.prof.gz` / `after.prof.gz` its oldest and newest;
- benchmarks get options that bound their run time (sizes, samples), appended after
  the family's own options, so that the README's command lines still parse as printed.

Each document's lines run in order in one bash script (`set -e`), in a temporary
directory, with `mpilens` this checkout's command; then its ```python blocks, as one
program, in the same directory (docs/api.md's example reads the profile made above).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import BUILD, FLAVOUR, REPO, launcher, mpi_env, read_profile

# the documents with shell or Python blocks (a document that gains one is included)
DOCS = [d for d in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
        if re.search(r"^```(sh|bash|shell|python)\s*$", d.read_text(), re.MULTILINE)]


@dataclass(frozen=True)
class Rule:
    pattern: str           # regex searched in the line (comments removed)
    skip: str | None = None  # reason it cannot run here; None: run it
    only: tuple[str, ...] = ()  # run under these MPIs only (skip: why not the others)


T_INSTALL = ("tests/test_install.py runs the by-hand steps into a temporary prefix and checks "
             "the commands of make install (make -n); .ci/newcomer installs by hand")
T_CLUSTER = ("needs the virtual cluster (root, network namespaces; tests/cluster/vcluster): "
             "tests/test_cluster*.py run these lines")
T_SLURM = ("Slurm: needs slurmctld and slurmd on the virtual cluster; tests/test_slurm.py "
           "runs docs/slurm.md's scripts and srun lines there")
RULES = [
    Rule(r"^make (demo|test)\b", "make demo is the CI's newcomer path (.ci/run) and "
         "tests/test_cli_demo.py; make test is this suite itself"),
    Rule(r"^tests/flaky\.sh\b", "runs the suite several times under a background load "
         "(hours); tests/test_flaky.py runs it on a small test file"),
    Rule(r"^make build\b", "the build under test is made by make build before the suite"),
    Rule(r"^make install\b|^cmake --install|/opt/mpilens/", T_INSTALL),
    Rule(r"~/mpilens-venv|/path/to/mpilens", T_INSTALL),
    Rule(r"^pip install|/pip install", "installs packages: the suite runs with the test "
         "extra installed (.ci/setup --test)"),
    Rule(r"^module ", "Environment Modules: tests/test_install.py loads the installed modulefile"),
    Rule(r"^python3 bench/coll/vcluster\.py ", "the collectives benchmark brings up a 4-node "
         "virtual cluster as root and runs for tens of minutes; tests/test_bench_coll.py checks "
         "its program, statistics and table"),
    Rule(r"vcluster|\$L\b", T_CLUSTER),
    Rule(r"\bsrun\b", T_SLURM),
    # docs/slurm.md: its job script, task prolog and commands run in tests/test_slurm.py
    Rule(r"^export SLURM_|^sinfo\b|\bsbatch\b|\bsqueue\b|^set -eu$|^exec mpilens run .*\\$"
         r"|MPILENS_PREFIX:-|MPILENS_PROFILE:-on|^lib=\"\$MPILENS_PREFIX|^\[ -r \"\$lib\" \]"
         r"|^case \":\$\{LD_PRELOAD|^echo \"export |^\[ -n \"\$\{MPILENS_OUTPUT"
         r"|^ext=prof\.gz; ", T_SLURM),
    Rule(r"\.prof(\.gz)?\.partial", "a partial profile needs a job that hangs or is killed: "
         "tests/test_flight.py reports them"),
    Rule(r"--region solve", "the bundled example has no regions; tests/test_regions.py "
         "runs report --region on a program with regions"),
    Rule(r"app-\*\.prof", T_SLURM),
    Rule(r"^bench/instr/instr\.py", "counts instructions under valgrind's callgrind, minutes "
         "per function (docs/bench.md gives its figures)"),
    Rule(r"^callgrind_annotate --threshold=100 ", "reads the callgrind files of the instr.py "
         "line before it (minutes under callgrind)"),
    Rule(r"bench/reader/bench\.py", "the reader benchmark synthesizes and reads profiles of "
         "up to 1,000,000 ranks (minutes to an hour; --table-from rewrites docs/scale.md): "
         "tests/test_scale.py reads a synthesized 10,000-rank profile and checks that "
         "--table-from gives docs/scale.md's table"),
    Rule(r"bench/store/ingest\.py", "the store benchmark synthesizes a 16,384-rank profile "
         "and ingests 100,000 records (minutes); tests/test_store.py ingests real profiles"),
    Rule(r"bench/finalize/finalize\.py|^--lib OLD_BUILD/", "the finalize benchmark runs jobs of "
         "8 to 256 ranks, several times each (minutes); tests/test_finalize_write.py runs its "
         "program, tests/test_cluster.py the virtual cluster"),
    Rule(r"^mpilens bench FAMILY", "the synopsis, not a command"),
    Rule(r"--nranks 2,4,8 -- mpirun -np 8|mpiexec -n 9|--nprocs 2,4,8",
         "needs 8 or 9 ranks: beyond the 4 ranks of this 2-core CI (MPICH busy-polls); "
         "tests/test_bench_families.py runs these families on 2-4 ranks"),
    Rule(r"--reference osu", "needs the OSU micro-benchmarks, not installed here"),
    Rule(r"-ppn ", only=("mpich", "intelmpi")),
    Rule(r"^mpilens bench logp --model", "fits a model over minutes of sampling; "
         "tests/test_bench_families.py runs logp with small sizes"),
    Rule(r"^(export PATH|mpilens |mpirun |(MPILENS_[A-Z_]+=\S+ )+(mpilens|mpirun) )"),
]

SMALL = "16 4 2"  # heat2d: N, steps, transpose every
BENCH_LIMITS = {"p2p": "--max-size 64 --samples 2 --iters 2 --warmup 1",
                "overhead": "--calls 2000 --blocks 2 --pp-calls 200 --rss-calls 1000"}


def adapt(line: str) -> str:
    """The line as it runs here (the module docstring lists what changes)."""
    def _launch(m: re.Match[str]) -> str:
        return " ".join(launcher(min(int(m.group(2)), 4)))

    line = re.sub(r"\b(mpirun -np|mpiexec -n) (\d+)", _launch, line)
    line = line.replace("-ppn 16", "-ppn 4").replace("build/openmpi/", f"{BUILD}/")
    line = line.replace("./app args", f"./app {SMALL}")
    line = line.replace("mpilens-<job>.prof.gz", '"$(ls -t mpilens-*.prof.gz | head -1)"')
    line = line.replace("before.prof.gz", '"$(ls -tr mpilens-*.prof.gz | head -1)"')
    line = line.replace("after.prof.gz", '"$(ls -t mpilens-*.prof.gz | head -1)"')
    m = re.match(r"mpilens bench (\w+)", line)
    if m and m.group(1) in BENCH_LIMITS:
        opts = BENCH_LIMITS[m.group(1)]
        line = line.replace(" -- ", f" {opts} -- ", 1) if " -- " in line else f"{line} {opts}"
    return line


def snippets(doc: Path) -> list[tuple[int, str]]:
    """(line number, command) of the doc's ```sh blocks, comments and blank lines left out."""
    out, inside = [], False
    for n, raw in enumerate(doc.read_text().splitlines(), 1):
        if raw.startswith("```"):
            inside = not inside and raw.strip() in ("```sh", "```bash", "```shell")
            continue
        if inside:
            cmd = re.sub(r"\s+#.*$", "", raw).strip()
            if cmd and not cmd.startswith("#"):
                out.append((n, cmd))
    return out


def python_blocks(doc: Path) -> str:
    """The doc's ```python blocks, in order, as one program (later blocks use earlier
    names)."""
    out, inside = [], False
    for raw in doc.read_text().splitlines():
        if raw.startswith("```"):
            inside = not inside and raw.strip() == "```python"
            continue
        if inside:
            out.append(raw)
    return "\n".join(out)


def classify(line: str) -> Rule | None:
    return next((r for r in RULES if re.search(r.pattern, line)), None)


def _shim(tmp: Path) -> Path:
    """A bin/ with `mpilens` (this checkout's command) and the build's mpilens-exec."""
    bindir = tmp / "bin"
    bindir.mkdir()
    shim = bindir / "mpilens"
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} -m mpilens.cli \"$@\"\n")
    shim.chmod(0o755)
    (bindir / "mpilens-exec").symlink_to(BUILD / "bin" / "mpilens-exec")
    return bindir


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_snippets(doc: Path, tmp_path: Path, build: Path) -> None:
    lines = snippets(doc)
    script, ran, skipped = ["set -e"], [], []
    for n, line in lines:
        rule = classify(line)
        assert rule is not None, (f"{doc.name}:{n}: `{line}` is neither run nor skipped by "
                                  "tests/test_docs_snippets.py RULES: add a rule")
        if rule.skip or (rule.only and FLAVOUR not in rule.only):
            skipped.append((n, line, rule.skip or f"{'/'.join(rule.only)} only"))
            continue
        script.append(f"echo \"@@ {doc.name}:{n} $SECONDS\" >&2")
        script.append(adapt(line))
        ran.append((n, line))
    code = python_blocks(doc)
    if not ran and not code:
        # justified: every line of such a document is skipped by a RULES entry with its reason
        pytest.skip(f"{doc.name}: nothing runs here ({len(skipped)} lines skipped, each "
                    "with its reason in RULES)" if skipped else f"{doc.name}: no shell snippets")
    (tmp_path / "app").symlink_to(BUILD / "examples" / "heat2d")
    env = mpi_env({"PYTHONPATH": str(REPO / "python"), "MPILENS_BUILD": str(BUILD),
                   "COLUMNS": "100"})
    env.pop("MPILENS_OUTPUT", None)
    env.pop("MPILENS_PREFIX", None)
    env["PATH"] = f"{_shim(tmp_path)}{os.pathsep}{env['PATH']}"
    proc = subprocess.run(["bash", "-c", "\n".join(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=240, check=False)
    where = re.findall(r"^@@ (\S+) \d+$", proc.stderr, re.MULTILINE)
    print("\n".join(re.findall(r"^@@ .*$", proc.stderr, re.MULTILINE)))  # seconds per line
    assert proc.returncode == 0, (f"{where[-1] if where else doc.name} failed "
                                  f"({proc.returncode}):\nstdout:\n{proc.stdout[-3000:]}\n"
                                  f"stderr:\n{proc.stderr[-3000:]}")
    assert len(where) == len(ran)
    assert "Traceback" not in proc.stderr
    if code:  # the Python examples, after the shell lines that make their files
        py = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120, check=False)
        assert py.returncode == 0, f"{doc.name}'s python blocks failed:\n{py.stderr[-3000:]}"


LINKED_APP = r"""#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
  int rank, x = 1, sum = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int i = 0; i < 3; i++) MPI_Barrier(MPI_COMM_WORLD);
  MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("linked app: sum %d\n", sum);
  MPI_Finalize();
  return 0;
}
"""


def test_readme_link_line_makes_a_program_that_starts(build: Path, tmp_path: Path) -> None:
    """README's `mpicc app.c ... -lmpilens` line, run in a directory laid out like the
    checkout (build/<mpi> the build under test), makes a program that starts without
    LD_LIBRARY_PATH or mpilens-exec and writes a profile: the run path is in the line.
    Under Open MPI the line runs exactly as printed; under another MPI its build
    directory and its mpicc replace build/openmpi and mpicc."""
    lines = re.findall(r"`(mpicc app\.c [^`]*-lmpilens[^`]*)`", (REPO / "README.md").read_text())
    assert len(lines) == 1, lines
    line = lines[0]
    if FLAVOUR != "openmpi":
        info = json.loads((BUILD / "share/mpilens/runtime.json").read_text())
        line = line.replace("build/openmpi", f"build/{FLAVOUR}").replace(
            "mpicc ", f"{info['c_compiler']} ", 1)
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / FLAVOUR).symlink_to(BUILD)
    (tmp_path / "app.c").write_text(LINKED_APP)
    env = mpi_env()
    for k in ("LD_LIBRARY_PATH", "LD_PRELOAD", "LIBRARY_PATH", "MPILENS_OUTPUT"):
        env.pop(k, None)
    cc = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True,
                        text=True, timeout=120, check=False)
    assert cc.returncode == 0, f"{line}\n{cc.stderr}"
    run = subprocess.run([*launcher(4), "./app"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    assert "linked app: sum 4\n" in run.stdout
    profiles = list(tmp_path.glob("mpilens-*.prof.gz"))
    assert len(profiles) == 1, profiles
    header, ranks = read_profile(profiles[0])
    assert header["nranks"] == 4
    assert [(r["functions"]["MPI_Barrier"]["calls"], r["functions"]["MPI_Allreduce"]["calls"])
            for r in ranks] == [(3, 1)] * 4
