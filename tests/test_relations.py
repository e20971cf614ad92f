"""The relation-table importer: real CSV files in, triples checked with rdflib."""

from __future__ import annotations

import csv
import random
import time
from dataclasses import replace
from pathlib import Path

import pytest
import rdflib
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rdflib import OWL, RDF, RDFS, SKOS, Literal, URIRef
from rdflib.compare import isomorphic

from kg.errors import InputError, RelationTableError
from kg.relations import (
    ImportReport,
    RelationRow,
    RowProblem,
    apply_relation_rows,
    import_relation_table,
    read_relation_table,
)
from ontology import BASE_ONTOLOGY_PATH, ENT, KG, Vocabulary, entity_iri, load_rdf

DATA = Path(__file__).parent / "data"
LAB = rdflib.Namespace("http://example.org/lab#")
HEADER = (
    "source,relation,target,source_type,target_type,source_aliases,target_aliases,weight,note\n"
)


@pytest.fixture(scope="module")
def vocab() -> Vocabulary:
    return Vocabulary.from_graph(load_rdf(BASE_ONTOLOGY_PATH))


def write(tmp_path: Path, text: str, name: str = "relations.csv", encoding: str = "utf-8") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return path


def problems_of(table_or_error) -> list[tuple[int, str, str]]:
    problems = getattr(table_or_error, "problems", None) or table_or_error.rejected
    return [(p.line, p.column, p.message) for p in problems]


# ---------------------------------------------------------------- a good table


def test_good_table_writes_exactly_the_expected_triples(vocab: Vocabulary) -> None:
    graph = rdflib.Graph()
    report = import_relation_table(graph, DATA / "relations.csv", vocab)
    assert isomorphic(graph, load_rdf(DATA / "relations.expected.ttl"))
    assert (report.rows, report.new_entities, report.new_edges, report.unchanged_edges) == (
        6,
        8,
        6,
        0,
    )
    assert report.rejected == [] and report.encoding == "utf-8" and not report.dry_run
    assert report.added_triples == len(graph) == 45
    assert report.summary() == "imported 6 rows: 8 new entities, 6 new edges, 0 already present"
    weight = graph.value(next(graph.subjects(OWL.annotatedTarget, ENT.PostgreSQL)), KG.weight)
    assert weight == Literal("0.9", datatype=rdflib.XSD.decimal)


def test_reimport_changes_nothing(vocab: Vocabulary) -> None:
    graph = rdflib.Graph()
    import_relation_table(graph, DATA / "relations.csv", vocab)
    before = set(graph)
    report = import_relation_table(graph, DATA / "relations.csv", vocab)
    assert set(graph) == before
    assert (report.new_entities, report.new_edges, report.unchanged_edges) == (0, 0, 6)
    assert report.added_triples == report.removed_triples == 0
    assert report.summary() == "nothing changed: all 6 rows were already in the graph"


def test_imported_graph_reads_back_from_rdfxml_as_protege_would(vocab: Vocabulary) -> None:
    graph = rdflib.Graph()
    import_relation_table(graph, DATA / "relations.csv", vocab)
    assert isomorphic(rdflib.Graph().parse(data=graph.serialize(format="xml"), format="xml"), graph)
    # The entities are individuals of the ontology's classes, as Protégé lists them.
    assert set(graph.subjects(RDF.type, OWL.NamedIndividual)) == set(graph.subjects(RDFS.label))


def test_progress_is_reported(vocab: Vocabulary) -> None:
    seen: list[int] = []
    import_relation_table(rdflib.Graph(), DATA / "relations.csv", vocab, progress=seen.append)
    assert seen == [6]


# ---------------------------------------------------------------- bad rows


BAD_ROWS = [
    (3, "relation", "relation 'depend_on' is not in the ontology (did you mean 'dependsOn'?)"),
    (4, "source", "source is empty; every row needs a source, a relation and a target"),
    (5, "relation", "relation is empty; every row needs a source, a relation and a target"),
    (6, "target", "target is empty; every row needs a source, a relation and a target"),
    (
        7,
        "target",
        "source and target are both 'nginx'; a relation must connect two different entities: "
        "fix the target or delete the row",
    ),
    (
        8,
        "source_type",
        "source_type 'Servce' is not a class in the ontology (did you mean 'Service'?)",
    ),
    (
        9,
        "target_type",
        "target_type 'Cahce' is not a class in the ontology (did you mean 'Cache'?)",
    ),
    (
        10,
        "weight",
        "weight 'high' must be a number from 0 to 1 (e.g. 0.8); leave it empty for the default",
    ),
    (
        11,
        "weight",
        "weight '1.5' must be a number from 0 to 1 (e.g. 0.8); leave it empty for the default",
    ),
    (12, "", "duplicate of line 2; delete one of the two rows"),
    (
        13,
        "",
        "expected 7 fields (source,relation,target,source_type,target_type,weight,note), found 8; "
        "put values that contain a comma in double quotes, and keep one field per column",
    ),
    (
        14,
        "weight",
        "line 2 has the same source, relation and target with weight '0.7'; keep one of the two rows",
    ),
    (
        15,
        "relation",
        "relation 'xyzzy' is not in the ontology; use a relation of the ontology (affectedBy, "
        "affects, causedBy, causes, configuredBy, configures, connectsTo, dependsOn, ...) or declare "
        "it there as an owl:ObjectProperty",
    ),
]


def test_every_kind_of_bad_row_is_reported_with_line_column_and_fix(vocab: Vocabulary) -> None:
    table = read_relation_table(DATA / "relations_bad.csv", vocab)
    assert problems_of(table) == BAD_ROWS
    assert [row.line for row in table.rows] == [2, 16]
    assert str(table.problems[0]) == (
        "relations_bad.csv:3: relation 'depend_on' is not in the ontology (did you mean 'dependsOn'?)"
    )
    assert table.problems[0].value == "depend_on"


def test_failed_import_changes_nothing(vocab: Vocabulary) -> None:
    graph = load_rdf(BASE_ONTOLOGY_PATH)
    before = set(graph)
    with pytest.raises(RelationTableError) as caught:
        import_relation_table(graph, DATA / "relations_bad.csv", vocab)
    assert set(graph) == before
    error = caught.value
    assert error.message == (
        "relations_bad.csv: 13 bad rows; nothing was imported (fix them, or use --skip-invalid to "
        "import the good rows)"
    )
    assert error.problems == [
        f"relations_bad.csv:{line}: {message}" for line, _, message in BAD_ROWS
    ]
    assert isinstance(error, InputError) and error.status == 400 and error.exit_code == 2


def test_skip_invalid_imports_the_good_rows_and_writes_rejects(
    vocab: Vocabulary, tmp_path: Path
) -> None:
    graph = rdflib.Graph()
    rejects = tmp_path / "rejects.csv"
    report = import_relation_table(
        graph, DATA / "relations_bad.csv", vocab, skip_invalid=True, rejects_path=rejects
    )
    assert (report.rows, report.new_edges) == (2, 2)
    assert problems_of(report) == BAD_ROWS
    assert (
        report.summary()
        == "imported 2 rows: 3 new entities, 2 new edges, 0 already present; 13 bad rows skipped"
    )
    assert (ENT.nginx, KG.runsOn, ENT["host-01"]) in graph
    assert (ENT.nginx, KG.connectsTo, ENT.Redis) in graph
    assert rejects.read_bytes().startswith(b"\xef\xbb\xbf")  # Excel reads it as UTF-8
    with rejects.open(encoding="utf-8-sig", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == [
        "source",
        "relation",
        "target",
        "source_type",
        "target_type",
        "weight",
        "note",
        "problem",
    ]
    assert rows[1] == [
        "nginx", "depend_on", "order-service", "", "", "", "",
        "line 3: relation 'depend_on' is not in the ontology (did you mean 'dependsOn'?)",
    ]  # fmt: skip
    assert rows[9][5] == "1.5" and rows[9][7].startswith("line 11: weight '1.5'")
    assert rows[11][:3] == ["nginx", "dependsOn", "Redis"] and rows[11][7].startswith(
        "line 13: expected 7"
    )
    assert len(rows) == 1 + 13


def test_a_fixed_rejects_file_imports_as_it_is(vocab: Vocabulary, tmp_path: Path) -> None:
    rejects = tmp_path / "rejects.csv"
    graph = rdflib.Graph()
    import_relation_table(
        graph, DATA / "relations_bad.csv", vocab, skip_invalid=True, rejects_path=rejects
    )
    with rejects.open(encoding="utf-8-sig", newline="") as f:
        rows = list(csv.reader(f))
    fixed = tmp_path / "fixed.csv"
    with fixed.open("w", encoding="utf-8-sig", newline="") as f:
        csv.writer(f).writerows(
            [rows[0], ["nginx", "dependsOn", "order-service", "", "", "", "", rows[1][7]]]
        )
    report = import_relation_table(graph, fixed, vocab)
    assert report.new_edges == 1 and report.encoding == "utf-8-sig"


def test_rows_rejected_while_applying(vocab: Vocabulary, tmp_path: Path) -> None:
    # 'PG' is an alias of 'PostgreSQL', so this row links an entity to itself.
    path = write(
        tmp_path, HEADER + "PostgreSQL,dependsOn,Redis,,,PG,,,\nPG,relatedTo,PostgreSQL,,,,,,\n"
    )
    with pytest.raises(RelationTableError) as caught:
        import_relation_table(rdflib.Graph(), path, vocab)
    assert caught.value.problems == [
        "relations.csv:3: 'PG' and 'PostgreSQL' name the same entity (one is an alias of the other); "
        "a relation must connect two different entities"
    ]
    rejects = tmp_path / "rejects.csv"
    report = import_relation_table(
        rdflib.Graph(), path, vocab, skip_invalid=True, rejects_path=rejects
    )
    assert report.rows == 1
    assert (
        rejects.read_text(encoding="utf-8-sig")
        .splitlines()[1]
        .startswith(
            "PG,relatedTo,PostgreSQL,,,,,,,line 3: 'PG' and 'PostgreSQL' name the same entity"
        )
    )


def test_alias_claimed_by_two_entities(vocab: Vocabulary, tmp_path: Path) -> None:
    path = write(
        tmp_path, HEADER + "PostgreSQL,dependsOn,disk,,,PG,,,\nPangu,dependsOn,disk,,,PG,,,\n"
    )
    table = read_relation_table(path, vocab)
    assert problems_of(table) == [
        (
            3,
            "source_aliases",
            "alias 'PG' is already an alias of 'PostgreSQL' (line 2); an alias can name only one entity",
        )
    ]


def test_ambiguous_relation_label(tmp_path: Path) -> None:
    graph = load_rdf(BASE_ONTOLOGY_PATH)
    graph.add((KG.affects, SKOS.altLabel, Literal("hits")))
    graph.add((KG.requiredBy, SKOS.altLabel, Literal("hits")))
    vocab = Vocabulary.from_graph(graph)
    table = read_relation_table(write(tmp_path, "source,relation,target\na,hits,b\n"), vocab)
    assert problems_of(table) == [
        (
            2,
            "relation",
            "relation 'hits' is ambiguous: it is a label of 'affects' and 'requiredBy'; write the "
            "relation's name instead",
        )
    ]


# ---------------------------------------------------------------- dry run


def test_dry_run_counts_but_changes_nothing(vocab: Vocabulary, tmp_path: Path) -> None:
    graph = load_rdf(BASE_ONTOLOGY_PATH)
    before = set(graph)
    rejects = tmp_path / "rejects.csv"
    dry = import_relation_table(
        graph, DATA / "relations.csv", vocab, dry_run=True, rejects_path=rejects
    )
    assert set(graph) == before and not rejects.exists()
    assert dry.dry_run
    assert (
        dry.summary()
        == "dry run: would import 6 rows: 8 new entities, 6 new edges, 0 already present"
    )
    real = import_relation_table(graph, DATA / "relations.csv", vocab)
    assert (dry.new_entities, dry.new_edges, dry.added_triples) == (
        real.new_entities,
        real.new_edges,
        real.added_triples,
    )
    again = import_relation_table(graph, DATA / "relations.csv", vocab, dry_run=True)
    assert again.summary() == "dry run: nothing would change: all 6 rows were already in the graph"
    with pytest.raises(RelationTableError, match="13 bad rows; nothing was imported"):
        import_relation_table(graph, DATA / "relations_bad.csv", vocab, dry_run=True)


# ---------------------------------------------------------------- encodings and headers


def test_utf8_with_bom(vocab: Vocabulary, tmp_path: Path) -> None:
    text = (DATA / "relations.csv").read_text(encoding="utf-8")
    path = write(tmp_path, text, encoding="utf-8-sig")
    graph = rdflib.Graph()
    report = import_relation_table(graph, path, vocab)
    assert report.encoding == "utf-8-sig"
    assert isomorphic(graph, load_rdf(DATA / "relations.expected.ttl"))


def test_gbk_is_detected_and_said(vocab: Vocabulary, tmp_path: Path) -> None:
    text = (DATA / "relations.csv").read_text(encoding="utf-8")
    path = write(tmp_path, text, encoding="gbk")
    graph = rdflib.Graph()
    report = import_relation_table(graph, path, vocab)
    assert report.encoding == "gbk"
    assert isomorphic(graph, load_rdf(DATA / "relations.expected.ttl"))
    assert report.summary() == (
        "imported 6 rows: 8 new entities, 6 new edges, 0 already present; the file was read as GBK "
        '(save it as "CSV UTF-8" to be sure of the characters)'
    )


def test_a_name_with_a_line_break_or_a_terminal_escape_is_a_bad_row(vocab: Vocabulary, tmp_path: Path) -> None:
    # A pack's table is someone else's: what it names is printed by `kg entity` and in the answers' facts.
    path = tmp_path / "relations.csv"
    with path.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows([
            ["source", "relation", "target", "source_aliases", "note"],
            ["\x1b]0;pwned\x07evil", "dependsOn", "redis", "", ""],
            ["multi\nline", "dependsOn", "redis", "", ""],
            ["web", "dependsOn", "redis", "a\tb", ""],
            ["api", "dependsOn", "redis", "", "two lines\nof note\tare fine"],
            ["cron", "dependsOn", "redis", "", "\x1b[2Jcleared"],
        ])
    table = read_relation_table(path, vocab)
    assert problems_of(table) == [
        (2, "source", "source holds a terminal escape (ESC): a name is one line of plain text; remove it"),
        (3, "source", "source holds a line break: a name is one line of plain text; remove it"),
        (5, "source_aliases", "source_aliases holds a tab: a name is one line of plain text; remove it"),
        (8, "note", "note holds a terminal escape (ESC): remove it"),  # quoted line breaks above: line 8
    ]
    assert [r.source for r in table.rows] == ["api"]  # the note's line break and tab are kept


def test_undecodable_file(vocab: Vocabulary, tmp_path: Path) -> None:
    path = tmp_path / "relations.csv"
    path.write_bytes(b"source,relation,target\nb\xff\xfe,dependsOn,c\n")
    with pytest.raises(RelationTableError) as caught:
        read_relation_table(path, vocab)
    assert str(caught.value) == (
        "relations.csv: the file is neither UTF-8, GBK nor Big5 (byte 0xff at offset 24); in Excel use "
        'File > Save As... > "CSV UTF-8 (Comma delimited) (*.csv)"'
    )


def test_utf16_file(vocab: Vocabulary, tmp_path: Path) -> None:
    path = write(tmp_path, "source,relation,target\na,dependsOn,b\n", encoding="utf-16")
    with pytest.raises(RelationTableError, match=r'is UTF-16 \("Unicode Text"\)'):
        read_relation_table(path, vocab)


@pytest.mark.parametrize(
    "header, message",
    [
        (
            "source,relation,target,colour,Size",
            "relations.csv: unknown columns 'colour', 'Size'. The first line must name the columns: "
            "source, relation, target (required) and source_type, target_type, source_aliases, "
            "target_aliases, weight, note (optional)",
        ),
        (
            "source,relation,weight",
            "relations.csv: missing required column 'target'. The first line must name the columns: "
            "source, relation, target (required) and source_type, target_type, source_aliases, "
            "target_aliases, weight, note (optional)",
        ),
        (
            "from,relation,to",
            "relations.csv: missing required columns 'source', 'target'; unknown columns 'from', 'to'. "
            "The first line must name the columns: source, relation, target (required) and "
            "source_type, target_type, source_aliases, target_aliases, weight, note (optional)",
        ),
        (
            "source,relation,target,source",
            "relations.csv: column 'source' appears more than once. The first line must name the "
            "columns: source, relation, target (required) and source_type, target_type, "
            "source_aliases, target_aliases, weight, note (optional)",
        ),
        (
            "source;relation;target",
            "relations.csv: missing required columns 'source', 'relation', 'target'; unknown column "
            "'source;relation;target'. The first line must name the columns: source, relation, "
            "target (required) and source_type, target_type, source_aliases, target_aliases, "
            'weight, note (optional); this file is not comma-separated: in Excel save it as "CSV '
            'UTF-8 (Comma delimited)"',
        ),
    ],
)
def test_bad_headers(vocab: Vocabulary, tmp_path: Path, header: str, message: str) -> None:
    path = write(tmp_path, header + "\na,dependsOn,b\n")
    graph = rdflib.Graph()
    with pytest.raises(RelationTableError) as caught:
        import_relation_table(graph, path, vocab)
    assert str(caught.value) == message
    assert len(graph) == 0


def test_header_is_forgiving_about_case_spaces_and_excel_leftovers(
    vocab: Vocabulary, tmp_path: Path
) -> None:
    path = write(
        tmp_path, "\n Source ,Relation,TARGET,Source Type,,\r\na,dependsOn,b,Service,,\r\n,,,,,\r\n"
    )
    table = read_relation_table(path, vocab)
    assert table.problems == []
    assert table.rows == [RelationRow(3, "a", "dependsOn", "b", "Service", None)]


def test_unclosed_quote_and_unsplittable_line(vocab: Vocabulary, tmp_path: Path) -> None:
    table = read_relation_table(
        write(tmp_path, 'source,relation,target\na,"dependsOn,b\nc,dependsOn,d\n'), vocab
    )
    assert problems_of(table) == [
        (
            2,
            "",
            "expected 3 fields (source,relation,target), found 2; a double quote opened on this "
            "line is never closed",
        )
    ]
    huge = "x" * (csv.field_size_limit() + 1)
    path = write(
        tmp_path, f"source,relation,target\na,dependsOn,b\n{huge},dependsOn,c\nd,dependsOn,e\n"
    )
    with pytest.raises(RelationTableError) as caught:
        read_relation_table(path, vocab)
    assert str(caught.value) == (
        "relations.csv:3: cannot split this line into fields (field larger than field limit (131072))"
    )


def test_empty_file_and_unreadable_file(vocab: Vocabulary, tmp_path: Path) -> None:
    with pytest.raises(RelationTableError) as caught:
        read_relation_table(write(tmp_path, "\ufeff\n  \n"), vocab)
    assert str(caught.value) == (
        "relations.csv: the file is empty; its first line must be the header source,relation,target "
        "(optional: source_type,target_type,source_aliases,target_aliases,weight,note)"
    )
    with pytest.raises(RelationTableError, match=r"^missing\.csv: cannot read the file \("):
        read_relation_table(tmp_path / "missing.csv", vocab)


def test_header_only(vocab: Vocabulary, tmp_path: Path) -> None:
    report = import_relation_table(
        rdflib.Graph(), write(tmp_path, "source,relation,target\n"), vocab
    )
    assert report.summary() == "nothing to import: the table has no rows"


def test_quoted_fields_with_commas_quotes_and_newlines(vocab: Vocabulary, tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'source,relation,target,note\n"a, the first",dependsOn,"b ""quoted""","two\nlines"\nc,dependsOn,d,\n',
    )
    table = read_relation_table(path, vocab)
    assert [(r.line, r.source, r.target, r.note) for r in table.rows] == [
        (2, "a, the first", 'b "quoted"', "two\nlines"),
        (4, "c", "d", None),
    ]


# ---------------------------------------------------------------- entities and aliases


def test_alias_given_earlier_is_reused(vocab: Vocabulary, tmp_path: Path) -> None:
    graph = rdflib.Graph()
    path = write(
        tmp_path,
        HEADER + "PostgreSQL,dependsOn,disk,Database,,PG,,,\norder-service,dependsOn,PG,,,,,,\n",
    )
    report = import_relation_table(graph, path, vocab)
    assert report.new_entities == 3
    assert (ENT["order-service"], KG.dependsOn, ENT.PostgreSQL) in graph
    assert (None, None, ENT.PG) not in graph and (ENT.PG, None, None) not in graph


def test_alias_given_later_reuses_the_entity(vocab: Vocabulary, tmp_path: Path) -> None:
    graph = rdflib.Graph()
    path = write(
        tmp_path,
        HEADER + "order-service,dependsOn,PG,,,,,,\nPostgreSQL,dependsOn,disk,Database,,PG,,,\n",
    )
    report = import_relation_table(graph, path, vocab)
    assert report.new_entities == 3
    assert (ENT["order-service"], KG.dependsOn, ENT.PostgreSQL) in graph
    assert set(graph.objects(ENT.PostgreSQL, SKOS.altLabel)) == {Literal("PG")}
    assert set(graph.objects(ENT.PostgreSQL, RDF.type)) == {OWL.NamedIndividual, KG.Database}


def test_alias_from_an_earlier_import_is_reused(vocab: Vocabulary, tmp_path: Path) -> None:
    graph = rdflib.Graph()
    import_relation_table(graph, DATA / "relations.csv", vocab)
    path = write(
        tmp_path,
        HEADER + "Postgres,runsOn,host-01,,,,,,\n订单服务,ownedBy,payments team,,Team,,,,\n",
    )
    report = import_relation_table(graph, path, vocab)
    assert report.new_entities == 1  # only the team
    assert (ENT.PostgreSQL, KG.runsOn, ENT["host-01"]) in graph
    assert (ENT["order-service"], KG.ownedBy, ENT.payments_team) in graph
    # Reusing an entity by name adds no placeholder type and no duplicate label.
    assert set(graph.objects(ENT.PostgreSQL, RDF.type)) == {OWL.NamedIndividual, KG.Database}
    assert len(set(graph.objects(ENT.PostgreSQL, RDFS.label))) == 1


def test_protege_individuals_and_user_terms_are_reused(tmp_path: Path) -> None:
    graph = load_rdf(BASE_ONTOLOGY_PATH) + load_rdf(DATA / "lab.ttl")
    vocab = Vocabulary.from_graph(graph)
    path = write(
        tmp_path,
        HEADER
        + "Scope 7,校准人,Bob,,Technician,,,0.6,\n"
        + "王爱丽,handles urgently,Scope 7,,,,,,\n"
        + "Scope 7,partOf,bench 3,,,,,,\n",
    )
    report = import_relation_table(graph, path, vocab)
    assert report.new_entities == 2
    assert (LAB["scope-7"], LAB.calibratedBy, ENT.Bob) in graph
    assert (LAB.alice, LAB.handlesUrgently, LAB["scope-7"]) in graph  # matched by its @zh label
    assert set(graph.objects(ENT.Bob, RDF.type)) == {OWL.NamedIndividual, LAB.Technician}
    assert set(graph.objects(LAB["scope-7"], RDF.type)) == {OWL.NamedIndividual, LAB.Oscilloscope}
    assert (LAB["scope-7"], SKOS.altLabel, None) not in graph
    # The existing Protégé axiom on the same edge is reused and gets the weight.
    axioms = list(graph.subjects(OWL.annotatedTarget, LAB.alice))
    assert len(axioms) == 1
    assert graph.value(axioms[0], RDFS.comment) == Literal("every January", lang="en")


def test_labels_are_entities_only(vocab: Vocabulary, tmp_path: Path) -> None:
    # "service" is the label of the class kg:Service: a row naming it means a new entity.
    graph = load_rdf(BASE_ONTOLOGY_PATH)
    import_relation_table(
        graph, write(tmp_path, "source,relation,target\nservice,dependsOn,database\n"), vocab
    )
    assert (ENT.service, KG.dependsOn, ENT.database) in graph


def test_placeholder_type_gives_way_to_a_real_class_in_any_order(
    vocab: Vocabulary, tmp_path: Path
) -> None:
    rows = ["a,dependsOn,b,,,,,,", "a,runsOn,h,Service,Host,,,,"]
    graphs = []
    for order in (rows, rows[::-1]):
        graph = rdflib.Graph()
        import_relation_table(graph, write(tmp_path, HEADER + "\n".join(order) + "\n"), vocab)
        graphs.append(graph)
        assert set(graph.objects(ENT.a, RDF.type)) == {OWL.NamedIndividual, KG.Service}
        assert set(graph.objects(ENT.b, RDF.type)) == {OWL.NamedIndividual, KG.Entity}
    assert isomorphic(*graphs)


def test_labels_that_share_a_readable_iri_stay_apart(vocab: Vocabulary, tmp_path: Path) -> None:
    graph = rdflib.Graph()
    import_relation_table(
        graph, write(tmp_path, "source,relation,target\nmax conn,configures,db\n"), vocab
    )
    report = import_relation_table(
        graph, write(tmp_path, "source,relation,target\nmax_conn,configures,db\n"), vocab
    )
    assert report.new_entities == 1
    other = next(graph.subjects(RDFS.label, Literal("max_conn")))
    assert other != entity_iri("max conn") and str(other).startswith(
        str(entity_iri("max_conn")) + "-"
    )
    again = import_relation_table(
        graph, write(tmp_path, "source,relation,target\nmax_conn,configures,db\n"), vocab
    )
    assert again.added_triples == 0


def test_a_new_weight_or_note_updates_the_axiom(vocab: Vocabulary, tmp_path: Path) -> None:
    graph = rdflib.Graph()
    import_relation_table(
        graph, write(tmp_path, "source,relation,target,weight,note\na,dependsOn,b,0.5,old\n"), vocab
    )
    report = import_relation_table(
        graph,
        write(tmp_path, "source,relation,target,weight,note\na,dependsOn,b,0.25,new\n"),
        vocab,
    )
    assert (report.updated_edges, report.unchanged_edges, report.new_edges) == (1, 0, 0)
    assert report.summary() == (
        "imported 1 row: 0 new entities, 0 new edges, 0 already present, 1 with a new weight or note"
    )
    (axiom,) = graph.subjects(RDF.type, OWL.Axiom)
    assert set(graph.objects(axiom, KG.weight)) == {Literal("0.25", datatype=rdflib.XSD.decimal)}
    assert set(graph.objects(axiom, RDFS.comment)) == {Literal("new")}
    # A row without weight or note leaves the annotation alone.
    plain = import_relation_table(
        graph, write(tmp_path, "source,relation,target\na,dependsOn,b\n"), vocab
    )
    assert plain.added_triples == plain.removed_triples == 0


def test_apply_relation_rows_directly(vocab: Vocabulary) -> None:
    graph = rdflib.Graph()
    rows = [
        RelationRow(1, "x", "dependsOn", "y", None, None),
        RelationRow(2, "x", "noSuchRelation", "y", None, None),
    ]
    report = apply_relation_rows(graph, rows, vocab)
    assert isinstance(report, ImportReport)
    assert (report.rows, report.new_edges) == (1, 1)
    assert report.rejected == [
        RowProblem(
            2, "relation", "noSuchRelation", "relation 'noSuchRelation' is not in the ontology"
        )
    ]
    assert str(report.rejected[0]) == "line 2: relation 'noSuchRelation' is not in the ontology"


# ---------------------------------------------------------------- properties and scale

LABELS = ["a", "b", "a b", "a_b", "PG", "PostgreSQL", "订单服务", "缓存 集群", "x-1", "Ω"]


@st.composite
def relation_rows(draw) -> list[RelationRow]:
    rows = []
    for line in range(2, 2 + draw(st.integers(1, 12))):
        source, target = draw(
            st.lists(st.sampled_from(LABELS), min_size=2, max_size=2, unique=True)
        )
        rows.append(
            RelationRow(
                line=line,
                source=source,
                relation=draw(
                    st.sampled_from(["dependsOn", "partOf", "runsOn", "relatedTo", "mentions"])
                ),
                target=target,
                source_type=draw(st.sampled_from([None, "Service", "Database", "Entity"])),
                target_type=draw(st.sampled_from([None, "Host", "Component"])),
                source_aliases=tuple(
                    draw(st.lists(st.sampled_from(LABELS), max_size=2, unique=True))
                ),
                target_aliases=(),
                weight=draw(st.sampled_from([None, 0.0, 0.5, 1.0, 0.123])),
                note=draw(st.sampled_from([None, "n", "说明"])),
            )
        )
    return rows


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=relation_rows())
def test_applying_twice_gives_the_same_graph(vocab: Vocabulary, rows: list[RelationRow]) -> None:
    graph = rdflib.Graph()
    first = apply_relation_rows(graph, rows, vocab)
    snapshot = rdflib.Graph()
    for triple in graph:
        snapshot.add(triple)
    second = apply_relation_rows(graph, rows, vocab)
    assert isomorphic(graph, snapshot)
    assert second.new_entities == second.new_edges == 0
    assert second.rejected == first.rejected
    # Every applied row is an edge between entities named by its source and target.
    rejected = {p.line for p in first.rejected}
    names: dict[str, set] = {}
    for predicate in (RDFS.label, SKOS.altLabel):
        for entity, label in graph.subject_objects(predicate):
            names.setdefault(str(label), set()).add(entity)
    for row in rows:
        if row.line not in rejected:
            prop = URIRef(vocab.properties[row.relation].iri)
            assert any(
                (s, prop, o) in graph for s in names[row.source] for o in names[row.target]
            ), row


TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from(list(',"|\n 中文')),
    min_size=1,
    max_size=10,
).map(str.strip)
# A name is one line of plain text (a line break in one is a bad row); a note may hold line breaks.
NAME = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from(list(',"| 中文')),
    min_size=1,
    max_size=10,
).map(str.strip)


@st.composite
def csv_tables(draw) -> list[RelationRow]:
    labels = draw(st.lists(NAME.filter(bool), min_size=2, max_size=8, unique=True))
    edges = draw(
        st.lists(
            st.tuples(
                st.sampled_from(labels),
                st.sampled_from(["dependsOn", "partOf", "mentions"]),
                st.sampled_from(labels),
            ),
            min_size=1,
            max_size=10,
            unique=True,
        ).map(lambda es: [e for e in es if e[0] != e[2]])
    )
    return [
        RelationRow(
            line=0,
            source=source,
            relation=relation,
            target=target,
            source_type=draw(st.sampled_from([None, "Service"])),
            target_type=draw(st.sampled_from([None, "Host", "Parameter"])),
            weight=draw(st.sampled_from([None, 0.0, 0.25, 1.0])),
            note=draw(st.none() | TEXT.filter(bool)),
        )
        for source, relation, target in edges
    ]


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=csv_tables())
def test_csv_round_trip_and_idempotent_import(
    vocab: Vocabulary, tmp_path: Path, rows: list[RelationRow]
) -> None:
    path = tmp_path / "generated.csv"
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(
            ["source", "relation", "target", "source_type", "target_type", "weight", "note"]
        )
        for r in rows:
            weight = "" if r.weight is None else repr(r.weight)
            writer.writerow(
                [
                    r.source,
                    r.relation,
                    r.target,
                    r.source_type or "",
                    r.target_type or "",
                    weight,
                    r.note or "",
                ]
            )
    table = read_relation_table(path, vocab)
    assert table.problems == []
    assert [replace(r, line=0) for r in table.rows] == rows
    assert [r.line for r in table.rows] == sorted({r.line for r in table.rows})
    graph = rdflib.Graph()
    first = import_relation_table(graph, path, vocab)
    assert first.new_edges == len(rows)
    snapshot = set(graph)
    again = import_relation_table(graph, path, vocab)
    assert set(graph) == snapshot and again.added_triples == 0


@pytest.mark.slow  # ~30 s import + ~12 s re-import: rdflib's in-memory store adds ~460k triples
def test_100k_rows(vocab: Vocabulary, tmp_path: Path) -> None:
    rng = random.Random(7)
    relations = sorted(vocab.properties)
    classes = sorted(vocab.classes)
    path = tmp_path / "big.csv"
    seen: set[tuple[int, str, int]] = set()
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(
            ["source", "relation", "target", "source_type", "target_aliases", "weight", "note"]
        )
        while len(seen) < 100_000:
            s, t, r = rng.randrange(30_000), rng.randrange(30_000), rng.choice(relations)
            if s == t or (s, r, t) in seen:
                continue
            seen.add((s, r, t))
            writer.writerow(
                [
                    f"服务-{s}",
                    r,
                    f"host {t}",
                    classes[s % len(classes)],
                    f"h{t}" if t % 10 == 0 else "",
                    f"{rng.random():.2f}" if rng.random() < 0.3 else "",
                    "checked" if rng.random() < 0.1 else "",
                ]
            )
    graph = rdflib.Graph()
    ticks: list[int] = []
    start = time.perf_counter()
    report = import_relation_table(graph, path, vocab, progress=ticks.append)
    elapsed = time.perf_counter() - start
    print(f"\n100k-row import: {elapsed:.1f} s, {len(graph)} triples; {report.summary()}")
    assert report.rows == 100_000 and report.new_edges == 100_000
    assert ticks[-1] == 100_000 and len(ticks) > 10
    start = time.perf_counter()
    again = import_relation_table(graph, path, vocab)
    print(f"100k-row re-import: {time.perf_counter() - start:.1f} s; {again.summary()}")
    assert again.added_triples == 0
