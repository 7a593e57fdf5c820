"""The rules of the detectors as data: person contexts, homonym families, private URL hosts,
birthday words. Adding a case is adding a row here, not an `if` in a detector.

All words are lower case; lookups lower-case the text's word first.
"""

from __future__ import annotations

from dataclasses import dataclass

# Words before a name that make it a person: honorifics, titles, family roles. They stay in
# the prompt (only the name after them is masked) and are never names themselves.
HONORIFICS = frozenset({
    "herr", "herrn", "frau", "fräulein", "dr.", "dr", "prof.", "prof", "mr", "mr.", "mrs",
    "mrs.", "ms", "ms.", "miss", "mx", "mx.", "sir", "madam", "dame", "lady", "lord",
    "familie", "family", "onkel", "tante", "oma", "opa", "cousin", "cousine", "uncle", "aunt",
    "auntie", "grandma", "grandpa", "granny", "nana", "schwester", "bruder", "neffe", "nichte",
    "kollege", "kollegin", "nachbar", "nachbarin", "chef", "chefin", "freund", "freundin",
    "sister", "brother", "nephew", "niece", "colleague", "neighbour", "neighbor", "boss",
    "friend", "schwager", "schwägerin", "schwiegermutter", "schwiegervater", "sohn", "tochter",
    "son", "daughter", "husband", "wife", "mann", "papa", "mama", "mutti", "vati",
    "mutter", "vater", "großmutter", "großvater", "enkel", "enkelin", "ehemann", "ehefrau",
    "partner", "partnerin", "verlobter", "verlobte", "patenkind", "pate", "patin",
    # words that introduce a name
    "heiße", "heißt", "hieß", "namens", "named",
})

# English words after a capitalised word that make it a person: verbs of speaking and doing.
EN_PERSON_AFTER = frozenset({
    "said", "says", "told", "asked", "asks", "wrote", "writes", "called", "calls", "texted",
    "thinks", "thought", "laughed", "smiled", "cried", "replied", "promised", "wants",
    "wanted", "came", "visited", "emailed", "messaged", "hugged", "loves", "feels", "felt",
})
# Lower-case name particles between an honorific and the surname ("Frau von der Leyen").
PARTICLES = frozenset({"von", "van", "de", "der", "den", "zu", "vom", "zum", "ten", "ter",
                       "di", "da", "del", "della", "la", "le", "du", "al", "el", "bin"})

# Titles between an honorific and the name ("Frau Dr. Prof. Kühn"): skipped, never names.
TITLES = frozenset({"dr", "prof", "dipl", "mr", "mrs", "ms", "mx", "med", "ing"})

# Capitalised words that are never a person in an English sentence: weekdays, months,
# languages, holidays, big brands and places (public names stay).
EN_NOT_NAMES = frozenset({
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "january",
    "february", "march", "april", "may", "june", "july", "august", "september", "october",
    "november", "december", "english", "german", "french", "spanish", "italian", "christmas",
    "easter", "google", "facebook", "instagram", "whatsapp", "netflix", "spotify", "youtube",
    "microsoft", "amazon", "tesla", "uber", "ikea", "lidl", "aldi", "zoom", "iphone", "ipad",
    "chatgpt", "openai", "tiktok", "linkedin", "paypal", "ebay", "dhl", "berlin", "london",
    "paris", "munich", "hamburg", "vienna", "europe", "germany", "america", "england",
})

# English: two words before a name that make it a person ("married to Declan").
EN_PERSON_BEFORE_PAIRS = frozenset({
    ("ran", "into"), ("run", "into"), ("running", "into"), ("bumped", "into"),
    ("married", "to"), ("engaged", "to"), ("talked", "to"), ("spoke", "to"), ("talking", "to"),
    ("speak", "to"), ("wrote", "to"), ("said", "to"), ("listen", "to"), ("listened", "to"),
    ("went", "with"), ("out", "with"), ("date", "with"), ("lives", "with"), ("live", "with"),
})
# English: "paid with Klarna" — two words before a capitalised word that make it a thing.
EN_THING_BEFORE_PAIRS = frozenset({("paid", "with"), ("pay", "with"), ("paying", "with"),
                                   ("pays", "with"), ("ordered", "from"), ("bought", "from")})
# English: "Kwabena is driving" — a word after a capitalised word that, with an -ing form
# after it, makes it a person.
EN_PROGRESSIVE = frozenset({"is", "was", "'s", "keeps", "kept"})
# German: "bei Szymanski klingeln", "bei Rautenberg im erdgeschoss abgeben" — words within a
# few words after "bei" + a capitalised word that make it a person (the shop stays: "bei
# Müller gekauft").
BEI_PERSON_AFTER = frozenset({"klingeln", "klingel", "klingle", "läuten", "abgeben", "abgegeben",
                              "übernachten", "übernachtet", "schlafen", "geschlafen", "wohnen",
                              "gewohnt", "untergekommen"})
BEI_REACH = 3  # words after the name searched for those
# English: "Priya and I", "Priya and me" — two words after a name that make it a person.
EN_PERSON_AFTER_PAIRS = frozenset({("and", "i"), ("and", "me"), ("or", "i"), ("or", "me")})
# English: a word joining two names ("Aiyana and Bartholomew"): a capitalised non-dictionary
# word next to a found name through one of these is a name too.
EN_NAME_JOINERS = frozenset({"and", "or", "&"})

# Words after a name that make it a person (German and English).
PERSON_AFTER = EN_PERSON_AFTER | frozenset({
    "sagt", "sagte", "meint", "meinte", "fragt", "fragte", "schreibt", "schrieb", "ruft",
    "rief", "erzählt", "erzählte", "lacht", "lachte", "weint", "weinte", "kommt", "kam",
    "hat", "hatte", "ist", "war", "will", "wollte", "findet", "fand", "denkt", "dachte",
})
# Of those, the verbs of speaking and feeling (and their participles): after a name that is
# also a word, they make it a person even after an article ("die Rosen hat sich gefreut",
# "hat margherita gerufen"); "ist", "hat" alone do not ("die Heide ist schön").
SPEAKING_AFTER = EN_PERSON_AFTER | frozenset({
    "sagt", "sagte", "meint", "meinte", "fragt", "fragte", "schreibt", "schrieb", "ruft",
    "rief", "erzählt", "erzählte", "lacht", "lachte", "weint", "weinte", "gerufen",
    "angerufen", "geantwortet", "gelacht", "geweint",
})  # not "gesagt", "gemeint": "frank gesagt", "ernst gemeint" are adverbs
SPEAKING_AFTER_PAIRS = frozenset({("hat", "sich"), ("hatte", "sich"), ("hat", "mir"),
                                  ("hat", "mich")})

# A name that is also an ordinary word, and the words that make it the ordinary word when
# they stand right before it (or two words before, with an adjective between: "die alte
# Kiefer", "a christmas carol"), whatever its family: articles, possessives, numbers, an
# article fused with a preposition ("im Ernst"). A verb of speaking after it still makes
# it a person.
DETERMINERS = frozenset({
    "der", "die", "das", "dem", "den", "des", "ein", "eine", "einen", "einem", "einer", "eines",
    "mein", "meine", "meinen", "meinem", "meiner", "dein", "deine", "deinen", "deinem",
    "sein", "seine", "seinen", "seinem", "ihr", "ihre", "ihren", "ihrem", "unser", "unsere",
    "kein", "keine", "keinen", "diese", "dieser", "dieses", "diesen", "jede", "jeder", "jedes",
    "im", "am", "beim", "vom", "zum", "zur", "ins", "ans",
    "the", "a", "an", "my", "your", "his", "her", "its", "our", "their", "this", "that",
    "these", "those", "some", "any", "no", "every", "each", "much",
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "zwei",
    "drei", "vier", "fünf", "sechs", "sieben", "acht", "neun", "zehn", "hundert",
})
# Lower-case English words (not in `HOMONYMS`, found in the English word list) are the
# ordinary word also after these ("at dawn", "turned amber", "made ginger tea").
EN_WORD_BEFORE = frozenset({"at", "in", "on", "of", "into", "along", "across", "under", "over",
                            "made", "make", "bought", "buy", "turned", "turn", "cooked", "ate",
                            "drank", "smelled", "planted", "grew", "grow"})
# Set phrases in which a name's letters are a word: the name's place is "*".
IDIOMS = (("durch", "*", "und"), ("*", "und", "frei"), ("*", "my", "words"), ("to", "be", "*"))
# Words after a name at the start of a clause that show it is the subject: a verb. Besides
# these, an English word ending in -ed or a verb form in -s of a dictionary word counts, and
# a German lower-case word ending in -t ("frank bringt den grill mit").
CLAUSE_VERBS = PERSON_AFTER | frozenset({
    "is", "was", "has", "had", "got", "forgot", "did", "does", "left", "went", "came", "can",
    "could", "would", "should", "will", "won't", "can't", "didn't", "doesn't", "isn't",
    "wasn't", "ran", "took", "made", "gave", "sent", "knows", "knew", "holt", "fährt", "geht",
    "kann", "muss", "soll", "darf", "macht", "bringt", "fahren", "gehen", "kommen", "haben",
    "sind", "waren",
})
NOT_VERBS = frozenset({"nicht", "jetzt", "mit", "seit", "oft", "bist", "gut", "halt", "erst",
                       "bitte", "that", "what", "but", "not", "just", "at", "it", "yet"})
CLAUSE_JOINERS = frozenset({"and", "und", "or", "oder", "&"})

# English: words before a capitalised non-dictionary word that make it a person.
EN_PERSON_BEFORE = frozenset({
    "met", "meet", "meeting", "with", "told", "tell", "asked", "ask", "called", "call",
    "texted", "text", "emailed", "email", "visited", "visit", "saw", "see", "hugged", "thanked",
    "love", "loves", "miss", "missed", "married", "dating", "named", "invited", "helped",
    "friend", "sister", "brother", "mom", "mum", "dad",
    "wife", "husband", "son", "daughter", "cousin", "boyfriend", "girlfriend", "partner",
    "colleague", "coworker", "roommate", "neighbour", "neighbor", "boss", "teacher", "nurse",
    "doctor", "therapist", "baby", "kid", "uncle", "aunt",
})
# The two-word person context "bei …": only with these, "bei Müller" (the shop) stays.
BELL_WORDS = frozenset({"klingel", "klingeln", "klingelt", "klingle", "wohnt", "wohne",
                        "übernachte", "übernachtet", "schlafe", "schläft", "wohnen"})


@dataclass(frozen=True, slots=True)
class Family:
    """A homonym family: the non-person readings of words that are also names.

    `before`/`after`: a word right before/after the match that means the non-person reading.
    `lower`: the lower-case spelling is the ordinary word ("frank und frei"); a name written
    in lower case is still a name unless its family says so.
    `number_after`: a following number means the non-person reading ("August 2024").
    `adverb_s`: the word with an `s` is the adverb ("Freitags gehe ich …", "montags").
    """

    name: str
    before: frozenset[str] = frozenset()
    after: frozenset[str] = frozenset()
    lower: bool = False
    number_after: bool = False
    adverb_s: bool = False


_TIME_WORDS = {"am", "im", "jeden", "jeder", "nächsten", "nächster", "letzten", "letzter",
               "kommenden", "diesen", "diesem", "bis", "ab", "seit", "vom", "zum", "anfang",
               "mitte", "ende", "on", "in", "every", "next", "last", "this", "since", "until",
               "by", "early", "late", "mid", "der", "den", "des", "dem"}

FAMILIES: dict[str, Family] = {family.name: family for family in (
    Family("weekday", before=frozenset(_TIME_WORDS), lower=True, adverb_s=True,
           after=frozenset({"abend", "morgen", "nachmittag", "mittag", "vormittag", "nacht",
                            "night", "morning", "afternoon", "evening", "war", "ist"})),
    Family("month", before=frozenset(_TIME_WORDS), lower=True, number_after=True,
           after=frozenset({"war", "ist", "wird", "was", "is"})),
    Family("season", before=frozenset(_TIME_WORDS | {"diesen", "diesem", "im", "den"}),
           lower=True, after=frozenset({"ist", "war", "kommt", "is", "was"})),
    Family("flower", before=frozenset({"rote", "roten", "weiße", "gelbe",
                                                   "schöne", "frische", "paar", "strauß",
                                                   "keine", "viele", "red", "white", "some",
                                                   "mit", "with", "gießen", "gegossen"}),
           after=frozenset({"aus", "im", "blühen", "blühten", "duften", "vom", "gießen",
                            "schneiden", "bloom", "from", "in"}), lower=True),
    Family("food", before=frozenset({"pizza"}),
           after=frozenset({"würstchen", "schnitzel", "melange", "walzer", "torte",
                            "pizza", "sauce", "soße"}), lower=True),
    Family("word", before=frozenset({"pay", "paid", "zahlen", "zehn", "hundert",
                                                 "deutsche", "d-"}),
           after=frozenset(), lower=True, number_after=False),
    Family("shop", before=frozenset({"bei", "beim", "zu", "zum", "vom", "von", "im", "at"}),
           lower=True),
)}

# Words that are names and ordinary words alike, with their families. A registered name in
# this table is masked unless its context says the ordinary reading.
HOMONYMS: dict[str, tuple[str, ...]] = {
    "montag": ("weekday",), "dienstag": ("weekday",), "mittwoch": ("weekday",),
    "donnerstag": ("weekday",), "freitag": ("weekday",), "samstag": ("weekday",),
    "sonntag": ("weekday",), "friday": ("weekday",), "monday": ("weekday",),
    "april": ("month",), "mai": ("month",), "may": ("month", "word"), "juni": ("month",),
    "june": ("month",), "juli": ("month",), "august": ("month",),
    "rosen": ("flower",), "rose": ("flower",), "lilie": ("flower",), "lily": ("flower",),
    "erika": ("flower",), "jasmin": ("flower",), "iris": ("flower",), "daisy": ("flower",),
    "margherita": ("food",), "wiener": ("food",), "frankfurter": ("food",),
    "berliner": ("food",), "hamburger": ("food",),
    "frank": ("word",), "mark": ("word",), "bill": ("word",), "will": ("word",),
    "hope": ("word",), "grace": ("word",), "faith": ("word",), "joy": ("word",),
    "summer": ("season",), "sommer": ("season",), "winter": ("season",), "koch": ("word",),
    "fischer": ("word",), "bauer": ("word",), "wolf": ("word",), "fuchs": ("word",),
    "vogel": ("word",), "braun": ("word",), "schwarz": ("word",), "weiß": ("word",),
    "klein": ("word",), "lange": ("word",), "groß": ("word",), "jung": ("word",),
    "kaiser": ("word",), "schneider": ("word",), "pat": ("word",), "sue": ("word",),
    "rob": ("word",), "art": ("word",), "ernst": ("word",), "heide": ("word",),
    "müller": ("shop",), "lidl": ("shop",), "aldi": ("shop",), "rossmann": ("shop",),
}

# Private URLs: (host, or a suffix starting with "."; path prefix, "" for any path).
PRIVATE_URLS: tuple[tuple[str, str], ...] = (
    ("photos.app.goo.gl", ""), ("photos.google.com", "/share"), ("photos.google.com", "/album"),
    ("drive.google.com", ""), ("docs.google.com", ""), ("dropbox.com", "/s"),
    ("dropbox.com", "/scl"), ("dropbox.com", "/sh"), ("1drv.ms", ""), ("onedrive.live.com", ""),
    (".sharepoint.com", ""), ("icloud.com", "/sharedalbum"), ("icloud.com", "/photos"),
    ("icloud.com", "/iclouddrive"), ("share.icloud.com", ""), ("wetransfer.com", "/downloads"),
    ("we.tl", ""), ("zoom.us", "/j"), ("zoom.us", "/my"), (".zoom.us", "/j"),
    ("meet.google.com", ""),
    ("teams.microsoft.com", "/l/meetup-join"), ("teams.live.com", "/meet"), ("whereby.com", ""),
    ("meet.jit.si", ""), (".webex.com", "/meet"), (".webex.com", "/join"), ("paypal.me", ""),
    ("paypal.com", "/paypalme"), ("revolut.me", ""), ("wise.com", "/pay"),
    ("flickr.com", "/photos"), ("imgur.com", "/a"), ("chat.whatsapp.com", ""),
    ("t.me", "/+"), ("t.me", "/joinchat"), ("calendly.com", ""), ("doodle.com", "/poll"),
    ("doodle.com", "/meeting"),
    ("", "/s/"),  # Nextcloud / ownCloud shares on any host: …/index.php/s/<token>
)

# Words after which a plate may be written in lower case ("mein kennzeichen ist m-ks 482").
PLATE_WORDS = ("kennzeichen", "nummernschild", "autonummer", "number plate", "license plate",
               "licence plate", "registration")
PLATE_WORDS_REACH = 40  # characters after such a word searched for a plate

# Plate-shaped text that is no plate: paper sizes ("DIN A4"), norms.
NOT_PLATES = ("DIN A", "DIN EN", "ISO A")

# Words near a date with a year that make it a birth date (lower case, may hold a space).
BIRTHDAY_WORDS = ("geboren", "geb.", "geburtstag", "geburtsdatum", "geburtstags", "born",
                  "birthday", "bday", "b-day", "birth date", "date of birth", "dob", "jahrgang")
BIRTHDAY_REACH = 40  # characters before the date searched for a birthday word
# "am 2.4.2019 geboren", "kam am 9.11.2021 auf die welt", "hat am 11.11.1971 geburtstag"
BIRTHDAY_AFTER = ("geboren", "zur welt", "auf die welt", "born", "geburtstag")
BIRTHDAY_AFTER_REACH = 25  # characters after the date searched for those
