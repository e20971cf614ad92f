"""`kg migrate`: move a knowledge base's text index and graph between the embedded files and PostgreSQL + a SPARQL store, then check the copy."""

from __future__ import annotations

from pathlib import Path

import click

from kg.cli.base import (
    Progress,
    cli,
    data_dir_option,
    echo_json,
    json_option,
    open_kb,
    quiet_option,
)


@cli.command()
@click.option("--to", "target", type=click.Choice(["postgres+sparql", "embedded"]), required=True,
              help="postgres+sparql: copy to PostgreSQL and a SPARQL store; embedded: back to files in the data dir.")
@click.option("--dsn", default=None, help="PostgreSQL connection string (default: $KG_POSTGRES_DSN).")
@click.option("--graph-store", default=None, help="sparql+http://HOST:PORT of the SPARQL store (default: $KG_GRAPH_STORE).")
@click.option("--schema", default=None, help="Name of this knowledge base in the backends (default: $KG_POSTGRES_SCHEMA or kgrag).")
@click.option("--pack-databases", default=None,
              help="Packs whose text index goes to a PostgreSQL database of its own, 'PACK=DSN; PACK=DSN' "
                   "(default: $KG_PACK_DATABASES).")
@click.option("--catalog", default=None,
              help="With --to postgres+sparql: also move the catalog into tables on this PostgreSQL DSN, so that no "
                   "server keeps a copy of it (default: $KG_CATALOG; unset: the catalog stays in the data dir).")
@data_dir_option
@json_option
@quiet_option
def migrate(target: str, dsn: str | None, graph_store: str | None, schema: str | None, pack_databases: str | None,
            catalog: str | None, data_dir: Path | None, as_json: bool, quiet: bool) -> None:
    """Move the text index and the graph to PostgreSQL + a SPARQL store, or back (the catalog too with --catalog).

    The copy is written from the catalog and the graph, then checked: the same chunks, the same
    triples, and the same top 10 for a sample of searches on both sides (exit code 1 when not).
    To move back, run it with the backends' settings (KG_TEXT_BACKEND=postgres, KG_POSTGRES_DSN,
    KG_GRAPH_STORE) set, as the knowledge base is then opened with them.
    """
    from kg.cli.base import settings_for
    from retrieval.migration import migrate as migrate_kb

    settings = settings_for(data_dir)
    packs = pack_databases if pack_databases is not None else settings.pack_databases
    catalog = catalog if catalog is not None else settings.catalog
    # KG_PACK_DATABASES and KG_CATALOG name where the copy goes: the embedded knowledge base is opened without them
    embedded = {"pack_databases": "", "catalog": None} if settings.text_backend != "postgres" else {}
    with open_kb(data_dir, **embedded) as kb:
        dsn = dsn or kb.settings.postgres_dsn
        graph_store = graph_store or (kb.settings.graph_store if kb.settings.graph_store != "file" else None)
        schema = schema or kb.settings.postgres_schema
        chunks = kb.store.stats()["chunks"]
        with Progress(chunks, "copying the text index", quiet or as_json,
                      then="committing the copy, then checking it against the original (minutes past 100k chunks)…") as bar:
            report = migrate_kb(kb, target, dsn=dsn, schema=schema, graph_store=graph_store, pack_databases=packs,
                                catalog=catalog if target == "postgres+sparql" else None, progress=bar)
    if as_json:
        echo_json(report.to_json())
    else:
        for problem in report.problems:
            click.echo(f"problem: {problem}")
        for note in report.notes:
            click.echo(f"note: {note}")
        click.echo(f"{'copied' if report.clean else 'copied with problems'}: {report.chunks} chunks, "
                   f"{report.triples} triples in graphs {', '.join(report.graphs) or '-'}; "
                   f"{report.queries_compared} searches compared"
                   + (f" ({report.within_drift} equal within 1%: the old whoosh index has merged segments, whose field "
                      "lengths whoosh rounded)" if report.within_drift else ""))
        if report.clean and target == "postgres+sparql":
            shards = (f" KG_PACK_DATABASES='{packs}'" if packs else "") + (f" KG_CATALOG='{catalog}'" if catalog else "")
            click.echo(f"use it with: KG_TEXT_BACKEND=postgres KG_POSTGRES_DSN='{dsn}' KG_POSTGRES_SCHEMA={schema} "
                       f"KG_GRAPH_STORE={graph_store}{shards}")
        elif report.clean:
            names = ["KG_TEXT_BACKEND", "KG_POSTGRES_DSN", "KG_GRAPH_STORE"] + ["KG_PACK_DATABASES"] * bool(packs) + \
                ["KG_CATALOG"] * bool(catalog)
            click.echo(f"use it with {', '.join(names[:-1])} and {names[-1]} unset")
    if not report.clean:
        raise SystemExit(1)
