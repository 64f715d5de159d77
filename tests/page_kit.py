"""What the page tests share: pages as `data:` URLs (no server, no outside address)."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import quote


def page(html: str) -> str:
    """A `data:` URL of `html`."""
    return "data:text/html;charset=utf-8," + quote(html)


SERVE = """
import http.server, os, socketserver, sys
os.chdir(sys.argv[1])
class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args): pass
socketserver.TCPServer.allow_reuse_address = True
with socketserver.TCPServer(("127.0.0.1", int(sys.argv[2])), Quiet) as httpd:
    httpd.serve_forever()
"""

# Writes each file given as `path=base64` arguments. A page is written by an exec, not a
# `write_file` step: a fork does an exec again but skips file writes (docs/fork.md).
WRITE = """
import base64, os, sys
for arg in sys.argv[1:]:
    path, data = arg.split("=", 1)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(base64.b64decode(data))
"""

UP = """
import sys, time, urllib.request
for _ in range(200):
    try:
        urllib.request.urlopen(sys.argv[1], timeout=1).read(); break
    except OSError:
        time.sleep(0.05)
else:
    sys.exit(1)
"""


def site_actions(files: dict[str, str], port: int, root: str = "/tmp/site") -> list[Any]:
    """The actions that write `files` in the box and serve them on the box's own
    127.0.0.1:`port` (a server inside the box, started through exec), ready when they end."""
    from holm.wire import actions as a

    contents = [
        f"{root}/{name}={base64.b64encode(text.encode()).decode()}" for name, text in files.items()
    ]
    steps: list[Any] = [a.Exec(what=a.ExecWhat(argv=["python3", "-c", WRITE, *contents]))]
    start = f"setsid python3 -c '{SERVE}' {root} {port} </dev/null >/dev/null 2>&1 &"
    steps.append(a.Exec(what=a.ExecWhat(argv=["sh", "-c", start])))
    steps.append(a.Exec(what=a.ExecWhat(argv=["python3", "-c", UP, f"http://127.0.0.1:{port}/"])))
    return steps
