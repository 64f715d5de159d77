"""Settings from HOLM_* environment variables, in one place; and where holmd keeps the
token it generates, which the client reads too."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import msgspec

from holm.wire.access import DEFAULT_STATE_DIR
from holm.wire.spec import Spec, spec_digest

# The file in the state dir that keeps this server's id.
SERVER_ID_FILE = "server-id"


class Config(msgspec.Struct, kw_only=True):
    server_addr: str = "127.0.0.1:8080"
    server_token: str | None = None
    # "token": every route but those a ticket or nothing guards needs the bearer token,
    # HOLM_SERVER_TOKEN or else the one holmd generates in <state_dir>/token. "none": no
    # token, and holmd then listens on loopback only.
    server_auth: Literal["token", "none"] = "token"
    # Names a request's Host header may carry besides the server's own address and
    # HOLM_PUBLIC_URL's host (a DNS-rebinding guard); "*" takes any.
    allowed_hosts: tuple[str, ...] = ()
    cron_secret: str | None = None
    public_url: str | None = None
    storage_backend: Literal["memory", "local", "postgres"] = "memory"
    state_dir: Path = DEFAULT_STATE_DIR
    # The postgres store's database (postgresql://user:password@host:port/db). It holds a
    # password: never logged, never shown by `holmd --help`.
    database_url: str | None = None
    # Where the postgres store keeps blobs and frames: unset (files in the state dir),
    # file:///path, or s3://bucket/prefix with the endpoint below and the AWS_* keys.
    blob_url: str | None = None
    s3_endpoint: str | None = None
    # Several holmd on one postgres store (docs/scale.md): the URL the other holmd reach
    # this one at (None: http://HOLM_SERVER_ADDR), and how long a box's lease lasts
    # unrenewed, which bounds how soon another holmd takes over the boxes of one that died.
    replica_url: str | None = None
    lease_ms: int = 6000
    s3_region: str | None = None
    keep_frames_secs: int = 2 * 3600
    keep_entries_secs: int = 7 * 24 * 3600
    keep_events_secs: int = 7 * 24 * 3600
    prune_secs: int = 3600
    reap_secs: int = 30
    schedule: Literal["internal", "external"] = "internal"
    jobs: Literal["inline", "queue"] = "inline"
    default_runtime: str = "local"
    # The X displays the local runtime gives its boxes' screens, :base to :base+count-1.
    local_display_base: int = 100
    local_display_count: int = 200
    # The most boxes the local runtime runs at once (spares included); None: as many as
    # the host has room for (memory, displays, descriptors, tasks: docs/runtimes.md).
    max_boxes: int | None = None
    # The base of the docker runtime's images; bootstrapped with debootstrap when missing.
    docker_base_image: str = "debian:bookworm-slim"
    # An event shows in the feed this long after it happened, so that the feed's order is
    # final when it is read (entries of different boxes land concurrently).
    events_delay_ms: int = 2000
    max_body_bytes: int = 64 * 1024 * 1024
    # The caps of a fork: at most this long between two replayed steps, this long in all.
    fork_wait_cap_ms: int = 2000
    fork_limit_secs: int = 180
    # The warm pool: how many spare boxes to keep started, by spec digest ("default" in
    # HOLM_POOL names the default spec's).
    pool: dict[str, int] = msgspec.field(default_factory=dict)
    # The key that seals the secrets of runtimes added (holm/secrets_box.py); without it,
    # `<state_dir>/secrets.key`, made at first start.
    secrets_key: str | None = None
    # What the trace keeps of the text a person types through a control viewer: sealed
    # under the trace's own key (shreddable), or nothing but its length.
    record_person_text: Literal["encrypted", "off"] = "encrypted"
    # Whether a box may publish its VNC door off loopback (`spec.policy.bind: "any"`);
    # off, such a box is refused.
    allow_public_viewers: bool = False
    # Whether each input or page step's screen, when it changed since the last frame
    # recorded, is recorded right before the step (engine/step_frames.py); off is the
    # trace of before, which the bench compares it with.
    frame_before_steps: Literal["on", "off"] = "on"

    @property
    def host(self) -> str:
        return self.server_addr.rsplit(":", 1)[0]

    @property
    def port(self) -> int:
        return int(self.server_addr.rsplit(":", 1)[1])


_ENV = {
    "server_addr": "HOLM_SERVER_ADDR",
    "server_token": "HOLM_SERVER_TOKEN",
    "server_auth": "HOLM_SERVER_AUTH",
    "allowed_hosts": "HOLM_ALLOWED_HOSTS",
    "cron_secret": "CRON_SECRET",
    "public_url": "HOLM_PUBLIC_URL",
    "storage_backend": "HOLM_STORAGE_BACKEND",
    "state_dir": "HOLM_STATE_DIR",
    "database_url": "HOLM_DATABASE_URL",
    "blob_url": "HOLM_BLOB_URL",
    "s3_endpoint": "HOLM_S3_ENDPOINT",
    "replica_url": "HOLM_REPLICA_URL",
    "lease_ms": "HOLM_LEASE_MS",
    "s3_region": "AWS_REGION",
    "keep_frames_secs": "HOLM_KEEP_FRAMES_SECS",
    "keep_entries_secs": "HOLM_KEEP_ENTRIES_SECS",
    "keep_events_secs": "HOLM_KEEP_EVENTS_SECS",
    "prune_secs": "HOLM_PRUNE_SECS",
    "reap_secs": "HOLM_SERVER_REAP_SECS",
    "schedule": "HOLM_SERVER_SCHEDULE",
    "jobs": "HOLM_SERVER_JOBS",
    "default_runtime": "HOLM_DEFAULT_RUNTIME",
    "local_display_base": "HOLM_LOCAL_DISPLAY_BASE",
    "local_display_count": "HOLM_LOCAL_DISPLAY_COUNT",
    "max_boxes": "HOLM_MAX_BOXES",
    "docker_base_image": "HOLM_DOCKER_BASE_IMAGE",
    "events_delay_ms": "HOLM_EVENTS_DELAY_MS",
    "max_body_bytes": "HOLM_MAX_BODY_BYTES",
    "fork_wait_cap_ms": "HOLM_FORK_WAIT_CAP_MS",
    "fork_limit_secs": "HOLM_FORK_LIMIT_SECS",
    "pool": "HOLM_POOL",
    "secrets_key": "HOLM_SECRETS_KEY",
    "record_person_text": "HOLM_RECORD_PERSON_TEXT",
    "allow_public_viewers": "HOLM_ALLOW_PUBLIC_VIEWERS",
    "frame_before_steps": "HOLM_FRAME_BEFORE_STEPS",
}
# Read by holm.server before the rest, to log what loading them says.
LOG_LEVEL, DEFAULT_LOG_LEVEL = "HOLM_LOG_LEVEL", "INFO"
# A spec digest, as `holm.wire.spec.spec_digest` makes it.
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


def load_config(environ: Mapping[str, str] | None = None, **overrides: object) -> Config:
    """Read the settings; a malformed value is an error that names its variable."""
    env = os.environ if environ is None else environ
    raw: dict[str, object] = {
        field: env[var] for field, var in _ENV.items() if env.get(var, "") != ""
    }
    if isinstance(raw.get("allowed_hosts"), str):
        # A list in one variable: names separated by commas or spaces.
        raw["allowed_hosts"] = [
            name for name in re.split(r"[,\s]+", str(raw["allowed_hosts"])) if name
        ]
    if isinstance(raw.get("pool"), str):
        raw["pool"] = parse_pool(str(raw["pool"]))
    raw.update(overrides)
    try:
        config = msgspec.convert(raw, Config, strict=False, dec_hook=_decode_path)
    except msgspec.ValidationError as exc:
        raise ValueError(f"bad setting: {exc}") from exc
    _check_storage(config, env)
    return config


def _check_storage(config: Config, env: Mapping[str, str]) -> None:
    """The store's settings fit together, so that holmd refuses them at start (exit 2)
    rather than when it first opens the store."""
    if config.storage_backend == "postgres" and not config.database_url:
        raise ValueError("bad setting: HOLM_STORAGE_BACKEND=postgres needs HOLM_DATABASE_URL")
    url = config.blob_url
    if url is None:
        return
    if config.storage_backend != "postgres":
        raise ValueError(
            "bad setting: HOLM_BLOB_URL is for HOLM_STORAGE_BACKEND=postgres; the local store"
            " keeps its blobs and frames in HOLM_STATE_DIR"
        )
    if not url.startswith(("s3://", "file://")):
        raise ValueError(f"bad setting: HOLM_BLOB_URL {url!r} is not s3://… or file://…")
    if url.startswith("s3://") and not (
        env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY")
    ):
        raise ValueError(
            "bad setting: HOLM_BLOB_URL is an s3:// URL: set AWS_ACCESS_KEY_ID and"
            " AWS_SECRET_ACCESS_KEY"
        )


def defaults() -> list[tuple[str, str]]:
    """Each variable holmd reads beside its default, for `holmd --help`."""
    config = Config()
    shown = []
    for field, var in _ENV.items():
        value = getattr(config, field)
        shown.append((var, "none" if value in (None, (), {}) else str(value)))
    return [*shown, (LOG_LEVEL, DEFAULT_LOG_LEVEL)]


def parse_pool(text: str) -> dict[str, int]:
    """HOLM_POOL: `NAME:COUNT` items separated by commas or spaces, where NAME is `default`
    (the default spec) or a spec digest (`sha256:…`); counts by digest."""
    counts: dict[str, int] = {}
    for item in re.split(r"[,\s]+", text):
        if not item:
            continue
        name, _, count = item.rpartition(":")
        digest = spec_digest(Spec()) if name == "default" else name
        if not _DIGEST.match(digest) or not count.isdigit():
            raise ValueError(
                f"bad setting: HOLM_POOL item {item!r} is not default:COUNT or sha256:…:COUNT"
            )
        counts[digest] = counts.get(digest, 0) + int(count)
    return counts


def _decode_path(type_: type, value: object) -> object:
    if type_ is Path and isinstance(value, str | Path):
        return Path(value)
    raise NotImplementedError


def server_id_of(state_dir: Path) -> str:
    """This server's id, kept in the state dir so that a restarted server adopts the boxes
    it labelled before (and never another server's)."""
    path = state_dir / SERVER_ID_FILE
    with contextlib.suppress(FileNotFoundError):
        existing = path.read_text().strip()
        if existing:
            return existing
    # Private, as when the token is made in it: traces hold screenshots of the boxes.
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    server_id = "srv_" + secrets.token_hex(8)
    path.write_text(server_id + "\n")
    return server_id


__all__ = ["Config", "load_config", "parse_pool", "server_id_of"]
