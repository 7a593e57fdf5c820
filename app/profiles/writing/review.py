"""The explicit AI review of the writing profile through the model gateway (seed 004 §13, §15).

The same contract as the copy/paste path: the `kansho.profile_analysis_package` goes to the
model (purpose `profile_review`, structured answer `ReviewAnswer`), and its answer is read as
a `kansho.profile_analysis_result` by the same checks as a pasted one. Only then governance
decides: `learning` applies what an automatic path may (never a locked field, never one the
user wrote or accepted), `advising` and `frozen` leave every change pending for the user.

The offline model answers a valid, neutral result: it cannot judge style, so it proposes no
change, and the review reports that plainly.
"""

from __future__ import annotations

from typing import Any

import msgspec

from app.llm.gateway import Gateway
from app.llm.offline.handlers import OfflineRequest
from app.llm.types import Message
from app.profiles.writing import package as pkg
from app.profiles.writing.service import ProfileService
from app.profiles.writing.views import Proposal

SYSTEM = (
    "You analyse how a person writes, for the writing profile of their private journal. You "
    "get an analysis package as JSON. Do its `task`. Answer with the JSON object of the "
    "schema `profile_review`: `summary`, `evidence_basis`, `changes` (each as described in the "
    "package's `expected_result`). No change where the profile already fits: then `changes` "
    "is empty."
)
OFFLINE_SUMMARY = (
    "The built-in offline model cannot judge writing style; it proposes no "
    "change. Use a real model or the copy/paste review."
)


def review_messages(package: dict[str, Any]) -> list[Message]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": pkg.dumps(package)}]


async def run_review(
    profiles: ProfileService, gateway: Gateway, user_id: str, mode: str
) -> Proposal:
    """Ask the model; returns the stored proposal. Raises `ModelError` (no answer) or
    `pkg.ResultInvalid` (`nothing_to_apply`: the model proposed nothing usable)."""
    package = await profiles.package(user_id, mode)
    completion = await gateway.complete(
        pkg.PURPOSE_REVIEW,
        review_messages(package),
        schema=pkg.ReviewAnswer,
        max_tokens=profiles.settings.profile_review_max_tokens,
        temperature=0.2,
        user_id=user_id,
    )
    answer = msgspec.to_builtins(completion.value)
    result = {
        "kind": pkg.RESULT_KIND,
        "format_version": pkg.FORMAT_VERSION,
        "mode": mode,
        "target": "writing",
        **answer,
    }
    return await profiles.import_result(user_id, result, via="api")


def offline_review(request: OfflineRequest) -> dict[str, Any]:
    return {"summary": OFFLINE_SUMMARY, "evidence_basis": [], "changes": []}


# The offline model's answer (composed into its answers by the wiring, `app.wiring.purposes`).
PURPOSE_HANDLERS = {pkg.PURPOSE_REVIEW: offline_review}
