"""Request and response bodies of the HTTP API (the same shapes as `kg query --json`)."""

from __future__ import annotations

from pydantic import BaseModel, Field

__all__ = ["DocumentIn", "IngestOut", "QueryIn", "QueryOut"]


class QueryIn(BaseModel):
    query: str = Field(..., min_length=1, max_length=4000, description="The question or keywords.")
    k: int = Field(10, ge=1, le=200, description="How many hits to return.")
    mode: str = Field("full", pattern="^(full|bm25|graph)$", description="full, bm25 (text only) or graph only.")
    types: list[str] | None = Field(None, description="Expand only to entities of these classes (or subclasses).")
    as_of: str | None = Field(None, description="Search the document versions in force on this date (YYYY-MM-DD, YYYY-MM or YYYY).")


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
    page: int | None = Field(None, description="PDF: the page the passage starts on.")
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


class DocumentIn(BaseModel):
    text: str | None = Field(None, min_length=1, description="Markdown or plain text (or give content_base64).")
    source: str | None = Field(None, description="A stable name; posting the same source again replaces it.")
    title: str | None = Field(None, description="Defaults to the first heading.")
    format: str | None = Field(None, pattern="^(md|txt|html|pdf)$", description="Default: from filename, else md.")
    content_base64: str | None = Field(None, description="A file's bytes, base64-encoded (PDF, HTML, ...), instead of text.")
    filename: str | None = Field(None, description="The file's name: its suffix gives the format of content_base64.")
    doc_id: str | None = Field(None, description="The logical document this is a version of (default: the source).")
    effective: str | None = Field(None, description="The date this version takes effect (YYYY-MM-DD; default: now).")


class IngestOut(BaseModel):
    added: int
    updated: int
    unchanged: int
    chunks_indexed: int
    doc_ids: list[str]
    chunks_unchanged: int = 0
    chunks_retired: int = 0
    warnings: list[str] = []
