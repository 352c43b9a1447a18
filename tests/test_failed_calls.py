"""The rule for a failed MPI call (runtime/gen/genwrap.py, timed_body): it is counted and
timed as a call, but it moved no bytes.  One wrapper body serves C and Fortran, so both
bindings follow it: err_return.c and err_return_f.F90 make the same calls under
MPI_ERRORS_RETURN, 6 of which fail (a destination or root rank that does not exist)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import read_profile, run_mpi

ZERO = [0] * 25


@pytest.mark.parametrize("prog", ["err_return", "err_return_f"])
@pytest.mark.parametrize("np_", [2, 3])
def test_failed_call_counts_but_moves_no_bytes(build: Path, tmp_path: Path, prog: str,
                                               np_: int) -> None:
    out = tmp_path / "e.prof"
    proc = run_mpi(np_, [build / "bin" / "mpilens-exec", build / "tests" / prog],
                   env={"MPILENS_OUTPUT": str(out), "MPILENS_QUIET": "1"})
    assert "errors=6 of 6 sendrecv=ok" in proc.stdout, proc.stdout
    header, ranks = read_profile(out)
    assert len(ranks) == np_
    for line in ranks:
        f = line["functions"]
        for name, calls in (("MPI_Send", 3), ("MPI_Isend", 1), ("MPI_Bcast", 2)):
            rec = f[name]
            assert rec["calls"] == calls, (name, rec)
            assert (rec["bytes_sent"], rec["bytes_recv"]) == (0, 0), (name, rec)
            assert rec["hist_send"] == ZERO and rec["hist_recv"] == ZERO, (name, rec)
        sr = f["MPI_Sendrecv"]
        assert (sr["calls"], sr["bytes_sent"], sr["bytes_recv"]) == (1, 40, 40)
        right, left = (line["rank"] + 1) % np_, (line["rank"] - 1) % np_
        # only the successful exchange has a peer: the failed sends name no real rank
        assert line["peers"] == {"sent": [[right, 1, 40]], "recv": [[left, 1, 40]]}
    agg = header["functions"]
    assert agg["MPI_Send"]["calls"] == 3 * np_ and agg["MPI_Send"]["bytes_sent"] == 0
    assert agg["MPI_Bcast"]["calls"] == 2 * np_ and agg["MPI_Bcast"]["bytes_recv"] == 0
    assert agg["MPI_Sendrecv"]["bytes_sent"] == 40 * np_
