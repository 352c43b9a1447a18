"""User-facing errors: printed as one line, exit status 2, never a traceback."""


class UserError(Exception):
    """A problem with what the user asked for or gave us (bad file, bad option)."""


class JobStopped(Exception):
    """A signal mpilens passed on to a job stopped it: mpilens exits with the launcher's
    status after one line (no traceback, no result)."""

    def __init__(self, status: int, signame: str) -> None:
        super().__init__(f"the job was stopped by {signame} (exit status {status})")
        self.status = status
