"""What counts as an empty text, wherever a text comes in (request bodies, imports), and
what a model's text may not hold."""

from __future__ import annotations

# Characters that show nothing: a text of only these (and whitespace) is empty.
INVISIBLE = dict.fromkeys(
    map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e\u2061\u2062\u2063\u2064")
)


def is_blank(text: str) -> bool:
    """True for a text of only whitespace and invisible characters (zero-width spaces, …)."""
    return not text.translate(INVISIBLE).strip()


def without_nul(text: str) -> str:
    """A model's text without U+0000: it means nothing in an answer, and PostgreSQL cannot
    store it (on the scale-out engine such an answer failed its turn with internal_error).
    A person's text with one is refused at the boundary instead (app.core.json_input)."""
    return text.replace("\x00", "")
