"""Settings + data dir -> the `TextIndex` they name: whoosh files in the data dir (the default) or PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from kg.errors import ConfigError, InputError
from kg.settings import Settings

__all__ = ["open_text_index"]


def open_text_index(settings: Settings, root: Path, store=None):
    """`store`: the knowledge base's catalog (`DocStore`), which says which pack each document is in when
    KG_PACK_DATABASES puts packs on databases of their own."""
    boosts = {"title": settings.title_boost, "section": settings.section_boost, "body": 1.0}
    if settings.pack_databases and settings.text_backend != "postgres":
        raise ConfigError("KG_PACK_DATABASES puts packs' text indexes on PostgreSQL databases of their own: it needs "
                          "KG_TEXT_BACKEND=postgres and KG_POSTGRES_DSN (or leave KG_PACK_DATABASES unset)")
    if settings.text_backend == "postgres":
        if not settings.postgres_dsn:
            raise InputError("KG_TEXT_BACKEND=postgres needs KG_POSTGRES_DSN (e.g. 'host=/run/postgresql dbname=kgrag')")
        if settings.pack_databases:
            from retrieval.catalog.packs import packs_of
            from retrieval.index.postgres_shards import open_sharded

            index = open_sharded(settings, boosts)
            if store is not None:
                index.bind(lambda doc_ids: packs_of(store.db, Path(root), doc_ids))
            return index
        from retrieval.index.postgres_index import PostgresIndex

        return PostgresIndex(settings.postgres_dsn, settings.postgres_schema, boosts, max_df_ratio=settings.max_df_ratio)
    from retrieval.index.whoosh_index import WhooshIndex

    return WhooshIndex(Path(root) / "index", boosts, max_df_ratio=settings.max_df_ratio)
