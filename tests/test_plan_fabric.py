"""Fat-tree sizing: closed forms pinned by hand, then checked against an explicit construction.

The construction wires the switches one port at a time (round-robin), counts what it built,
and finds the bisection as a true minimum cut: over every way to put half the hosts on each
side, the max-flow between the two halves (switches may sit on either side).
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict, deque
from dataclasses import dataclass, field

import pytest

from gpuplat.plan.fabric import FatTree, even_spines, fat_tree, leaf_ports, max_hosts, smallest_radix


def test_leaf_ports_hand_checked() -> None:
    assert leaf_ports(64, 1) == (32, 32)  # k/2 each way when non-blocking
    assert leaf_ports(64, 3) == (48, 16)  # 64*3/4 = 48 down, 16 up: 3:1
    assert leaf_ports(64, 2) == (43, 21)  # 64*2/3 = 42.67 -> 43 down, 21 up (~2.05:1)
    assert leaf_ports(4, 1.5) == (2, 2)  # 4*1.5/2.5 = 2.4 -> 2


def test_two_tier_example_platform() -> None:
    # train: 32 nodes x ceil(3200/400) = 8 ports = 256 hosts; k = 64, r = 1: d = u = 32.
    # leaves = 256/32 = 8; spines = ceil(8*32/64) = 4; links = 8*32 = 256; max = 64*32 = 2048.
    tree = fat_tree(256, 2, 64, 1)
    assert (tree.leaves, tree.spines, tree.cores, tree.links, tree.max_hosts) == (8, 4, 0, 256, 2048)
    assert tree.switches == 12
    # bisection = leaves * u * 400 / 2 = 8*32*400/2 = 51200 Gbps = 256 hosts * 400 / 2.
    assert tree.leaves * tree.leaf_up * 400 / 2 == 51200


def test_three_tier_standard_k_ary() -> None:
    # k = 8, r = 1: the textbook fat-tree has k^3/4 = 128 hosts, k pods of k/2 + k/2 switches,
    # (k/2)^2 = 16 cores, k^3/4 leaf-spine + k^3/4 spine-core = 256 links.
    tree = fat_tree(128, 3, 8, 1)
    assert (tree.pods, tree.leaves, tree.spines, tree.cores) == (8, 32, 32, 16)
    assert (tree.links, tree.max_hosts, tree.switches) == (256, 128, 80)


def test_three_tier_oversubscribed_partial_pod() -> None:
    # k = 8, r = 3: d = 6, u = 2. hosts 50 -> leaves ceil(50/6) = 9 -> pods ceil(9/4) = 3
    # (4 + 4 + 1 leaves); spines 4*2/4 = 2 per full pod, ceil(1*2/4) = 1 in the last = 5;
    # cores ceil(9*2/8) = 3; links 2*9*2 = 36; max hosts 8 * 4 * 6 = 192.
    tree = fat_tree(50, 3, 8, 3)
    assert (tree.leaves, tree.pods, tree.spines, tree.cores, tree.links, tree.max_hosts) == (9, 3, 5, 3, 36, 192)


def test_smallest_radix() -> None:
    # 4096 hosts at 2 tiers, r = 1: k * k/2 >= 4096 -> k >= 90.5 -> 92 (the next even radix).
    assert smallest_radix(4096, 2, 1, 64) == 92
    assert max_hosts(2, 90, 1) < 4096 <= max_hosts(2, 92, 1)
    assert smallest_radix(10**9, 3, 1, 64) is None


# ---- explicit construction -------------------------------------------------------------------


@dataclass
class Built:
    hosts_per_leaf: list[int]
    ports: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # switch -> used ports
    links: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))  # multi-links
    pods: list[list[str]] = field(default_factory=lambda: [])

    def link(self, a: str, b: str) -> None:
        self.links[(a, b)] += 1
        self.ports[a] += 1
        self.ports[b] += 1

    @property
    def switches(self) -> set[str]:
        return {s for pair in self.links for s in pair} | {f"L{i}" for i in range(len(self.hosts_per_leaf))}


def build(hosts: int, tiers: int, k: int, r: float) -> Built:
    d, u = leaf_ports(k, r)
    leaves = math.ceil(hosts / d)
    built = Built([min(d, hosts - i * d) for i in range(leaves)])
    for i, h in enumerate(built.hosts_per_leaf):
        built.ports[f"L{i}"] += h
    if tiers == 2:
        spines = even_spines(leaves, u, k)
        for i, j in itertools.product(range(leaves), range(u)):
            built.link(f"L{i}", f"S{(i * u + j) % spines}")
        return built
    half = k // 2
    uplinks: list[str] = []
    for p, first in enumerate(range(0, leaves, half)):
        members = list(range(first, min(first + half, leaves)))
        count = even_spines(len(members), u, half)
        for n, (i, _) in enumerate(itertools.product(members, range(u))):
            spine = f"S{p}.{n % count}"
            built.link(f"L{i}", spine)
            uplinks.append(spine)  # one uplink per downlink: non-blocking above the leaf
        built.pods.append([f"S{p}.{s}" for s in range(count)])
    cores = math.ceil(leaves * u / k)
    for n, spine in enumerate(sorted(uplinks, key=lambda s: tuple(int(x) for x in s[1:].split(".")))):
        built.link(spine, f"C{n % cores}")
    return built


def min_bisection_links(built: Built) -> int:
    """Fewest links crossing any cut with half the hosts on each side."""
    hosts = built.hosts_per_leaf
    total = sum(hosts)
    best = math.inf
    for split in itertools.product(*(range(h + 1) for h in hosts)):
        if 2 * sum(split) != total:
            continue
        cap: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for (a, b), n in built.links.items():
            cap[a][b] += n
            cap[b][a] += n
        for i, (side_a, h) in enumerate(zip(split, hosts, strict=True)):
            cap["src"][f"L{i}"] += side_a  # host links are links too
            cap[f"L{i}"]["dst"] += h - side_a
        best = min(best, _max_flow(cap))
    return int(best)


def _max_flow(cap: dict[str, dict[str, int]]) -> int:
    flow = 0
    while True:
        parent: dict[str, str] = {"src": ""}
        queue = deque(["src"])
        while queue and "dst" not in parent:
            a = queue.popleft()
            for b, c in cap[a].items():
                if c > 0 and b not in parent:
                    parent[b] = a
                    queue.append(b)
        if "dst" not in parent:
            return flow
        path, node = [], "dst"
        while node != "src":
            path.append((parent[node], node))
            node = parent[node]
        push = min(cap[a][b] for a, b in path)
        for a, b in path:
            cap[a][b] -= push
            cap[b][a] += push
        flow += push


EVEN = [
    # (hosts, tiers, radix, oversubscription) whose hosts fill an even number of leaves
    (8, 2, 4, 1),
    (16, 2, 8, 1),
    (24, 2, 8, 1),  # 6 leaves, u = 4: ceil(24/8) = 3 spines would wire unevenly; 4 do not
    (12, 2, 8, 3),
    (24, 2, 8, 3),
    (16, 3, 4, 1),  # the full k = 4 fat-tree: 4 pods, 8 spines, (k/2)^2 = 4 cores
    (8, 3, 4, 1),
    (12, 3, 6, 1),  # a partial second pod
    (16, 3, 6, 2),
    (24, 3, 8, 1),
]
UNEVEN = [(12, 2, 8, 1), (10, 3, 4, 1), (14, 3, 4, 1), (20, 3, 8, 1), (28, 3, 8, 3)]


def _check_counts(tree: FatTree, built: Built, hosts: int, k: int) -> None:
    switches = built.switches
    assert sum(built.hosts_per_leaf) == hosts
    assert len([s for s in switches if s[0] == "L"]) == tree.leaves
    assert len([s for s in switches if s[0] == "S"]) == tree.spines
    assert len([s for s in switches if s[0] == "C"]) == tree.cores
    assert len(switches) == tree.switches
    assert sum(built.links.values()) == tree.links
    assert all(used <= k for used in built.ports.values()), "a switch uses more ports than its radix"


@pytest.mark.parametrize(("hosts", "tiers", "k", "r"), EVEN)
def test_closed_forms_match_construction(hosts: int, tiers: int, k: int, r: float) -> None:
    tree = fat_tree(hosts, tiers, k, r)
    built = build(hosts, tiers, k, r)
    _check_counts(tree, built, hosts, k)
    # bisection_gbps = leaves * u * link / 2, i.e. leaves * u / 2 links cross the narrowest cut.
    assert min_bisection_links(built) * 2 == tree.leaves * tree.leaf_up


@pytest.mark.parametrize(("hosts", "tiers", "k", "r"), UNEVEN)
def test_closed_forms_with_a_split_leaf(hosts: int, tiers: int, k: int, r: float) -> None:
    # An odd number of leaves or a part-filled leaf: a balanced cut must split a leaf, and the
    # narrowest cut is within half a leaf's uplinks of the closed form.
    tree = fat_tree(hosts, tiers, k, r)
    built = build(hosts, tiers, k, r)
    _check_counts(tree, built, hosts, k)
    assert abs(min_bisection_links(built) - tree.leaves * tree.leaf_up / 2) <= tree.leaf_up / 2


@pytest.mark.parametrize(("tiers", "k", "r"), [(2, 4, 1), (2, 8, 1), (2, 8, 3), (3, 4, 1), (3, 6, 2)])
def test_max_hosts_is_where_the_clos_property_ends(tiers: int, k: int, r: float) -> None:
    # 2 tiers: every leaf reaches every spine; 3 tiers: every pod reaches every core.
    def proper(hosts: int) -> bool:
        built = build(hosts, tiers, k, r)
        pairs = set(built.links)
        if tiers == 2:
            leaves = {a for a, _ in pairs}
            spines = {b for _, b in pairs}
            return all((a, b) in pairs for a in leaves for b in spines)
        cores = {b for _, b in pairs if b[0] == "C"}
        return all(any((s, c) in pairs for s in pod) for pod in built.pods for c in cores)

    limit = max_hosts(tiers, k, r)
    assert proper(limit)
    assert not proper(limit + 1)
