"""Human-readable times and byte counts for reports.

One notation everywhere: a number of at most 3 significant digits, never in
exponent form (no `1e-05`, no `1.23e+03`), followed by its unit."""

from __future__ import annotations

_TIME_UNITS = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))


def num(x: float) -> str:
    """x with 3 significant digits, in plain notation: 1234 -> '1234', 0.0123 -> '0.0123';
    below 0.001 in magnitude '0' (the caller's unit is then too large for it)."""
    a = abs(x)
    if a >= 100:
        return f"{x:.0f}"
    if a < 0.001:
        return "0"
    return f"{x:.3g}"


def fmt_time(s: float) -> str:
    """Seconds as 1.23 s / 4.56 ms / 7.89 us / 12 ns (0 as '0')."""
    if s == 0:
        return "0"
    a = abs(s)
    for unit, scale in _TIME_UNITS:
        if a >= scale or unit == "ns":
            return f"{num(s / scale)} {unit}"
    return ""  # unreachable


def fmt_times(values: list[float]) -> str:
    """Several times in the unit of the largest, '1.2/2.3/4.5 ms', when each shows in it
    with 3 digits at most after the point; else each in its own unit, '10 ns/11 ms'."""
    top = max((abs(v) for v in values), default=0.0)
    for unit, scale in _TIME_UNITS:
        if top >= scale or unit == "ns":
            if all(v == 0 or abs(v) / scale >= 0.01 for v in values):
                return "/".join(num(v / scale) for v in values) + f" {unit}"
            return "/".join(fmt_time(v) for v in values)
    return ""  # unreachable


def fmt_bytes(n: float) -> str:
    """Bytes as 512 B / 1.5 KiB / 3.2 MiB / 1.1 GiB / 2.0 TiB."""
    a = abs(n)
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if a >= scale:
            return f"{num(n / scale)} {unit}"
    return f"{int(n)} B"


def fmt_pct(p: float | None) -> str:
    return "-" if p is None else f"{p:.1f} %"
