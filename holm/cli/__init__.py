"""The `holm` command line: one click group, `main` (the `holm` console script), with each
command in its own module's `COMMANDS`, imported only when it runs (holm/cli/lazy.py)."""

from __future__ import annotations

import click

from holm.cli.lazy import LazyCommand, LazyGroup

_ACTIONS = "holm.cli.actions"
_BOXES = "holm.cli.boxes"
_INSIDE = "holm.cli.inside"

# Each command's module and its one-line help, as `holm --help` lists it.
COMMANDS: dict[str, LazyCommand] = {
    "app": LazyCommand(
        "holm.cli.apps",
        "Applications: list the catalog, install apps into a box, open one on a screen.",
    ),
    "batch": LazyCommand(
        _ACTIONS,
        "Run the actions in FILE (- for stdin): a JSON list of actions, or a batch object "
        "with `actions` (and `want`, `settle_ms`, `keep_going`).",
    ),
    "bisect": LazyCommand(
        "holm.cli.bisect_cmd",
        "Find the first step of BOX_ID's trace after which a predicate holds, by forking "
        "prefixes of the trace in a binary search (at most ceil(log2 steps) + 1 forks); print "
        "that step.",
    ),
    "box": LazyCommand(_BOXES, "Show one box, with its spec_digest."),
    "browser": LazyCommand(
        "holm.cli.browser",
        "Drive the Chromium of a box by meaning: elements are named by their label, text, "
        'placeholder or role and name ("button Continue"), or a CSS or XPath selector.',
    ),
    "clip": LazyCommand(_INSIDE, "Print the clipboard, or set it to TEXT (- reads stdin)."),
    "diff": LazyCommand(
        "holm.cli.replay_cmd",
        "How close two runs are: A and B are two trace files, or two box IDs on the server.",
    ),
    "events": LazyCommand(
        "holm.cli.history",
        "Print the server's events feed: what happened to boxes, screens and images.",
    ),
    "exec": LazyCommand(
        _INSIDE,
        "Run ARGV in the box (write `--` before it): print its stdout and stderr and exit "
        "with its exit code (124 when it timed out, 125 when it ended without a code).",
    ),
    "file": LazyCommand(_INSIDE, "Copy files into and out of a box, and list its folders."),
    "fork": LazyCommand(
        _BOXES, "Make a new box that does BOX_ID's recorded steps again; print its ID."
    ),
    "image": LazyCommand(
        "holm.cli.images",
        "Images of the runtimes that build them: build one before a box needs it, list, remove.",
    ),
    "key": LazyCommand(
        "holm.cli.workspaces", "API keys: a key acts for its workspace, on its boxes only."
    ),
    "keyboard": LazyCommand(_ACTIONS, "Keyboard actions on BOX_ID: type TEXT, press KEYS."),
    "ls": LazyCommand(_BOXES, "List the boxes."),
    "mcp-config": LazyCommand(
        "holm.cli.mcp_cmd",
        "Print the MCP client configuration for this server's /mcp (URL and bearer header).",
    ),
    "mouse": LazyCommand(
        _ACTIONS,
        "Pointer actions on BOX_ID: click, double-click, move, drag, scroll, down, up.",
    ),
    "new": LazyCommand(_BOXES, "Launch a box and print its ID."),
    "node": LazyCommand(
        "holm.cli.widgets",
        "Read and drive the native widgets (GTK, Chromium, …) of box BOX_ID.",
    ),
    "open": LazyCommand(_ACTIONS, "Open URL in the box's browser."),
    "pause": LazyCommand(_BOXES, "Pause a box; `resume` brings it back as it was."),
    "replay": LazyCommand(
        "holm.cli.replay_cmd",
        "Do the steps of TRACE_FILE again on a new box, without a server; or, with --loose, "
        "match a run's steps in it.",
    ),
    "record": LazyCommand(
        "holm.cli.record",
        "Record a screen as an MP4 (H.264) in the box; needs the `video` feature.",
    ),
    "resume": LazyCommand(_BOXES, "Resume a paused or stopped box."),
    "rm": LazyCommand(_BOXES, "Remove boxes (their traces stay)."),
    "runtime": LazyCommand(
        "holm.cli.runtimes",
        "The server's runtimes, and remote ones added (another holmd, a remote Docker Engine).",
    ),
    "runtimes": LazyCommand(_BOXES, "List the server's runtimes and what each can do."),
    "secret": LazyCommand(
        "holm.cli.secrets_cmd",
        "Named secrets of your workspace: steps name them, the trace never holds them.",
    ),
    "shot": LazyCommand(
        _INSIDE, "Write a screenshot of a screen as a PNG file and print its path."
    ),
    "stop": LazyCommand(
        _BOXES, "Stop a box and release its memory (a persistent box keeps its files)."
    ),
    "trace": LazyCommand(
        "holm.cli.trace_cmd",
        "Print a trace (BOX_ID: a box's, from the server; FILE or DIR: read offline), or "
        "list, draw, export and import traces.",
    ),
    "view": LazyCommand(
        _BOXES,
        "Print the URL of the screen's viewer page (noVNC, through holmd), with a ticket good "
        "for 15 minutes.",
    ),
    "wait": LazyCommand(
        _ACTIONS,
        "Wait MS milliseconds, or --still: until the screen is unchanged for --settle-ms.",
    ),
    "workspace": LazyCommand(
        "holm.cli.workspaces",
        "Workspaces: each sees only its own boxes, their traces and its own events.",
    ),
}


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="holm", prog_name="holm")
def main() -> None:
    """holm: isolated Linux desktops (boxes) that agents drive, and the trace of what was
    done in each."""


__all__ = ["COMMANDS", "main"]
