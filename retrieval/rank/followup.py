"""The deterministic second round: is the first ranking enough, and if not, which follow-up query.

A question like "What is the name of the waterfall in the country where the Bubye River is
found?" names one thing (Bubye River) and asks about another that the question never names
(a waterfall in Zimbabwe). Round one finds the Bubye River; when the relation graph cannot bridge
to the second hop (no typed edge leads there), the top hit itself usually names the bridge in its
first sentences ("... a river in southern Zimbabwe"). The follow-up query is the question plus
those names, and its hits are merged below round one's best hit.

This is the rule-based form of the sufficiency loop: at most two rounds, and the second only when
no hit in round one's top was reached through a relation.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from retrieval.index.analysis import query_terms
from retrieval.rank.fusion import Fused

__all__ = ["BRIDGE_WEIGHT", "FollowUp", "bridge_names", "merge_rounds", "named_subject", "needs_followup"]

# A bridge name's words weigh this much against the question's in the follow-up search: they are
# what round one did not have (measured: 1 and 3 do worse on musique and hotpotqa than 2).
BRIDGE_WEIGHT = 2.0
# Names in running text: capitalised words, joined by a few lower-case particles
# ("Republic of the Congo", "Ludwig van Beethoven"), never across a line break.
_NAME = re.compile(
    r"\b[A-Z][\w'\-]*(?:(?:[ \t]+(?:of|the|de|del|la|le|du|von|van|da|di|and)){0,2}[ \t]+[A-Z][\w'\-]*)*"
)
# What may come before a sentence (or a list item, a heading, a table cell) starts.
_OPENERS = ".!?:;\n#*>|-+"
_WORD = re.compile(r"[0-9A-Za-z\u00c0-\u024f]+")  # Latin-script words: "TFS4" out of "学院TFS4的"
_QUALIFIER = re.compile(r"\s*\([^)]*\)\s*$")  # "(film)", "(director)"
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
# Capitalised only because they open a sentence or a clause.
_FUNCTION_WORDS = frozenset(
    "a an the in on at of for by from to as after before during since until while when where "
    "it its he she his her they their this that these those there here we our you your i "
    "is was are were be been has have had and or but not no yes also however".split()
)


@dataclass
class FollowUp:
    query: str  # the question and the bridge names
    bridge: list[str]
    from_chunk: str  # the best hit of round one, whose lead gave the names
    dropped: list[str]  # index terms of that hit's title, left out of the second search

    def to_json(self) -> dict:
        return {"query": self.query, "bridge": self.bridge, "from_chunk": self.from_chunk, "dropped": self.dropped}


def needs_followup(top_ids: Sequence[str], related_ids: Collection[str]) -> bool:
    """Round one is enough when one of its top hits was reached through a relation (the graph
    already made the hop), and there is nothing to follow up from when it found nothing."""
    return bool(top_ids) and not any(i in related_ids for i in top_ids)


def named_subject(question_terms: Sequence[str], title: str) -> set[str]:
    """The title's terms when the question names the title whole ("Bubye River", or "Monster Trucks"
    for "Monster Trucks (film)"), else nothing.

    One shared word is not enough: "product" in a question and in `product/product-principles.md`
    does not make that page the first hop (measured on gitlab: the round then fired on 27 of 68
    one-hop questions and lost R@10 1.4).
    """
    name = set(query_terms(_QUALIFIER.sub("", title)))
    return name if name and name <= set(question_terms) else set()


def bridge_names(question: str, title: str, text: str, limit: int = 4, lead: int = 400) -> list[str]:
    """Names in the first `lead` characters of `text` that neither the question nor `title` has.

    Only the lead: that is where an encyclopaedic or handbook passage says what its subject is
    and where it belongs. Empty for a question in Chinese: Chinese marks no names by case, and
    the Latin capitals in a Chinese page are codes and acronyms (TFS4, CGSS), not bridges
    (measured: domainrag_zh R@5 -1.0 when they were followed).
    """
    if _CJK.search(question):
        return []
    known = {w.lower() for w in _WORD.findall(question)} | {w.lower() for w in _WORD.findall(title)}
    names: list[str] = []
    for match in _NAME.finditer(text[:lead]):
        name = match.group(0)
        words = [w.lower() for w in _WORD.findall(name)]
        if len(words) == 1 and (words[0] in _FUNCTION_WORDS or len(name) < 3 or _opens_sentence(text, match.start())):
            continue  # "The" or "Please" opening a sentence; "B" of "LL.B."
        if all(w in known or w in _FUNCTION_WORDS for w in words):
            continue
        if name not in names:
            names.append(name)
        if len(names) == limit:
            break
    return names


def _opens_sentence(text: str, start: int) -> bool:
    before = text[:start].rstrip(" \t")
    return not before or before[-1] in _OPENERS


def merge_rounds(first: Sequence[Fused], second: Sequence[str], doc_of: Mapping[str, str], *, keep: int = 1,
                 weight: float = 1.0, k: float = 20.0) -> list[Fused]:
    """Both rounds fused by document rank (RRF), round one's best `keep` documents staying on top.

    The best document stays because the follow-up query was built from it: it is the first hop.
    Documents, not chunks, are ranked: a long document's many chunks should not outvote a short
    one. Within a document, round one's chunks come first, in their order.
    """
    chunks: dict[str, list[Fused]] = {}
    order1: list[str] = []
    for item in first:
        doc = doc_of.get(item.id, item.id)
        if doc not in chunks:
            chunks[doc] = []
            order1.append(doc)
        chunks[doc].append(Fused(item.id, 0.0, dict(item.ranks)))
    order2: list[str] = []
    seen = {f.id for group in chunks.values() for f in group}
    for rank, item_id in enumerate(second, start=1):
        doc = doc_of.get(item_id, item_id)
        if doc not in order2:
            order2.append(doc)
        for f in chunks.get(doc, ()):
            if f.id == item_id:
                f.ranks["followup"] = rank
        if item_id not in seen:
            seen.add(item_id)
            chunks.setdefault(doc, []).append(Fused(item_id, 0.0, {"followup": rank}))
    score = {doc: 1.0 / (k + r) for r, doc in enumerate(order1, start=1)}
    for r, doc in enumerate(order2, start=1):
        score[doc] = score.get(doc, 0.0) + weight / (k + r)
    head = order1[:keep]
    rest = sorted((d for d in score if d not in head), key=lambda d: (-score[d], d))
    merged = []
    for doc in head + rest:
        for f in chunks[doc]:
            f.score = score[doc]
            merged.append(f)
    return merged
