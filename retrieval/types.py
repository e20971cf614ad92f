"""The typed objects passed between pipeline stages: SourceDocument -> Chunk -> Mention -> Hit -> QueryResult."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import PurePath

__all__ = [
    "Chunk",
    "Document",
    "EntityHit",
    "GraphHit",
    "Hit",
    "Mention",
    "ParentChunk",
    "PathStep",
    "QueryResult",
    "SourceDocument",
    "TextHit",
]


@dataclass(frozen=True)
class SourceDocument:
    """A document as handed to ingest: where it came from and its raw text."""

    source: str  # a stable name: a file path, "api:<name>", "<dataset>:<passage id>"
    text: str
    format: str = "md"  # "md", "txt", "html", "pdf", "docx", "xlsx", "pptx" or "csv" (as read; readers turn the others into headed text)
    title: str | None = None  # None: taken from the first heading, else the file name
    effective_date: str | None = None  # ISO date this version takes effect (None: its ingest)
    doc_key: str | None = None  # the logical document id (front matter `id:`, --doc-id); None: the source
    summary: str = ""  # front matter metadata: kept in the catalog, not indexed as body text
    aliases: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    version_label: str | None = None  # front matter `version:` ("v1.3"); None: "v<n>"
    line_pages: tuple[int, ...] = ()  # where each line of `text` is in the file: a PDF's page, a slide, a sheet's row
    warnings: tuple[str, ...] = ()  # what the reader noticed but did not refuse (a page without text layer)


@dataclass(frozen=True)
class Document:
    doc_id: str
    source: str
    title: str
    sha256: str  # fingerprint of the normalized text
    version: int
    n_chunks: int


@dataclass(frozen=True)
class Chunk:
    """A child chunk: the unit that is indexed, linked and returned."""

    chunk_id: str
    doc_id: str
    ordinal: int
    title: str  # the document's title
    section: str  # heading path inside the document ("" at top level)
    text: str
    line_start: int  # 1-based, inclusive, in the source file
    line_end: int
    sha256: str  # fingerprint of the normalized chunk text
    parent_id: str = ""  # the parent chunk (a section or part of one) it belongs to
    page: int | None = None  # where its first line is in the file's own terms: a PDF's page, a deck's slide, a sheet's row


# Where a hit is, as the file's own program shows it (`place`): lines in a text file, a PDF's page, a deck's slide,
# a sheet's row. A Word or HTML document's line numbers are those of the text read from it, which point nowhere in
# Word or a browser: its section (shown beside) says where.
_UNITS = {".pdf": "p.", ".pptx": "slide", ".xlsx": "row", ".csv": "row"}
_CONVERTED = {".docx", ".html", ".htm", *_UNITS}


def place(source: str, lines: tuple[int, int] | list[int], page: int | None) -> str:
    """What follows a hit's source to say where in it: ":15-19", " p. 3", " slide 2", " row 7" or ""."""
    suffix = PurePath(source).suffix.lower() if source else ""
    if page is not None and suffix in _UNITS:
        return f" {_UNITS[suffix]} {page}"
    return "" if suffix in _CONVERTED else f":{lines[0]}-{lines[1]}"


@dataclass(frozen=True)
class ParentChunk:
    """A parent chunk: a section (or a part of a long one) returned as the context of its children's hits."""

    parent_id: str
    doc_id: str
    ordinal: int
    section: str
    text: str
    line_start: int
    line_end: int
    sha256: str
    page: int | None = None


@dataclass(frozen=True)
class Mention:
    """An entity found in a text: which entity, through which surface form, where."""

    entity: str  # entity IRI
    label: str  # the entity's preferred label
    surface: str  # the text as it appears
    start: int
    end: int


@dataclass(frozen=True)
class PathStep:
    source: str  # entity label
    relation: str  # relation name as walked (an inverse name when walked backwards)
    target: str


@dataclass
class EntityHit:
    """An entity reached by graph expansion from the query's entities."""

    entity: str
    label: str
    score: float
    path: tuple[PathStep, ...] = ()  # empty for a seed entity named in the query


@dataclass
class TextHit:
    chunk_id: str
    score: float
    terms: tuple[str, ...] = ()
    docnum: int = -1  # the text index's own number for the chunk (for per-term re-scoring), -1 = unknown


@dataclass
class GraphHit:
    chunk_id: str
    score: float
    entity: str  # IRI of the entity that brought the chunk in
    via: str  # "about" (document title is the entity), "section" (a section anchor) or "mentions"
    path: tuple[PathStep, ...] = ()
    evidence: float = 0.0  # the graph's own score, before agreement with the text is counted
    about: str = ""  # why the chunk is about the entity (a section anchor's reason), when via == "section"


@dataclass
class Hit:
    rank: int
    doc_id: str
    title: str
    chunk_id: str
    text: str
    score: float
    source: str
    section: str
    lines: tuple[int, int]
    why: dict = field(default_factory=dict)
    version: dict | None = None  # {"version_id", "label", "effective_from", "effective_to"} that answered
    page: int | None = None
    parent: dict | None = None  # {"chunk_id", "text"}: the parent chunk, the context around the hit

    def to_json(self) -> dict:
        data = asdict(self)
        data["lines"] = list(self.lines)
        return data


@dataclass
class QueryResult:
    query: str
    entities: list[dict]
    hits: list[Hit]
    mode: str = "full"
    timings_ms: dict = field(default_factory=dict)
    followup: dict | None = None  # the second round's query, when round one was not enough
    as_of: str | None = None  # the date whose versions were searched (None: today's)
    as_of_from: str | None = None  # "question" (a time word in it) or "parameter"
    packs_used: list[dict] = field(default_factory=list)  # [{"id", "why"}] of the packs searched ([] without packs)
    out_of_scope: str | None = None  # "没有依据 / no basis in the knowledge base: ..." when routing found none
    routing: dict | None = None  # how the packs were chosen (path, scores, fallback), None without packs
    meaning: dict | None = None  # the meaning channel: nearest entity labels added to the search, timings (None: no vectors)
    graph: dict | None = None  # with KG_GRAPH_WALK=store: the graph walked ("store" or "graph.ttl"), the store, why not it

    def to_json(self) -> dict:
        return {
            "query": self.query,
            "mode": self.mode,
            "entities": self.entities,
            "hits": [h.to_json() for h in self.hits],
            "followup": self.followup,
            "timings_ms": self.timings_ms,
            "as_of": self.as_of,
            "as_of_from": self.as_of_from,
            "packs_used": self.packs_used,
            "out_of_scope": self.out_of_scope,
            "routing": self.routing,
            "meaning": self.meaning,
            "graph": self.graph,
        }
