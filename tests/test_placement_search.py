"""Rule 4's swap search (advise/rules/placement.py:improve) evaluates only the pairs that
can lower the inter-node bytes and stops on a work bound: it must make exactly the swaps
of the plain search (every pair of ranks on different hosts per sweep, the lowest delta,
ties to the lowest pair), and the same profile must get the same answer at any load."""

from __future__ import annotations

import random

from mpilens.advise.rules.placement import improve, inter_bytes


def _plain(pairs: dict[tuple[int, int], int], node: list[str]) -> list[str]:
    """Kernighan-Lin pair swaps, every pair evaluated, bytes recounted from the pairs."""
    node = list(node)
    n = len(node)
    busy = {x for ab in pairs for x in ab}
    while True:
        idle: dict[str, int] = {}
        for i in range(n):
            if i not in busy:
                idle.setdefault(node[i], i)
        cand = sorted(busy | set(idle.values()))
        now = inter_bytes(pairs, node)
        best = None
        for x, i in enumerate(cand):
            for j in cand[x + 1:]:
                if node[i] == node[j]:
                    continue
                node[i], node[j] = node[j], node[i]
                delta = inter_bytes(pairs, node) - now
                node[i], node[j] = node[j], node[i]
                if delta < 0 and (best is None or delta < best[0]):
                    best = (delta, i, j)
        if best is None:
            return node
        _, i, j = best
        node[i], node[j] = node[j], node[i]


def _graph(rng: random.Random, n: int, hosts: int) -> tuple[dict[tuple[int, int], int],
                                                             list[str]]:
    node = [f"h{rng.randrange(hosts)}" for _ in range(n)]
    pairs: dict[tuple[int, int], int] = {}
    for _ in range(rng.randint(0, 3 * n)):
        a, b = sorted(rng.sample(range(n), 2))
        pairs[(a, b)] = rng.choice([1, 2, 5, 100, rng.randint(1, 1000)])  # ties, and not
    return pairs, node


def test_same_swaps_as_the_plain_search() -> None:
    rng = random.Random(7)
    moved = 0
    for _ in range(150):
        pairs, node = _graph(rng, rng.randint(2, 24), rng.randint(2, 4))
        got, cut = improve(pairs, node)
        assert (got, cut) == (_plain(pairs, node), False)
        moved += got != node
    assert moved > 50  # most cases make swaps


def test_known_mapping_and_the_work_bound() -> None:
    # 8 ranks, round-robin on 2 hosts; heavy pairs (0,1), (2,3), (4,5), (6,7), light ring
    node = ["a", "b"] * 4
    pairs = {(2 * k, 2 * k + 1): 1000 for k in range(4)}
    pairs.update({(k, (k + 2) % 8) if k < 6 else ((k + 2) % 8, k): 1 for k in range(8)})
    got, cut = improve(pairs, node)
    assert not cut and inter_bytes(pairs, node) == 4000  # the light ring stays on its host
    assert all(got[2 * k] == got[2 * k + 1] for k in range(4))  # every heavy pair joined
    assert sorted(got) == sorted(node) and inter_bytes(pairs, got) == 4
    # cut short by the work bound (a sweep costs its 8 ranks and its pairs): the same partial
    # answer every time, whatever the load; one swap joins two heavy pairs
    short = [improve(pairs, node, work=30) for _ in range(3)]
    assert short[0][1] and short.count(short[0]) == 3
    assert inter_bytes(pairs, short[0][0]) == 2004
    assert improve(pairs, node, work=20) == (node, True)
