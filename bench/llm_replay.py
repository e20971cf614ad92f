"""A model's replies kept by their prompt and given again: a change after the model's answer (what the loop adds to or
checks in it) is re-measured on the same replies in minutes, not in another 45-minute run of a model on a CPU.

    python bench/answers.py --model-run --serve qwen2.5-coder-1.5b --llm-replay FILE   # records each reply in FILE
    python bench/answers.py --model-run --llm-replay FILE --replay-only                 # gives them again, no server

A reply is keyed by everything the call sends (task, messages, schema, max_tokens), so a change that alters a prompt
(another passage ranked first, another rewrite) misses the file: with --replay-only that call fails as an unreachable
model would (the loop falls back to the rules, and the run counts how many missed), else it goes to the model and is
recorded. Replayed rows carry no server CPU, and their wall times are the loop's own: a table from a replay says so in
its label, and its latency columns are not the model's.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from retrieval.answer import LlmClient
from retrieval.answer.llm import LlmUnavailable

__all__ = ["ReplayBook", "ReplayClient"]

_PIECE = 3


def _key(task: str, messages: list[dict], schema: dict | None, max_tokens: int | None) -> str:
    sent = json.dumps([task, messages, schema, max_tokens], ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(sent.encode("utf-8")).hexdigest()


class ReplayBook:
    """The replies of one file (JSON lines: key, task, reply), appended to as calls are recorded."""

    def __init__(self, path: Path, replay_only: bool = False) -> None:
        self.path, self.replay_only = path, replay_only
        self.replies: dict[str, str] = {}
        self.hits = self.misses = 0
        self._lock = threading.Lock()
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    self.replies[row["key"]] = row["reply"]

    def get(self, key: str) -> str | None:
        with self._lock:
            reply = self.replies.get(key)
            if reply is None:
                self.misses += 1
            else:
                self.hits += 1
            return reply

    def add(self, key: str, task: str, reply: str) -> None:
        with self._lock:
            self.replies[key] = reply
            with self.path.open("a", encoding="utf-8") as out:
                out.write(json.dumps({"key": key, "task": task, "reply": reply}, ensure_ascii=False) + "\n")


@dataclass
class ReplayClient(LlmClient):
    """An `LlmClient` that answers from a `ReplayBook` where it can, and records what the model says where it cannot."""

    book: ReplayBook | None = field(default=None, repr=False)

    def _replayed(self, task: str, messages: list[dict], schema, max_tokens) -> tuple[str, str | None]:
        key = _key(task, messages, schema, max_tokens)
        reply = self.book.get(key) if self.book else None
        if reply is None and not (self.book and self.book.replay_only):
            return key, None  # the model is asked (and counts the call itself)
        self.calls += 1
        self.tasks.append(task)
        if reply is None:
            raise LlmUnavailable(f"no recorded reply for this {task} prompt (--replay-only)")
        self.usage.append({"task": task, "prompt_tokens": 0, "completion_tokens": 0, "ms": 0.0, "estimated": True,
                           "replayed": True})
        return key, reply

    def complete(self, task: str, messages: list[dict], *, max_tokens: int | None = None, schema: dict | None = None) -> str:
        key, reply = self._replayed(task, messages, schema, max_tokens)
        if reply is not None:
            return reply
        reply = super().complete(task, messages, max_tokens=max_tokens, schema=schema)
        if self.book:
            self.book.add(key, task, reply)
        return reply

    def stream(self, task: str, messages: list[dict], *, max_tokens: int | None = None) -> Iterator[str]:
        key, reply = self._replayed(task, messages, None, max_tokens)
        if reply is not None:
            for at in range(0, len(reply), _PIECE):  # pieces of about a token's length, as a server streams them
                yield reply[at: at + _PIECE]
            return
        written = []
        for piece in super().stream(task, messages, max_tokens=max_tokens):
            written.append(piece)
            yield piece
        if self.book:
            self.book.add(key, task, "".join(written))
