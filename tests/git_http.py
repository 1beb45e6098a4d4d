"""A real git remote over smart HTTP on 127.0.0.1: `git http-backend` run as a CGI program.

Every request must carry `Authorization: Basic x-access-token:<token>`; anything else is a 401
(so a push that relied on credentials a checkout left behind fails). Pushes are allowed for the
authenticated user (REMOTE_USER is set). A client sends a body over 1 MB chunked; CGI wants a
length, so the body is de-chunked here first. `before_push` runs just before a push is served,
which lets a test push from elsewhere in between (a race).
"""

from __future__ import annotations

import base64
import os
import subprocess
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

BACKEND = next(
    (p for p in ("/usr/lib/git-core/git-http-backend", "/usr/libexec/git-core/git-http-backend") if Path(p).exists()),
    None,
)


class GitHttpRemote:
    def __init__(self, project_root: Path, token: str) -> None:
        if BACKEND is None:  # it ships with git: its absence is a broken machine, not a reason to skip
            raise RuntimeError(
                "git-http-backend not found next to git (looked in /usr/lib/git-core, /usr/libexec/git-core)"
            )
        self.project_root = project_root
        self.token = token
        self.authorizations: list[str] = []  # the Authorization header of every request
        self.before_push: Callable[[], None] | None = None
        self.pushes = 0
        self._lock = threading.Lock()
        remote = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                remote._serve(self)

            do_POST = do_GET

            def log_message(self, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> GitHttpRemote:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def repo_url(self, name: str) -> str:
        return f"{self.url}/{name}"

    def _authorized(self, header: str) -> bool:
        expected = base64.b64encode(f"x-access-token:{self.token}".encode()).decode()
        scheme, _, value = header.partition(" ")
        return scheme.lower() == "basic" and value.strip() == expected

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        header = handler.headers.get("Authorization", "")
        with self._lock:
            self.authorizations.append(header)
        if not self._authorized(header):
            handler.send_response(401)
            handler.send_header("WWW-Authenticate", 'Basic realm="git"')
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        body = _read_body(handler)
        url = urlsplit(handler.path)
        if url.path.endswith("/git-receive-pack") and handler.command == "POST":
            with self._lock:
                self.pushes += 1
            if self.before_push is not None:
                hook, self.before_push = self.before_push, None
                hook()
        env = {
            "PATH": os.environ.get("PATH", ""),
            "GIT_PROJECT_ROOT": str(self.project_root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "REMOTE_USER": "x-access-token",
            "REMOTE_ADDR": "127.0.0.1",
            "REQUEST_METHOD": handler.command,
            "PATH_INFO": url.path,
            "QUERY_STRING": url.query,
            "CONTENT_TYPE": handler.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "HTTP_GIT_PROTOCOL": handler.headers.get("Git-Protocol", ""),
        }
        if handler.headers.get("Content-Encoding") == "gzip":
            env["HTTP_CONTENT_ENCODING"] = "gzip"
        done = subprocess.run([BACKEND], input=body, env=env, capture_output=True, check=False)
        head, _, payload = done.stdout.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        handler.send_response(status)
        for name, value in headers:
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        chunks = []
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip(), 16)
            if size == 0:
                handler.rfile.readline()
                return b"".join(chunks)
            chunks.append(handler.rfile.read(size))
            handler.rfile.readline()
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(length) if length else b""
