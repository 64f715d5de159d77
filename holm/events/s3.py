"""Blobs and frames in an S3-compatible bucket (`HOLM_BLOB_URL=s3://bucket/prefix`), for the
postgres store. The client is aiobotocore's (docs/storage.md says why): asyncio-native on
aiohttp, which holm already runs on, and it does all the bucket work holm needs, creating
the bucket included.

Keys are content-addressed (objects.py), so a write is put-if-absent: `If-None-Match: *`,
which S3 and SeaweedFS honour (412 when the key is there: nothing to do). A server that
answers 501 to it gets a HEAD first instead, from then on. The bucket is made when it is
missing, on first use. Credentials come from `AWS_ACCESS_KEY_ID` and
`AWS_SECRET_ACCESS_KEY` only, given to the client explicitly, so that botocore never goes
looking for others (files, an instance's metadata address). botocore's data files are
read in a thread, not on the event loop; requests go out on aiohttp's loop.

An error reaching the server (refused, reset, timed out, a 5xx) is `Unavailable`,
retryable; refused credentials are `Unavailable`, not retryable.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from holm.errors import Unavailable

if TYPE_CHECKING:
    from aiobotocore.session import AioSession
    from types_aiobotocore_s3 import S3Client

# DeleteObjects takes at most this many keys a call.
_DELETE_BATCH = 1000
_NOT_FOUND = {"404", "NoSuchKey", "NotFound", "NoSuchBucket"}
# One botocore session for the process: its data files are read once.
_session: AioSession | None = None


def parse_s3_url(url: str) -> tuple[str, str]:
    """`s3://bucket/prefix` → (bucket, prefix without slashes at its ends)."""
    parts = urlsplit(url)
    if parts.scheme != "s3" or not parts.netloc:
        raise ValueError(f"bad setting: HOLM_BLOB_URL {url!r} is not s3://bucket/prefix")
    return parts.netloc, parts.path.strip("/")


class S3Objects:
    """The `ObjectStore` of a bucket and a key prefix."""

    def __init__(
        self,
        url: str,
        *,
        endpoint: str | None = None,
        region: str | None = None,
        environ: dict[str, str] | None = None,
    ) -> None:
        self.bucket, self.prefix = parse_s3_url(url)
        self.endpoint = endpoint
        self.region = region or "us-east-1"
        env = os.environ if environ is None else environ
        self._key_id = env.get("AWS_ACCESS_KEY_ID", "")
        self._secret = env.get("AWS_SECRET_ACCESS_KEY", "")
        self._token = env.get("AWS_SESSION_TOKEN") or None
        if not (self._key_id and self._secret):
            raise ValueError(
                "bad setting: HOLM_BLOB_URL is an s3:// URL: set AWS_ACCESS_KEY_ID and"
                " AWS_SECRET_ACCESS_KEY"
            )
        self._client: S3Client | None = None
        self._opening: asyncio.Task[S3Client] | None = None
        self._stack = contextlib.AsyncExitStack()
        # Whether the server honours If-None-Match on a put (else: HEAD first).
        self._conditional = True

    def _key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    async def put(self, key: str, data: bytes) -> None:
        client = await self._open()
        name = self._key(key)
        with _mapped("write"):
            if not self._conditional:
                if await self._exists(client, name):
                    return
                await client.put_object(Bucket=self.bucket, Key=name, Body=data)
                return
            try:
                await client.put_object(Bucket=self.bucket, Key=name, Body=data, IfNoneMatch="*")
            except Exception as exc:
                match _status(exc):
                    case 412 | 409:
                        return  # there already, with the same bytes
                    case 501:
                        self._conditional = False
                        await self.put(key, data)
                    case _:
                        raise

    async def get(self, key: str) -> bytes | None:
        client = await self._open()
        with _mapped("read"):
            try:
                answer = await client.get_object(Bucket=self.bucket, Key=self._key(key))
            except Exception as exc:
                if _code(exc) in _NOT_FOUND:
                    return None
                raise
            async with answer["Body"] as body:
                data: bytes = await body.read()
            return data

    async def delete(self, keys: Iterable[str]) -> None:
        names = [self._key(key) for key in keys]
        if not names:
            return
        client = await self._open()
        with _mapped("delete"):
            for start in range(0, len(names), _DELETE_BATCH):
                batch = names[start : start + _DELETE_BATCH]
                await client.delete_objects(
                    Bucket=self.bucket,
                    Delete={"Objects": [{"Key": name} for name in batch], "Quiet": True},
                )

    async def close(self) -> None:
        if self._opening is not None and not self._opening.done():
            self._opening.cancel()
            with contextlib.suppress(BaseException):
                await self._opening
        await self._stack.aclose()
        self._client = None

    async def _open(self) -> S3Client:
        if self._client is not None:
            return self._client
        if self._opening is None or (self._opening.done() and self._opening.exception()):
            self._opening = asyncio.ensure_future(self._connect())
        self._client = await asyncio.shield(self._opening)
        return self._client

    async def _connect(self) -> S3Client:
        from aiobotocore.config import AioConfig

        session = await _warm_session()
        config = AioConfig(
            s3={"addressing_style": "path"},
            connect_timeout=5,
            read_timeout=30,
            retries={"max_attempts": 2, "mode": "standard"},
        )
        client: S3Client = await self._stack.enter_async_context(
            session.create_client(
                "s3",
                endpoint_url=self.endpoint,
                region_name=self.region,
                aws_access_key_id=self._key_id,
                aws_secret_access_key=self._secret,
                aws_session_token=self._token,
                config=config,
            )
        )
        with _mapped("make the bucket"):
            try:
                await client.head_bucket(Bucket=self.bucket)
            except Exception as exc:
                if _code(exc) not in _NOT_FOUND:
                    raise
                try:
                    await client.create_bucket(Bucket=self.bucket)
                except Exception as made:
                    # Made meanwhile by another holmd.
                    if _code(made) not in {"BucketAlreadyOwnedByYou", "BucketAlreadyExists"}:
                        raise
        return client

    async def _exists(self, client: S3Client, name: str) -> bool:
        try:
            await client.head_object(Bucket=self.bucket, Key=name)
        except Exception as exc:
            if _code(exc) in _NOT_FOUND:
                return False
            raise
        return True


async def _warm_session() -> AioSession:
    global _session
    if _session is None:
        from aiobotocore.session import get_session

        session = get_session()
        # botocore reads its JSON models from disk: off the loop.
        warm = session.warm_up_loader_caches  # type: ignore[attr-defined]  # newer than the stubs
        await asyncio.to_thread(warm, "s3")
        _session = session
    return _session


def _code(exc: BaseException) -> str:
    response: Any = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return ""
    return str(response.get("Error", {}).get("Code", ""))


def _status(exc: BaseException) -> int:
    response: Any = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return 0
    return int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))


@contextlib.contextmanager
def _mapped(doing: str) -> Any:
    """botocore's and the network's errors as holm's, at the store's boundary."""
    from aiohttp import ClientError as HttpError
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        yield
    except ClientError as exc:
        status, code = _status(exc), _code(exc)
        if status in (401, 403) or code in {"AccessDenied", "InvalidAccessKeyId"}:
            raise Unavailable(
                f"the S3 server refused holm's credentials to {doing}: {code}", retryable=False
            ) from exc
        raise Unavailable(f"the S3 server could not {doing}: {code or status}") from exc
    except (BotoCoreError, HttpError, OSError) as exc:  # TimeoutError is an OSError
        raise Unavailable(f"the S3 server could not be reached to {doing}: {exc}") from exc


__all__ = ["S3Objects", "parse_s3_url"]
