"""The edge-shape checks of the ontology check: kg.check's checker (the graph's entities, types, names and asserted edges) in, Findings out.

Part-of chains that loop (`transitive-cycle`), edges whose ends have the wrong class (`domain`,
`range`) and edges from an entity to itself (`self-loop`). `kg.check` runs them with the others.
"""

from __future__ import annotations

from collections.abc import Iterable

import networkx as nx

from kg.findings import Finding

__all__ = ["domains_and_ranges", "self_loops", "transitive_cycles"]

# kg:Entity: every entity is one, so a domain or range of Entity always holds.
_ANY_ENTITY = "Entity"


def transitive_cycles(checker) -> Iterable[Finding]:
    done: set[str] = set()
    for name, info in sorted(checker.vocab.properties.items()):
        if not info.transitive or info.symmetric or name in done:
            continue
        inverse = info.inverse if info.inverse in checker.vocab.properties else None
        done.update((name, inverse or name))
        forward = checker.vocab.sub_properties(name)
        backward = checker.vocab.sub_properties(inverse) if inverse else frozenset()
        walk = nx.DiGraph()
        for s, p, o in checker.edges:
            if s == o:
                continue  # a self-loop, reported on its own
            if p in forward:
                walk.add_edge(s, o)
                walk.edges[s, o].setdefault("asserted", []).append((s, p, o, False))
            if p in backward:
                walk.add_edge(o, s)
                walk.edges[o, s].setdefault("asserted", []).append((s, p, o, True))
        for component in nx.strongly_connected_components(walk):
            if len(component) > 1:
                yield _cycle(checker, walk.subgraph(component), name, inverse, len(component))

def _cycle(checker, walk: nx.DiGraph, name: str, inverse: str | None, size: int) -> Finding:
    start = min(walk.nodes, key=lambda n: (checker.name(n), str(n)))
    cycle = [u for u, _ in nx.find_cycle(walk, source=start)]
    steps = [
        walk.edges[u, v]["asserted"][0]
        for u, v in zip(cycle, cycle[1:] + cycle[:1], strict=True)
    ]
    if inverse and sum(reverse for *_, reverse in steps) * 2 > len(steps):
        # Mostly asserted as the inverse (hasPart): tell it the way it was written.
        name, cycle = inverse, [cycle[0], *reversed(cycle[1:])]
    path = " → ".join(checker.name(n) for n in [*cycle, cycle[0]])
    asserted = "; ".join(
        f"{checker.name(s)} {p} {checker.name(o)}"
        for s, p, o, _ in sorted(steps, key=lambda t: (checker.name(t[0]), t[1], checker.name(t[2])))
    )
    more = f" ({size} entities are on cycles together)" if size > len(cycle) else ""
    return Finding(
        "error",
        "transitive-cycle",
        str(cycle[0]),
        f"{name} goes round in a circle: {path} (asserted: {asserted}){more}; {name} is "
        f"transitive, so each of them would be {name} itself: remove or reverse one of these "
        "edges",
    )

def domains_and_ranges(checker) -> Iterable[Finding]:
    expected = {name: _expected_classes(checker, name) for name in checker.vocab.properties}
    classes = {
        e: sorted(
            checker.class_names[t]
            for t in checker.types[e]
            if t in checker.class_names and checker.class_names[t] != _ANY_ENTITY
        )
        for e in checker.entities
    }
    for s, name, o in checker.edges:
        if s == o:
            continue
        for code, end, rules in (
            ("domain", s, expected[name][0]),
            ("range", o, expected[name][1]),
        ):
            have = classes.get(end)
            if not have:  # untyped, or only kg:Entity: nothing to contradict
                continue
            for cls, why in rules:
                if not any(checker.vocab.is_subclass(c, cls) for c in have):
                    role = "source" if code == "domain" else "target"
                    yield Finding(
                        "warning",
                        code,
                        str(end),
                        f"{checker.name(s)} {name} {checker.name(o)}: the {role} should be a {cls} "
                        f"({why}), but {checker.name(end)} is a {' and a '.join(have)}; give "
                        f"{checker.name(end)} the class {cls} (or a subclass of it), or use "
                        "another relation",
                    )
                    break

def _expected_classes(checker, name: str) -> tuple[list, list]:
    """(domain rules, range rules) of a property: [(class, where the rule comes from)].

    Inherited from super properties, and taken from the inverse (the range of `owns` is the
    domain of `ownedBy`). A rule of kg:Entity, or of a class the ontology does not declare
    (reported as unknown-term), constrains nothing.
    """
    props = checker.vocab.properties
    domains: dict[str, str] = {}
    ranges: dict[str, str] = {}
    for q in [name, *sorted(props[name].super_properties)]:
        info = props[q]
        inherited = "" if q == name else f", inherited by {name}"
        if info.domain:
            domains.setdefault(info.domain, f"the domain of {q}{inherited}")
        if info.range:
            ranges.setdefault(info.range, f"the range of {q}{inherited}")
        inverse = props.get(info.inverse or "")
        if inverse is not None:
            if inverse.range:
                domains.setdefault(
                    inverse.range, f"the range of {inverse.name}, the inverse of {q}"
                )
            if inverse.domain:
                ranges.setdefault(
                    inverse.domain, f"the domain of {inverse.name}, the inverse of {q}"
                )

    def rules(found: dict[str, str]) -> list:
        return [
            (c, why)
            for c, why in sorted(found.items())
            if c != _ANY_ENTITY and c in checker.vocab.classes
        ]

    return rules(domains), rules(ranges)

def self_loops(checker) -> Iterable[Finding]:
    for s, name, o in checker.edges:
        if s == o:
            yield Finding(
                "warning",
                "self-loop",
                str(s),
                f"{checker.name(s)} {name} {checker.name(s)}: a relation from an entity to itself "
                "is ignored by graph expansion; delete it or fix the target",
            )
