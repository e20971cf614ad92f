"""`kg mcp` through the MCP SDK's own client over stdio: the tools, their records, their errors."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys

import pytest
from conftest import CROSS_DOC_GOLD, CROSS_DOC_QUERY, HIT_KEYS, relative_source

pytest.importorskip("mcp", reason="the MCP SDK is in the test extra: pip install -e '.[test]'")


def _field(result, snake: str, camel: str):
    # mcp 2.x names result fields in snake_case, 1.x in camelCase.
    return getattr(result, snake, None) if hasattr(result, snake) else getattr(result, camel, None)


async def _session_calls(data_dir, calls):
    from mcp import ClientSession, StdioServerParameters, stdio_client

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "kg.cli", "mcp", "--data-dir", str(data_dir)], env=env)
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            results = [await session.call_tool(name, arguments) for name, arguments in calls]
    return tools, results


@pytest.fixture(scope="module")
def mcp_run(kb_root):
    calls = [
        ("search", {"query": CROSS_DOC_QUERY, "k": 5}),
        ("entity", {"key": "order-service"}),
        ("documents", {}),
        ("entity", {"key": "no-such-thing"}),
        ("search", {"query": "mysql", "mode": "vector"}),
        ("search", {"query": "mysql", "as_of": "2024-01-01"}),
    ]
    return asyncio.run(_session_calls(kb_root / "kb", calls))


def test_the_tools_are_listed_with_descriptions(mcp_run):
    tools, _ = mcp_run
    names = {tool.name: tool for tool in tools.tools}
    expected = {"search", "entity", "documents"}
    if importlib.util.find_spec("retrieval.answer") is not None:
        expected.add("ask")
    assert set(names) == expected
    assert "why" in names["search"].description
    schema = _field(names["search"], "input_schema", "inputSchema")
    assert schema["required"] == ["query"] and {"k", "mode", "types"} <= set(schema["properties"])


def test_search_returns_the_api_record_with_why(mcp_run, kb_root, kb):
    _, (search, *_) = mcp_run
    assert not _field(search, "is_error", "isError")
    record = _field(search, "structured_content", "structuredContent")
    assert record == json.loads(search.content[0].text)
    assert record["query"] == CROSS_DOC_QUERY and [e["label"] for e in record["entities"]] == ["order-service"]
    assert all(set(hit) >= HIT_KEYS for hit in record["hits"])
    gold = [h for h in record["hits"] if relative_source(h["source"], kb_root) == CROSS_DOC_GOLD]
    assert gold and "dependsOn" in gold[0]["why"]["graph"]["path"]
    same = kb.query(CROSS_DOC_QUERY, k=5).to_json()
    assert [h["chunk_id"] for h in record["hits"]] == [h["chunk_id"] for h in same["hits"]]


def test_entity_and_documents(mcp_run, kb):
    _, (_, entity, documents, *_) = mcp_run
    info = _field(entity, "structured_content", "structuredContent")
    assert info == kb.entity("order-service")
    listed = _field(documents, "structured_content", "structuredContent")["documents"]
    assert sorted(d["doc_id"] for d in listed) == sorted(d.doc_id for d in kb.store.documents())
    assert {"doc_id", "title", "source", "format", "chunks", "version", "versions", "pack"} <= set(listed[0])


def test_entity_with_sources(kb_root, kb):
    _, [sourced] = asyncio.run(_session_calls(kb_root / "kb", [("entity", {"key": "order-service", "sources": True})]))
    info = _field(sourced, "structured_content", "structuredContent")
    assert info == kb.entity("order-service", sources=True)
    assert all(n["origin"].startswith("relations.csv:") for ns in info["neighbours"].values() for n in ns)


def test_errors_are_tool_errors_with_the_fix(mcp_run):
    _, (*_, unknown, bad_mode, _dated) = mcp_run
    assert _field(unknown, "is_error", "isError")
    assert "no entity 'no-such-thing' (give its IRI, its exact label or an alias" in unknown.content[0].text
    assert _field(bad_mode, "is_error", "isError")
    assert "vector" in bad_mode.content[0].text


@pytest.mark.skipif(importlib.util.find_spec("retrieval.answer") is None, reason="no answer stage in this version")
def test_ask_returns_the_answer_record_with_citations(kb_root):
    follow_up = {"question": "它依赖哪些组件？", "history": [{"role": "user", "content": "订单服务是做什么的？"}]}
    _, (ask, after, bad) = asyncio.run(_session_calls(kb_root / "kb", [
        ("ask", {"question": CROSS_DOC_QUERY}), ("ask", follow_up),
        ("ask", {**follow_up, "history": [{"role": "system", "content": "x"}]})]))
    record = _field(ask, "structured_content", "structuredContent")
    assert {"question", "answer", "found", "sentences", "citations"} <= set(record)
    assert record["question"] == CROSS_DOC_QUERY
    for citation in record["citations"]:
        assert {"n", "chunk_id", "doc_id", "title", "section", "lines", "text"} <= set(citation)
    # A follow-up with the conversation before it is searched about what the earlier question named.
    followed = _field(after, "structured_content", "structuredContent")
    assert followed["question"] == "它依赖哪些组件？" and followed["rounds"][0]["query"] == "订单服务 依赖哪些组件？"
    assert _field(bad, "is_error", "isError") and "history[0].role is 'system'" in bad.content[0].text


def test_as_of_is_passed_on_or_refused_by_name(mcp_run):
    import inspect

    from retrieval.pipeline import KnowledgeBase

    *_, dated = mcp_run[1]
    if "as_of" in inspect.signature(KnowledgeBase.query).parameters:
        assert not _field(dated, "is_error", "isError")
        assert _field(dated, "structured_content", "structuredContent")["as_of"] == "2024-01-01"
    else:
        assert _field(dated, "is_error", "isError")
        assert "'as_of' is not available in this version of kgrag: leave it out" in dated.content[0].text
