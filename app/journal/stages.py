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

A day too big for one prompt comes in parts (`app.journal.parts`): stage 1 runs once per part
and `app.journal.parts.merge` joins the parts' answers; stage 2 runs once, or once per part of an artifact too
big to narrate at once (`narrate` joins the texts).

Other model errors (server down, timeout, budget) end the job with their code: the journal
never invents a draft it could not make honestly.

One module: both stages share the prompts' rules, the outcome record and the local fallback.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import msgspec

from app.journal import support
from app.journal.artifact import (
    VerifiedArtifact,
    join_parts,
    local_draft,
    local_lines,
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
from app.journal.support import Sentence
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

# The one corrective retry after a narration with unsupported sentences (issue 40).
RETRY_RULE = """\
These sentences of your entry state what none of the user's lines says:
{sentences}
Write the whole entry again from the artifact only. Keep every other sentence; leave out or
change each named one so that it says only what the lines say. Invent nothing.
"""

# Added to the brief when the artifact has a `base` (seed 004 `include_existing`).
BASE_RULE = """\
The artifact's `base` is the user's own current text of this entry. Revise it rather than
starting anew: keep what it says and how it says it, add what the sources tell that it
lacks, and change it only where a source corrects it. Invent nothing beyond the base and
the sources.
"""

# Added to the brief when a day's artifact is narrated in parts (`app.journal.parts`): the
# first part and every later one. No part number: a part's prompt is sized before the day's
# number of parts is known, and the model needs only where its text stands.
PART_RULES = {
    "first": """\
This day is long: its entry is written in parts, one answer each, joined as they are. The
artifact holds the first part of the day's lines. Begin the entry and tell these lines only;
do not close it with a summary of the day, the next part goes on from here.
""",
    "later": """\
This day is long: its entry is written in parts, one answer each, joined as they are. The
artifact holds a later part of the day's lines. Go on from the part before it and tell these
lines only: no new beginning, no date, no greeting; no summary of the whole day.
""",
}


@dataclass(slots=True)
class Reconstructed:
    """Stage 1's outcome: the artifact stage 2 gets, the validation codes, the record of each
    call (one, or one per part), and the model's answer when it passed the validator (what
    `app.journal.parts.merge` joins)."""

    artifact: VerifiedArtifact
    validation: list[str]
    records: list[StageRecord]
    answer: Reconstruction | None = None


@dataclass(slots=True)
class Narrated:
    """The draft's text, who wrote it, each call's record, each kept sentence with the lines
    it drew on (`support.Sentence`), and the model's sentences left out as unsupported."""

    text: str
    narration: str  # "model" | "local"
    records: list[StageRecord]
    sentences: list[Sentence] = field(default_factory=list)
    left_out: list[Sentence] = field(default_factory=list)


# A part of stage 2: the part's artifact and the prompt made of it (`app.journal.parts`).
NarratePart = tuple[VerifiedArtifact, list[Message]]
# Told which part of how many a stage is on (1-based), when a day has more than one.
OnPart = Callable[[int, int], Awaitable[None]]


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


def narrate_prompt(
    artifact: VerifiedArtifact, brief: str = DEFAULT_BRIEF, part: str | None = None
) -> list[Message]:
    """Stage 2's prompt: the brief (with the base's rule when the artifact revises one, and
    `PART_RULES[part]` for a part of a day narrated in parts) and the artifact."""
    rules = [BASE_RULE] if artifact.base is not None else []
    rules += [PART_RULES[part]] if part is not None else []
    system = "\n\n".join([brief.rstrip(), *rules]) if rules else brief
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
    answer: Reconstruction | None = None
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
        answer = None if found else completion.value
        record.outcome = "fallback" if found else "valid"
        if completion.provider == OFFLINE:
            # Validated like a model's, but made by this machine: the trace says so.
            record.outcome = "fallback" if found else "offline"
            record.codes = [NO_MODEL]
    record.codes = [*record.codes, *codes]
    record.ms = round((time.perf_counter() - started) * 1000, 3)
    return Reconstructed(artifact, codes, [record], answer)


async def narrate(
    gateway: Gateway,
    date: str,
    artifact: VerifiedArtifact,
    parts: Sequence[NarratePart],
    max_tokens: int,
    *,
    user_id: str,
    language: str,
    on_part: OnPart | None = None,
) -> Narrated:
    """Stage 2 of `artifact` in `parts` (`app.journal.parts.narrate_parts`: one, the whole
    artifact and `narrate_prompt` of it, unless it is too big to narrate at once), one call
    each, in order; `on_part(k, n)` is told before each when there are several. Whoever
    wrote the text, the lines the character carried out follow it as a list
    (`with_done_list`, its heading in `language`).

    Outcomes of each call: `model`; `offline` (the offline stand-in answered: the told lines
    as they are, made by this machine — narration `local`, code `no_model`); `local_draft`
    (a privacy block, an empty reply, or a reply of which no sentence is supported: the
    part's lines as a list, dated for the first). A model's text is checked against its
    part's artifact first (`_supported`), and the joined text against the whole artifact
    (`support.check`: each sentence's lines). The draft is the model's when any part is.

    Why in parts rather than refused: a day too long for one narration prompt is a day of
    many lines, every one of which must reach the entry whole (nothing is cut); narrating
    its parts in order, each told that it is a part, keeps all of them and each sentence
    checked against the lines it tells. One call over an artifact that fits is unchanged."""
    texts: list[str] = []
    records: list[StageRecord] = []
    left_out: list[Sentence] = []
    narrations: set[str] = set()
    for index, (part, prompt) in enumerate(parts):
        if on_part is not None and len(parts) > 1:
            await on_part(index + 1, len(parts))
        # The local text of a later part is its lines alone: the date heads the entry once.
        local = local_draft(date, part) if index == 0 else local_lines(part)
        text, narration, record, dropped = await _narration(
            gateway, date, part, prompt, max_tokens, user_id, local
        )
        texts.append(text)
        records.append(record)
        left_out += dropped
        narrations.add(narration)
    finishing = time.perf_counter()
    text = with_done_list(texts[0] if len(texts) == 1 else join_parts(texts), artifact, language)
    checked = await asyncio.to_thread(support.check, text, date, artifact)
    # The whole text's check is the last call's time, as it was of the one call's.
    records[-1].ms = round(records[-1].ms + (time.perf_counter() - finishing) * 1000, 3)
    narration = "model" if "model" in narrations else "local"
    return Narrated(text, narration, records, checked, left_out)


async def _narration(
    gateway: Gateway,
    date: str,
    artifact: VerifiedArtifact,
    prompt: list[Message],
    max_tokens: int,
    user_id: str,
    local: str,
) -> tuple[str, str, StageRecord, list[Sentence]]:
    """One narrate call with `prompt` (`narrate_prompt` of `artifact`, the day's or a
    part's): its text (`local` where the model's cannot be used), who wrote it, its record
    and the model's sentences left out."""
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
        text, narration, record.codes = local, "local", [exc.code]
        record.outcome = "local_draft"
    else:
        record.prompt_tokens = completion.usage.prompt_tokens
        record.completion_tokens = completion.usage.completion_tokens
        text = completion.text.strip()
        if completion.provider == OFFLINE:
            # A day of only requests and questions leaves it nothing to tell: the dated list.
            narration, record.outcome, record.codes = "local", "offline", [NO_MODEL]
            text = text or local
        if not text:
            text, narration, record.codes = local, "local", ["empty_reply"]
            record.outcome = "local_draft"
    left_out: list[Sentence] = []
    if narration == "model":
        text, left_out = await _supported(
            gateway, prompt, text, (date, artifact), record, max_tokens, user_id, local
        )
        narration = "local" if record.outcome == "local_draft" else narration
    record.ms = round((time.perf_counter() - started) * 1000, 3)
    return text, narration, record, left_out


async def _supported(
    gateway: Gateway,
    prompt: list[Message],
    text: str,
    day: tuple[str, VerifiedArtifact],
    record: StageRecord,
    max_tokens: int,
    user_id: str,
    local: str,
) -> tuple[str, list[Sentence]]:
    """The model's `text` as a draft may show it: checked against the artifact
    (`app.journal.support`); with an unsupported sentence, one corrective retry naming each
    (code `narration_unsupported`), and of its answer only the supported sentences — the
    others are returned to be shown apart as "not in your words", never as the user's. An
    answer of nothing supported is the `local` text. The retry failing (any model error:
    its code is recorded) leaves the first answer's supported sentences."""
    date, artifact = day
    checked = await asyncio.to_thread(support.check, text, date, artifact)
    if _tells_nothing(checked):
        record.codes, record.outcome = [*record.codes, "narration_empty"], "local_draft"
        return local, []
    if not support.unsupported(checked):
        return text, []
    record.codes = [*record.codes, "narration_unsupported"]
    retry: list[Message] = [
        *prompt,
        {"role": "assistant", "content": text},
        {"role": "user", "content": RETRY_RULE.format(sentences=_named(checked))},
    ]
    try:
        completion = await gateway.complete(
            PURPOSE_NARRATE, retry, max_tokens=max_tokens, temperature=0.0, user_id=user_id
        )
    except ModelError as exc:
        _count_privacy_fallback(gateway, user_id, exc)
        record.codes = [*record.codes, exc.code]
    else:
        if completion.text.strip():
            text = completion.text.strip()
            checked = await asyncio.to_thread(support.check, text, date, artifact)
    left_out = support.unsupported(checked)
    kept = support.supported_text(text, checked) if left_out else text
    if not kept or _tells_nothing([c for c in checked if not c.unsupported]):
        record.outcome = "local_draft"
        return local, left_out
    return kept, left_out


def _tells_nothing(checked: Sequence[Sentence]) -> bool:
    """A narration no sentence of which draws on a line and asserts anything ("]", "…" —
    what the real peer's tiny random model writes): no narration at all, like an empty
    reply."""
    return not any(s.sources or s.unsupported for s in checked)


def _named(checked: Sequence[Sentence]) -> str:
    return "\n".join(
        f"- {s.text} (in no line: {', '.join(s.unsupported)})" for s in support.unsupported(checked)
    )


def _count_privacy_fallback(gateway: Gateway, user_id: str, exc: ModelError) -> None:
    """A stage that takes its local fallback after a privacy block counts it (§7a counters)."""
    if exc.code == "privacy_blocked":
        gateway.privacy_stats.fallback(user_id)
