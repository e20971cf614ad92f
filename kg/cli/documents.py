"""Building a knowledge base: `kg init`, `kg ingest`, `kg import`, `kg stats`."""

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
@data_dir_option
def init(data_dir: Path | None) -> None:
    """Create an empty knowledge base (graph.ttl with the base ontology, an empty index)."""
    with open_kb(data_dir, create=True) as kb:
        click.echo(f"knowledge base ready in {kb.root} (open {kb.root / 'graph.ttl'} in Protégé)")


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@data_dir_option
@json_option
@quiet_option
def ingest(paths: tuple[Path, ...], data_dir: Path | None, as_json: bool, quiet: bool) -> None:
    """Index Markdown and text files (folders are walked). Unchanged files are skipped."""
    from retrieval.ingest.chunking import find_source_files

    files = find_source_files(paths)
    with open_kb(data_dir, create=True) as kb, Progress(len(files), "ingesting", quiet or as_json) as bar:
        report = kb.ingest_paths(list(paths), progress=bar)
    if as_json:
        echo_json({k: v for k, v in report.__dict__.items() if k != "doc_ids"})
    else:
        click.echo(report.summary())


@cli.command(name="import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--skip-invalid", is_flag=True, help="Import the good rows of a relation table; report the bad ones.")
@click.option("--rejects", type=click.Path(dir_okay=False, path_type=Path), help="With --skip-invalid: write bad rows here.")
@click.option("--dry-run", is_flag=True, help="Check the file and say what would change; change nothing.")
@data_dir_option
@json_option
@quiet_option
def import_(file: Path, skip_invalid: bool, rejects: Path | None, dry_run: bool, data_dir: Path | None,
            as_json: bool, quiet: bool) -> None:
    """Import a relation table (.csv), an ontology (.ttl/.owl/.rdf) or a synonym table (.txt).

    \b
    relations.csv: header `source,relation,target`; optional columns
    source_type, target_type, source_aliases, target_aliases (separated by |), weight, note.
    A bad row stops the whole import (nothing changes) unless --skip-invalid is given.
    aliases.csv: header `entity,alias` (other names of existing entities), same rules.
    """
    options = {}
    if file.suffix.lower() == ".csv":
        options = {"skip_invalid": skip_invalid, "dry_run": dry_run, "rejects_path": rejects}
    elif skip_invalid or dry_run or rejects:
        raise click.UsageError("--skip-invalid, --rejects and --dry-run apply to relation tables (.csv) only")
    with open_kb(data_dir, create=True) as kb:
        total = sum(1 for _ in file.open("rb")) if file.suffix.lower() == ".csv" else None
        with Progress(total, "importing", quiet or as_json or (total or 0) < 5000) as bar:
            done = [0]

            def advance(rows_done: int) -> None:  # the importer reports a running total
                bar(rows_done - done[0])
                done[0] = rows_done

            result = kb.import_file(file, progress=advance, **options)
    if as_json:
        echo_json(result)
    else:
        click.echo(result["summary"])
        if result.get("chunks_reindexed"):
            click.echo(f"re-indexed {result['chunks_reindexed']} chunk(s) that contain new Chinese labels or synonyms")
        for line in result.get("report", {}).get("rejected", []):
            click.echo(f"  rejected {line}", err=True)


@cli.command()
@data_dir_option
@json_option
def stats(data_dir: Path | None, as_json: bool) -> None:
    """Counts of documents, chunks, entities, relations and links."""
    with open_kb(data_dir) as kb:
        data = kb.stats()
    if as_json:
        echo_json(data)
    else:
        for key, value in data.items():
            click.echo(f"{key:>28}: {value}")


