"""Reading RDF files: a path in, an rdflib Graph out; what rdflib would misread (OWL/XML, Manchester, Functional syntax) is refused with a fix."""

from __future__ import annotations

import json
import re
from pathlib import Path
from xml.parsers import expat

import rdflib
from rdflib import OWL, RDF

from ontology.errors import OntologyFormatError
from ontology.vocabulary import ENT, KG

# ---------------------------------------------------------------- reading files

_FORMAT_BY_SUFFIX = {
    ".ttl": "turtle",
    ".owl": "xml",
    ".rdf": "xml",
    ".xml": "xml",
    ".nt": "nt",
    ".jsonld": "json-ld",
    ".json": "json-ld",
}
_FORMAT_NAMES = {"turtle": "Turtle", "xml": "RDF/XML", "nt": "N-Triples", "json-ld": "JSON-LD"}
_SNIFF_BYTES = 1024
_OWL_NS = str(OWL)
_RDF_NS = str(RDF)
_SAVE_AS_HINT = (
    'In Protégé, open it and use File > Save as... > "Turtle Syntax" or "RDF/XML Syntax", '
    "then load the saved file."
)


def load_rdf(path: Path | str) -> rdflib.Graph:
    """Parse one RDF file; the format comes from the extension, corrected by the file's first bytes."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            head = f.read(_SNIFF_BYTES)
    except OSError as e:
        raise OntologyFormatError(f"{path.name}: cannot read the file ({e.strerror})") from e
    fmt = _choose_format(path, head)
    if fmt == "xml":
        _refuse_entity_expansion(path)
    graph = rdflib.Graph()
    graph.bind("kg", KG)
    graph.bind("ent", ENT)
    try:
        graph.parse(source=str(path), format=fmt)
    except Exception as e:  # rdflib raises a different type per parser; all mean "bad file"
        detail = _parse_error_detail(e, path, fmt)
        raise OntologyFormatError(
            f"{path.name}: not valid {_FORMAT_NAMES[fmt]}: {detail}. Fix that line, or re-save "
            'the ontology from Protégé (File > Save as... > "Turtle Syntax" or "RDF/XML Syntax").'
        ) from e
    return graph


def _choose_format(path: Path, head: bytes) -> str:
    """Pick an rdflib parser name, refusing the OWL syntaxes rdflib cannot read."""
    text = _decode_head(head)
    stripped = text.lstrip()
    first_line = _first_significant_line(text)
    if re.match(r"(Prefix|Ontology)\s*\(", first_line):
        raise _refuse(path, "OWL Functional syntax")
    if re.match(r"Prefix:\s*[\w.\-]*:\s*<|Ontology:", first_line):
        raise _refuse(path, "Manchester syntax")
    if stripped.startswith("<"):
        root = _xml_root(head) if len(head) < _SNIFF_BYTES else _xml_root(_read_more(path))
        if root is not None:
            namespace, name, attributes = root
            # An RDF/XML document may have a bare owl:Ontology node as its root, but then it carries
            # rdf:about (or rdf:ID / rdf:nodeID); OWL/XML's Ontology element never does.
            rdf_attrs = any(a.startswith(_RDF_NS) for a in attributes)
            if namespace == _OWL_NS and name == "Ontology" and not rdf_attrs:
                raise _refuse(path, "OWL/XML syntax")
            return "xml"
        if stripped.startswith(("<?xml", "<!")):
            return "xml"  # broken XML: let the RDF/XML parser report where
    if stripped.startswith(("{", "[")):
        return "json-ld"
    by_suffix = _FORMAT_BY_SUFFIX.get(path.suffix.lower())
    # Turtle directives, or a first triple starting with an IRI: Turtle (or N-Triples), whatever
    # the name says; Protégé users often save Turtle under an .owl name.
    if re.search(r"^\s*(@prefix|@base|PREFIX\s|BASE\s)", text, re.I | re.M):
        return "turtle"
    if re.match(r"<[^>\s]*>\s", stripped):
        return "nt" if by_suffix == "nt" else "turtle"
    return by_suffix or "turtle"


_MAX_EXPANSION = 10_000_000  # characters entity references may add to an RDF/XML file


class _PrologEnd(Exception):
    pass


def _refuse_entity_expansion(path: Path) -> None:
    """Refuse the DOCTYPEs that make an XML parser expand without bound ("billion laughs": entities
    defined by other entities) or read other files (external entities). Protégé's own DOCTYPE, plain
    entities for namespace IRIs (`<!ENTITY owl "http://...#">`), passes: its expansion is bounded."""
    declared: dict[str, str] = {}
    problems: list[str] = []

    def entity(name, is_parameter, value, base, system_id, public_id, notation) -> None:
        if is_parameter:
            problems.append(f"parameter entity '%{name}'")
        elif value is None:
            problems.append(f"external entity '{name}' ({system_id or public_id})")
        elif "&" in value or "%" in value:
            problems.append(f"entity '{name}' defined through other entities")
        else:
            declared[name] = value

    def start(*_args) -> None:
        raise _PrologEnd

    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.EntityDeclHandler = entity
    parser.StartElementHandler = start
    try:
        with path.open("rb") as fh:
            parser.ParseFile(fh)
    except (_PrologEnd, expat.ExpatError):
        pass  # the prolog is read; a broken file is reported by the RDF/XML parser itself
    if not problems and declared:
        data = path.read_bytes()
        added = sum(len(value) * data.count(f"&{name};".encode()) for name, value in declared.items())
        if added > _MAX_EXPANSION:
            problems.append(f"entity references that would add {added:,} characters")
    if problems:
        raise OntologyFormatError(
            f"{path.name}: refused: its DOCTYPE declares {problems[0]}, which could make reading it expand without "
            "bound or read other files. Save it again from Protégé (File > Save as... > \"RDF/XML Syntax\" or "
            "\"Turtle Syntax\"), or remove the DOCTYPE."
        )


def _refuse(path: Path, syntax: str) -> OntologyFormatError:
    return OntologyFormatError(
        f"{path.name}: this ontology is in {syntax}, which kgrag cannot read. {_SAVE_AS_HINT}"
    )


def _decode_head(head: bytes) -> str:
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return head.decode("utf-16", errors="replace")
    return head.decode("utf-8-sig", errors="replace")


def _first_significant_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            return line
    return ""


def _read_more(path: Path) -> bytes:
    # The XML prolog (Protégé's DOCTYPE with entity declarations) can be longer than 1 KB.
    with path.open("rb") as f:
        return f.read(64 * 1024)


class _RootFound(Exception):
    pass


def _xml_root(data: bytes) -> tuple[str, str, list[str]] | None:
    """(namespace, local name, attribute names) of the first element, or None if this is not XML."""
    parser = expat.ParserCreate(namespace_separator=" ")
    found: list[tuple[str, str, list[str]]] = []

    def start(tag: str, attributes: dict[str, str]) -> None:
        namespace, _, name = tag.rpartition(" ")
        found.append((namespace, name, [a.replace(" ", "") for a in attributes]))
        raise _RootFound

    parser.StartElementHandler = start
    try:
        parser.Parse(data, False)
    except _RootFound:
        pass
    except expat.ExpatError:
        return None
    return found[0] if found else None


def _parse_error_detail(error: Exception, path: Path, fmt: str) -> str:
    """rdflib's error reduced to 'line N: what', without the file's absolute path."""
    if fmt == "nt":
        # The N-Triples parser gives no line number; N-Triples is Turtle, whose parser does.
        try:
            rdflib.Graph().parse(source=str(path), format="turtle")
        except Exception as again:
            return _parse_error_detail(again, path, "turtle")
        return str(error)
    if fmt == "json-ld":
        # rdflib decodes with orjson when it is installed, whose messages differ from the standard
        # library's; re-decode with `json` so the report is the same on every machine.
        try:
            json.loads(path.read_text(encoding="utf-8-sig"))
        except json.JSONDecodeError as again:
            return f"line {again.lineno}, column {again.colno}: {again.msg}"
        except (OSError, UnicodeDecodeError):
            pass
    match = re.search(r"at line (\d+) of <[^>]*>:\nBad syntax \((.*?)\) at \^", str(error), re.S)
    if match:
        return f"line {match.group(1)}: {match.group(2)}"
    if hasattr(error, "getLineNumber"):  # xml.sax.SAXParseException
        return (
            f"line {error.getLineNumber()}, column {error.getColumnNumber()}: {error.getMessage()}"
        )
    if hasattr(error, "lineno") and hasattr(error, "msg"):  # json.JSONDecodeError
        return f"line {error.lineno}, column {getattr(error, 'colno', '?')}: {error.msg}"
    return str(error).splitlines()[0] if str(error) else type(error).__name__

