"""The `kg` command line: thin verbs over `retrieval.KnowledgeBase` (heavy imports happen inside each verb)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from kg.errors import KgError

__all__ = ["cli", "main"]

DEMO_DIR = Path(__file__).with_name("demo")


def _settings(data_dir: Path | None, **overrides):
    from kg.settings import Settings

    values = {k: v for k, v in overrides.items() if v is not None}
    if data_dir is not None:
        values["data_dir"] = data_dir
    return Settings(**values)


def data_dir_option(func):
    return click.option(
        "--data-dir",
        type=click.Path(file_okay=False, path_type=Path),
        envvar="KG_DATA_DIR",
        default=None,
        help="Knowledge base folder (default: ./.kgrag, or $KG_DATA_DIR).",
    )(func)


def json_option(func):
    return click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")(func)


def quiet_option(func):
    return click.option("--quiet", "-q", is_flag=True, help="No progress bars.")(func)


def _open(data_dir: Path | None, create: bool = False, **overrides):
    from retrieval.pipeline import KnowledgeBase

    return KnowledgeBase(_settings(data_dir, **overrides), create=create)


class _Progress:
    """A click progress bar on stderr that `--quiet` (or a non-terminal) silences."""

    def __init__(self, length: int | None, label: str, quiet: bool) -> None:
        self.bar = None
        if not quiet:
            self.bar = click.progressbar(length=length, label=label, file=sys.stderr, show_pos=True)

    def __enter__(self):
        if self.bar is not None:
            self.bar.__enter__()
        return self

    def __call__(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)


def _echo_json(data) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


class _KgGroup(click.Group):
    """Turns every KgError into `error: <message>` on stderr and the error's exit code."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KgError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exc.exit_code)


@click.group(cls=_KgGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kgrag")
def cli() -> None:
    """kgrag: graph- and ontology-augmented retrieval over your notes.

    \b
    Typical session:
      kg init
      kg import relations.csv        # entities and typed relations
      kg ingest notes/               # Markdown and text files
      kg query "redis-cluster 宕机会影响哪些服务？"
      kg serve                       # the HTTP API
    Try `kg demo` for a bundled example knowledge base.
    """


@cli.command()
@data_dir_option
def init(data_dir: Path | None) -> None:
    """Create an empty knowledge base (graph.ttl with the base ontology, an empty index)."""
    with _open(data_dir, create=True) as kb:
        click.echo(f"knowledge base ready in {kb.root} (open {kb.root / 'graph.ttl'} in Protégé)")


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@data_dir_option
@json_option
@quiet_option
def ingest(paths: tuple[Path, ...], data_dir: Path | None, as_json: bool, quiet: bool) -> None:
    """Index Markdown and text files (folders are walked). Unchanged files are skipped."""
    from retrieval.ingest import find_source_files

    files = find_source_files(paths)
    with _open(data_dir, create=True) as kb, _Progress(len(files), "ingesting", quiet or as_json) as bar:
        report = kb.ingest_paths(list(paths), progress=bar)
    if as_json:
        _echo_json({k: v for k, v in report.__dict__.items() if k != "doc_ids"})
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
    """
    options = {}
    if file.suffix.lower() == ".csv":
        options = {"skip_invalid": skip_invalid, "dry_run": dry_run, "rejects_path": rejects}
    elif skip_invalid or dry_run or rejects:
        raise click.UsageError("--skip-invalid, --rejects and --dry-run apply to relation tables (.csv) only")
    with _open(data_dir, create=True) as kb:
        total = sum(1 for _ in file.open("rb")) if file.suffix.lower() == ".csv" else None
        with _Progress(total, "importing", quiet or as_json or (total or 0) < 5000) as bar:
            done = [0]

            def advance(rows_done: int) -> None:  # the importer reports a running total
                bar(rows_done - done[0])
                done[0] = rows_done

            result = kb.import_file(file, progress=advance, **options)
    if as_json:
        _echo_json(result)
    else:
        click.echo(result["summary"])
        if result.get("chunks_reindexed"):
            click.echo(f"re-indexed {result['chunks_reindexed']} chunk(s) that contain new Chinese labels or synonyms")
        for line in result.get("report", {}).get("rejected", []):
            click.echo(f"  rejected {line}", err=True)


@cli.command()
@click.argument("text")
@click.option("-k", type=int, default=None, help="How many hits (default 10).")
@click.option("--mode", type=click.Choice(["full", "bm25", "graph"]), default="full", show_default=True,
              help="full = text + graph; bm25 = text only; graph = graph only.")
@click.option("--type", "types", multiple=True, help="Expand only to entities of this class or its subclasses (repeatable).")
@data_dir_option
@json_option
def query(text: str, k: int | None, mode: str, types: tuple[str, ...], data_dir: Path | None, as_json: bool) -> None:
    """Ranked passages for a question, each with why it was found."""
    with _open(data_dir) as kb:
        result = kb.query(text, k=k, mode=mode, types=list(types) or None)
    if as_json:
        _echo_json(result.to_json())
        return
    _print_result(result)


def _print_result(result, max_text: int = 160) -> None:
    ents = ", ".join(f"{e['label']}" + (f" ({e['surface']})" if e["surface"] != e["label"] else "") for e in result.entities)
    click.echo(click.style(f"query: {result.query}", bold=True))
    click.echo(f"entities: {ents or '(none linked)'}")
    if result.followup:
        click.echo(f"second round: also searched for {', '.join(result.followup['bridge'])} (named by hit 1)")
    if not result.hits:
        click.echo("nothing found: no passage matches these words or entities")
        return
    for hit in result.hits:
        where = f"{hit.source}:{hit.lines[0]}-{hit.lines[1]}" if hit.source else hit.doc_id
        section = f" § {hit.section}" if hit.section else ""
        click.echo(f"{hit.rank:>2}. {click.style(hit.title, fg='cyan')}{section}  [{hit.score:.4f}]  {where}")
        snippet = " ".join(hit.text.split())
        click.echo("    " + (snippet[:max_text] + ("…" if len(snippet) > max_text else "")))
        reasons = []
        if "bm25" in hit.why:
            reasons.append(f"bm25 #{hit.why['bm25']['rank']} ({', '.join(hit.why['bm25']['terms'][:6])})")
        if "graph" in hit.why:
            reasons.append(f"graph #{hit.why['graph']['rank']}: {hit.why['graph']['path']}")
        if "followup" in hit.why:
            reasons.append(f"second round #{hit.why['followup']['rank']} ({', '.join(hit.why['followup']['terms'][:6])})")
        click.echo("    why: " + " | ".join(reasons))


@cli.command()
@click.argument("key")
@data_dir_option
@json_option
def entity(key: str, data_dir: Path | None, as_json: bool) -> None:
    """Show an entity (by label or IRI): aliases, types, neighbours by relation, where it is mentioned."""
    with _open(data_dir) as kb:
        info = kb.entity(key)
    if as_json:
        _echo_json(info)
        return
    click.echo(click.style(info["label"], bold=True) + f"  <{info['id']}>")
    click.echo(f"types: {', '.join(info['types']) or '-'}    aliases: {', '.join(info['aliases']) or '-'}")
    for relation, targets in sorted(info["neighbours"].items()):
        click.echo(f"  {relation}: " + ", ".join(t["label"] for t in targets))
    for doc in info["documents_about"]:
        click.echo(f"  about it: {doc['title']} ({doc['source']})")
    for m in info["mentioned_in"]:
        click.echo(f"  mentioned in: {m['title']} [{m['chunk_id']}] x{m['mentions']}")


@cli.command()
@click.option("--format", "fmt", type=click.Choice(["csv", "turtle"]), default="csv", show_default=True,
              help="csv = the relation table `kg import` reads; turtle = the whole graph.ttl.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write to this file (atomically) instead of stdout.")
@data_dir_option
def export(fmt: str, output: Path | None, data_dir: Path | None) -> None:
    """Export the relations as a relation table (.csv) or the whole graph as Turtle.

    \b
    The CSV has one row per relation, with the columns `kg import` reads; importing it into an
    empty knowledge base gives back the same entities and relations. What a table cannot hold
    (entities without relations, aliases containing |, ...) is listed on stderr.
    """
    import io

    from kg.export import export_relations_csv, export_turtle, write_atomically

    with _open(data_dir) as kb:
        graph, vocab = kb.graph.rdf, kb.graph.vocab
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
    else:
        # With a BOM, as the rejects file: Excel then reads the Chinese labels as UTF-8.
        write_atomically(output, text.getvalue().encode("utf-8-sig"))
        click.echo(f"exported {n} relations to {output}", err=True)


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

    with _open(data_dir) as kb:
        findings = check_ontology(kb.graph.rdf, kb.graph.vocab)
    errors = sum(f.severity == "error" for f in findings)
    warnings = len(findings) - errors
    if as_json:
        _echo_json({"errors": errors, "warnings": warnings, "findings": [f.to_json() for f in findings]})
    else:
        for finding in findings:
            click.echo(str(finding))
        click.echo(f"{errors} error(s), {warnings} warning(s)" if findings else "no problems found")
    if errors:
        sys.exit(1)


@cli.command()
@data_dir_option
@json_option
def stats(data_dir: Path | None, as_json: bool) -> None:
    """Counts of documents, chunks, entities, relations and links."""
    with _open(data_dir) as kb:
        data = kb.stats()
    if as_json:
        _echo_json(data)
    else:
        for key, value in data.items():
            click.echo(f"{key:>28}: {value}")


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@data_dir_option
def serve(host: str, port: int, data_dir: Path | None) -> None:
    """Serve the HTTP API (OpenAPI docs at /docs). Set KG_API_TOKEN to protect write endpoints."""
    import uvicorn

    from api import create_app

    app = create_app(_settings(data_dir))
    uvicorn.run(app, host=host, port=port, log_level="info")


DEMO_QUESTIONS = [
    "LORA-02 的看门狗超时阈值是多少？",
    "数据库连接池和线程池配置有关系吗",
    "what breaks if redis-cluster goes down?",
    "nginx 超时应该怎么调整？",
]


@cli.command()
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=Path(".kgrag-demo"),
              show_default=True, help="Where to build the demo knowledge base.")
@click.option("-k", type=int, default=5, show_default=True, help="Hits shown per question.")
@quiet_option
def demo(data_dir: Path, k: int, quiet: bool) -> None:
    """Build the bundled demo knowledge base, answer a few questions, and run its self-check."""
    docs = sorted((DEMO_DIR / "docs").rglob("*.*"))
    with _open(data_dir, create=True) as kb:
        click.echo(kb.import_file(DEMO_DIR / "relations.csv")["summary"])
        click.echo(kb.import_file(DEMO_DIR / "synonyms.txt")["summary"])
        with _Progress(len(docs), "ingesting demo documents", quiet) as bar:
            click.echo(kb.ingest_paths([DEMO_DIR / "docs"], progress=bar).summary())
        for question in DEMO_QUESTIONS:
            click.echo()
            _print_result(kb.query(question, k=k))
        from retrieval.evaluate import evaluate_kb, format_self_check

        click.echo("\nself-check on the demo question set (Hit@k and R@k by question kind, text only vs full):")
        summaries = {m: evaluate_kb(kb, DEMO_DIR / "questions.jsonl", mode=m, ks=(1, 5)) for m in ("bm25", "full")}
        click.echo(format_self_check(summaries))
    click.echo(f"\nThe demo knowledge base is in {data_dir}; try: kg query --data-dir {data_dir} \"订单服务依赖哪些组件？\"")


def _parse_ks(value: str) -> tuple[int, ...]:
    try:
        ks = tuple(sorted({int(v) for v in value.split(",") if v.strip()}))
    except ValueError:
        raise click.BadParameter(f"'{value}' is not a comma-separated list of numbers, e.g. 1,2,5,10") from None
    if not ks or ks[0] < 1:
        raise click.BadParameter("give positive cut-offs, e.g. 1,2,5,10")
    return ks


@cli.command(name="eval")
@click.argument("target", type=click.Path(exists=True, path_type=Path))
@click.option("--kb", "kb_dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Evaluate an existing knowledge base; TARGET is then its questions.jsonl.")
@click.option("--k", "ks", default="1,2,5,10", show_default=True, help="Cut-offs for R@k, AR@k, Hit@k.")
@click.option("--mode", type=click.Choice(["full", "bm25", "graph"]), default="full", show_default=True)
@click.option("--limit", type=int, default=None, help="Only the first N questions.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the results as JSON to this file ('-' for stdout).")
@click.option("--by-type/--no-by-type", default=True, show_default=True, help="One table row per question type.")
@quiet_option
def eval_(target: Path, kb_dir: Path | None, ks: str, mode: str, limit: int | None, json_out: Path | None,
          by_type: bool, quiet: bool) -> None:
    """Measure retrieval: R@k, AR@k, Hit@k, MRR, latency.

    \b
    kg eval DATASET_DIR            a benchmark folder (corpus.jsonl, questions.jsonl,
                                   optional relations.csv / ontology): builds a fresh
                                   knowledge base in a temporary folder and asks every question
    kg eval --kb DATA_DIR QUESTIONS.jsonl
                                   your own self-check set on an existing knowledge base;
                                   gold_ids are document ids or source paths
    """
    from retrieval.evaluate import evaluate_dataset, evaluate_kb
    from retrieval.metrics import format_table

    cutoffs = _parse_ks(ks)
    if kb_dir is not None:
        from retrieval.datasets import read_questions

        n = len(read_questions(target)) if limit is None else limit
        with _open(kb_dir) as kb, _Progress(n, f"asking ({mode})", quiet or json_out == Path("-")) as bar:
            summary = evaluate_kb(kb, target, mode=mode, ks=cutoffs, progress=bar)
    else:
        if not target.is_dir():
            raise click.BadParameter("give a benchmark folder, or use --kb DATA_DIR QUESTIONS.jsonl", param_hint="TARGET")
        from retrieval.datasets import load_dataset

        n = len(load_dataset(target, limit, drop_empty_gold=True).questions)
        silent = quiet or json_out == Path("-")
        if not silent:
            click.echo(f"building a knowledge base from {target.name} ...", err=True)
        with _Progress(n, f"asking ({mode})", silent) as bar:
            summary = evaluate_dataset(
                target, mode=mode, ks=cutoffs, limit=limit, progress=bar,
                on_ingested=None if silent else lambda s: click.echo(f"ingested in {s:.1f} s", err=True),
            )
    if json_out == Path("-"):
        _echo_json(summary)
        return
    click.echo(format_table({f"{summary['dataset']} ({mode})": summary}, cutoffs, by_type=by_type))
    if "ingest_seconds" in summary:
        click.echo(f"ingest: {summary['ingest_seconds']} s")
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(summary, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        click.echo(f"results written to {json_out}")


def main() -> None:
    cli(prog_name="kg")


if __name__ == "__main__":
    main()
