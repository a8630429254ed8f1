"""A loopback-only stand-in for the OpenAI Responses API, good enough for the real
`codex exec` (0.171) to run whole agent sessions against it.

It binds 127.0.0.1 on a free port and answers `POST /v1/responses` with the
server-sent events the CLI reads (`response.created` ... `response.completed`),
`GET /v1/models` with a one-model list, and anything else with a 404. What each
`POST /v1/responses` gets is decided by `responder(body) -> Turn`:

    text("answer")          a final assistant message (ends the agent's turn)
    shell("cat x")          a call of the command tool the request offers
                            (`exec_command` in 0.171): codex runs it in its
                            sandbox and sends the output back in the next request
    error(401, "bad key")   an HTTP error with OpenAI's error body
    failed("overloaded")    a 200 stream that ends in `response.failed`
    hang()                  no answer at all until `close()` (codex has no request
                            timeout: it waits for ever)
    hang(after_headers=True)  200 and SSE headers, then silence (codex gives up
                            after the provider's `stream_idle_timeout_ms`)

Codex reads the provider only from `$CODEX_HOME/config.toml`; `write_config`
writes that file (with the settings that keep it off the public internet).

A request body has no `instructions`: codex sends its base prompt as the first
`developer` message, the skill listing (`<skills_instructions>`) and sandbox notes
as the second, then `<environment_context>` (and AGENTS.md text) as user messages,
then the prompt. `all_text`, `skills_listed`, `function_outputs` and friends
read those.
"""

from __future__ import annotations

import gzip
import json
import re
import shlex
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SHELL_TOOLS = ("exec_command", "shell_command", "shell")


# ---------------------------------------------------------------------- turns
@dataclass(frozen=True)
class Usage:
    """Token counts reported in `response.completed` (deterministic, non-zero)."""

    input_tokens: int = 100
    cached_tokens: int = 40
    output_tokens: int = 20
    reasoning_tokens: int = 8

    def as_json(self) -> dict:
        return {
            "input_tokens": self.input_tokens,
            "input_tokens_details": {"cached_tokens": self.cached_tokens},
            "output_tokens": self.output_tokens,
            "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
            "total_tokens": self.input_tokens + self.output_tokens,
        }


@dataclass(frozen=True)
class Turn:
    """One reply to `POST /v1/responses`; build it with the functions below."""

    kind: str  # "text" | "shell" | "error" | "failed" | "hang" | "stall"
    text: str = ""
    command: str = ""
    workdir: str | None = None
    status: int = 200
    message: str = ""
    code: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    usage: Usage = Usage()


def text(answer: str, *, usage: Usage = Usage()) -> Turn:
    """A final assistant message."""
    return Turn("text", text=answer, usage=usage)


def shell(
    command: str | list[str], *, workdir: str | None = None, say: str = "", usage: Usage = Usage()
) -> Turn:
    """A call of the request's command tool; a list is joined as one shell line.
    `say` puts an assistant message (a preamble) before the call."""
    line = command if isinstance(command, str) else shlex.join(command)
    return Turn("shell", text=say, command=line, workdir=workdir, usage=usage)


def error(
    status: int,
    message: str = "error",
    *,
    code: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Turn:
    """An HTTP error with the body `{"error": {"message", "type", "param", "code"}}`."""
    return Turn("error", status=status, message=message, code=code, headers=dict(headers or {}))


def failed(message: str = "The server had an error.", *, code: str = "server_error") -> Turn:
    """A 200 event stream that ends in `response.failed` instead of `response.completed`."""
    return Turn("failed", message=message, code=code)


def hang(*, after_headers: bool = False) -> Turn:
    """Accept the request and send nothing more until the server is closed; with
    `after_headers`, first send the 200 status and event-stream headers."""
    return Turn("stall" if after_headers else "hang")


# ---------------------------------------------------------------------- request helpers
def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _items(body: Mapping) -> list[dict]:
    items = body.get("input") or []
    return [items] if isinstance(items, str) else [i for i in items if isinstance(i, dict)]


def all_text(body: Mapping) -> str:
    """`instructions` plus the text of every input item (messages, tool calls and their
    outputs), one per line: the place to search for a leaked marker."""
    parts = [body.get("instructions") or ""]
    for item in _items(body):
        parts.append(_content_text(item.get("content")))
        parts.append(item.get("arguments") or "")
        parts.append(_content_text(item.get("output")))
    return "\n".join(p for p in parts if p)


def messages(body: Mapping, role: str) -> list[str]:
    """The text of each input message of `role` ("developer", "user", "assistant")."""
    return [
        _content_text(i.get("content"))
        for i in _items(body)
        if i.get("type", "message") == "message" and i.get("role") == role
    ]


def last_user_text(body: Mapping) -> str:
    """The last user message: the prompt of an `exec` run."""
    users = messages(body, "user")
    return users[-1] if users else ""


def function_calls(body: Mapping) -> list[dict]:
    """`{"call_id", "name", "arguments"}` (arguments parsed) of each earlier tool call."""
    calls = []
    for item in _items(body):
        if item.get("type") == "function_call":
            try:
                args = json.loads(item.get("arguments") or "{}")
            except ValueError:
                args = {"raw": item.get("arguments")}
            calls.append(
                {"call_id": item.get("call_id"), "name": item.get("name"), "arguments": args}
            )
    return calls


def function_outputs(body: Mapping) -> list[dict]:
    """`{"call_id", "output"}` of each `function_call_output` item, output as text."""
    return [
        {"call_id": i.get("call_id"), "output": _content_text(i.get("output"))}
        for i in _items(body)
        if i.get("type") == "function_call_output"
    ]


_SKILLS = re.compile(r"<skills_instructions>(.*?)</skills_instructions>", re.S)
_ROOT = re.compile(r"^- `(\w+)` = `(.+)`$", re.M)
_SKILL = re.compile(r"^- ([^:\n]+): .*\(file: ([^)\n]+)\)$", re.M)
_DESCRIBED = re.compile(r"^- ([^:\n]+): (.*) \(file: [^)\n]+\)$", re.M)


def _skills_section(body: Mapping) -> str:
    for message in messages(body, "developer"):
        found = _SKILLS.search(message)
        if found:
            return found.group(1)
    return ""


def skill_files(body: Mapping) -> dict[str, Path]:
    """name -> absolute SKILL.md path of every skill in the `<skills_instructions>`
    listing (short paths like `r1/demo/SKILL.md` resolved through its roots table)."""
    section = _skills_section(body)
    roots = dict(_ROOT.findall(section))
    files = {}
    for name, short in _SKILL.findall(section):
        root, _, rest = short.partition("/")
        files[name.strip()] = Path(roots[root]) / rest if root in roots else Path(short)
    return files


def skill_descriptions(body: Mapping) -> dict[str, str]:
    """name -> description of every skill in the `<skills_instructions>` listing."""
    return {name.strip(): desc.strip() for name, desc in _DESCRIBED.findall(_skills_section(body))}


def skills_listed(body: Mapping) -> list[str]:
    """Names of the skills listed to the model, in listing order."""
    return list(skill_files(body))


def user_skills(body: Mapping) -> dict[str, Path]:
    """`skill_files` without codex's bundled ones (kept under `skills/.system`), those
    inside the working directory first."""
    here = cwd(body)
    found = {n: p for n, p in skill_files(body).items() if ".system" not in p.parts}
    return dict(sorted(found.items(), key=lambda kv: here is None or here not in kv[1].parents))


_INJECTED = re.compile(r"^<skill>\s*<name>([^<]+)</name>", re.M)
_CWD = re.compile(r"<environment_context>.*?<cwd>([^<]+)</cwd>", re.S)


def skills_injected(body: Mapping) -> list[str]:
    """Names of skills whose SKILL.md codex pasted into the conversation as a
    `<skill><name>..</name><path>..</path>BODY</skill>` user message: what an
    explicit `$name` in the prompt does."""
    return [m.strip() for u in messages(body, "user") for m in _INJECTED.findall(u)]


def cwd(body: Mapping) -> Path | None:
    """The working directory from codex's `<environment_context>` message."""
    for message in messages(body, "user"):
        found = _CWD.search(message)
        if found:
            return Path(found.group(1))
    return None


def default_responder(body: dict) -> Turn:
    """Read the first user skill (one in the workspace first) with `cat` unless it was
    read or injected already; then answer in text."""
    called = " ".join(json.dumps(c["arguments"]) for c in function_calls(body))
    for name, path in user_skills(body).items():
        if str(path) not in called and name not in skills_injected(body):
            return shell(f"cat {shlex.quote(str(path))}")
        return text(f"Done, following the {name} skill.")
    return text("Done.")


# ---------------------------------------------------------------------- events
def _response(rid: str, model: str, status: str, output: list, usage: Usage | None) -> dict:
    return {
        "id": rid,
        "object": "response",
        "created_at": 1_700_000_000,
        "status": status,
        "model": model,
        "output": output,
        "usage": usage.as_json() if usage else None,
    }


def _tool_for(body: Mapping) -> str:
    names = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    return next((n for n in SHELL_TOOLS if n in names), SHELL_TOOLS[0])


def _call_arguments(tool: str, turn: Turn) -> str:
    args: dict[str, Any]
    if tool == "exec_command":
        args = {"cmd": turn.command}
    elif tool == "shell":
        args = {"command": ["bash", "-lc", turn.command]}
    else:
        args = {"command": turn.command}
    if turn.workdir:
        args["workdir"] = turn.workdir
    return json.dumps(args)


def _message_events(item_id: str, index: int, said: str) -> Iterator[dict]:
    part = {"type": "output_text", "text": "", "annotations": []}
    item = {
        "id": item_id,
        "type": "message",
        "status": "in_progress",
        "role": "assistant",
        "content": [],
    }
    where = {"item_id": item_id, "output_index": index, "content_index": 0}
    yield {"type": "response.output_item.added", "output_index": index, "item": item}
    yield {"type": "response.content_part.added", **where, "part": part}
    yield {"type": "response.output_text.delta", **where, "delta": said}
    yield {"type": "response.output_text.done", **where, "text": said}
    part = {**part, "text": said}
    yield {"type": "response.content_part.done", **where, "part": part}
    yield {
        "type": "response.output_item.done",
        "output_index": index,
        "item": {**item, "status": "completed", "content": [part]},
    }


def _call_events(
    item_id: str, index: int, tool: str, call_id: str, arguments: str
) -> Iterator[dict]:
    item = {
        "id": item_id,
        "type": "function_call",
        "status": "in_progress",
        "name": tool,
        "call_id": call_id,
        "arguments": "",
    }
    where = {"item_id": item_id, "output_index": index}
    yield {"type": "response.output_item.added", "output_index": index, "item": item}
    yield {"type": "response.function_call_arguments.delta", **where, "delta": arguments}
    yield {"type": "response.function_call_arguments.done", **where, "arguments": arguments}
    yield {
        "type": "response.output_item.done",
        "output_index": index,
        "item": {**item, "status": "completed", "arguments": arguments},
    }


def events(body: Mapping, turn: Turn, n: int) -> Iterator[dict]:
    """The SSE events of a `text`, `shell` or `failed` turn (the n-th response)."""
    rid, model = f"resp_{n}", str(body.get("model") or "fake-model")
    yield {"type": "response.created", "response": _response(rid, model, "in_progress", [], None)}
    yield {
        "type": "response.in_progress",
        "response": _response(rid, model, "in_progress", [], None),
    }
    if turn.kind == "failed":
        failure = _response(rid, model, "failed", [], None)
        failure["error"] = {"code": turn.code, "message": turn.message}
        yield {"type": "response.failed", "response": failure}
        return
    streams = []
    if turn.text:
        streams.append(_message_events(f"msg_{n}", 0, turn.text))
    if turn.kind == "shell":
        tool = _tool_for(body)
        streams.append(
            _call_events(f"fc_{n}", len(streams), tool, f"call_{n}", _call_arguments(tool, turn))
        )
    output = []
    for stream in streams:
        for event in stream:
            if event["type"] == "response.output_item.done":
                output.append(event["item"])
            yield event
    yield {
        "type": "response.completed",
        "response": _response(rid, model, "completed", output, turn.usage),
    }


def error_body(status: int, message: str, code: str | None = None) -> dict:
    """OpenAI's error shape: `{"error": {"message", "type", "param", "code"}}`."""
    if code is None:
        code = {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(status)
    if code == "insufficient_quota":
        kind = "insufficient_quota"
    elif status == 429:
        kind = "requests"
    else:
        kind = "invalid_request_error" if status < 500 else "server_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


# ---------------------------------------------------------------------- server
@dataclass
class Request:
    """One request as received (header names lower-cased, body parsed when JSON)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any

    @property
    def kind(self) -> str:
        """codex's `request_kind` (from `x-codex-turn-metadata`): "turn" for the agent's
        conversation; "" when the header is absent."""
        try:
            return json.loads(self.headers.get("x-codex-turn-metadata", "{}")).get(
                "request_kind", ""
            )
        except ValueError:
            return ""


class FakeResponses:
    """`with FakeResponses(responder) as api:` serves on `api.url` until the block ends.

    Every request is kept in `requests`; an exception in the responder is kept in
    `errors` and answered with a 400 (which codex does not retry). `fail_with`
    (settable at any time) makes every request, whatever its path, answer that
    HTTP status with an error body.
    With `strict_model`, a `POST /v1/responses` for another model than `model` gets
    OpenAI's 404 `model_not_found`.
    """

    def __init__(
        self,
        responder: Callable[[dict], Turn] | None = None,
        *,
        model: str = "fake-model",
        fail_with: int | None = None,
        strict_model: bool = False,
    ):
        self.responder = responder or default_responder
        self.model = model
        self.fail_with = fail_with
        self.strict_model = strict_model
        self.requests: list[Request] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        # a short poll: closing the stand-in (`shutdown`) waits for one poll at most
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        """Base URL for the provider table, including `/v1`."""
        return f"http://127.0.0.1:{self._server.server_port}/v1"

    def turn_requests(self) -> list[dict]:
        """Bodies of the `POST /v1/responses` requests of the agent's conversation."""
        with self._lock:
            return [
                r.body
                for r in self.requests
                if r.method == "POST"
                and r.path.rstrip("/").endswith("/responses")
                and r.kind in ("turn", "")
            ]

    def write_config(
        self,
        codex_home: Path,
        *,
        model: str | None = None,
        env_key: str = "FAKE_KEY",
        provider_options: Mapping[str, Any] | None = None,
        features: Mapping[str, bool] | None = None,
        bundled_skills: bool = True,
        extra: str = "",
    ) -> Path:
        """`write_config` pointing at this server (model defaults to the server's)."""
        return write_config(
            codex_home,
            url=self.url,
            model=model or self.model,
            env_key=env_key,
            provider_options=provider_options,
            features=features,
            bundled_skills=bundled_skills,
            extra=extra,
        )

    def close(self) -> None:
        """Stop serving; hanging requests are released (their connections closed) now."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeResponses:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -------------------------------------------------------------- handling
    def _record(self, request: Request) -> int:
        with self._lock:
            self.requests.append(request)
            return len(self.requests)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _read_body(self) -> Any:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                if self.headers.get("content-encoding", "").lower() == "gzip":
                    raw = gzip.decompress(raw)
                if not raw:
                    return None
                try:
                    return json.loads(raw)
                except ValueError:
                    return raw.decode("utf-8", "replace")

            def _send(
                self,
                status: int,
                payload: bytes,
                content_type: str,
                headers: Mapping[str, str] | None = None,
            ) -> None:
                try:
                    self.send_response(status)
                    self.send_header("content-type", content_type)
                    self.send_header("content-length", str(len(payload)))
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(payload)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the client gave up

            def _json(
                self, status: int, payload: dict, headers: Mapping[str, str] | None = None
            ) -> None:
                self._send(status, json.dumps(payload).encode(), "application/json", headers)

            def _serve(self) -> None:
                request = Request(
                    self.command,
                    self.path.split("?")[0],
                    {k.lower(): v for k, v in self.headers.items()},
                    self._read_body(),
                )
                n = outer._record(request)
                if outer.fail_with is not None:
                    status = outer.fail_with
                    self._json(status, error_body(status, f"fake failure {status}"))
                elif request.method == "POST" and request.path.endswith("/responses"):
                    self._respond(request.body if isinstance(request.body, dict) else {}, n)
                elif request.method == "GET" and request.path.endswith("/models"):
                    self._json(
                        200,
                        {
                            "object": "list",
                            "data": [
                                {
                                    "id": outer.model,
                                    "object": "model",
                                    "created": 0,
                                    "owned_by": "fake",
                                }
                            ],
                        },
                    )
                else:
                    self._json(
                        404,
                        error_body(404, f"no route {request.method} {request.path}", "not_found"),
                    )

            def _respond(self, body: dict, n: int) -> None:
                asked = body.get("model")
                if outer.strict_model and asked != outer.model:
                    turn = error(
                        404,
                        f"The model `{asked}` does not exist or you do not have access to it.",
                        code="model_not_found",
                    )
                else:
                    try:
                        turn = outer.responder(body)
                    except Exception as exc:  # shown to the test, not lost in a thread
                        outer.errors.append(f"{type(exc).__name__}: {exc}")
                        turn = error(400, f"fake responder raised {type(exc).__name__}: {exc}")
                if turn.kind in ("hang", "stall"):
                    if turn.kind == "stall":
                        try:
                            self.send_response(200)
                            self.send_header("content-type", "text/event-stream")
                            self.send_header("connection", "close")
                            self.end_headers()
                            self.wfile.flush()
                        except (BrokenPipeError, ConnectionResetError):
                            pass
                    outer._closed.wait()
                    self.close_connection = True
                elif turn.kind == "error":
                    self._json(
                        turn.status, error_body(turn.status, turn.message, turn.code), turn.headers
                    )
                else:
                    stream = "".join(
                        f"event: {e['type']}\ndata: {json.dumps(e)}\n\n"
                        for e in events(body, turn, n)
                    )
                    self._send(200, stream.encode(), "text/event-stream")

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

        return Handler


# ---------------------------------------------------------------------- config
def write_config(
    codex_home: Path,
    *,
    url: str,
    model: str = "fake-model",
    env_key: str = "FAKE_KEY",
    provider_options: Mapping[str, Any] | None = None,
    features: Mapping[str, bool] | None = None,
    bundled_skills: bool = True,
    extra: str = "",
) -> Path:
    """Write `$CODEX_HOME/config.toml` selecting a provider `fake` at `url`.

    Analytics and plugins are off: with them on, codex 0.171 looks up
    ab.chatgpt.com, chatgpt.com, github.com and api.github.com. `provider_options`
    go into the provider table (e.g. `request_max_retries`, `stream_max_retries`,
    `stream_idle_timeout_ms`); `features` join `plugins = false` in `[features]`
    (e.g. `{"unbounded_connection_retries": False}`, without which codex retries
    a refused connection for ever). `bundled_skills=False` keeps codex from
    installing and listing its own skills (imagegen, skill-creator, ...). `extra`
    is appended as is (it must not repeat the tables written here).
    """
    provider = {
        "name": "fake",
        "base_url": url,
        "env_key": env_key,
        "wire_api": "responses",
        **(provider_options or {}),
    }
    flags = {"plugins": False, **(features or {})}
    lines = [
        f"model_provider = {_toml(provider['name'])}",
        f"model = {_toml(model)}",
        "",
        "[analytics]",
        "enabled = false",
        "",
        "[features]",
    ]
    lines += [f"{key} = {_toml(value)}" for key, value in flags.items()]
    lines += ["", "[model_providers.fake]"]
    lines += [f"{key} = {_toml(value)}" for key, value in provider.items()]
    if not bundled_skills:
        lines += ["", "[skills.bundled]", "enabled = false"]
    codex_home.mkdir(parents=True, exist_ok=True)
    path = codex_home / "config.toml"
    path.write_text("\n".join(lines) + "\n" + (f"\n{extra}\n" if extra else ""), encoding="utf-8")
    return path


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(str(value))  # a JSON string is a valid TOML basic string
