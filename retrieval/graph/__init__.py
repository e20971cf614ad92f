"""The graph stages: linking (text -> mentions), seeds (mentions -> weighted entities), expansion (entities -> graph hits)."""
