"""POST /v1/chat/completions (and GET /v1/models): the knowledge base as an OpenAI-compatible chat model, cited answers included.

The last user message is the question; the user and assistant messages before it are its conversation
(`POST /ask`'s `history`: a follow-up is searched as a standalone question; the latest messages within
its bounds are kept, older ones dropped, a long one cut, and kgrag's own "Sources:" lines are cut from earlier answers;
system and tool messages are not read). The reply's content is the
checked answer followed by its sources; the same citations come as structured data in the extra
`citations` field and the whole answer record in `kgrag`. The `model` a client asks for is echoed
back but never chooses the model kgrag calls: that is KG_LLM_MODEL alone.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from typing import Annotated, Literal

from fastapi import APIRouter, Depends
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from api.deps import knowledge_base
from api.guards import bound_question
from api.schemas import NON_BLANK, Text
from kg.errors import InputError, KgError
from retrieval.answer.history import MAX_HISTORY_MESSAGES, MAX_MESSAGE_CHARS

# A streamed answer is Server-Sent Events: the spec lists it beside the JSON record.
STREAM_RESPONSE: dict = {200: {"content": {"text/event-stream": {"schema": {"description": "one JSON object an event"}}}}}

router = APIRouter(prefix="/v1")
MODEL_ID = "kgrag"


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="allow")  # image parts and the like are accepted and ignored
    type: str
    text: Text | None = None


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: Annotated[str, Field(min_length=1, pattern=NON_BLANK)] | Annotated[list[ContentPart], Field(min_length=1)] | None = None


# The question is the last user message: the spec says a request carries one, so that clients and
# schema-driven tests know a request without it is refused (400), not merely unanswered.
_HAS_USER_MESSAGE = {"contains": {
    "type": "object", "required": ["role", "content"],
    "properties": {"role": {"const": "user"}, "content": {"type": "string", "minLength": 1, "pattern": NON_BLANK}},
}}


class ChatIn(BaseModel):
    model_config = ConfigDict(extra="allow")  # temperature, top_p, user ...: accepted and ignored
    model: Text = Field(MODEL_ID, description="Echoed back; the model kgrag calls is KG_LLM_MODEL.")
    messages: list[ChatMessage] = Field(..., min_length=1, json_schema_extra=_HAS_USER_MESSAGE)
    stream: bool = Field(False, strict=True)


def _text(message: ChatMessage) -> str:
    content = message.content
    if isinstance(content, list):  # [{"type": "text", "text": "..."}, ...]
        content = " ".join(part.text for part in content if part.type == "text" and part.text)
    return content.strip() if isinstance(content, str) else ""


def question_of(messages: list[ChatMessage]) -> str:
    return conversation_of(messages)[0]


def _without_sources(answer: str) -> str:
    """An earlier answer of ours as the client keeps it: its sources list (`content_of`) is no part of what was said."""
    return re.split(r"\n\n(?:来源|Sources):\n", answer, maxsplit=1)[0]


def conversation_of(messages: list[ChatMessage]) -> tuple[str, list[dict]]:
    """The question (the last user message with text) and the conversation before it as `history`: its user and
    assistant messages, the latest MAX_HISTORY_MESSAGES, each cut to MAX_MESSAGE_CHARS (a chat client sends the
    whole conversation every time: what is over the bounds is dropped rather than refused)."""
    for last in range(len(messages) - 1, -1, -1):
        if messages[last].role == "user" and _text(messages[last]):
            break
    else:
        raise InputError("no user message with text: put the question in a message with \"role\": \"user\"")
    history: list[dict] = []
    for message in reversed(messages[:last]):
        if len(history) == MAX_HISTORY_MESSAGES:
            break
        text = _text(message) if message.role in ("user", "assistant") else ""
        text = " ".join((_without_sources(text) if message.role == "assistant" else text).split())
        if text:
            history.append({"role": message.role, "content": text[:MAX_MESSAGE_CHARS]})
    return _text(messages[last]), history[::-1]


def content_of(answer) -> str:
    sources = answer.sources_text()
    return f"{answer.answer}\n\n{'来源' if answer.language == 'zh' else 'Sources'}:\n{sources}" if sources else answer.answer


def _usage() -> dict:
    return {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


@router.get("/models", summary="The one model this endpoint serves")
def models() -> dict:
    return {"object": "list", "data": [{"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "kgrag"}]}


@router.post("/chat/completions", summary="OpenAI-compatible chat completion over the knowledge base", responses=STREAM_RESPONSE)
def chat_completions(body: ChatIn, kb=Depends(knowledge_base)):  # noqa: B008 - FastAPI idiom
    question, history = conversation_of(body.messages)
    bound_question(question, kb.settings, "messages")
    ident, created = f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time())
    if not body.stream:
        answer = kb.ask(question, history=history)
        return {
            "id": ident, "object": "chat.completion", "created": created, "model": body.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content_of(answer)}, "finish_reason": "stop"}],
            "usage": _usage(),
            "citations": [c.to_json() for c in answer.citations],
            "kgrag": answer.to_json(),
        }
    events = kb.ask(question, history=history, stream=True)
    return StreamingResponse(_chunks(events, ident, created, body.model), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def _chunk(ident: str, created: int, model: str, delta: dict, finish: str | None = None, **extra) -> str:
    data = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


def _chunks(events: Iterator, ident: str, created: int, model: str) -> Iterator[str]:
    """The answer text as it is written; then, when the citations were checked and changed it, the checked
    answer is not re-sent (a stream cannot take text back) but the final chunk carries it in `kgrag`."""
    yield _chunk(ident, created, model, {"role": "assistant", "content": ""})
    try:
        for kind, value in events:
            if kind == "delta":
                yield _chunk(ident, created, model, {"content": value})
            elif kind == "answer":
                sources = value.sources_text()
                if sources:
                    label = "来源" if value.language == "zh" else "Sources"
                    yield _chunk(ident, created, model, {"content": f"\n\n{label}:\n{sources}"})
                yield _chunk(ident, created, model, {}, "stop", citations=[c.to_json() for c in value.citations],
                             kgrag=value.to_json())
    except KgError as exc:
        yield _chunk(ident, created, model, {"content": f"\n\nerror: {exc}"}, "stop")
    yield "data: [DONE]\n\n"
