"""Request and response bodies of the HTTP API (the same shapes as `kg query --json`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, Field

__all__ = ["ERROR_RESPONSES", "DocumentIn", "ErrorOut", "IngestOut", "QueryIn", "QueryOut", "Text"]


def _no_lone_surrogates(value: str) -> str:
    # JSON can carry "\ud800" alone; it is no character, and UTF-8 (SQLite, the index) cannot store it.
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"contains a lone surrogate (\\u{ord(value[e.start]):04x}) at {e.start}, which is no character") from None
    return value


Text = Annotated[str, AfterValidator(_no_lone_surrogates)]


class ErrorBody(BaseModel):
    type: str = Field(..., description="The error class, e.g. InputError, AuthError, NotFoundError, BusyError.")
    message: str = Field(..., description="What went wrong and how to fix it.")
    problems: list[str] | None = Field(None, description="Itemised details, e.g. one per invalid field or row.")


class ErrorOut(BaseModel):
    error: ErrorBody


_DESCRIPTIONS = {
    400: "Bad input (also an unparsable JSON body or a Host that is not allowed)",
    401: "Missing or wrong bearer token (write endpoints, when KG_API_TOKEN is set)",
    404: "Unknown entity, document or endpoint",
    405: "Method not allowed on this endpoint",
    413: "Request body or document over its size limit",
    422: "The request does not match the schema",
    500: "Unexpected server error",
    503: "Another process holds the knowledge base's write lock; retry after Retry-After seconds",
}
# Documented on every route (api.app includes each router with them): each is what the API can return.
ERROR_RESPONSES: dict = {status: {"model": ErrorOut, "description": text} for status, text in _DESCRIPTIONS.items()}


class QueryIn(BaseModel):
    query: Text = Field(..., min_length=1, max_length=4000, pattern=r"\S", description="The question or keywords.")
    k: int = Field(10, ge=1, le=200, description="How many hits to return.")
    mode: str = Field("full", pattern="^(full|bm25|graph)$", description="full, bm25 (text only) or graph only.")
    types: list[Annotated[Text, Field(max_length=200)]] | None = Field(
        None, max_length=50, description="Expand only to entities of these classes (or subclasses); blank names are ignored."
    )


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


class QueryOut(BaseModel):
    query: str
    mode: str
    entities: list[dict]
    hits: list[HitOut]
    followup: dict | None = Field(
        None, description="The second search (query, bridge names, the chunk they came from) when round one was not enough."
    )
    timings_ms: dict


class DocumentIn(BaseModel):
    text: Text = Field(..., min_length=1, pattern=r"\S", description="Markdown or plain text.")
    source: Text | None = Field(
        None, max_length=1000,
        description="A stable name, kept under `api:` (never a file's document); posting the same source again replaces it.",
    )
    title: Text | None = Field(None, max_length=1000, description="Defaults to the first heading.")
    format: str = Field("md", pattern="^(md|txt)$")


class IngestOut(BaseModel):
    added: int
    updated: int
    unchanged: int
    chunks_indexed: int
    doc_ids: list[str]
