"""The `kg` command group and what its verbs share: --data-dir/--json/--quiet options, opening a knowledge base, progress bars, JSON output, errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from kg.errors import KgError, StorageError
from kg.files import disk_full

__all__ = ["DEMO_DIR", "Progress", "cli", "data_dir_option", "echo_json", "json_option", "open_kb", "quiet_option", "settings_for"]

DEMO_DIR = Path(__file__).parent.parent / "demo"


def settings_for(data_dir: Path | None, **overrides):
    from kg.settings import Settings

    values = {k: v for k, v in overrides.items() if v is not None}
    if data_dir is not None:
        values["data_dir"] = data_dir
    return Settings(**values)


def settings_problem(exc) -> str:
    """A settings `ValidationError` as one line a person acts on: each bad value by the variable that gave it."""
    import os

    environment = {name.upper(): name for name in os.environ}
    problems = []
    for error in exc.errors():
        field = str(error["loc"][0]) if error.get("loc") else "?"
        variable = f"KG_{field.upper()}"
        where = variable if variable in environment else f"the setting {field}"
        problems.append(f"{where}={error.get('input')!r}: {error['msg']}")
    return "; ".join(problems) + " (see the README's Configuration section)"


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


def open_kb(data_dir: Path | None, create: bool = False, **overrides):
    from retrieval.pipeline import KnowledgeBase

    return KnowledgeBase(settings_for(data_dir, **overrides), create=create)


class _Unsized:
    """An iterable with no length: a click progress bar over it counts without a total. (click 8.5's
    `progressbar(length=None)` raises `TypeError: iterable or length is required`.)"""

    def __iter__(self):
        while True:
            yield None


class Progress:
    """A click progress bar on stderr that `--quiet` (or a non-terminal) silences; `length=None` counts
    without a total (a pack's files are found while it is ingested)."""

    def __init__(self, length: int | None, label: str, quiet: bool, then: str = "") -> None:
        """`then`: what the command does once the count is full (said on stderr when it is, so a long last step
        after a full bar is not silence)."""
        self.bar = None
        self.length, self.done, self.then, self.label, self.noted = length, 0, then, label, False
        if not quiet:
            if length is None:
                self.bar = click.progressbar(_Unsized(), label=label, file=sys.stderr, show_pos=True)
            else:
                self.bar = click.progressbar(length=length, label=label, file=sys.stderr, show_pos=True)

    def __enter__(self):
        if self.bar is not None:
            self.bar.__enter__()
        return self

    def note(self, text: str) -> None:
        """What the current item is doing (`OCR: scan.pdf page 3/40`), beside the label until the count moves; on a
        terminal only (a log would get a line a page)."""
        if self.bar is not None and getattr(sys.stderr, "isatty", lambda: False)():
            self.bar.label, self.noted = f"{self.label} ({text})", True
            self.bar.render_progress()

    def __call__(self, n: int = 1) -> None:
        if self.bar is None:
            return
        if self.noted:
            self.bar.label, self.noted = self.label, False
        self.bar.update(n)
        self.done += n
        if self.then and self.length is not None and self.done >= self.length:
            # On a terminal the bar's own end breaks the line; elsewhere (a log) the bar is hidden and this ends it.
            on_terminal = getattr(sys.stderr, "isatty", lambda: False)()
            click.echo(f"\n{self.then}", file=sys.stderr, nl=not on_terminal)
            self.then = ""

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)


def echo_json(data) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


class _KgGroup(click.Group):
    """Turns every KgError into `error: <message>` on stderr and the error's exit code (75, "try again
    later", when another kg process kept the write lock); a busy SQLite file is reported the same way."""

    def invoke(self, ctx: click.Context):
        import sqlite3

        try:
            return super().invoke(ctx)
        except KgError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except sqlite3.OperationalError as exc:
            if (full := disk_full(exc)) is not None:
                self._full(ctx, full)
            if "disk I/O error" in str(exc):  # what SQLite says when a full disk stops it opening a WAL database
                click.echo("error: reading or writing the knowledge base's SQLite files failed (disk I/O error): is the "
                           "disk full (`df -h`) or failing? Free some space and run the command again", err=True)
                ctx.exit(StorageError.exit_code)
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            click.echo(f"error: the catalog (kb.sqlite) is busy ({exc}): another program holds it; try again", err=True)
            ctx.exit(75)
        except OSError as exc:
            if (full := disk_full(exc)) is None:
                raise
            self._full(ctx, full)
        except ValueError as exc:  # pydantic's ValidationError of the settings: a KG_ variable with a bad value
            if type(exc).__name__ != "ValidationError" or getattr(exc, "title", "") != "Settings":
                raise
            click.echo(f"error: {settings_problem(exc)}", err=True)
            ctx.exit(1)

    @staticmethod
    def _full(ctx: click.Context, full: BaseException) -> None:
        """A full disk (`full`: the OS's or SQLite's error) outside a journaled commit (which says more itself:
        `retrieval.writing`): the embedding's vectors, a cache. What was written before it stays; the command can be
        run again once there is space."""
        click.echo(f"error: the disk is full ({full}); free some space and run the command again", err=True)
        ctx.exit(StorageError.exit_code)


@click.group(cls=_KgGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kgrag")
def cli() -> None:
    """kgrag: graph- and ontology-augmented retrieval over your notes.

    \b
    Typical session:
      kg init
      kg import relations.csv        # entities and typed relations
      kg ingest notes/               # Markdown, text, HTML, Word, Excel, PowerPoint, CSV, PDF
      kg query "redis-cluster 宕机会影响哪些服务？"
      kg serve                       # the HTTP API
    Try `kg demo` for a bundled example knowledge base.
    """


