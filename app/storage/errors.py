"""What a store says when a request does not fit its data; the API turns these into the
design §9 error shape (`app.api.validation.store_errors_as_api`)."""

from __future__ import annotations


class Missing(LookupError):
    """No such thing for this user (404)."""


class Conflict(Exception):
    """The change contradicts what is stored (409); `code` says which rule."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
