"""The postgres store's tables, made and migrated by holmd when it opens the store: no
manual step. `holm_schema_version` holds the version applied; each migration runs in its
own transaction, under an advisory lock, so two holmd starting at once apply it once.

    holm_feed      one row: the next `pos`. Every append takes its row lock first, so
                   appends commit one at a time, in `pos` order (docs/storage.md).
    holm_traces    a trace's layout (pruning.py: `head`, `first_seq`, `next_seq`) and
                   the times of its first and last kept entries
    holm_entries   (trace, seq) → the entry's JSON line exactly as a JSONL file holds it
                   (without its newline), its `pos`, `at_ms`, and the blobs it names
    holm_blobs     spilled values (content-addressed objects) and when last written
    holm_frames    frames (objects named by trace and pixel hash) and when last written
    holm_trace_keys  each trace's own data key, sealed (shredding deletes its row)
    holm_replicas  each holmd on this database: its internal URL, alive until when
    holm_box_leases  each box's owning holmd (leases.py), until when
    holm_idempotency  idempotency keys and the answers they replay (shared_keys.py)
    holm_documents  small documents every holmd shares, by name, versioned (shared_docs.py):
                   the workspaces and their keys' digests
    holm_browser_states  saved browser states, sealed under HOLM_SECRETS_KEY (browser_states.py)

`holm_append` is one append's transaction in one round trip: it takes the feed's row,
checks that each trace's next seq is the one the caller numbered its lines from (another
writer may have appended since: it then raises `HL001` and the caller numbers again), and
writes the counters, the entries and the blobs' times. Version 4 replaces it with one that
does the same for less of the server's time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncpg

# pg_advisory_lock keys: "holm" in ASCII, then one for the objects (blobs and frames).
SCHEMA_LOCK = 0x686F6C6D
OBJECTS_LOCK = SCHEMA_LOCK + 1
# Raised by holm_append when a trace's next seq is not the caller's.
STALE_SEQ = "HL001"

_V1 = """
CREATE TABLE holm_feed (
  id int PRIMARY KEY CHECK (id = 1),
  next_pos bigint NOT NULL
);
INSERT INTO holm_feed VALUES (1, 0);

CREATE TABLE holm_traces (
  trace text PRIMARY KEY,
  next_seq bigint NOT NULL,
  first_seq bigint NOT NULL DEFAULT 0,
  head bigint[] NOT NULL DEFAULT '{}',
  first_at_ms bigint,
  last_at_ms bigint
);

CREATE TABLE holm_entries (
  trace text NOT NULL,
  seq bigint NOT NULL,
  pos bigint NOT NULL,
  at_ms bigint NOT NULL,
  line text NOT NULL,
  refs text,
  PRIMARY KEY (trace, seq)
);
CREATE UNIQUE INDEX holm_entries_pos ON holm_entries (pos);
CREATE INDEX holm_entries_with_refs ON holm_entries (trace) WHERE refs IS NOT NULL;

CREATE TABLE holm_blobs (
  ref text PRIMARY KEY,
  at_ms bigint NOT NULL
);

CREATE TABLE holm_frames (
  trace text NOT NULL,
  hash text NOT NULL,
  at_ms bigint NOT NULL,
  PRIMARY KEY (trace, hash)
);
CREATE INDEX holm_frames_at ON holm_frames (at_ms);

CREATE FUNCTION holm_append(
  t_trace text[], t_start bigint[], t_count bigint[], t_first_at bigint[], t_last_at bigint[],
  e_trace text[], e_seq bigint[], e_at bigint[], e_line text[], e_refs text[],
  b_ref text[], b_at bigint
) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  first_pos bigint;
  moved bigint;
BEGIN
  -- The feed's row first: appends commit one at a time, so pos is gap-free in commit
  -- order, and the trace counters below have no other writer meanwhile.
  UPDATE holm_feed SET next_pos = next_pos + cardinality(e_trace) WHERE id = 1
    RETURNING next_pos - cardinality(e_trace) INTO first_pos;
  -- A new trace starts at seq 0; a known one at its next_seq. first_seq carries the
  -- caller's start in EXCLUDED (and is 0, as it must be, for a new row).
  INSERT INTO holm_traces AS t (trace, next_seq, first_seq, first_at_ms, last_at_ms)
    SELECT u.trace, u.start + u.n, u.start, u.first_at, u.last_at
      FROM unnest(t_trace, t_start, t_count, t_first_at, t_last_at)
        AS u(trace, start, n, first_at, last_at)
     WHERE u.start = 0 OR EXISTS (SELECT 1 FROM holm_traces k WHERE k.trace = u.trace)
  ON CONFLICT (trace) DO UPDATE
    SET next_seq = EXCLUDED.next_seq,
        last_at_ms = EXCLUDED.last_at_ms,
        first_at_ms = coalesce(t.first_at_ms, EXCLUDED.first_at_ms)
    WHERE t.next_seq = EXCLUDED.first_seq;
  GET DIAGNOSTICS moved = ROW_COUNT;
  IF moved <> cardinality(t_trace) THEN
    RAISE EXCEPTION 'a trace has had entries appended since it was numbered'
      USING ERRCODE = 'HL001';
  END IF;
  INSERT INTO holm_entries (trace, seq, pos, at_ms, line, refs)
    SELECT u.trace, u.seq, first_pos + u.ord - 1, u.at, u.line, u.refs
      FROM unnest(e_trace, e_seq, e_at, e_line, e_refs)
        WITH ORDINALITY AS u(trace, seq, at, line, refs, ord);
  INSERT INTO holm_blobs (ref, at_ms) SELECT DISTINCT unnest(b_ref), b_at
  ON CONFLICT (ref) DO UPDATE SET at_ms = EXCLUDED.at_ms;
  RETURN first_pos;
END
$$;
"""

# Each trace's own data key (holm/events/trace_keys.py), sealed under the server's key:
# apart from the entries, so shredding deletes one row and leaves every entry.
_V2 = """
CREATE TABLE holm_trace_keys (
  trace text PRIMARY KEY,
  sealed bytea NOT NULL
);
"""

# Replicas (holm/events/leases.py): each holmd on this database, the URL the others reach it
# at, and until when it is taken as alive; each box's owning holmd, until when. Times are
# the database's clock (ms), so that the holmd's clocks need not agree. And the
# idempotency keys every holmd honours (holm/events/shared_keys.py).
_V3 = """
CREATE TABLE holm_replicas (
  id text PRIMARY KEY,
  url text NOT NULL,
  expires_at_ms bigint NOT NULL
);

CREATE TABLE holm_box_leases (
  box text PRIMARY KEY,
  owner text NOT NULL,
  expires_at_ms bigint NOT NULL
);
CREATE INDEX holm_box_leases_owner ON holm_box_leases (owner);

CREATE TABLE holm_idempotency (
  scope text PRIMARY KEY,
  digest text NOT NULL,
  holder text NOT NULL,
  made_at_ms bigint NOT NULL,
  status int,
  content_type text,
  headers text,
  body bytea
);
CREATE INDEX holm_idempotency_made ON holm_idempotency (made_at_ms);

CREATE TABLE holm_documents (
  name text PRIMARY KEY,
  version bigint NOT NULL,
  doc bytea NOT NULL
);

CREATE TABLE holm_browser_states (
  space text NOT NULL,
  name text NOT NULL,
  info text NOT NULL,
  sealed bytea NOT NULL,
  PRIMARY KEY (space, name)
);
"""

# holm_append again, cheaper per commit (bench/store_postgres.py; docs/storage.md, Figures):
# the traces' counters by one UPDATE joined to the batch, and an INSERT only for the new
# traces of a batch that has some (an upsert's conflict check cost ~4 µs a trace), and no
# statement for blobs when there are none. The same checks, the same error.
_V4 = """
CREATE OR REPLACE FUNCTION holm_append(
  t_trace text[], t_start bigint[], t_count bigint[], t_first_at bigint[], t_last_at bigint[],
  e_trace text[], e_seq bigint[], e_at bigint[], e_line text[], e_refs text[],
  b_ref text[], b_at bigint
) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  first_pos bigint;
  moved bigint;
  added bigint := 0;
BEGIN
  -- The feed's row first: appends commit one at a time, so pos is gap-free in commit
  -- order, and the trace counters below have no other writer meanwhile.
  UPDATE holm_feed SET next_pos = next_pos + cardinality(e_trace) WHERE id = 1
    RETURNING next_pos - cardinality(e_trace) INTO first_pos;
  -- A known trace moves on only from the next seq the caller numbered from.
  UPDATE holm_traces AS t
     SET next_seq = u.start + u.n,
         last_at_ms = u.last_at,
         first_at_ms = coalesce(t.first_at_ms, u.first_at)
    FROM unnest(t_trace, t_start, t_count, t_first_at, t_last_at)
      AS u(trace, start, n, first_at, last_at)
   WHERE t.trace = u.trace AND t.next_seq = u.start;
  GET DIAGNOSTICS moved = ROW_COUNT;
  IF moved < cardinality(t_trace) THEN
    -- A new trace starts at seq 0; one that exists already is not new.
    INSERT INTO holm_traces (trace, next_seq, first_seq, first_at_ms, last_at_ms)
      SELECT u.trace, u.n, 0, u.first_at, u.last_at
        FROM unnest(t_trace, t_start, t_count, t_first_at, t_last_at)
          AS u(trace, start, n, first_at, last_at)
       WHERE u.start = 0
    ON CONFLICT (trace) DO NOTHING;
    GET DIAGNOSTICS added = ROW_COUNT;
  END IF;
  IF moved + added <> cardinality(t_trace) THEN
    RAISE EXCEPTION 'a trace has had entries appended since it was numbered'
      USING ERRCODE = 'HL001';
  END IF;
  INSERT INTO holm_entries (trace, seq, pos, at_ms, line, refs)
    SELECT u.trace, u.seq, first_pos + u.ord - 1, u.at, u.line, u.refs
      FROM unnest(e_trace, e_seq, e_at, e_line, e_refs)
        WITH ORDINALITY AS u(trace, seq, at, line, refs, ord);
  IF cardinality(b_ref) > 0 THEN
    INSERT INTO holm_blobs (ref, at_ms) SELECT DISTINCT unnest(b_ref), b_at
    ON CONFLICT (ref) DO UPDATE SET at_ms = EXCLUDED.at_ms;
  END IF;
  RETURN first_pos;
END
$$;
"""

# Version n is MIGRATIONS[n - 1]; a new version is appended, never edited.
MIGRATIONS: list[str] = [_V1, _V2, _V3, _V4]


async def migrate(conn: asyncpg.Connection, schema: str | None = None) -> int:
    """Bring the tables of `schema` (made when missing; None: the search path's) to the
    last version; the version now."""
    await conn.execute("SELECT pg_advisory_lock($1)", SCHEMA_LOCK)
    try:
        if schema is not None:
            await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            await conn.execute(f'SET search_path TO "{schema}"')
        await conn.execute("CREATE TABLE IF NOT EXISTS holm_schema_version (version int NOT NULL)")
        version = await conn.fetchval("SELECT max(version) FROM holm_schema_version") or 0
        if version > len(MIGRATIONS):
            raise RuntimeError(
                f"the database's holm schema is version {version}, newer than this holm's"
                f" {len(MIGRATIONS)}: run a newer holmd"
            )
        for number, sql in enumerate(MIGRATIONS[version:], start=version + 1):
            async with conn.transaction():
                await conn.execute(sql)
                await conn.execute("INSERT INTO holm_schema_version VALUES ($1)", number)
            version = number
        return int(version)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", SCHEMA_LOCK)


__all__ = ["MIGRATIONS", "OBJECTS_LOCK", "SCHEMA_LOCK", "STALE_SEQ", "migrate"]
