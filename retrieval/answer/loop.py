"""A question in -> the sufficiency loop (at most two rounds of search + judge) -> a cited `Answer` out, as a stream of events.

Round 1 searches the question (and its rewrites, fused); a judge (the model, else rules) decides
whether the passages suffice; if not, round 2 searches the judge's follow-up query (it is linked
to entities again by `query()`) and merges its hits below round 1's. `MAX_ROUNDS` is a constant:
no setting, model reply or document text can raise it. When nothing relevant was found the answer
is the plain "nothing found" in the question's language, and no model is called with an empty
context. Every failure of the model (none configured, unreachable, timed out, malformed reply)
completes the same request on the rules path, and `path_reason` says which path ran and why.

A follow-up (with `AskOptions.history`) is first made a standalone question, by the model in the rewrite
call or by rules (`retrieval.answer.history`); that question is searched, judged and answered, the
record keeps the question as asked, and `path_reason` says what was searched.

The loop talks to the knowledge base only through `query()` (and, for rewriting very short
queries, its synonym groups and entity surfaces; for a follow-up, the names a text links), so it
sits below `retrieval.pipeline`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from retrieval.answer.cite import CheckedStream, check_answer, number_hits, open_fence
from retrieval.answer.facts import facts_block
from retrieval.answer.history import (
    Standalone,
    Turn,
    conversation_text,
    own_words,
    standalone_question,
)
from retrieval.answer.judge import (
    VERDICT_SCHEMA,
    Verdict,
    evidence_of,
    parse_verdict,
    rules_verdict,
)
from retrieval.answer.llm import LlmClient, LlmUnavailable
from retrieval.answer.prompts import answer_messages, judge_messages, rewrite_messages
from retrieval.answer.quotes import MAX_SOURCE_LINES, beside_rules, introduced_blocks, source_lines
from retrieval.answer.record import NOT_FOUND, Answer, Round, detect_language
from retrieval.answer.rewrite import (
    REWRITE_SCHEMA,
    STANDALONE_SCHEMA,
    parse_rewrites,
    parse_standalone,
    rule_rewrites,
)
from retrieval.answer.rules import (
    ANSWER_COVERAGE,
    CLOSEST,
    CLOSEST_COVERAGE,
    facts_text,
    guard_terms,
    held_share,
    language_note,
    rules_answer,
)
from retrieval.answer.terms import contains_name, key_terms

__all__ = ["AskOptions", "MAX_ROUNDS", "ask_events", "answer_question"]

MAX_ROUNDS = 2  # the design's bound; deliberately not a setting
JUDGE_PASSAGES = 5
SEARCH_DEPTH = 20  # hits per search before the rounds are fused
REWRITE_WEIGHT = 0.7  # a rewrite's ranks against the question's own
FOLLOWUP_WEIGHT = 0.8  # round 2's ranks against round 1's
RRF_K = 20.0
PER_SECTION = 2  # hits of one section (parent chunk) when searches are fused: the query path's own cap
KNOWN_DEPTH = 10  # hits searched for a name the passages lack
# Said under an answer the model did not end itself: it reached KG_LLM_MAX_TOKENS (finish_reason "length").
CUT_NOTE = {"zh": "（回答到了长度上限 KG_LLM_MAX_TOKENS，在此截断。）",
            "en": "(The answer reached the length limit, KG_LLM_MAX_TOKENS, and stops here.)"}
STANDALONE_TOKENS = 100  # a follow-up written out: one question (MAX_STANDALONE_CHARS) in JSON
STANDALONE_KEEPS = 0.5  # share of a follow-up's own key words the model's standalone question must hold


class Searcher(Protocol):
    """What the loop needs of a knowledge base (`retrieval.pipeline.KnowledgeBase`)."""

    def query(self, text: str, k: int | None = None, mode: str = "full", types=None, **filters): ...


@dataclass
class AskOptions:
    k: int = 6  # passages numbered and given to the answer
    mode: str = "full"
    citation_support: float = 0.35
    rewrites: bool = True
    filters: dict = field(default_factory=dict)  # as_of / packs, passed to query() when given
    synonym_groups: Sequence[Sequence[str]] = ()
    surfaces: Sequence[str] = ()
    facts: Callable | None = None  # `retrieval.answer.facts.FactFinder`: the graph's facts a question asks for
    history: Sequence[Turn] = ()  # the conversation before the question (`retrieval.answer.history`)
    names: Callable[[str], Sequence[str]] | None = None  # the entity surfaces a text links: a follow-up's subject
    source_lines: int = MAX_SOURCE_LINES  # under a model's answer, the source lines of the values it states (0 = none)
    leads: Callable | None = None  # `retrieval.answer.leads.LeadFinder`: an entity's page's lead among the passages


@dataclass
class _Notes:
    llm: LlmClient | None
    reasons: list[str] = field(default_factory=list)

    def usable(self) -> bool:
        return self.llm is not None and not self.llm.down

    def failed(self, step: str, exc: LlmUnavailable) -> None:
        text = f"{step}: {exc.reason}"
        if text not in self.reasons:
            self.reasons.append(text)


def _brought_by_round_two(top: list, first: set[str], query: str, found: set[str]) -> list:
    """A passage among the answer's that round 1 did not give and round 2's search found says so in its
    `why["placed"]`, which the answer's sources show: the question did not find it, the follow-up did.
    A page lead keeps its own reason."""
    out = []
    for hit in top:
        why = getattr(hit, "why", None) or {}
        if query and hit.chunk_id not in first and hit.chunk_id in found and "placed" not in why:
            hit = replace(hit, why={**why, "placed": f"found by the second round's search for “{query}”"})
        out.append(hit)
    return out


def _fuse(rankings: Sequence[tuple[Sequence, float]], depth: int) -> list:
    """Reciprocal-rank fusion of several hit lists by chunk id (the first hit object seen is kept), at most two a section.

    Capped per section (parent chunk), as the query path caps its own hits, not per document: a reference
    document of many sections, each about another key, keeps every section the search ranked (a cap of two a
    document dropped the third and fourth hits of a runbook, the ones holding the answer)."""
    scores: dict[str, float] = {}
    first: dict[str, object] = {}
    for hits, weight in rankings:
        for rank, hit in enumerate(hits):
            scores[hit.chunk_id] = scores.get(hit.chunk_id, 0.0) + weight / (RRF_K + rank + 1)
            first.setdefault(hit.chunk_id, hit)
    out, per_section = [], {}
    for cid in sorted(scores, key=lambda c: -scores[c]):
        hit = first[cid]
        section = (hit.parent or {}).get("chunk_id") or cid
        if per_section.get(section, 0) < PER_SECTION:
            per_section[section] = per_section.get(section, 0) + 1
            out.append(hit)
        if len(out) == depth:
            break
    return out


def _known(kb: Searcher, name: str) -> bool:
    """Whether any document holds the name at all: a name that is only missing from this question's
    passages is a retrieval miss, one missing from the whole knowledge base means nothing relevant."""
    result = kb.query(name, k=KNOWN_DEPTH, mode="bm25")
    return any(contains_name(f"{h.title}\n{h.section}\n{h.text}".lower(), name) for h in result.hits)


def _judge(question: str, hits: Sequence, entities: Sequence[dict], notes: _Notes, k: int, last: bool,
           facts: Sequence = ()) -> Verdict:
    """The rules' verdict, unless they find the passages short and a further round could follow: then the model's.
    When the rules already find them sufficient the answer call is the judge too (its prompt says to tell when the
    passages do not answer), and after the last round a verdict changes nothing: so at most one judge call a question."""
    rules = rules_verdict(question, hits[:JUDGE_PASSAGES], entities)
    if facts:  # the relation table answers the relation asked about: nothing to search for
        return Verdict(True, [], "", "rules", rules.coverage)
    if notes.usable() and hits and not rules.sufficient and not last:
        try:
            # The judge sees the passages the answer will see, numbered alike: one shared prompt prefix.
            reply = notes.llm.complete("judge", judge_messages(question, number_hits(hits[:k])), max_tokens=120,
                                       schema=VERDICT_SCHEMA)
            verdict = parse_verdict(reply)
            if verdict is not None:
                return verdict
            note = f"judge: {notes.llm.model} gave no parseable verdict, the rules judged"
            if note not in notes.reasons:
                notes.reasons.append(note)
        except LlmUnavailable as exc:
            notes.failed("judge", exc)
    return rules


def _rewrites(question: str, language: str, options: AskOptions, notes: _Notes) -> tuple[list[str], Standalone]:
    """The keyword rewrites, and the question as searched: a follow-up made standalone with the conversation
    (by the model in the same call, else by rules)."""
    ruled = standalone_question(question, options.history, options.names, language) if options.history else Standalone(question)
    if notes.usable() and (options.rewrites or options.history):
        try:
            if not options.history:
                # five short keyword lines; a small model left at 200 tokens babbles on (and a CPU writes ~2-9 tokens/s)
                reply = notes.llm.complete("rewrite", rewrite_messages(question, language), max_tokens=80)
                return parse_rewrites(reply, question), ruled
            # With keyword rewrites off the model writes out the follow-up only: queries it would write are not searched.
            reply = notes.llm.complete("rewrite", rewrite_messages(question, language, conversation_text(options.history),
                                                                   queries=options.rewrites),
                                       max_tokens=160 if options.rewrites else STANDALONE_TOKENS,
                                       schema=REWRITE_SCHEMA if options.rewrites else STANDALONE_SCHEMA)
            written, queries = parse_standalone(reply, question)
            if not options.rewrites:
                queries = rule_rewrites(written or ruled.question, options.synonym_groups, options.surfaces)
            if written is None:
                notes.reasons.append(f"rewrite: {notes.llm.model} wrote no standalone question, the rules read the follow-up")
                return queries, ruled
            if written.lower() == question.lower() and ruled.how:  # repeated as asked, though it refers to the conversation
                return queries, ruled
            if held_share(guard_terms(own_words(question)), written)[0] < STANDALONE_KEEPS:
                # another question (a small model repeating an earlier one): not a rewrite of this one
                notes.reasons.append(f"rewrite: {notes.llm.model}'s standalone question lost the follow-up's own words, "
                                     "the rules read it")
                return queries, ruled
            how = f"written out by {notes.llm.model} with the conversation" if written.lower() != question.lower() else ""
            return queries, Standalone(written, (), how)
        except LlmUnavailable as exc:
            notes.failed("rewrite", exc)
    return rule_rewrites(ruled.question, options.synonym_groups, options.surfaces), ruled


def _searched_as(standalone: Standalone) -> str:
    """For `path_reason`: the question a follow-up was searched as, and why."""
    return f"; the follow-up was searched as \"{standalone.question}\" ({standalone.how})" if standalone.how else ""


def ask_events(kb: Searcher, question: str, options: AskOptions | None = None,
               llm: LlmClient | None = None) -> Iterator[tuple[str, object]]:
    """Yields ("round", Round) after each search, ("delta", str) pieces of the answer text, and last ("answer", Answer)."""
    options = options or AskOptions()
    asked = " ".join((question or "").split())
    started = time.perf_counter()
    language = detect_language(asked)  # the user's language, whatever the conversation adds
    notes = _Notes(llm)
    timings: dict[str, float] = {}

    t = time.perf_counter()
    rewrites, standalone = _rewrites(asked, language, options, notes)
    question = standalone.question  # what is searched, judged and answered; the record keeps what was asked
    timings["rewrite"] = (time.perf_counter() - t) * 1e3

    rounds: list[Round] = []
    facts: list = []
    hits: list = []
    entities: list[dict] = []
    packs_used: list = []
    query_text = question
    first_top: set[str] = set()  # round 1's passages, and what round 2's search found, to say which it brought
    second: tuple[str, set[str]] = ("", set())
    for number in range(1, MAX_ROUNDS + 1):
        t = time.perf_counter()
        queries = [query_text] + (rewrites if number == 1 else [])
        results = [kb.query(q, k=SEARCH_DEPTH, mode=options.mode, **options.filters) for q in queries]
        if number == 1:
            entities = list(results[0].entities)
            facts = options.facts(question, entities) if options.facts and entities else []
            packs_used = list(getattr(results[0], "packs_used", None) or [])
            fresh = _fuse([(r.hits, 1.0 if i == 0 else REWRITE_WEIGHT) for i, r in enumerate(results)], SEARCH_DEPTH)
            added = len(fresh)
        else:
            before = {h.chunk_id for h in hits[: options.k]}
            fresh = _fuse([(hits, 1.0), (results[0].hits, FOLLOWUP_WEIGHT)], SEARCH_DEPTH)
            # Round 2 adds to round 1, it never takes away: when the merged top holds less of the
            # question than round 1's did, round 1's ranking stays and the new hits come after it.
            if (evidence_of(question, fresh[:JUDGE_PASSAGES], entities).coverage
                    < evidence_of(question, hits[:JUDGE_PASSAGES], entities).coverage):
                fresh = _fuse([(hits, 1.0), ([h for h in results[0].hits if h.chunk_id not in before], 1e-3)],
                              SEARCH_DEPTH)
            added = len({h.chunk_id for h in fresh[: options.k]} - before)
            entities += [e for e in results[0].entities if e["id"] not in {x["id"] for x in entities}]
            second = (query_text, {h.chunk_id for h in results[0].hits})
        hits = fresh
        if number == 1:
            first_top = {h.chunk_id for h in hits[: options.k]}
        verdict = _judge(question, hits, entities, notes, options.k, last=number == MAX_ROUNDS, facts=facts)
        rounds.append(Round(number, query_text, [e["label"] for e in results[0].entities], added, verdict.to_json(),
                            (time.perf_counter() - t) * 1e3))
        yield "round", rounds[-1]
        if verdict.sufficient or number == MAX_ROUNDS:
            break
        # The follow-up is only ever a search string; an empty one repeats nothing new, so stop.
        query_text = verdict.followup.strip() or rules_verdict(question, hits[:JUDGE_PASSAGES], entities).followup
        if not query_text or query_text == question:
            break
    timings["search"] = sum(r.ms for r in rounds)

    top = options.leads(hits, options.k, entities) if options.leads else hits[: options.k]
    top = _brought_by_round_two(top, first_top, *second)
    evidence = evidence_of(question, top[:JUDGE_PASSAGES], entities)
    evidence.unknown_names = [n for n in evidence.missing_names if not _known(kb, n)]
    base = {"question": asked, "language": language, "rounds": rounds, "packs_used": packs_used, "rewrites": rewrites}
    wordless = not key_terms(question)
    if not facts and (not top or not evidence.found or wordless):
        why = ("no passage matched" if not top else
               "the question holds no word to look for, only a number or a citation marker" if wordless else
               f"no document mentions {', '.join(evidence.unknown_names)}" if evidence.unknown_names else
               f"the passages hold {evidence.coverage:.0%} of the question's key words")
        asked_model = "the model was not asked to answer" if llm is not None and llm.usage else "no model was called"
        yield from _not_found(base, f"nothing relevant in the knowledge base ({why}); {asked_model}"
                              + _searched_as(standalone), timings, started, llm)
        return

    citations = number_hits(top)
    if facts:  # numbered again, with the passages that state them
        facts = options.facts(question, entities, citations)
    block = facts_block(facts, language)
    # A linked entity's label is another wording of what the question called it (心跳间隔 -> heartbeat_interval).
    groups = [*options.synonym_groups,
              *([e["surface"], e["label"]] for e in entities if e.get("surface") and e["surface"] != e.get("label"))]
    own = own_words(asked) if standalone.carried else ""
    t = time.perf_counter()
    text, path, cut = None, "rules", False
    if notes.usable():
        pieces: list[str] = []
        checked = CheckedStream(citations, options.citation_support, language, facts, attribute=True)
        try:
            if facts:  # the table's facts first, as written; the model's sentences follow
                pieces.append(facts_text(facts, language) + "\n")
                ready = checked.feed(pieces[0])
                if ready:
                    yield "delta", ready
            for piece in notes.llm.stream("answer", answer_messages(question, citations, language, block)):
                pieces.append(piece)
                ready = checked.feed(piece)
                if ready:
                    yield "delta", ready
            rest = checked.flush()
            if rest:
                yield "delta", rest
            cut = bool(notes.llm.usage) and notes.llm.usage[-1].get("cut")
            if checked.sent <= len(facts):
                # "", "[1]" or punctuation: no sentence reached the user, so the rules answer instead
                raise LlmUnavailable(f"{notes.llm.model} wrote no answer sentence ({''.join(pieces)[:40]!r})")
            # Each value the model states, with the passage line that holds it (names included), quoted and cited.
            # And what a lead-in the model copied introduces (the command after "执行："), when it stopped there.
            quotes = (introduced_blocks(checked.sentences, citations, language, options.source_lines)
                      + source_lines(question, checked.sentences, citations, language, options.source_lines))
            # When the rules' own sentences hold more of the question than the model's answer, they follow it.
            quotes += [] if facts else beside_rules(question, checked.sentences, quotes, citations, language, groups,
                                                    own, options.source_lines)
            if quotes:  # a code block the model left open is closed first: the quotes are not code
                pieces.append(("\n```" if open_fence("".join(pieces)) else "") + "\n" + "\n".join(quotes) + "\n")
                ready = checked.feed(pieces[-1]) + checked.flush()
                if ready:
                    yield "delta", ready
            text, path = "".join(pieces), "llm"
            if cut:  # stopped at KG_LLM_MAX_TOKENS, not where the model ended it: its last sentence may be half
                notes.reasons.append(f"the answer stopped at the length limit ({notes.llm.usage[-1]['completion_tokens']} "
                                     "tokens, KG_LLM_MAX_TOKENS)")
                yield "delta", f"\n{CUT_NOTE[language]}"
        except LlmUnavailable as exc:
            notes.failed("answer", exc)
            if checked.sent:
                yield "delta", "\n\n"  # what streamed so far is replaced by the extractive answer below
    streamed = text is not None
    if text is None:
        ruled = rules_answer(question, citations, language, groups, facts, own)
        if ruled.coverage <= ANSWER_COVERAGE:
            # Quoting sentences that miss the question's point as its answer would be a confident wrong answer.
            held = f"{ruled.coverage:.0%} of the question's key words" + (
                f" (not: {', '.join(ruled.missing[:4])})" if ruled.missing else "")
            reason = "; ".join(notes.reasons + [f"the passages' best sentences hold only {held}: no answer rather than a wrong one"]
                               ) + _searched_as(standalone)
            if ruled.coverage < CLOSEST_COVERAGE:
                yield from _not_found(base, reason, timings, started, llm)
                return
            rendered, sentences = check_answer(ruled.text, citations, options.citation_support, language, facts)
            for s in sentences:
                s.flagged = True
            closest = f"{NOT_FOUND[language]}{CLOSEST[language]}\n{rendered}"
            yield "delta", closest
            timings["total"] = (time.perf_counter() - started) * 1e3
            yield "answer", Answer(answer=closest, found=False, path="rules", path_reason=reason, sentences=sentences,
                                   citations=citations, timings_ms=timings, llm_usage=list(llm.usage) if llm else [],
                                   **base)
            return
        text = ruled.text
    rendered, sentences = check_answer(text, citations, options.citation_support, language, facts, attribute=streamed)
    if streamed and cut:
        rendered = f"{rendered}\n{CUT_NOTE[language]}"
    if not streamed:
        note = language_note(rendered, language)
        if note:  # the sources speak another language than the question: say so, then quote them
            rendered = f"{note}\n{rendered}"
        yield "delta", rendered
    timings["answer"] = (time.perf_counter() - t) * 1e3
    timings["total"] = (time.perf_counter() - started) * 1e3
    yield "answer", Answer(answer=rendered, found=True, path=path, path_reason=_path_reason(path, llm, notes) + _searched_as(standalone),
                           sentences=sentences, citations=citations, timings_ms=timings,
                           llm_usage=list(llm.usage) if llm else [], facts=facts, **base)


def _not_found(base: dict, reason: str, timings: dict, started: float, llm: LlmClient | None):
    answer = Answer(answer=NOT_FOUND[base["language"]], found=False, path="rules", path_reason=reason, **base)
    yield "delta", answer.answer
    timings["total"] = (time.perf_counter() - started) * 1e3
    answer.timings_ms = timings
    answer.llm_usage = list(llm.usage) if llm else []
    yield "answer", answer


def _path_reason(path: str, llm: LlmClient | None, notes: _Notes) -> str:
    if llm is None:
        return "no model configured (KG_LLM_MODEL is unset): rules judge and extractive answer"
    if path == "llm" and not notes.reasons:
        if "judge" not in llm.tasks:
            return f"{llm.model} wrote the answer; the rules found the passages sufficient, so the answer call was the judge too"
        return f"{llm.model} judged the passages and wrote the answer"
    if path == "llm":
        return f"{llm.model} wrote the answer; " + "; ".join(notes.reasons)
    return "; ".join(notes.reasons) + ": the rules path completed the request (extractive answer)"


def answer_question(kb: Searcher, question: str, options: AskOptions | None = None, llm: LlmClient | None = None) -> Answer:
    """The whole answer record (the last event of `ask_events`)."""
    answer = None
    for kind, value in ask_events(kb, question, options, llm):
        if kind == "answer":
            answer = value
    assert answer is not None
    return answer
