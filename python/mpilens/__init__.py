"""mpilens: where does my MPI communication time go, why, and what should I change.

`mpilens.load(path)` reads a profile for Python (mpilens.api, docs/api.md)."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["Profile", "__version__", "load"]


def __getattr__(name: str) -> Any:
    # mpilens.load / mpilens.Profile are imported on first use: the CLI does not need them
    if name in ("load", "Profile"):
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'mpilens' has no attribute {name!r}")
