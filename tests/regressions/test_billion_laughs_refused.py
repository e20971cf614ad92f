"""Regression: a 1 KB "billion laughs" RDF/XML file kept `kg import` busy for 277 s. Entities defined
through entities, parameter and external entities are refused before any parsing; Protégé's plain
namespace entities still load."""

from __future__ import annotations

import pytest

from kg.errors import OntologyFormatError
from ontology import load_rdf

LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE rdf:RDF [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#">
  <rdf:Description rdf:about="https://kgrag.dev/entity/x"><rdfs:label>&lol9;</rdfs:label></rdf:Description>
</rdf:RDF>
"""

PROTEGE = """<?xml version="1.0"?>
<!DOCTYPE rdf:RDF [
    <!ENTITY owl "http://www.w3.org/2002/07/owl#" >
    <!ENTITY rdfs "http://www.w3.org/2000/01/rdf-schema#" >
]>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:rdfs="&rdfs;" xmlns:owl="&owl;">
  <owl:NamedIndividual rdf:about="https://kgrag.dev/entity/x"><rdfs:label>x</rdfs:label></owl:NamedIndividual>
</rdf:RDF>
"""


@pytest.mark.parametrize(("declaration", "what"), [
    (None, "entity 'lol1' defined through other entities"),
    ('<!ENTITY ext SYSTEM "file:///etc/passwd">', "external entity 'ext' (file:///etc/passwd)"),
    ('<!ENTITY % pe "x">', "parameter entity '%pe'"),
])
def test_expanding_doctypes_are_refused(tmp_path, declaration, what):
    text = LAUGHS if declaration is None else PROTEGE.replace("]>", declaration + "\n]>")
    path = tmp_path / "onto.owl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(OntologyFormatError) as error:
        load_rdf(path)
    assert str(error.value).startswith(f"onto.owl: refused: its DOCTYPE declares {what}, which could make reading")


def test_protege_namespace_entities_still_load(tmp_path):
    path = tmp_path / "onto.owl"
    path.write_text(PROTEGE, encoding="utf-8")
    assert len(load_rdf(path)) == 2
