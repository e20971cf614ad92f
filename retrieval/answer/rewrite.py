"""A question in -> extra search queries out: 3-5 keyword rewrites from the model, or, without one, the expansion of a very short query.

文件传不上服务器怎么办 shares few words with a runbook titled 上传失败 413 文件大小限制; a model
knows how such documents are worded. Each rewrite is searched with the question and the rankings
are fused (`retrieval.answer.loop`). Only with KG_LLM_REWRITES: a 1.5B model's rewrites put the reference in the
passages answered from less often than the question alone (bench/RESULTS-answers.md), so they are off by default.
Without a model, the synonym table already applies inside every search; a query of under 4 characters (熔断, 504) also gets a rewrite made of its synonyms
and of the entity labels and aliases that contain it, so a bare word reaches its documents.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence

from retrieval.index.analysis import normalize_text

__all__ = ["REWRITE_SCHEMA", "SHORT_QUERY", "parse_rewrites", "parse_standalone", "rule_rewrites"]

SHORT_QUERY = 4  # characters (spaces not counted): below this a query is expanded by rule
MAX_REWRITES = 5
MAX_REWRITE_CHARS = 80
MAX_EXPANSION = 6  # labels added to a short query
MAX_STANDALONE_CHARS = 300  # a follow-up written out is a question, never a document
# A follow-up's rewrite, asked for as JSON (llama.cpp, vLLM and OpenAI enforce the schema): the standalone question
# the conversation makes of it, and the keyword queries for that question.
_STANDALONE = {"type": "string", "maxLength": MAX_STANDALONE_CHARS}
REWRITE_SCHEMA = {
    "type": "object",
    "properties": {
        "question": _STANDALONE,
        "queries": {"type": "array", "items": {"type": "string", "maxLength": MAX_REWRITE_CHARS}, "maxItems": MAX_REWRITES},
    },
    "required": ["question", "queries"],
    "additionalProperties": False,
}
# The same without the queries: with keyword rewrites off only the standalone question is searched.
STANDALONE_SCHEMA = {
    "type": "object",
    "properties": {"question": _STANDALONE},
    "required": ["question"],
    "additionalProperties": False,
}
_STANDALONE_LINE = re.compile(r"^\s*(?:standalone(?:\s+question)?|question|问题|完整问题)\s*[:：]\s*(.+)$", re.IGNORECASE)
_JSON_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_JSON_QUESTION = re.compile(r'"question"\s*:\s*"((?:[^"\\]|\\.)*)"')
_JSON_QUERIES = re.compile(r'"queries"\s*:\s*\[(.*)', re.DOTALL)
_LEAD = re.compile(r"^\s*(?:[-*•>]+|\d+[.)、:：]|query\s*\d*[:：]|查询\s*\d*[:：])\s*", re.IGNORECASE)


def parse_rewrites(reply: str, question: str) -> list[str]:
    """Up to five search strings from the model's reply (one a line, or a JSON list); bullets, numbering and quotes trimmed."""
    items: list[str] = []
    text = (reply or "").strip()
    if text.startswith("```"):
        text = text.strip("`").split("\n", 1)[-1]
    start, end = text.find("["), text.rfind("]")
    if start != -1 and end > start:
        try:
            data = json.loads(text[start : end + 1])
            if isinstance(data, list):
                items = [str(v) for v in data if isinstance(v, str | int | float)]
        except ValueError:
            items = []
    if not items:
        items = text.splitlines()
    out: list[str] = []
    asked = " ".join(question.split()).lower()
    for item in items:
        item = _LEAD.sub("", item).strip().strip("\"'“”‘’`,，").strip()
        if not item or len(item) > MAX_REWRITE_CHARS or item.lower() == asked or item.endswith(":"):
            continue
        if item.lower() not in (o.lower() for o in out):
            out.append(item)
        if len(out) == MAX_REWRITES:
            break
    return out


def parse_standalone(reply: str, question: str) -> tuple[str | None, list[str]]:
    """A follow-up's rewrite: (the standalone question, or None when the reply holds none; the keyword queries).
    JSON {"question", "queries"} as asked (prose around it ignored), else a "Question: ..." line and query lines."""
    text = (reply or "").strip()
    standalone, queries = None, ""
    start, end = text.find("{"), text.rfind("}")
    data = None
    if start != -1 and end > start:
        try:
            data = json.loads(text[start : end + 1])
        except ValueError:
            data = None
    if isinstance(data, dict):
        lowered = {str(k).strip().lower(): v for k, v in data.items()}
        found = next((lowered[k] for k in ("question", "standalone_question", "standalone") if isinstance(lowered.get(k), str)), None)
        standalone = found
        items = lowered.get("queries")
        queries = "\n".join(str(v) for v in items if isinstance(v, str | int | float)) if isinstance(items, list) else ""
    elif start != -1:
        # JSON cut short (a small model babbling until max_tokens): its complete strings, never its broken lines
        found = _JSON_QUESTION.search(text)
        standalone = _unescape(found.group(1)) if found else None
        listed = _JSON_QUERIES.search(text)
        queries = "\n".join(_unescape(q) for q in _JSON_STRING.findall(listed.group(1))) if listed else ""
    else:
        rest = []
        for line in text.splitlines():
            match = _STANDALONE_LINE.match(line)
            if match and standalone is None:
                standalone = match.group(1)
            else:
                rest.append(line)
        queries = "\n".join(rest)
    if standalone is not None:
        standalone = " ".join(standalone.split()).strip("\"'“”`")
        if not standalone or len(standalone) > MAX_STANDALONE_CHARS:
            standalone = None
    return standalone, parse_rewrites(queries, standalone or question)


def _unescape(text: str) -> str:
    try:
        return json.loads(f'"{text}"')
    except ValueError:
        return text


def rule_rewrites(question: str, synonym_groups: Sequence[Sequence[str]], surfaces: Iterable[str]) -> list[str]:
    """For a query under four characters: one rewrite with its synonyms and the labels that contain it."""
    text = normalize_text(question).strip().strip("?？!！。.")
    if len("".join(text.split())) >= SHORT_QUERY or not text:
        return []
    key = text.lower()
    words: list[str] = []
    for group in synonym_groups:
        if any(key == w.lower() for w in group):
            words += [w for w in group if w.lower() != key]
    longer = sorted({s for s in surfaces if key in s.lower() and s.lower() != key}, key=lambda s: (len(s), s))
    words += longer[:MAX_EXPANSION]
    words = list(dict.fromkeys(words))
    return [f"{text} {' '.join(words)}"] if words else []
