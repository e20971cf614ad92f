"""The PostgreSQL text index's tables and what goes into them: chunk -> per-field term counts, field lengths rounded as whoosh rounds them, the schema's DDL."""

from __future__ import annotations

import re
from collections import Counter

from whoosh.util.numeric import byte_to_length, length_to_byte

from retrieval.index.analysis import GramAnalyzer, KgAnalyzer
from retrieval.types import Chunk

__all__ = ["FIELDS", "FIELD_NO", "NAMESPACE", "analyze_chunk", "rounded_length", "schema_sql"]

FIELDS = ("title", "section", "body", "grams")
FIELD_NO = {name: i for i, name in enumerate(FIELDS)}
NAMESPACE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_WORDS, _GRAMS = KgAnalyzer(), GramAnalyzer()


def rounded_length(length: int) -> int:
    """A field length as whoosh stores it: one byte, exact up to 10, then logarithmic."""
    return byte_to_length(length_to_byte(length))


def schema_sql(ns: str) -> str:
    return f"""
    CREATE SCHEMA IF NOT EXISTS {ns};
    CREATE SEQUENCE IF NOT EXISTS {ns}.docnums;
    CREATE TABLE IF NOT EXISTS {ns}.chunks (
        docnum bigint PRIMARY KEY, chunk_id text NOT NULL UNIQUE, doc_id text NOT NULL,
        lengths int[] NOT NULL, rounded int[] NOT NULL);
    CREATE INDEX IF NOT EXISTS chunks_doc_id ON {ns}.chunks (doc_id);
    CREATE TABLE IF NOT EXISTS {ns}.postings (
        field smallint NOT NULL, term text NOT NULL, docnum bigint NOT NULL, tf int NOT NULL,
        length int NOT NULL, PRIMARY KEY (field, term, docnum));
    CREATE INDEX IF NOT EXISTS postings_docnum ON {ns}.postings (docnum);
    CREATE TABLE IF NOT EXISTS {ns}.terms (
        field smallint NOT NULL, term text NOT NULL, df bigint NOT NULL, PRIMARY KEY (field, term));
    CREATE TABLE IF NOT EXISTS {ns}.fields (
        field smallint PRIMARY KEY, total bigint NOT NULL, rounded bigint NOT NULL);
    CREATE TABLE IF NOT EXISTS {ns}.generation (
        id int PRIMARY KEY CHECK (id = 1), value bigint NOT NULL, chunks bigint NOT NULL);
    INSERT INTO {ns}.generation VALUES (1, 0, 0) ON CONFLICT DO NOTHING;
    INSERT INTO {ns}.fields SELECT f, 0, 0 FROM generate_series(0, {len(FIELDS) - 1}) f ON CONFLICT DO NOTHING;
    """


def analyze_chunk(chunk: Chunk, section: str) -> list[Counter]:
    """Term counts of each field in FIELDS order, as whoosh's analyzers index them."""
    texts = (chunk.title, section, chunk.text)
    counts = [Counter(term for term, _ in _WORDS.terms(text)) for text in texts]
    counts.append(Counter(term for term, _ in _GRAMS.terms(chunk.title + "\n" + chunk.text)))
    return counts
