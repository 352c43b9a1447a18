"""mpilens: where does my MPI communication time go, why, and what should I change."""

__version__ = "0.1.0"
