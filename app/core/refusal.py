"""A request a room cannot serve, said in the API's error shape (design §9): `status`, `code`,
`message`. Rooms below the API raise it (a photo the media store does not take, a profile
result that cannot become a proposal); the API's error middleware answers every one as it is
(`app/api/errors.py`, whose `ApiError` is one too), so no handler translates it by hand."""

from __future__ import annotations


class Refused(Exception):
    def __init__(
        self, status: int, code: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}
