"""How long `kg ontology check`'s checks take on 10,000 random entities and 20,000 relations (the timing that
tests/test_check.py no longer asserts: a loaded machine made it fail), and how long the vocabulary of the base
ontology takes to build. Prints seconds over 3 runs."""

from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rdflib import OWL, RDF, RDFS, SKOS, Literal  # noqa: E402

from kg.check import check_ontology  # noqa: E402
from ontology import BASE_ONTOLOGY_PATH, ENT, KG, Vocabulary, load_rdf  # noqa: E402

TARGET_S = 5.0  # the old test's bound


def main() -> None:
    graph = load_rdf(BASE_ONTOLOGY_PATH)
    rng = random.Random(3)
    classes = [KG.Service, KG.Database, KG.Host, KG.Team, KG.Component]
    relations = [KG.dependsOn, KG.runsOn, KG.ownedBy, KG.partOf, KG.connectsTo]
    for i in range(10_000):
        graph.add((ENT[f"e{i}"], RDF.type, OWL.NamedIndividual))
        graph.add((ENT[f"e{i}"], RDF.type, rng.choice(classes)))
        graph.add((ENT[f"e{i}"], RDFS.label, Literal(f"entity {i}")))
        graph.add((ENT[f"e{i}"], SKOS.altLabel, Literal(f"e-{i}")))
    for _ in range(20_000):
        graph.add((ENT[f"e{rng.randrange(10_000)}"], rng.choice(relations), ENT[f"e{rng.randrange(10_000)}"]))
    vocab = Vocabulary.from_graph(graph)
    times = []
    for _ in range(3):
        start = time.perf_counter()
        findings = check_ontology(graph, vocab)
        times.append(time.perf_counter() - start)
    base = load_rdf(BASE_ONTOLOGY_PATH)
    start = time.perf_counter()
    for _ in range(20):
        Vocabulary.from_graph(base)
    print(f"Vocabulary.from_graph on the base ontology: {(time.perf_counter() - start) / 20 * 1000:.1f} ms")
    print(f"check of 10k entities, {len(graph)} triples, {len(findings)} findings: "
          f"min {min(times):.2f} s, median {statistics.median(times):.2f} s (target < {TARGET_S:.0f} s)")


if __name__ == "__main__":
    main()
