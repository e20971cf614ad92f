"""An open KnowledgeBase + a language -> the JSON the page's explorer views draw: the whole graph (bounded), a fact's source lines, a document's outline, the home page.

Reads only (under `kb.reading()`); names of classes and relations come from their `rdfs:label` in
the asked language (the ontology of the knowledge base, so a user's ontology brings its own).
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

from kg.errors import InputError, NotFoundError

__all__ = ["document_outline", "fact_source", "graph_json", "overview", "vocabulary_labels"]

MAX_NODES = 2000
LAYOUT_ITERATIONS = 60
# Pull towards the middle. 3 was chosen on two graphs (the demo's 97 entities, bench/web.py's 500): against 0.3 it
# doubles the distance from each entity to its nearest (labels overlap less: 0.34 -> 0.65 and 0.23 -> 0.54 x the
# mean spacing) while an edge grows only a little against the mean distance (0.31 -> 0.35, 0.23 -> 0.28); at 10 the
# drawing starts to lose its structure (0.45 on the demo).
LAYOUT_GRAVITY = 3.0
_PREFIX_LINE = re.compile(r"^@prefix\s+([\w\-]*):\s*<([^>]*)>\s*\.\s*$")


def _label_in(graph, iri: str, lang: str, fallback: str) -> str:
    from rdflib import RDFS, URIRef

    labels = [o for o in graph.objects(URIRef(iri), RDFS.label) if hasattr(o, "language")]
    for wanted in (lang, None, "en"):
        for label in sorted(labels, key=str):
            if label.language == wanted:
                return str(label)
    return str(labels[0]) if labels else fallback


def vocabulary_labels(kb, lang: str) -> tuple[dict[str, str], dict[str, str]]:
    """(class name -> label, relation name -> label) in `lang`; `^name` (an edge walked backwards) is left to the caller."""
    rdf, vocab = kb.graph.rdf, kb.graph.vocab
    classes = {name: _label_in(rdf, info.iri, lang, name) for name, info in vocab.classes.items()}
    relations = {name: _label_in(rdf, info.iri, lang, name) for name, info in vocab.properties.items()}
    return classes, relations


def graph_json(kb, lang: str, *, limit: int = 500, classes: list[str] | None = None,
               relations: list[str] | None = None, search: str = "") -> dict:
    """Entities (with classes, labels, how many passages mention them) and asserted edges, at most `limit` nodes:
    the best connected first. Filters keep nodes of the classes, edges of the relations, and entities whose
    label or alias contains `search` with their neighbours."""
    if not 1 <= limit <= MAX_NODES:
        raise InputError(f"limit must be between 1 and {MAX_NODES} (got {limit})")
    with kb.reading():
        view = kb.graph.view
        class_labels, relation_labels = vocabulary_labels(kb, lang)
        classes, relations = [c for c in classes or [] if c.strip()], [r for r in relations or [] if r.strip()]
        unknown = [c for c in classes if c not in class_labels] + [r for r in relations if r not in relation_labels]
        if unknown:
            raise NotFoundError(f"not in the ontology: {', '.join(unknown)} (see the class and relation lists of GET /graph)")
        mentions = kb.store.mention_counts()
        edges = [(s, r, t, w) for (s, r, t), w in view._edges.items()]  # noqa: SLF001 - the asserted edges, read-only
    wanted_classes = set(classes or [])
    if wanted_classes:
        wanted_classes = _with_subclasses(kb.graph.vocab.classes, wanted_classes)
    if relations:
        edges = [e for e in edges if e[1] in set(relations)]
    keep = {iri for iri, e in view.entities.items() if not wanted_classes or wanted_classes & set(e.types)}
    edges = [e for e in edges if e[0] in keep and e[2] in keep]
    if relations:
        keep = {e[0] for e in edges} | {e[2] for e in edges}
    matched: set[str] = set()
    if search.strip():
        needle = search.strip().casefold()
        matched = {iri for iri in keep if needle in view.entities[iri].label.casefold()
                   or any(needle in a.casefold() for a in view.entities[iri].aliases)}
        around = {e[2] for e in edges if e[0] in matched} | {e[0] for e in edges if e[2] in matched}
        keep = matched | around
        edges = [e for e in edges if e[0] in keep and e[2] in keep]
    degree = Counter([e[0] for e in edges] + [e[2] for e in edges])
    ranked = sorted(keep, key=lambda iri: (iri not in matched, -degree[iri], -mentions.get(iri, 0), view.entities[iri].label))
    shown = set(ranked[:limit])
    shown_edges = [{"source": s, "relation": r, "target": t, "weight": w} for s, r, t, w in edges if s in shown and t in shown]
    positions = _cached_layout(tuple(ranked[:limit]), tuple((e["source"], e["target"]) for e in shown_edges))
    nodes = [{"id": iri, "label": view.entities[iri].label, "aliases": list(view.entities[iri].aliases),
              "types": list(view.entities[iri].types), "degree": degree[iri], "mentions": mentions.get(iri, 0),
              "matched": iri in matched, "x": positions[i][0], "y": positions[i][1]} for i, iri in enumerate(ranked[:limit])]
    used_classes = Counter(c for n in nodes for c in n["types"])
    used_relations = Counter(e["relation"] for e in shown_edges)
    return {
        "nodes": nodes, "edges": shown_edges, "total_nodes": len(keep), "truncated": len(keep) > limit,
        "classes": [{"name": n, "label": class_labels[n], "count": used_classes.get(n, 0)} for n in sorted(class_labels)],
        "relations": [{"name": n, "label": relation_labels[n], "count": used_relations.get(n, 0)} for n in sorted(relation_labels)],
        "language": lang,
    }


@lru_cache(maxsize=32)
def _cached_layout(ids: tuple[str, ...], edges: tuple[tuple[str, str], ...]) -> list[tuple[float, float]]:
    return force_layout(list(ids), list(edges))


def force_layout(ids: list[str], edges: list[tuple[str, str]], seed: int = 24) -> list[tuple[float, float]]:
    """Fruchterman-Reingold on dense numpy arrays (networkx's own algorithm, which for 500 nodes or more switches to
    a sparse variant ~30x slower), with a little gravity so that small components stay near: positions in pixels,
    spread with the square root of the node count so that labels keep their room. The same graph, the same drawing."""
    import numpy as np

    n = len(ids)
    if n == 0:
        return []
    index = {iri: i for i, iri in enumerate(ids)}
    adjacency = np.zeros((n, n))
    for source, target in edges:
        adjacency[index[source], index[target]] = adjacency[index[target], index[source]] = 1.0
    x, y = np.random.default_rng(seed).random((2, n)).astype(np.float32)
    adjacency = adjacency.astype(np.float32)
    k, temperature = np.float32(np.sqrt(1.0 / n)), 0.1
    cooling = temperature / (LAYOUT_ITERATIONS + 1)
    for _ in range(LAYOUT_ITERATIONS):
        dx, dy = x[:, None] - x[None, :], y[:, None] - y[None, :]
        distance = np.maximum(np.hypot(dx, dy), 0.01)
        force = k * k / distance**2 - adjacency * distance / k
        fx = (dx * force).sum(axis=1) - LAYOUT_GRAVITY * (x - x.mean())
        fy = (dy * force).sum(axis=1) - LAYOUT_GRAVITY * (y - y.mean())
        step = temperature / np.maximum(np.hypot(fx, fy), 0.01)
        x += fx * step
        y += fy * step
        temperature -= cooling
    pos = np.stack([x, y], axis=1).astype(np.float64)
    pos -= pos.min(axis=0)
    pos /= max(float(pos.max()), 1e-9)
    scale = 90.0 * np.sqrt(n)
    return [(round(float(x) * scale, 1), round(float(y) * scale, 1)) for x, y in pos]


def _with_subclasses(classes: dict, names: set[str]) -> set[str]:
    """A class keeps its subclasses ("System" shows services and databases); `super_classes` is transitive."""
    return set(names) | {name for name, info in classes.items() if info.super_classes & names}


def _turtle_tokens(prefixes: dict[str, str], iri: str) -> list[str]:
    tokens = [f"<{iri}>"]
    for prefix, namespace in prefixes.items():
        if namespace and iri.startswith(namespace):
            tokens.append(f"{prefix}:{iri[len(namespace):]}")
    return tokens


class _TurtleFile:
    """graph.ttl's lines, its prefixes and where each statement block starts (by the first token of its line), read
    once per version of the file: a fact card is a dictionary look-up, not a pass over a 10 MB file (100k rows)."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.prefixes = {m.group(1): m.group(2) for m in map(_PREFIX_LINE.match, self.lines[:200]) if m}
        self.starts: dict[str, int] = {}
        for i, line in enumerate(self.lines):
            self.starts.setdefault(_FIRST_TOKEN.match(line)[0], i)

    def block(self, tokens: list[str]) -> tuple[int, int] | None:
        """(first, last) 0-based line of the statement block whose subject is one of `tokens`."""
        found = [self.starts[t] for t in tokens if t in self.starts]
        if not found:
            return None
        i = j = min(found)
        while j < len(self.lines) - 1 and not self.lines[j].rstrip().endswith(" ."):
            j += 1
        return i, j


_FIRST_TOKEN = re.compile(r"[^ \t]*")
_turtle_files: dict[str, tuple[tuple[int, int] | None, _TurtleFile]] = {}


def _turtle_file(path) -> _TurtleFile:
    from kg.files import file_stamp

    stamp = file_stamp(path)
    held = _turtle_files.get(str(path))
    if held is None or held[0] != stamp or stamp is None:
        text = path.read_text(encoding="utf-8") if stamp is not None else ""
        if len(_turtle_files) > 4:  # a process serves one knowledge base, a test run a few
            _turtle_files.clear()
        held = _turtle_files[str(path)] = (stamp, _TurtleFile(text))
    return held[1]


def fact_source(kb, source: str, relation: str, target: str, lang: str) -> dict:
    """Where a fact is written: its statement in the knowledge base's graph file (line numbers, the Turtle as
    written, the edge's weight), the table that states it (`origin`: "relations.csv:3") and where its relation is
    defined, with the relation's label and comment."""
    from rdflib import RDFS, URIRef

    from retrieval.provenance import edge_origins

    with kb.reading():
        view, vocab = kb.graph.view, kb.graph.vocab
        if relation not in vocab.properties:
            raise NotFoundError(f"no relation '{relation}' in the ontology (see GET /graph for the relations)")
        s, t = view.resolve(source), view.resolve(target)
        if s is None or t is None:
            raise NotFoundError(f"no entity '{source if s is None else target}' in the graph")
        key = (s.iri, relation, t.iri)
        if key not in view._edges:  # noqa: SLF001 - asserted edges, read-only
            raise NotFoundError(f"the graph does not assert {s.label} {relation} {t.label}")
        weight = view._edges[key]  # noqa: SLF001
        path = kb.graph.path
        turtle = _turtle_file(path)
        info = vocab.properties[relation]
        comment = [str(o) for o in kb.graph.rdf.objects(URIRef(info.iri), RDFS.comment)]
        _, relation_labels = vocabulary_labels(kb, lang)
        origin = edge_origins(kb.root, view, vocab)([(s.iri, relation, t.iri)])[0]
    lines, prefixes = turtle.lines, turtle.prefixes
    statement = definition = None
    found = turtle.block(_turtle_tokens(prefixes, s.iri))
    if found:
        first, last = found
        rel_tokens, target_tokens = _turtle_tokens(prefixes, info.iri), _turtle_tokens(prefixes, t.iri)
        at = next((i for i in range(first, last + 1) if any(x in lines[i] for x in rel_tokens)), first)
        hit = next((i for i in range(at, last + 1) if any(x in lines[i] for x in target_tokens)), at)
        shown = range(first, min(last, first + 40) + 1)
        statement = {"file": path.name, "line": hit + 1, "first_line": first + 1,
                     "lines": [{"n": i + 1, "text": lines[i], "fact": at <= i <= hit} for i in shown]}
    found = turtle.block(_turtle_tokens(prefixes, info.iri))
    if found:
        first, last = found
        definition = {"file": path.name, "line": first + 1, "text": "\n".join(lines[first:min(last, first + 20) + 1])}
    return {
        "source": s.to_json(), "relation": relation, "relation_label": relation_labels[relation], "target": t.to_json(),
        "weight": weight, "relation_iri": info.iri, "relation_comment": comment,
        "inverse": info.inverse, "symmetric": info.symmetric, "statement": statement, "definition": definition,
        "origin": origin or None,  # the imported table (and line) or RDF file that states it; None: made in graph.ttl
        "note": "relation tables and ontologies are merged into this file when imported (kg import); "
                "it is the one to edit (e.g. in Protégé) or to re-import a corrected table over",
    }


def document_outline(kb, key: str, version_id: str | None, lang: str) -> dict:
    """A document's versions and, for one version (the one in force unless asked), its passages in order with
    the entities each is about (anchors: strength and reason) and the entities it mentions."""
    doc = kb.document(key)
    history = doc.get("version_history", [])
    if version_id is None:
        version_id = next((v["version_id"] for v in history if v.get("in_force")), history[-1]["version_id"] if history else None)
    if version_id not in {v["version_id"] for v in history}:
        raise NotFoundError(f"document '{doc['title']}' has no version '{version_id}' (its versions: "
                            f"{', '.join(v['version_id'] for v in history)})")
    with kb.reading():
        db, labels = kb.store.db, kb.graph.view.labels()
        rows = db.execute(
            "SELECT vc.chunk_id, vc.ordinal, c.section, c.text, vc.line_start, vc.line_end, vc.page FROM version_chunks vc"
            " JOIN chunks c USING (chunk_id) WHERE vc.version_id = ? ORDER BY vc.ordinal", (version_id,)).fetchall()
        ids = [r[0] for r in rows]
        about: dict[str, list] = {}
        mentioned: dict[str, list] = {}
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            marks = ",".join("?" * len(part))
            for chunk, entity, strength, reason in db.execute(
                    f"SELECT chunk_id, entity, strength, reason FROM anchors WHERE chunk_id IN ({marks}) ORDER BY strength DESC", part):
                about.setdefault(chunk, []).append({"id": entity, "label": labels.get(entity, entity),
                                                    "strength": round(strength, 2), "reason": reason})
            for chunk, entity, n in db.execute(
                    f"SELECT chunk_id, entity, COUNT(*) FROM mentions WHERE chunk_id IN ({marks}) GROUP BY chunk_id, entity"
                    " ORDER BY COUNT(*) DESC", part):
                mentioned.setdefault(chunk, []).append({"id": entity, "label": labels.get(entity, entity), "mentions": n})
    chunks = [{"chunk_id": c, "ordinal": o, "section": sec, "text": text, "lines": [a, b], "page": page,
               "about": about.get(c, []), "mentions": mentioned.get(c, [])} for c, o, sec, text, a, b, page in rows]
    sections: list[dict] = []
    for chunk in chunks:
        if not sections or sections[-1]["section"] != chunk["section"]:
            sections.append({"section": chunk["section"], "chunks": []})
        sections[-1]["chunks"].append(chunk["chunk_id"])
    return {"document": doc, "version_id": version_id, "chunks": chunks, "sections": sections}


def overview(kb, lang: str, recent: int = 8) -> dict:
    """The home page: counts, the documents added last, example questions made from the knowledge base's own entities."""
    stats = {k: v for k, v in kb.stats().items() if k != "data_dir"}
    with kb.reading():
        rows = kb.store.db.execute(
            "SELECT doc_id, title, source, ingested_at FROM documents ORDER BY ingested_at DESC, title LIMIT ?", (recent,)).fetchall()
        view = kb.graph.view
        degree = Counter()
        for (s, _, t) in view._edges:  # noqa: SLF001 - asserted edges, read-only
            degree[s] += 1
            degree[t] += 1
        about = dict(kb.store.db.execute("SELECT entity, COUNT(*) FROM about GROUP BY entity").fetchall())
    hubs = [iri for iri, _ in degree.most_common(4) if iri in view.entities]
    described = sorted((iri for iri in about if iri in view.entities and iri not in hubs[:2]),
                       key=lambda iri: (-degree[iri], view.entities[iri].label))[:2]
    templates = {"en": ("What is connected to {x}?", "What is {x}?"), "zh": ("哪些组件与 {x} 相关？", "{x} 是什么？")}
    linked, what = templates.get(lang, templates["en"])
    examples = [linked.format(x=view.entities[iri].label) for iri in hubs[:2]]
    examples += [what.format(x=view.entities[iri].label) for iri in described]
    return {"stats": stats, "examples": examples,
            "recent": [{"doc_id": d, "title": t, "source": s, "ingested_at": at} for d, t, s, at in rows]}
