"""The MPI on this machine, its launcher, and running jobs as an HPC user expects.

One place for what every job-running command (run, demo, bench, tune) and the
tests need:

- which MPI is selected: ``MPILENS_MPI`` if set, else the one whose ``mpirun``
  (or ``mpiexec``) comes first on ``PATH``, told by its own ``--version`` output
  and its directory (Open MPI, MPICH/hydra, Intel MPI);
- the launcher line for N ranks on this host, with the flags that MPI needs
  (Open MPI: ``--oversubscribe``, and ``--allow-run-as-root`` as root;
  hydra: nothing extra);
- the environment a job of that MPI needs (Intel MPI: its prefix and
  libraries);
- ``run_job``: start a job and pass on every signal a batch system or a
  terminal sends (SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT, SIGCONT,
  SIGTSTP) to the launcher, wait for it, and return its exit status, as
  ``mpirun`` would (128 + N when it was killed by signal N).

Run as ``python -m mpilens.mpi_env flavour|prefix|launcher N`` it prints what it
detected (the Makefile uses this after set-up has installed the MPIs).
Only the standard library is imported here.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

from .errors import JobStopped, UserError

FLAVOURS = ("openmpi", "mpich", "intelmpi")
# Signals passed on to the launcher.  SIGKILL and SIGSTOP cannot be caught.
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2,
             signal.SIGQUIT, signal.SIGCONT, signal.SIGTSTP)
# Signals a terminal sends to its whole foreground process group: the launcher,
# in our group, has had them already when they come from the kernel.
_FROM_TTY = frozenset({signal.SIGINT, signal.SIGQUIT, signal.SIGTSTP, signal.SIGHUP})
_SI_KERNEL = 0x80
_SI_USER = 0
_WAITED = (*FORWARDED, signal.SIGCHLD)
# Signals that ask a job to end (SIGUSR1/2 are the application's: Slurm's --signal).
_ENDING = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


# ---------------------------------------------------------------- detection

@functools.lru_cache(maxsize=32)
def _version_text(path: str) -> str:
    try:
        r = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=20,
                           stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (r.stdout or "") + (r.stderr or "")


def flavour_of(prog: str) -> str | None:
    """openmpi / mpich / intelmpi for an mpirun or mpiexec (name or path), None if unknown."""
    path = shutil.which(prog)
    if not path:
        return None
    real = Path(path).resolve()
    base = real.name
    if base in ("orterun", "prterun", "opal_wrapper") or base.endswith(".openmpi"):
        return "openmpi"
    # Intel MPI's mpirun is a script that calls whatever mpiexec.hydra is first on PATH:
    # its own directory tells it apart from MPICH's.
    if (real.parent / "impi_info").exists() or (Path(path).parent / "impi_info").exists():
        return "intelmpi"
    if base.endswith(".mpich"):
        return "mpich"
    text = _version_text(path)
    if "Open MPI" in text or "OpenRTE" in text:
        return "openmpi"
    if "Intel(R) MPI" in text:
        return "intelmpi"
    if "HYDRA" in text or "MPICH" in text:
        return "mpich"
    return None


def detect() -> str:
    """The selected MPI: MPILENS_MPI, else the flavour of the first mpirun/mpiexec on PATH,
    else an MPI whose Debian launcher name exists; "default" when there is none."""
    flav = os.environ.get("MPILENS_MPI", "").strip()
    if flav:
        if flav not in (*FLAVOURS, "default"):
            raise UserError(f"MPILENS_MPI='{flav}' is invalid: expected "
                            f"{', '.join(FLAVOURS)}")
        return flav
    for prog in ("mpirun", "mpiexec"):
        f = flavour_of(prog)
        if f:
            return f
    for name in ("openmpi", "mpich"):
        if shutil.which(f"mpirun.{name}") or shutil.which(f"mpiexec.{name}"):
            return name
    return "default"


def intel_prefix() -> Path | None:
    """Intel MPI's prefix: I_MPI_ROOT, else the directory above its mpirun on PATH."""
    root = os.environ.get("I_MPI_ROOT")
    if root:
        return Path(root)
    for prog in ("mpirun", "mpiexec", "mpiexec.hydra"):
        path = shutil.which(prog)
        if path and flavour_of(path) == "intelmpi":
            return Path(path).parent.parent
    return None


def launcher_prog(flavour: str) -> str:
    """The launcher of one MPI: the mpirun/mpiexec on PATH when it is that MPI's,
    else its Debian name (mpirun.openmpi, mpiexec.mpich) or Intel MPI's own."""
    for prog in ("mpirun", "mpiexec"):
        if flavour_of(prog) == flavour:
            return prog
    if flavour == "openmpi" and shutil.which("mpirun.openmpi"):
        return "mpirun.openmpi"
    if flavour == "mpich" and shutil.which("mpiexec.mpich"):
        return "mpiexec.mpich"
    if flavour == "intelmpi":
        prefix = intel_prefix()
        if prefix and (prefix / "bin" / "mpiexec.hydra").exists():
            return str(prefix / "bin" / "mpiexec.hydra")
    for prog in ("mpirun", "mpiexec"):
        if shutil.which(prog):
            return prog
    raise UserError("no MPI launcher (mpirun or mpiexec) found on PATH: install an MPI "
                    "(make setup does) or give the launcher line after --")


def launcher_line(np_: int, flavour: str | None = None) -> list[str]:
    """mpirun/mpiexec for np_ ranks on this host, with the flags this MPI needs to run
    them here: Open MPI refuses root and more ranks than cores unless told."""
    flavour = flavour or detect()
    prog = launcher_prog(flavour)
    if flavour_of(prog) == "openmpi" or (flavour == "openmpi" and flavour_of(prog) is None):
        extra = ["--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
        return [prog, *extra, "-np", str(np_)]
    return [prog, "-n", str(np_)]


def job_env(flavour: str | None = None, base: dict[str, str] | None = None,
            allow_root: bool = False) -> dict[str, str]:
    """The environment for a job of this MPI on this host: base (default os.environ)
    plus what the MPI needs and the caller has not set itself.  allow_root: let Open
    MPI run as root whatever the launcher line says (for lines the user gave to
    bench and tune; launcher_line() has the flag itself)."""
    flavour = flavour or detect()
    env = dict(os.environ if base is None else base)
    if flavour == "openmpi" and os.geteuid() == 0 and allow_root:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    if flavour == "intelmpi":
        prefix = intel_prefix()
        if prefix:
            env.setdefault("I_MPI_ROOT", str(prefix))
            libs = f"{prefix}/lib:{prefix}/lib/libfabric"
            old = env.get("LD_LIBRARY_PATH")
            env["LD_LIBRARY_PATH"] = libs + (f":{old}" if old else "")
    return env


# ---------------------------------------------------------------- running jobs

def exit_status(returncode: int) -> int:
    """A child's status as a shell and mpirun report it: 128 + N when killed by signal N."""
    return returncode if returncode >= 0 else 128 - returncode


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _reached_launcher(sig: int, code: int, sender: int, same_group: bool) -> bool:
    """Whether a signal we received has reached the launcher by the same act: the
    terminal's signals to the foreground group, a signal from our group's leader
    when that is `timeout` (without --foreground it leads the group, signals its child
    and then the group), one from slurmstepd (it signals every process of the step).
    A signal sent to the group by anything else cannot be told from one sent to us
    alone, and is passed on."""
    if code == _SI_KERNEL:
        return same_group and sig in _FROM_TTY
    if code != _SI_USER or sender <= 0:
        return False
    name = _comm(sender)
    if name == "timeout":
        return same_group and sender == os.getpgrp()
    return name == "slurmstepd"


class _Forwarder:
    """Passes the FORWARDED signals this process receives on to one child process.

    The signals are blocked in the calling thread (and in threads it starts) and
    collected by a thread with sigwaitinfo, which knows where each came from: a
    signal that has reached the launcher already by the same act (_reached_launcher)
    is not sent twice (a second Ctrl-C or SIGTERM soon after the first makes Open
    MPI's mpirun SIGKILL its ranks, before their flight recorders dump).  SIGTSTP also
    stops this process, as a shell expects."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[Any] | None = None
        self.received: list[int] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._old_mask: set[int] | None = None

    def __enter__(self) -> Self:
        self._old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, _WAITED)
        return self

    def child_setup(self) -> None:
        """preexec_fn: the launcher starts with the signal mask we were started with."""
        if self._old_mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, self._old_mask)

    def attach(self, proc: subprocess.Popen[Any]) -> None:
        self.proc = proc
        self._thread = threading.Thread(target=self._loop, name="mpilens-signals", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        # sigwaitinfo, not sigtimedwait: CPython's sigtimedwait returns an uninitialised
        # siginfo when it was interrupted past its deadline, as it is when this process
        # stops on SIGTSTP.  SIGCHLD (the launcher ended) and __exit__ wake the loop.
        while not self._stop.is_set():
            info = signal.sigwaitinfo(_WAITED)
            if info.si_signo in FORWARDED and not self._stop.is_set():
                self._deliver(info.si_signo, info.si_code, info.si_pid)

    def _deliver(self, sig: int, code: int, sender: int = 0) -> None:
        proc = self.proc
        self.received.append(sig)
        same_group = proc is not None and _pgid(proc.pid) == os.getpgrp()
        already = _reached_launcher(sig, code, sender, same_group)
        if proc is not None and proc.poll() is None and not already:
            try:
                os.kill(proc.pid, sig)
            except ProcessLookupError:
                pass
        if sig == signal.SIGTSTP:
            os.kill(os.getpid(), signal.SIGSTOP)  # stopped like the job; SIGCONT resumes both

    def stopped_status(self, status: int) -> int | None:
        """The status of a job that a passed-on signal stopped, None if none did: the
        launcher's own, or 128 + N when it says 0 (hydra's mpiexec may, depending on
        timing) — a stopped job is not a success."""
        ending = self.ending()
        if not ending:
            return None
        return status or 128 + ending[0]

    def ending(self) -> list[int]:
        """The signals passed on that ask a job to end, in the order received."""
        return [s for s in self.received if s in _ENDING]

    def raise_if_stopped(self, status: int) -> None:
        """JobStopped when a signal that ends jobs was passed on."""
        stopped = self.stopped_status(status)
        if stopped is not None:
            raise JobStopped(stopped, signal.Signals(self.ending()[0]).name)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            if self._thread.ident is not None and self._thread.is_alive():
                signal.pthread_kill(self._thread.ident, signal.SIGCHLD)
            self._thread.join()
        # Signals that arrived after the launcher ended: the job is over, nothing to pass on.
        for sig in signal.sigpending() & set(_WAITED):
            signal.sigtimedwait([sig], 0)
        if self._old_mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, self._old_mask)


def _pgid(pid: int) -> int:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return -1


Forwarder = _Forwarder  # the type of forwarding()'s value, for callers' annotations


@contextmanager
def forwarding() -> Iterator[_Forwarder]:
    """`with forwarding() as fw: proc = fw.popen(cmd, ...)`: signals go to proc until the
    block ends (wait for proc inside it)."""
    with _Forwarder() as fw:
        yield fw


def popen(fw: _Forwarder, cmd: list[str], **kwargs: Any) -> subprocess.Popen[Any]:
    """Start cmd with the signal mask restored and attach it to the forwarder."""
    try:
        # preexec_fn only restores the signal mask; the forwarder's thread starts after.
        proc = subprocess.Popen(cmd, preexec_fn=fw.child_setup, **kwargs)  # noqa: PLW1509
    except FileNotFoundError:
        raise UserError(f"{cmd[0]}: command not found") from None
    except PermissionError:
        raise UserError(f"{cmd[0]}: permission denied") from None
    fw.attach(proc)
    return proc


def run_job(cmd: list[str], env: dict[str, str] | None = None,
            timeout: float | None = None, stop_raises: bool = False,
            **kwargs: Any) -> subprocess.CompletedProcess[Any]:
    """subprocess.run for jobs: signals are passed on to the launcher while it runs, and
    a timeout ends it with SIGTERM (then SIGKILL after 10 s) instead of leaving it behind.
    The returncode is the shell-style status (128 + N for signal N).  stop_raises: a job
    that a passed-on signal stopped raises JobStopped (for commands whose result is the
    job's output, such as bench and tune)."""
    capture = kwargs.pop("capture_output", False)
    if capture:
        kwargs.setdefault("stdout", subprocess.PIPE)
        kwargs.setdefault("stderr", subprocess.PIPE)
    with forwarding() as fw:
        proc = popen(fw, cmd, env=env, **kwargs)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop(proc)
            proc.communicate()
            raise
        status = exit_status(proc.returncode)
        if stop_raises:
            fw.raise_if_stopped(status)
        status = fw.stopped_status(status) or status
    done = subprocess.CompletedProcess(cmd, status, out, err)
    # each signal once, in the order first received (`timeout` sends its signal twice)
    done.signals = [signal.Signals(s).name  # type: ignore[attr-defined]
                    for s in dict.fromkeys(fw.received)]
    return done


def stop(proc: subprocess.Popen[Any], grace: float = 10.0) -> None:
    """End a launcher as a batch system does: SIGTERM, then SIGKILL after grace seconds."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main(argv: list[str]) -> int:
    try:
        if argv[:1] == ["flavour"]:
            print(detect())
        elif argv[:1] == ["prefix"]:
            p = intel_prefix() if detect() == "intelmpi" else None
            print(p or "")
        elif argv[:1] == ["launcher"] and len(argv) == 2 and argv[1].isdigit():
            print(" ".join(launcher_line(int(argv[1]))))
        else:
            print("usage: python -m mpilens.mpi_env flavour | prefix | launcher N",
                  file=sys.stderr)
            return 2
    except UserError as exc:
        print(f"mpilens: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
