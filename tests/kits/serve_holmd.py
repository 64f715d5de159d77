"""holmd for the CLI's end-to-end tests: the same app as `holmd` (`create_app` with the
settings of the HOLM_* variables, the local store and the local runtime), except that the
local runtime's boxes take their X displays from HOLM_TEST_DISPLAY_BASE and
HOLM_TEST_DISPLAY_COUNT, because this machine is shared and holmd has no setting for it.
With HOLM_TEST_RUNTIME=memory, its one runtime is the in-memory double instead, for tests of
what needs no desktop (listing traces).

    python tests/kits/serve_holmd.py      (run as a subprocess by kits.holmd)
"""

from __future__ import annotations

import os

from aiohttp import web

from holm.adapters.base import Runtime
from holm.adapters.local.runtime import LocalRuntime
from holm.adapters.memory.runtime import MemoryRuntime
from holm.config import load_config, server_id_of
from holm.http.app import create_app
from holm.server import serve


def main() -> None:
    config = load_config()
    runtime: Runtime
    if os.environ.get("HOLM_TEST_RUNTIME") == "memory":
        runtime = MemoryRuntime(server_id=server_id_of(config.state_dir))
    else:
        runtime = LocalRuntime(
            config.state_dir / "boxes",
            server_id_of(config.state_dir),
            display_base=int(os.environ["HOLM_TEST_DISPLAY_BASE"]),
            display_count=int(os.environ["HOLM_TEST_DISPLAY_COUNT"]),
        )
    app = create_app(config, runtimes={runtime.name: runtime})

    async def close_runtime(app: web.Application) -> None:
        await runtime.close()

    app.on_cleanup.append(close_runtime)
    serve(app, config)


if __name__ == "__main__":
    main()
