"""One module per advise rule (docs/advise.md): each has `RULE` (its number) and
`find(ctx) -> list[Finding]`."""

from . import collective, imbalance, latency, nothing, placement, rails, sharedmem

RULES = (nothing, imbalance, rails, latency, collective, placement, sharedmem)
