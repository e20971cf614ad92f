"""A local OpenAI-compatible chat endpoint for the answer tests: litellm talks to it over real HTTP on 127.0.0.1.

It recognises the three tasks kgrag sends by their system message (judge, rewrite, answer) and
answers each the way the test asks: a reply string or a function of the request, an HTTP status,
a delay (to make the client time out), streamed or not. Every request body is kept for checks.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Reply = str | Callable[[dict], str]


def task_of(body: dict) -> str:
    """The task, by its instructions: the judge's and the answer's come last in the user message (after the
    passages they share), the rewrite's in the system message."""
    system = next((m["content"] for m in body.get("messages", []) if m.get("role") == "system"), "")
    user = next((m["content"] for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
    if "You rewrite a user's" in system:  # keyword queries, or a follow-up written out
        return "rewrite"
    if "Task: decide whether the passages" in user.rsplit("</question>", 1)[-1]:
        return "judge"
    return "answer"


def passages_of(body: dict) -> dict[int, str]:
    user = next((m["content"] for m in body.get("messages", []) if m.get("role") == "user"), "")
    return {int(n): text for n, text in re.findall(r'<passage n="(\d+)"[^>]*>\n(.*?)\n</passage>', user, re.DOTALL)}


def cite_passage_with(word: str, sentence: str) -> Callable[[dict], str]:
    """An answer citing the passage that contains `word` (its number depends on the ranking)."""
    def reply(body: dict) -> str:
        n = next((n for n, text in passages_of(body).items() if word in text), 1)
        return sentence.format(n=n)
    return reply


class FakeLLM:
    def __init__(self) -> None:
        self.replies: dict[str, Reply] = {"judge": '{"sufficient": true, "missing": "", "followup_query": ""}',
                                          "rewrite": "1. LORA-02 心跳间隔\n2. 心跳 离线 判定", "answer": "OK [1]"}
        self.status = 200
        self.finish = "stop"  # "length": the reply stopped at max_tokens
        self.delay = 0.0
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with fake._lock:
                    fake.requests.append(body)
                if fake.delay:
                    time.sleep(fake.delay)
                if fake.status != 200:
                    self._send(fake.status, {"error": {"message": "boom", "type": "server_error"}})
                    return
                reply = fake.replies[task_of(body)]
                text = reply(body) if callable(reply) else reply
                if body.get("stream"):
                    self._stream(body, text)
                else:
                    self._send(200, {"id": "c1", "object": "chat.completion", "created": 0, "model": body.get("model"),
                                     "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                                  "finish_reason": fake.finish}],
                                     "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

            def _send(self, status: int, data: dict) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _stream(self, body: dict, text: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                pieces = [text[i : i + 4] for i in range(0, len(text), 4)] or [""]
                for piece in pieces:
                    chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": body.get("model"),
                             "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                end = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": body.get("model"),
                       "choices": [{"index": 0, "delta": {}, "finish_reason": fake.finish}]}
                self.wfile.write(f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode())
                self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def tasks(self) -> list[str]:
        return [task_of(b) for b in self.requests]

    def __enter__(self) -> FakeLLM:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
