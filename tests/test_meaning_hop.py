"""The second search in meaning (`retrieval.query_meaning.meaning_hop`, KG_DENSE_HOP): a question that two documents
answer gets the second one from the question read with its best hit, through the real query path, the CLI and the
web page's words; off, without vectors or in another mode, nothing moves.

The embedder is a stub through the `Embedder` protocol: a text's vector is its share of two topics (`repair`,
`datanode`, the second weighted 4x) plus a small hashed remainder. The question is about a repair that times out and
never says "datanode"; the repair page says the tool needs the datanode; the datanode page shares no word with the
question. So the datanode page is far from the question in words and in meaning, and near the question read with the
repair page.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kg.settings import Settings
from tests.meaning_helpers import TopicEmbedder, printed_lines

QUESTION = "the repair command times out although the metadata store is fine: what else must the repair tool connect to?"
REPAIR = ("# Repair logical tables\n\nThe repair tool connects to the metadata store and every datanode: a datanode "
          "it cannot connect to makes the repair command `meta repair` time out.\n")
FILLERS = {
    "store.md": "# Metadata store\n\nThe metadata store keeps table routes; back it up before changes.\n",
    "timeouts.md": "# Command timeouts\n\nA command times out after 30 s; the timeout of a repair command is the same.\n",
    "ports.md": "# Open ports\n\nWhat must be open on a firewall: port 4000 for the HTTP API, as the command line tool expects.\n",
    "cli.md": "# Command line\n\nEvery repair command prints what it changed; a command that times out changes nothing.\n",
    "routes.md": "# Table routes\n\nThe metadata store holds the routes; the repair command rewrites them when they are out of date.\n",
}
DATANODE = ("# Datanode settings\n\nThe datanode listens on grpc.server_addr (default 127.0.0.1:3001): set it to an "
            "address the other hosts use, or nothing outside this host gets through.\n")


TOPICS = {"repair": 1.0, "datanode": 4.0}  # the stub embedder's topic words and weights


def _kb(tmp_path: Path, docs: dict[str, str]):
    from retrieval.pipeline import KnowledgeBase

    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in docs.items():
        (folder / name).write_text(text, encoding="utf-8")
    kb = KnowledgeBase(Settings(data_dir=tmp_path / "kb"), create=True)
    kb.ingest_paths([folder])
    kb.vectors.use(TopicEmbedder(TOPICS, "topic-stub-hop-1"))
    kb.vectors.embed_missing()
    return kb


@pytest.fixture
def kb(tmp_path: Path):
    kb = _kb(tmp_path, {"repair.md": REPAIR, **FILLERS, "datanode.md": DATANODE})
    try:
        yield kb
    finally:
        kb.close()


def _names(result) -> list[str]:
    return [h.source.rsplit("/", 1)[-1] for h in result.hits]


def _with(kb, **update):
    kb.settings = kb.settings.model_copy(update=update)
    return kb


def test_the_hop_brings_the_other_document_and_says_why(kb):
    off = _with(kb, dense_hop=False).query(QUESTION, k=7)
    assert _names(off)[0] == "repair.md"
    assert "datanode.md" not in _names(off)[:5]  # neither the words nor the question's meaning reach it
    assert all("hop" not in h.why for h in off.hits)

    on = _with(kb, dense_hop=True).query(QUESTION, k=7)
    names = _names(on)
    assert names[0] == "repair.md" and names[3] == "datanode.md"  # in at the 4th place
    assert names[:3] == _names(off)[:3] and names[4:] == [n for n in _names(off) if n != "datanode.md"][3:6]
    hop = on.hits[3].why["hop"]
    assert hop["rank"] >= 1 and 0.5 < hop["similarity"] <= 1.0
    assert hop["from"] == (_names(off).index("datanode.md") + 1 if "datanode.md" in _names(off) else None)
    assert [("hop" in h.why) for h in on.hits] == [i == 3 for i in range(len(on.hits))]  # only that hit says so
    assert [h.score for h in on.hits] == sorted((h.score for h in on.hits), reverse=True)


def test_the_hop_is_off_by_default_and_only_for_full_mode_with_vectors(kb):
    assert all("hop" not in h.why for h in kb.query(QUESTION, k=7).hits)  # KG_DENSE_HOP's default: off
    _with(kb, dense_hop=True)
    assert any("hop" in h.why for h in kb.query(QUESTION, k=7).hits)
    for mode in ("bm25", "dense"):
        assert all("hop" not in h.why for h in kb.query(QUESTION, k=7, mode=mode).hits)
    kb.vectors.use(None)  # no embedder configured: words and graph as before, no second search
    assert all("hop" not in h.why for h in kb.query(QUESTION, k=7).hits)


def test_the_hop_never_brings_the_best_hits_own_document(tmp_path: Path):
    # The datanode paragraph is now a section of the repair page itself: the second search finds it first, and it
    # is the best hit's document, so nothing comes in (the reader gets that document from the best hit already).
    merged = REPAIR + "\n## Datanode settings\n\n" + DATANODE.split("\n\n", 1)[1]
    kb = _kb(tmp_path, {"repair.md": merged, **FILLERS})
    try:
        result = _with(kb, dense_hop=True).query(QUESTION, k=7)
        assert _names(result)[0] == "repair.md"
        assert all("hop" not in h.why for h in result.hits)
    finally:
        kb.close()


def test_the_hop_is_said_by_the_cli_and_the_web_page(kb):
    from api.web.render import why_in_words

    result = _with(kb, dense_hop=True).query(QUESTION, k=5)

    lines = printed_lines(result)
    fourth = next(i for i, line in enumerate(lines) if line.startswith(" 4. "))
    assert "Datanode settings" in lines[fourth]
    assert "second search in meaning, the question with hit #1: #" in lines[fourth + 2]  # its why: line
    assert sum("second search in meaning" in line for line in lines) == 1
    said = why_in_words(result.hits[3].why, "en", result.hits[3].text)
    assert any(s.startswith("near in meaning to the question read with the first hit (rank ") for s in said)
    assert any("第一条结果" in s for s in why_in_words(result.hits[3].why, "zh", result.hits[3].text))
