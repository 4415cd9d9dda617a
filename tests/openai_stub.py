"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for tests.

It is a real HTTP server (``http.server`` in a thread) that the ``openai`` client talks
to over loopback, so the agent loop is tested through the genuine client, transport and
JSON. A *script* decides each reply from the conversation so far: it gets the request
body (model, messages, tools) and returns a list of tool calls
``[(name, arguments_json_text), ...]``, a final text, or a :class:`Scripted` reply that
also sets the usage, a delay, an HTTP status, a hand-made message or raw body bytes.

Tool-call ids are derived from the conversation's length, not from a request counter,
so the same conversation gets the same ids however many clients talk at once. Usage is
a function of the request (:func:`default_usage`) unless the script gives one.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Scripted:
    """One reply with everything a script may set.

    ``reply`` is tool calls or a text as a plain script returns; ``message`` replaces the
    whole assistant message (any JSON, hostile shapes included); ``body`` replaces the
    whole HTTP body (bytes sent as they are); ``status`` other than 200 sends an error;
    ``delay`` seconds are slept before answering; ``usage`` replaces the usage object.
    """

    reply: list[tuple[str, str]] | str | None = None
    message: Any = None
    body: bytes | None = None
    status: int = 200
    delay: float = 0.0
    usage: Any = None
    ids: list[str] | None = None


Reply = list[tuple[str, str]] | str | Scripted
Script = Callable[[dict[str, Any]], Reply]


def default_usage(body: dict[str, Any], message: Any) -> dict[str, int]:
    """Tokens a request "costs": a quarter of the characters sent and of the reply."""
    prompt = len(json.dumps(body.get("messages", []), sort_keys=True)) // 4
    completion = len(json.dumps(message, sort_keys=True)) // 4
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


class StubServer:
    """Serve ``POST /v1/chat/completions`` from ``script``; records every request (and
    every usage object it sent, in ``usages``)."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.usages: list[Any] = []
        self._lock = threading.Lock()
        self._counter = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                return

            def _send(self, status: int, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                with contextlib.suppress(OSError):  # the client gave up (a timeout)
                    self.wfile.write(data)

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(n) or b"{}")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, b'{"error": {"message": "unknown endpoint"}}')
                    return
                with outer._lock:
                    outer.requests.append(body)
                try:
                    reply = outer.script(body)
                except Exception as exc:  # a broken script is a 500, as a real server's
                    self._send(500, json.dumps({"error": {"message": repr(exc)}}).encode())
                    return
                status, data = outer._response(body, reply)
                self._send(status, data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def _response(self, body: dict[str, Any], reply: Reply) -> tuple[int, bytes]:
        s = reply if isinstance(reply, Scripted) else Scripted(reply=reply)
        if s.delay:
            time.sleep(s.delay)
        if s.status != 200:
            msg = {"error": {"message": f"scripted status {s.status}"}}
            return s.status, s.body if s.body is not None else json.dumps(msg).encode()
        if s.body is not None:
            return 200, s.body
        with self._lock:
            self._counter += 1
            counter = self._counter
        turn = len(body.get("messages", []))
        finish = "stop"
        if s.message is not None:
            message = s.message
        elif isinstance(s.reply, list):
            calls = [
                {
                    "id": s.ids[i] if s.ids else f"call_{turn}_{i}",
                    "type": "function",
                    "function": {"name": name, "arguments": args},
                }
                for i, (name, args) in enumerate(s.reply)
            ]
            message = {"role": "assistant", "content": None, "tool_calls": calls}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": s.reply or ""}
        usage = s.usage if s.usage is not None else default_usage(body, message)
        with self._lock:
            self.usages.append(usage)
        data = {
            "id": f"chatcmpl-{counter}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "stub"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }
        return 200, json.dumps(data).encode()

    def __enter__(self) -> StubServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


def dead_base_url() -> str:
    """The ``/v1`` URL of a loopback port nothing listens on (a server that is down):
    bound once to get a free port, then closed, so a connection is refused at once."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def hostile_reply(rng: random.Random) -> Scripted:
    """One hostile reply for the mock domain, drawn from ``rng``: HTTP errors, bodies that
    are not JSON or not a completion, 6,000-digit integers and 6,000-deep nesting in the
    body or in the arguments, names and arguments of the wrong JSON type, lone
    surrogates, NUL and markup in the text, bad usage objects, twenty calls at once, and
    ordinary calls that fail."""
    name = rng.choice(["find_account", "lock_account", "respond", "nope", ""])
    deep = rng.randint(100, 6000)
    digits = rng.randint(10, 6000)
    kind = rng.randrange(14)
    if kind == 0:
        return Scripted(status=rng.choice([400, 404, 422, 500, 503]))
    if kind == 1:
        return Scripted(
            body=rng.choice([b"", b"{", b"null", b"[]", b"\xff\xfe", b'{"choices": 5}'])
        )
    if kind == 2:
        return Scripted(body=b'{"choices": [{"message": {"content": ' + b"7" * digits + b"}}]}")
    if kind == 3:
        return Scripted(
            body=b'{"choices": [{"message": {"content": ' + b"[" * deep + b"]" * deep + b"}}]}"
        )
    if kind == 4:
        return Scripted([(name, '{"email": ' + "1" * digits + "}")])
    if kind == 5:
        return Scripted([(name, "[" * deep + "]" * deep)])
    if kind == 6:
        return Scripted([(name, rng.choice(["", "{", "null", "3", '"s"', "[1]", '{"a":']))])
    if kind == 7:
        return Scripted([(name, json.dumps({"email": "x" * rng.randint(0, 100_000)}))])
    if kind == 8:
        return Scripted(
            message={
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": None,
                        "function": {
                            "name": rng.choice([["l"], {"d": 1}, 5, None, True]),
                            "arguments": rng.choice([None, 5, [], {"k": "v"}]),
                        },
                    }
                ],
            }
        )
    if kind == 9:
        return Scripted(
            message={
                "role": "assistant",
                "content": rng.choice(["\ud800", "\x00", "[red]x[/]", "###STOP###", "é" * 1000]),
            }
        )
    if kind == 10:
        return Scripted(
            usage=rng.choice([None, "many", {"prompt_tokens": -5}, {"prompt_tokens": "9"}, []]),
            reply="ok",
        )
    if kind == 11:
        return Scripted([(name, json.dumps({"answer": "x", "email": "a@b"}))] * rng.randint(1, 20))
    if kind == 12:
        return Scripted(message=rng.choice([None, [], 5, {"tool_calls": [None, 3, "x"]}]))
    return Scripted([("find_account", json.dumps({"email": "nobody@example.com"}))])
