"""POST /ask: a question in, the answer record out (the same JSON as `kg ask --json`), or Server-Sent Events when asked to stream."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Literal

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator

from api.deps import knowledge_base
from api.guards import bound_question
from api.schemas import AS_OF_PATTERN, Text, json_integer
from kg.errors import KgError
from retrieval.answer.history import MAX_HISTORY_MESSAGES, MAX_MESSAGE_CHARS

# A streamed answer is Server-Sent Events: the spec lists it beside the JSON record.
STREAM_RESPONSE: dict = {200: {"content": {"text/event-stream": {"schema": {"description": "one JSON object an event"}}}}}

router = APIRouter()


class HistoryMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Literal["user", "assistant"] = Field(..., description="user: an earlier question; assistant: its answer.")
    content: Text = Field(..., max_length=MAX_MESSAGE_CHARS, description="The message's text (an empty answer is ignored).")


class AskIn(BaseModel):
    question: Text = Field(..., min_length=1, max_length=4000, description="The question.")
    k: int | None = Field(None, ge=1, le=20, description="Passages numbered and given to the answer (default KG_ANSWER_PASSAGES).")
    mode: str = Field("full", pattern="^(full|bm25|graph)$", description="full, bm25 (text only) or graph only.")
    as_of: str | None = Field(None, pattern=AS_OF_PATTERN, description="Search the document versions in force on this date (YYYY-MM-DD, YYYY-MM or YYYY).")
    packs: list[Text] | None = Field(None, description="Search only inside these packs.")
    stream: bool = Field(False, strict=True, description="Stream Server-Sent Events: round, delta (answer text), answer (the record).")
    history: list[HistoryMessage] | None = Field(
        None, max_length=MAX_HISTORY_MESSAGES,
        description=f"The conversation before this question, oldest first: a follow-up (\"它的端口呢？\", \"and who owns it?\") "
                    f"is searched as a standalone question made with it. At most {MAX_HISTORY_MESSAGES} messages of "
                    f"at most {MAX_MESSAGE_CHARS} characters each.",
    )

    @field_validator("k", mode="before")
    @classmethod
    def _k_is_a_json_integer(cls, value):
        return value if value is None else json_integer(value)


def sse(event: str, data) -> str:
    """One Server-Sent Event; the data is one line of JSON."""
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def answer_events(events: Iterator) -> Iterator[str]:
    try:
        for kind, value in events:
            if kind == "round":
                yield sse("round", value.to_json())
            elif kind == "delta":
                yield sse("delta", {"text": value})
            else:
                yield sse("answer", value.to_json())
    except KgError as exc:  # after the 200 has been sent an error can only be an event
        yield sse("error", exc.to_json()["error"])


@router.post("/ask", summary="A cited answer (SSE when stream is true or Accept is text/event-stream)", responses=STREAM_RESPONSE)
def ask(body: AskIn, request: Request, kb=Depends(knowledge_base)):  # noqa: B008 - FastAPI idiom
    bound_question(body.question, kb.settings, "question")
    streaming = body.stream or "text/event-stream" in request.headers.get("accept", "")
    history = [m.model_dump() for m in body.history] if body.history else None
    result = kb.ask(body.question, k=body.k, mode=body.mode, as_of=body.as_of, packs=body.packs, history=history,
                    stream=streaming)
    if not streaming:
        return result.to_json()
    return StreamingResponse(answer_events(result), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
