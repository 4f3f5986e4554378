"""The one retry policy for remote reward backends: httpx with explicit timeouts, tenacity with jittered backoff.

Transport errors, timeouts, 408, 429, 5xx and malformed replies are retried; `Retry-After` is honoured. Other 4xx
answers are not retried (the request itself is wrong). Whatever is still failing after the last attempt becomes a
`ServiceUnavailable`, so the composite reward records a dead letter and returns None, never a zero.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from time import time
from typing import Any, TypeVar

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt
from tenacity.wait import wait_random_exponential

from rewards.errors import ServiceUnavailable


T = TypeVar("T")

# A server may ask for a long pause (a Space waking up says minutes); beyond this we would rather fail the rollout
# and let the step move on than hold a whole GRPO group hostage.
MAX_RETRY_AFTER_S = 120.0
RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})


class MalformedReply(ValueError):
    """The service answered 2xx, but not with what the wire format promises."""


class RetryableStatus(Exception):
    """A status worth another attempt, with the server's Retry-After (seconds) when it gave one."""

    def __init__(self, status: int, retry_after: float | None) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.retry_after = retry_after


def build_client(timeout_s: float, token_env: str, max_connections: int) -> httpx.AsyncClient:
    """An async client with a bearer token read from `token_env` now (at build time), when that variable is set.

    A public Space or a local vLLM server needs no token, so an unset variable means no Authorization header.
    """
    headers = {}
    token = os.environ.get(token_env)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    # Connecting should be quick even when inference is slow: a dead host fails in seconds, not after timeout_s.
    timeout = httpx.Timeout(timeout_s, connect=min(10.0, timeout_s))
    limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
    return httpx.AsyncClient(headers=headers, timeout=timeout, limits=limits)


class BoundClient:
    """An httpx client and a concurrency semaphore for the running event loop, built lazily; pickles without them.

    Both are bound to the loop they were first used on, and Prefect and TRL call rewards from other processes and
    other loops, so a new loop gets a new pair and a pickle carries only the recipe (never the token).
    """

    def __init__(self, timeout_s: float, token_env: str, max_concurrency: int) -> None:
        self.timeout_s = timeout_s
        self.token_env = token_env
        self.max_concurrency = max_concurrency
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: httpx.AsyncClient | None = None
        self._semaphore: asyncio.Semaphore | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_loop": None, "_client": None, "_semaphore": None}

    def bind(self) -> tuple[httpx.AsyncClient, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if self._client is None or self._semaphore is None or self._loop is not loop:
            self._client = build_client(self.timeout_s, self.token_env, self.max_concurrency)
            self._semaphore = asyncio.Semaphore(self.max_concurrency)
            self._loop = loop
        return self._client, self._semaphore

    async def aclose(self) -> None:
        if self._client is not None and self._loop is asyncio.get_running_loop():
            await self._client.aclose()
        self._client = self._semaphore = self._loop = None

    def __repr__(self) -> str:
        return f"BoundClient(timeout_s={self.timeout_s}, token_env={self.token_env!r}, max_concurrency={self.max_concurrency})"


def retry_after_seconds(value: str | None) -> float | None:
    """Parse a Retry-After header: delta-seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time())
    except (TypeError, ValueError):
        return None


class _WaitRetryAfterOrBackoff:
    """Wait what the server asked for, else jittered exponential backoff."""

    def __init__(self, backoff_s: float) -> None:
        self.backoff = wait_random_exponential(multiplier=backoff_s, max=max(backoff_s, 30.0))

    def __call__(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        if isinstance(error, RetryableStatus) and error.retry_after is not None:
            return min(error.retry_after, MAX_RETRY_AFTER_S)
        return self.backoff(state)


def describe(error: BaseException) -> str:
    """A short cause for dead letters: the exception type and message, never request headers."""
    if isinstance(error, RetryableStatus | MalformedReply):
        return str(error)
    if isinstance(error, httpx.HTTPStatusError):
        return f"HTTP {error.response.status_code}"
    return f"{type(error).__name__}: {error}".rstrip(": ")


async def post_json(
    client: httpx.AsyncClient,
    url: str,
    payload: dict[str, Any],
    parse: Callable[[Any], T],
    *,
    stage: str,
    attempts: int,
    backoff_s: float,
) -> T:
    """POST `payload`, parse the JSON reply with `parse` (which raises MalformedReply), retrying per the policy."""
    retrying = AsyncRetrying(
        stop=stop_after_attempt(attempts),
        wait=_WaitRetryAfterOrBackoff(backoff_s),
        retry=retry_if_exception_type((httpx.TransportError, RetryableStatus, MalformedReply)),
        reraise=True,
    )
    made = 0
    try:
        async for attempt in retrying:
            with attempt:
                made += 1
                response = await client.post(url, json=payload)
                if response.status_code in RETRYABLE_STATUS:
                    raise RetryableStatus(
                        response.status_code, retry_after_seconds(response.headers.get("retry-after"))
                    )
                response.raise_for_status()
                try:
                    body = response.json()
                except ValueError as error:
                    raise MalformedReply(f"malformed: reply is not JSON ({error})") from error
                return parse(body)
    except (httpx.HTTPError, RetryableStatus, MalformedReply) as error:
        raise ServiceUnavailable(stage, describe(error), made) from error
    raise AssertionError("unreachable: tenacity either returned or re-raised")
