"""A request a room cannot serve, said in the API's error shape (design §9): `status`, `code`,
`message`. Rooms below the API raise it (a photo the media store does not take, a profile
result that cannot become a proposal); the API's error middleware answers every one as it is
(`app/api/errors.py`, whose `ApiError` is one too), so no handler translates it by hand."""

from __future__ import annotations

from typing import ClassVar


class Refused(Exception):
    def __init__(
        self, status: int, code: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}


class RefusedKind(Refused):
    """A room's refusal whose status and code are its class's (`STATUS`, `CODE`), raised with
    its message alone: `class NotOwn(RefusedKind): STATUS, CODE = 409, "not_own"`."""

    STATUS: ClassVar[int] = 400
    CODE: ClassVar[str] = "invalid_request"

    def __init__(self, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(self.STATUS, self.CODE, message, headers)
