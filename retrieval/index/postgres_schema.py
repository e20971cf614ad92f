"""The PostgreSQL text index's tables and what goes into them: chunk -> per-field term counts, field lengths rounded as whoosh rounds them, the schema's DDL."""

from __future__ import annotations

import re
from collections import Counter

from whoosh.util.numeric import byte_to_length, length_to_byte

from retrieval.index.analysis import GramAnalyzer, KgAnalyzer
from retrieval.types import Chunk

__all__ = ["FIELDS", "FIELD_NO", "INDEX_TABLES", "NAMESPACE", "analyze_chunk", "index_tables_sql", "rounded_length",
           "schema_sql", "swap_sql"]

FIELDS = ("title", "section", "body", "grams")
FIELD_NO = {name: i for i, name in enumerate(FIELDS)}
NAMESPACE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_WORDS, _GRAMS = KgAnalyzer(), GramAnalyzer()


def rounded_length(length: int) -> int:
    """A field length as whoosh stores it: one byte, exact up to 10, then logarithmic."""
    return byte_to_length(length_to_byte(length))


INDEX_TABLES = ("chunks", "postings", "terms")  # what a commit that replaces the whole index writes anew
# Their constraints and indexes, named as PostgreSQL names them for the plain tables (so schemas made
# before these names were spelled out match), each with the table's name in front.
_NAMED = {"chunks": ("_pkey", "_chunk_id_key", "_doc_id"), "postings": ("_pkey", "_docnum"), "terms": ("_pkey",)}


def index_tables_sql(ns: str, suffix: str = "") -> str:
    """The tables of the text index proper; `suffix`: the copies a whole-index commit fills beside them."""
    c, p, t = (f"{name}{suffix}" for name in INDEX_TABLES)
    return f"""
    CREATE TABLE IF NOT EXISTS {ns}.{c} (
        docnum bigint CONSTRAINT {c}_pkey PRIMARY KEY, chunk_id text NOT NULL CONSTRAINT {c}_chunk_id_key UNIQUE,
        doc_id text NOT NULL, lengths int[] NOT NULL, rounded int[] NOT NULL);
    CREATE INDEX IF NOT EXISTS {c}_doc_id ON {ns}.{c} (doc_id);
    CREATE TABLE IF NOT EXISTS {ns}.{p} (
        field smallint NOT NULL, term text NOT NULL, docnum bigint NOT NULL, tf int NOT NULL,
        length int NOT NULL, CONSTRAINT {p}_pkey PRIMARY KEY (field, term, docnum) INCLUDE (tf, length));
    CREATE INDEX IF NOT EXISTS {p}_docnum ON {ns}.{p} (docnum);
    CREATE TABLE IF NOT EXISTS {ns}.{t} (
        field smallint NOT NULL, term text NOT NULL, df bigint NOT NULL, CONSTRAINT {t}_pkey PRIMARY KEY (field, term));
    """


def swap_sql(ns: str, suffix: str) -> str:
    """The filled copies take the place of the index tables (inside the commit's transaction: the old tables'
    locks are taken only here, so searches read them until this point)."""
    statements = ["DROP TABLE " + ", ".join(f"{ns}.{name}" for name in INDEX_TABLES)]
    for name in INDEX_TABLES:
        statements.append(f"ALTER TABLE {ns}.{name}{suffix} RENAME TO {name}")
        statements += [f"ALTER INDEX {ns}.{name}{suffix}{end} RENAME TO {name}{end}" for end in _NAMED[name]]
    return "; ".join(statements)


def schema_sql(ns: str) -> str:
    return f"""
    CREATE SCHEMA IF NOT EXISTS {ns};
    CREATE SEQUENCE IF NOT EXISTS {ns}.docnums;
    {index_tables_sql(ns)}
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
