"""The privacy step of a call to a remote provider (the gateway's steps 1 and 6; the
detectors, the masking and the identity registry themselves are `app.llm.privacy`).

- `PrivacyGuard.mask`: the whole prompt masked with the detectors, the user's registered
  people and, when the local `detect` role is on (`privacy_detect_url`), the names it
  proposes; a long prompt (over `OFF_LOOP_CHARS`) in a worker thread. A call without its
  user is refused (`privacy_blocked`, nothing is sent).
- `PrivacyGuard.gate`: the call's egress gate (`app.llm.privacy.egress`): the provider
  passes the final request body through it, and a registered name the masking missed
  refuses the call (`privacy_blocked`, nothing is sent).
- `demask`: a reply with a plaintext identity (in the same normalised view) is blocked
  before demasking, else the originals are put back.
- `PrivacyGuard.retry`: a blocked reply gets one corrective retry (the same prompt and a
  reminder to use the placeholders), then `privacy_blocked`.

The detect role's own call goes to a local endpoint with the plain text: it is noted for the
user's egress log like every model call (`egress`; purpose `privacy_detect`, local).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

import aiohttp
import msgspec

from app.core import log as logctx
from app.core.settings import Settings
from app.llm.detect import is_local
from app.llm.egress_log import EgressCall, endpoint_of
from app.llm.errors import ModelError
from app.llm.privacy import (
    EgressGate,
    IdentityRegistry,
    Masker,
    NameIndex,
    PrivacyStats,
    local_model,
)
from app.llm.providers import PROVIDERS, Provider
from app.llm.schema import decode
from app.llm.trace import Trace
from app.llm.types import Call, Message, Reply
from app.llm.window import check_fits

log = logging.getLogger(__name__)

PRIVACY_RETRY_PROMPT = (
    "Your previous answer wrote a personal name or identifier in plain text. Answer again; "
    "refer to people and personal data only by the placeholders in square brackets exactly "
    "as given (for example [PERSON_1], [PHONE_1])."
)


class PrivacyGuard:
    """Masking and the reply check for the calls that leave the machine, with the counters
    `GET /api/privacy/stats` shows."""

    def __init__(
        self,
        settings: Settings,
        identities: IdentityRegistry | None,
        egress: Callable[[EgressCall], None] | None = None,
    ) -> None:
        self.settings = settings
        self.egress = egress  # where the detect role's calls are noted (the egress log)
        # The users' people (none without a database: then only the detectors mask).
        self.identities = identities
        self.stats = PrivacyStats()
        self.name_detector: Provider | None = None  # the optional local `detect` role

    def start_name_detector(self, session: aiohttp.ClientSession | None) -> None:
        url = self.settings.privacy_detect_url
        if not url:
            return
        if not is_local(url):
            # The detect role reads the plain text: never a server off this network.
            log.warning(
                "privacy_detect_url is not on this machine or the local network; "
                "the detect role stays off",
                extra=logctx.fields(setting="privacy_detect_url"),
            )
            return
        self.name_detector = PROVIDERS["openai"](
            settings=self.settings,
            session=session,
            url=url,
            model=self.settings.privacy_detect_model,
            api_key=None,
        )

    async def mask(
        self, messages: Sequence[Message], trace: Trace, user_id: str | None
    ) -> tuple[Masker, list[Message]]:
        """The masker of this call and the masked prompt."""
        if user_id is None:
            # Fail closed: without the user, their registered people cannot be masked.
            raise ModelError(
                "privacy_blocked",
                "a call to a remote provider needs the user "
                "whose people to mask (user_id); nothing was sent",
            )
        registered = (
            await self.identities.index(user_id) if self.identities is not None else NameIndex(())
        )
        proposed = await self._names_from_local_model(messages, user_id)
        if proposed:
            registered = registered.with_names(proposed)
        masker = Masker(registered)
        masked = await masker.mask_messages_off_loop(messages)
        trace.masked = masker.masked_count
        trace.masked_kinds = {kind: n for kind, n in masker.counts.items() if n}
        self.stats.masked(user_id, masker.counts)
        return masker, masked

    def gate(self, masker: Masker, user_id: str | None, purpose: str) -> EgressGate:
        """The egress gate of a masked call: its final request body must hold none of the
        names the call masks by (registered, and proposed by the detect role)."""
        return EgressGate(masker.registered, self.stats.of(user_id or ""), purpose)

    async def _names_from_local_model(self, messages: Sequence[Message], user_id: str) -> list[str]:
        """The detect role's further names; none when it is off or fails (then the
        detectors mask alone — the local model adds, it does not gate)."""
        detector = self.name_detector
        if detector is None:
            return []
        at = time.time()
        try:
            reply = await detector.complete(local_model.detect_call(list(messages)))
        except ModelError as exc:
            self._note_detect(detector, user_id, at, None, exc.code)
            return self._detect_failed(exc.code)
        self._note_detect(detector, user_id, at, reply, None)
        try:
            return local_model.proposed_names(reply.text, list(messages))
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            return self._detect_failed(type(exc).__name__)

    def _note_detect(
        self, detector: Provider, user_id: str, at: float, reply: Reply | None, error: str | None
    ) -> None:
        """The detect role's call for the egress log: local, nothing masked (it reads the
        plain text, which is why it must be local), its tokens."""
        if self.egress is None:
            return
        self.egress(
            EgressCall(
                user_id=user_id,
                at=at,
                purpose=local_model.PURPOSE,
                provider=detector.name,
                endpoint=endpoint_of(detector.url),
                model=(reply.model if reply is not None else None) or detector.model,
                remote=False,
                tokens_in=reply.prompt_tokens if reply is not None else None,
                tokens_out=reply.completion_tokens if reply is not None else None,
                masked={},
                refused=None,
                outcome="ok" if error is None else "error",
                error_code=error,
            )
        )

    @staticmethod
    def _detect_failed(error: str) -> list[str]:
        log.warning(
            "privacy detect role failed; the detectors mask alone", extra=logctx.fields(error=error)
        )
        return []

    def retry(self, call: Call, attempt: Call, trace: Trace, user_id: str | None) -> Call:
        """Count a blocked reply; the corrective call, or `privacy_blocked` after it."""
        counters = self.stats.of(user_id or "")
        counters.replies_blocked += 1
        if attempt is not call:
            counters.calls_blocked += 1
            log.warning(
                "privacy: the reply carried a plaintext identity also after the "
                "corrective retry; blocked",
                extra=logctx.fields(purpose=call.purpose),
            )
            raise ModelError(
                "privacy_blocked",
                "the reply carried a plaintext identity, also after one "
                "corrective retry; blocked, nothing of it is used",
            )
        counters.retries += 1
        trace.privacy_retry = True
        log.warning(
            "privacy: the reply carried a plaintext identity; one corrective retry",
            extra=logctx.fields(purpose=call.purpose),
        )
        corrected = msgspec.structs.replace(
            call, messages=[*call.messages, {"role": "user", "content": PRIVACY_RETRY_PROMPT}]
        )
        try:
            check_fits(call, corrected.messages, self.settings)
        except ModelError:
            counters.calls_blocked += 1
            raise ModelError(
                "privacy_blocked",
                "the reply carried a plaintext identity and "
                "the corrective retry does not fit the window; blocked",
            ) from None
        return corrected


def demask(
    masker: Masker, text: str, schema: type[msgspec.Struct] | None
) -> tuple[str, msgspec.Struct | None]:
    """Block a reply with a plaintext identity, else put the originals back."""
    masker.check(text)
    text = masker.unmask(text, json_string=schema is not None)
    if schema is None:
        return text, None
    try:
        return text, decode(text, schema)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise ModelError(
            "model_bad_output", f"structured output invalid once demasked: {exc}"
        ) from None
