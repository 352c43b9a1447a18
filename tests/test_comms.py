"""Per-communicator records (MPILENS_COMMS) on a real job: tests/progs/comm_two.c makes
a duplicate of MPI_COMM_WORLD ("dupw": 3 MPI_Allreduce of 8 ints) and splits it in two
halves ("half": 5 MPI_Bcast of 4 ints from its rank 0), on 4 ranks."""

from __future__ import annotations

import json

from conftest import BUILD, read_profile, run_mpi
from test_cli_support import mpilens_inproc

EXEC = BUILD / "bin" / "mpilens-exec"
PROGS = BUILD / "tests"
P = 4


def run(tmp_path, **env: str):
    out = tmp_path / f"c{len(list(tmp_path.glob('*.prof')))}.prof"
    run_mpi(P, [EXEC, PROGS / "comm_two"], env={"MPILENS_OUTPUT": str(out), "MPILENS_QUIET": "1", **env})
    return out


def test_two_communicators_exact(build, tmp_path):
    out = run(tmp_path)
    header, ranks = read_profile(out)
    assert header["comms_max"] == 32
    for r in ranks:
        rank = r["rank"]
        cm = {c["id"]: c for c in r["comms"]}
        assert r["comms_dropped"] == 0
        assert set(cm) == {0, 1, 2, 3}
        w, s, d, h = cm[0], cm[1], cm[2], cm[3]
        assert (w["kind"], w["size"], w["parent"], w["name"]) == ("world", P, None, "MPI_COMM_WORLD")
        assert (s["kind"], s["size"], s["calls"]) == ("self", 1, 0)
        # world: MPI_Comm_rank, MPI_Comm_dup, MPI_Barrier
        assert (w["calls"], w["bytes_sent"], w["bytes_recv"]) == (3, 0, 0)
        # dup: MPI_Comm_set_name, 3 MPI_Allreduce of 32 bytes, MPI_Comm_split
        assert (d["kind"], d["size"], d["parent"], d["name"]) == ("dup", P, 0, "dupw")
        assert (d["calls"], d["bytes_sent"], d["bytes_recv"]) == (5, 3 * 32, 3 * 32)
        # half (freed before MPI_Finalize, its name kept): MPI_Comm_set_name, 5 MPI_Bcast of 16 bytes
        root = rank < 2  # ranks 0 and 1 are rank 0 of their half
        assert (h["kind"], h["size"], h["parent"], h["name"]) == ("split", 2, 2, "half")
        assert (h["calls"], h["bytes_sent"], h["bytes_recv"]) == (6, 80 if root else 0, 0 if root else 80)
    data = json.loads(mpilens_inproc("report", out, "--format", "json").stdout)
    rows = {r["communicator"]: r for r in data["comms"]}
    half = rows['split of dup of world, size 2 "half"']
    assert (half["records"], half["calls"], half["bytes_sent"], half["bytes_recv"]) == (P, 6 * P, 160, 160)
    assert rows['dup of world, size 4 "dupw"']["bytes_sent"] == P * 96
    assert "Heaviest" in mpilens_inproc("report", out).stdout


def test_limit_and_off(build, tmp_path):
    _, ranks = read_profile(run(tmp_path, MPILENS_COMMS="3"))
    for r in ranks:
        cm = {c["id"]: c for c in r["comms"]}
        assert r["comms_dropped"] == 1 and set(cm) == {0, 1, 2, -1}
        assert cm[-1]["kind"] == "other" and cm[-1]["calls"] == 6  # the half's calls
    _, ranks = read_profile(run(tmp_path, MPILENS_COMMS="0"))
    assert all("comms" not in r for r in ranks)


def test_dump_names_communicators_without_mpi(build, tmp_path):
    """A SIGUSR1 snapshot names the communicators from the records' copies, taken when
    they are made, named (MPI_Comm_set_name) or freed: no MPI call from the flight
    recorder's thread (tests/progs/comm_dump.c counts the PMPI_Comm_get_name calls)."""
    out = tmp_path / "job.prof"
    proc = run_mpi(2, [EXEC, PROGS / "comm_dump", tmp_path / "job.prof.partial", tmp_path],
                   env={"MPILENS_OUTPUT": str(out), "MPILENS_QUIET": "1"})
    # on the main thread: at the start (world, self), 2 dups, 4 MPI_Comm_set_name, 1 free
    for r in range(2):
        assert f"rank {r} get_name main 9 other 0" in proc.stdout.splitlines(), proc.stdout
    want = {0: ("world", "everyone", None), 1: ("self", "MPI_COMM_SELF", None),
            2: ("dup", "dupw", 0), 3: ("dup", "gone", 2)}
    for r in range(2):
        head, (line,) = read_profile(tmp_path / f"snap-rank-{r}")
        assert (head["format"], head["rank"], head["signal"]) == ("mpilens-partial", r, "SIGUSR1")
        assert {c["id"]: (c["kind"], c["name"], c["parent"]) for c in line["comms"]} == want
        # world: MPI_Comm_rank, MPI_Comm_set_name, MPI_Comm_dup; the dup: 2 MPI_Comm_set_name, MPI_Comm_dup
        assert {c["id"]: c["calls"] for c in line["comms"]} == {0: 3, 1: 0, 2: 3, 3: 1}
    _, ranks = read_profile(out)
    for r in ranks:
        assert {c["id"]: (c["kind"], c["name"], c["parent"]) for c in r["comms"]} == want
        assert {c["id"]: c["calls"] for c in r["comms"]} == {0: 3, 1: 0, 2: 4, 3: 1}  # + MPI_Barrier

