"""A benchmark folder (or a knowledge base + its question set) -> retrieval metrics, overall and per question type.

`evaluate_dataset` builds a fresh knowledge base in a temporary folder through the same calls as
`kg import` and `kg ingest`: passages that carry `doc` are put back into their documents (with
sections, `retrieval.eval.grouping`), the others are one document each titled with an entity label;
`relations.csv` and `aliases.csv` are imported. Then it runs every question through `KnowledgeBase.query`, exactly what `kg query` runs. Only a question's id,
text, type and gold ids are read (see `retrieval.eval.datasets`), so answers never reach the system.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from kg.errors import InputError
from kg.settings import Settings
from retrieval.eval.datasets import Question, load_dataset, read_questions
from retrieval.eval.grouping import group_passages
from retrieval.eval.metrics import QuestionResult, format_table, summarize
from retrieval.pipeline import KnowledgeBase
from retrieval.types import Hit

__all__ = ["evaluate_dataset", "evaluate_kb", "fill_knowledge_base", "format_self_check", "rank_documents", "rank_passages"]

Progress = Callable[[int], None]


def rank_documents(kb: KnowledgeBase, question: str, mode: str, depth: int) -> list[str]:
    """Document ids best-first; a document's rank is that of its best chunk."""
    return rank_passages(kb, question, mode, depth, lambda hit: [hit.doc_id])


def rank_passages(kb: KnowledgeBase, question: str, mode: str, depth: int,
                  passages_of: Callable[[Hit], list[str]]) -> list[str]:
    """Passage (or document) ids best-first; a passage's rank is that of its best chunk."""
    result = kb.query(question, k=depth * 3, mode=mode)
    ranked: dict[str, None] = {}
    for hit in result.hits:
        for pid in passages_of(hit):
            ranked.setdefault(pid, None)
    return list(ranked)[:depth]


def _run(kb: KnowledgeBase, questions: Sequence[Question], passages_of: Callable[[Hit], list[str]],
         mode: str, ks: Sequence[int], progress: Progress | None) -> list[QuestionResult]:
    depth = max(ks)
    results = []
    for q in questions:
        started = time.perf_counter()
        ranked = rank_passages(kb, q.question, mode, depth, passages_of)
        latency = (time.perf_counter() - started) * 1e3
        results.append(QuestionResult(q.id, q.type, tuple(q.gold_ids), tuple(ranked), latency))
        if progress:
            progress(1)
    return results


def fill_knowledge_base(kb: KnowledgeBase, dataset):
    """A benchmark set into an empty knowledge base, as a user would: its ontology, entities, relation table and
    aliases imported, its passages ingested as documents. Returns (the grouped corpus, relation rows rejected)."""
    if dataset.ontology_path:
        kb.import_file(dataset.ontology_path)
    # A Wikipedia-style passage is a document titled with the entity it is about; sections of a
    # user's document (passages with `doc`) are not entities of their own.
    kb.add_entities(p.title for p in dataset.passages if p.title and not p.doc)
    rejected = 0
    if dataset.relations_path:
        # Relation tables are exported by hand or by scripts and are imperfect: import the
        # good rows, as a user would with --skip-invalid, and report how many were not.
        report = kb.import_file(dataset.relations_path, skip_invalid=True)
        rejected = len(report["report"]["rejected"])
    if dataset.aliases_path:
        kb.import_file(dataset.aliases_path, skip_invalid=True)
    corpus = group_passages(dataset.name, dataset.passages)
    kb.ingest_documents(corpus.sources)
    return corpus, rejected


def evaluate_dataset(
    root: Path,
    *,
    mode: str = "full",
    ks: Sequence[int] = (1, 2, 5, 10),
    limit: int | None = None,
    settings: Settings | None = None,
    progress: Progress | None = None,
    on_ingested: Callable[[float], None] | None = None,
    embedder=None,
) -> dict:
    dataset = load_dataset(root, limit, drop_empty_gold=True)
    with tempfile.TemporaryDirectory(prefix="kgrag-eval-") as tmp:
        base = settings or Settings()
        kb_settings = base.model_copy(update={"data_dir": Path(tmp) / "kb"})
        started = time.perf_counter()
        with KnowledgeBase(kb_settings, create=True) as kb:
            corpus, rejected = fill_knowledge_base(kb, dataset)
            ingest_seconds = time.perf_counter() - started
            embedded = None
            if embedder is not None:  # the meaning channel: every chunk and label embedded before the questions
                kb.vectors.use(embedder)
                embedded = kb.vectors.embed_missing().to_json()
            if on_ingested:
                on_ingested(ingest_seconds)
            sources = {d.doc_id: d.source for d in kb.store.documents()}

            def passages_of(hit: Hit) -> list[str]:
                return corpus.passages_of(sources.get(hit.doc_id, ""), *hit.lines)

            results = _run(kb, dataset.questions, passages_of, mode, ks, progress)
            stats = kb.stats()
    summary = summarize(results, ks)
    return {
        "dataset": dataset.name,
        "mode": mode,
        **summary,
        "ingest_seconds": round(ingest_seconds, 2),
        **({"embedding": embedded} if embedded else {}),
        "kb": {"documents": stats["documents"], "entities": stats["entities"], "edges": stats["edges"],
               "relation_rows_rejected": rejected},
    }


def evaluate_kb(
    kb: KnowledgeBase,
    questions_path: Path,
    *,
    mode: str = "full",
    ks: Sequence[int] = (1, 2, 5, 10),
    progress: Progress | None = None,
) -> dict:
    """Self-check on an existing knowledge base; gold ids are document ids or (suffixes of) source paths."""
    questions = read_questions(questions_path)
    documents = kb.store.documents()
    if not documents:
        raise InputError(f"the knowledge base in {kb.root} has no documents: ingest some first")
    gold_names = {g for q in questions for g in q.gold_ids}

    lookup: dict[str, str] = {}
    for doc in documents:
        if doc.doc_id in gold_names:
            lookup[doc.doc_id] = doc.doc_id
            continue
        source = doc.source.replace("\\", "/")
        for gold in gold_names:
            if source == gold or source.endswith("/" + gold.lstrip("./")):
                lookup[doc.doc_id] = gold
                break
        else:
            lookup[doc.doc_id] = doc.doc_id
    missing = sorted(g for g in gold_names if g not in lookup.values())
    if missing:
        raise InputError(
            f"{Path(questions_path).name}: gold ids not in the knowledge base: {', '.join(missing[:5])}"
            + (" ..." if len(missing) > 5 else "")
            + " (give document ids or source paths of ingested documents)"
        )
    results = _run(kb, questions, lambda hit: [lookup.get(hit.doc_id, hit.doc_id)], mode, ks, progress)
    return {"dataset": Path(questions_path).name, "mode": mode, **summarize(results, ks)}


def format_self_check(summaries: dict[str, dict] | dict, ks: Sequence[int] = (1, 5)) -> str:
    """A per-type table of one or more summaries (keyed by mode)."""
    if "metrics" in summaries:
        summaries = {summaries.get("mode", "full"): summaries}
    return format_table(summaries, ks, by_type=True)
