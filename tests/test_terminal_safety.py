"""Text from someone else never drives the terminal kgrag prints it in: a file's name, a knowledge pack's card and a
model's reply are printed by the real CLI on a pseudo-terminal, which shows what a user's terminal would receive.

A document's own text is cleaned at ingest (tests/test_ingest.py); these are the other ways in: a file called
`a\\x1b]0;…\\x07b.md` in a shared folder or a cloned pack, a PACK.md whose title holds an escape (YAML writes it `\\e`),
a model that answers with one (a prompt injection, or a model's mistake)."""

from __future__ import annotations

import os
import re

import pytest
from conftest import build_kb, make_settings
from fake_llm import cite_passage_with
from fastapi.testclient import TestClient
from terminal import kg_on_a_terminal

from kg.files import visible

pytestmark = pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal (POSIX)")

# What a hostile name or reply carries: set the window's title (OSC), clear the screen, hide the text that follows.
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x1b[8m"
# The escapes click itself writes, for bold and colour (SGR: ESC [ digits m) and to hide the cursor under a progress
# bar (ESC [ ? 25 l / h), are the only ones a terminal may receive.
_NOT_STYLE = re.compile(r"\x1b(?!\[[0-9;]*m|\[\?25[lh])|[\x07\x9b]")


def only_styles(shown: str) -> bool:
    return _NOT_STYLE.search(shown) is None


def test_visible_spells_out_every_control_character():
    assert visible("runbooks/redis.md") == "runbooks/redis.md"
    assert visible("a\nb\tc\x1b]0;x\x07\x9b.md") == "a\\nb\\tc\\x1b]0;x\\x07\\x9b.md"


def test_a_file_or_folder_named_with_escapes_is_left_out_and_named_spelled_out(tmp_path):
    docs = tmp_path / "docs"
    (docs / "two\nlines").mkdir(parents=True)
    (docs / "ok.md").write_text("# Redis 端口\n\nredis-cluster 的端口是 6379。\n", encoding="utf-8")
    (docs / f"a{HOSTILE}b.md").write_text("# Hidden\n\nnot to be read\n", encoding="utf-8")
    (docs / "two\nlines" / "in.md").write_text("# In\n\nnot to be read either\n", encoding="utf-8")
    code, shown = kg_on_a_terminal(["ingest", "docs", "--data-dir", "kb"], tmp_path)
    assert code == 0, shown
    assert only_styles(shown), repr(shown)
    assert "1 new" in shown and "2 file(s) skipped" in shown
    assert "a\\x1b]0;pwned\\x07\\x1b[2J\\x1b[8mb.md: the name holds a line break, tab or control character" in shown
    assert "two\\nlines: folder: the name holds" in shown
    code, listed = kg_on_a_terminal(["documents", "--data-dir", "kb"], tmp_path)
    assert code == 0 and "ok.md" in listed and "Hidden" not in listed and "in.md" not in listed
    # named on the command line: an error that says which file, spelled out, and nothing ingested
    code, shown = kg_on_a_terminal(["ingest", f"docs/a{HOSTILE}b.md", "--data-dir", "kb"], tmp_path)
    assert code == 2 and only_styles(shown), repr(shown)
    assert "a\\x1b]0;pwned" in shown and "rename it" in shown


def test_a_pack_card_cannot_drive_the_terminal(tmp_path):
    pack = tmp_path / "vendor"
    pack.mkdir()
    (pack / "PACK.md").write_text(
        '---\nid: vendor\ntitle: "\\e]0;pwned\\a Vendor \\e[2Jmanual"\n---\n# ignored\n\n## Covers\n\n'
        f"- gateway{HOSTILE} timeouts\n", encoding="utf-8")
    (pack / "gw.md").write_text("# Gateway\n\nThe gateway times out after 30 s.\n", encoding="utf-8")
    code, shown = kg_on_a_terminal(["pack", "add", "vendor", str(pack), "--data-dir", "kb"], tmp_path)
    assert code == 0 and only_styles(shown), repr(shown)
    code, shown = kg_on_a_terminal(["pack", "list", "--data-dir", "kb"], tmp_path)
    assert code == 0 and only_styles(shown), repr(shown)
    assert "Vendor manual" in shown and "gateway timeouts" in shown


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    root = tmp_path_factory.mktemp("terminal")
    build_kb(root).close()
    return root


def test_a_models_reply_cannot_drive_the_terminal(shared, fake):
    fake.replies["answer"] = cite_passage_with("心跳间隔为 30 秒", f"LORA-02 的{HOSTILE}心跳间隔为 30 秒[{{n}}]。")
    env = {"KG_LLM_MODEL": "openai/test-model", "KG_LLM_BASE_URL": fake.base_url}
    code, shown = kg_on_a_terminal(["ask", "LORA-02 的心跳间隔是多少？", "--data-dir", "kb"], shared, env)
    assert code == 0 and only_styles(shown), repr(shown)
    assert "openai/test-model wrote the answer" in shown and "心跳间隔为 30 秒" in shown
    assert any(b.get("stream") for b in fake.requests)  # the CLI streams: the pieces were cleaned as they came


def test_a_models_whole_reply_is_cleaned_too(shared, fake):
    from retrieval.pipeline import KnowledgeBase

    fake.replies["answer"] = cite_passage_with("心跳间隔为 30 秒", f"LORA-02 的{HOSTILE}心跳间隔为 30 秒[{{n}}]。")
    with KnowledgeBase(make_settings(shared / "kb", llm_model="openai/test-model", llm_base_url=fake.base_url)) as kb:
        answer = kb.ask("LORA-02 的心跳间隔是多少？")
    assert answer.path == "llm" and "心跳间隔为 30 秒" in answer.answer
    assert only_styles(answer.answer) and "\x1b" not in answer.answer


@pytest.mark.parametrize("field", ["source", "doc_id", "title", "filename"])
def test_the_api_refuses_a_name_with_a_control_character(shared, field):
    from api.app import create_app

    body = {"text": "# Note\n\nsome text\n", field: f"notes/a{HOSTILE}b.md"}
    with TestClient(create_app(make_settings(shared / "kb"))) as client:
        response = client.post("/documents", json=body)
    assert response.status_code == 422, response.text
    (problem,) = response.json()["error"]["problems"]
    assert problem.startswith(f"body.{field}:") and "holds a control character (\\x1b) at 7" in problem


def test_an_ontologys_label_with_an_escape_is_left_out_of_the_import(tmp_path):
    from rdflib import RDFS, Graph, URIRef

    (tmp_path / "onto.ttl").write_text(
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n@prefix owl: <http://www.w3.org/2002/07/owl#> .\n"
        "@prefix ex: <http://example.org/> .\n"
        'ex:gw1 a owl:NamedIndividual ; rdfs:label "gw\\u001b]0;pwned\\u0007one" , "gateway one"@en ;\n'
        '    rdfs:comment "two lines\\nof text" .\n', encoding="utf-8")
    code, shown = kg_on_a_terminal(["import", "onto.ttl", "--data-dir", "kb"], tmp_path)
    assert code == 0 and only_styles(shown), repr(shown)
    assert "1 left out" in shown
    assert 'onto.ttl: <http://example.org/gw1> rdfs:label "gw\\x1b]0;pwned\\x07one" holds a control character' in shown
    graph = Graph().parse(tmp_path / "kb" / "graph.ttl")
    labels = {str(o) for o in graph.objects(URIRef("http://example.org/gw1"), RDFS.label)}
    assert labels == {"gateway one"}  # the clean label, and the comment's line break, are kept
    assert len(list(graph.objects(URIRef("http://example.org/gw1"), RDFS.comment))) == 1
