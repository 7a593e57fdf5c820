"""The optional `detect` role (seed 004 §2): a LOCAL model proposes further person names
before a call goes to a remote provider. Never a remote one — the text it reads is the
plain text. Off unless `privacy_detect_url` names a server on this machine or the local
network; a failure of it only means the detectors mask alone.

Only names the model proposes that stand in the text as words are used; they are masked
like registered names for that one call.
"""

from __future__ import annotations

import msgspec

from app.llm.schema import decode, json_schema
from app.llm.types import Call, Message

PURPOSE = "privacy_detect"
MAX_TOKENS = 300
PROMPT = (
    "List every name of a person in the user's text (first names, surnames, nicknames) "
    "exactly as written. Not places, brands, weekdays or months. Answer with JSON "
    '{"names": [...]}; an empty list when there is none.'
)


class FoundNames(msgspec.Struct):
    names: list[str] = []


def detect_call(messages: list[Message]) -> Call:
    text = "\n\n".join(m["content"] for m in messages)
    return Call(
        PURPOSE,
        [{"role": "system", "content": PROMPT}, {"role": "user", "content": text}],
        MAX_TOKENS,
        0.0,
        FoundNames,
        json_schema(FoundNames),
    )


def proposed_names(reply_text: str, messages: list[Message]) -> list[str]:
    """The proposed names that stand in the prompt (a model's invention is dropped)."""
    found = decode(reply_text, FoundNames)
    assert isinstance(found, FoundNames)
    text = "\n".join(m["content"] for m in messages).lower()
    return [
        name.strip()
        for name in found.names
        if 2 <= len(name.strip()) <= 100 and name.strip().lower() in text
    ]
