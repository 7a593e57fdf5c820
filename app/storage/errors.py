"""What a store says when a request does not fit its data: `Refused` kinds (design §9), which
the API's error middleware answers as they are (`app.api.errors`), so no handler maps them.
The one `Conflict` of the app."""

from __future__ import annotations

from app.core.refusal import Refused


class Missing(Refused, LookupError):
    """No such thing for this user: 404 `not_found`."""

    def __init__(self, message: str) -> None:
        super().__init__(404, "not_found", message)


class Conflict(Refused):
    """The change contradicts what is stored: 409, `code` says which rule."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(409, code, message)
