"""A question, the entities it links and the graph in -> the relation facts it asks for out, numbered [R1].. as evidence beside the passages.

When a question asks along a relation (依赖 / 影响 / 谁负责 / 属于 / 配置项, depends on / what breaks /
who owns / configured by: the property labels and cue words the query path matches, see
`ontology/kgrag.ttl`), the relation table's edges of a linked entity along that relation answer it
better than any sentence: "redis-cluster 宕机会影响哪些服务？" is answered by the five services whose
`dependsOn redis-cluster` rows the table holds, which no single document lists. One fact groups an
entity's edges along one relation; it cites its source, the asserted triples (as the relation
table wrote them), and the passages that state one of them, where any does. The rules path answers
from the facts; the model gets them in its prompt, before the passages.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

from retrieval.answer.record import Citation
from retrieval.index.analysis import normalize_text

__all__ = ["MAX_FACTS", "MAX_OTHERS", "Fact", "FactFinder", "facts_block", "stating_passages"]

MAX_FACTS = 4  # (entity, relation) groups: a question names one or two of each
MAX_OTHERS = 12  # entities listed in one fact; the rest are counted
# Relations that say what a question asks about in general, not along one edge ("related to", "mentions").
_VAGUE = {"relatedTo", "mentions", "mentionedBy", "documents", "documentedIn"}

# "what does X depend on": the ontology's labels are third person ("depends on", "relies on", "runs on").
_BASE_VERB = re.compile(r"\b(depend|rel(?:y)|run|own|host|configure|affect|cause|replace|monitor)\b(?=\s+(?:on|by)?)",
                        re.IGNORECASE)


# "Which services use X": the relation's label is "uses", and "use" after a plural subject is its plural form (not after
# "I / you / we / to / does …": "How do I use X" asks how, not along a relation), with its object right after it (in
# "which port do the gateways use to connect to X" the object is the port, asked for; X is no object of "use").
_PLURAL_USE = re.compile(r"\b([a-z]+(?<!s)s)\s+use\b(?!\s+(?:to|for|in|on|at|with|when|as|by|from)\b)", re.IGNORECASE)
_NOT_SUBJECT = {"does", "is", "was", "has", "its", "this", "thus", "always", "us", "yes", "as", "plus"}


# "Which services are using X", "What is X running on?": the progressive is the relation's word as labelled (the
# subject, when a question puts a name between, stays where it is written). Not a noun phrase between ("are the
# components depending on X …", "are responsible for the services running on X"): that participle is a clause's,
# read by `_as_clauses`.
_PROGRESSIVE = re.compile(r"\b(?:are|is|were|was)\s+((?:[^\s?？。，,]+\s+){0,3}?)(using|depending|relying|running)\b",
                          re.IGNORECASE)
_PHRASE_WORDS = {"the", "a", "an", "all", "those", "these", "its", "their", "any", "some", "each", "every", "for", "of",
                 "to", "in", "on", "with", "by", "from", "at", "responsible", "used", "still"}


def _progressive(m: re.Match) -> str:
    between = m.group(1)
    if between and _PHRASE_WORDS & {w.lower() for w in between.split()}:
        return m.group(0)
    return between + _ING[m.group(2).lower()]


_MANNER = re.compile(r"\s*(?:how(?!\s+many)|why)\b", re.IGNORECASE)  # "How are teams using X?" asks how, not who


# "What does order-service use?", "Which components does X use?": what is asked is the object of "use" (not in "Does X
# use Y?", nor with "I / you / we" as the subject: "What do I use to …").
_ASKED_USE = re.compile(r"^(\s*(?:what|which)\b[^?？。]*?)\b(?:does|do|did)\s+((?:[^\s?？。，,]+\s+){1,3}?)use\b"
                        r"(?!\s+(?:to|for|in|on|at|with|when|as|by|from)\b)", re.IGNORECASE)
_PRONOUNS = {"i", "you", "we", "they", "one", "people", "users"}


def _asked_use(m: re.Match) -> str:
    if {w.lower() for w in m.group(2).split()} & _PRONOUNS:
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}uses"


def _third_person(question: str) -> str:
    if not _MANNER.match(question):
        question = _ASKED_USE.sub(_asked_use, question)
        question = _PROGRESSIVE.sub(_progressive, question)
        question = _PLURAL_USE.sub(
            lambda m: m.group(0) if m.group(1).lower() in _NOT_SUBJECT else f"{m.group(1)} uses", question)
    return _BASE_VERB.sub(lambda m: {"rely": "relies"}.get(m.group(1).lower(), m.group(1) + "s"), question)


# A participle after a plural noun is a relative clause without its pronoun: "the services owned by X", "the services
# depending on X" are read as "the services that owned by X", "… that depends on X" (the relation's word as labelled).
_PARTICIPLE = re.compile(r"\b([a-z]+s)\s+(?:(owned|configured|monitored|caused|affected|required|replaced|deployed)\s+by"
                         r"|(depending|relying|running)\s+on|(using))\b", re.IGNORECASE)
_ING = {"depending": "depends", "relying": "relies", "running": "runs", "using": "uses"}


def _as_clauses(text: str) -> str:
    def clause(m: re.Match) -> str:
        if m.group(1).lower() in ("is", "was", "has", "does", "its", "this", "thus", "always"):
            return m.group(0)
        if m.group(2):
            return f"{m.group(1)} that {m.group(2)} by"
        if m.group(4):
            return f"{m.group(1)} that uses"
        return f"{m.group(1)} that {_ING[m.group(3).lower()]} on"

    return _PARTICIPLE.sub(clause, text)


# A clause naming the inner relation and the entity: "the services that depend on X" (a relative pronoun, not the
# question's first word), "依赖 X 的服务" / "X 依赖的组件" (的 right after them); or a later sentence pointing back to
# what the first one asked for ("…? Who owns them?", "…？它们由谁负责？").
_RELATIVE = re.compile(r"\b(?:that|which|who)\b", re.IGNORECASE)
_BREAK = re.compile(r"[。？?！!；;]")
_JOINT = re.compile(r"[。？?！!；;，,]|\band\b", re.IGNORECASE)
_BACK = re.compile(r"它们|他们|这些|那些|\b(?:they|them|their|those|these)\b", re.IGNORECASE)


def _chains(text: str, spans: Sequence[tuple[str, int, int]], start: int, end: int) -> Iterator[tuple[str, str, bool]]:
    """Each (inner, outer, forward) by which `text` may ask along `outer` about what `inner` reaches from the entity
    written at text[start:end] (several words may name the inner relation: "被哪些服务依赖"); none when it asks along
    each relation about the entity itself (or along one). `forward`: the entity is the inner relation's subject ("the
    components that order-service depends on", "order-service 依赖的组件"), not its object ("the services that depend
    on redis-cluster", "依赖 redis-cluster 的服务": walked backwards)."""
    for inner, a0, a1 in spans:
        if a1 <= start - 12 or a0 >= end + 12:  # the inner relation's word stands by the entity
            continue
        lo, hi = min(a0, start), max(a1, end)
        if _BREAK.search(text, lo, hi):
            continue
        relative = [m for m in _RELATIVE.finditer(text, max(0, lo - 24), lo + 1) if text[:m.start()].strip()
                    and not _BREAK.search(text, m.start(), lo)]
        de = text.find("的", hi, hi + 3)  # the clause names the noun after 的; the outer word before or after it
        joint = _JOINT.search(text, hi)  # "…？它们…", "… and who owns them": the later clause points back
        back = joint is not None and _BACK.search(text, joint.end()) is not None
        for outer, b0, b1 in spans:
            if outer == inner or lo <= b0 < hi:
                continue
            if ((relative and (b1 <= relative[-1].start() or b0 >= hi))
                    or (de >= 0 and (b0 > de or b1 <= lo) and not _BREAK.search(text, hi, de)
                        and not _BREAK.search(text, min(b0, lo), max(b1, de)))
                    or (back and b0 >= joint.end())):
                yield inner, outer, start < a0
                break


# A plural noun right before an entity that a relation word follows: "the components Region Migration depends on" is
# "the components that Region Migration depends on" (English drops the pronoun; Chinese writes 的, read above).
_BARE_NOUN = re.compile(r"\b(?:the|those|these|all)\s+[a-z]+s\s+$", re.IGNORECASE)
BARE_GAP = 2  # characters between the entity and the relation word after it (a space)


def _with_pronouns(text: str, entities: Sequence[dict], relation_spans: Callable) -> str:
    """`text` with "that" written where a relative clause leaves it out, before the entity that is its subject."""
    spans = relation_spans(text)
    for at, end in sorted(_written(text, entities).values(), reverse=True):
        if _BARE_NOUN.search(text, 0, at) and any(0 <= a - end <= BARE_GAP for _, a, _ in spans):
            text = f"{text[:at]}that {text[at:]}"
    return text


# An entity's noun after it: "交易研发组的服务", "the payments team's services" (the class label right after).
_POSSESSIVE = re.compile(r"\s*(?:的|'s\b|’s\b)\s*")
MAX_CLASS_LABEL = 24  # characters after 的 / 's read for a class label
_WORD_END = re.compile(r"(?:e?s)?(?![a-z])")  # "services" is the class "service"; "systematic" is not "system"


def _written(text: str, entities: Sequence[dict]) -> dict[str, tuple[int, int]]:
    """Each linked entity's place in `text` (normalised, as the relation spans are): id -> (start, end)."""
    places = {}
    for e in entities:
        surface = normalize_text(e.get("surface") or e["label"]).lower()
        at = text.lower().find(surface)
        if at >= 0:
            places[e["id"]] = (at, at + len(surface))
    return places


def _unnamed(text: str, entities: Sequence[dict]) -> str:
    """`text` (normalised) without the linked entities' names: a name holds no relation word. "INC-20240527 Redis
    节点宕机会影响哪些服务" asks what the incident affects (影响); the 宕机 that ends its name and the 会影响 after it are
    not the cue word 宕机会影响 (what depends on a component that goes down)."""
    text = normalize_text(text)
    for at, end in sorted(_written(text, entities).values(), reverse=True):
        text = f"{text[:at]} {text[end:]}"
    return text


_ZH = {
    "dependsOn": "{e} 依赖：{o}", "requiredBy": "{e} 被以下对象依赖：{o}", "runtimeDependsOn": "{e} 运行时依赖：{o}",
    "ownedBy": "{e} 的负责团队：{o}", "owns": "{e} 负责：{o}", "partOf": "{e} 属于：{o}", "hasPart": "{e} 包含：{o}",
    "runsOn": "{e} 运行于：{o}", "hosts": "{e} 上运行着：{o}", "configuredBy": "{e} 的配置项：{o}",
    "configures": "{e} 配置：{o}", "affects": "{e} 影响：{o}", "affectedBy": "{e} 受以下对象影响：{o}",
    "causes": "{e} 导致：{o}", "causedBy": "{e} 由以下原因引起：{o}", "connectsTo": "{e} 连接：{o}",
    "monitoredBy": "{e} 由以下对象监控：{o}", "monitors": "{e} 监控：{o}",
    "replacedBy": "{e} 被以下对象替代：{o}", "replaces": "{e} 替代：{o}",
}
_EN = {
    "dependsOn": "{e} depends on {o}", "requiredBy": "{e} is required by {o}",
    "runtimeDependsOn": "{e} depends at run time on {o}", "ownedBy": "{e} is owned by {o}", "owns": "{e} owns {o}",
    "partOf": "{e} is part of {o}", "hasPart": "{e} has the parts {o}", "runsOn": "{e} runs on {o}",
    "hosts": "{e} hosts {o}", "configuredBy": "{e} is configured by {o}", "configures": "{e} configures {o}",
    "affects": "{e} affects {o}", "affectedBy": "{e} is affected by {o}", "causes": "{e} causes {o}",
    "causedBy": "{e} is caused by {o}", "connectsTo": "{e} connects to {o}", "monitoredBy": "{e} is monitored by {o}",
    "monitors": "{e} monitors {o}", "replacedBy": "{e} is replaced by {o}", "replaces": "{e} replaces {o}",
}


@dataclass(frozen=True)
class Fact:
    """[R<n>]: an entity's edges along one relation, with the triples as the relation table asserted them."""

    key: str  # "R1"
    entity: str  # the linked entity's label
    relation: str  # as walked from the entity (requiredBy for the rows "X dependsOn entity")
    others: tuple[str, ...]  # the labels at the other end, in the table's order of weight
    triples: tuple[str, ...]  # "order-service dependsOn redis-cluster", as asserted
    passages: tuple[int, ...] = ()  # passages [n] that state one of the triples
    origins: tuple[str, ...] = ()  # per triple, the tables and lines that state it ("relations.csv:3", "pack ops's relations.csv:7")

    def sentence(self, language: str) -> str:
        shown = list(self.others[:MAX_OTHERS])
        more = len(self.others) - len(shown)
        if language == "zh":
            names = "、".join(shown) + (f" 等 {len(self.others)} 个" if more else "")
            template = _ZH.get(self.relation, "{e} " + self.relation + "：{o}")
        else:
            names = ", ".join(shown) + (f" and {more} more" if more else "")
            template = _EN.get(self.relation, "{e} " + self.relation + " {o}")
        return template.format(e=self.entity, o=names)

    @property
    def source(self) -> str:
        """The triples after the table that states them: "relations.csv: a dependsOn b; pack ops's relations.csv: c
        dependsOn b"; "graph.ttl" for an edge no imported table or ontology file states (made in Protégé)."""
        if not self.origins:
            return "relation table: " + "; ".join(self.triples)
        groups: dict[str, list[str]] = {}
        for triple, origin in zip(self.triples, self.origins, strict=True):
            groups.setdefault(origin or "graph.ttl", []).append(triple)
        return "; ".join(f"{origin}: " + "; ".join(triples) for origin, triples in groups.items())

    def text(self) -> str:
        """What the citation check compares a sentence citing [Rn] with: both languages' wording and the triples."""
        return "\n".join([self.sentence("zh"), self.sentence("en"), *self.triples])

    def to_json(self) -> dict:
        return {"key": self.key, "entity": self.entity, "relation": self.relation, "others": list(self.others),
                "source": self.source, "triples": list(self.triples), "origins": list(self.origins),
                "passages": list(self.passages),
                "text": {"zh": self.sentence("zh"), "en": self.sentence("en")}}


def _surfaces(view, iri: str) -> list[str]:
    entity = view.entities.get(iri)
    if entity is None:
        return []
    return [s.lower() for s in (entity.label, *entity.aliases) if len(s) >= 2]


def stating_passages(view, source: str, target: str, citations: Sequence[Citation]) -> list[int]:
    """The passages naming both ends of an edge (by label or alias): where the documents state it."""
    a, b = _surfaces(view, source), _surfaces(view, target)
    out = []
    for c in citations:
        text = f"{c.title}\n{c.section}\n{c.text}".lower()
        if any(s in text for s in a) and any(s in text for s in b):
            out.append(c.n)
    return out


class FactFinder:
    """The facts a question asks for, from a knowledge base's graph view, vocabulary and relation matcher.
    `relations_in(question)` gives the property names the question's words name (the query path's matcher)."""

    def __init__(self, view, vocab, relations_in: Callable[[str], set[str]],
                 origins: Callable[[Sequence[tuple[str, str, str]]], Sequence[str]] | None = None,
                 relation_spans: Callable[[str], Sequence[tuple[str, int, int]]] | None = None) -> None:
        self.view, self.vocab, self.relations_in = view, vocab, relations_in
        # [(subject IRI, property name, object IRI)] -> where each is stated (`retrieval.provenance`)
        self.origins = origins
        # (property name, start, end) of each relation word in normalize_text(text): for questions along two relations
        self.relation_spans = relation_spans

    def __call__(self, question: str, entities: Sequence[dict], citations: Sequence[Citation] = ()) -> list[Fact]:
        third = _third_person(question)  # the question with its verbs as the relations' labels say them
        asked = {n for text in {question, third} for n in self.relations_in(_unnamed(text, entities)) if n not in _VAGUE}
        if not asked:
            return []
        chained = self._chained(question, third, entities, citations)
        if chained is not None:
            return chained
        facts: list[Fact] = []
        asserted: list[list[tuple[str, str, str]]] = []  # per fact, its triples as asserted: (subject, property, object)
        objects, subjects = self._roles(question, third, entities)
        passive = {self._passive(question, n) for n in asked}
        for e in entities:
            wanted = set(passive)
            found = []
            for name, alone in sorted(objects.get(e["id"], {}).items()):  # "which services depend on X": X's inverse edges
                if name in wanted and (along := self._along(e["id"], {name}, forward=False)):
                    found += along
                    if alone:  # not asked again with X as its subject ("… and what does it depend on?")
                        wanted.discard(name)
            taken = {relation for relation, _ in found}
            # "What does mysql-core depend on?": the entity is the verb's subject, so its own edges answer, or none; the
            # inverse ("mysql-core is required by …") would answer another question.
            along = self._along(e["id"], wanted, forward=True if e["id"] in subjects else None) if wanted else []
            rest = [(r, edges) for r, edges in along if r not in taken]
            for relation, edges in found + rest:
                facts.append(self._fact(f"R{len(facts) + 1}", e["id"], relation, edges, citations))
                asserted.append([x.triple() for x in edges])
                if len(facts) == MAX_FACTS:
                    return self._with_origins(facts, asserted)
        return self._with_origins(facts, asserted)

    def _roles(self, question: str, third: str, entities: Sequence[dict]) -> tuple[dict[str, dict[str, bool]], set[str]]:
        """Where each entity stands to the question's relation words. Objects: entity id -> {relation: alone} for the
        relation whose word stands just before it in one clause ("Which services depend on redis-cluster and who owns
        it?": requiredBy's edges answer the first part, though redis-cluster's own ownedBy edge answers the second;
        `alone`: no other word of the question names that relation). Subjects: the entities an English relation verb
        follows right after ("What does X depend on?", "Does X run on …"); not a noun after them ("the nginx edge
        hosts"), and not Chinese, whose cue words (引发, 配置) do not all fix the relation's direction: there the inverse
        makes up for it. `third`: the question as `_third_person` writes it."""
        if self.relation_spans is None:
            return {}, set()
        text = normalize_text(third)
        found = [(name, a, b) for name, a, b in self.relation_spans(text) if name not in _VAGUE]
        spans = [(b, name) for name, _, b in found]
        verbs = {a for _, a, b in found if text[a:b].isascii() and text[a:b][:1].isalpha()}  # where English verbs start
        objects: dict[str, dict[str, bool]] = {}
        subjects: set[str] = set()
        for iri, (at, last) in _written(text, entities).items():
            before = [(end, name) for end, name in spans if end <= at]
            if before:  # the word nearest before it ("哪些服务依赖 X": 依赖, not the question's 哪些服务)
                end, name = max(before)
                if at <= end + 4 and not _JOINT.search(text, end, at):
                    alone = sum(1 for _, other in spans if other == name) == 1
                    objects[iri] = {self._passive(question, name): alone}
            if last + 1 in verbs and text[last].isspace():  # one space between the name and the verb
                subjects.add(iri)
        return objects, subjects

    def _along(self, iri: str, asked: set[str], forward: bool | None = None) -> list[tuple[str, list]]:
        """The entity's edges along the asked relations (or, when it has none, along their inverses: "which team owns
        X" names `owns`, and X has `ownedBy` edges), grouped by relation, heaviest first; `forward` True or False: only
        along them, or only along their inverses."""
        wanted: set[str] = set()
        backwards: set[str] = set()
        for name in asked:
            wanted |= set(self.vocab.sub_properties(name))
            inverse = self.vocab.properties[name].inverse if name in self.vocab.properties else None
            if inverse:
                backwards |= set(self.vocab.sub_properties(inverse))
        groups: dict[str, list] = {}
        edges = [x for x in self.view.neighbours(iri) if x.target in self.view.entities]
        for want in {None: (wanted, backwards), True: (wanted,), False: (backwards,)}[forward]:
            for edge in edges:
                if edge.relation in want:
                    groups.setdefault(edge.relation, []).append(edge)
            if groups:
                break
        return [(relation, sorted(found, key=lambda x: -x.edge_weight)) for relation, found in groups.items()]

    def _fact(self, key: str, iri: str, relation: str, edges: list, citations: Sequence[Citation]) -> Fact:
        label = self.view.entities[iri].label
        others = tuple(dict.fromkeys(self.view.entities[x.target].label for x in edges))
        triples = tuple(
            f"{label} {x.asserted} {self.view.entities[x.target].label}" if x.forward
            else f"{self.view.entities[x.target].label} {x.asserted} {label}" for x in edges)
        stated = sorted({n for x in edges for n in stating_passages(self.view, iri, x.target, citations)})
        return Fact(key, label, relation, others, triples, tuple(stated))

    def _chained(self, question: str, third: str, entities: Sequence[dict],
                 citations: Sequence[Citation]) -> list[Fact] | None:
        """A question along one relation about what another relation reaches from a linked entity ("Which teams own
        the services that depend on redis-cluster?", "依赖 redis-cluster 的服务由哪个团队负责？"): the entity's edges
        along the inner relation, then each entity they reach along the outer one. The entity's own edges along the
        outer relation (redis-cluster's owner) would answer another question: when the second step finds no edge, the
        facts are the first step's alone (perhaps none). None when the question is not so built. `third`: the question
        as `_third_person` writes it."""
        if self.relation_spans is None:
            return None
        text = _with_pronouns(normalize_text(_as_clauses(third)), entities, self.relation_spans)
        written = _written(text, entities)
        # a relation's word inside a name is no relation word ("连接" of 数据库连接池)
        spans = [(self._passive(question, n), a, b) for n, a, b in self.relation_spans(text)
                 if n not in _VAGUE and not any(at <= a and b <= end for at, end in written.values())]
        first: list[Fact] | None = None
        for e in entities:
            if e["id"] not in written:
                continue
            hops = [(self._along(e["id"], {inner}, forward), outer)
                    for inner, outer, forward in _chains(text, spans, *written[e["id"]])]
            hops += self._possessed(text, e["id"], *written[e["id"]], spans)
            for hop, outer in hops:
                facts, reached = self._chain_facts(e["id"], hop, outer, citations)
                if reached:
                    return facts
                if first is None or (not first and facts):  # the first step that found something, or none
                    first = facts
        return first

    def _possessed(self, text: str, iri: str, start: int, end: int,
                   spans: Sequence[tuple[str, int, int]]) -> list[tuple[list, str]]:
        """"交易研发组的服务都依赖哪些组件？", "the payments team's services depend on what?": no word names the inner
        relation, the class of what it reaches does (服务, services: the ontology's class labels). [(the entity's edges
        to entities of that class, grouped by relation; the outer relation)], or [] when the question is not so built."""
        said = _POSSESSIVE.match(text, end)
        if said is None:
            return []
        after = text[said.end():said.end() + MAX_CLASS_LABEL].lower()
        named = [(len(label), c.name) for c in self.vocab.classes.values() for label in c.labels
                 if label and after.startswith(label.lower()) and _WORD_END.match(after, len(label))]
        if not named:
            return []
        size, cls = max(named)
        noun_end = said.end() + size
        outers = [name for name, a, b in spans if (a >= noun_end or b <= start)
                  and not _BREAK.search(text, min(a, start), max(b, noun_end))]
        if not outers:
            return []
        groups: dict[str, list] = {}
        for edge in self.view.neighbours(iri):
            target = self.view.entities.get(edge.target)
            if (target is not None and edge.relation not in _VAGUE
                    and any(self.vocab.is_subclass(t, cls) for t in target.types)):
                groups.setdefault(edge.relation, []).append(edge)
        hop = [(relation, sorted(found, key=lambda x: -x.edge_weight)) for relation, found in groups.items()]
        return [(hop, outers[0])] if hop else []

    def _chain_facts(self, iri: str, hop: list[tuple[str, list]], outer: str,
                     citations: Sequence[Citation]) -> tuple[list[Fact], bool]:
        """The entity's edges of the first step (`hop`), then each reached entity's along `outer`; and whether the
        second step found any (if not, the facts are the first step's alone)."""
        facts: list[Fact] = []
        asserted: list[list[tuple[str, str, str]]] = []
        for relation, edges in hop:
            facts.append(self._fact(f"R{len(facts) + 1}", iri, relation, edges, citations))
            asserted.append([x.triple() for x in edges])
        first = len(facts)
        for reached in list(dict.fromkeys(x.target for _, edges in hop for x in edges))[:MAX_OTHERS]:
            for relation, edges in self._along(reached, {outer}):
                facts.append(self._fact(f"R{len(facts) + 1}", reached, relation, edges, citations))
                asserted.append([x.triple() for x in edges])
        return self._with_origins(facts, asserted), len(facts) > first

    def _with_origins(self, facts: list[Fact], asserted: list[list[tuple[str, str, str]]]) -> list[Fact]:
        """Each fact with where its triples are stated, asked once for all of them (a table is read once)."""
        if not self.origins or not facts:
            return facts
        names = iter(self.origins([edge for edges in asserted for edge in edges]))
        return [replace(f, origins=tuple(next(names) for _ in edges)) for f, edges in zip(facts, asserted, strict=True)]

    def _passive(self, question: str, name: str) -> str:
        """"Metasrv 被哪些组件依赖" names 依赖 (dependsOn) in the passive: it asks for the inverse (requiredBy)."""
        info = self.vocab.properties.get(name)
        if info is None or not info.inverse:
            return name
        for label in info.labels:
            if re.search(r"[\u3400-\u9fff]", label) and re.search(rf"被[^，,。？?！!]{{0,8}}{re.escape(label)}", question):
                return info.inverse
        return name


def _defuse(text: str) -> str:
    return text.replace("<", "[").replace(">", "]")


def facts_block(facts: Sequence[Fact], language: str) -> str:
    """The facts as quoted evidence for the model's prompt, before the passages."""
    return "\n".join(f'<fact n="{f.key}" source="{_defuse(f.source)[:300]}">\n{_defuse(f.sentence(language))}\n</fact>'
                     for f in facts)
