"""Ingestion: files in, `SourceDocument`s and section-aware `Chunk`s out."""
