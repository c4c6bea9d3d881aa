"""The model server's wire protocol and socket I/O: what ``pg_qopt`` sends, what it reads back.

Protocol (one line of JSON each way; a connection carries any number of messages in turn:
``pg_qopt`` keeps one per session for its plan requests, tools send one and close):

- ``{"op": "plan", "sql": ..., "search_path": ..., "database": ..., "mode": ...}`` ->
  ``{"sql": REWRITTEN or null, "arm": {setting: value}, "key": ..., "note": ...}``
  or ``{"error": ...}``.
- ``{"op": "reward", "key": ..., "ms": ...}`` -> no answer (the extension does not wait):
  the executor's runtime of a plan made with decision ``key``. The extension holds its
  rewards and sends them with its next ``plan`` request (``"rewards": [{"key": ...,
  "ms": ...}, ...]``: learned from once the answer is written), or on their own as
  ``{"op": "rewards", "items": [...]}``.
- ``{"op": "stats"}`` -> counters, cache sizes and reward summaries; ``{"op": "ping"}``.

A statement is known by its text (:func:`strip_statement`) and its search_path
(:func:`search_path_schemas`, so that spellings of one path are one), a query shape by
:func:`shape`. :func:`listen` opens the server's socket, :func:`handler_for` answers its
connections (a server with ``before_answer`` / ``handle`` / ``after_answer``, such as
:class:`~rlsuite.apps.queryopt.plugin.modelserver.ModelServer`), :func:`request` is the
extension's side.

Example::

    >>> request(default_socket(), {"op": "ping"})  # doctest: +SKIP
    {'ok': True, 'decider': 'rules: eager_aggregation'}
"""

from __future__ import annotations

import json
import os
import socket
import socketserver
import stat
from pathlib import Path
from typing import Any, Protocol

MAX_REQUEST = 4 * 1024 * 1024
"""The longest request line read (a statement and the rewards riding with it)."""


def default_socket() -> str:
    """``/tmp/rlsuite-qopt-<uid>/model.sock`` (a directory the ``postgres`` user can enter)."""
    return f"/tmp/rlsuite-qopt-{os.geteuid()}/model.sock"


def check_address(address: str) -> None:
    """A Unix socket path, or ``localhost:PORT`` / ``127.0.0.1:PORT``; anything else raises."""
    if address.startswith("/"):
        return
    host, _, port = address.rpartition(":")
    if host not in ("localhost", "127.0.0.1") or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(
            f"address {address!r}: the model server listens on this machine only "
            "(localhost:PORT or 127.0.0.1:PORT), or on an absolute Unix socket path"
        )


def strip_statement(sql: str) -> str:
    """The statement without surrounding whitespace and trailing semicolons."""
    s = sql.strip()
    while s.endswith(";"):
        s = s[:-1].rstrip()
    return s


def shape(sql: str) -> str:
    """The query's shape: tokens with literals replaced by ``?`` (keywords upper-cased)."""
    from sqlglot.tokens import Tokenizer, TokenType

    try:
        toks = Tokenizer().tokenize(sql)
    except Exception:  # noqa: BLE001 - untokenisable: the text is its own shape
        return " ".join(sql.split())
    out = []
    for t in toks:
        if t.token_type in (TokenType.NUMBER, TokenType.STRING):
            out.append("?")
        elif t.token_type == TokenType.VAR:
            out.append(t.text.lower())
        else:
            out.append(t.text.upper())
    return " ".join(out)


def search_path_schemas(search_path: str) -> list[str]:
    """``'"$user", public'`` -> ``['$user', 'public']``."""
    return [p.strip().strip('"') for p in (search_path or "").split(",") if p.strip()]


def encode_line(obj: Any) -> bytes:
    """``obj`` as one line of compact JSON (an answer, or a request)."""
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


class Answerer(Protocol):
    """What :func:`handler_for` serves: one request line -> one answer line (or none)."""

    def before_answer(self) -> None: ...

    def handle(self, line: bytes) -> bytes | None: ...

    def after_answer(self) -> None: ...


def handler_for(server: Answerer) -> type[socketserver.StreamRequestHandler]:
    """A connection handler that answers ``server``'s requests in order; the work an answer
    starts (``after_answer``) runs once it is written."""

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            # one line per request, answered in order, until the client closes: pg_qopt
            # keeps one connection per session, tools send one request per connection
            while True:
                line = self.rfile.readline(MAX_REQUEST)
                if not line:
                    return
                server.before_answer()
                out = server.handle(line)
                if out is not None:
                    try:
                        self.wfile.write(out)
                        self.wfile.flush()
                    except OSError:
                        server.after_answer()
                        return  # the extension gave up waiting and closed the connection
                server.after_answer()

    return Handler


def listen(address: str, handler: type[socketserver.BaseRequestHandler]) -> socketserver.BaseServer:
    """A threaded server bound to ``address`` (see :func:`check_address`): a Unix socket is
    made mode 0666 in a directory the ``postgres`` user can enter; a stale socket file is
    replaced, a live server's or any other file refused."""
    if address.startswith("/"):
        path = Path(address)
        path.parent.mkdir(parents=True, exist_ok=True)
        # the server runs as `postgres`: it must enter the directory and write the socket
        os.chmod(path.parent, os.stat(path.parent).st_mode | stat.S_IXOTH | stat.S_IXGRP)
        if path.exists() or path.is_symlink():
            if not stat.S_ISSOCK(os.lstat(path).st_mode):
                raise FileExistsError(f"{path} exists and is not a socket; choose another --socket")
            if alive(str(path)):
                raise FileExistsError(f"a model server already answers on {path}")
            path.unlink()

        class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True

        srv = Server(str(path), handler)
        os.chmod(path, 0o666)
        return srv
    check_address(address)
    port = address.rpartition(":")[2]

    class TCPServer(socketserver.ThreadingMixIn, socketserver.TCPServer):
        daemon_threads = True
        allow_reuse_address = True

    return TCPServer(("127.0.0.1", int(port)), handler)


def connect(address: str, timeout_s: float) -> socket.socket:
    """A connection to the server at ``address`` (a Unix socket path or ``HOST:PORT``)."""
    if address.startswith("/"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout_s)
        s.connect(address)
    else:
        host, _, port = address.rpartition(":")
        s = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s)
    return s


def request(address: str, msg: dict, timeout_s: float = 5.0) -> dict | None:
    """Send one message as the extension does; the answer (None for rewards)."""
    with connect(address, timeout_s) as s:
        s.sendall(encode_line(msg))
        if msg.get("op") == "reward":
            return None
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    return json.loads(buf)


def alive(address: str) -> bool:
    """Whether a model server answers a ping on ``address``."""
    try:
        return bool(request(address, {"op": "ping"}, timeout_s=0.5))
    except (OSError, ValueError):
        return False
