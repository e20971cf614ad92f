"""Text indexing: chunks in, a whoosh BM25F index (jieba analysis, identifiers, synonyms) out; `TextIndex` is the protocol."""
