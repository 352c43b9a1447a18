"""`advise --check` on the job as launched: a placement's launcher options merged with
the line's own mapping options, per launcher (python/mpilens/advise/mapping.py), and a
failed run's whole error.  Given lines, exact results; no MPI is started."""

from __future__ import annotations

from mpilens.advise import check, mapping


def test_open_mpi_mapping_options_give_way_to_the_rankfile() -> None:
    line = ["mpirun", "-np", "4", "--map-by", "ppr:2:node", "--bind-to", "core", "-bynode",
            "--rank-by=slot", "./app", "--map-by", "x"]
    got, removed = mapping.merge(line, ["--rankfile", "R"], "openmpi")
    # the application's own arguments are never touched
    assert got == ["mpirun", "--rankfile", "R", "-np", "4", "--bind-to", "core", "./app",
                   "--map-by", "x"]
    assert removed == ["--map-by", "ppr:2:node", "-bynode", "--rank-by=slot"]


def test_hydra_host_options_give_way_to_the_machine_file() -> None:
    line = ["mpiexec", "-f", "hosts", "-ppn", "2", "-n", "4", "./app"]
    got, removed = mapping.merge(line, ["-f", "M"], "hydra")
    assert got == ["mpiexec", "-f", "M", "-n", "4", "./app"]
    assert removed == ["-f", "hosts", "-ppn", "2"]


def test_srun_gets_an_arbitrary_distribution_and_a_hostfile() -> None:
    finding = {"key": "placement", "figures": {"mapping_after": ["n0", "n0", "n1", "n1"]},
               "apply": {"env": {}, "launcher_args": ["--rankfile", "{rankfile}"],
                         "files": {"rankfile": "rank 0=n0 slot=0\n"}}}
    line = ["srun", "-N", "2", "--distribution=block", "-n", "4", "./app"]
    apply = check.placement_change(finding, line, None, "openmpi")
    assert apply == {"env": {"SLURM_HOSTFILE": "{hostfile}"}, "mapping": "srun",
                     "launcher_args": ["--distribution=arbitrary"],
                     "files": {"hostfile": "n0\nn0\nn1\nn1\n"}}
    got, removed = mapping.merge(line, apply["launcher_args"], "srun")
    assert got == ["srun", "--distribution=arbitrary", "-N", "2", "-n", "4", "./app"]
    assert removed == ["--distribution=block"]


def test_a_rankfile_in_the_syntax_of_the_launcher_given() -> None:
    finding = {"key": "placement", "figures": {"mapping_after": ["a", "b", "a", "b"]},
               "apply": {"env": {}, "launcher_args": ["-f", "{rankfile}"],
                         "files": {"rankfile": "a:1\nb:1\na:1\nb:1\n"}}}
    apply = check.placement_change(finding, ["mpirun.openmpi", "-np", "4", "./app"], None,
                                   "mpich")
    assert apply["launcher_args"] == ["--rankfile", "{rankfile}"]
    assert apply["files"]["rankfile"] == ("rank 0=a slot=0\nrank 1=b slot=0\n"
                                          "rank 2=a slot=1\nrank 3=b slot=1\n")
    same = check.placement_change(finding, ["mpiexec.hydra", "-n", "4", "./app"], None, "mpich")
    assert same == {**finding["apply"], "mapping": "hydra"}


def test_a_failed_runs_whole_error_is_shown() -> None:
    """Open MPI frames its messages with rows of dashes: the last line alone said nothing.
    The error output is shown whole (its last 40 lines), without blank and frame lines."""
    err = ("-" * 74 + "\nmpirun noticed that process rank 1 with PID 0 on node vm exited on "
           "signal 9 (Killed).\n\n" + "-" * 74 + "\n")
    assert check.error_text(err) == ("mpirun noticed that process rank 1 with PID 0 on node vm "
                                     "exited on signal 9 (Killed).")
    many = "".join(f"line {i}\n" for i in range(50))
    assert check.error_text(many).splitlines() == ["[10 earlier lines]",
                                                   *[f"line {i}" for i in range(10, 50)]]


def test_check_rule_chooses_among_findings_minor_and_withheld() -> None:
    """--check applies the top finding whose change needs no code edit; --check-rule R
    the highest-ranked of rule R with one, minor and withheld findings included."""
    from mpilens.advise.engine import top_applicable

    def f(rule: int, title: str, apply: bool) -> dict[str, object]:
        return {"rule": rule, "title": title, "apply": {"env": {"X": "1"}} if apply else None}

    result = {"findings": [f(5, "imbalance", False), f(2, "latency", False), f(3, "a", True)],
              "minor": [f(3, "b", True), f(4, "placement", True)],
              "withheld": [f(1, "rails", True)]}
    assert top_applicable(result)["title"] == "a"
    assert top_applicable(result, 3)["title"] == "a"
    assert top_applicable(result, 4)["title"] == "placement"
    assert top_applicable(result, 1)["title"] == "rails"
    assert top_applicable(result, 2) is None  # a code change: nothing --check can apply
    none = {"findings": [f(5, "imbalance", False)], "minor": [f(3, "b", True)], "withheld": []}
    assert top_applicable(none) is None and top_applicable(none, 3)["title"] == "b"
