"""What the offline provider answers, per purpose: its own answers and how a table extends them.

A handler gets an `OfflineRequest` and returns one of
- a `str`: the answer text (for a structured call it fills the schema's text fields),
- a `dict` of field values: put over the neutral instance of the requested schema
  (by attribute or wire name; a tuple value lists candidates tried in order; a value the
  field does not accept leaves the neutral default), or JSON text when no schema was asked,
- a `msgspec.Struct` instance of the requested schema.

A purpose without a handler gets the neutral instance of its schema (design §6: no action,
no retry, no follow-up, answer accepted), or for a text call the reflective reply.

The provider's own answers are `BASE_ANSWERS` (perception, summary, the reflective reply).
The answers a gateway's offline provider uses are a value handed to the gateway when it is
built (`Gateway(..., offline_answers=...)`); the product's are composed in
`app.wiring.purposes` with `extended`. Nothing here is registered or changed at run time, so
two apps in one process never share or overwrite each other's answers.

Where the handlers read the user's words: the last `user` message; when it carries a
rendered history (speaker lines `[n] USER (…): …`), the last USER contribution in it.

One module: the offline provider's own answers (perception, summary, responder) and the table
that extends them, over one `OfflineRequest`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol

import msgspec

from app.core.emotion import LABELS, STORED_NAMES, PerceivedEmotion
from app.llm.offline import lexicon as lx
from app.llm.offline import phrases
from app.llm.offline import text as tx
from app.llm.types import Message


class Conversation:
    """What the offline model said today in one conversation, read before a call (`said`),
    and what the call says (`remember`, collected in `new` for the caller to keep): a real
    model has the whole conversation in view, the rules only the prompt's window, and
    without this would say the same sentence again later in the day."""

    def __init__(self, said: Sequence[str] = ()) -> None:
        self._said = list(said)
        self.new: list[str] = []

    def said(self) -> list[str]:
        return self._said

    def remember(self, reply: str) -> None:
        self._said.append(reply)
        self.new.append(reply)


class DayMemory(Protocol):
    """Where the offline provider keeps what it said to a pair on the user's day, across
    restarts (the app's is `app.memory.said_today.SaidToday`)."""

    async def said(self, pair: str) -> list[str]: ...

    async def remember(self, pair: str, replies: Sequence[str]) -> None: ...


# The purposes whose answers vary with what was said today (the others never read it).
CONVERSATION_PURPOSES = frozenset({"responder"})


@dataclass(frozen=True, slots=True)
class OfflineRequest:
    purpose: str
    messages: Sequence[Message]
    schema: type[msgspec.Struct] | None
    max_tokens: int
    chars_per_token: float
    # The conversation the call belongs to (the running turn's pair), None outside a turn.
    conversation: Conversation | None = None

    @property
    def user_text(self) -> str:
        return tx.user_text(self.messages)

    @property
    def max_chars(self) -> int:
        """The longest answer that fits the reserved output."""
        return int(self.max_tokens * self.chars_per_token)


Handler = Callable[[OfflineRequest], "str | dict[str, Any] | msgspec.Struct"]


# --- perception ------------------------------------------------------------------------------


class LexiconPerception(PerceivedEmotion, kw_only=True):
    """What the lexicon reads in a text, with the seeds' German labels: the perception's
    shape (`app.core.emotion.PerceivedEmotion`), never its own copy of the fields."""

    def values(self) -> dict[str, Any]:
        """Field values under the seeds' German names and their English names; labels as
        candidates (German, then English) so either vocabulary of a Literal fits."""

        def both(label: str) -> tuple[str, str]:
            return (label, lx.ENGLISH.get(label, label))

        values: dict[str, Any] = {}
        for name in (field.name for field in msgspec.structs.fields(self)):
            value = getattr(self, name)
            values[STORED_NAMES.get(name, name)] = both(value) if name in LABELS else value
        values["intentionen"] = (
            list(self.intentions),
            [lx.ENGLISH.get(i, i) for i in self.intentions],
        )
        aliases = {
            **STORED_NAMES,
            "intents": "intentionen",
            "summary": "kern",
            "gespraechs_modus": "modus",
        }
        values.update({alias: values[name] for alias, name in aliases.items()})
        values["intent"] = both(self.intentions[0])
        return values


def perceive_text(text: str) -> LexiconPerception:
    """Lexicon perception of one text (German or English)."""
    language = tx.language(text)
    emotion, strength = _dominant_emotion(text)
    intentions = _intentions(text, emotion)
    mode = _mode(text, intentions, emotion)
    return LexiconPerception(
        emotion=emotion.label,
        arousal=_arousal(text, emotion, strength),
        intentions=intentions,
        mode=mode,
        core=core_summary(text),
        emotions_vector=_emotions_vector(text),
        language_style=_language_style(text),
        relationship_dynamic=_relationship(text, emotion),
        tone=_tone(emotion, intentions, mode),
        topics=topics(text),
        language=language,
    )


def _emotion_scores(text: str) -> dict[str, float]:
    scores: dict[str, float] = {}
    lowered = text.lower()
    for emotion in lx.EMOTIONS:
        for match in lx.EMOTION_CUES[emotion.label].find(text):
            before = lowered[max(0, match.start() - 24) : match.start()].split()[-2:]
            if any(word.strip(",.!?") in lx.NEGATIONS for word in before):
                if emotion.valence > 0:  # "nicht glücklich": unpleasant after all
                    scores["trauer"] = scores.get("trauer", 0.0) + 1.0
                continue
            scores[emotion.label] = scores.get(emotion.label, 0.0) + 1.0
    return scores


def _dominant_emotion(text: str) -> tuple[lx.LexiconEmotion, float]:
    scores = _emotion_scores(text)
    if not scores:
        return lx.NEUTRAL, 0.0
    # Ties go to the emotion listed first in the lexicon (the more specific one).
    order = {e.label: i for i, e in enumerate(lx.EMOTIONS)}
    label = max(scores, key=lambda name: (scores[name], -order[name]))
    return lx.EMOTION_BY_LABEL[label], scores[label]


def _arousal(text: str, emotion: lx.LexiconEmotion, strength: float) -> float:
    value = emotion.arousal
    value += 0.05 * min(strength - 1, 2) if strength > 1 else 0.0
    value += 0.05 * min(text.count("!"), 3)
    value += 0.05 * min(lx.INTENSIFIER_CUES.count(text), 2)
    shouted = [w for w in tx.words(text) if len(w) >= 3 and w.isupper()]
    value += 0.1 if shouted else 0.0
    return round(min(max(value, 0.0), 1.0), 2)


def _intentions(text: str, emotion: lx.LexiconEmotion) -> list[str]:
    found = [name for name, cues in lx.INTENTION_CUES.items() if cues.count(text)]
    first_words = [s.split()[0].lower().strip(",.") for s in tx.sentences(text) if s.split()]
    if "?" in text or any(w in lx.QUESTION_WORDS for w in first_words):
        found.insert(0, "frage")
    if emotion is not lx.NEUTRAL and emotion.label != "dankbarkeit":
        found.append("emotionaler_ausdruck")
    social = {"begruessung", "abschied", "dank"}
    if found and set(found) <= social and len(tx.words(text)) <= 6:
        found.append("smalltalk")
    elif any(not s.endswith("?") and len(tx.words(s)) >= 3 for s in tx.sentences(text)):
        found.append("information_teilen")  # at least one statement of substance
    return list(dict.fromkeys(found)) or ["information_teilen"]


def _mode(text: str, intentions: list[str], emotion: lx.LexiconEmotion) -> str:
    for mode, cues in lx.MODE_CUES.items():  # crisis first: it outranks everything
        if cues.count(text):
            return mode
    if emotion.valence < 0 and len(text) > 300:
        return "tiefgang"
    return "alltag"


def _emotions_vector(text: str) -> str:
    parts = tx.sentences(text)
    if len(parts) < 2:
        return "plateau"
    first = sum(_emotion_scores(parts[0]).values()) + parts[0].count("!")
    last = sum(_emotion_scores(parts[-1]).values()) + parts[-1].count("!")
    return "steigend" if last > first else "fallend" if last < first else "plateau"


_FORMAL_ADDRESS = re.compile(r"(?<![.!?]\s)(?<!^)\b(?:Sie|Ihnen|Ihre?)\b")


def _language_style(text: str) -> str:
    if lx.FORMAL_CUES.count(text) or _FORMAL_ADDRESS.search(text.strip()):
        return "formell"
    if (
        lx.CASUAL_CUES.count(text)
        or re.search(r"\b(du|dich|dir|dein\w*)\b", text, re.I)
        or re.search(r"[\U0001F300-\U0001FAFF]|:\)|;\)|:D", text)
    ):
        return "locker"
    return "neutral"


def _relationship(text: str, emotion: lx.LexiconEmotion) -> str:
    if emotion.label == "liebe":
        return "naehe"
    if lx.DISCLOSURE_CUES.count(text) or (
        emotion.valence < 0 and re.search(r"\b(ich|mir|mich|i|me|my)\b", text, re.I)
    ):
        return "vertrauen"
    if _language_style(text) == "formell":
        return "distanz"
    return "neutral"


def _tone(emotion: lx.LexiconEmotion, intentions: list[str], mode: str) -> str:
    if mode == "krise":
        return "behutsam"
    if mode == "spiel":
        return "verspielt"
    if emotion.valence < 0:
        return "empathisch"
    if emotion.valence > 0:
        return "herzlich"
    if "frage" in intentions:
        return "sachlich"
    return "neutral"


def topics(text: str, limit: int = 3) -> list[str]:
    """The most frequent content words, counted in any case, first appearance breaking ties,
    each spelled as the text writes it (`tx.as_written`: a reply that echoes one keeps a
    noun's capital and a name's, not a sentence's first capital)."""
    counts: dict[str, int] = {}
    emotional = {m.group(0).lower() for cues in lx.EMOTION_CUES.values() for m in cues.find(text)}
    for word in tx.words(text):
        key = word.lower()
        if len(key) < 4 or key in lx.STOPWORDS or key in emotional:
            continue
        counts[key] = counts.get(key, 0) + 1
    ranked = sorted(counts, key=lambda w: -counts[w])  # stable: first appearance wins ties
    return [tx.as_written(word, text) for word in ranked[:limit]]


def _sentence_score(sentence: str) -> float:
    numbers = len(re.findall(r"\d+", sentence))
    names = len([w for w in tx.words(sentence)[1:] if w[0].isupper()])
    feeling = sum(1 for cues in lx.EMOTION_CUES.values() for _ in cues.find(sentence))
    content = len([w for w in tx.words(sentence) if w.lower() not in lx.STOPWORDS])
    return 3 * numbers + 2 * names + 2 * feeling + 0.1 * content


def core_summary(text: str, sentences_kept: int = 2) -> str:
    """The core of a text: its most informative whole sentences, in their order."""
    parts = tx.sentences(text)
    if len(parts) <= sentences_kept:
        return " ".join(parts)
    best = sorted(range(len(parts)), key=lambda i: (-_sentence_score(parts[i]), i))
    return " ".join(parts[i] for i in sorted(best[:sentences_kept]))


def perception(request: OfflineRequest) -> dict[str, Any]:
    return perceive_text(request.user_text).values()


# --- summary ---------------------------------------------------------------------------------
# The summary and the reflective reply read the perception above, and the table below lists
# them: in a module of their own they would import this one and be imported by it. They can
# move out once the perception has a module of its own. Their phrases are in `phrases.py`.

_PREVIOUS_SUMMARY = re.compile(
    r"^(?:bisherige zusammenfassung|previous summary|zusammenfassung|summary)\s*:\s*(.*?)"
    r"(?=\n\s*\n|\n\[\d+\]|\Z)",
    re.I | re.M | re.S,
)


def summarize(messages: Sequence[Message], max_chars: int) -> str:
    """An extractive summary of the user-side text: whole sentences only, those with names,
    numbers and places first, in their original order, as many as fit `max_chars`.

    Reads the previous summary after a line `Bisherige Zusammenfassung:` / `Previous
    summary:` and the contributions of a rendered history (a contribution's sentences keep
    its speaker, named as a person would — "Du"/"You", "Nova" — not with the renderer's
    `USER`/`NOVA` labels; an own impulse stays named as such).
    """
    lines: list[tuple[str, str]] = []  # (prefix, sentence)
    for content in (m["content"] for m in messages if m["role"] == "user"):
        previous = _PREVIOUS_SUMMARY.search(content)
        if previous:
            lines.extend(("", s) for s in tx.sentences(previous.group(1)))
        found = tx.contributions(content)
        if found:
            you = phrases.YOU[tx.language(" ".join(c.text for c in found))]
            for contribution in found:
                # Natural names, not the renderer's labels: the summary is shown in the chat.
                speaker = you if contribution.is_user else contribution.label.strip().title()
                label = speaker + (" (von sich aus)" if "von sich aus" in contribution.meta else "")
                lines.extend((label, s) for s in tx.sentences(contribution.text))
        elif not previous:
            lines.extend(("", s) for s in tx.sentences(content))
    return _pick_sentences(lines, max_chars)


def _pick_sentences(lines: list[tuple[str, str]], max_chars: int) -> str:
    lines = list(dict.fromkeys(lines))  # a sentence said twice is summarized once
    rendered = [f"{prefix}: {sentence}" if prefix else sentence for prefix, sentence in lines]
    ranked = sorted(range(len(lines)), key=lambda i: (-_sentence_score(lines[i][1]), i))
    chosen: set[int] = set()
    used = 0
    for index in ranked:
        cost = len(rendered[index]) + 1
        if used + cost <= max_chars:
            chosen.add(index)
            used += cost
    return "\n".join(rendered[i] for i in sorted(chosen))


def summary(request: OfflineRequest) -> str:
    return summarize(request.messages, request.max_chars)


# --- responder -------------------------------------------------------------------------------

_HOW_ARE_YOU = re.compile(
    r"\bwie geht(?:'?s|\s+es\s+(?:dir|ihnen|euch))\b|\bwie läuft'?s\b|"
    r"\bhow are you\b|\bhow'?s it going\b",
    re.IGNORECASE,
)
# A direct question about the character itself: what it can do, what it is, which model.
_ABILITIES = re.compile(
    r"\b(?:was|wobei|womit|wie)\s+kannst\s+du\b|\bwas\s+kann\s+ich\s+mit\s+dir\b|"
    r"\bwas\s+(?:machst|bist)\s+du\b|\bwer\s+bist\s+du\b|\bhilfst\s+du\s+mir\b|"
    r"\b(?:welches|welche|ein)\s+(?:sprach)?modell\b|\bbist\s+du\s+(?:eine?\s+)?(?:ki|bot)\b|"
    r"\b(?:kannst|könntest)\s+du\s+mir\s+(?:\w+\s+)?helfen\b|"
    r"\bwhat\s+can\s+you\s+do\b|\b(?:how|can|could)\s+you\s+help\b|\bwhat\s+(?:do|are)\s+you\b|"
    r"\bwho\s+are\s+you\b|\b(?:which|what|a)\s+(?:language\s+)?model\b|"
    r"\bare\s+you\s+an?\s+(?:ai|bot)\b|^\s*(?:hilfe|help)\s*[?!.]*\s*$",
    re.IGNORECASE,
)
HEAVY = frozenset({"trauer", "angst", "stress", "erschoepfung", "wut"})  # bad news


def reflective_reply(user_words: str, max_chars: int, previous: str | Collection[str] = ()) -> str:
    """A reply to the user's words in the user's language that fits `max_chars`. It never
    quotes the user back, and never repeats what it said before (`previous`: the
    character's earlier answers, or its last one): a reply has variants, picked by the
    words and rotated past those said already. A question about what it can do gets the
    honest answer (no model runs; lists, reminders, journal, where to pick a model); bad
    news gets a question about the person, never one about their plans."""
    language = tx.language(user_words)
    words, reflect = phrases.PHRASES[language], phrases.REFLECT[language]
    said = _said(previous)
    if not user_words.strip():
        return words["empty"]
    seen = perceive_text(user_words)
    if seen.mode == "krise":
        return words["crisis"]
    if _ABILITIES.search(user_words):
        return _fresh(words["abilities"], said)
    if _HOW_ARE_YOU.search(user_words):
        return _fresh(words["how"], said)
    if "begruessung" in seen.intentions and (
        "smalltalk" in seen.intentions or len(tx.words(user_words)) <= 3
    ):
        return _fresh(words["greet"], said)
    if "abschied" in seen.intentions and "smalltalk" in seen.intentions:
        return words["bye"]
    opening = reflect.get(seen.emotion, "")
    if seen.emotion in HEAVY:
        follow_ups = list(words["heavy"])
    elif "frage" in seen.intentions:
        follow_ups = list(words["question"])
    else:
        follow_ups = list(words["ask"])
        if seen.topics and seen.emotion == "neutral":
            follow_ups.insert(0, words["ask_topic"].format(seen.topics[0]))
    start = sum(map(ord, user_words)) % len(follow_ups)
    ordered = follow_ups[start:] + follow_ups[:start]
    openings = [opening] if opening else ["", *words["acknowledge"]]
    candidates = [
        " ".join(p for p in (first, follow_up) if p) for first in openings for follow_up in ordered
    ]
    if opening:
        candidates += ordered  # the follow-up alone, when the opening would not fit
    fitting = [reply for reply in candidates if len(reply) <= max_chars] or [ordered[0]]
    return next((reply for reply in fitting if reply not in said), fitting[0])


def _fresh(variants: Sequence[str], said: set[str]) -> str:
    """The first variant not said yet (all said: the first)."""
    return next((v for v in variants if v not in said), variants[0])


def _said(previous: str | Collection[str]) -> set[str]:
    texts = [previous] if isinstance(previous, str) else list(previous)
    return {" ".join(text.split()) for text in texts if text}


def responder(request: OfflineRequest) -> str:
    return reflective_reply(request.user_text, request.max_chars)


# --- the table -------------------------------------------------------------------------------

Answers = Mapping[str, Handler]  # purpose -> its handler; immutable once built

BASE_ANSWERS: Answers = MappingProxyType(
    {
        "perception": perception,
        "summary": summary,
        "responder": responder,
    }
)


def extended(base: Answers, table: Answers, *, replacing: Iterable[str] = ()) -> Answers:
    """`base` with the purposes of `table` added, as a new immutable mapping.

    A purpose both have must be named in `replacing` (the table's handler takes its place,
    usually by wrapping base's), and every purpose named there must be one both have: which
    handler wins is said where the tables are put together, never by the order they happen
    to be applied in."""
    replaced = frozenset(replacing)
    shared = base.keys() & table.keys()
    if shared != replaced:
        unnamed, absent = sorted(shared - replaced), sorted(replaced - shared)
        raise ValueError(
            f"offline answers: purposes in both tables but not named as replaced: "
            f"{unnamed}; named as replaced but not in both: {absent}"
        )
    return MappingProxyType({**base, **table})
