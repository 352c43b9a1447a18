"""One module per advise rule (docs/advise.md): each has `RULE` (its number) and
`find(ctx) -> list[Finding]`."""

from . import (
               alltoallv,
               collective,
               imbalance,
               latency,
               nothing,
               pipeline,
               placement,
               polling,
               rails,
               sharedmem,
)

RULES = (nothing, imbalance, rails, latency, collective, placement, sharedmem, alltoallv,
         pipeline, polling)
