"""A loopback-only stand-in for an OpenAI-compatible chat completions server.

It binds 127.0.0.1 on a free port, answers `POST /v1/chat/completions` in the
documented response shape, and follows a script of per-request behaviours so a
test can provoke rate limits, server errors, slow replies and auth failures.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    status: int = 200
    content: str = "ok"
    headers: dict = field(default_factory=dict)
    delay: float = 0.0
    error: str = "error"
    body: dict | None = None  # a whole response body sent as is (malformed replies)


class FakeOpenAI:
    """`script` is consumed one entry per request; when it runs out, `answer(body)`
    (default: echo the last user message) gives a 200 reply."""

    def __init__(
        self, answer: Callable[[dict], str] | None = None, *, cached_tokens: int | None = None
    ):
        self.script: list[Reply] = []
        # with a number: usage says that many prompt tokens were read from the cache
        # (`prompt_tokens_details.cached_tokens`, a part of `prompt_tokens`)
        self.cached_tokens = cached_tokens
        self.requests: list[dict] = []
        self.answer = answer or (lambda body: body["messages"][-1]["content"])
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with outer._lock:
                    outer.requests.append(
                        {
                            "path": self.path,
                            "body": body,
                            "auth": self.headers.get("authorization"),
                            "headers": dict(self.headers),
                        }
                    )
                    reply = outer.script.pop(0) if outer.script else None
                if reply is None:
                    reply = Reply(content=outer.answer(body))
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.body is not None:
                    payload = reply.body
                elif reply.status == 200:
                    payload = {
                        "id": f"chatcmpl-{len(outer.requests)}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model", "x"),
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": reply.content},
                            }
                        ],
                        "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
                    }
                    if outer.cached_tokens is not None:
                        payload["usage"]["prompt_tokens_details"] = {
                            "cached_tokens": outer.cached_tokens
                        }
                else:
                    payload = {
                        "error": {"message": reply.error, "type": "fake", "code": reply.status}
                    }
                data = json.dumps(payload).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        # a short poll: closing the stand-in (`shutdown`) waits for one poll at most
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/v1"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
