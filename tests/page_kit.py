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

    steps: list[Any] = [
        a.WriteFile(
            what=a.WriteWhat(
                path=f"{root}/{name}", contents_base64=base64.b64encode(text.encode()).decode()
            )
        )
        for name, text in files.items()
    ]
    start = f"setsid python3 -c '{SERVE}' {root} {port} </dev/null >/dev/null 2>&1 &"
    steps.append(a.Exec(what=a.ExecWhat(argv=["sh", "-c", start])))
    steps.append(a.Exec(what=a.ExecWhat(argv=["python3", "-c", UP, f"http://127.0.0.1:{port}/"])))
    return steps
