"""What the ontology's semantics buy at query time: the same knowledge base evaluated with its
OWL axioms and again with them removed from graph.ttl (no re-indexing: kgrag re-reads the file).

    python bench/ontology_ablation.py                         # the demo knowledge base
    python bench/ontology_ablation.py --dataset ../shared/bench/2wiki_dev

Removed: owl:inverseOf, rdfs:subPropertyOf, owl:TransitiveProperty / owl:SymmetricProperty typing,
kg:expansionWeight, and the cue words (skos:altLabel) of properties. Every edge stays walkable,
backwards as `^relation` at half weight, exactly what a plain graph without an ontology gives.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from rdflib import OWL, RDF, RDFS, SKOS  # noqa: E402

from kg.settings import Settings  # noqa: E402
from ontology import KG, load_rdf  # noqa: E402
from retrieval.eval.evaluate import evaluate_kb  # noqa: E402
from retrieval.eval.metrics import format_table  # noqa: E402
from retrieval.pipeline import KnowledgeBase  # noqa: E402
from retrieval.types import SourceDocument  # noqa: E402


def strip_semantics(graph_path: Path) -> int:
    g = load_rdf(graph_path)
    before = len(g)
    properties = set(g.subjects(RDF.type, OWL.ObjectProperty))
    for p in (OWL.inverseOf, RDFS.subPropertyOf, KG.expansionWeight):
        g.remove((None, p, None))
    for t in (OWL.TransitiveProperty, OWL.SymmetricProperty):
        g.remove((None, RDF.type, t))
    for prop in properties:
        g.remove((prop, SKOS.altLabel, None))
    g.serialize(destination=str(graph_path), format="turtle")
    return before - len(g)


def build_dataset_kb(root: Path, data_dir: Path) -> tuple[KnowledgeBase, Path]:
    """A benchmark folder as a knowledge base, the way `kg eval` builds it; questions with gold as doc ids."""
    from retrieval.eval.datasets import load_dataset

    dataset = load_dataset(root, drop_empty_gold=True)
    kb = KnowledgeBase(Settings(data_dir=data_dir), create=True)
    kb.add_entities(p.title for p in dataset.passages if p.title)
    if dataset.relations_path:
        kb.import_file(dataset.relations_path, skip_invalid=True)
    kb.ingest_documents(
        SourceDocument(source=f"{dataset.name}:{p.id}", text=p.text or p.title, format="txt", title=p.title or None)
        for p in dataset.passages
    )
    ids = {d.source.split(":", 1)[1]: d.doc_id for d in kb.store.documents()}
    questions = data_dir.parent / "questions.jsonl"
    with questions.open("w", encoding="utf-8") as fh:
        for q in dataset.questions:
            fh.write(json.dumps({"id": q.id, "question": q.question, "type": q.type,
                                 "gold_ids": [ids[g] for g in q.gold_ids]}, ensure_ascii=False) + "\n")
    return kb, questions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=None, help="a benchmark folder (default: the demo)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kgrag-ablation-") as tmp:
        data_dir = Path(tmp) / "kb"
        if args.dataset is None:
            import latency

            kb, _ = latency.build_demo(data_dir)
            questions = latency.DEMO_DIR / "questions.jsonl"
        else:
            kb, questions = build_dataset_kb(args.dataset, data_dir)
        ks = (2, 5)
        with_semantics = evaluate_kb(kb, questions, ks=ks)
        removed = strip_semantics(data_dir / "graph.ttl")
        without = evaluate_kb(kb, questions, ks=ks)  # the next query re-reads graph.ttl
        kb.close()
    print(f"removed {removed} ontology triples")
    print(format_table({"with OWL semantics": with_semantics, "without": without}, ks, by_type=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
