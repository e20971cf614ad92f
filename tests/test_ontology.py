"""The ontology loader and Vocabulary, on real files read by real rdflib."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

import pytest
import rdflib
from hypothesis import given
from hypothesis import strategies as st
from rdflib.compare import isomorphic

from kg.errors import InputError, OntologyFormatError
from ontology import (
    BASE_ONTOLOGY_PATH,
    ENT,
    KG,
    Vocabulary,
    entity_iri,
    load_rdf,
    local_name,
)

DATA = Path(__file__).parent / "data"
LAB = "http://example.org/lab#"
SAVE_AS = (
    'In Protégé, open it and use File > Save as... > "Turtle Syntax" or "RDF/XML Syntax", '
    "then load the saved file."
)


@pytest.fixture(scope="module")
def base() -> Vocabulary:
    return Vocabulary.from_graph(load_rdf(BASE_ONTOLOGY_PATH))


@pytest.fixture(scope="module")
def lab() -> Vocabulary:
    """The base ontology plus a user's Protégé ontology that imports it (merged, as rdflib does not follow owl:imports)."""
    return Vocabulary.from_graph(load_rdf(BASE_ONTOLOGY_PATH) + load_rdf(DATA / "lab.ttl"))


# ---------------------------------------------------------------- the base ontology


def test_base_ontology_semantics(base: Vocabulary) -> None:
    depends = base.properties["dependsOn"]
    assert depends.iri == str(KG.dependsOn)
    assert depends.inverse == "requiredBy"
    assert base.properties["requiredBy"].inverse == "dependsOn"  # declared on dependsOn only
    assert depends.labels[:2] == ("depends on", "依赖")  # rdfs:labels first, then skos:altLabels
    assert (depends.domain, depends.range) == ("Entity", "Entity")
    assert depends.super_properties == {"relatedTo"}
    assert base.properties["runtimeDependsOn"].super_properties == {"dependsOn", "relatedTo"}
    assert base.properties["partOf"].transitive and not base.properties["partOf"].symmetric
    assert base.properties["relatedTo"].symmetric and not base.properties["relatedTo"].transitive
    assert base.properties["connectsTo"].symmetric
    assert {
        n: base.properties[n].weight for n in ("relatedTo", "requiredBy", "ownedBy", "owns")
    } == {
        "relatedTo": 0.5,
        "requiredBy": 0.9,
        "ownedBy": 0.4,
        "owns": 0.3,
    }
    assert base.properties["ownedBy"].range == "Team"
    assert base.properties["owns"].domain == "Team"
    assert base.properties["partOf"].inverse == "hasPart"
    assert base.warnings == []


def test_base_ontology_classes(base: Vocabulary) -> None:
    assert base.classes["Parameter"].super_classes == {"Configuration", "Entity"}
    assert base.classes["Service"].super_classes == {"System", "Entity"}
    assert base.classes["Entity"].super_classes == frozenset()
    assert base.classes["Service"].labels[:2] == ("service", "服务")
    assert base.is_subclass("Service", "Entity")
    assert base.is_subclass("Service", "Service")
    assert not base.is_subclass("Entity", "Service")
    assert not base.is_subclass("Nonexistent", "Entity")
    assert "expansionWeight" not in base.properties  # an annotation property, not a relation


def test_sub_properties(base: Vocabulary) -> None:
    assert base.sub_properties("dependsOn") == {"dependsOn", "runtimeDependsOn"}
    assert base.sub_properties("runtimeDependsOn") == {"runtimeDependsOn"}
    assert base.sub_properties("relatedTo") == set(base.properties)


@pytest.mark.parametrize(
    "text",
    [
        "dependsOn",
        "depends_on",
        "depends on",
        "Depends-On",
        "DEPENDSON",
        "依赖",
        "  依赖 ",
        "ｄｅｐｅｎｄｓＯｎ",  # full-width, as typed with a Chinese input method
        "https://kgrag.dev/ontology#dependsOn",
    ],
)
def test_resolve_property(base: Vocabulary, text: str) -> None:
    info = base.resolve_property(text)
    assert info is not None and info.name == "dependsOn"


def test_resolve_unknown_and_suggestions(base: Vocabulary) -> None:
    assert base.resolve_property("depend_on") is None
    assert base.resolve_property("") is None
    assert base.suggest_properties("depend_on")[0] == "dependsOn"
    assert base.suggest_properties("runs_onn", n=1) == ["runsOn"]
    assert base.suggest_properties("zzzzzzzz") == []
    assert base.resolve_class("服务").name == "Service"
    assert base.resolve_class("message queue").name == "MessageQueue"
    assert base.resolve_class("Servce") is None
    assert base.suggest_classes("Servce")[0] == "Service"


def test_names_beat_labels_beat_alt_labels_and_ties_are_ambiguous() -> None:
    graph = rdflib.Graph().parse(
        format="turtle",
        data="""
        @prefix : <http://example.org/r#> . @prefix owl: <http://www.w3.org/2002/07/owl#> .
        @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
        @prefix skos: <http://www.w3.org/2004/02/skos/core#> .
        :causes a owl:ObjectProperty ; rdfs:label "导致"@zh ; skos:altLabel "影响"@zh .
        :causedBy a owl:ObjectProperty ; rdfs:label "由…引起"@zh ; skos:altLabel "导致"@zh , "causes"@en .
        :affects a owl:ObjectProperty ; skos:altLabel "波及"@zh , "影响"@zh .
        :requiredBy a owl:ObjectProperty ; skos:altLabel "波及"@zh .
        """,
    )
    vocab = Vocabulary.from_graph(graph)
    assert vocab.resolve_property("causes").name == "causes"  # a name beats causedBy's altLabel
    assert vocab.resolve_property("导致").name == "causes"  # an rdfs:label beats an altLabel
    assert vocab.resolve_property("波及") is None
    assert vocab.property_candidates("波及") == ["affects", "requiredBy"]
    assert vocab.property_candidates("影响") == ["affects", "causes"]
    assert vocab.property_candidates("导致") == ["causes"]
    assert vocab.property_candidates("nothing") == []


# ---------------------------------------------------------------- a user's Protégé ontology


def test_protege_turtle_and_rdfxml_give_the_same_graph() -> None:
    turtle = load_rdf(DATA / "lab.ttl")
    rdfxml = load_rdf(DATA / "lab.owl")
    assert len(turtle) == 48
    assert isomorphic(turtle, rdfxml)
    ontology = rdflib.URIRef("http://example.org/lab")
    assert (ontology, rdflib.OWL.imports, rdflib.URIRef("https://kgrag.dev/ontology")) in turtle


def test_user_namespace_terms(lab: Vocabulary) -> None:
    calibrated = lab.properties["calibratedBy"]
    assert calibrated.iri == LAB + "calibratedBy"
    assert calibrated.labels == ("calibrated by", "校准人", "calibration owner")
    assert calibrated.inverse == "calibrates"
    assert lab.properties["calibrates"].inverse == "calibratedBy"
    assert calibrated.super_properties == {"dependsOn", "relatedTo"}
    assert calibrated.weight == 1.0  # inherited from kg:dependsOn
    assert (calibrated.domain, calibrated.range) == ("Instrument", "Technician")
    assert lab.properties["adjacentTo"].symmetric
    assert lab.sub_properties("dependsOn") == {"dependsOn", "runtimeDependsOn", "calibratedBy"}
    assert lab.resolve_property("校准人") is calibrated
    assert lab.resolve_property("calibration owner") is calibrated
    assert lab.classes["Oscilloscope"].super_classes == {"Instrument", "Device", "Entity"}
    assert lab.classes["Technician"].iri == LAB + "Technician"
    assert lab.is_subclass("Oscilloscope", "Device")
    assert lab.resolve_class("仪器").name == "Instrument"
    assert "scope-7" not in lab.classes and "alice" not in lab.properties


def test_user_ontology_alone(lab: Vocabulary) -> None:
    alone = Vocabulary.from_graph(load_rdf(DATA / "lab.owl"))
    assert set(alone.properties) == {
        "adjacentTo",
        "calibratedBy",
        "calibrates",
        "handles",
        "handlesUrgently",
    }
    assert (
        alone.properties["calibratedBy"].super_properties == frozenset()
    )  # kg:dependsOn not loaded
    assert alone.properties["handlesUrgently"].weight == 0.3  # inherited from lab:handles
    assert alone.properties["handles"].weight == 0.3


def test_weight_inheritance_nearest_first_and_cycles() -> None:
    graph = rdflib.Graph().parse(
        format="turtle",
        data="""
        @prefix : <http://example.org/w#> . @prefix owl: <http://www.w3.org/2002/07/owl#> .
        @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> . @prefix kg: <https://kgrag.dev/ontology#> .
        :top a owl:ObjectProperty ; kg:expansionWeight 0.2 .
        :mid a owl:ObjectProperty ; rdfs:subPropertyOf :top ; kg:expansionWeight 0.6 .
        :low a owl:ObjectProperty ; rdfs:subPropertyOf :mid .
        :loopA a owl:ObjectProperty ; rdfs:subPropertyOf :loopB .
        :loopB a owl:ObjectProperty ; rdfs:subPropertyOf :loopA .
        :odd a owl:ObjectProperty ; kg:expansionWeight 3 .
        :junk a owl:ObjectProperty ; kg:expansionWeight "high" .
        """,
    )
    vocab = Vocabulary.from_graph(graph)
    assert vocab.properties["low"].weight == 0.6
    assert vocab.properties["low"].super_properties == {"mid", "top"}
    assert vocab.properties["loopA"].super_properties == {"loopB"}
    assert vocab.properties["loopA"].weight == 1.0
    assert vocab.properties["odd"].weight == 1.0
    assert vocab.properties["junk"].weight == 1.0
    assert vocab.warnings == [
        "relation 'junk': expansionWeight 'high' is not a number; using 1.0",
        "relation 'odd': expansionWeight 3 is outside 0-1; using 1.0",
    ]


def test_name_clash_keeps_kgrag_term() -> None:
    graph = load_rdf(BASE_ONTOLOGY_PATH)
    graph.add((rdflib.URIRef(LAB + "dependsOn"), rdflib.RDF.type, rdflib.OWL.ObjectProperty))
    vocab = Vocabulary.from_graph(graph)
    assert vocab.properties["dependsOn"].iri == str(KG.dependsOn)
    assert vocab.warnings == [
        f"relation <{LAB}dependsOn> has the same name 'dependsOn' as <{KG.dependsOn}>; "
        "kgrag uses the latter. Rename one of them in the ontology."
    ]


# ---------------------------------------------------------------- formats kgrag refuses


@pytest.mark.parametrize(
    "name, syntax",
    [
        ("lab-owlxml.owl", "OWL/XML syntax"),
        ("lab-manchester.omn", "Manchester syntax"),
        ("lab-functional.ofn", "OWL Functional syntax"),
    ],
)
def test_refused_syntaxes(name: str, syntax: str) -> None:
    with pytest.raises(OntologyFormatError) as caught:
        load_rdf(DATA / name)
    assert str(caught.value) == (
        f"{name}: this ontology is in {syntax}, which kgrag cannot read. {SAVE_AS}"
    )
    assert isinstance(caught.value, InputError) and caught.value.status == 400


@pytest.mark.parametrize("suffix", [".ttl", ".rdf", ".xml"])
def test_refused_whatever_the_extension(tmp_path: Path, suffix: str) -> None:
    for name in ("lab-owlxml.owl", "lab-manchester.omn", "lab-functional.ofn"):
        copy = tmp_path / (Path(name).stem + suffix)
        copy.write_bytes((DATA / name).read_bytes())
        with pytest.raises(OntologyFormatError, match="which kgrag cannot read"):
            load_rdf(copy)


def test_owlxml_with_long_doctype_and_prefixed_root_is_refused(tmp_path: Path) -> None:
    entities = "".join(
        f'    <!ENTITY e{i} "http://example.org/some/long/namespace/number/{i}#" >\n'
        for i in range(40)
    )
    path = tmp_path / "old-owlapi.owl"
    path.write_text(
        '<?xml version="1.0"?>\n'
        f"<!DOCTYPE owl:Ontology [\n{entities}]>\n"
        '<owl:Ontology xmlns:owl="http://www.w3.org/2002/07/owl#" '
        'ontologyIRI="http://example.org/old">\n'
        '  <owl:Declaration><owl:Class IRI="#A"/></owl:Declaration>\n'
        "</owl:Ontology>\n",
        encoding="utf-8",
    )
    assert path.stat().st_size > 1024
    with pytest.raises(OntologyFormatError) as caught:
        load_rdf(path)
    assert (
        str(caught.value)
        == f"old-owlapi.owl: this ontology is in OWL/XML syntax, which kgrag cannot read. {SAVE_AS}"
    )


def test_rdfxml_with_a_bare_owl_ontology_root_is_read(tmp_path: Path) -> None:
    # Valid RDF/XML (a single node element as root): rdf:about tells it from OWL/XML.
    path = tmp_path / "bare.rdf"
    path.write_text(
        '<owl:Ontology xmlns:owl="http://www.w3.org/2002/07/owl#" '
        'xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
        'xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#" rdf:about="http://example.org/bare">'
        "<rdfs:label>bare</rdfs:label></owl:Ontology>",
        encoding="utf-8",
    )
    graph = load_rdf(path)
    assert len(graph) == 2


# ---------------------------------------------------------------- formats kgrag reads


def test_turtle_saved_under_an_owl_name_is_read(tmp_path: Path) -> None:
    path = tmp_path / "lab.owl"
    path.write_bytes((DATA / "lab.ttl").read_bytes())
    assert isomorphic(load_rdf(path), load_rdf(DATA / "lab.ttl"))


def test_ntriples_jsonld_and_bom(tmp_path: Path) -> None:
    reference = load_rdf(DATA / "lab.ttl")
    nt = tmp_path / "lab.nt"
    nt.write_text(reference.serialize(format="nt"), encoding="utf-8")
    jsonld = tmp_path / "lab.jsonld"
    jsonld.write_text(reference.serialize(format="json-ld"), encoding="utf-8")
    bom = tmp_path / "bom.ttl"
    bom.write_bytes(b"\xef\xbb\xbf" + (DATA / "lab.ttl").read_bytes())
    for path in (nt, jsonld, bom):
        assert isomorphic(load_rdf(path), reference), path.name


@pytest.mark.parametrize(
    "name, content, detail",
    [
        (
            "broken.ttl",
            "@prefix : <http://x/> .\n:a :b :c \n:d :e .\n",
            "not valid Turtle: line 3: expected '.' or '}' or ']' at end of statement",
        ),
        (
            "broken.owl",
            '<?xml version="1.0"?>\n<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">\n'
            '<rdf:Description rdf:about="http://x/a"><foo></rdf:Description></rdf:RDF>\n',
            "not valid RDF/XML: line 3, column 47: mismatched tag",
        ),
        (
            "no-prolog.rdf",
            '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" <oops/>\n',
            "not valid RDF/XML: line 1, column 65: not well-formed (invalid token)",
        ),
        (
            "broken.nt",
            "<http://x/a> <http://x/b> <http://x/c> .\n<http://x/a> <http://x/b> .\n",
            "not valid N-Triples: line 2: objectList expected",
        ),
        (
            "broken.jsonld",
            '{"@id": "http://x/a", "http://x/b": [}',
            "not valid JSON-LD: line 1, column 38: Expecting value",
        ),
    ],
)
def test_parse_errors_name_the_file_and_line(
    tmp_path: Path, name: str, content: str, detail: str
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(OntologyFormatError) as caught:
        load_rdf(path)
    assert str(caught.value) == (
        f"{name}: {detail}. Fix that line, or re-save the ontology from Protégé "
        '(File > Save as... > "Turtle Syntax" or "RDF/XML Syntax").'
    )
    assert str(tmp_path) not in str(caught.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(OntologyFormatError, match=r"^nowhere\.ttl: cannot read the file \("):
        load_rdf(tmp_path / "nowhere.ttl")


# ---------------------------------------------------------------- IRIs


def test_entity_iri_and_local_name() -> None:
    assert entity_iri("order-service") == ENT["order-service"]
    assert entity_iri("  PostgreSQL 14 ") == rdflib.URIRef("https://kgrag.dev/entity/PostgreSQL_14")
    assert entity_iri("心跳间隔") == rdflib.URIRef(
        "https://kgrag.dev/entity/%E5%BF%83%E8%B7%B3%E9%97%B4%E9%9A%94"
    )
    assert entity_iri("a/b#c?") == rdflib.URIRef("https://kgrag.dev/entity/a%2Fb%23c%3F")
    assert local_name(KG.dependsOn) == "dependsOn"
    assert local_name("http://example.org/lab/Robot") == "Robot"
    assert local_name("urn:isbn:123") == "123"
    with pytest.raises(ValueError):
        entity_iri("   ")


@given(st.text(min_size=1).filter(lambda s: s.split()))
def test_entity_iri_is_deterministic_and_readable_back(label: str) -> None:
    iri = entity_iri(label)
    assert iri == entity_iri(label)
    assert iri.startswith(str(ENT))
    name = local_name(iri)
    assert "/" not in name and "#" not in name and " " not in name
    assert unquote(name) == "_".join(label.split())
