"""The typed objects of the answer stage: Hit -> Citation, checked text -> AnswerSentence, each search -> Round, all -> Answer (the answer record)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from retrieval.types import place

__all__ = ["Answer", "AnswerSentence", "Citation", "Round", "detect_language", "fenced", "NOT_FOUND"]

# The plain "nothing found", in the question's language.
NOT_FOUND = {"zh": "知识库中暂无相关信息", "en": "No relevant information in the knowledge base"}
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_MARKERS = re.compile(r"^(?:\s*\[(?:\d{1,3}|R\d{1,2})\])+")  # the citation marks right after a sentence


def detect_language(text: str) -> str:
    """zh when the question has Chinese characters (a Chinese question often names English identifiers), else en."""
    return "zh" if _CJK.search(text or "") else "en"


@dataclass(frozen=True)
class Citation:
    """Passage [n] of the answer: where it comes from and its text."""

    n: int
    chunk_id: str
    doc_id: str
    title: str
    source: str
    section: str
    lines: tuple[int, int]
    text: str
    page: int | None = None
    version: dict | None = None
    placed: str = ""  # why it is here when the ranking did not put it here ("lead of the page about emqx-broker")

    @classmethod
    def from_hit(cls, n: int, hit) -> Citation:
        return cls(n=n, chunk_id=hit.chunk_id, doc_id=hit.doc_id, title=hit.title, source=hit.source,
                   section=hit.section, lines=tuple(hit.lines), text=hit.text,
                   page=getattr(hit, "page", None), version=getattr(hit, "version", None),
                   placed=(getattr(hit, "why", None) or {}).get("placed", ""))

    def where(self) -> str:
        """title § section (source:lines, or its page, slide or row: `types.place`), for plain-text renderings."""
        section = f" § {self.section}" if self.section else ""
        return f"{self.title}{section} ({self.source}{place(self.source, self.lines, self.page)})" if self.source \
            else f"{self.title}{section}"

    def to_json(self) -> dict:
        return {"n": self.n, "chunk_id": self.chunk_id, "doc_id": self.doc_id, "title": self.title,
                "source": self.source, "section": self.section, "lines": list(self.lines), "page": self.page,
                "version": self.version, "text": self.text} | ({"placed": self.placed} if self.placed else {})


def fenced(code: str, language: str = "") -> str:
    """A code block as an answer writes it: fenced on lines of its own (the check reads it whole; its citation
    numbers go after the closing fence)."""
    return f"```{language}\n{code}\n```"


@dataclass
class AnswerSentence:
    text: str  # without its citation markers
    citations: list[int]
    support: float  # best share of the sentence found in one of the passages it cites (0..1)
    flagged: bool  # weakly supported, cites nothing, or marked unknown
    removed: list[int] = field(default_factory=list)  # cited numbers that do not exist (dropped)
    unknown: bool = False  # the model marked it [未知] / [unknown]
    facts: list[str] = field(default_factory=list)  # graph facts cited: "R1", ...
    attributed: bool = False  # the check chose a citation: the model gave none, or none holding a value it states
    code: str | None = None  # a fenced code block (its lines in `text`): its language, "" when none is given

    def to_json(self) -> dict:
        out = {"text": self.text, "citations": self.citations, "support": round(self.support, 3), "flagged": self.flagged}
        if self.code is not None:
            out["code"] = self.code
        if self.facts:
            out["facts"] = self.facts
        if self.attributed:
            out["attributed"] = True
        return out

    def written(self) -> str:
        """How the sentence's words stand in the answer text: a code block with its fences."""
        return self.text if self.code is None else fenced(self.text, self.code)


@dataclass
class Round:
    round: int
    query: str
    entities: list[str]
    hits_added: int
    verdict: dict
    ms: float

    def to_json(self) -> dict:
        return {"round": self.round, "query": self.query, "entities": self.entities, "hits_added": self.hits_added,
                "verdict": self.verdict, "ms": round(self.ms, 1)}


@dataclass
class Answer:
    question: str
    answer: str
    found: bool
    language: str
    path: str  # "llm" or "rules"
    path_reason: str
    sentences: list[AnswerSentence] = field(default_factory=list)
    citations: list[Citation] = field(default_factory=list)
    rounds: list[Round] = field(default_factory=list)
    packs_used: list[dict] = field(default_factory=list)
    timings_ms: dict = field(default_factory=dict)
    rewrites: list[str] = field(default_factory=list)
    llm_usage: list[dict] = field(default_factory=list)  # one entry a model call: task, prompt/completion tokens, ms
    facts: list = field(default_factory=list)  # `retrieval.answer.facts.Fact`: the graph's evidence [R1]..

    @property
    def removed_citations(self) -> list[int]:
        return [n for s in self.sentences for n in s.removed]

    def to_json(self) -> dict:
        return {
            "question": self.question, "answer": self.answer, "found": self.found, "language": self.language,
            "path": self.path, "path_reason": self.path_reason,
            "sentences": [s.to_json() for s in self.sentences],
            "citations": [c.to_json() for c in self.citations],
            "facts": [f.to_json() for f in self.facts],
            "rounds": [r.to_json() for r in self.rounds], "rewrites": self.rewrites,
            "packs_used": self.packs_used,
            "timings_ms": {k: round(v, 1) for k, v in self.timings_ms.items()},
            "llm_calls": self.llm_usage,
        }

    def framing(self) -> tuple[str, str]:
        """The answer's words before its first sentence and after its last, which are no sentences of it: "nothing
        found; the closest passages say …", "(The sources are in Chinese …)", the length-limit note. A front end that
        prints `sentences` (to flag them) prints these around them, or it shows the closest passages as the answer."""
        if not self.sentences:
            return "", ""
        head, tail = self.sentences[0].written(), self.sentences[-1].written()
        first = self.answer.find(head)
        last = self.answer.rfind(tail)
        if first < 0 or last < 0:
            return "", ""
        rest = _MARKERS.sub("", self.answer[last + len(tail):])
        return self.answer[:first].strip(), rest.strip()

    def sources_text(self) -> str:
        """The cited passages as numbered lines, for plain-text front ends."""
        used = {n for s in self.sentences for n in s.citations}
        cited = {k for s in self.sentences for k in s.facts}
        lines = [f"[{f.key}] {f.source}" + (f" (stated in [{'], ['.join(map(str, f.passages))}])" if f.passages else "")
                 for f in self.facts if f.key in cited]
        return "\n".join(lines + [f"[{c.n}] {c.where()}" + (f" — {c.placed}" if c.placed else "")
                                  for c in self.citations if c.n in used])
