"""Human-readable times and byte counts for reports."""

from __future__ import annotations


def fmt_time(s: float) -> str:
    """Seconds as 1.23 s / 4.56 ms / 7.89 us / 12 ns."""
    a = abs(s)
    if a >= 1.0:
        return f"{s:.3g} s"
    if a >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    if a >= 1e-6:
        return f"{s * 1e6:.3g} us"
    if a == 0:
        return "0"
    return f"{s * 1e9:.3g} ns"


def fmt_times(values: list[float]) -> str:
    """Several times in the unit of the largest: '1.2/2.3/4.5 ms'."""
    top = max((abs(v) for v in values), default=0.0)
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if top >= scale or unit == "ns":
            return "/".join(f"{v / scale:.3g}" for v in values) + f" {unit}"
    return ""  # unreachable


def fmt_bytes(n: float) -> str:
    """Bytes as 512 B / 1.5 KiB / 3.2 MiB / 1.1 GiB."""
    a = abs(n)
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if a >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} B"


def fmt_pct(p: float | None) -> str:
    return "-" if p is None else f"{p:.1f} %"
