"""A question + the registry rows and cards in -> the packs an LLM chooses (through litellm, structured JSON), validated and capped at two; any failure -> None (the rules decide).

litellm is imported on first use only (6 s, 220 MB; `retrieval.answer.llm.load_litellm`), with its cost map read locally and no retries:
an OpenAI-compatible endpoint that is down must fail in a fraction of a second, not in 6000 s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, Field, ValidationError

from retrieval.packs.card import PackCard
from retrieval.packs.registry import RegistryRow
from retrieval.packs.routing import MAX_PACKS, NO_BASIS, PackChoice, Routing

__all__ = ["LlmRouter", "choose_packs"]

# Two packs with a short reason each fit in ~80 tokens; without a bound a model that loops writes until its context
# is full (minutes on a CPU) on every routed query.
MAX_TOKENS = 200


class _Pick(BaseModel):
    id: str
    why: str = ""


class _Choice(BaseModel):
    packs: list[_Pick] = Field(default_factory=list)
    out_of_scope: bool = False


@dataclass(frozen=True)
class LlmRouter:
    model: str
    timeout: float = 20.0
    api_base: str | None = None
    mock_response: str | None = None  # litellm's own stand-in for a model (tests, offline demos)
    api_key: str | None = None  # `kg.endpoint.endpoint_key`'s: without it a local server without a key was never asked


def _prompt(question: str, cards: Mapping[str, PackCard], rows: Sequence[RegistryRow]) -> str:
    lines = ["Choose the knowledge packs to search for the question. Packs:"]
    for pack, card in cards.items():
        intents = [r.text() for r in rows if r.pack == pack]
        lines.append(f"- id: {pack}; title: {card.title}; covers: {'; '.join(card.covers) or '-'}; "
                     f"does not cover: {'; '.join(card.does_not_cover) or '-'}; registry: {' | '.join(intents) or '-'}")
    lines += [
        f"Question: {question}",
        'Answer with JSON only: {"packs": [{"id": "<pack id>", "why": "<short reason>"}], "out_of_scope": false}.',
        f"Choose at most {MAX_PACKS} packs, best first. If no pack can answer it, give no packs and out_of_scope true.",
    ]
    return "\n".join(lines)


def _schema(ids: Sequence[str]) -> dict:
    """The reply's JSON schema, the pack ids as an enum: a server that enforces it (llama.cpp, vLLM, OpenAI) can only
    name a pack that exists. SmolLM2 asked with `json_object` alone wrote `{"id": "vendor;title;title;…` to the limit."""
    pick = {"type": "object", "properties": {"id": {"type": "string", "enum": list(ids)},
                                             "why": {"type": "string", "maxLength": 120}},
            "required": ["id", "why"], "additionalProperties": False}
    return {"type": "object", "properties": {"packs": {"type": "array", "items": pick, "maxItems": MAX_PACKS},
                                             "out_of_scope": {"type": "boolean"}},
            "required": ["packs", "out_of_scope"], "additionalProperties": False}


def choose_packs(router: LlmRouter, question: str, cards: Mapping[str, PackCard], rows: Sequence[RegistryRow],
                 scores: Mapping[str, float]) -> Routing | None:
    """The LLM's routing, or None when it cannot be used (no answer, not JSON, no known pack)."""
    # litellm loaded as every caller of the model loads it (retrieval.vectors too)
    from retrieval.answer.llm import load_litellm

    litellm = load_litellm()
    extra = {"api_base": router.api_base} if router.api_base else {}
    if router.api_key:
        extra["api_key"] = router.api_key
    if router.mock_response is not None:
        extra["mock_response"] = router.mock_response
    ask = {"model": router.model, "messages": [{"role": "user", "content": _prompt(question, cards, rows)}],
           "temperature": 0, "timeout": router.timeout, "max_retries": 0, "max_tokens": MAX_TOKENS, **extra}
    schema = {"type": "json_schema", "json_schema": {"name": "route", "schema": _schema(list(cards)), "strict": True}}
    try:
        try:
            response = litellm.completion(response_format=schema, **ask)
        except Exception as exc:  # noqa: BLE001
            if getattr(exc, "status_code", None) not in (400, 422):
                raise
            response = litellm.completion(response_format={"type": "json_object"}, **ask)  # no json_schema there
        content = response.choices[0].message.content or ""
    except Exception:  # noqa: BLE001 - any provider failure (connection, timeout, auth, bad request) means: use the rules
        return None
    try:
        choice = _Choice.model_validate(json.loads(_strip_fence(content)))
    except (json.JSONDecodeError, ValidationError):
        return None
    if choice.out_of_scope and not choice.packs:
        return Routing(chosen=[], scores=dict(scores), path="llm", out_of_scope=f"{NO_BASIS}: the model found no pack for it")
    picked: list[PackChoice] = []
    dropped: list[str] = []
    for pick in choice.packs:
        if pick.id in cards and pick.id not in [p.id for p in picked]:
            picked.append(PackChoice(pick.id, scores.get(pick.id, 0.0), f"chosen by the model: {pick.why or 'no reason given'}"))
        elif pick.id not in cards:
            dropped.append(pick.id)
    if not picked:
        return None
    notes = []
    if len(picked) > MAX_PACKS:
        notes.append(f"the model asked for {len(picked)} packs; searched the first {MAX_PACKS}")
    if dropped:
        notes.append(f"ignored unknown pack(s) {', '.join(dropped)}")
    return Routing(chosen=picked[:MAX_PACKS], scores=dict(scores), path="llm", note="; ".join(notes))


def _strip_fence(text: str) -> str:
    """Models often wrap JSON in a ```json fence despite being asked not to."""
    text = text.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    return text
