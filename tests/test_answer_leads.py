"""An answer's passages include the lead of the page about the entity a question names, when the search found
a later section of that page and ranked its lead below the passages (retrieval/answer/leads.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import make_settings

DATA = Path(__file__).parent / "data" / "leads"
ASPECT = "网关连接 mqtt-broker 的 keepalive 是多少？"  # keepalive is in 接入规范; the address and port in 概述


def _open(data_dir: Path):
    from retrieval.pipeline import KnowledgeBase

    return KnowledgeBase(make_settings(data_dir))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    from retrieval.pipeline import KnowledgeBase

    shutil.copytree(DATA / "docs", tmp_path / "docs")
    with KnowledgeBase(make_settings(tmp_path / "kb"), create=True) as kb:
        kb.import_file(DATA / "relations.csv")
        kb.ingest_paths([tmp_path / "docs"])
    return tmp_path


def _where(citations) -> list[tuple[str, str]]:
    return [(c.title, c.section) for c in citations]


def test_the_named_entitys_page_lead_joins_its_section_in_place_of_the_last_passage(root):
    with _open(root / "kb") as kb:
        searched = [(h.title, h.section) for h in kb.query(ASPECT, k=8).hits]
        answer = kb.ask(ASPECT, k=2, llm=None)
    # The search alone ranks the lead below the two passages the answer gets ...
    assert searched.index(("mqtt-broker", "概述")) >= 2 and ("mqtt-broker", "接入规范") in searched[:2]
    # ... and the answer gets it right after the page's section, still two passages.
    where = _where(answer.citations)
    assert len(where) == 2 and where[where.index(("mqtt-broker", "接入规范")) + 1] == ("mqtt-broker", "概述")
    assert any("mqtt.example.com:8883" in c.text for c in answer.citations)
    # The record says why it is there; the ranking did not put it there.
    [lead] = [c for c in answer.to_json()["citations"] if c["section"] == "概述"]
    assert lead["placed"] == "the first section of the page about mqtt-broker, brought after its section 接入规范"
    assert all("placed" not in c for c in answer.to_json()["citations"] if c["section"] != "概述")


def test_kg_ask_shows_why_the_lead_is_among_the_sources(root):
    from conftest import kg_in_new_process

    out = kg_in_new_process("ask", ASPECT, "-k", "2", "--offline", "--data-dir", str(root / "kb"), cwd=root)
    assert "mqtt.example.com:8883" in out  # the rules' answer quotes the lead ...
    [shown] = [line for line in out.splitlines() if "mqtt-broker § 概述" in line]  # ... and its source says why
    assert shown.startswith("[2] ") and shown.endswith(
        "— the first section of the page about mqtt-broker, brought after its section 接入规范")


def test_nothing_moves_for_one_passage_or_a_question_naming_no_entity(root):
    with _open(root / "kb") as kb:
        one = kb.ask(ASPECT, k=1, llm=None)
        top = [(h.title, h.section) for h in kb.query(ASPECT, k=1).hits]
        unnamed = "网关连接代理的 keepalive 是多少？"
        assert not kb.query(unnamed, k=2).entities
        plain = [(h.title, h.section) for h in kb.query(unnamed, k=2).hits]
        asked = kb.ask(unnamed, k=2, llm=None)
    assert _where(one.citations) == top
    assert _where(asked.citations) == plain


def test_the_lead_is_the_one_of_the_version_that_answered(root):
    page = root / "docs" / "mqtt-broker.md"
    page.write_text(page.read_text(encoding="utf-8").replace("mqtt.example.com:8883", "mqtt2.example.com:9883"),
                    encoding="utf-8")
    with _open(root / "kb") as kb:
        kb.ingest_paths([page])
        answer = kb.ask(ASPECT, k=2, llm=None)
    [lead] = [c for c in answer.citations if c.section == "概述"]
    assert "mqtt2.example.com:9883" in lead.text and "8883" not in lead.text
