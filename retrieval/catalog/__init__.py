"""The catalog (SQLite): documents, chunks and mentions in, lookups by id, source and entity out."""
