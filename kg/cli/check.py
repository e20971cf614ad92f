"""`kg check`: verify that the catalog, the text index, graph.ttl and the mentions agree, and repair what does not."""

from __future__ import annotations

from pathlib import Path

import click

from kg.cli.base import cli, data_dir_option, echo_json, json_option, open_kb


@cli.command()
@click.option("--repair", is_flag=True, help="Re-derive what disagrees (text index, mentions) from the catalog and graph.ttl.")
@data_dir_option
@json_option
def check(repair: bool, data_dir: Path | None, as_json: bool) -> None:
    """Verify catalog <-> text index <-> graph <-> mentions (exit code 1 when a problem is left).

    Opening a knowledge base already finishes a commit that a killed process left half done;
    this looks for everything else (an outside edit not yet linked, orphaned index entries,
    left-over temporary files) and with --repair fixes it under the write lock.
    """
    with open_kb(data_dir) as kb:
        report = kb.check(repair=repair)
    if as_json:
        echo_json(report.to_json())
    else:
        for problem in report.problems:
            click.echo(f"problem: {problem}")
        for line in report.repaired:
            click.echo(f"repaired: {line}")
        counts = ", ".join(f"{v} {k}" for k, v in report.counts.items())
        click.echo(("clean: " if report.clean else "repaired: " if report.repaired else "not clean: ") + counts)
    if not report.clean and not report.repaired:
        raise SystemExit(1)
