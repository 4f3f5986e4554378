"""The one error type every remote backend raises once its retries are spent."""

from __future__ import annotations


class ServiceUnavailable(RuntimeError):
    """A scorer or judge could not answer (unreachable, 5xx/429 after retries, malformed reply).

    The composite reward turns this into a dead letter and a None reward, never a zero.
    """

    def __init__(self, stage: str, cause: str, attempts: int = 1) -> None:
        super().__init__(f"{stage} unavailable after {attempts} attempt(s): {cause}")
        self.stage = stage
        self.cause = cause
        self.attempts = attempts
