"""A question and its passages in -> a `Verdict` out (enough to answer? what is missing? one follow-up query), from the model or from rules.

The model's verdict is parsed robustly (code fences, prose around the JSON, single quotes,
yes/no strings); a reply that still does not parse is `None`, and the caller falls back to the
rules judge. The rules judge, Chinese and English alike: the passages must contain every
identifier the question names (LORA-02, max_connections, P1) and most of its other key words,
weighted (see `retrieval.answer.terms`), and each entity linked in the question must appear in
a passage or have been reached through the graph.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from retrieval.answer.terms import Units, contains_name, coverage, identifiers, key_terms, units

__all__ = ["FOLLOWUP_HINT", "MISSING_HINT", "VERDICT_SCHEMA", "Evidence", "Verdict", "evidence_of", "parse_verdict",
           "rules_verdict"]

SUFFICIENT_COVERAGE = 0.75  # share of the question's weighted key words the passages must hold
FOUND_COVERAGE = 0.5  # below this (or with a named identifier absent) nothing relevant was found
NAMED_FOUND_COVERAGE = 0.25  # the same when the question's names are all in the passages
MAX_FOLLOWUP_CHARS = 200  # a follow-up query is a search string, never a document


@dataclass
class Verdict:
    sufficient: bool
    missing: list[str] = field(default_factory=list)
    followup: str = ""
    by: str = "rules"  # "llm" or "rules"
    coverage: float | None = None

    def to_json(self) -> dict:
        out = {"sufficient": self.sufficient, "missing": self.missing, "followup": self.followup, "by": self.by}
        if self.coverage is not None:
            out["coverage"] = round(self.coverage, 3)
        return out


@dataclass
class Evidence:
    """How well some passages cover a question: weighted key-word coverage and what they lack."""

    coverage: float
    missing: list[str]
    missing_names: list[str]  # names the question gives (LORA-05, MongoDB) that no passage holds
    entities_missing: list[str]
    named: bool = False  # the question names something (an identifier, a linked entity)
    unknown_names: list[str] | None = None  # of missing_names, those the whole knowledge base lacks (None: not checked)
    names: list[str] = field(default_factory=list)  # every name the question gives

    @property
    def found(self) -> bool:
        """Something relevant: at most a minority of the names the question gives are unknown to the knowledge base, and the passages
        hold enough of the question's words (less is asked when it names things: "哪些应用会受波及" is
        worded unlike the documents that answer it)."""
        unknown = self.missing_names if self.unknown_names is None else self.unknown_names
        if unknown and 2 * len(unknown) >= len(self.names):
            return False  # most of what it names is not in the knowledge base (one unknown abbreviation of four is not)
        return self.coverage >= (NAMED_FOUND_COVERAGE if self.named else FOUND_COVERAGE)

    @property
    def sufficient(self) -> bool:
        return (self.found and not self.missing_names and not self.entities_missing
                and self.coverage >= SUFFICIENT_COVERAGE)


def passage_units(hits: Sequence) -> Units:
    """All of the passages' titles, sections and text as one comparison unit."""
    return units("\n".join(f"{h.title}\n{h.section}\n{h.text}" for h in hits))


def evidence_of(question: str, hits: Sequence, entities: Sequence[dict] = ()) -> Evidence:
    terms = key_terms(question)
    names = identifiers(question)
    if not hits:
        return Evidence(0.0, [t.text for t in terms], names, [], bool(names or entities), names=names)
    text = passage_units(hits)
    cov, missing = coverage(terms, text)
    reached = any("graph" in (h.why or {}) for h in hits)
    entities_missing = [] if reached else [
        e["label"] for e in entities
        if e.get("label", "").lower() not in text.lowered and e.get("surface", "").lower() not in text.lowered
    ]
    absent = [n for n in names if not contains_name(text.lowered, n)]
    named = bool(names or entities) and not entities_missing
    return Evidence(cov, [t.text for t in missing], absent, entities_missing, named, names=names)


def rules_verdict(question: str, hits: Sequence, entities: Sequence[dict] = ()) -> Verdict:
    ev = evidence_of(question, hits, entities)
    lacking = ev.missing + [e for e in ev.entities_missing if e not in ev.missing]
    followup = " ".join(lacking + [e["label"] for e in entities if e["label"] not in lacking])
    return Verdict(ev.sufficient, lacking, "" if ev.sufficient else followup[:MAX_FOLLOWUP_CHARS], "rules", ev.coverage)


# The verdict's JSON schema, sent as `response_format` so that a server that can (llama.cpp, vLLM, OpenAI)
# constrains the reply to it: a 135M model's verdicts parse 4 of 4 times with it, 0 of 4 without.
VERDICT_SCHEMA = {
    "type": "object",
    "properties": {
        "sufficient": {"type": "boolean"},
        "missing": {"type": "array", "items": {"type": "string", "maxLength": 120}, "maxItems": 5},
        "followup_query": {"type": "string", "maxLength": MAX_FOLLOWUP_CHARS},
    },
    "required": ["sufficient", "missing", "followup_query"],
    "additionalProperties": False,
}
# What the verdict's fields are asked to hold, in the judge's prompt (`prompts.JUDGE_TASK`). A small model sometimes
# copies these words into its reply (the 1.5B model's follow-up "one short search query for what is missing; empty if
# suffici"): a copy is no query and nothing missing, and the rules' follow-up is searched instead.
MISSING_HINT = "what the passages lack; empty if nothing"
FOLLOWUP_HINT = "one short search query for what is missing; empty if sufficient"
# What a model writes to mean "nothing is missing": an empty list, not a missing item called "none".
_NOTHING = {"none", "null", "nil", "n/a", "na", "nothing", "empty", "no", "-", "—", "无", "没有", "暂无", "空", "无缺失", "不缺"}

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_YES = {"true", "yes", "y", "1", "sufficient", "enough", "是", "足够", "充分"}
_NO = {"false", "no", "n", "0", "insufficient", "not enough", "否", "不足", "不够", "不充分"}


def _first_object(text: str) -> str | None:
    """The first balanced {...} in text (braces inside strings counted naively, which model replies tolerate)."""
    start = text.find("{")
    while start != -1:
        depth = 0
        for i in range(start, len(text)):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    return text[start : i + 1]
        start = text.find("{", start + 1)
    return None


def _loads(blob: str) -> dict | None:
    for candidate in (blob, re.sub(r"'", '"', blob), re.sub(r"\bTrue\b", "true", re.sub(r"\bFalse\b", "false", re.sub(r"'", '"', blob)))):
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    return None


def _as_bool(value) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return bool(value)
    if isinstance(value, str):
        v = value.strip().lower()
        if v in _YES:
            return True
        if v in _NO:
            return False
    return None


def _as_list(value) -> list[str]:
    if isinstance(value, list):
        items = [str(v).strip() for v in value if v is not None and str(v).strip()]
    elif isinstance(value, str) and value.strip():
        items = [value.strip()[:300]]
    else:
        items = []
    return [v for v in items if v.strip(" .。").lower() not in _NOTHING and not _echoes(v)][:10]


def _plain(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _echoes(text: str) -> bool:
    """Is `text` (three words or more) a piece of the prompt's own description of the fields?"""
    plain = _plain(text)
    return len(plain.split()) >= 3 and any(plain in _plain(hint) for hint in (FOLLOWUP_HINT, MISSING_HINT))


def parse_verdict(reply: str) -> Verdict | None:
    """The model's verdict, or None when the reply holds none (the caller then asks the rules)."""
    if not isinstance(reply, str):
        return None
    fenced = _FENCE.search(reply)
    blob = _first_object(fenced.group(1) if fenced else reply)
    data = _loads(blob) if blob else None
    if data is None:
        match = re.search(r'["\']?sufficient["\']?\s*[:=]\s*["\']?(\w+)', reply, re.IGNORECASE)
        ok = _as_bool(match.group(1)) if match else None
        return None if ok is None else Verdict(ok, by="llm")
    lowered = {str(k).strip().lower(): v for k, v in data.items()}
    ok = None
    for key in ("sufficient", "enough", "is_sufficient", "answerable"):
        if key in lowered:
            ok = _as_bool(lowered[key])
            break
    if ok is None:
        return None
    followup = ""
    for key in ("followup_query", "follow_up_query", "followup", "follow_up", "query", "next_query"):
        if isinstance(lowered.get(key), str):
            followup = " ".join(lowered[key].split())[:MAX_FOLLOWUP_CHARS]
            followup = "" if _echoes(followup) else followup
            break
    return Verdict(ok, _as_list(lowered.get("missing")), "" if ok else followup, "llm")
