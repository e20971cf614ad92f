"""A query's JSON + a language -> the words and marks the page shows (why in words, highlighted terms, the graph path as steps)."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from markupsafe import Markup, escape

__all__ = ["LANGUAGES", "highlight", "messages", "path_steps", "pick_language", "shown_terms", "why_in_words"]

STATIC_DIR = Path(__file__).parent / "static"
LANGUAGES = ("en", "zh")


@lru_cache(maxsize=1)
def _all_messages() -> dict[str, dict[str, str]]:
    # One file of UI text for the server-rendered page and for app.js (embedded in the page).
    return json.loads((STATIC_DIR / "i18n.json").read_text(encoding="utf-8"))


def messages(lang: str) -> dict[str, str]:
    return _all_messages()[lang if lang in LANGUAGES else "en"]


def pick_language(asked: str | None, cookie: str | None, accept_language: str | None) -> str:
    """`?lang=` first, then the page's own cookie, then the browser's Accept-Language (by its q weights)."""
    for choice in (asked, cookie):
        if choice in LANGUAGES:
            return choice
    ranked = []
    for position, part in enumerate((accept_language or "").split(",")):
        tag, _, params = part.strip().partition(";")
        weight = 1.0
        if params.strip().startswith("q="):
            try:
                weight = float(params.strip()[2:])
            except ValueError:
                weight = 0.0
        ranked.append((-weight, position, tag.strip().lower()))
    for _, _, tag in sorted(ranked):
        primary = tag.split("-")[0]
        if primary in LANGUAGES:
            return primary
    return "en"


def fill(template: str, **values) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: str(values.get(m.group(1), m.group(0))), template)


def path_steps(path: str) -> dict:
    """`query: A → rel → B → document about it` -> {"nodes": [A, B], "relations": [rel], "end": "about"}."""
    parts = [p.strip() for p in path.removeprefix("query:").split("→")]
    end = "about" if parts and parts[-1] == "document about it" else "mention"
    steps = parts[:-1] if len(parts) > 1 else parts
    return {"nodes": steps[0::2], "relations": steps[1::2], "end": end}


def why_in_words(why: dict, lang: str, text: str = "") -> list[str]:
    """The `why` of a hit as sentences; the matched words as the passage `text` writes them."""
    m = messages(lang)
    sep = "、" if lang == "zh" else ", "
    words = []
    if "bm25" in why:
        words.append(fill(m["why_bm25"], terms=sep.join(shown_terms(text, why["bm25"]["terms"])), rank=why["bm25"]["rank"]))
    if "graph" in why:
        g = why["graph"]
        steps = path_steps(g.get("path", ""))
        reached = steps["nodes"][-1] if steps["nodes"] else g.get("entity", "")
        line = fill(m["why_graph"], entity=steps["nodes"][0] if steps["nodes"] else g.get("entity", ""), rank=g["rank"])
        end = m["why_graph_about"] if g.get("via") == "about" else m["why_graph_mention"]
        words.append(line + ("；" if lang == "zh" else "; ") + fill(end, entity=reached))
        if g.get("about"):
            words.append(fill(m["why_about"], about=g["about"]))
    if "dense" in why:
        words.append(fill(m["why_dense"], rank=why["dense"]["rank"], similarity=f"{why['dense']['similarity']:.3f}"))
    if "diversity" in why:
        d = why["diversity"]
        words.append(fill(m["why_diversity"], **{"from": d["from"], "similarity": f"{d['similarity_above']:.3f}"}))
    if "hop" in why:
        words.append(fill(m["why_hop"], rank=why["hop"]["rank"], similarity=f"{why['hop']['similarity']:.3f}"))
    if "named" in why:
        words.append(fill(m["why_named"], heading=why["named"]["heading"]))
    if "followup" in why:
        words.append(fill(m["why_followup"], terms=sep.join(shown_terms(text, why["followup"]["terms"])), rank=why["followup"]["rank"]))
    return words


def _term_regex(term: str) -> str:
    if re.fullmatch(r"[\w.\-]+", term, flags=re.ASCII):
        # Index terms are stemmed ("redi" for "redis"): mark the word the stem begins, if it is
        # at most a few letters longer (so "redi" marks "Redis" but not "RedisDown" or "redis_exporter").
        return r"(?<![A-Za-z0-9_])" + re.escape(term) + r"[A-Za-z]{0,4}(?![A-Za-z0-9_])"
    return re.escape(term)


def _term_pattern(terms: list[str]) -> re.Pattern | None:
    alternatives = [_term_regex(t) for t in sorted({t for t in terms if t.strip()}, key=len, reverse=True)]
    return re.compile("|".join(alternatives), re.IGNORECASE) if alternatives else None


def shown_terms(text: str, terms: list[str]) -> list[str]:
    """Each index term as the passage writes it ("redi" -> "Redis"); a term not in the text stays as it is."""
    shown = []
    for term in terms:
        found = re.search(_term_regex(term), text, re.IGNORECASE) if term.strip() else None
        word = found.group(0) if found else term
        if word.lower() not in (w.lower() for w in shown):
            shown.append(word)
    return shown


def highlight(text: str, terms: list[str]) -> Markup:
    """The text, escaped, with every matched term in <mark>."""
    pattern = _term_pattern(terms)
    if pattern is None:
        return escape(text)
    out, last = [], 0
    for match in pattern.finditer(text):
        if not match.group(0):
            continue
        out.append(escape(text[last:match.start()]))
        out.append(Markup("<mark>") + escape(match.group(0)) + Markup("</mark>"))
        last = match.end()
    out.append(escape(text[last:]))
    return Markup("").join(out)
