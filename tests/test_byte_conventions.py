"""`mpilens report --format csv --bytes-as mpip`: mpiP's "sent" bytes per function, checked
against what mpiP's own rule (count argument x send type size, on every calling rank;
docs/runtime.md, byte conventions) gives for each call of tests/progs/prof_c.c."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from conftest import read_profile, run_mpi
from test_cli_support import mpilens_inproc

P = 4
RING = (0, 1, 3, 8, 100, 1000, 5000, 70000)  # prof_c's Sendrecv sizes


def mpip_per_rank(r: int) -> dict[str, int | None]:
    """mpiP's figure for each call prof_c.c makes on rank r (None: mpiP reports no sent
    bytes for the function: not wrapped, or in its I/O or one-sided section)."""
    return {
        "MPI_Sendrecv": sum(RING) + 64,            # the ring, then the split communicator
        "MPI_Send": (3 * 128 if r % 2 == 0 and r + 1 < P else 0) + 8,
        "MPI_Isend": 2 * 16 + 12,
        "MPI_Bcast": 10 * 4,                       # MPI_Bcast(i10, 10, MPI_INT): every rank
        "MPI_Ibcast": 5 * 8,
        "MPI_Reduce": 24, "MPI_Allreduce": 8 + 16, "MPI_Iallreduce": 8, "MPI_Scan": 8,
        "MPI_Gather": 2 * 4,                       # MPI_Gather(g2, 2, MPI_INT, ...)
        "MPI_Gatherv": 4 * (r + 1),
        "MPI_Scatter": 3 * 4,                      # MPI_Scatter(big, 3, MPI_INT, ...) everywhere
        "MPI_Allgather": 4,
        # MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ...): mpiP reads the ignored
        # arguments (0); mpilens counts the rank's own block (docs/runtime.md says so)
        "MPI_Allgatherv": 2 * 4,
        "MPI_Alltoall": 2 * 4,                     # one block: MPI_Alltoall(a2s, 2, MPI_INT, ...)
        "MPI_Alltoallv": 0, "MPI_Recv": 0, "MPI_Irecv": 0, "MPI_Startall": 0,
        "MPI_Send_init": 0, "MPI_Recv_init": 0,
        "MPI_Reduce_scatter_block": None, "MPI_Exscan": None,     # not wrapped by mpiP
        "MPI_Put": None, "MPI_Get": None,                          # its one-sided section
        "MPI_File_write_at": None, "MPI_File_read_at": None,       # its I/O section
    }


def test_mpip_bytes_of_every_function(build: Path, tmp_path: Path) -> None:
    out = tmp_path / "p.prof"
    run_mpi(P, [build / "bin" / "mpilens-exec", build / "tests" / "prof_c", tmp_path / "io.dat"],
            env={"MPILENS_OUTPUT": str(out), "MPILENS_QUIET": "1"})
    header, _ = read_profile(out)
    proc = mpilens_inproc("report", out, "--format", "csv", "--bytes-as", "mpip")
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert "bytes_sent" not in rows[0] and "bytes_recv" not in rows[0]
    got = {r["function"]: r["mpip_bytes_sent"] for r in rows}
    assert set(got) == set(header["functions"])
    want: dict[str, str] = {}
    for name in header["functions"]:
        per = [mpip_per_rank(r).get(name, 0) for r in range(P)]
        want[name] = "" if per[0] is None else str(sum(per))
    assert got == want
    # the same table in mpilens's convention keeps its own columns
    mine = list(csv.DictReader(io.StringIO(mpilens_inproc("report", out, "--format", "csv").stdout)))
    a2a = next(r for r in mine if r["function"] == "MPI_Alltoall")
    assert int(a2a["bytes_sent"]) == P * int(got["MPI_Alltoall"])  # P blocks against one


def test_bytes_as_needs_the_csv_function_table(build: Path, tmp_path: Path) -> None:
    prof = tmp_path / "x.prof"
    prof.write_text("not a profile\n")
    for extra in (("--format", "json"), ("--format", "csv", "--ranks"), ()):
        proc = mpilens_inproc("report", prof, *extra, "--bytes-as", "mpip")
        assert proc.returncode == 2 and proc.stderr == (
            "mpilens: --bytes-as mpip applies to the CSV function table (--format csv, "
            "without --ranks or --function)\n")
