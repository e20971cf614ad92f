"""Relation-table and Turtle export: CSV -> graph -> CSV round trips, checked with rdflib, and `kg export`."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
import rdflib
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rdflib import OWL, RDF, RDFS, SKOS, BNode, Literal
from rdflib.compare import isomorphic

from kg.cli import cli
from kg.export import HEADER, export_relations_csv, export_turtle
from kg.relations import import_relation_table
from ontology import BASE_ONTOLOGY_PATH, ENT, KG, Vocabulary, entity_iri, load_rdf

DATA = Path(__file__).parent / "data"
LAB = rdflib.Namespace("http://example.org/lab#")

# What tests/data/relations.csv exports: sorted by source label, relation and target label; the
# relation by name; an entity's class and aliases on the first row naming it.
FIXTURE_EXPORT = """\
source,relation,target,source_type,target_type,source_aliases,target_aliases,weight,note
LORA-02,configuredBy,心跳间隔,Device,Parameter,,heartbeat interval,,
PostgreSQL,monitoredBy,Prometheus,Database,Service,PG|Postgres,,,
Redis,partOf,缓存集群,Cache,Component,,,,
order-service,dependsOn,PostgreSQL,Service,,订单服务,,0.9,"main store, since 2021"
order-service,dependsOn,Redis,,,,,0.5,
order-service,runsOn,host-01,,Host,,,,
"""


@pytest.fixture(scope="module")
def vocab() -> Vocabulary:
    return Vocabulary.from_graph(load_rdf(BASE_ONTOLOGY_PATH))


def export(graph: rdflib.Graph, vocab: Vocabulary, warnings: list[str] | None = None) -> str:
    out = io.StringIO()
    rows = export_relations_csv(
        graph, vocab, out, warn=None if warnings is None else warnings.append
    )
    assert rows == len(list(csv.reader(io.StringIO(out.getvalue())))) - 1
    return out.getvalue()


def imported(path: Path, vocab: Vocabulary) -> rdflib.Graph:
    graph = rdflib.Graph()
    report = import_relation_table(graph, path, vocab)
    assert report.rejected == []
    return graph


def write(tmp_path: Path, text: str, name: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", newline="")
    return path


# ---------------------------------------------------------------- the fixture table


def test_fixture_table_exports_sorted_with_types_and_aliases_on_first_rows(
    vocab: Vocabulary,
) -> None:
    assert export(imported(DATA / "relations.csv", vocab), vocab) == FIXTURE_EXPORT


def test_fixture_round_trip_is_stable_and_gives_the_same_graph(
    vocab: Vocabulary, tmp_path: Path
) -> None:
    first = imported(DATA / "relations.csv", vocab)
    again = imported(write(tmp_path, export(first, vocab), "export.csv"), vocab)
    assert isomorphic(again, first)
    assert export(again, vocab) == FIXTURE_EXPORT


def test_entity_part_of_a_knowledge_base_graph_round_trips(
    vocab: Vocabulary, tmp_path: Path
) -> None:
    """In graph.ttl the base ontology sits beside the entities; the export carries only the latter."""
    graph = load_rdf(BASE_ONTOLOGY_PATH)
    ontology = set(graph)
    import_relation_table(graph, DATA / "kb" / "relations.csv", vocab)
    entity_part = rdflib.Graph()
    for triple in set(graph) - ontology:
        entity_part.add(triple)
    text = export(graph, vocab)
    again = imported(write(tmp_path, text, "export.csv"), vocab)
    assert isomorphic(again, entity_part)
    assert export(again, vocab) == text


def test_labels_sharing_a_readable_iri_keep_their_iris(vocab: Vocabulary, tmp_path: Path) -> None:
    """'a_b' came first and holds ent:a_b; 'a b' got the hashed variant. Sorted, 'a b' would come
    first and take ent:a_b on re-import, so its row waits for the row naming 'a_b'."""
    table = "source,relation,target\nx,dependsOn,a_b\na b,dependsOn,y\n"
    first = imported(write(tmp_path, table, "clash.csv"), vocab)
    assert (entity_iri("a_b"), RDFS.label, Literal("a_b")) in first
    text = export(first, vocab)
    assert text.splitlines()[1:] == ["x,dependsOn,a_b,,,,,,", "a b,dependsOn,y,,,,,,"]
    again = imported(write(tmp_path, text, "export.csv"), vocab)
    assert isomorphic(again, first)
    assert export(again, vocab) == text


def test_classes_beyond_the_first_go_on_later_rows(vocab: Vocabulary, tmp_path: Path) -> None:
    table = (
        "source,relation,target,source_type\n"
        "gateway,dependsOn,auth,Service\n"
        "gateway,runsOn,node-1,Component\n"
        "gateway,connectsTo,lb,\n"
    )
    first = imported(write(tmp_path, table, "types.csv"), vocab)
    assert {KG.Service, KG.Component} <= set(first.objects(ENT.gateway, RDF.type))
    text = export(first, vocab)
    assert text.splitlines()[1:] == [
        "gateway,connectsTo,lb,Component,,,,,",
        "gateway,dependsOn,auth,Service,,,,,",
        "gateway,runsOn,node-1,,,,,,",
    ]
    assert isomorphic(imported(write(tmp_path, text, "export.csv"), vocab), first)


def test_weights_are_written_as_the_importer_writes_them(vocab: Vocabulary) -> None:
    graph = rdflib.Graph()
    for label in ("a", "b"):
        graph.add((ENT[label], RDF.type, OWL.NamedIndividual))
        graph.add((ENT[label], RDFS.label, Literal(label)))
    graph.add((ENT.a, KG.dependsOn, ENT.b))
    axiom = BNode()
    for p, o in (
        (RDF.type, OWL.Axiom),
        (OWL.annotatedSource, ENT.a),
        (OWL.annotatedProperty, KG.dependsOn),
        (OWL.annotatedTarget, ENT.b),
        (KG.weight, Literal("0.50", datatype=rdflib.XSD.decimal)),  # as Protégé may write it
        (RDFS.comment, Literal("first", lang="en")),
        (RDFS.comment, Literal("second")),
    ):
        graph.add((axiom, p, o))
    assert export(graph, vocab).splitlines()[1] == "a,dependsOn,b,,,,,0.5,first; second"


# ---------------------------------------------------------------- what a table cannot hold


def test_what_a_table_cannot_hold_is_reported() -> None:
    graph = load_rdf(BASE_ONTOLOGY_PATH)
    graph += load_rdf(DATA / "lab.ttl")
    graph.add((LAB.alice, SKOS.altLabel, Literal("A|W")))
    graph.add((LAB.alice, SKOS.altLabel, Literal("Alice\nW")))  # made in Protégé: a relation table refuses it
    graph.add((LAB["scope-7"], KG.connectsTo, LAB["scope-7"]))
    graph.add((LAB["scope-7"], KG.dependsOn, LAB.nowhere))
    graph.add((LAB.bob, RDF.type, OWL.NamedIndividual))
    graph.add((LAB.bob, RDF.type, LAB.Undeclared))
    graph.add((LAB.bob, RDFS.label, Literal("Bob")))
    graph.add((LAB.bob, SKOS.altLabel, Literal("Alice Wang")))
    warnings: list[str] = []
    text = export(graph, Vocabulary.from_graph(graph), warnings)
    assert warnings == [
        "'Alice Wang' names 'Bob' <http://example.org/lab#bob> and '王爱丽' "
        "<http://example.org/lab#alice>; the table cannot tell them apart (importing it merges "
        "them or refuses the alias): run `kg ontology check`",
        "'Scope 7' connectsTo itself: a relation table cannot hold a self-loop",
        "'Scope 7' dependsOn <http://example.org/lab#nowhere>: the target is not an entity; the "
        "edge is not exported (run `kg ontology check`)",
        "entity 'Bob' <http://example.org/lab#bob> has no relation; a relation table cannot hold it",
        "entity 'Bob': class <http://example.org/lab#Undeclared> is not declared in the ontology; "
        "it is not exported (declare it as an owl:Class)",
        "entity '王爱丽': alias 'Alice\\nW' holds a line break or control character, which a relation table refuses "
        "in a name; it is not exported (rename it in graph.ttl)",
        "entity '王爱丽': alias 'A|W' contains '|', which the table uses between aliases; it is not "
        "exported (rename it in graph.ttl)",
    ]
    # The lab's own relation and classes are exported by name (the graph declares them); the
    # Chinese label wins, the other labels become aliases, the axiom's comment the note.
    assert text.splitlines()[1:] == [
        "Scope 7,calibratedBy,王爱丽,Oscilloscope,Technician,,Alice Wang,,every January"
    ]


def test_a_protege_graph_exports_stably(tmp_path: Path) -> None:
    graph = load_rdf(BASE_ONTOLOGY_PATH)
    graph += load_rdf(DATA / "lab.ttl")
    lab_vocab = Vocabulary.from_graph(graph)
    first = export(graph, lab_vocab)
    fresh = load_rdf(BASE_ONTOLOGY_PATH)
    fresh += load_rdf(DATA / "lab.ttl")
    entities = set(fresh.subjects(RDF.type, OWL.NamedIndividual))
    for triple in list(fresh):
        if triple[0] in entities or isinstance(triple[0], BNode):
            fresh.remove(triple)  # the ontology of the lab stays, its individuals go
    report = import_relation_table(fresh, write(tmp_path, first, "lab.csv"), lab_vocab)
    assert report.rejected == [] and report.new_edges == 1
    assert export(fresh, lab_vocab) == first


# ---------------------------------------------------------------- property: CSV -> graph -> CSV

# Labels with what CSV and the importer must survive: commas, quotes, spaces, Chinese, '|', and
# pairs that mint the same readable IRI ("a b" / "a_b").
LABEL = st.one_of(
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"))
        | st.sampled_from(list(',"| _中文缓存')),
        min_size=1,
        max_size=8,
    ).map(str.strip),
    st.sampled_from(["a b", "a_b", "a  b", "订单 服务", "订单_服务", "x,y", '"q"']),
).filter(bool)
ALIAS = LABEL.filter(lambda text: "|" not in text)
RELATIONS = ["dependsOn", "depends on", "依赖", "partOf", "runsOn", "connectsTo", "ownedBy"]
CLASSES = ["Service", "Database", "Component", "Entity", "服务"]
WEIGHTS = st.one_of(
    st.sampled_from(["", "", "0", "1", "0.5", "0.25", "1e-3", "0.123456789", "1.0"]),
    st.floats(0, 1).map(repr),
)


@st.composite
def relation_tables(draw) -> list[list[str]]:
    names = draw(st.lists(st.one_of(LABEL, ALIAS), min_size=2, max_size=14, unique=True))
    split = draw(st.integers(2, len(names)))
    labels, spare = names[:split], names[split:]
    aliases: dict[str, list[str]] = {label: [] for label in labels}
    for alias in spare:  # every alias names one entity only, and is nobody's label
        if "|" not in alias:
            aliases[draw(st.sampled_from(labels))].append(alias)
    classes = {label: draw(st.lists(st.sampled_from(CLASSES), max_size=2)) for label in labels}
    edges, seen = [], set()
    for _ in range(draw(st.integers(1, 12))):
        source, target = draw(
            st.lists(st.sampled_from(labels), min_size=2, max_size=2, unique=True)
        )
        relation = draw(st.sampled_from(RELATIONS))
        if (source, _same_relation(relation), target) not in seen:  # a duplicate row is refused
            seen.add((source, _same_relation(relation), target))
            edges.append((source, relation, target))
    named: set[str] = set()
    rows = []
    for source, relation, target in edges:
        cells = [source, relation, target]
        types, alias_cells = [], []
        for label in (source, target):
            cls = draw(st.sampled_from(classes[label])) if classes[label] else ""
            types.append(cls if draw(st.booleans()) or label not in named else "")
            first = label not in named or draw(st.booleans())
            alias_cells.append("|".join(aliases[label]) if first else "")
            named.add(label)
        cells += types + alias_cells
        cells += [draw(WEIGHTS), draw(st.one_of(st.just(""), LABEL))]
        rows.append(cells)
    return rows


def _same_relation(text: str) -> str:
    return "dependsOn" if text in ("depends on", "依赖") else text


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=relation_tables())
def test_csv_import_export_import_export_is_stable(
    vocab: Vocabulary, tmp_path: Path, rows: list[list[str]]
) -> None:
    table = io.StringIO()
    writer = csv.writer(table)
    writer.writerow(HEADER)
    writer.writerows(rows)
    first = imported(write(tmp_path, table.getvalue(), "table.csv"), vocab)
    exported = export(first, vocab)
    again = imported(write(tmp_path, exported, "export.csv"), vocab)
    assert isomorphic(again, first)
    assert export(again, vocab) == exported
    # Every row of the table is a row of the export, by label and relation name.
    relation = {r: vocab.resolve_property(r).name for r in RELATIONS}
    out = list(csv.reader(io.StringIO(exported)))[1:]
    assert sorted((s, relation[r], t) for s, r, t, *_ in rows) == sorted(
        (s, r, t) for s, r, t, *_ in out
    )


# ---------------------------------------------------------------- Turtle


def test_turtle_export_is_atomic_and_isomorphic(vocab: Vocabulary, tmp_path: Path) -> None:
    graph = load_rdf(BASE_ONTOLOGY_PATH)
    graph += load_rdf(DATA / "lab.ttl")  # blank nodes: a Protégé axiom annotation
    import_relation_table(graph, DATA / "relations.csv", vocab)
    target = tmp_path / "out" / "graph.ttl"
    target.parent.mkdir()
    target.write_text("old content", encoding="utf-8")
    assert export_turtle(graph, target) == len(graph)
    assert isomorphic(load_rdf(target), graph)
    assert sorted(p.name for p in target.parent.iterdir()) == ["graph.ttl"]


# ---------------------------------------------------------------- kg export


def kg(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_kg_export_round_trips_through_two_knowledge_bases(tmp_path: Path) -> None:
    first_kb, second_kb = tmp_path / "first", tmp_path / "second"
    assert kg("import", DATA / "relations.csv", "--data-dir", first_kb).exit_code == 0
    result = kg("export", "--data-dir", first_kb)
    assert result.exit_code == 0, result.output
    assert result.stdout == FIXTURE_EXPORT and result.stderr == ""

    out = tmp_path / "exported.csv"
    result = kg("export", "-o", out, "--data-dir", first_kb)
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr == f"exported 6 relations to {out}\n"
    assert out.read_bytes() == b"\xef\xbb\xbf" + FIXTURE_EXPORT.encode()  # a BOM, for Excel
    assert out.stat().st_mode & 0o777 == 0o644  # not the temporary file's private 0600

    assert kg("import", out, "--data-dir", second_kb).exit_code == 0
    assert kg("export", "--data-dir", second_kb).stdout == FIXTURE_EXPORT
    assert isomorphic(load_rdf(second_kb / "graph.ttl"), load_rdf(first_kb / "graph.ttl"))


def test_kg_export_turtle(tmp_path: Path) -> None:
    data_dir = tmp_path / "kb"
    kg("import", DATA / "relations.csv", "--data-dir", data_dir)
    out = tmp_path / "graph-copy.ttl"
    result = kg("export", "--format", "turtle", "-o", out, "--data-dir", data_dir)
    assert result.exit_code == 0
    graph = load_rdf(data_dir / "graph.ttl")
    assert result.stderr == f"exported {len(graph)} triples to {out}\n"
    assert isomorphic(load_rdf(out), graph)
    printed = kg("export", "--format", "turtle", "--data-dir", data_dir).stdout
    assert isomorphic(rdflib.Graph().parse(data=printed, format="turtle"), graph)


def test_kg_export_to_a_file_named_as_an_argument(tmp_path: Path) -> None:
    """`kg export relations.csv` and `kg export graph.ttl`, as a user types them: the file's suffix picks the format."""
    data_dir = tmp_path / "kb"
    kg("import", DATA / "relations.csv", "--data-dir", data_dir)
    table, turtle = tmp_path / "relations.csv", tmp_path / "graph.ttl"
    assert kg("export", table, "--data-dir", data_dir).stderr == f"exported 6 relations to {table}\n"
    assert table.read_bytes() == b"\xef\xbb\xbf" + FIXTURE_EXPORT.encode()
    graph = load_rdf(data_dir / "graph.ttl")
    assert kg("export", turtle, "--data-dir", data_dir).stderr == f"exported {len(graph)} triples to {turtle}\n"
    assert isomorphic(load_rdf(turtle), graph)
    # An explicit --format wins over the suffix; two different files is a mistake, said as such.
    assert kg("export", tmp_path / "table.ttl", "--format", "csv", "--data-dir", data_dir).exit_code == 0
    assert (tmp_path / "table.ttl").read_text(encoding="utf-8-sig") == FIXTURE_EXPORT
    result = CliRunner().invoke(cli, ["export", str(table), "-o", str(turtle), "--data-dir", str(data_dir)])
    assert result.exit_code == 2 and "two files to write" in result.stderr


def test_kg_export_lists_what_it_leaves_out_on_stderr(tmp_path: Path) -> None:
    data_dir = tmp_path / "kb"
    kg("import", DATA / "relations.csv", "--data-dir", data_dir)
    extra = write(
        tmp_path,
        "@prefix ent: <https://kgrag.dev/entity/> .\n"
        "@prefix kg: <https://kgrag.dev/ontology#> .\n"
        "ent:Redis kg:dependsOn ent:Redis .\n",
        "loop.ttl",
    )
    kg("import", extra, "--data-dir", data_dir)
    result = kg("export", "--data-dir", data_dir)
    assert result.exit_code == 0 and result.stdout == FIXTURE_EXPORT
    assert result.stderr == (
        "not exported: 'Redis' dependsOn itself: a relation table cannot hold a self-loop\n"
    )


def test_kg_export_without_a_knowledge_base(tmp_path: Path) -> None:
    result = kg("export", "--data-dir", tmp_path / "missing")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: no knowledge base in ")
