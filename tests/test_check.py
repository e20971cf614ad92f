"""`check_ontology` and `kg ontology check`: each kind of finding from a Turtle fixture, with its exact message."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import rdflib
from click.testing import CliRunner
from rdflib import OWL, RDF, RDFS, SKOS, Literal

from kg.check import CODES, Finding, check_ontology
from kg.cli import cli
from kg.relations import import_relation_table
from ontology import BASE_ONTOLOGY_PATH, ENT, KG, Vocabulary, load_rdf

DATA = Path(__file__).parent / "data"
PROBLEMS = DATA / "ontology_problems.ttl"

PREFIXES = """\
@prefix : <http://example.org/plant#> .
@prefix kg: <https://kgrag.dev/ontology#> .
@prefix ent: <https://kgrag.dev/entity/> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
@prefix dcterms: <http://purl.org/dc/terms/> .
"""

# tests/data/ontology_problems.ttl has one of each; errors first, then by code and subject.
EXPECTED = [
    (
        "error",
        "unknown-term",
        str(KG.Databse),
        "class kg:Databse is used in 1 triple (e.g. 'PostgreSQL' rdf:type kg:Databse) but is not "
        "declared in the ontology, so kgrag does not know it (did you mean kg:Database?); fix the "
        "name, or declare it: kg:Databse a owl:Class ; rdfs:subClassOf kg:Entity .",
    ),
    (
        "error",
        "unknown-term",
        str(KG.dependOn),
        "kg:dependOn is used in 1 triple (e.g. 'order-service' kg:dependOn 'PostgreSQL') but is "
        "not declared in the ontology, so kgrag ignores it (did you mean kg:dependsOn?); fix the "
        "name, or declare it: kg:dependOn a owl:ObjectProperty .",
    ),
    (
        "error",
        "dangling-reference",
        str(ENT.PostgreSQl),
        "ent:PostgreSQl is the target of 1 relation (e.g. 'billing' dependsOn it) but has no type "
        "and no label, so it is not an entity and expansion stops there (did you mean "
        "ent:PostgreSQL, 'PostgreSQL'?); fix the IRI, or declare the entity: ent:PostgreSQl a "
        'owl:NamedIndividual ; rdfs:label "..." .',
    ),
    (
        "error",
        "transitive-cycle",
        str(ENT["hall-c"]),
        "partOf goes round in a circle: 'hall C' → 'rack A' → 'row B' → 'hall C' (asserted: "
        "'rack A' hasPart 'hall C'; 'rack A' partOf 'row B'; 'row B' partOf 'hall C'); partOf is "
        "transitive, so each of them would be partOf itself: remove or reverse one of these edges",
    ),
    (
        "warning",
        "domain",
        "http://example.org/plant#pump-1",
        "'pump 1' owns 'billing': the source should be a Team (the domain of owns), but 'pump 1' "
        "is a Pump; give 'pump 1' the class Team (or a subclass of it), or use another relation",
    ),
    (
        "warning",
        "range",
        str(ENT.alice),
        "'billing' ownedBy 'Alice': the target should be a Team (the range of ownedBy), but "
        "'Alice' is a Person; give 'Alice' the class Team (or a subclass of it), or use another "
        "relation",
    ),
    (
        "warning",
        "shared-alias",
        "Alice",
        "'Alice' names 2 entities: it is the label of <http://example.org/plant#alice2> ('Alice') "
        "and the label of ent:alice ('Alice'); a question or a document saying 'Alice' is linked "
        "to all of them: keep it on one entity and remove it from the others",
    ),
    (
        "warning",
        "shared-alias",
        "PG",
        "'PG' names 2 entities: it is an alias of ent:PostgreSQL ('PostgreSQL') and an alias of "
        "ent:pg-bouncer ('pg-bouncer'); a question or a document saying 'PG' is linked to all of "
        "them: keep it on one entity and remove it from the others",
    ),
    (
        "warning",
        "self-loop",
        str(ENT["pg-bouncer"]),
        "'pg-bouncer' connectsTo 'pg-bouncer': a relation from an entity to itself is ignored by "
        "graph expansion; delete it or fix the target",
    ),
]


def with_base(*parts: Path | str) -> rdflib.Graph:
    """The base ontology plus Turtle files or Turtle text, as graph.ttl would hold them."""
    graph = load_rdf(BASE_ONTOLOGY_PATH)
    for part in parts:
        if isinstance(part, Path):
            graph += load_rdf(part)
        else:
            graph.parse(data=PREFIXES + part, format="turtle")
    return graph


def check(graph: rdflib.Graph) -> list[Finding]:
    return check_ontology(graph, Vocabulary.from_graph(graph))


def test_every_kind_of_problem_with_its_fix() -> None:
    findings = check(with_base(PROBLEMS))
    assert [(f.severity, f.code, f.subject, f.message) for f in findings] == EXPECTED
    assert str(findings[0]) == f"error: unknown-term: {EXPECTED[0][3]}"
    assert findings[0].to_json() == dict(
        zip(("severity", "code", "subject", "message"), EXPECTED[0], strict=True)
    )
    assert {f.code for f in findings} == set(CODES) - {"vocabulary"}


def test_a_clean_graph_has_no_findings() -> None:
    graph = with_base(DATA / "lab.ttl")
    import_relation_table(graph, DATA / "relations.csv", Vocabulary.from_graph(graph))
    assert check(graph) == []


def test_only_kg_entity_or_no_class_meets_any_domain_and_range() -> None:
    graph = with_base(
        """
        ent:a a owl:NamedIndividual , kg:Entity ; rdfs:label "a" ; kg:ownedBy ent:b .
        ent:b a owl:NamedIndividual ; rdfs:label "b" ; kg:owns ent:a .
        """
    )
    assert check(graph) == []


def test_domain_and_range_follow_subclasses_super_properties_and_inverses() -> None:
    graph = with_base(
        """
        :SRE a owl:Class ; rdfs:subClassOf kg:Team .
        :Widget a owl:Class .
        :leads a owl:ObjectProperty ; rdfs:subPropertyOf kg:owns .
        :mentors a owl:ObjectProperty ; owl:inverseOf :mentoredBy .
        :mentoredBy a owl:ObjectProperty ; rdfs:range :SRE .
        :sre a owl:NamedIndividual , :SRE ; rdfs:label "sre" ; kg:owns :w1 ; :leads :w1 .
        :w1 a owl:NamedIndividual , :Widget ; rdfs:label "w1" ; :leads :w2 ; :mentors :w2 .
        :w2 a owl:NamedIndividual , :Widget ; rdfs:label "w2" .
        """
    )
    assert [f.message for f in check(graph)] == [
        "'w1' leads 'w2': the source should be a Team (the domain of owns, inherited by leads), "
        "but 'w1' is a Widget; give 'w1' the class Team (or a subclass of it), or use another "
        "relation",
        "'w1' mentors 'w2': the source should be a SRE (the range of mentoredBy, the inverse of "
        "mentors), but 'w1' is a Widget; give 'w1' the class SRE (or a subclass of it), or use "
        "another relation",
    ]


def test_cycles_through_sub_properties_and_the_inverse_told_as_asserted() -> None:
    graph = with_base(
        """
        :slotOf a owl:ObjectProperty ; rdfs:subPropertyOf kg:partOf .
        ent:a a owl:NamedIndividual ; rdfs:label "a" ; :slotOf ent:b .
        ent:b a owl:NamedIndividual ; rdfs:label "b" ; kg:partOf ent:a .
        ent:x a owl:NamedIndividual ; rdfs:label "x" ; kg:hasPart ent:y .
        ent:y a owl:NamedIndividual ; rdfs:label "y" ; kg:hasPart ent:z .
        ent:z a owl:NamedIndividual ; rdfs:label "z" ; kg:hasPart ent:x .
        """
    )
    assert [f.message for f in check(graph)] == [
        "partOf goes round in a circle: 'a' → 'b' → 'a' (asserted: 'a' slotOf 'b'; 'b' partOf "
        "'a'); partOf is transitive, so each of them would be partOf itself: remove or reverse one "
        "of these edges",
        "hasPart goes round in a circle: 'x' → 'y' → 'z' → 'x' (asserted: 'x' hasPart 'y'; 'y' "
        "hasPart 'z'; 'z' hasPart 'x'); hasPart is transitive, so each of them would be hasPart "
        "itself: remove or reverse one of these edges",
    ]


def test_unknown_terms_only_in_the_users_own_namespaces() -> None:
    graph = with_base(
        DATA / "lab.ttl",
        """
        @prefix lab: <http://example.org/lab#> .
        @prefix other: <http://other.example/vocab#> .
        lab:alice lab:calibratedBi lab:scope-7 ;
            dcterms:creator "Protégé" ;
            other:anything "not ours to judge" ;
            skos:prefLabel "Alice" .
        """,
    )
    assert [(f.code, f.subject) for f in check(graph)] == [
        ("unknown-term", "http://example.org/lab#calibratedBi")
    ]


def test_loader_warnings_are_findings() -> None:
    graph = with_base(":slow a owl:ObjectProperty ; kg:expansionWeight 7 .")
    assert [str(f) for f in check(graph)] == [
        "warning: vocabulary: relation 'slow': expansionWeight 7 is outside 0-1; using 1.0"
    ]


class _CountingGraph(rdflib.Graph):
    """A graph that counts the triples every read hands out (iteration, subject_objects, value, `in`
    all go through `triples`): the work of a check, which a loaded machine cannot change."""

    reads = 0

    def triples(self, pattern):  # type: ignore[override]
        for triple in super().triples(pattern):
            self.reads += 1
            yield triple


def _random_graph(entities: int) -> _CountingGraph:
    graph = _CountingGraph()
    base = load_rdf(BASE_ONTOLOGY_PATH)
    for prefix, namespace in base.namespaces():
        graph.bind(prefix, namespace)
    for triple in base:
        graph.add(triple)
    rng = random.Random(3)
    classes = [KG.Service, KG.Database, KG.Host, KG.Team, KG.Component]
    relations = [KG.dependsOn, KG.runsOn, KG.ownedBy, KG.partOf, KG.connectsTo]
    for i in range(entities):
        graph.add((ENT[f"e{i}"], RDF.type, OWL.NamedIndividual))
        graph.add((ENT[f"e{i}"], RDF.type, rng.choice(classes)))
        graph.add((ENT[f"e{i}"], RDFS.label, Literal(f"entity {i}")))
        graph.add((ENT[f"e{i}"], SKOS.altLabel, Literal(f"e-{i}")))
    for _ in range(2 * entities):
        graph.add((ENT[f"e{rng.randrange(entities)}"], rng.choice(relations), ENT[f"e{rng.randrange(entities)}"]))
    return graph


def test_the_check_reads_each_triple_a_bounded_number_of_times() -> None:
    """Linear work: the check of 1,000 and of 4,000 entities reads under 2 triples per triple of the graph
    (one scan plus a few lookups; 1.33 today). Its seconds on 10k entities are measured in bench/check_speed.py."""
    per_triple = {}
    for entities in (1_000, 4_000):
        graph = _random_graph(entities)
        vocab = Vocabulary.from_graph(graph)
        graph.reads = 0
        findings = check_ontology(graph, vocab)
        assert {f.code for f in findings} >= {"range", "self-loop"}
        per_triple[entities] = graph.reads / len(graph)
    assert all(1 <= ratio < 2 for ratio in per_triple.values()), per_triple
    assert per_triple[4_000] < per_triple[1_000] * 1.1, per_triple  # not growing with the graph


# ---------------------------------------------------------------- kg ontology check


def kg(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def problem_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data_dir = tmp_path_factory.mktemp("check") / "kb"
    assert kg("import", PROBLEMS, "--data-dir", data_dir).exit_code == 0
    return data_dir


def test_kg_ontology_check_prints_one_finding_a_line_and_exits_1_on_errors(
    problem_kb: Path,
) -> None:
    result = kg("ontology", "check", "--data-dir", problem_kb)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[:-1] == [
        f"{severity}: {code}: {message}" for severity, code, _, message in EXPECTED
    ]
    assert lines[-1] == "4 error(s), 5 warning(s)"


def test_kg_ontology_check_json(problem_kb: Path) -> None:
    result = kg("ontology", "check", "--json", "--data-dir", problem_kb)
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert (data["errors"], data["warnings"]) == (4, 5)
    assert [tuple(f.values()) for f in data["findings"]] == EXPECTED


def test_kg_ontology_check_passes_with_warnings_only(tmp_path: Path) -> None:
    data_dir = tmp_path / "kb"
    kg("import", DATA / "relations.csv", "--data-dir", data_dir)
    assert kg("ontology", "check", "--data-dir", data_dir).stdout == "no problems found\n"
    loop = tmp_path / "loop.ttl"
    loop.write_text(PREFIXES + "ent:Redis kg:dependsOn ent:Redis .\n", encoding="utf-8")
    kg("import", loop, "--data-dir", data_dir)
    result = kg("ontology", "check", "--data-dir", data_dir)
    assert result.exit_code == 0
    assert result.stdout == (
        "warning: self-loop: 'Redis' dependsOn 'Redis': a relation from an entity to itself is "
        "ignored by graph expansion; delete it or fix the target\n0 error(s), 1 warning(s)\n"
    )


def test_kg_ontology_help() -> None:
    result = kg("ontology", "--help")
    assert result.exit_code == 0
    assert "check  Find what makes the graph quietly wrong" in result.stdout
    assert kg("ontology", "check", "-h").exit_code == 0


def test_an_ontology_import_says_what_it_made_quietly_wrong(tmp_path: Path) -> None:
    """A Protégé file whose classes are named as kgrag's own and whose individual is labelled as an entity the
    relation table made: `kg import` said "12 new triples" and nothing else, and the individual lost its class and
    shared its name with no word until `kg ontology check`. The import says it now, on stderr (and in --json)."""
    data_dir = tmp_path / "kb"
    table = tmp_path / "relations.csv"
    table.write_text("source,relation,target\norder-service,dependsOn,mysql-core\n", encoding="utf-8")
    assert kg("import", table, "--data-dir", data_dir).exit_code == 0
    owl = tmp_path / "ops.owl"
    owl.write_text(
        '<?xml version="1.0"?>\n<rdf:RDF xmlns="http://example.org/ops#" xmlns:owl="http://www.w3.org/2002/07/owl#"'
        ' xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#">\n'
        '  <owl:Ontology rdf:about="http://example.org/ops"/>\n'
        '  <owl:Class rdf:about="http://example.org/ops#Database"/>\n'
        '  <owl:NamedIndividual rdf:about="http://example.org/ops#mysql-core">'
        '<rdf:type rdf:resource="http://example.org/ops#Database"/><rdfs:label>mysql-core</rdfs:label></owl:NamedIndividual>\n'
        '  <owl:NamedIndividual rdf:about="http://example.org/ops#backup-job"><rdfs:label>backup-job</rdfs:label></owl:NamedIndividual>\n'
        '</rdf:RDF>\n', encoding="utf-8")
    result = kg("import", owl, "--data-dir", data_dir)
    assert result.exit_code == 0 and result.stdout.startswith("7 new triples")
    assert result.stderr.splitlines() == [
        "  warning: class <http://example.org/ops#Database> has the same name 'Database' as "
        "<https://kgrag.dev/ontology#Database>; kgrag uses the latter. Rename one of them in the ontology.",
        "  warning: 'mysql-core' names 2 entities (<http://example.org/ops#mysql-core>, <https://kgrag.dev/entity/mysql-core>): "
        "a question or document saying it is linked to all of them; `kg ontology check` says how to keep it on one"]
    # Imported again: the class's name is no news (nothing changed), the shared name still is.
    again = json.loads(kg("import", owl, "--json", "--data-dir", data_dir).stdout)
    assert again["triples_added"] == 0 and [w.split(" names ")[0] for w in again["warnings"]] == ["'mysql-core'"]
