"""The path-first planner's link-search step: every crossing halves both its sides in every round.

The adaptive planner's search (:mod:`.adaptive`) narrows a link that crosses two sides A and B by
running A1+B1 beside A2+B2; when neither fails it spends the next round on A1+B2 beside A2+B1, a
round that can only say which of the two holds the link. Here that round is not spent: the two
off-diagonal blocks A1 x B2 and A2 x B1 (on disjoint nodes) are kept together as one *union* and
their own diagonal halves run at once in the next round. A union's blocks are equally likely to
hold the link; a failing group names its block, and the union's other blocks are dropped (another
link there is left to the re-check that follows every named link). Either way every block's sides
halve in every round, so a crossing of m x m nodes is narrowed in log2 m rounds, not about 1.5x
that, and a round tells more about where the link is the more blocks its union has.

Inside searches (a set that holds a link) and the planning of each round's groups are the adaptive
planner's (:func:`.adaptive.search_round`); only the step from one round's results to the next
round's open questions is this module's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from . import adaptive

__all__ = ["Unions", "next_searches"]

#: open crossing search -> the union it belongs to (searches of one union share one link)
Unions = Mapping[adaptive.LinkSearch, int]


def _parts(search: adaptive.LinkSearch) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """A crossing's four blocks by the role names the adaptive planner gives their groups."""
    a1, a2 = adaptive.split_in_halves(search.side_a) if len(search.side_a) > 1 else (search.side_a, ())
    b1, b2 = adaptive.split_in_halves(search.side_b) if len(search.side_b) > 1 else (search.side_b, ())
    return {"x11": (a1, b1), "x22": (a2, b2), "x12": (a1, b2), "x21": (a2, b1)}


def _cross(sides: tuple[tuple[str, ...], tuple[str, ...]]) -> adaptive.LinkSearch:
    return adaptive.LinkSearch(side_a=sides[0], side_b=sides[1])


def next_searches(
    links: adaptive.AdaptiveState, unions: Unions, outcome: Mapping[str, bool]
) -> tuple[adaptive.AdaptiveState, dict[adaptive.LinkSearch, int]]:
    """The open searches after a link-search round (not yet planned), and their unions.

    ``outcome`` is the round's verdict per group name, groups that measured like their peers
    counted as passes. A failing search group of exactly two nodes is that pair's first failure,
    as in the adaptive planner, so its confirmation needs one pair run more.
    """
    failed_roles: dict[int, set[str]] = {}
    for name, (index, role) in links.roles.items():
        if not outcome.get(name, False):
            failed_roles.setdefault(index, set()).add(role)
    certain: list[adaptive.LinkSearch] = []
    members: dict[int, list[tuple[adaptive.LinkSearch, set[str]]]] = {}
    for index, search in enumerate(links.searches):
        failed = failed_roles.get(index, set())
        if search.inside:
            a, b = adaptive.split_in_halves(search.inside)
            certain.extend(adaptive.LinkSearch(inside=half) for role, half in (("a", a), ("b", b)) if role in failed)
            if not failed:
                certain.append(adaptive.LinkSearch(side_a=a, side_b=b))
            continue
        # a crossing outside any union is a union of one; the key keeps those apart
        members.setdefault(unions.get(search, -1 - index), []).append((search, failed))
    fresh: dict[adaptive.LinkSearch, int] = {}
    for blocks in members.values():
        hits = [(search, failed) for search, failed in blocks if failed]
        if hits:
            certain.extend(_cross(_parts(search)[role]) for search, failed in hits for role in sorted(failed))
            continue
        union = len(fresh) + 1 + max(unions.values(), default=0)
        for search, _ in blocks:
            for role in ("x12", "x21"):
                a, b = _parts(search)[role]
                if a and b:
                    fresh[_cross((a, b))] = union
    link_fails = dict(links.link_fails)
    for name, nodes in links.pending:
        if len(nodes) == 2 and name in links.roles and not outcome.get(name, False):
            key = adaptive.link_key(nodes[0], nodes[1])
            link_fails[key] = link_fails.get(key, 0) + 1
    searches = tuple(dict.fromkeys([*certain, *fresh]))
    links = replace(links, searches=searches, link_fails=link_fails, pending=(), roles={})
    return links, {search: union for search, union in fresh.items() if search in searches and search not in certain}
