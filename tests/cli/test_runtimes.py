"""`holm runtime add|ls|set|rm` against a real holmd, which is given itself as a runtime of
provider `holm` (its own API and token): a secret read from a file is never printed, and a
runtime a box uses is not removed."""

from __future__ import annotations

import json
from pathlib import Path

from e2e_kit import TOKEN, Holmd, RunHolm

from holm.cli.remote import EXIT_CODES


def test_a_runtime_is_added_listed_changed_and_removed(
    holm: RunHolm, holmd: Holmd, tmp_path: Path
) -> None:
    key = tmp_path / "key"
    key.write_text(TOKEN)
    added = holm(
        "runtime",
        "add",
        "itself",
        "holm",
        "--field",
        f"url={holmd.url}",
        "--secret",
        f"api_key=@{key}",
    )
    assert added.exit_code == 0, added.output
    assert added.stdout.strip() == "itself"
    table = holm("runtime", "ls")
    row = next(line for line in table.stdout.splitlines() if line.startswith("itself"))
    assert row.split()[1:4] == ["holm", f"url={holmd.url}", "api_key"]
    assert TOKEN not in table.stdout
    shown = json.loads(holm("runtime", "ls", "--json").stdout)
    assert {r["name"] for r in shown} == {"itself", "local"} and TOKEN not in json.dumps(shown)
    changed = holm("runtime", "set", "itself", "--field", "runtime=local", "--json")
    assert json.loads(changed.stdout)["fields"] == {"url": holmd.url, "runtime": "local"}
    odd = holm("runtime", "add", "cloud", "e2b", "--secret", "api_key=-", stdin="k\n")
    assert odd.exit_code == EXIT_CODES["unsupported"] and "E2B" in odd.stderr
    assert holm("runtime", "rm", "itself").exit_code == 0
    assert holm("runtime", "rm", "itself").exit_code == EXIT_CODES["not_found"]
