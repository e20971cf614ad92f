"""The graph as files: `kg export` and `kg ontology check`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kg.cli.base import (
    cli,
    data_dir_option,
    echo_json,
    json_option,
    open_kb,
)


@cli.command()
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["csv", "xlsx", "turtle"]), default=None,
              help="csv = the relation table `kg import` reads; xlsx = the same table as an Excel workbook; turtle = "
                   "the whole graph (graph.ttl, or the SPARQL store's graphs with KG_GRAPH_STORE=sparql+http://...). "
                   "Default: turtle for a FILE ending in .ttl, xlsx for .xlsx, else csv.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write to this file (atomically) instead of stdout (the same as FILE).")
@data_dir_option
def export(file: Path | None, fmt: str | None, output: Path | None, data_dir: Path | None) -> None:
    """Export the relations as a relation table (.csv or .xlsx) or the whole graph as Turtle.

    \b
    kg export relations.csv      the relation table, written atomically
    kg export relations.xlsx     the same table as an Excel workbook
    kg export graph.ttl          the whole graph (Turtle, for Protégé)
    kg export > relations.csv    the same table on stdout

    \b
    The CSV has one row per relation, with the columns `kg import` reads; importing it into an
    empty knowledge base gives back the same entities and relations. What a table cannot hold
    (entities without relations, aliases containing |, ...) is listed on stderr. With
    KG_GRAPH_STORE=sparql+http://... the graph is read from the store (what other tools changed
    there included), not from graph.ttl.
    """
    import io

    from kg.export import export_relations_csv, export_turtle, write_atomically

    if file is not None and output is not None and file != output:
        raise click.UsageError(f"two files to write: {file} and -o {output}; give one")
    output = output or file
    suffix = output.suffix.lower() if output is not None else ""
    fmt = fmt or {".ttl": "turtle", ".xlsx": "xlsx"}.get(suffix, "csv")
    if fmt == "xlsx" and output is None:
        raise click.UsageError("a workbook is not text: give the file to write (kg export relations.xlsx)")
    with open_kb(data_dir) as kb:
        graph, vocab = _graph_to_export(kb)
        if fmt == "turtle":
            if output is None:
                click.echo(graph.serialize(format="turtle"), nl=False)
                return
            n = export_turtle(graph, output)
            click.echo(f"exported {n} triples to {output}", err=True)
            return
        lost: list[str] = []
        text = io.StringIO()
        n = export_relations_csv(graph, vocab, text, warn=lost.append)
    for message in lost:
        click.echo(f"not exported: {message}", err=True)
    if output is None:
        click.echo(text.getvalue(), nl=False)
    elif fmt == "xlsx":
        from kg.export import relations_workbook

        write_atomically(output, relations_workbook(text.getvalue()))
        click.echo(f"exported {n} relations to {output}", err=True)
    else:
        # With a BOM, as the rejects file: Excel then reads the Chinese labels as UTF-8.
        write_atomically(output, text.getvalue().encode("utf-8-sig"))
        click.echo(f"exported {n} relations to {output}", err=True)


def _graph_to_export(kb):
    """graph.ttl's graph and vocabulary, or the SPARQL store's when KG_GRAPH_STORE names one: the store is
    what Protégé and other tools read and edit, so an export shows their changes too."""
    from kg.stores import configured_store

    store = configured_store(kb.settings)
    if store is None:
        return kb.graph.rdf, kb.graph.vocab
    from kg.errors import InputError
    from ontology import Vocabulary

    try:
        graph = store.read()
    finally:
        store.close()
    if not len(graph):
        raise InputError(f"the SPARQL store at {store.url} holds no graph for '{kb.settings.postgres_schema}': "
                         "copy it there with `kg migrate --to postgres+sparql`, or unset KG_GRAPH_STORE "
                         "to export graph.ttl")
    for prefix, namespace in kb.graph.rdf.namespaces():  # the Turtle reads as graph.ttl does
        graph.bind(prefix, namespace, override=True, replace=True)
    return graph, Vocabulary.from_graph(graph)


@cli.group()
def ontology() -> None:
    """Check the ontology and the graph in graph.ttl (`kg ontology check`)."""


@ontology.command()
@data_dir_option
@json_option
def check(data_dir: Path | None, as_json: bool) -> None:
    """Find what makes the graph quietly wrong, each with its fix; exit 1 if there is an error.

    \b
    errors:   unknown-term (a relation or class used but not declared), dangling-reference
              (an edge to an IRI with no type and no label), transitive-cycle (A partOf B
              partOf A)
    warnings: domain / range (an edge whose ends have the wrong class), shared-alias (one
              name for two entities), self-loop, vocabulary (what the ontology loader guessed)
    """
    from kg.check import check_ontology

    with open_kb(data_dir) as kb:
        findings = check_ontology(kb.graph.rdf, kb.graph.vocab)
    errors = sum(f.severity == "error" for f in findings)
    warnings = len(findings) - errors
    if as_json:
        echo_json({"errors": errors, "warnings": warnings, "findings": [f.to_json() for f in findings]})
    else:
        for finding in findings:
            click.echo(str(finding))
        click.echo(f"{errors} error(s), {warnings} warning(s)" if findings else "no problems found")
    if errors:
        sys.exit(1)




@cli.group()
def store() -> None:
    """The SPARQL store graph.ttl is copied to (KG_GRAPH_STORE=sparql+http://...): status, pull, push.

    \b
    Every commit that changes the graph pushes it to the store, unless the store was
    edited since kgrag last wrote it (by a SPARQL update or another tool): then graph.ttl
    keeps the commit, the store keeps its edits, and `kg check` says the store is behind
    until you choose: `kg store pull` or `kg store push --force`. A server started with
    KG_STORE_FOLLOW=SECONDS pulls such edits itself.
    """


@store.command(name="status")
@data_dir_option
@json_option
def store_status(data_dir: Path | None, as_json: bool) -> None:
    """Compare the store's graph with graph.ttl; exit 1 when they differ.

    Reads the store's whole graph (seconds for the graph of a 100k-row table)."""
    from retrieval.store_sync import status

    with open_kb(data_dir) as kb:
        found = status(kb)
    if as_json:
        echo_json(found.to_json())
    else:
        click.echo(found.summary())
    if not found.in_sync:
        sys.exit(1)


@store.command(name="pull")
@data_dir_option
@json_option
def store_pull(data_dir: Path | None, as_json: bool) -> None:
    """Make the store's graph graph.ttl's (what was edited there reaches the queries).

    \b
    A commit like an import: the chunks are linked again to the entities the graph now has.
    Triples the store lacks leave graph.ttl, even those a relation table holds (importing
    that table again brings them back); triples added there stay, as ones added by hand."""
    from retrieval.store_sync import pull

    with open_kb(data_dir) as kb, kb.writing("store-pull"):
        result = pull(kb)
    if as_json:
        echo_json(result)
    else:
        click.echo(result["summary"])


@store.command(name="push")
@click.option("--force", is_flag=True, help="Replace the store's graph even if it was edited there since the last push.")
@data_dir_option
def store_push(force: bool, data_dir: Path | None) -> None:
    """Copy graph.ttl's graph to the store now (what every commit that changes the graph does)."""
    from retrieval.store_sync import push

    with open_kb(data_dir) as kb, kb.writing("store-push"):
        push(kb, strict=True, force=force, always=True)  # the store is read even when no commit changed graph.ttl
    click.echo("the store holds graph.ttl's graph")
