"""Questions with reference answers (and unanswerable ones) + a knowledge base in -> answer metrics out: answer kept in the cited sentences vs in the top-5 passages, citation checks, no-hit fallbacks, latency.

"The answer is in a text" (`answer_in`): the reference's key spans are its numbers and
identifiers (127.0.0.1:3002, 128MB, bind_addr, `round_robin`), quoted strings, and ASCII names;
after NFKC and lower-casing, a text holds the answer when it contains at least half of them
(rounded up). A reference without such spans is compared by its words: a short English answer
("Cork", "Sleep, My Love") must appear whole (case, punctuation and articles ignored); a longer
or Chinese one must have at least half of its weighted key words (`retrieval.answer.terms`).
yes/no references say nothing about passages and are left out of these two shares.

The reference answers are read here, for scoring only: they never reach the system under test
(`retrieval.eval.datasets` drops them for retrieval; this module passes only the question on).
"""

from __future__ import annotations

import json
import math
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kg.errors import InputError
from retrieval.answer.llm import LlmClient
from retrieval.answer.terms import coverage, key_terms, support, units
from retrieval.index.analysis import normalize_text

__all__ = ["AnswerQuestion", "answer_in", "evaluate_answers", "evaluate_answers_dataset", "format_answers_table",
           "read_answer_questions", "reference_spans"]

Progress = Callable[[int], None]
TOP_PASSAGES = 5
_SPAN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-/:]*[A-Za-z0-9]|\d")
_QUOTED = re.compile(r"[`\"“「『]([^`\"”」』\n]{1,60})[`\"”」』]")
_ARTICLES = re.compile(r"\b(a|an|the)\b")


@dataclass(frozen=True)
class AnswerQuestion:
    id: str
    question: str
    type: str
    answer: str | None  # the reference answer; None for an unanswerable question
    unanswerable: bool = False


def read_answer_questions(path: Path | str) -> list[AnswerQuestion]:
    """questions.jsonl lines with `answer` (or `"type": "unanswerable"`, which expects the no-hit fallback)."""
    path = Path(path)
    out = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise InputError(f"{path.name}:{lineno}: not a JSON object ({exc.msg}); write one question a line") from None
        if not isinstance(obj, dict) or not str(obj.get("question", "")).strip():
            raise InputError(f"{path.name}:{lineno}: needs a \"question\" string")
        unanswerable = obj.get("type") == "unanswerable"
        answer = obj.get("answer")
        if isinstance(answer, list):
            answer = answer[0] if answer else None
        out.append(AnswerQuestion(str(obj.get("id", lineno)), obj["question"], str(obj.get("type", "all")),
                                  None if unanswerable or answer in (None, "") else str(answer), unanswerable))
    return out


def _norm(text: str) -> str:
    return normalize_text(text).lower()


def reference_spans(reference: str) -> list[str]:
    """Numbers, identifiers, quoted strings and ASCII names of a reference answer, lower-cased."""
    norm = normalize_text(reference)
    spans = [m.strip().lower() for m in _QUOTED.findall(norm)]
    for token in _SPAN.findall(norm):
        low = token.lower()
        if any(c.isdigit() for c in token) or any(c in "_.-/:" for c in token) or not token.isalpha() or re.search(r"[\u3400-\u9fff]", norm):
            spans.append(low)
    return [s for s in dict.fromkeys(spans) if s]


def _holds(text: str, span: str) -> bool:
    """`span` in `text`, not inside a longer number or name (40 is not in 400, db-01 not in db-011)."""
    return re.search(rf"(?<![0-9a-z]){re.escape(span)}(?![0-9a-z])", text) is not None


def answer_in(reference: str, text: str) -> bool | None:
    """Whether `text` holds the reference answer (see the module's docstring); None when it cannot say (yes/no)."""
    ref = " ".join(normalize_text(reference).split())
    if ref.lower().strip(".!。") in ("yes", "no", "是", "否", "对", "不是"):
        return None
    lowered = _norm(text)
    spans = reference_spans(ref)
    if spans:
        need = max(1, math.ceil(len(spans) / 2))
        return sum(_holds(lowered, s) for s in spans) >= need
    if len(ref.split()) <= 6 and not re.search(r"[\u3400-\u9fff]", ref):
        clean = lambda s: " ".join(_ARTICLES.sub(" ", re.sub(r"[^\w\s]", " ", s.lower())).split())  # noqa: E731
        return bool(clean(ref)) and clean(ref) in clean(text)
    terms = key_terms(ref)
    return bool(terms) and coverage(terms, units(text))[0] >= 0.5


def _f1(prediction: str, reference: str) -> tuple[float, float]:
    """SQuAD-style exact match and token F1 (Chinese compared by characters)."""
    def tokens(s: str) -> list[str]:
        s = _ARTICLES.sub(" ", re.sub(r"[^\w\s]", " ", _norm(s)))
        return [t for w in s.split() for t in (list(w) if re.search(r"[\u3400-\u9fff]", w) else [w])]
    p, r = tokens(prediction), tokens(reference)
    if not p or not r:
        return float(p == r), float(p == r)
    common = sum(min(p.count(t), r.count(t)) for t in set(p))
    if common == 0:
        return 0.0, 0.0
    precision, recall = common / len(p), common / len(r)
    return float(" ".join(p) == " ".join(r)), 2 * precision * recall / (precision + recall)


def evaluate_answers(kb, questions: Sequence[AnswerQuestion], *, llm: LlmClient | None = None,
                     progress: Progress | None = None, name: str = "") -> dict:
    """Ask every question through `kb.ask` (exactly what `kg ask` runs) and score the answers."""
    threshold = kb.settings.citation_support
    rows = []
    for q in questions:
        started = time.perf_counter()
        answer = kb.ask(q.question, llm=llm)
        ms = (time.perf_counter() - started) * 1e3
        # A sentence citing a graph fact ([R1]) is cited as much as one citing a passage.
        cited = "\n".join(s.text for s in answer.sentences if s.citations or s.facts)
        by_n = {c.n: units(f"{c.title}\n{c.section}\n{c.text}") for c in answer.citations}
        n_citations = sum(len(s.citations) for s in answer.sentences)
        unsupported = sum(1 for s in answer.sentences for n in s.citations if support(s.text, by_n[n]) < threshold)
        dangling = sum(1 for s in answer.sentences for n in s.citations if n not in by_n)
        row = {"id": q.id, "type": q.type, "unanswerable": q.unanswerable, "found": answer.found, "path": answer.path,
               "ms": ms, "citations": n_citations, "unsupported": unsupported, "dangling": dangling,
               "removed": len(answer.removed_citations), "flagged": sum(s.flagged for s in answer.sentences),
               "sentences": len(answer.sentences), "rounds": len(answer.rounds),
               "chars": len(answer.answer) if answer.found else None}
        if q.answer is not None:
            # In one passage (not pieced together from five), or in the graph facts the answer was given as evidence
            # beside them: what an answer citing that passage (or those facts) could keep.
            evidence = [c.text for c in answer.citations[:TOP_PASSAGES]] + ["\n".join(f.text() for f in answer.facts)]
            held = any(answer_in(q.answer, text) for text in evidence if text)
            row["in_top5"] = held if answer.found else False
            # The no-hit fallback still lists the closest passages: one of them held the answer all the same.
            row["nofound_held"] = held and not answer.found
            row["in_cited"] = answer_in(q.answer, cited) if answer.found else False
            if answer.path == "llm":
                row["em"], row["f1"] = _f1(answer.answer, q.answer)
        rows.append(row)
        if progress:
            progress(1)
    return {"dataset": name, **_summarize(rows), "rows": rows}


def _share(num: int, den: int) -> float | None:
    return round(100 * num / den, 1) if den else None


def _summarize(rows: list[dict]) -> dict:
    answerable = [r for r in rows if not r["unanswerable"]]
    measurable = [r for r in answerable if r.get("in_top5") is not None]
    in_top5 = [r for r in measurable if r["in_top5"]]
    kept = [r for r in in_top5 if r["in_cited"]]
    unanswerable = [r for r in rows if r["unanswerable"]]
    ms = sorted(r["ms"] for r in rows)
    chars = sorted(r["chars"] for r in answerable if r.get("chars") is not None)
    llm_rows = [r for r in answerable if "f1" in r]
    return {
        "questions": len(rows),
        "answerable": len(answerable),
        "measurable": len(measurable),
        "answer_in_top5_pct": _share(len(in_top5), len(measurable)),
        "answer_in_cited_pct": _share(sum(bool(r["in_cited"]) for r in measurable), len(measurable)),
        "kept_of_top5_pct": _share(len(kept), len(in_top5)),
        "citations": sum(r["citations"] for r in rows),
        "citations_to_missing_numbers": sum(r["dangling"] for r in rows),
        "invented_numbers_removed": sum(r["removed"] for r in rows),
        "citations_unsupported": sum(r["unsupported"] for r in rows),
        "sentences_flagged": sum(r["flagged"] for r in rows),
        "nofound_on_answerable": sum(not r["found"] for r in answerable),
        "nofound_but_top5_held": sum(bool(r.get("nofound_held")) for r in answerable),
        "unanswerable": len(unanswerable),
        "nofound_on_unanswerable": sum(not r["found"] for r in unanswerable),
        "max_rounds": max((r["rounds"] for r in rows), default=0),
        "paths": {p: sum(r["path"] == p for r in rows) for p in ("llm", "rules")},
        # The answer's length in characters (citation marks included), answered questions only: an answer, not the passages.
        "answer_chars": {"p50": round(statistics.median(chars)) if chars else None,
                         "p95": chars[min(len(chars) - 1, int(0.95 * len(chars)))] if chars else None},
        "latency_ms": {"p50": round(statistics.median(ms), 1) if ms else None,
                       "p95": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 1) if ms else None},
        **({"exact_match_pct": _share(sum(r["em"] for r in llm_rows), len(llm_rows)),
            "f1_pct": round(100 * statistics.mean(r["f1"] for r in llm_rows), 1)} if llm_rows else {}),
    }


def evaluate_answers_dataset(root: Path, *, settings=None, limit: int | None = None, llm: LlmClient | None = None,
                             extra_questions: Sequence[AnswerQuestion] = (), progress: Progress | None = None,
                             embedder=None) -> dict:
    """Build a fresh knowledge base from a benchmark folder (as `kg eval` does) and evaluate its questions' answers
    (with `embedder`, every chunk is embedded first, as `kg embed` does, so retrieval has its meaning channel)."""
    from kg.settings import Settings
    from retrieval.eval.datasets import QUESTIONS_FILE, load_dataset
    from retrieval.eval.evaluate import fill_knowledge_base
    from retrieval.pipeline import KnowledgeBase

    dataset = load_dataset(root, limit, drop_empty_gold=True)  # as `kg eval` reads it: answers need no gold ids
    questions = read_answer_questions(Path(root) / QUESTIONS_FILE)
    if limit is not None:
        questions = questions[:limit]
    questions = list(questions) + list(extra_questions)
    with tempfile.TemporaryDirectory(prefix="kgrag-answers-") as tmp:
        base = settings or Settings()
        started = time.perf_counter()
        with KnowledgeBase(base.model_copy(update={"data_dir": Path(tmp) / "kb"}), create=True) as kb:
            fill_knowledge_base(kb, dataset)  # as `kg eval` builds it: aliases too, a user's passages as one document
            if embedder is not None:
                kb.vectors.use(embedder)
                kb.vectors.embed_missing()
            ingest = time.perf_counter() - started
            summary = evaluate_answers(kb, questions, llm=llm, progress=progress, name=dataset.name)
    summary["ingest_seconds"] = round(ingest, 1)
    return summary


_COLUMNS = [("answer_in_top5_pct", "in top-5 %"), ("answer_in_cited_pct", "in cited %"), ("kept_of_top5_pct", "kept %"),
            ("citations", "citations"), ("citations_to_missing_numbers", "to missing n"),
            ("citations_unsupported", "unsupported"), ("nofound_on_answerable", "no-hit (answerable)"),
            ("nofound_but_top5_held", "no-hit, top-5 held it"),
            ("nofound_on_unanswerable", "no-hit (unanswerable)"), ("max_rounds", "max rounds")]


def format_answers_table(summaries: dict[str, dict]) -> str:
    head = ["set", "questions"] + [c[1] for c in _COLUMNS] + ["chars p50", "chars p95", "p50 ms", "p95 ms"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, s in summaries.items():
        cells = [name, str(s["questions"])]
        for key, _ in _COLUMNS:
            value = s.get(key)
            if key == "nofound_on_unanswerable":
                value = f"{value}/{s['unanswerable']}" if s["unanswerable"] else "-"
            cells.append("-" if value is None else str(value))
        length = s.get("answer_chars", {})
        cells += [_cell(length.get("p50")), _cell(length.get("p95")), _cell(s["latency_ms"]["p50"]), _cell(s["latency_ms"]["p95"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cell(value) -> str:
    return "-" if value is None else str(value)  # no answered question (a set asked what it cannot answer): no length
