"""Knowledge packs: `kg pack add | list | update | remove` (a folder or git repository, its PACK.md card, its REGISTRY.md row, its own relation table)."""

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


@cli.group()
def pack() -> None:
    """Knowledge packs: bodies of documents that questions are routed to (REGISTRY.md -> PACK.md -> search).

    \b
    kg pack add runbooks ./team-runbooks            # a folder (copied into the data dir)
    kg pack add vendor https://host/vendor-docs.git # a git repository (cloned with git; file:// works offline)
    kg pack list
    kg query "..." --pack runbooks                  # search only this pack
    """


@pack.command(name="add")
@click.argument("pack_id", metavar="ID")
@click.argument("origin", metavar="PATH|GIT_URL")
@data_dir_option
@json_option
@quiet_option
def add(pack_id: str, origin: str, data_dir: Path | None, as_json: bool, quiet: bool) -> None:
    """Copy or clone a pack into the data dir, ingest it and add its row to REGISTRY.md.

    A relations.csv and an aliases.csv (or .xlsx) at the pack's root are imported too (as `kg import` does);
    `kg pack update` follows their edits and `kg pack remove` takes their edges out. A pack's table cannot take your names over: a
    row giving an alias another entity has is skipped (said in the notes), and its `X documentedIn pack:ID` rows do
    not decide where questions about X are searched."""
    with open_kb(data_dir, create=True) as kb, Progress(None, "ingesting", quiet or as_json) as bar:
        report = kb.packs.add(pack_id, origin, progress=bar)
    _show(report, as_json)


@pack.command(name="update")
@click.argument("pack_id", metavar="ID")
@data_dir_option
@json_option
@quiet_option
def update(pack_id: str, data_dir: Path | None, as_json: bool, quiet: bool) -> None:
    """Fetch a pack again (git pull, or a fresh copy of its folder), re-ingest what changed and import its tables again."""
    with open_kb(data_dir) as kb, Progress(None, "ingesting", quiet or as_json) as bar:
        report = kb.packs.update(pack_id, progress=bar)
    _show(report, as_json)


@pack.command(name="remove")
@click.argument("pack_id", metavar="ID")
@data_dir_option
@json_option
def remove(pack_id: str, data_dir: Path | None, as_json: bool) -> None:
    """Drop a pack: its documents, its files in the data dir, its registry rows, its graph entity and its tables' edges."""
    with open_kb(data_dir) as kb:
        report = kb.packs.remove(pack_id)
    _show(report, as_json)


@pack.command(name="list")
@data_dir_option
@json_option
def list_(data_dir: Path | None, as_json: bool) -> None:
    """The packs: id, title, documents, registry rows, what each covers and does not cover."""
    from kg.files import masked
    from retrieval.index.postgres_shards import pack_databases, pack_namespace

    with open_kb(data_dir) as kb:
        packs = kb.packs.list()
        orphans = sorted({r.pack for r in kb.packs.registry.rows} - {p.card.id for p in packs})
        schema, placed = kb.settings.postgres_schema, pack_databases(kb.settings.pack_databases)
    # where a pack's text index lives when KG_PACK_DATABASES gives it a database of its own
    where = {pack: f"{masked(dsn)} (schema {pack_namespace(schema, pack)})" for pack, dsn in placed.items()}
    unplaced = sorted(set(placed) - {p.card.id for p in packs})
    if as_json:
        echo_json({"packs": [{**p.to_json(), **({"database": where[p.card.id]} if p.card.id in where else {})}
                             for p in packs], "registry_rows_without_pack": orphans,
                   "pack_databases_without_pack": unplaced})
        return
    if not packs:
        click.echo("no packs (add one with `kg pack add ID PATH|GIT_URL`)")
    for info in packs:
        card = info.card
        click.echo(click.style(card.id, bold=True) + f"  {card.title}  ({info.documents} documents, "
                   f"{info.registry_rows} registry row(s)){'  [' + card.language + ']' if card.language else ''}")
        if card.covers:
            click.echo("    covers: " + "; ".join(card.covers))
        if card.does_not_cover:
            click.echo("    does not cover: " + "; ".join(card.does_not_cover))
        click.echo(f"    from: {info.origin}")
        if card.id in where:
            click.echo(f"    text index: its own database, {where[card.id]}")
    for name in orphans:
        click.echo(f"warning: REGISTRY.md names pack '{name}', which is not added (routing ignores that row)", err=True)
    for name in unplaced:
        click.echo(f"note: KG_PACK_DATABASES names pack '{name}', which is not added: its database holds nothing until "
                   f"`kg pack add {name} PATH|GIT_URL`", err=True)


def _show(report, as_json: bool) -> None:
    if as_json:
        echo_json(report.to_json())
    else:
        click.echo(report.summary())
