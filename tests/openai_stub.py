"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for tests.

It is a real HTTP server (``http.server`` in a thread) that the ``openai`` client talks
to over loopback, so the agent loop is tested through the genuine client, transport and
JSON. A *script* decides each reply from the conversation so far: it gets the request
body (model, messages, tools) and returns either a list of tool calls
``[(name, arguments_json_text), ...]`` or a final text.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = list[tuple[str, str]] | str
Script = Callable[[dict[str, Any]], Reply]


class StubServer:
    """Serve ``POST /v1/chat/completions`` from ``script``; records every request."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self._counter = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                return

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(n) or b"{}")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self.send_error(404, "unknown endpoint")
                    return
                outer.requests.append(body)
                try:
                    reply = outer.script(body)
                except Exception as exc:  # a broken script is a 500, as a real server's
                    data = json.dumps({"error": {"message": repr(exc)}}).encode()
                    self.send_response(500)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                data = json.dumps(outer._completion(body, reply)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def _completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        self._counter += 1
        if isinstance(reply, str):
            message: dict[str, Any] = {"role": "assistant", "content": reply}
            finish = "stop"
        else:
            calls = []
            for i, (name, args) in enumerate(reply):
                calls.append(
                    {
                        "id": f"call_{self._counter}_{i}",
                        "type": "function",
                        "function": {"name": name, "arguments": args},
                    }
                )
            message = {"role": "assistant", "content": None, "tool_calls": calls}
            finish = "tool_calls"
        return {
            "id": f"chatcmpl-{self._counter}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "stub"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }

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
