"""`python3 -m holm.agent --run-dir DIR --screens N --width W --height H
[--display-base B] [--no-chromium] [--features F,…] [--apps-json JSON] [--home PATH]
[--frame-key HEX] [--server x11|wayland]`: the in-box agent."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

import msgspec

from holm.agent.agent import Options
from holm.agent.server import serve
from holm.wire.spec import MAX_SCREENS, AppDefinition, Feature


def parse(argv: list[str]) -> tuple[Options, dict[str, AppDefinition]]:
    parser = argparse.ArgumentParser(prog="python3 -m holm.agent")
    parser.add_argument("--run-dir", type=Path, required=True, help="where agent.sock goes")
    parser.add_argument("--screens", type=int, default=1, choices=range(1, MAX_SCREENS + 1))
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=800)
    parser.add_argument(
        "--display-base", type=int, default=0, help="the first X display number to try"
    )
    parser.add_argument("--no-chromium", action="store_true", help="bring up no Chromium")
    parser.add_argument(
        "--features",
        default="",
        help="the spec's features, comma-separated (accessibility, audio, dock, …)",
    )
    parser.add_argument(
        "--apps-json", default="{}", help="the spec's `apps`, as JSON, added to the catalog"
    )
    parser.add_argument("--home", help="the box's home (default: $HOME)")
    parser.add_argument("--frame-key", default="", help="the server's key for frame hashes, in hex")
    parser.add_argument(
        "--server", default="x11", choices=("x11", "wayland"), help="the screens' display server"
    )
    args = parser.parse_args(argv)
    for name in ("width", "height"):
        if not 64 <= getattr(args, name) <= 8192:
            parser.error(f"--{name} must be 64 to 8192")
    try:
        frame_key = bytes.fromhex(args.frame_key)
    except ValueError:
        parser.error("--frame-key must be hex digits")
    try:
        apps = msgspec.json.decode(args.apps_json, type=dict[str, AppDefinition])
    except msgspec.DecodeError as exc:
        parser.error(f"--apps-json: {exc}")
    try:
        names = [name for name in args.features.split(",") if name]
        features = msgspec.convert(names, list[Feature])
    except msgspec.ValidationError as exc:
        parser.error(f"--features: {exc}")
    options = Options(
        run_dir=args.run_dir.absolute(),
        screens=args.screens,
        width=args.width,
        height=args.height,
        display_base=args.display_base,
        chromium=not args.no_chromium,
        features=features,
        frame_key=frame_key,
        server=args.server,
    )
    if args.home:
        options.home = args.home
    return options, apps


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(asctime)s agent %(levelname)s %(message)s"
    )
    options, apps = parse(sys.argv[1:] if argv is None else argv)
    asyncio.run(serve(options, apps))


if __name__ == "__main__":
    main()
