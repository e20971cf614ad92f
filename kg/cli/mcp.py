"""Agents: `kg mcp`, an MCP server over stdio whose tools return the API's records (search, ask, entity, documents)."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path
from typing import Any

import click

from kg.cli.base import cli, data_dir_option, open_kb

__all__ = ["build_server", "documents_record"]

INSTRUCTIONS = (
    "kgrag searches a personal or team knowledge base (Chinese and English notes, runbooks, specs) "
    "with its relation graph. `search` returns ranked passages, each with `why` (matched words or the "
    "path through the graph); cite a passage by its title, section and lines. `entity` shows a thing's "
    "aliases, types and neighbours; `documents` lists what the base holds."
)


def documents_record(kb) -> dict[str, Any]:
    """What GET /documents returns: the knowledge base's own listing when it has one, else one built from the catalog."""
    listing = getattr(kb, "list_documents", None) or getattr(kb, "documents", None)
    if callable(listing):
        found = listing()
        return found if isinstance(found, dict) else {"documents": [_as_record(d) for d in found]}
    return {"documents": [
        {"doc_id": d.doc_id, "title": d.title, "source": d.source, "format": Path(d.source).suffix.lstrip(".") or None,
         "chunks": d.n_chunks, "version": None, "versions": 1, "pack": None}
        for d in kb.store.documents()
    ]}


def _as_record(item) -> Any:
    if hasattr(item, "to_json"):
        return item.to_json()
    return dataclasses.asdict(item) if dataclasses.is_dataclass(item) else item


def _optional(method, **given) -> dict[str, Any]:
    """The optional arguments that were given, refusing those this version's `method` does not take."""
    import inspect

    from kg.errors import InputError

    accepted = inspect.signature(method).parameters
    for name, value in given.items():
        if value is not None and name not in accepted:
            raise InputError(f"'{name}' is not available in this version of kgrag: leave it out")
    return {name: value for name, value in given.items() if value is not None}


def _answers_available(kb) -> bool:
    # `ask` is offered only where the answer stage exists (it arrives with the answers work).
    return importlib.util.find_spec("retrieval.answer") is not None and callable(getattr(kb, "ask", None))


def _sdk():
    """(the server class, its ToolError) of the installed MCP SDK, 2.x or 1.x."""
    try:
        from mcp.server.mcpserver import MCPServer  # mcp >= 2
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:
        try:
            from mcp.server.fastmcp import FastMCP as MCPServer  # mcp 1.x
            from mcp.server.fastmcp.exceptions import ToolError
        except ImportError:
            raise click.ClickException("kg mcp needs the MCP SDK: pip install 'kgrag[mcp]'") from None
    return MCPServer, ToolError


def build_server(kb):
    """An MCP server with kgrag's tools bound to the open knowledge base `kb`."""
    from kg.errors import KgError

    server_class, tool_error = _sdk()
    server = server_class(name="kgrag", instructions=INSTRUCTIONS)

    def record(call):
        try:
            return call()
        except KgError as exc:
            # The tool result carries the same message (and fix) the API and the CLI give.
            raise tool_error(str(exc)) from None

    @server.tool(structured_output=True, description="Ranked passages for a question or keywords, each with `why` it was found "
                             "(matched words, or the path through the relation graph) and where it is "
                             "(source, section, lines). mode: full | bm25 (text only) | graph; as_of: "
                             "YYYY-MM-DD (the versions in force then); packs: search only these packs.")
    def search(query: str, k: int = 10, mode: str = "full", types: list[str] | None = None,
               as_of: str | None = None, packs: list[str] | None = None) -> dict[str, Any]:
        return record(lambda: kb.query(query, k=k, mode=mode, types=types or None, **_optional(kb.query, as_of=as_of, packs=packs)).to_json())

    @server.tool(structured_output=True, description="An entity by label, alias or IRI: aliases, types, neighbours by relation, "
                             "the documents about it and the passages mentioning it. sources: each neighbour with "
                             "the table and line that state its edge (origin: 'relations.csv:3').")
    def entity(key: str, sources: bool = False) -> dict[str, Any]:
        return record(lambda: kb.entity(key, sources=sources))

    @server.tool(structured_output=True, description="The documents in the knowledge base: id, title, source, format, chunks, version.")
    def documents() -> dict[str, Any]:
        return record(lambda: documents_record(kb))

    if _answers_available(kb):
        @server.tool(structured_output=True, description="An answer to the question written from the knowledge base, each sentence "
                                 "with numbered citations (document, section, lines, version); found=false "
                                 "when the base does not answer it. history: the conversation before a follow-up "
                                 "([{role: user|assistant, content}], oldest first; at most 12 messages), so that "
                                 "'and who owns it?' is searched about what the earlier question named.")
        def ask(question: str, k: int | None = None, mode: str = "full", as_of: str | None = None,
                packs: list[str] | None = None, history: list[dict[str, str]] | None = None) -> dict[str, Any]:
            def call():
                answer = kb.ask(question, k=k, mode=mode, **_optional(kb.ask, as_of=as_of, packs=packs, history=history))
                return answer.to_json() if hasattr(answer, "to_json") else answer
            return record(call)

    return server


@cli.command()
@data_dir_option
def mcp(data_dir: Path | None) -> None:
    """Serve the knowledge base to agents over MCP (stdio): tools search, ask, entity, documents.

    \b
    Add to an MCP client's configuration, e.g.
      {"mcpServers": {"kgrag": {"command": "kg", "args": ["mcp", "--data-dir", "/path/to/.kgrag"]}}}
    Needs the MCP SDK: pip install 'kgrag[mcp]'.
    """
    _sdk()  # fail with the install hint before loading the knowledge base
    with open_kb(data_dir) as kb:
        build_server(kb).run("stdio")
