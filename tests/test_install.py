"""mpilens installed like an HPC tool: `cmake --install` to a prefix (library, launcher
prefix, benchmarks, header, pkg-config, modulefile, examples, docs), a CLI that finds
the runtime without a checkout, and the lookup order MPILENS_PREFIX > mpilens-exec on
PATH > build tree, with one line when there is none (docs/install.md)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import FLAVOUR, REPO, launcher, mpi_env, read_profile
from mpilens import __version__
from test_cli_support import per_rank_calls

NP, N, STEPS, EVERY = 4, 32, 20, 5


def _cli(args: list[str], env: dict[str, str], site: Path, cwd: Path
         ) -> subprocess.CompletedProcess:
    """The mpilens command from a package directory (site) with exactly env."""
    return subprocess.run([sys.executable, "-m", "mpilens.cli", *map(str, args)],
                          env={**env, "PYTHONPATH": str(site)}, cwd=cwd,
                          capture_output=True, text=True, timeout=300, check=False)


def _clean_env(path_first: list[Path] | None = None) -> dict[str, str]:
    env = {k: v for k, v in mpi_env().items()
           if not k.startswith("MPILENS_") and k != "PYTHONPATH"}
    dirs = [str(p) for p in path_first or []]
    env["PATH"] = os.pathsep.join([*dirs, *(d for d in env["PATH"].split(os.pathsep)
                                            if not Path(d, "mpilens-exec").exists())])
    return env


@pytest.fixture(scope="module")
def installed(build: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(prefix, site): cmake --install of this build, and a copy of the Python package
    outside the checkout (what pip install puts in site-packages)."""
    tmp = tmp_path_factory.mktemp("install")
    prefix, site = tmp / "prefix", tmp / "site"
    subprocess.run(["cmake", "--install", str(build), "--prefix", str(prefix)],
                   check=True, capture_output=True, text=True)
    shutil.copytree(REPO / "python" / "mpilens", site / "mpilens",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return prefix, site


def test_install_layout(installed: tuple[Path, Path]) -> None:
    prefix, _ = installed
    for rel in ("lib/libmpilens.so", "lib/libmpilens_read.so", "bin/mpilens-exec",
                "bin/mpilens-bench",
                "bin/mpilens-bench-alltoall", "bin/mpilens-bench-repro", "include/mpilens.h",
                "lib/pkgconfig/mpilens.pc", f"share/modulefiles/mpilens/{__version__}-{FLAVOUR}", "bin/mpilens",
                "share/mpilens/runtime.json", "share/mpilens/examples/heat2d.c",
                "share/mpilens/examples/heat2d_f.F90", "share/mpilens/docs/install.md",
                "libexec/mpilens/heat2d", "libexec/mpilens/heat2d_f"):
        assert (prefix / rel).exists(), rel
    info = json.loads((prefix / "share/mpilens/runtime.json").read_text())
    assert info["version"] == __version__ and info["mpi"] == FLAVOUR
    out = subprocess.run([str(prefix / "bin/mpilens-exec"), "--version"], capture_output=True,
                         text=True, check=True).stdout
    assert out.startswith(f"mpilens-exec {__version__} (built for ")


def test_profile_from_the_prefix_with_the_build_tree_gone(
        build: Path, installed: tuple[Path, Path], tmp_path: Path) -> None:
    """The installed runtime, found by the mpilens-exec on PATH, profiles the installed
    example with the build tree renamed away; exact counts per rank."""
    prefix, site = installed
    away = build.with_name(build.name + f".away-{os.getpid()}")
    build.rename(away)
    try:
        env = _clean_env([prefix / "bin"])
        ver = _cli(["--version"], env, site, tmp_path)
        assert ver.returncode == 0 and f"runtime: mpilens {__version__} built for " in ver.stdout
        assert f"{prefix} (found by PATH)" in ver.stdout, ver.stdout
        prof = tmp_path / "installed.prof"
        r = _cli(["run", "-o", prof, "--", *launcher(NP), prefix / "libexec/mpilens/heat2d",
                  N, STEPS, EVERY], env, site, tmp_path)
        assert r.returncode == 0, r.stderr
        assert "heat2d: " in r.stdout and " OK" in r.stdout
    finally:
        away.rename(build)
    _, ranks = read_profile(prof)
    want = per_rank_calls(STEPS, EVERY)
    assert [{f: r["functions"][f]["calls"] for f in want} for r in ranks] == [want] * NP


def test_lookup_order_and_its_one_line_error(build: Path, installed: tuple[Path, Path],
                                             tmp_path: Path) -> None:
    prefix, site = installed
    # 1. MPILENS_PREFIX wins over PATH
    r = _cli(["--version"], {**_clean_env([prefix / "bin"]), "MPILENS_PREFIX": str(build)},
             site, tmp_path)
    assert f"{build} (found by MPILENS_PREFIX)" in r.stdout, r.stdout
    # 2. then the mpilens-exec on PATH
    r = _cli(["--version"], _clean_env([prefix / "bin"]), site, tmp_path)
    assert f"{prefix} (found by PATH)" in r.stdout, r.stdout
    # 3. then this checkout's build tree (the package run from the checkout)
    if build == REPO / "build" / FLAVOUR:
        r = _cli(["--version"], {**_clean_env(), "MPILENS_MPI": FLAVOUR}, REPO / "python",
                 tmp_path)
        assert f"{build} (found by build tree)" in r.stdout, r.stdout
    # none: an installed package without a runtime says what to set, in one line
    r = _cli(["run", "--", "true"], _clean_env(), site, tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("mpilens: the mpilens runtime (libmpilens.so, mpilens-exec) "
                               "was not found: set MPILENS_PREFIX"), r.stderr
    # a wrong MPILENS_PREFIX is named
    r = _cli(["run", "--", "true"], {**_clean_env(), "MPILENS_PREFIX": str(tmp_path)},
             site, tmp_path)
    assert r.returncode == 2 and r.stderr == (
        f"mpilens: MPILENS_PREFIX='{tmp_path}' is invalid: {tmp_path}/bin/mpilens-exec not "
        f"found (expected the prefix mpilens was installed to, or a build directory)\n")


def test_pkg_config_links_a_program(installed: tuple[Path, Path], tmp_path: Path) -> None:
    """mpicc app.c $(pkg-config --cflags --libs mpilens): linked, not preloaded."""
    prefix, _ = installed
    src = tmp_path / "linked.c"
    src.write_text('#include <mpilens.h>\n#include <stdio.h>\n'
                   'int main(int c, char **v) { MPI_Init(&c, &v);\n'
                   '  printf("record bytes %zu\\n", mpilens_record_bytes ? mpilens_record_bytes()'
                   ' : 0);\n  MPI_Finalize(); return 0; }\n')
    env = {**_clean_env(), "PKG_CONFIG_PATH": str(prefix / "lib/pkgconfig")}
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "mpilens"], env=env,
                           capture_output=True, text=True, check=True).stdout.split()
    info = json.loads((prefix / "share/mpilens/runtime.json").read_text())
    subprocess.run([info["c_compiler"], str(src), "-o", str(tmp_path / "linked"), *flags],
                   env=env, check=True, capture_output=True)
    r = subprocess.run(launcher(1) + [str(tmp_path / "linked")], capture_output=True,
                       text=True, cwd=tmp_path, check=False, env={**env, "MPILENS_OUTPUT":
                                                     str(tmp_path / "linked.prof")})
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.split("record bytes ")[1]) > 0
    header, _ = read_profile(tmp_path / "linked.prof")
    assert header["nranks"] == 1


# the modulefiles load only where Environment Modules is installed; .ci/setup --test
# installs it, so CI always runs this test
@pytest.mark.skipif(not Path("/usr/share/modules/init/bash").exists(),
                    reason="Environment Modules not installed (.ci/setup --test installs it)")
def test_modulefile_sets_up_the_prefix(installed: tuple[Path, Path]) -> None:
    prefix, _ = installed
    script = (f"source /usr/share/modules/init/bash; module use {prefix}/share/modulefiles; "
              "module load mpilens || exit 1; echo PREFIX=$MPILENS_PREFIX; "
              "echo EXEC=$(command -v mpilens-exec); echo PKG=$(pkg-config --modversion mpilens)")
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                       env=_clean_env(), check=False)
    assert r.returncode == 0, r.stderr
    assert f"PREFIX={prefix}\n" in r.stdout and f"EXEC={prefix}/bin/mpilens-exec\n" in r.stdout
    assert f"PKG={__version__}\n" in r.stdout


def _venv_site(python: Path) -> Path:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return Path(subprocess.run([str(python), "-c", code],
                               capture_output=True, text=True, check=True).stdout.strip())


@pytest.fixture(scope="module")
def moved(build: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(old, new): the by-hand install of docs/install.md — cmake --install, a venv in
    P/lib/mpilens/venv holding the package — then the whole prefix moved to new.
    The package is copied into the venv's site-packages (what `pip install .` puts
    there; its dependencies come from this test environment through a .pth file, so
    that the test needs no package index); the venv has pip (ensurepip's, offline)."""
    tmp = tmp_path_factory.mktemp("moved")
    old, new = tmp / "old", tmp / "new" / "place"
    subprocess.run(["cmake", "--install", str(build), "--prefix", str(old)],
                   check=True, capture_output=True, text=True)
    venv = old / "lib" / "mpilens" / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(venv)], check=True,  # with pip (docs/api.md)
                   capture_output=True, text=True)
    site = _venv_site(venv / "bin" / "python")
    shutil.copytree(REPO / "python" / "mpilens", site / "mpilens",
                    ignore=shutil.ignore_patterns("__pycache__"))
    import rich  # the command's dependencies, from this environment's site-packages

    (site / "deps.pth").write_text(f"{Path(rich.__file__).resolve().parents[1]}\n")
    new.parent.mkdir()
    old.rename(new)
    return old, new


def test_moved_prefix_runs_its_command(moved: tuple[Path, Path], tmp_path: Path) -> None:
    """P/bin/mpilens is a relocatable script: the moved prefix's command starts, finds
    its own runtime (no PATH, no MPILENS_PREFIX) and profiles the installed example;
    a symbolic link to it elsewhere works too; nothing installed names the old prefix."""
    old, new = moved
    head = (new / "bin" / "mpilens").read_text().splitlines()[0]
    assert head == "#!/bin/sh", head  # no absolute interpreter (a venv's) in the prefix
    env = _clean_env()
    env["PATH"] = "/usr/bin:/bin"
    env.pop("PYTHONPATH", None)
    link = tmp_path / "bin" / "mpilens"
    link.parent.mkdir()
    link.symlink_to(new / "bin" / "mpilens")
    for cmd in (new / "bin" / "mpilens", link):
        ver = subprocess.run([str(cmd), "--version"], env=env, capture_output=True, text=True,
                             timeout=120, check=False)
        assert ver.returncode == 0, ver.stderr
        first, second = ver.stdout.splitlines()[:2]
        assert f"{new}/lib/mpilens/venv/" in first, first
        assert second.endswith(f"{new} (found by the prefix of the mpilens command)"), second
    prof = tmp_path / "moved.prof"
    run_env = {**mpi_env(), **{k: v for k, v in env.items() if k != "PATH"}}
    run_env = {k: v for k, v in run_env.items() if not k.startswith("MPILENS_")}
    r = subprocess.run([str(new / "bin" / "mpilens"), "run", "-o", str(prof), "--",
                        *launcher(NP), str(new / "libexec/mpilens/heat2d"), str(N), str(STEPS),
                        str(EVERY)], env=run_env, cwd=tmp_path, capture_output=True, text=True,
                       timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    assert f"see it with: {new}/bin/mpilens report" in r.stderr, r.stderr
    _, ranks = read_profile(prof)
    want = per_rank_calls(STEPS, EVERY)
    assert [{f: x["functions"][f]["calls"] for f in want} for x in ranks] == [want] * NP
    for d in ("bin", "share/modulefiles", "lib/pkgconfig", "share/mpilens/runtime.json"):
        for f in [new / d] if (new / d).is_file() else (new / d).rglob("*"):
            if f.is_file() and not f.is_symlink():
                assert str(old).encode() not in f.read_bytes(), f


def _wheel(where: Path, name: str, value: int) -> Path:
    """A pure-Python wheel of one module, `name`, with VALUE = value (installs offline)."""
    dist = f"{name}-1.0"
    files = {f"{name}.py": f"VALUE = {value}\n",
             f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\n"
                                          "Version: 1.0\n",
             f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: mpilens-test\n"
                                       "Root-Is-Purelib: true\nTag: py3-none-any\n"}
    record = []
    for rel, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest())
        record.append(f"{rel},sha256={digest.rstrip(b'=').decode()},{len(text.encode())}")
    files[f"{dist}.dist-info/RECORD"] = "\n".join([*record, f"{dist}.dist-info/RECORD,,"]) + "\n"
    whl = where / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        for rel, text in files.items():
            z.writestr(rel, text)
    return whl


def test_moved_prefix_venv_takes_packages_as_the_docs_say(moved: tuple[Path, Path],
                                                          tmp_path: Path) -> None:
    """docs/api.md's `P/lib/mpilens/venv/bin/python -m pip install pandas`, run in the
    moved prefix (a local wheel for pandas: no package index), installs into the moved
    venv, where the command's Python imports it (the venv's bin/pip would name the
    old prefix)."""
    old, new = moved
    doc = (REPO / "docs" / "api.md").read_text()
    cmd = re.findall(r"`(P/lib/mpilens/venv/bin/python -m pip install pandas)`", doc)
    assert len(cmd) == 1, cmd
    whl = _wheel(tmp_path, "mpilens_tiny", 42)
    argv = cmd[0].replace("P/", f"{new}/").replace("pandas", str(whl)).split()
    env = {k: v for k, v in _clean_env().items() if k not in ("PIP_INDEX_URL", "VIRTUAL_ENV")}
    r = subprocess.run([*argv, "--no-index", "--disable-pip-version-check"], env=env,
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    py = new / "lib/mpilens/venv/bin/python"
    got = subprocess.run([str(py), "-c", "import mpilens_tiny; print(mpilens_tiny.VALUE, "
                          "mpilens_tiny.__file__)"], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert got[0] == "42" and got[1].startswith(f"{new}/lib/mpilens/venv/"), got
    assert not old.exists()


def _make_n_install(prefix: Path, extra: list[str]) -> list[str]:
    """The commands `make install` runs after set-up (make -n _install), one a line."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHON3", "MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    r = subprocess.run(["make", "-n", "-C", str(REPO), "--no-print-directory", "_install",
                        f"PREFIX={prefix}", "MPI=openmpi", *extra], env=env,
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def test_make_install_venv_python_every_user_can_run(tmp_path: Path) -> None:
    """make install makes the prefix's venv with /usr/bin/python3 when there is one (not
    the python3 first on PATH, a pyenv one in a private home here); PYTHON3= chooses;
    then pip by the venv's python."""
    prefix = tmp_path / "p"
    venv = prefix / "lib/mpilens/venv"
    want = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else "python3"
    lines = _make_n_install(prefix, [])
    assert f"{want} -m venv --clear {venv}" in lines, lines
    assert f"{venv}/bin/python -m pip install -q --disable-pip-version-check ." in lines
    lines = _make_n_install(prefix, ["PYTHON3=/opt/py/bin/python3"])
    assert f"/opt/py/bin/python3 -m venv --clear {venv}" in lines, lines


def test_command_names_a_venv_python_it_cannot_run(installed: tuple[Path, Path],
                                                   tmp_path: Path) -> None:
    """P/bin/mpilens without its venv, or with a venv whose python links to one that
    cannot be run (a pyenv python3 under a 0700 home, for another user), says so in one
    line, naming the link's end, and how to remake the venv; exit status 2."""
    prefix, _ = installed
    p = tmp_path / "prefix"
    (p / "bin").mkdir(parents=True)
    shutil.copy2(prefix / "bin/mpilens", p / "bin/mpilens")
    py3 = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else "python3"
    venv = p / "lib/mpilens/venv"
    how = (f"make the command's environment with {py3} -m venv --clear {venv} && "
           f"{venv}/bin/python -m pip install <mpilens checkout> (docs/install.md)\n")
    env = {"PATH": "/usr/bin:/bin"}
    r = subprocess.run([str(p / "bin/mpilens"), "--version"], env=env, capture_output=True,
                       text=True, check=False)
    assert (r.returncode, r.stderr) == (2, f"mpilens: {venv}/bin/python not found: {how}")
    private = tmp_path / "home" / "bin" / "python3.11"
    private.parent.mkdir(parents=True)
    private.write_text("")  # not executable: what another user meets under a 0700 home
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python3").symlink_to(private)
    (venv / "bin" / "python").symlink_to("python3")
    r = subprocess.run([str(p / "bin/mpilens"), "--version"], env=env, capture_output=True,
                       text=True, check=False)
    assert (r.returncode, r.stderr) == (
        2, f"mpilens: {venv}/bin/python links to {private}, which cannot be run: {how}")


# as above: needs Environment Modules, which CI installs
@pytest.mark.skipif(not Path("/usr/share/modules/init/bash").exists(),
                    reason="Environment Modules not installed (.ci/setup --test installs it)")
def test_modules_per_mpi_conflict(moved: tuple[Path, Path], tmp_path: Path) -> None:
    """Each MPI's prefix has its module, mpilens/<version>-<mpi>; loaded from the moved
    prefix it sets the moved paths; a second MPI's mpilens module cannot be loaded
    beside it (conflict), and the first stays in force."""
    _, new = moved
    other = "mpich" if FLAVOUR != "mpich" else "openmpi"
    name = f"mpilens/{__version__}-{FLAVOUR}"
    assert (new / "share/modulefiles" / name).is_file()
    # the other MPI's install, as its cmake --install writes it (the same file, its name)
    mods = tmp_path / "other" / "share" / "modulefiles" / "mpilens"
    mods.mkdir(parents=True)
    shutil.copy(new / "share/modulefiles" / name, mods / f"{__version__}-{other}")
    script = (f"source /usr/share/modules/init/bash; module use {new}/share/modulefiles; "
              f"module load {name} || exit 1; echo PREFIX=$MPILENS_PREFIX; "
              "echo CMD=$(command -v mpilens); mpilens --version | tail -1; "
              f"module use {mods.parent}; module load mpilens/{__version__}-{other}; "
              "echo SECOND=$?; echo PREFIX=$MPILENS_PREFIX; module -t list 2>&1")
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                       env={k: v for k, v in _clean_env().items() if k != "PYTHONPATH"},
                       check=False, timeout=120)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[:2] == [f"PREFIX={new}", f"CMD={new}/bin/mpilens"], r.stdout
    assert out[2].endswith(f"{new} (found by MPILENS_PREFIX)"), r.stdout
    assert out[3] != "SECOND=0" and out[4] == f"PREFIX={new}", r.stdout + r.stderr
    assert "conflict" in r.stderr
    assert out[5:] == [name] or out[6:] == [name], r.stdout + r.stderr
