"""Settings declared as data (env prefix `KG_`), loaded by a cached `get_settings()` that tests override."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["Settings", "get_settings"]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KG_", extra="ignore")

    data_dir: Path = Field(Path(".kgrag"), description="Where the knowledge base lives (KG_DATA_DIR).")
    api_token: str | None = Field(
        None, description="Bearer token required by the API's write endpoints when set (KG_API_TOKEN)."
    )
    default_k: int = Field(10, ge=1, le=200, description="Hits returned by a query when k is not given.")
    title_boost: float = Field(1.0, ge=0, description="Weight of a word in the document title against one in the body.")
    gram_weight: float = Field(0.5, ge=0, description="Weight of Chinese character-pair matches against word matches (0 = off).")
    max_df_ratio: float = Field(0.1, gt=0, le=1, description="Query words in more than this share of chunks are skipped (speed).")
    bm25_candidates: int = Field(200, ge=1, description="Chunks taken from the text index before fusion.")
    graph_candidates: int = Field(50, ge=1, description="Chunks taken from graph expansion before fusion.")
    expansion_hops: int = Field(2, ge=0, le=4, description="How many relations graph expansion may follow.")
    expansion_decay: float = Field(0.5, gt=0, le=1, description="Score kept per relation followed in graph expansion.")
    mention_weight: float = Field(0.2, ge=0, le=1, description="Weight of a chunk that mentions a reached entity (vs. a document about it).")
    min_graph_score: float = Field(0.05, ge=0, description="Graph hits scoring below this are dropped as unspecific.")
    hub_cap: int = Field(50, ge=1, description="Entities with more edges than this are not expanded through.")
    fusion: str = Field("rrf", pattern="^(score|rrf)$", description="score = weighted sum of normalised scores; rrf = reciprocal-rank fusion.")
    graph_weight: float = Field(2.5, ge=0, description="Weight of graph evidence against text evidence in fusion.")
    chunks_per_document: int = Field(2, ge=1, description="At most this many hits from one document.")
    text_agreement: float = Field(3.0, ge=0, description="How much a graph hit's own word match raises it among graph hits.")
    graph_confidence: float = Field(0.5, ge=0, description="Graph evidence joins the fusion only when its best score reaches this (0 = always).")
    cued_seed_weight: float = Field(0.4, ge=0, le=1, description="Graph weight of a named entity's own documents when the question asks along a relation.")
    rrf_k: float = Field(20.0, gt=0, description="The k of reciprocal-rank fusion.")
    followup: bool = Field(True, description="Search a second time, with the names the best hit adds, when no top hit came through a relation.")
    followup_weight: float = Field(1.0, ge=0, description="Weight of the follow-up search's ranks against round one's when they are merged.")
    llm_model: str | None = Field(
        None, description="litellm model name (e.g. openai/gpt-4o-mini); unset = offline rules (KG_LLM_MODEL)."
    )
    # -- packs (routing a question to at most two knowledge packs) --------------------------------
    routing: bool = Field(True, description="Route each question to at most two knowledge packs first; off = search every pack (KG_ROUTING).")
    route_min_confidence: float = Field(0.3, ge=0, le=1, description="Below this routing score the best pack is not convincing: search every pack.")
    route_second_share: float = Field(0.5, ge=0, le=1, description="A second pack is searched when its routing score is at least this share of the best one's.")
    route_min_known: float = Field(0.6, ge=0, le=1, description="A question that no card, registry row or entity ties to a pack is out of scope when the words the knowledge base holds carry less than this share of its idf weight ...")
    route_min_coverage: float = Field(0.45, ge=0, le=1, description="... and no one of the best passages holds this share of it.")
    llm_timeout: float = Field(20.0, gt=0, description="Seconds an LLM call may take before kgrag falls back to its rules (KG_LLM_TIMEOUT).")
    llm_api_base: str | None = Field(None, description="Base URL of an OpenAI-compatible endpoint for KG_LLM_MODEL (KG_LLM_API_BASE).")
    llm_mock_response: str | None = Field(None, description="litellm's mock_response: the model's reply without calling it (tests, offline demos).")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
