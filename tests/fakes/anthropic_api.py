"""A loopback-only stand-in for the Anthropic Messages API, good enough for the
real Claude Code CLI (`claude -p`) to run whole agent sessions against it.

Point the CLI at it with `ANTHROPIC_BASE_URL=<api.url>` and any
`ANTHROPIC_API_KEY`. It binds 127.0.0.1 on a free port and imitates:

- `POST /v1/messages` (the CLI adds `?beta=true`): a Message, streamed as
  server-sent events when the body says `"stream": true` (message_start, ping,
  content_block_start, content_block_delta with text_delta / input_json_delta,
  content_block_stop, message_delta with stop_reason and usage, message_stop),
  else one JSON object;
- `POST /v1/messages/count_tokens`: `{"input_tokens": n}`;
- `GET /v1/models` and `GET /v1/models/<id>`: a model list / one model;
- `HEAD /` or `GET /`: the CLI's connectivity probe, 200 with `{}`;
- anything else: 404 in Anthropic's error shape.

The main conversation's requests (those offering tools) are answered by
`responder(body) -> Turn`. The CLI's own side requests (no tools: the session
title, which asks for JSON through `output_config.format`) are answered by
`side_responder(body)`. Usage is deterministic (from the sizes of the request and
the reply) and recorded with each request, so a test can compare it with the
usage and cost the CLI reports.

With `cache=True` it imitates prompt caching as the API does it: a `system` given
as blocks, one of which carries `cache_control`, has its prefix up to that block
cached. The first request with a prefix reports those tokens as
`cache_creation_input_tokens`, every later one with the same prefix as
`cache_read_input_tokens`; `input_tokens` counts the rest of the request. An
unmarked system prompt is never cached. (The API also ignores a marker on a prefix
below the model's minimum; the fake does not check that.)
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODELS = ("claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805", "claude-haiku-4-5-20251001")
SKILL_LISTING = "The following skills are available for use with the Skill tool:"
SKILL_LOADED = "Base directory for this skill: "

# Anthropic's error type and a message for each status the API documents
ERRORS = {
    400: ("invalid_request_error", "invalid request"),
    401: ("authentication_error", "invalid x-api-key"),
    402: ("billing_error", "your credit balance is too low"),
    403: ("permission_error", "your API key does not have permission"),
    404: ("not_found_error", "not found"),
    413: ("request_too_large", "request exceeds the maximum allowed size"),
    429: ("rate_limit_error", "rate limit exceeded"),
    500: ("api_error", "internal server error"),
    529: ("overloaded_error", "overloaded"),
}

_ids = itertools.count(1)


@dataclass(frozen=True)
class Turn:
    """One reply of the fake: content blocks and a stop reason, an HTTP error,
    or a hang (no answer until the fake is closed)."""

    blocks: tuple[dict, ...] = ()
    stop_reason: str = "end_turn"
    status: int = 200
    error_type: str = ""
    message: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    hangs: bool = False
    usage: dict[str, int] | None = None  # replaces the computed usage
    body: dict | None = None  # a whole 200 response body sent as is (malformed replies)

    @staticmethod
    def text(text: str) -> Turn:
        """The assistant says `text` and ends its turn."""
        return Turn(blocks=({"type": "text", "text": text},))

    @staticmethod
    def tool_use(name: str, input: dict, text: str | None = None) -> Turn:
        """The assistant calls tool `name` with `input` (a fresh `toolu_` id),
        saying `text` first if given."""
        call = {
            "type": "tool_use",
            "id": f"toolu_fake{next(_ids):08d}",
            "name": name,
            "input": input,
        }
        lead = ({"type": "text", "text": text},) if text else ()
        return Turn(blocks=(*lead, call), stop_reason="tool_use")

    @staticmethod
    def error(
        status: int,
        type: str | None = None,
        message: str | None = None,
        headers: dict[str, str] | None = None,
        retry: bool | None = None,
    ) -> Turn:
        """An HTTP error in Anthropic's shape `{"type": "error", "error": {"type",
        "message"}}`; type and message default to the API's for `status` (401:
        authentication_error "invalid x-api-key"). `retry=False` sends
        `x-should-retry: false`, which makes the CLI give up at once instead of
        retrying (10 times over about three minutes by default)."""
        default_type, default_message = ERRORS.get(status, ("api_error", "error"))
        extra = dict(headers or {})
        if retry is not None:
            extra["x-should-retry"] = "true" if retry else "false"
        return Turn(
            status=status,
            error_type=type or default_type,
            message=message or default_message,
            headers=extra,
        )

    @staticmethod
    def raw(body: dict) -> Turn:
        """A 200 whose body is `body` as it is (a reply that is no Message)."""
        return Turn(body=body)

    @staticmethod
    def hang() -> Turn:
        """No answer at all: the request waits until the fake is closed, then its
        connection closes unanswered."""
        return Turn(hangs=True)


Responder = Callable[[dict], Turn]


# ------------------------------------------------------------ body helpers
def _blocks(content) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _block_text(block: dict) -> str:
    """The text of a text, tool_result or tool_use block (nested content flattened)."""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_result":
        return "\n".join(_block_text(b) for b in _blocks(block.get("content")))
    if kind == "tool_use":
        return json.dumps(block.get("input", {}), ensure_ascii=False)
    return ""


def _texts(body: dict) -> list[str]:
    """The text of every block of every message (system-role messages included:
    the CLI sends its skill listing as one)."""
    return [_block_text(b) for m in body.get("messages") or [] for b in _blocks(m.get("content"))]


def system_text(body: dict) -> str:
    """The system prompt, whether a string or a list of text blocks."""
    return "\n".join(_block_text(b) for b in _blocks(body.get("system")))


def all_text(body: dict) -> str:
    """The system prompt and every message's text, tool inputs and tool results,
    flattened: where to search for leaked markers."""
    return "\n".join([system_text(body), *_texts(body)])


def has_tool(body: dict, name: str) -> bool:
    """Whether the request offers tool `name`."""
    return any(isinstance(t, dict) and t.get("name") == name for t in body.get("tools") or [])


def is_main(body: dict) -> bool:
    """Whether a /v1/messages body belongs to the agent's conversation: the CLI
    offers its tools there and none (`"tools": []`) in its side requests."""
    return bool(body.get("tools"))


def skills_listed(body: dict) -> list[str]:
    """The skill names in the CLI's listing: a text headed by SKILL_LISTING, then
    one `- <name>: <description>` line per skill (descriptions may run on over
    further lines)."""
    names: list[str] = []
    for text in _texts(body):
        if SKILL_LISTING not in text:
            continue
        for line in text.split(SKILL_LISTING, 1)[1].splitlines():
            match = re.match(r"- (\S+?):(?:\s|$)", line)
            if match and match.group(1) not in names:
                names.append(match.group(1))
    return names


def skill_descriptions(body: dict) -> dict[str, str]:
    """name -> description of every skill in the CLI's listing (the first line of a
    description that runs on: what a model reads to pick a skill)."""
    found: dict[str, str] = {}
    for text in _texts(body):
        if SKILL_LISTING not in text:
            continue
        for line in text.split(SKILL_LISTING, 1)[1].splitlines():
            match = re.match(r"- (\S+?):\s*(.*)$", line)
            if match:
                found.setdefault(match.group(1), match.group(2))
    return found


def skills_loaded(body: dict) -> list[str]:
    """The skills whose SKILL.md body the CLI has put in the conversation (after
    a Skill tool call or an explicit `/name`), from their `Base directory for
    this skill: <dir>` line."""
    found = [
        t.split(SKILL_LOADED, 1)[1].split("\n", 1)[0]
        for t in _texts(body)
        if t.startswith(SKILL_LOADED)
    ]
    return [d.rstrip("/").rsplit("/", 1)[-1] for d in found]


def prompt_text(body: dict) -> str:
    """The prompt the CLI was given: the first user message's text without the
    CLI's system reminders and skill bodies. An explicit invocation, which the
    CLI sends as `<command-name>/demo</command-name><command-args>...`, comes
    back as `/demo <args>`."""
    for message in body.get("messages") or []:
        if message.get("role") != "user":
            continue
        parts = []
        for text in (
            _block_text(b) for b in _blocks(message.get("content")) if b.get("type") == "text"
        ):
            command = re.search(r"<command-name>(.*?)</command-name>", text, re.S)
            if command:
                args = re.search(r"<command-args>(.*?)</command-args>", text, re.S)
                parts.append(
                    " ".join(
                        filter(None, (command.group(1).strip(), args and args.group(1).strip()))
                    )
                )
            elif not text.lstrip().startswith(("<system-reminder>", SKILL_LOADED)):
                parts.append(text)
        return "\n".join(parts)
    return ""


def tool_results(body: dict) -> list[dict]:
    """The tool_result blocks of the last user message, each as {"tool_use_id",
    "is_error", "text"}. (A Skill call's result is "Launching skill: <name>"; the
    skill's body follows it as a separate text block: see skills_loaded.)"""
    messages = body.get("messages") or []
    if not messages or messages[-1].get("role") != "user":
        return []
    return [
        {
            "tool_use_id": b.get("tool_use_id"),
            "is_error": bool(b.get("is_error")),
            "text": _block_text(b),
        }
        for b in _blocks(messages[-1].get("content"))
        if b.get("type") == "tool_result"
    ]


def default_responder(body: dict) -> Turn:
    """Load the first listed skill through the Skill tool, unless a skill is
    already loaded or the assistant has already spoken; then answer `ANSWER:
    <first line of the prompt>` (an explicit `/name` left out)."""
    spoke = any(m.get("role") == "assistant" for m in body.get("messages") or [])
    listed = skills_listed(body)
    if not spoke and not skills_loaded(body) and listed and has_tool(body, "Skill"):
        return Turn.tool_use("Skill", {"skill": listed[0]})
    prompt = prompt_text(body).strip()
    if prompt.startswith("/"):
        prompt = prompt.split(" ", 1)[1] if " " in prompt else ""
    return Turn.text("ANSWER: " + (prompt.splitlines() or [""])[0])


def default_side_responder(body: dict) -> Turn:
    """A side request asking for structured output (the session title: a JSON
    schema in `output_config.format`) gets the smallest object of that schema;
    any other gets a short text."""
    fmt = (body.get("output_config") or {}).get("format") or {}
    if fmt.get("type") == "json_schema" and isinstance(fmt.get("schema"), dict):
        return Turn.text(json.dumps(_sample(fmt["schema"])))
    return Turn.text("Fake side reply")


def _sample(schema: dict):
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: _sample(props.get(k) or {}) for k in schema.get("required") or props}
    return {"string": "Fake session", "integer": 0, "number": 0, "boolean": False, "array": []}.get(
        kind if isinstance(kind, str) else ""
    )


def cached_prefix(body: dict) -> tuple[str, int] | None:
    """(the text, its tokens) of the system prefix up to the last block marked
    `cache_control`, or None when the system prompt has no marked block. Tokens are
    one per four bytes of the prefix's blocks, as in `usage_for`."""
    system = body.get("system")
    if not isinstance(system, list):
        return None
    marked = [i for i, b in enumerate(system) if isinstance(b, dict) and b.get("cache_control")]
    if not marked:
        return None
    prefix = system[: marked[-1] + 1]
    return json.dumps(prefix, sort_keys=True), len(json.dumps(prefix, sort_keys=True)) // 4


def usage_for(body: dict, blocks: tuple[dict, ...]) -> dict[str, int]:
    """Deterministic, non-zero usage: about one token per four bytes of the
    request body and of the reply's content."""
    sent = len(json.dumps(body, sort_keys=True, ensure_ascii=False))
    said = len(json.dumps(list(blocks), sort_keys=True, ensure_ascii=False))
    return {
        "input_tokens": sent // 4 + 1,
        "output_tokens": said // 4 + 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def error_body(type: str, message: str) -> dict:
    return {"type": "error", "error": {"type": type, "message": message}}


def _is_messages(method: str, path: str) -> bool:
    return method == "POST" and path.split("?", 1)[0].rstrip("/") == "/v1/messages"


# ------------------------------------------------------------------ server
class FakeAnthropic:
    """`with FakeAnthropic(responder) as api:` then run the CLI with
    `ANTHROPIC_BASE_URL=api.url`. Set `fail_all` (here or later) to a
    `Turn.error(...)` to fail every request, side requests and probes included,
    as with a bad key. `hung` is set once a request starts hanging."""

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        side_responder: Responder | None = None,
        fail_all: Turn | None = None,
        model_ids: tuple[str, ...] = MODELS,
        cache: bool = False,
    ):
        self.responder = responder or default_responder
        self.side_responder = side_responder or default_side_responder
        self.fail_all = fail_all
        self.model_ids = model_ids
        self.cache = cache
        self._cached: set[str] = set()  # prefixes written to the imitated prompt cache
        self.requests: list[dict] = []  # method, path, headers, body, main, status, usage
        self.errors: list[str] = []  # responder exceptions (answered as 500s)
        self.hung = threading.Event()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        # a short poll: closing the stand-in (`shutdown`) waits for one poll at most
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def messages_requests(self) -> list[dict]:
        """The bodies of the main conversation's POST /v1/messages, in order."""
        with self._lock:
            return [r["body"] for r in self.requests if r["main"]]

    def side_requests(self) -> list[dict]:
        """The bodies of the CLI's own POST /v1/messages (no tools offered)."""
        with self._lock:
            return [
                r["body"]
                for r in self.requests
                if _is_messages(r["method"], r["path"]) and not r["main"]
            ]

    def api_requests(self) -> list[dict]:
        """The records (body, usage, status, …) of every POST /v1/messages, main and
        side, in order: what a litellm client sends."""
        with self._lock:
            return [r for r in self.requests if _is_messages(r["method"], r["path"])]

    def paths(self) -> list[str]:
        """`METHOD path` of every request, in order."""
        with self._lock:
            return [f"{r['method']} {r['path']}" for r in self.requests]

    def close(self) -> None:
        """Release hanging requests (their connections close unanswered) and stop."""
        if self._closed.is_set():
            return
        self._closed.set()
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> FakeAnthropic:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _usage(self, body: dict, turn: Turn) -> dict[str, int]:
        """The turn's usage, or the computed one with the prompt cache applied."""
        if turn.usage is not None:
            return dict(turn.usage)
        usage = usage_for(body, turn.blocks)
        prefix = cached_prefix(body) if self.cache else None
        if prefix is not None:
            text, tokens = prefix
            with self._lock:
                hit = text in self._cached
                self._cached.add(text)
            usage["input_tokens"] = max(1, usage["input_tokens"] - tokens)
            usage["cache_read_input_tokens" if hit else "cache_creation_input_tokens"] = tokens
        return usage

    def _reply(self, method: str, path: str, body: dict) -> tuple[Turn | None, dict | None]:
        """(turn, None) for a Message or an error, (None, payload) for other JSON."""
        route = path.split("?", 1)[0].rstrip("/")
        if self.fail_all is not None:
            return self.fail_all, None
        if _is_messages(method, path):
            try:
                return (self.responder if is_main(body) else self.side_responder)(body), None
            except Exception as exc:  # a broken test responder: answer, and say so
                self.errors.append(f"{type(exc).__name__}: {exc}")
                return Turn.error(
                    500, "api_error", f"fake responder failed: {exc}", retry=False
                ), None
        if method == "POST" and route == "/v1/messages/count_tokens":
            return None, {"input_tokens": usage_for(body, ())["input_tokens"]}
        if method in ("GET", "HEAD") and route == "/v1/models":
            data = [_model(m) for m in self.model_ids]
            return None, {
                "data": data,
                "has_more": False,
                "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None,
            }
        if method in ("GET", "HEAD") and route.startswith("/v1/models/"):
            return None, _model(route.rsplit("/", 1)[1])
        if method in ("GET", "HEAD") and route in ("", "/v1"):
            return None, {}
        return Turn.error(404, message=f"not found: {method} {path}"), None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                self._serve()

            do_HEAD = do_POST = do_PUT = do_DELETE = do_GET

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    body = {"_unparsed": raw.decode("utf-8", "replace")}
                body = body if isinstance(body, dict) else {"_json": body}
                record = {
                    "method": self.command,
                    "path": self.path,
                    "headers": dict(self.headers),
                    "body": body,
                    "main": _is_messages(self.command, self.path) and is_main(body),
                    "status": None,
                    "usage": None,
                }
                with outer._lock:
                    outer.requests.append(record)
                    self.request_id = f"req_fake{len(outer.requests):06d}"
                turn, payload = outer._reply(self.command, self.path, body)
                try:
                    if turn is None:
                        self._json(200, payload or {}, record)
                    elif turn.body is not None:
                        self._json(200, turn.body, record)
                    elif turn.hangs:
                        outer.hung.set()
                        outer._closed.wait()
                        self.close_connection = True
                    elif turn.status != 200:
                        self._json(
                            turn.status,
                            error_body(turn.error_type, turn.message),
                            record,
                            turn.headers,
                        )
                    else:
                        self._message(body, turn, record)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the CLI gave up on this request

            def _json(
                self,
                status: int,
                payload: dict,
                record: dict,
                headers: dict[str, str] | None = None,
            ) -> None:
                record["status"] = status
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("request-id", self.request_id)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def _message(self, body: dict, turn: Turn, record: dict) -> None:
                usage = outer._usage(body, turn)
                record["usage"] = usage
                message = {
                    "id": f"msg_fake{next(_ids):08d}",
                    "type": "message",
                    "role": "assistant",
                    "model": body.get("model") or MODELS[0],
                    "content": list(turn.blocks),
                    "stop_reason": turn.stop_reason,
                    "stop_sequence": None,
                    "usage": usage,
                }
                if not body.get("stream"):
                    self._json(200, message, record)
                    return
                record["status"] = 200
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("request-id", self.request_id)
                self.end_headers()
                self._event(
                    "message_start",
                    {
                        "type": "message_start",
                        "message": {
                            **message,
                            "content": [],
                            "stop_reason": None,
                            "usage": {**usage, "output_tokens": 1},
                        },
                    },
                )
                self._event("ping", {"type": "ping"})
                for index, block in enumerate(turn.blocks):
                    self._block(index, block)
                self._event(
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": turn.stop_reason, "stop_sequence": None},
                        "usage": {"output_tokens": usage["output_tokens"]},
                    },
                )
                self._event("message_stop", {"type": "message_stop"})
                self.close_connection = True

            def _block(self, index: int, block: dict) -> None:
                """One content block as start, deltas of up to 40 characters, stop."""
                if block["type"] == "tool_use":
                    start, raw = {**block, "input": {}}, json.dumps(block["input"])
                    deltas = [
                        {"type": "input_json_delta", "partial_json": raw[i : i + 40]}
                        for i in range(0, len(raw), 40)
                    ]
                else:
                    start, raw = {**block, "text": ""}, block["text"]
                    deltas = [
                        {"type": "text_delta", "text": raw[i : i + 40]}
                        for i in range(0, len(raw), 40)
                    ]
                self._event(
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": start},
                )
                for delta in deltas:
                    self._event(
                        "content_block_delta",
                        {"type": "content_block_delta", "index": index, "delta": delta},
                    )
                self._event("content_block_stop", {"type": "content_block_stop", "index": index})

            def _event(self, name: str, data: dict) -> None:
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()

        return Handler


def _model(model_id: str) -> dict:
    return {
        "type": "model",
        "id": model_id,
        "display_name": model_id,
        "created_at": "2025-01-01T00:00:00Z",
    }
