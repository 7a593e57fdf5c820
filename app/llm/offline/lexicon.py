"""A small German and English lexicon for the offline perception.

Labels are the seeds' German vocabulary (`emotion: "begeisterung"`, `modus: "alltag"`,
`intentionen: ["information_teilen"]`, `sprach_stil: "locker"`, `beziehungs_dynamik:
"vertrauen"`, `emotions_vektor: "plateau"`, `tone: "empathisch"`); `ENGLISH` gives the
English label of each, for schemas that use English values.

A cue ending in `*` matches every word it starts (`freu*` → "freue", "freust"); a cue with a
space is a phrase matched on word boundaries; any other cue matches a whole word.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LexiconEmotion:
    """One emotion the lexicon knows: its German label (the seeds'), its English one, the
    arousal it carries, its valence and the word cues that show it."""

    label: str
    english: str
    arousal: float
    valence: int  # +1 pleasant, -1 unpleasant, 0 neither
    cues: tuple[str, ...]


EMOTIONS: tuple[LexiconEmotion, ...] = (
    LexiconEmotion("begeisterung", "excitement", 0.8, 1, (
        "begeister*", "mega", "wahnsinn*", "fantastisch*", "großartig*", "grossartig*",
        "hammer", "genial*", "kaum erwarten", "juhu", "yay", "excited", "amazing", "thrilled",
        "incredible", "fantastic", "awesome", "can't wait", "cannot wait", "brilliant")),
    LexiconEmotion("freude", "joy", 0.6, 1, (
        # the forms of "sich freuen", not "freu*": that is "Freund" and "Freundin" too
        "froh", "freue", "freust", "freut", "freuen", "freute", "freuten", "gefreut", "freude",
        "vorfreude", "erfreut", "glücklich*", "gluecklich*", "toll*", "super", "klasse", "prima",
        "schön*", "schoen*", "lach*", "spaß*", "spass*", "gut gelaunt", "happy", "glad",
        "joy*", "great", "wonderful", "nice", "fun", "laugh*", "smil*", "good news")),
    LexiconEmotion("liebe", "love", 0.6, 1, (
        "liebe", "lieben", "liebst", "verliebt*", "mag dich", "hab dich lieb", "kuschel*",
        "love", "loving", "adore*", "darling", "in love")),
    LexiconEmotion("dankbarkeit", "gratitude", 0.45, 1, (
        "danke*", "dankbar*", "thanks", "thank you", "grateful", "thankful")),
    LexiconEmotion("trauer", "sadness", 0.3, -1, (
        "traurig*", "trauer*", "weine", "weinen", "weinte", "weint", "vermiss*", "verlust*",
        "verloren", "gestorben",
        # bad news, said as news: a death, an illness, a parting, a job or an exam lost
        "tot", "stirbt", "starb", "verstorben*", "beerdigung*", "einschläfern",
        "eingeschläfert", "schluss gemacht", "getrennt", "trennung*", "scheidung*",
        "gekündigt", "kündigung*", "arbeitslos*", "durchgefallen", "prüfung gefallen", "nicht bestanden", "krebs",
        "diagnose", "krankenhaus*", "erkrankt*", "unfall*", "schlecht", "schlimm*",
        "schrecklich*", "streit*", "gestritten", "so allein", "ganz allein", "mich allein",
        "dead", "passed away", "funeral", "put down", "broke up", "break up", "breakup",
        "divorce*", "left me", "fired", "laid off", "lost my job", "unemployed", "failed",
        "cancer", "diagnosis", "hospital", "accident", "awful", "terrible", "horrible",
        "a fight", "argument", "so alone", "all alone", "feel alone",
        "einsam*", "deprimiert*", "niedergeschlagen*", "enttäusch*", "enttaeusch*",
        "heulen", "sad", "sadness", "cry*", "miss you", "missing", "lost", "died", "death",
        "lonely", "depressed", "heartbroken", "disappointed", "grief", "unhappy")),
    LexiconEmotion("wut", "anger", 0.8, -1, (
        "wütend*", "wuetend*", "wut", "sauer", "ärger*", "aerger*", "genervt*", "nervt*",
        "hass*", "zornig*", "unverschämt*", "regt mich auf", "angry", "anger", "mad",
        "furious", "annoyed", "annoying", "hate", "pissed", "outrageous")),
    LexiconEmotion("angst", "fear", 0.75, -1, (
        "angst", "ängstlich*", "aengstlich*", "sorge", "sorgen", "befürcht*", "befuercht*",
        "panik*", "nervös*", "nervoes*", "unsicher*", "furcht*", "fürchte*", "afraid", "fear*",
        "scared", "worried", "worry", "anxious", "panic*", "nervous", "terrified")),
    LexiconEmotion("stress", "stress", 0.75, -1, (
        "stress*", "gestresst", "überfordert*", "ueberfordert*", "hektik", "hektisch",
        "zeitdruck", "druck", "deadline*", "stressed", "overwhelmed", "pressure", "hectic")),
    LexiconEmotion("erschoepfung", "exhaustion", 0.2, -1, (
        "müde", "muede", "erschöpft*", "erschoepft*", "kaputt", "ausgelaugt", "schlapp",
        "tired", "exhausted", "worn out", "sleepy", "drained")),
    LexiconEmotion("ueberraschung", "surprise", 0.7, 0, (
        "überrasch*", "ueberrasch*", "unglaublich*", "krass", "wow", "surprised",
        "surprise*", "unbelievable", "unexpected")),
    LexiconEmotion("ekel", "disgust", 0.6, -1, (
        "eklig*", "ekel*", "widerlich*", "igitt", "disgusting", "yuck", "revolting")),
)
NEUTRAL = LexiconEmotion("neutral", "neutral", 0.4, 0, ())

INTENSIFIERS = frozenset((
    "sehr", "total", "echt", "richtig", "extrem", "wirklich", "unglaublich", "so", "voll",
    "really", "very", "extremely", "totally", "super", "so", "incredibly"))
NEGATIONS = frozenset(("nicht", "kein", "keine", "keinen", "nie", "not", "no", "never",
                       "don't", "isn't", "wasn't", "aren't", "didn't", "nichts"))

# intention -> cues; "frage" also fires on a question mark.
INTENTIONS: dict[str, tuple[str, ...]] = {
    "begruessung": ("hallo", "hi", "hey", "moin", "servus", "grüß dich", "guten morgen",
                    "guten abend", "guten tag", "hello", "good morning", "good evening"),
    "abschied": ("tschüss", "tschuess", "ciao", "bis später", "bis morgen", "bis bald",
                 "gute nacht", "bye", "goodbye", "good night", "see you"),
    "dank": ("danke*", "dankeschön", "thanks", "thank you"),
    "bitte": ("bitte", "kannst du", "könntest du", "koenntest du", "würdest du", "hilf mir",
              "please", "can you", "could you", "would you", "help me"),
    "erinnerung": ("erinner mich", "erinnere mich", "erinnern", "erinnere",
                   "erinnerung", "remind me", "reminder"),
    "notiz": ("notier*", "schreib auf", "auf die liste", "einkaufsliste", "to-do", "todo",
              "add to", "note down", "shopping list", "write down"),
}
QUESTION_WORDS = frozenset(("wer", "was", "wann", "wo", "warum", "wieso", "weshalb", "wie",
                            "welche", "welcher", "welches", "who", "what", "when", "where",
                            "why", "how", "which"))

MODES: dict[str, tuple[str, ...]] = {
    "krise": ("nicht mehr leben", "umbringen", "suizid*", "selbstmord*", "mir was antun",
              "keinen sinn mehr", "kill myself", "suicid*", "end my life", "want to die",
              "no reason to live"),
    "spiel": ("haha*", "hihi", "lol", "witz*", "rätsel*", "raetsel*", "spielen", "joke*",
              "riddle*", "let's play"),
    "tiefgang": ("sinn des lebens", "nachdenk*", "grübel*", "gruebel*", "was bedeutet",
                 "wer bin ich", "meaning of life", "i wonder", "reflect*", "who am i"),
}

FORMAL = ("sehr geehrte*", "mit freundlichen grüßen", "dear", "sincerely",
          "kind regards")
CASUAL = ("hey", "hi", "lol", "haha*", "moin", "na", "jo", "yo", "gonna", "wanna", "cool",
          "krass", "digga", "alter")
DISCLOSURE = ("ich fühle", "ich fuehle", "mir geht", "ich habe angst", "ich bin traurig",
              "ehrlich gesagt", "unter uns", "i feel", "i'm feeling", "honestly",
              "between us", "to be honest")

STOPWORDS = frozenset("""
ich du er sie es wir ihr mich mir dich dir uns euch sich mein meine meinen meinem meiner
dein deine deinen sein seine ihre ihren und oder aber denn nicht kein keine ist bin bist
sind war waren hat habe hast haben hatte wird werden wurde auch noch schon sehr heute
morgen gestern jetzt immer wieder mit von zu zum zur für fuer über ueber unter bei nach vor
aus dass weil wenn wie was wer wo warum wann welche welcher welches das der die den dem des
ein eine einen einem einer mal doch ja nein gut danke bitte hallo gerade einfach echt so
dann da hier dort etwas nichts alles viel mehr ganz man kann könnte muss soll will würde
diese dieser dieses einen eigentlich total richtig wirklich also nur am im ins an auf um
i you he she it we they me my your our their his her its and or but not no is am are was
were has have had will would be been being very today tomorrow yesterday now always again
with from to for about under at after before out that because if how what who where why
when which the a an this these those just yes thanks please hello hi really so do does did
can could should there here some something anything much more all any been going get got
""".split())

ENGLISH: dict[str, str] = {
    **{e.label: e.english for e in (*EMOTIONS, NEUTRAL)},
    "information_teilen": "share_information", "emotionaler_ausdruck": "emotional_expression",
    "frage": "question", "bitte": "request", "begruessung": "greeting",
    "abschied": "farewell", "dank": "thanks", "erinnerung": "reminder", "notiz": "note",
    "smalltalk": "small_talk",
    "alltag": "everyday", "krise": "crisis", "spiel": "play", "tiefgang": "reflective",
    "locker": "casual", "formell": "formal",
    "vertrauen": "trust", "distanz": "distance", "naehe": "closeness",
    "plateau": "plateau", "steigend": "rising", "fallend": "falling",
    "empathisch": "empathetic", "herzlich": "warm", "sachlich": "factual",
    "behutsam": "gentle", "verspielt": "playful",
}


class CueSet:
    """Compiled cues: `count(text)` tells how many cues occur."""

    def __init__(self, cues: Iterable[str]) -> None:
        cues = list(cues)
        parts = []
        for cue in cues:
            if cue.endswith("*"):
                parts.append(re.escape(cue[:-1]) + r"[\wäöüß]*")
            else:
                parts.append(re.escape(cue))
        # The first-letter class lets most positions fail at one test instead of one per cue
        # (these run over whole messages of up to 20 000 characters).
        firsts = "".join(sorted({c for cue in cues for c in (cue[0].lower(), cue[0].upper())}))
        self._pattern = (re.compile(rf"(?<![\wäöüß])(?=[{re.escape(firsts)}])(?:"
                                    + "|".join(parts) + r")(?![\wäöüß])",
                                    re.IGNORECASE) if parts else None)

    def find(self, text: str) -> list[re.Match[str]]:
        return list(self._pattern.finditer(text)) if self._pattern else []

    def count(self, text: str) -> int:
        return len(self.find(text))


EMOTION_CUES: dict[str, CueSet] = {e.label: CueSet(e.cues) for e in EMOTIONS}
INTENTION_CUES: dict[str, CueSet] = {name: CueSet(cues) for name, cues in INTENTIONS.items()}
MODE_CUES: dict[str, CueSet] = {name: CueSet(cues) for name, cues in MODES.items()}
FORMAL_CUES = CueSet(FORMAL)
CASUAL_CUES = CueSet(CASUAL)
DISCLOSURE_CUES = CueSet(DISCLOSURE)
INTENSIFIER_CUES = CueSet(INTENSIFIERS)
EMOTION_BY_LABEL: dict[str, LexiconEmotion] = {e.label: e for e in (*EMOTIONS, NEUTRAL)}
