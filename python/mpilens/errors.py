"""User-facing errors: printed as one line, exit status 2, never a traceback."""


class UserError(Exception):
    """A problem with what the user asked for or gave us (bad file, bad option)."""
