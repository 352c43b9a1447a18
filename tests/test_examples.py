"""The bundled examples compute a checkable answer and fail loudly when it is wrong."""

from __future__ import annotations

import pytest
from conftest import run_mpi
from test_cli_support import example

NAMES = ["heat2d", "heat2d_f"]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("nranks", [1, 4])
def test_example_is_correct(build, name: str, nranks: int) -> None:
    proc = run_mpi(nranks, [example(name), 32, 20, 5])
    check_answer(proc.stdout, name, nranks)


def check_answer(stdout: str, name: str, nranks: int) -> None:
    """The last line of `<example> 32 20 5`: the run's shape and its own check's verdict."""
    line = stdout.strip().splitlines()[-1]
    assert line.startswith(f"{name}: N=32 ranks={nranks} steps=20 transposes=4")
    assert line.endswith("OK")


@pytest.mark.parametrize("name", NAMES)
def test_example_detects_a_wrong_answer(build, name: str) -> None:
    proc = run_mpi(2, [example(name), 16, 4, 2, 1], check=False)
    assert proc.returncode == 1
    assert "FAILED" in proc.stdout


@pytest.mark.parametrize("name", NAMES)
def test_example_rejects_a_grid_it_cannot_split(build, name: str) -> None:
    proc = run_mpi(4, [example(name), 30, 4, 2], check=False)
    assert proc.returncode == 2
    assert "must be a positive multiple" in proc.stderr


# The rails study's mini-apps (tests/cluster/rails_study): their own checks pass, and fail
# when one received element is corrupted on purpose.
STUDY_APPS = {"bigexchange": ["1", "3"], "smallbcast": ["300"]}


@pytest.mark.parametrize("name", sorted(STUDY_APPS))
def test_study_app_checks_its_answer(build, name: str) -> None:
    proc = run_mpi(3, [example(name), *STUDY_APPS[name]])
    line = proc.stdout.strip().splitlines()[-1]
    assert line.startswith(f"{name}: ranks=3 ") and line.endswith(" wrong=0 OK")
    bad = run_mpi(3, [example(name), *STUDY_APPS[name], "1"], check=False)
    assert bad.returncode != 0 and bad.stdout.strip().splitlines()[-1].endswith("FAILED")
    usage = run_mpi(2, [example(name), "0"], check=False)
    assert usage.returncode != 0 and f"{name}: usage: {name} " in usage.stderr
