"""A follow-up question and the conversation before it in -> the standalone question that is searched out (by rules),
and the conversation bounded for the model's rewrite prompt.

"它的端口呢？" or "and who owns it?" names nothing a search can find: what "it" is was said in an earlier
question. Without a model the rules resolve it: each earlier user question is read in order (itself
resolved against the ones before it), and its subject, the entities it links and the names it gives
(`terms.identifiers`: LORA-02, payment-service), is carried into the follow-up:
- "那 order-service 呢？" / "what about order-service?" (nothing but names and a "what about"): the previous
  question again, about the new names ("order-service 宕机会影响哪些服务？");
- a pronoun (它, 其, 该服务, it, its, they): it is replaced by the subject ("redis-cluster 的端口呢？");
- a follow-up naming nothing of its own: the subject is put in front of it;
- anything else is searched as asked. Only user questions are read: an answer's text is the knowledge
  base's own words and carries no subject the user chose.
With a model the rewrite call sees the last turns (`conversation_text`, bounded in tokens) and writes the
standalone question itself (`retrieval.answer.rewrite.parse_standalone`); these rules are its fallback.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from kg.errors import InputError
from retrieval.answer.llm import char_tokens, estimate_tokens
from retrieval.answer.terms import identifiers
from retrieval.index.analysis import normalize_text

__all__ = ["HISTORY_TOKENS", "MAX_HISTORY_MESSAGES", "MAX_MESSAGE_CHARS", "Standalone", "Turn", "conversation_text",
           "history_turns", "names_in", "own_words", "standalone_question", "subject_of"]

MAX_HISTORY_MESSAGES = 12  # six turns of question and answer (the web page sends its last three)
# A message, as long as a question may be. Bounds a schema can state (a total could not be): whatever the OpenAPI
# spec lets through is accepted. The prompt never sees more than HISTORY_TOKENS of it anyway.
MAX_MESSAGE_CHARS = 4000
HISTORY_TOKENS = 400  # of the conversation in the rewrite prompt (the rewrite's whole prompt stays far below ~1,500)
ROLES = ("user", "assistant")

Names = Callable[[str], Sequence[str]]  # the entity surfaces a text links, in text order

# Chinese pronouns and "this/that <thing>" (a classifier or a noun after it is part of the reference);
# 应该, 因此, 其他, 其中, 尤其 are not references.
_THING = r"(?:服务|系统|组件|设备|集群|网关|数据库|库|主机|节点|参数|配置|文档|手册|团队|组)?"
_PRONOUN_ZH = re.compile(rf"它们的|它的|它们|它|(?<![尤极与])其(?![他它中实余次])|(?<!应)该{_THING}|[这那](?:个|台|套|种){_THING}")
_PRONOUN_EN = re.compile(r"\b(?:it|its|they|them|their|this one|that one)\b", re.IGNORECASE)
_AND = re.compile(r"\s*(?:和|与|及|以及|跟|、|,|，|/|&|and|or|或)?\s*", re.IGNORECASE)
# A follow-up that names nothing and has no pronoun is read with the conversation's subject only when it is elliptic:
# it starts or ends like one ("那…", "还有…", "…呢", "and …", "what about …") or is a few words ("部署了多少台？").
_ELLIPTIC = re.compile(r"^\s*(?:那么|那|还有|另外|再|and\b|also\b|what about\b|how about\b|then\b)|呢\s*[?？]?\s*$", re.IGNORECASE)
ELLIPTIC_CHARS = 6  # a Chinese follow-up of at most this many characters (punctuation not counted)
ELLIPTIC_WORDS = 3  # an English one of at most this many words
# What a "what about X?" follow-up holds besides its names.
_WHAT_ABOUT = re.compile(r"那么|那|还有|呢|吗|\b(?:and|what|about|how|then|also|for)\b|[\s?？,，.。!！:：、]", re.IGNORECASE)


@dataclass(frozen=True)
class Turn:
    """One earlier message of the conversation."""

    role: str  # "user" or "assistant"
    content: str


@dataclass(frozen=True)
class Standalone:
    """The question as searched: `question`, and how the conversation made it so (`how` is empty when it did not)."""

    question: str
    carried: tuple[str, ...] = ()
    how: str = ""


def history_turns(history: Iterable | None) -> tuple[Turn, ...]:
    """[{role, content}, ...] (dicts or objects with those attributes) -> Turns, validated against the bounds;
    InputError saying what to send instead."""
    turns: list[Turn] = []
    for i, message in enumerate(history or ()):
        get = message.get if isinstance(message, Mapping) else lambda key, m=message: getattr(m, key, None)
        role, content = get("role"), get("content")
        if role not in ROLES:
            raise InputError(f"history[{i}].role is {role!r}: a history message is {{\"role\": \"user\" or "
                             f"\"assistant\", \"content\": \"...\"}} (put instructions in no message; they are not read)")
        if not isinstance(content, str):
            raise InputError(f"history[{i}].content must be text, got {type(content).__name__}")
        if len(content) > MAX_MESSAGE_CHARS:
            raise InputError(f"history[{i}].content has {len(content)} characters; send at most {MAX_MESSAGE_CHARS} "
                             "a message (an answer's start is enough)")
        turns.append(Turn(role, " ".join(content.split())))
    if len(turns) > MAX_HISTORY_MESSAGES:
        raise InputError(f"history has {len(turns)} messages; send at most {MAX_HISTORY_MESSAGES} (the last turns)")
    return tuple(t for t in turns if t.content)


def _spans(text: str, names: Names | None) -> list[tuple[int, int, str]]:
    """The names a text gives, as written and where: its linked entities' surfaces and its identifiers not inside one."""
    spans: list[tuple[int, int, str]] = []
    for surface in dict.fromkeys(names(text) if names else ()):
        at = text.find(surface)
        if at >= 0:
            spans.append((at, at + len(surface), surface))
    for name in identifiers(text):
        match = re.search(rf"(?<![0-9A-Za-z]){re.escape(name)}(?![0-9A-Za-z])", text, re.IGNORECASE)
        if match and not any(s <= match.start() < e for s, e, _ in spans):
            spans.append((match.start(), match.end(), match.group()))
    return sorted(spans)


def names_in(text: str, names: Names | None) -> list[str]:
    """The names a text gives, as written, in their order."""
    return [surface for _s, _e, surface in _spans(normalize_text(text), names)]


def subject_of(text: str, names: Names | None) -> list[str]:
    """What a question is about: its first name and the names joined to it ("order-service 和 payment-service 的端口");
    not the names it asks about after it ("LORA-02 的心跳间隔": LORA-02)."""
    norm = normalize_text(text)
    spans = _spans(norm, names)
    subject, end = [], None
    for start, stop, surface in spans:
        if end is not None and not _AND.fullmatch(norm[end:start]):
            break
        subject.append(surface)
        end = stop
    return subject


def _joined(subject: Sequence[str], language: str) -> str:
    return ("、" if language == "zh" else " and ").join(subject)


def _spaced(text: str) -> str:
    return re.sub(r"\s+([?？,，.。!！])", r"\1", " ".join(text.split()))


def _cut(text: str, tokens: int) -> str:
    """The start of `text` within about `tokens` (the measure of `estimate_tokens`)."""
    used = 0.0
    for i, ch in enumerate(text):
        used += char_tokens(ch)
        if used > tokens:
            return text[:i].rstrip()
    return text


def _resolve(question: str, subject: list[str], before: str, names: Names | None, language: str) -> Standalone:
    own = names_in(question, names)
    if not subject and not before:
        return Standalone(question)
    if own and not _WHAT_ABOUT.sub("", _strip(question, own)):
        # "那 order-service 呢？": the question before, about the new names
        who = _joined(own, language)
        if subject and subject[0] in before:
            asked = before.replace(subject[0], who, 1)
            for other in subject[1:]:
                asked = asked.replace(other, "")
        else:
            asked = f"{who} {before}"
        return Standalone(_spaced(asked), tuple(own), f"the previous question asked about {who}")
    if not subject or set(f.lower() for f in subject) <= set(o.lower() for o in own):
        return Standalone(question)
    who = _joined(subject, language)
    pronoun = (_PRONOUN_ZH if language == "zh" else _PRONOUN_EN).search(question) or \
        _PRONOUN_EN.search(question) or _PRONOUN_ZH.search(question)
    if pronoun:
        said = pronoun.group()
        reference = f" {who}'s " if said.lower() in ("its", "their") else f" {who} "
        if said.endswith("的") or said == "其":
            reference = f" {who} 的"
        asked = question[: pronoun.start()] + reference + question[pronoun.end():]
        return Standalone(_spaced(asked), tuple(subject), f"'{said}' read as {who}")
    if not own and _elliptic(question):
        return Standalone(_spaced(f"{who} {question}"), tuple(subject), f"it names nothing itself: {who} carried over")
    return Standalone(question)


def _elliptic(question: str) -> bool:
    if _ELLIPTIC.search(question):
        return True
    plain = re.sub(r"[\s?？,，.。!！:：、]", "", question)
    if re.search(r"[\u3400-\u9fff]", plain):
        return len(plain) <= ELLIPTIC_CHARS
    return len(re.findall(r"[A-Za-z0-9][\w\-.]*", question)) <= ELLIPTIC_WORDS


def _strip(text: str, names: Sequence[str]) -> str:
    norm = normalize_text(text)
    for name in sorted(names, key=len, reverse=True):
        norm = re.sub(re.escape(name), " ", norm, flags=re.IGNORECASE)
    return norm


def standalone_question(question: str, history: Sequence[Turn], names: Names | None, language: str) -> Standalone:
    """The follow-up `question` as a question that stands alone, resolved by rules against the earlier user questions."""
    subject: list[str] = []
    before = ""
    for turn in history:
        if turn.role != "user":
            continue
        resolved = _resolve(turn.content, subject, before, names, language).question
        subject, before = (subject_of(resolved, names) or subject), resolved
    resolved = _resolve(question, subject, before, names, language)
    if resolved.how:
        return Standalone(resolved.question, resolved.carried, f"{resolved.how} from the conversation")
    return resolved


def own_words(question: str) -> str:
    """The follow-up as asked without its pronouns: the words the answer must hold besides the carried subject."""
    return _PRONOUN_EN.sub(" ", _PRONOUN_ZH.sub(" ", question))


def conversation_text(history: Sequence[Turn], budget: int = HISTORY_TOKENS) -> str:
    """The last turns, newest kept first, within `budget` estimated tokens: "user: ..." / "assistant: ..." lines,
    an answer cut to its start and its citation numbers dropped (the model needs what was talked about, not the proof)."""
    lines: list[str] = []
    left = budget
    for turn in reversed(history):
        text = re.sub(r"\[(?:\d+|R\d+|未知|unknown)\]", "", turn.content) if turn.role == "assistant" else turn.content
        share = min(left, 120 if turn.role == "assistant" else 200)
        if share <= 8:
            break
        if estimate_tokens(text) > share:
            text = _cut(text, share - 2) + " …"
        left -= estimate_tokens(text) + 3
        lines.append(f"{turn.role}: {text}")
    return "\n".join(reversed(lines))
