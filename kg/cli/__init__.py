"""The `kg` command line: thin verbs over `retrieval.KnowledgeBase`, one module per command group (heavy imports happen inside each verb)."""

from __future__ import annotations

from kg.cli import (  # noqa: F401 - each module registers its commands
    ask,
    check,
    documents,
    embed,
    evaluate,
    graph,
    llm,
    mcp,
    migrate,
    packs,
    search,
    serve,
)
from kg.cli.base import cli

__all__ = ["cli", "main"]


def main() -> None:
    cli(prog_name="kg")
