"""Which clauses of a message are addressed to the character as a command (issue 21, item 3).

A message asks for an action only where one of its clauses *starts* as a command:

- an imperative: "Setz Milch auf die Liste", "Streich die Eier", "Erinnere mich …",
  "Setzen Sie …", "Put milk on …", "Please remind me …" — not when a subject follows the
  verb ("dann setz ich mich hin" is a narrative);
- a request: "Kannst du mich morgen an den Zahnarzt erinnern?" (the infinitive closes the
  request, "… schreiben musste" is a narrative), "Setzt du Milch drauf?", "Could you …";
- what it is about first and the infinitive last, German style: "Die Eier kannst du
  streichen.", "Bitte die Eier streichen." (read as "Streich die Eier"; not with a subject
  or a finite verb in it: "Heute musste ich den Zahnarzt verschieben" is a story);
- a question about what is kept: "Was steht auf der Einkaufsliste?", "Welche Erinnerungen
  habe ich?", "What's on my list?".

A clause begins at the start of the text, after the end of a sentence (`.`, `!`, `?`, `;`,
`:` or a line break), after a comma, and at "und"/"and"/"dann"/"then"/"aber"/"but"; one
inside quotation marks is somebody else's speech and is nobody's command, and so is one a verb
of saying or thinking frames in its sentence ("Mein Chef sagte: setz …", "Streich die Eier,
dachte ich", "…, my husband said": `reported`). It runs to the end
of its sentence, to a comma before a subordinate or a new main clause (", dass …", ", und
ich …"), and at most `CLAUSE_CHARS`. Whether the command names its object (a list, an item,
a reminder, a time) is the agents' rules' question (`routing`).

Every pattern is matched at a clause start only, within a bounded window: linear in the text.

One module: finding a clause and deciding whether it is a command read the same word lists and
patterns.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Literal

CLAUSE_CHARS = 300
FRAME_CHARS = 80  # how far before a clause its frame is looked for ("Mein Chef sagte mir:")

Form = Literal["imperative", "request", "question", "infinitive"]

_DE_STEMS = (
    r"setz|schreib|pack|füg|trag|notier|streich|nimm|lösch|entfern|zeig|leer|"
    r"erinner|verschieb|verleg|leg|lies|mach"
)
_EN_VERBS = (
    r"put|add|write|note|jot|remove|cross|take|delete|show|clear|empty|remind|move|"
    r"reschedule|push|postpone|cancel|list|tell|drop|strike|scratch|read|make|start"
)
_SUBJECT = r"(?:ich|er|es|wir|man|ihr|i|he|she|we|they)"
# Words a command may start with before its verb: "Bitte", "Und dann", "Okay, …".
_LEAD = (
    r"\A(?:(?:bitte|please|hey|ok|okay|also|so|und|and|dann|then|jetzt|now|noch|auch|mal|"
    r"kurz|ach|oh|ja|yes|nova)\b[\s,!]*){0,3}"
)

# After an imperative "es" is its object ("Lösch es", "Streich es"): a narrative's "es" as
# the subject follows an inflected verb ("dann streicht es"), which is no imperative.
_SUBJECT_AFTER_VERB = r"(?:ich|er|wir|man|ihr|i|he|she|we|they)"
_IMPERATIVE = re.compile(
    rf"{_LEAD}(?:(?:{_DE_STEMS})(?:e|en\s+sie|n\s+sie)?|(?:{_EN_VERBS}))\b"
    rf"(?!\s+{_SUBJECT_AFTER_VERB}\b)",
    re.I,
)
# "Setzt du …?", "Erinnerst du mich …?": the verb first, then "du" — a request.
_SECOND_PERSON = re.compile(rf"{_LEAD}(?:{_DE_STEMS})e?s?t\s+du\b", re.I)
# "Kannst du …", "Could you …": the modal opens it, an infinitive closes it.
_MODAL = re.compile(
    rf"{_LEAD}(?:(?:kannst|könntest|würdest|magst|willst|kann|könnte|würde|können|könnten|"
    rf"würden)\s+(?:du|sie)|(?:can|could|would|will)\s+you|i(?:'d| would) like you to|"
    rf"i (?:want|need) you to)\b",
    re.I,
)
_DE_INFINITIVE = re.compile(
    r"\b(?:setzen|schreiben|aufschreiben|packen|hinzufügen|eintragen|notieren|streichen|"
    r"nehmen|runternehmen|wegnehmen|rausnehmen|löschen|entfernen|zeigen|leeren|erinnern|"
    r"verschieben|verlegen|anlegen|vorlesen|machen|merken)"
    r"(?=\s*(?:[?!.,;]|$|\bbitte\b|\bund\b|\boder\b|\bdanke\b))",
    re.I,
)
_EN_AFTER_YOU = re.compile(rf"(?<!\s)\s+(?:please\s+)?(?:{_EN_VERBS})\b", re.I)
_QUESTION = re.compile(
    rf"{_LEAD}(?:(?:was|what)(?:'s|\s+is|\s+are|\s+steht|\s+stehen|\s+ist)\s+"
    r"(?:(?:denn|noch|alles|gerade|jetzt|still|already)\s+){0,2}(?:auf|on|in)\b|"
    r"(?:welche|which|what)\s+(?:\w+\s+){0,2}(?:erinnerungen|reminders|listen|lists)\b)",
    re.I,
)

# Where clauses begin: a sentence end, a comma, a joining word after a space (and the spaces
# and quotation marks after it).
_SKIP_CHARS = r"[\s\"'„“”»«‚‘’()\-–—]*"
_BOUNDARY = re.compile(
    r"(?:[.!?;:\n]+|,|(?<!\S)(?:und|and|dann|then|aber|but)(?=\s))" + _SKIP_CHARS, re.I
)
_SKIP = re.compile(_SKIP_CHARS)
_FIRST_WORD = re.compile(r"[^\W\d_]+")
# A clause whose first word is none of these is no command: the patterns need not look.
_FIRST_WORDS = frozenset(
    [
        "bitte",
        "please",
        "hey",
        "ok",
        "okay",
        "also",
        "so",
        "und",
        "and",
        "dann",
        "then",
        "jetzt",
        "now",
        "noch",
        "auch",
        "mal",
        "kurz",
        "ach",
        "oh",
        "ja",
        "yes",
        "nova",
        "kannst",
        "könntest",
        "würdest",
        "magst",
        "willst",
        "kann",
        "könnte",
        "würde",
        "können",
        "könnten",
        "würden",
        "can",
        "could",
        "would",
        "will",
        "i",
        "was",
        "what",
        "welche",
        "which",
    ]
)
_FIRST_STEMS = tuple(_DE_STEMS.split("|")) + tuple(_EN_VERBS.split("|"))
# Where a clause ends besides CLAUSE_CHARS: its sentence's end, or a comma before a
# subordinate clause or a new main clause with its own subject.
_CLAUSE_END = re.compile(
    r"[.!?;\n]|,\s*(?:dass|weil|ob|wie|was|wenn|als|obwohl|nachdem|bevor|damit|wo|because|"
    r"when|that|which|while|although|if)\b|,\s*(?:und|aber|and|but)\s+" + _SUBJECT + r"\b|"
    r"(?<![\s,])\s+(?:und|aber|and|but)\s+" + _SUBJECT + r"\b",
    re.I,
)
# Somebody else's words without quotation marks: a command clause framed by a verb of
# saying or thinking in its sentence — before it ("Mein Chef sagte: setz …", "She told me,
# cross off …") or after it, where German puts the verb first ("Streich die Eier, dachte
# ich.", "…, hat mein Mann gesagt") and English ends the sentence with the frame ("Put milk
# on the list, my husband said.") — is reported, not addressed to the character. Unless the
# frame speaks to the character ("Ich hab dir doch gesagt: …", "I told you: …"). "Setz Milch
# drauf, mein Mann sagt, wir haben keine" and "…, my wife says we are out of it" stay commands.
_SPEECH_DE = (
    r"sagt|sagte|sagten|meint|meinte|meinten|rief|riefen|schrieb|schrieben|dachte|"
    r"dachten|fragte|riet|befahl|flüsterte|brüllte|schrie"
)
_SPEECH_DE_DONE = (
    r"gesagt|gemeint|gerufen|geschrieben|gedacht|gefragt|geraten|befohlen|"
    r"geflüstert|gebrüllt|geschrien"
)
_SPEECH_EN_PAST = r"said|told|thought|wrote|shouted|asked|yelled|whispered|used to say"
_SPEECH_EN_NOW = r"says|tells|writes|shouts|asks|always say"
_SPEECH_EN_ON = r"saying|telling|asking|say"  # "he keeps saying", "she used to say"
_FRAME_BEFORE = re.compile(
    rf"\b(?:{_SPEECH_DE}|{_SPEECH_DE_DONE}|{_SPEECH_EN_PAST}|{_SPEECH_EN_NOW}|{_SPEECH_EN_ON})"
    r"(?:\s+(?:mir|mich|uns|ihm|ihr|ihnen|nur|immer|noch|dann|einfach|zu mir|me|us|him|her|"
    r"them|only|always|just|again|to me|yesterday|today|earlier|once|so|gestern|heute|"
    r"(?:the|my|his|her|our)\s+[\w']+)){0,3}\s*[:,]\s*$",
    re.I,
)
_FRAME_AFTER = re.compile(
    r",\s*(?:(?:hat|hatte|haben|hab|habe|hätte)\s+(?:[\w']+\s+){1,3}"
    rf"(?:{_SPEECH_DE_DONE})|(?:{_SPEECH_DE})\s+[\w']+)",
    re.I,
)
# What may follow a frame to the end of its sentence: "…, and left", "… und ist gegangen".
_THEN_ON = r"(?:,?\s+(?:and|but|und|aber)\b[^.!?;\n]{0,200})?\s*$"
# Typed without the comma, German's verb-first frame still ends its sentence ("Streich die
# Eier dachte ich", "Setz Brot drauf hat mein Mann gesagt").
_FRAME_AFTER_BARE = re.compile(
    r"\s(?:(?:hat|hatte|haben|hab|habe|hätte)\s+(?:[\w']+\s+){1,3}"
    rf"(?:{_SPEECH_DE_DONE})|(?:{_SPEECH_DE})(?:\s+[\w']+){{1,5}})" + _THEN_ON,
    re.I,
)
# English, with or without the comma: the frame — a subject and a verb of saying, nothing of
# its own after it but whom it was said to — ends the sentence ("Put bread on the list my
# husband said", "add milk to the list she told me", "remind me to call mom he keeps
# saying", "…, said my wife"; with the comma also "…, I thought"). Decided by the verb: "…the list my husband likes", "…the
# list she asked for", "…what the doctor said" (after a word that opens a subordinate
# clause) are the command's own words. German's subject-first frame likewise ("Setz Milch
# drauf meine Frau hat das gesagt", "… mein Mann meinte").
_REPORTING_EN = (
    r"said|says|told|tells|asked|asks|shouted|yelled|whispered|"
    r"(?:always|just|once|still)\s+(?:says?|said)|used\s+to\s+say|would\s+say|"
    r"(?:keeps?|kept)\s+(?:on\s+)?(?:saying|telling|asking)"
)
_SAID_TO = (
    r"(?:\s+(?:(?:to\s+)?(?:me|us|him|her|them)|again|once|so|too|earlier|yesterday|"
    r"today|this\s+morning|last\s+night|just\s+now|(?:the|my|his|her|our)\s+[\w']+|"
    r"(?:on|in|to)\s+(?:a|the|my|his|her|our)\s+[\w']+)){0,3}"
)
_SUBJECT_EN = (
    r"(?:i|he|she|they|we|(?:my|his|her|our|their|the)(?:\s+[\w']+){1,2}|"
    r"(?-i:[A-Z][\w']+))"
)
_OPENS_SUBORDINATE = "".join(
    rf"(?<!\b{w})"
    for w in (
        "what",
        "that",
        "which",
        "who",
        "whom",
        "how",
        "if",
        "as",
        "like",
        "when",
        "where",
        "because",
        "whatever",
        "whether",
        "than",
        "why",
    )
)
_FRAME_AFTER_EN = re.compile(
    rf"(?:(?<!\s){_OPENS_SUBORDINATE}\s+{_SUBJECT_EN}\s+(?:{_REPORTING_EN}){_SAID_TO}|"
    rf",\s*{_SUBJECT_EN}\s+(?:{_REPORTING_EN}|thought|wrote|writes){_SAID_TO}|"
    rf"(?:,|(?<![\s,])\s)\s*(?:said|asked|shouted|wrote)\s+{_SUBJECT_EN}){_THEN_ON}",
    re.I,
)
_OPENS_NEBENSATZ = "".join(
    rf"(?<!\b{w})"
    for w in ("die", "der", "das", "den", "dem", "was", "wie", "dass", "wenn", "weil", "ob", "als")
)
_FRAME_AFTER_DE_BARE = re.compile(
    rf"(?<!\s){_OPENS_NEBENSATZ}\s+(?:ich|er|sie|wir|(?:mein|meine|sein|seine|ihr|ihre|unser|unsere|"
    r"der|die)\s+[\w']+)\s+(?:(?:sagt|sagte|meint|meinte)(?:\s+(?:das|es|so|immer|mir|uns|"
    r"auch|gestern|heute)){0,3}|(?:hat|hatte)(?:\s+(?:das|es|so|immer|mir|uns|auch|gestern|"
    r"heute)){0,3}\s+(?:gesagt|gemeint))" + _THEN_ON,
    re.I,
)
# Any verb of saying: a text without one frames nothing (`reported` need not look).
_ANY_SPEECH = re.compile(
    rf"\b(?:{_SPEECH_DE}|{_SPEECH_DE_DONE}|{_SPEECH_EN_PAST}|{_SPEECH_EN_NOW}|{_SPEECH_EN_ON})\b",
    re.I,
)
_TO_YOU = re.compile(r"\b(?:dir|dich|euch|you)\b", re.I)
_SENTENCE_END = re.compile(r"[.!?;\n]")
_QUOTES_OPEN = {"„": '“”"', "“": '”"', '"': '"', "»": "«", "«": "»"}
_QUOTE = re.compile('[„“”"»«]')


@dataclass(frozen=True, slots=True)
class Clause:
    start: int
    end: int
    text: str
    form: Form


def quoted_spans(text: str) -> list[tuple[int, int]]:
    """The spans inside quotation marks („…“, “…”, "…", »…«), found in one pass; a mark
    that is never closed quotes nothing."""
    spans = []
    opening: tuple[int, str] | None = None
    for mark in _QUOTE.finditer(text):
        char = mark.group()
        if opening is not None and char in opening[1]:
            spans.append((opening[0], mark.end()))
            opening = None
        elif opening is None and char in _QUOTES_OPEN:
            opening = (mark.start(), _QUOTES_OPEN[char])
    return spans


def clause_starts(text: str) -> list[int]:
    """Where the clauses of `text` begin (after leading spaces and quotation marks), in
    order; none inside a quotation."""
    quoted = quoted_spans(text)
    starts, seen, span = [], -1, 0
    lead = _SKIP.match(text)
    assert lead is not None  # _SKIP is a starred class: it matches every text, maybe empty
    for begin in [lead.end(), *(m.end() for m in _BOUNDARY.finditer(text))]:
        if begin >= len(text) or begin <= seen:
            continue
        while span < len(quoted) and quoted[span][1] <= begin:
            span += 1
        if span < len(quoted) and quoted[span][0] < begin < quoted[span][1]:
            continue  # inside a quotation: somebody else's words
        starts.append(begin)
        seen = begin
    return starts


def clause_ends(text: str) -> list[int]:
    """Every place a clause may end (see `_CLAUSE_END`), in order: found in one pass."""
    return [m.start() for m in _CLAUSE_END.finditer(text)]


def clause_end(text: str, start: int, ends: list[int]) -> int:
    """Where the clause starting at `start` ends: the first of `ends` after it, at most
    `CLAUSE_CHARS` on."""
    limit = min(len(text), start + CLAUSE_CHARS)
    index = bisect.bisect_right(ends, start)
    return min(ends[index], limit) if index < len(ends) else limit


# German puts what a command is about first as readily as the verb: "Die Eier kannst du
# streichen.", "Bitte die Eier streichen.", "Zahnarzt bitte auf 11 Uhr verschieben" — short
# clauses that end in the infinitive (with the modal and "du" before it, or alone). Read as
# the imperative ("Streich die Eier") for the agents' rules.
_INFINITIVE_STEMS = {
    "streichen": "Streich",
    "löschen": "Lösch",
    "entfernen": "Entfern",
    "verschieben": "Verschieb",
    "verlegen": "Verleg",
    "setzen": "Setz",
    "schreiben": "Schreib",
    "packen": "Pack",
    "notieren": "Notier",
}
_INFINITIVE_LAST = re.compile(
    r"\A(?:bitte\s+)?(?P<object>(?!(?:ich|er|sie|es|wir|man|ihr|du|dann|und|kannst|"
    r"könntest|würdest|magst|willst|kann|könnte|würde|können|könnten|würden|bitte)\b)"
    r"[^\s.!?;:,]+(?:\s+[^\s.!?;:,]+){0,6}?)"
    r"(?:\s+(?:kannst|könntest|würdest)\s+du)?(?:\s+(?:bitte|mal|noch|auch|doch|gleich))*"
    rf"\s+(?P<verb>{'|'.join(_INFINITIVE_STEMS)})(?:\s+bitte)?\s*[!.?]*\s*\Z",
    re.I,
)


def infinitive_command(clause: str) -> str | None:
    """A short clause that ends in the infinitive as its imperative ("Die Eier kannst du
    streichen" → "Streich die Eier"), or None."""
    found = _INFINITIVE_LAST.match(clause.strip())
    if found is None:
        return None
    what = found.group("object")
    if any(word.casefold() in _NO_OBJECT for word in what.split()):
        return None  # "Heute musste ich den Zahnarzt verschieben": a subject, a verb — a story
    if what.split()[0].casefold() in _ARTICLES:
        what = what[:1].lower() + what[1:]
    return f"{_INFINITIVE_STEMS[found.group('verb').casefold()]} {what}"


_ARTICLES = frozenset(["der", "die", "das", "den", "dem", "des", "meine", "meinen", "mein"])
_NO_OBJECT = frozenset(
    [
        "ich",
        "er",
        "sie",
        "es",
        "wir",
        "man",
        "ihr",
        "du",
        "mir",
        "dir",
        "mich",
        "dich",
        "uns",
        "musste",
        "muss",
        "müssen",
        "musst",
        "mussten",
        "will",
        "wollte",
        "wollen",
        "soll",
        "sollte",
        "sollen",
        "habe",
        "hab",
        "hat",
        "hatte",
        "haben",
        "hatten",
        "bin",
        "ist",
        "war",
        "sind",
        "waren",
        "werde",
        "wird",
        "wurde",
        "kann",
        "konnte",
        "darf",
        "durfte",
        "möchte",
        "würde",
        "hätte",
        "wäre",
        "nicht",
        "nie",
        "keine",
        "keinen",
    ]
)


def command_form(text: str, start: int, end: int) -> Form | None:
    """How the clause `text[start:end]` is addressed to the character, or None: not a
    command."""
    first = _FIRST_WORD.match(text, start, end)
    if first is None:
        return None
    word = first.group().casefold()
    if word not in _FIRST_WORDS and not word.startswith(_FIRST_STEMS):
        return "infinitive" if infinitive_command(text[start:end]) else None
    form = _addressed_form(text[start:end])
    return form or ("infinitive" if infinitive_command(text[start:end]) else None)


def _addressed_form(clause: str) -> Form | None:
    """The form of a clause that starts with a command's word (see `command_form`)."""
    # the patterns are anchored at the clause's start (`\A`)
    if _QUESTION.match(clause):
        return "question"
    modal = _MODAL.match(clause)
    if modal:
        after = modal.end()
        if _EN_AFTER_YOU.match(clause, after) or _DE_INFINITIVE.search(clause, after):
            return "request"
        return None
    if _SECOND_PERSON.match(clause):
        return "request"
    if _IMPERATIVE.match(clause):
        return "imperative"
    return None


def reported(text: str, start: int) -> bool:
    """Whether the clause at `start` is somebody else's words or thoughts, framed in its
    sentence by a verb of saying (`_FRAME_BEFORE`, `_FRAME_AFTER`); looks at most
    `FRAME_CHARS` before it and `CLAUSE_CHARS` after."""
    before = text[max(0, start - FRAME_CHARS) : start]
    ends = list(_SENTENCE_END.finditer(before))
    sentence_before = before[ends[-1].end() :] if ends else before
    if _FRAME_BEFORE.search(sentence_before) and not _TO_YOU.search(sentence_before):
        return True
    after = text[start : start + CLAUSE_CHARS]
    end = _SENTENCE_END.search(after)
    sentence = after[: end.start()] if end else after
    frame = (
        _FRAME_AFTER.search(sentence)
        or _FRAME_AFTER_BARE.search(sentence)
        or _FRAME_AFTER_EN.search(sentence)
        or _FRAME_AFTER_DE_BARE.search(sentence)
    )
    return frame is not None and not _TO_YOU.search(frame.group())


def commands(text: str) -> list[Clause]:
    """The clauses of `text` addressed to the character as commands, in order; a command
    ends where the next one begins ("Setz Milch auf die Liste und erinnere mich …")."""
    found: list[tuple[int, int, Form]] = []
    ends = clause_ends(text)
    framing = _ANY_SPEECH.search(text) is not None
    for start in clause_starts(text):
        end = clause_end(text, start, ends)
        form = command_form(text, start, end)
        if form is not None and not (framing and reported(text, start)):
            found.append((start, end, form))
    cut = [
        (start, min(end, found[i + 1][0]) if i + 1 < len(found) else end, form)
        for i, (start, end, form) in enumerate(found)
    ]
    found_clauses = []
    for start, end, form in cut:
        clause = _without_joint(text[start:end])
        if form == "infinitive":
            clause = infinitive_command(clause) or clause
        found_clauses.append(Clause(start, end, clause, form))
    return found_clauses


# What joins one command to the next ("… und erinnere mich …").
JOINTS = frozenset({"und", "and", "dann", "then", "aber", "but"})


def _without_joint(clause: str) -> str:
    """The clause without what joins it to the next command ("… und", "…, then")."""
    words = clause.strip(" ,\t\n").split(" ")
    while len(words) > 1 and words[-1].casefold() in JOINTS:
        words.pop()
    return " ".join(words).strip(" ,\t\n")
