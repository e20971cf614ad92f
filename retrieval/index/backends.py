"""Settings + data dir -> the `TextIndex` they name: whoosh files in the data dir (the default) or PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from kg.errors import InputError
from kg.settings import Settings

__all__ = ["open_text_index"]


def open_text_index(settings: Settings, root: Path):
    boosts = {"title": settings.title_boost, "section": settings.section_boost, "body": 1.0}
    if settings.text_backend == "postgres":
        if not settings.postgres_dsn:
            raise InputError("KG_TEXT_BACKEND=postgres needs KG_POSTGRES_DSN (e.g. 'host=/run/postgresql dbname=kgrag')")
        from retrieval.index.postgres_index import PostgresIndex

        return PostgresIndex(settings.postgres_dsn, settings.postgres_schema, boosts, max_df_ratio=settings.max_df_ratio)
    from retrieval.index.whoosh_index import WhooshIndex

    return WhooshIndex(Path(root) / "index", boosts, max_df_ratio=settings.max_df_ratio)
