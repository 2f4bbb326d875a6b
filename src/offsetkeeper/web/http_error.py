"""The error a dashboard handler raises to answer with an HTTP status and one sentence."""

from __future__ import annotations


class HttpError(Exception):
    """An answer other than 200: `status` and a message for the user (already safe to show)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message
