"""holmd for the tests that run it from outside (kits.holmd): holmd's own `main`, settings
from the HOLM_* variables, with one thing replaced: its runtimes. With HOLM_TEST_RUNTIME=local
(the default) its one runtime is the local runtime on the X displays of HOLM_TEST_DISPLAY_BASE
and HOLM_TEST_DISPLAY_COUNT, because this machine is shared and holmd has no setting for it;
with HOLM_TEST_RUNTIME=memory, the in-memory double, for what needs no desktop, whose creates
all fail with the message of HOLM_TEST_FAIL_CREATE when it is set (a host where boxes cannot
start). With HOLM_TEST_RUNTIME=docker, holmd's own runtimes (the docker runtime on the
Docker Engine that answers), as holmd makes them.

    python tests/kits/serve_holmd.py      (run as a subprocess by kits.holmd)
"""

from __future__ import annotations

import os

import holm.adapters.registry as registry
from holm.adapters.base import Runtime
from holm.adapters.local.runtime import LocalRuntime
from holm.adapters.memory.runtime import MemoryRuntime
from holm.config import Config
from holm.server import main


def replaced_runtimes(config: Config, server_id: str) -> dict[str, Runtime]:
    runtime: Runtime
    if os.environ.get("HOLM_TEST_RUNTIME", "local") == "memory":
        runtime = MemoryRuntime(server_id=server_id)
        runtime.fail_create = os.environ.get("HOLM_TEST_FAIL_CREATE")
    else:
        runtime = LocalRuntime(
            config.state_dir / "boxes",
            server_id,
            display_base=int(os.environ["HOLM_TEST_DISPLAY_BASE"]),
            display_count=int(os.environ["HOLM_TEST_DISPLAY_COUNT"]),
        )
    return {runtime.name: runtime}


if __name__ == "__main__":
    # HOLM_TEST_RUNTIME=docker: holmd's own runtimes, the Docker Engine's among them.
    if os.environ.get("HOLM_TEST_RUNTIME") != "docker":
        registry.make_runtimes = replaced_runtimes
    main()
