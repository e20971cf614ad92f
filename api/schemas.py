"""Request and response bodies of the HTTP API (the same shapes as `kg query --json`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from kg.files import NAME_CONTROLS
from kg.settings import MAX_K

__all__ = ["ERROR_RESPONSES", "NON_BLANK", "json_integer", "DocumentIn", "ErrorOut", "IngestOut", "QueryIn", "QueryOut", "Text"]


def _no_lone_surrogates(value: str) -> str:
    # JSON can carry "\ud800" alone; it is no character, and UTF-8 (SQLite, the index) cannot store it.
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"contains a lone surrogate (\\u{ord(value[e.start]):04x}) at {e.start}, which is no character") from None
    return value


Text = Annotated[str, AfterValidator(_no_lone_surrogates)]


def _one_line(value: str) -> str:
    # A name (a source, a file's name, a title) is printed in every list of sources and every answer citing it.
    if (found := NAME_CONTROLS.search(value)) is not None:
        raise ValueError(f"holds a control character (\\x{ord(found[0]):02x}) at {found.start()}: a name is one line of "
                         "plain text, without line breaks, tabs or terminal escapes")
    return value


Name = Annotated[Text, AfterValidator(_one_line)]

# A text that holds something: one character that is not white space, where Python's idea of white space
# (what the library strips) also takes in the separators U+001C-U+001F, which regex `\S` lets through.
NON_BLANK = r"[^\s\x1c-\x1f]"


class ErrorBody(BaseModel):
    type: str = Field(..., description="The error class, e.g. InputError, AuthError, NotFoundError, BusyError.")
    message: str = Field(..., description="What went wrong and how to fix it.")
    problems: list[str] | None = Field(None, description="Itemised details, e.g. one per invalid field or row.")


class ErrorOut(BaseModel):
    error: ErrorBody


_DESCRIPTIONS = {
    400: "Bad input (also an unparsable JSON body or a Host that is not allowed)",
    401: "Missing or wrong bearer token (write endpoints, when KG_API_TOKEN is set)",
    403: "A state-changing request sent by a page of another site (Origin / Sec-Fetch-Site)",
    404: "Unknown entity, document, knowledge pack or endpoint",
    405: "Method not allowed on this endpoint",
    409: "A posted document whose doc_id or front matter id names a file's document; mode dense on a knowledge base with no vectors",
    413: "Request body or document over its size limit",
    422: "The request does not match the schema",
    429: "/ask or chat: more questions a minute than KG_ASK_RATE_LIMIT; retry after Retry-After seconds",
    500: "Unexpected server error",
    503: "Another process holds the knowledge base's write lock; retry after Retry-After seconds",
    507: "The data dir's disk is full: the write was stopped and nothing of it kept",
}
# Documented on every route (api.app includes each router with them): each is what the API can return.
ERROR_RESPONSES: dict = {status: {"model": ErrorOut, "description": text} for status, text in _DESCRIPTIONS.items()}


def json_integer(value: object) -> object:
    """A JSON integer as JSON Schema's "integer" means it: 10 and 10.0 are one number, but "10" is a string
    and true a boolean (pydantic's lax mode reads both as numbers; its strict mode refuses 10.0)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("must be a JSON integer (not a string or a boolean)")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError("must be a whole number")
        return int(value)
    return value


# YYYY, YYYY-MM or YYYY-MM-DD (a day past its month's end means the month's last day).
AS_OF_PATTERN = r"^[1-9][0-9]{3}(-(0[1-9]|1[0-2])(-(0[1-9]|[12][0-9]|3[01]))?)?$"


class QueryIn(BaseModel):
    query: Text = Field(..., min_length=1, max_length=4000, pattern=NON_BLANK, description="The question or keywords.")
    k: int = Field(10, ge=1, le=MAX_K, description=f"How many hits to return, 1 to {MAX_K} (a JSON integer: not \"10\", not true).")
    mode: str = Field("full", pattern="^(full|bm25|graph|dense)$", description="full, bm25 (text only), graph only or dense (meaning only; needs `kg embed`).")
    types: list[Annotated[Text, Field(max_length=200)]] | None = Field(
        None, max_length=50, description="Expand only to entities of these classes (or subclasses); blank names are ignored."
    )
    as_of: str | None = Field(None, pattern=AS_OF_PATTERN, description="Search the document versions in force on this date (YYYY-MM-DD, YYYY-MM or YYYY).")
    packs: list[Annotated[Text, Field(max_length=200)]] | None = Field(None, max_length=2, description="Search only these knowledge packs (at most 2); default: routing decides.")

    _k_is_a_json_integer = field_validator("k", mode="before")(json_integer)


class HitOut(BaseModel):
    rank: int
    doc_id: str
    title: str
    chunk_id: str
    text: str
    score: float
    source: str
    section: str
    lines: list[int]
    why: dict
    version: dict | None = Field(None, description="The version that answered: version_id, label, effective_from, effective_to.")
    page: int | None = Field(None, description="Where the passage starts in the file's own terms: a PDF's page, a deck's slide, a sheet's row.")
    parent: dict | None = Field(None, description="The parent chunk (chunk_id, text): the passage's context.")


class QueryOut(BaseModel):
    query: str
    mode: str
    entities: list[dict]
    hits: list[HitOut]
    followup: dict | None = Field(
        None, description="The second search (query, bridge names, the chunk they came from) when round one was not enough."
    )
    timings_ms: dict
    as_of: str | None = Field(None, description="The date whose versions were searched, when not today's.")
    as_of_from: str | None = Field(None, description="What set as_of: 'question' (a time word) or 'parameter'.")
    packs_used: list[dict] = Field(default_factory=list, description="The knowledge packs searched: [{id, why}] ([] without packs).")
    out_of_scope: str | None = Field(None, description="'没有依据 / no basis in the knowledge base: ...' when no pack covers the question.")
    routing: dict | None = Field(None, description="How the packs were chosen (path, scores, fallback); null without packs.")
    meaning: dict | None = Field(None, description="The meaning channel: near_labels added to the search, embed_ms; null without vectors.")
    graph: dict | None = Field(None, description="With KG_GRAPH_WALK=store: the graph walked ('store', or 'graph.ttl' with the "
                               "problem that kept the store out), and the store; null otherwise.")


class DocumentIn(BaseModel):
    # Exactly one of the two carries the document: the spec says so, so clients (and schema-driven
    # tests) know a body with both or neither is refused.
    model_config = ConfigDict(json_schema_extra={"oneOf": [{"required": ["text"]}, {"required": ["content_base64"]}]})
    text: Text = Field(None, min_length=1, pattern=NON_BLANK, description="Markdown, plain text or HTML (or give content_base64).")
    source: Name | None = Field(
        None, max_length=1000,
        description="A stable name, kept under `api:` (never a file's document); posting the same source again replaces it.",
    )
    title: Name | None = Field(None, max_length=1000, description="Defaults to the first heading.")
    format: str | None = Field(None, pattern="^(md|txt|html|pdf|docx|xlsx|pptx|csv)$", description="Default: from filename, else md.")
    content_base64: str = Field(None, description="A file's bytes, base64-encoded (PDF, Word .docx, Excel .xlsx, PowerPoint .pptx, HTML, ...), instead of text.")
    filename: Name | None = Field(None, max_length=1000, description="The file's name: its suffix gives the format of content_base64.")
    doc_id: Name | None = Field(None, max_length=1000, description="The logical document this is a version of (default: the source); never a file's document (409).")
    effective: str | None = Field(None, pattern=AS_OF_PATTERN, description="The date this version takes effect (YYYY-MM-DD; default: now).")


class IngestOut(BaseModel):
    added: int
    updated: int
    unchanged: int
    chunks_indexed: int
    doc_ids: list[str]
    chunks_unchanged: int = 0
    chunks_retired: int = 0
    versions_replaced: int = Field(0, description="Earlier versions of the same source replaced on the day they began (in force on no day): dropped.")
    chunks_dropped: int = Field(0, description="Their chunks that no other version holds, deleted from the index.")
    warnings: list[str] = []
