"""Regression: a type cell 'Entity' after a row that gave a real class added kg:Entity back.

`relations.csv` rows `a,dependsOn,b,Service` then `a,runsOn,h,Entity` typed `a` as both
kg:Service and kg:Entity, while the same rows in the other order typed it kg:Service only, so an
import depended on row order (and an exported table did not re-import to the same graph).
"""

from __future__ import annotations

from pathlib import Path

import rdflib
from rdflib import OWL, RDF
from rdflib.compare import isomorphic

from kg.relations import import_relation_table
from ontology import BASE_ONTOLOGY_PATH, ENT, KG, Vocabulary, load_rdf


def test_entity_type_cell_never_adds_the_placeholder_beside_a_real_class(tmp_path: Path) -> None:
    vocab = Vocabulary.from_graph(load_rdf(BASE_ONTOLOGY_PATH))
    rows = ["a,dependsOn,b,Service", "a,runsOn,h,Entity"]
    graphs = []
    for order in (rows, rows[::-1]):
        path = tmp_path / "relations.csv"
        path.write_text("source,relation,target,source_type\n" + "\n".join(order) + "\n")
        graph = rdflib.Graph()
        import_relation_table(graph, path, vocab)
        assert set(graph.objects(ENT.a, RDF.type)) == {OWL.NamedIndividual, KG.Service}
        graphs.append(graph)
    assert isomorphic(*graphs)
