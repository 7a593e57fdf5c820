"""The one error type of the model gateway (design §7, seed 004 §16.4).

Every failure of a model call — network, HTTP, budget, bad output, privacy — is a
`ModelError` with a stable `code`. Callers branch on the code, never on the message; the
message is for people and logs and never carries prompt text or secrets.
"""

from __future__ import annotations

# The stable codes, with the HTTP status an API handler should answer when it passes one on.
CODES: dict[str, int] = {
    "model_timeout": 504,  # no answer within model_timeout
    "model_unavailable": 503,  # connection refused/reset/unreachable, after retries
    "model_http_error": 502,  # 5xx after retries, or an unexpected 4xx
    "model_auth_failed": 502,  # 401/403 from the provider: API key missing or wrong
    "model_not_found": 502,  # 404: the model (or endpoint) does not exist there
    "model_bad_response": 502,  # the server's envelope was not the protocol (not JSON, …)
    "model_bad_output": 502,  # structured output invalid, also after the one repair retry
    "rate_limited": 429,  # 429 after retries, or Retry-After beyond the retry budget
    "prompt_budget_exceeded": 413,  # estimated input + reserved output does not fit
    "output_limit_unsupported": 413,  # the reserved output alone does not fit the window
    # One line of a journal day whose prompt alone does not fit (app.journal.parts): a day is
    # split into parts at line boundaries, never inside a line.
    "journal_line_too_long": 413,
    "model_metadata_unknown": 503,  # context window unknown (provider silent, no setting)
    "model_context_too_small": 503,  # window below the purpose's minimum
    "provider_context_length_rejected": 413,  # the provider refused the prompt as too long
    "privacy_blocked": 502,  # the reply carried a plaintext identity (fail closed)
}


class ModelError(Exception):
    """A model call failed. `code` is one of `CODES`; `message` says what happened.

    `retryable` and `retry_after` are for the gateway's retry loop; `status` is the HTTP
    status the provider answered, when there was one.
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        retryable: bool = False,
        retry_after: float | None = None,
        status: int | None = None,
    ) -> None:
        if code not in CODES:
            raise ValueError(f"unknown model error code {code!r}")
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status

    @property
    def http_status(self) -> int:
        """The status an API handler answers when it reports this error to a client."""
        return CODES[self.code]
