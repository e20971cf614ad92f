"""A graph hit is weighed by how well its own words agree with the question even when the words
alone did not rank it among the text candidates that are fused: "What nationality is the composer
of X?" reaches the composer's page through X's page, and that page says "composer" although many
other pages say it more often."""

from __future__ import annotations

from pathlib import Path

from conftest import make_settings

from retrieval.pipeline import KnowledgeBase

QUESTION = "What nationality is the composer of the song Harbour Lights Again?"
PAGES = {
    "Harbour Lights Again": "Harbour Lights Again is a 1999 single by Lowtide and Mara Vell. It reached number four "
                            "on the charts.",
    # Named first on the song's page, so without the agreement of its own words it comes first.
    "Lowtide": "Lowtide is a rock band formed in Leeds in 1988. The band toured Europe twice.",
    "Mara Vell": "Mara Vell (born 1961) is a Canadian composer and pianist.",
}
# Pages that say the question's other words far more often, so the composer's page is not among
# the first few text candidates.
FILLER = "The nationality of a composer is often asked about. Every composer of a song has a nationality; " \
         "a song composer's nationality appears in the composer's biography."


def _build(root: Path, **overrides) -> KnowledgeBase:
    docs = root / "docs"
    docs.mkdir(parents=True)
    # Twelve pages, not one page twelve times (copies would be one hit): each names its own session.
    pages = dict(PAGES) | {f"Composer notes {i}": f"{FILLER} Session {i}." for i in range(12)}
    for n, (title, text) in enumerate(pages.items()):
        (docs / f"page{n:02d}.md").write_text(f"# {title}\n\n{text}\n", encoding="utf-8")
    relations = root / "relations.csv"
    relations.write_text("source,relation,target\n"
                         "Harbour Lights Again,mentions,Lowtide\n"
                         "Harbour Lights Again,mentions,Mara Vell\n", encoding="utf-8")
    kb = KnowledgeBase(make_settings(root / "kb", bm25_candidates=5, **overrides), create=True)
    kb.add_entities(PAGES)
    kb.import_file(relations)
    kb.ingest_paths([docs])
    return kb


def _rank(kb: KnowledgeBase, title: str) -> tuple[int, dict]:
    hits = kb.query(QUESTION, k=10).hits
    titles = [h.title for h in hits]
    return titles.index(title) + 1, hits[titles.index(title)].why


def test_the_composer_page_agrees_with_the_question_beyond_the_text_candidates(tmp_path):
    kb = _build(tmp_path / "deep")
    try:
        kb.settings.bm25_candidates = 200
        text_only = [h.title for h in kb.query(QUESTION, k=20, mode="bm25").hits]
        kb.settings.bm25_candidates = 5
        assert text_only.index("Mara Vell") >= 5  # not among the 5 text candidates fused
        composer, why = _rank(kb, "Mara Vell")
        band, _ = _rank(kb, "Lowtide")
        assert composer < band
        assert "bm25" not in why  # it is there through the graph alone, not as a text candidate
        assert why["graph"]["path"].startswith("query: Harbour Lights Again")
    finally:
        kb.close()


def test_with_the_fit_read_only_from_the_fused_candidates_the_page_named_first_wins(tmp_path):
    # The same knowledge base reading only the 5 fused candidates: neither page is among them, so
    # their order is the song page's order of mention; the test above therefore checks the depth.
    kb = _build(tmp_path / "shallow", fit_candidates=0)
    try:
        assert _rank(kb, "Lowtide")[0] < _rank(kb, "Mara Vell")[0]
    finally:
        kb.close()
