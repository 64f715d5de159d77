"""`holm secret` and `holm fork --secret` against a real holmd: a value set from stdin is
listed by name and length only, a fork takes a secret's value from the environment, and a
missing one is refused, naming it."""

from __future__ import annotations

import json

from e2e_kit import Holmd, RunHolm

VALUE = "cli-s3cret-9f2"


def test_a_secret_set_from_stdin_is_listed_by_name_only(holm: RunHolm) -> None:
    made = holm("secret", "set", "CLI_TOKEN", stdin=VALUE + "\n")
    assert made.exit_code == 0, made.output
    assert made.output.strip() == f"CLI_TOKEN ({len(VALUE)} bytes)"
    listed = holm("secret", "ls", "--json")
    names = {s["name"]: s["bytes"] for s in json.loads(listed.output)}
    assert names["CLI_TOKEN"] == len(VALUE) and VALUE not in listed.output
    assert holm("secret", "rm", "CLI_TOKEN").exit_code == 0
    assert "CLI_TOKEN" not in holm("secret", "ls").output


def test_fork_takes_a_secret_from_the_environment(holm: RunHolm, holmd: Holmd) -> None:
    box = holm("new").output.strip()
    steps = json.dumps({"actions": [{"type": "type", "secret": "PIN"}], "secrets": {"PIN": VALUE}})
    assert holm("batch", box, "-", stdin=steps).exit_code == 0
    refused = holm("fork", box)
    assert refused.exit_code != 0 and "PIN" in refused.output
    forked = holm("fork", box, "--secret", "PIN", env={"PIN": VALUE})
    assert forked.exit_code == 0, forked.output
    assert holm("rm", box, forked.output.splitlines()[0].strip()).exit_code == 0
