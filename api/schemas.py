"""Request and response bodies of the HTTP API (the same shapes as `kg query --json`)."""

from __future__ import annotations

from pydantic import BaseModel, Field

__all__ = ["DocumentIn", "IngestOut", "QueryIn", "QueryOut"]


class QueryIn(BaseModel):
    query: str = Field(..., min_length=1, max_length=4000, description="The question or keywords.")
    k: int = Field(10, ge=1, le=200, description="How many hits to return.")
    mode: str = Field("full", pattern="^(full|bm25|graph)$", description="full, bm25 (text only) or graph only.")
    types: list[str] | None = Field(None, description="Expand only to entities of these classes (or subclasses).")
    packs: list[str] | None = Field(None, max_length=2, description="Search only these knowledge packs (at most 2); default: routing decides.")


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
    packs_used: list[dict] = Field(default_factory=list, description="The knowledge packs searched: [{id, why}] ([] without packs).")
    out_of_scope: str | None = Field(None, description="'没有依据 / no basis in the knowledge base: ...' when no pack covers the question.")
    routing: dict | None = Field(None, description="How the packs were chosen (path, scores, fallback); null without packs.")


class DocumentIn(BaseModel):
    text: str = Field(..., min_length=1, description="Markdown or plain text.")
    source: str | None = Field(None, description="A stable name; posting the same source again replaces it.")
    title: str | None = Field(None, description="Defaults to the first heading.")
    format: str = Field("md", pattern="^(md|txt)$")


class IngestOut(BaseModel):
    added: int
    updated: int
    unchanged: int
    chunks_indexed: int
    doc_ids: list[str]
