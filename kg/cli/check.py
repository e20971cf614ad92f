"""`kg check`: verify that the catalog, the text index, graph.ttl and the mentions agree, and repair what does not."""

from __future__ import annotations

from pathlib import Path

import click

from kg.cli import base
from kg.cli.base import cli, data_dir_option, echo_json, json_option, open_kb, quiet_option

# Past this many chunks `kg check` says what it is doing before it starts: it reads every chunk id of the catalog and of
# the text index (~12 s at 1M chunks, bench/RESULTS-scale.md), and said nothing until it was done.
ANNOUNCE_CHUNKS = 100_000


class _LazyBar:
    """A progress bar that appears only when the repair has chunks to index again."""

    def __init__(self, total, quiet: bool) -> None:
        self.total, self.quiet, self.bar = total, quiet, None

    def __call__(self, n: int) -> None:
        if self.bar is None:
            self.bar = base.Progress(self.total(), "indexing again", self.quiet,
                                     then="committing the index (minutes past 100k chunks)…").__enter__()
        self.bar(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)


@cli.command()
@click.option("--repair", is_flag=True, help="Re-derive what disagrees (text index, mentions) from the catalog and "
              "graph.ttl; an index an older kgrag wrote is written anew.")
@click.option("--optimize", is_flag=True, help="With --repair: also merge the text index's segments into one "
              "(ingest keeps a few, merged by size; queries go on meanwhile).")
@data_dir_option
@json_option
@quiet_option
def check(repair: bool, optimize: bool, data_dir: Path | None, as_json: bool, quiet: bool) -> None:
    """Verify catalog <-> text index <-> graph <-> mentions (exit code 1 when a problem is left).

    Opening a knowledge base already finishes a commit that a killed process left half done;
    this looks for everything else (an outside edit not yet linked, orphaned index entries,
    left-over temporary files) and with --repair fixes it under the write lock.
    """
    if optimize and not repair:
        raise click.UsageError("--optimize writes the text index anew: give it with --repair")
    merged = None
    with open_kb(data_dir) as kb:
        chunks = kb.store.stats()["chunks"]
        if chunks >= ANNOUNCE_CHUNKS and not (quiet or as_json):
            click.echo(f"checking {chunks:,} chunks: the catalog against the text index, graph.ttl and the mentions…",
                       err=True)
        bar = _LazyBar(lambda: chunks, quiet or as_json)
        try:
            report = kb.check(repair=repair, progress=bar)
        finally:
            bar.close()
        if optimize:
            segments = report.counts.get("segments")
            if segments and segments > 1 and not (quiet or as_json):
                # no bar (the merge reports nothing on the way): say what is under way, and its size
                click.echo(f"merging the text index's {segments} segments into one "
                           f"({report.counts.get('indexed', 0):,} chunks; ~0.5 CPU-minutes at 100k)…", err=True)
            merged = kb.optimize()
            _after_optimize(report, kb)
    if as_json:
        echo_json({**report.to_json(), **({"segments_merged": merged} if merged is not None else {})})
    else:
        for problem in report.problems:
            click.echo(f"problem: {problem}")
        for line in report.recovered:  # done on open, before the check looked: not "clean" as found
            click.echo(f"recovered: {line}")
        for line in report.repaired:
            click.echo(f"repaired: {line}")
        if merged is not None:
            click.echo(f"optimized: {merged} text index segments merged into one" if merged > 1 else
                       "optimized: the text index is one segment already")
        counts = ", ".join(f"{v} {k}" for k, v in report.counts.items())
        status = "clean: " if report.clean and not report.recovered else "recovered, now clean: " if report.clean else \
            "repaired: " if report.repaired else "not clean: "
        click.echo(status + counts)
        for line in report.notes:
            click.echo(f"note: {line}")
    if not report.clean and not report.repaired:
        raise SystemExit(1)


def _after_optimize(report, kb) -> None:
    """The check ran before the merge: its segment count and its advice to merge are the index's as it was."""
    from retrieval.consistency import segment_count, segments_note

    before = segments_note(report.counts.get("segments"))
    if before in report.notes:
        report.notes.remove(before)
    segments = segment_count(kb.index)
    if segments is not None:
        report.counts["segments"] = segments
