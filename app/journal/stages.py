"""The two model calls of a journal draft (design §8) and their local fallbacks.

1. *Reconstruct* (`journal_reconstruct`, structured): the day's sources → the model's answer,
   read by the gateway's schema validation and checked by `app.journal.validator`. Invalid
   JSON, a bad structured answer or a privacy block (after the gateway's one corrective
   retry) → the fallback artifact; the model's answer is then neither repaired nor used.
2. *Narrate* (`journal_generate`, plain text): the writing brief and ONLY the verified
   artifact. A privacy block or an empty answer → a local draft made from the artifact.

Without a model server the offline stand-in answers both (`app.journal.offline`); its answers
pass through the same checks, and each stage records outcome `offline` and code `no_model`,
the draft narration `local`: nothing calls its text a model's.

Other model errors (server down, timeout, budget) end the job with their code: the journal
never invents a draft it could not make honestly.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import msgspec

from app.journal.artifact import (
    VerifiedArtifact,
    local_draft,
    verified_artifact,
    with_done_list,
)
from app.journal.day import Source
from app.journal.schema import (
    PURPOSE_NARRATE,
    PURPOSE_RECONSTRUCT,
    Reconstruction,
    unknown_key,
)
from app.journal.trace import StageRecord
from app.journal.validator import validate
from app.llm.errors import ModelError
from app.llm.gateway import Gateway
from app.llm.types import Message
from app.profiles.writing.brief import DEFAULT_BRIEF

# Stage-1 errors that mean "the answer is unusable", not "no model": take the fallback.
FALLBACK_ERRORS = frozenset(("model_bad_output", "privacy_blocked"))
# The provider that is no model (`app.llm.providers.offline`), and the code a stage records
# when it answered: the trace never calls its text a model's.
OFFLINE = "offline"
NO_MODEL = "no_model"

RECONSTRUCT_SYSTEM = """\
You reconstruct a diary day from the user's own lines. You get JSON with `sources`: user
lines (`u1`, `u2`, …) and, as context only, the assistant line before a user line (`a1`, …).
Answer with one JSON object of the schema `journal_reconstruct`:
- `source_order`: every user id, in the order given.
- `chronology`: one item per user id: `{"source_id", "source": "user", "time", "claims"}`.
  Keep the given order, except that two items may change places when both have a time
  written in their own lines and the one placed first is the earlier time. An item without
  a time keeps its place among all others; equal times keep the given order. `time` is only
  a bare time token copied from that same line (`6:00`, `6:00 Uhr`, `halb acht`) or null.
  `claims`: `[{"kind", "evidence"}]`, each `evidence` an exact copy of a part of that line.
- `contradictions`, `uncertainties`, `plan_changes`, `corrections`: lists of
  `{"source_id", "evidence"}` with evidence copied exactly from the named user line.
Never cite assistant lines as facts. No other keys. Empty lists when there is nothing.
"""

# Added to the brief when the artifact has a `base` (seed 004 `include_existing`).
BASE_RULE = """\
The artifact's `base` is the user's own current text of this entry. Revise it rather than
starting anew: keep what it says and how it says it, add what the sources tell that it
lacks, and change it only where a source corrects it. Invent nothing beyond the base and
the sources.
"""


@dataclass(slots=True)
class Reconstructed:
    artifact: VerifiedArtifact
    validation: list[str]
    record: StageRecord


@dataclass(slots=True)
class Narrated:
    text: str
    narration: str  # "model" | "local"
    record: StageRecord


class InputLine(msgspec.Struct):
    id: str
    role: str  # "user" | "assistant"
    text: str


class DayInput(msgspec.Struct):
    """What stage 1 reads: the day's date and its sources, each with its local id."""

    date: str
    sources: list[InputLine]


def _readable_json(value: msgspec.Struct) -> str:
    """JSON with one field a line (models read it more reliably); non-ASCII kept as is."""
    return msgspec.json.format(msgspec.json.encode(value), indent=1).decode()


def reconstruct_prompt(date: str, sources: Sequence[Source]) -> list[Message]:
    day = DayInput(date, [InputLine(s.source_id, s.role, s.text) for s in sources])
    return [
        {"role": "system", "content": RECONSTRUCT_SYSTEM},
        {"role": "user", "content": _readable_json(day)},
    ]


def narrate_prompt(artifact: VerifiedArtifact, brief: str = DEFAULT_BRIEF) -> list[Message]:
    system = brief if artifact.base is None else f"{brief.rstrip()}\n\n{BASE_RULE}"
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": _readable_json(artifact)},
    ]


def check(
    sources: Sequence[Source], answer: Reconstruction, text: str, fallback: VerifiedArtifact
) -> tuple[list[str], VerifiedArtifact]:
    """The validator's codes for the model's `answer` (as the gateway's schema validation
    read it from `text`, whose keys that reading dropped are the validator's too), and the
    artifact stage 2 gets: built from the answer only when there is no code, else
    `fallback` (whose `base`, the stored text a redraft revises, either one carries)."""
    found = validate(sources, answer, unknown_key(text))
    return found, (fallback if found else verified_artifact(sources, answer, fallback.base))


async def reconstruct(
    gateway: Gateway,
    prompt: list[Message],
    sources: Sequence[Source],
    fallback: VerifiedArtifact,
    max_tokens: int,
    *,
    user_id: str,
) -> Reconstructed:
    """Stage 1 with `prompt` (`reconstruct_prompt` of the same `sources`); `fallback` is
    `fallback_artifact(sources)`, the artifact when the answer cannot be used.

    `user_id` goes with the call: a remote provider gets the prompt masked with that user's
    identity registry (a remote call without it is refused as `privacy_blocked`)."""
    record = StageRecord("reconstruct")
    started = time.perf_counter()
    try:
        completion = await gateway.complete(
            PURPOSE_RECONSTRUCT,
            prompt,
            schema=Reconstruction,
            max_tokens=max_tokens,
            temperature=0.0,
            user_id=user_id,
        )
    except ModelError as exc:
        if exc.code not in FALLBACK_ERRORS:
            raise
        _count_privacy_fallback(gateway, user_id, exc)
        codes, artifact = ["reconstruction_invalid", exc.code], fallback
        record.outcome = "fallback"
    else:
        record.prompt_tokens = completion.usage.prompt_tokens
        record.completion_tokens = completion.usage.completion_tokens
        assert isinstance(completion.value, Reconstruction)
        found, artifact = check(sources, completion.value, completion.text, fallback)
        codes = ["reconstruction_invalid", *found] if found else []
        record.outcome = "fallback" if found else "valid"
        if completion.provider == OFFLINE:
            # Validated like a model's, but made by this machine: the trace says so.
            record.outcome = "fallback" if found else "offline"
            record.codes = [NO_MODEL]
    record.codes = [*record.codes, *codes]
    record.ms = round((time.perf_counter() - started) * 1000, 3)
    return Reconstructed(artifact, codes, record)


async def narrate(
    gateway: Gateway,
    date: str,
    artifact: VerifiedArtifact,
    prompt: list[Message],
    max_tokens: int,
    *,
    user_id: str,
    language: str,
) -> Narrated:
    """Stage 2 with `prompt` (`narrate_prompt` of the same `artifact`). Whoever wrote the
    text, the lines the character carried out follow it as a list (`with_done_list`, its
    heading in `language`).

    Outcomes: `model`; `offline` (the offline stand-in answered: the told lines as they are,
    made by this machine — narration `local`, code `no_model`); `local_draft` (a privacy
    block or an empty reply: `local_draft`)."""
    record = StageRecord("narrate")
    started = time.perf_counter()
    narration, record.outcome = "model", "model"
    try:
        completion = await gateway.complete(
            PURPOSE_NARRATE, prompt, max_tokens=max_tokens, temperature=0.7, user_id=user_id
        )
    except ModelError as exc:
        if exc.code != "privacy_blocked":
            raise
        _count_privacy_fallback(gateway, user_id, exc)
        text, narration, record.codes = local_draft(date, artifact), "local", [exc.code]
        record.outcome = "local_draft"
    else:
        record.prompt_tokens = completion.usage.prompt_tokens
        record.completion_tokens = completion.usage.completion_tokens
        text = completion.text.strip()
        if completion.provider == OFFLINE:
            # A day of only requests and questions leaves it nothing to tell: the dated list.
            narration, record.outcome, record.codes = "local", "offline", [NO_MODEL]
            text = text or local_draft(date, artifact)
        if not text:
            text, narration, record.codes = local_draft(date, artifact), "local", ["empty_reply"]
            record.outcome = "local_draft"
    record.ms = round((time.perf_counter() - started) * 1000, 3)
    return Narrated(with_done_list(text, artifact, language), narration, record)


def _count_privacy_fallback(gateway: Gateway, user_id: str, exc: ModelError) -> None:
    """A stage that takes its local fallback after a privacy block counts it (§7a counters)."""
    if exc.code == "privacy_blocked":
        gateway.privacy_stats.fallback(user_id)
