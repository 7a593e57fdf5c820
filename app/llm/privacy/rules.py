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
DE_DETERMINERS = frozenset({
    "der", "die", "das", "dem", "den", "des", "ein", "eine", "einen", "einem", "einer", "eines",
    "mein", "meine", "meinen", "meinem", "meiner", "dein", "deine", "deinen", "deinem",
    "sein", "seine", "seinen", "seinem", "ihr", "ihre", "ihren", "ihrem", "unser", "unsere",
    "kein", "keine", "keinen", "diese", "dieser", "dieses", "diesen", "jede", "jeder", "jedes",
    "im", "am", "beim", "vom", "zum", "zur", "ins", "ans", "zwei", "drei", "vier", "fünf",
    "sechs", "sieben", "acht", "neun", "zehn", "hundert",
})
# The English ones: only these make a word of the English list (not of `HOMONYMS`) the word
# ("the dev server"); after a German article it is a name ("der kleine ben").
EN_DETERMINERS = frozenset({
    "the", "a", "an", "my", "your", "his", "her", "its", "our", "their", "this", "that",
    "these", "those", "some", "any", "no", "every", "each", "much",
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
})
DETERMINERS = DE_DETERMINERS | EN_DETERMINERS
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
    "sind", "waren", "fell", "ate", "sat", "stood", "slept", "woke", "wore", "drank", "drove",
    "flew", "found", "lost", "kept", "brought", "bought", "thought", "caught", "taught", "sold",
    "heard", "felt", "met", "paid", "sang", "swam", "won", "wrote", "spoke", "broke", "chose",
    "rode", "threw", "says", "meldet", "feiert", "unterrichtet", "arbeitet", "wohnt", "schwört",
    "läuft", "zieht", "schläft", "spielt", "hilft", "fragt", "bestellt", "bringt", "wartet",
})
# Pronouns: never the name after "bei" ("bei uns klingeln").
PRONOUNS = frozenset({"uns", "mir", "dir", "ihr", "ihm", "ihnen", "euch", "mich", "dich", "sich",
                      "ihn", "wem", "wen", "jemandem", "niemandem", "allen", "anderen"})
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
    Family("shop", before=frozenset({"bei", "beim", "zu", "zum", "vom", "von", "im", "at"})),
    Family("quantity", after=frozenset({"eine", "einen", "ein", "zwei", "drei", "vier", "fünf",
                                        "zehn", "two", "three", "four", "five", "ten"}),
           lower=True, number_after=True),
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
    # German surnames that are nouns or adjectives ("der Schäfer mit seiner herde", "am kai",
    # "so süß"), and "max" before a number ("max zwei stunden")
    "schäfer": ("word",), "jäger": ("word",), "weber": ("word",), "zimmermann": ("word",),
    "könig": ("word",), "stern": ("word",), "fink": ("word",), "specht": ("word",),
    "sturm": ("word",), "hecht": ("word",), "wiese": ("word",), "herbst": ("word",),
    "engel": ("word",), "hahn": ("word",), "stein": ("word",), "busch": ("word",),
    "berg": ("word",), "graf": ("word",), "richter": ("word",), "kai": ("word",),
    "süß": ("word",), "max": ("quantity",),
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
    ("paypal.com", "/paypalme"), ("revolut.me", ""), ("wise.com", "/pay"), ("monzo.me", ""),
    ("venmo.com", "/u"), ("account.venmo.com", "/u"), ("cash.app", "/$"), ("buy.stripe.com", ""),
    ("paypal.com", "/pool"), ("pay.sumup.com", ""), ("checkout.revolut.com", ""),
    ("paylib.fr", ""), ("lydia-app.com", "/collect"),
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

# --- Issue 23: the classes that slipped through ----------------------------------------------

# True honorifics: after these, the next word is a name even in lower case ("frau schulz",
# "mr hendricks", "dr. nguyen") unless it is a function word or an address noun ("frau
# doktor"). After the other person words of `HONORIFICS` (roles: "tante", "my sister"), a
# lower-case word is a name only when a verb or the end of the phrase follows it ("tante
# gerda hat", "my sister rachel is") — and, after an English role, when it is no English word.
TRUE_HONORIFICS = frozenset({"herr", "herrn", "frau", "fräulein", "dr", "prof", "mr", "mrs", "ms",
                             "miss", "mx", "familie", "family", "sir", "dame"})
# Work and care roles before a name ("die erzieherin jule", "my manager deirdre"), besides the
# family roles of `HONORIFICS`.
ROLE_WORDS = frozenset({
    "erzieher", "erzieherin", "lehrer", "lehrerin", "therapeut", "therapeutin", "arzt", "ärztin",
    "zahnarzt", "zahnärztin", "hausarzt", "hausärztin", "sachbearbeiter", "sachbearbeiterin",
    "vermieter", "vermieterin", "hausmeister", "hausmeisterin", "trainer", "trainerin",
    "mitbewohner", "mitbewohnerin", "betreuer", "betreuerin", "physiotherapeut",
    "physiotherapeutin", "hebamme", "klassenlehrer", "klassenlehrerin", "anwalt", "anwältin",
    "manager", "flatmate", "roommate", "housemate", "coach", "teacher", "therapist",
    "landlord", "landlady", "grandpa", "grandma", "granddad", "grandad", "mum", "mom", "dad",
    "stepmom", "stepdad", "boyfriend", "girlfriend", "fiance", "fiancé", "fiancée", "coworker",
    "co-worker", "classmate", "tutor", "mentor", "nanny", "babysitter", "cousin",
})
# Nouns after an honorific that address a person by their office, not by name ("Herr Ober",
# "Herr Professor", "frau doktor", "die Frau Nachbarin"): never a name.
ADDRESS_NOUNS = frozenset({
    "ober", "professor", "professorin", "doktor", "doktorin", "doctor", "pfarrer", "pfarrerin",
    "pastor", "pastorin", "kommissar", "kommissarin", "wachtmeister", "direktor", "direktorin",
    "minister", "ministerin", "präsident", "präsidentin", "bürgermeister", "bürgermeisterin",
    "nachbar", "nachbarin", "kollege", "kollegin", "lehrer", "lehrerin", "vorsitzende",
    "vorsitzender", "abgeordnete", "abgeordneter", "officer", "president", "speaker", "mayor",
    "vicar", "judge", "nurse", "sergeant", "ambassador", "bishop", "chairman", "chairwoman",
    "chair", "ambassadorin", "kapitän", "captain", "men", "man", "woman", "women",
})
# Words that are never a name: articles, pronouns, prepositions, conjunctions, particles and
# the commonest verbs and adverbs, German and English. A lower-case word after a person word
# is none of these when it is a name.
FUNCTION_WORDS = frozenset({
    # German
    "der", "die", "das", "den", "dem", "des", "ein", "eine", "einen", "einem", "einer", "eines",
    "und", "oder", "aber", "doch", "denn", "weil", "dass", "daß", "ob", "wenn", "als", "wie",
    "so", "auch", "noch", "schon", "nur", "ja", "nein", "nicht", "kein", "keine", "keinen",
    "mit", "von", "vom", "zu", "zum", "zur", "bei", "beim", "aus", "auf", "in", "im", "an", "am",
    "um", "für", "über", "unter", "vor", "nach", "seit", "bis", "gegen", "ohne", "durch",
    "hinter", "neben", "zwischen", "ich", "du", "er", "sie", "es", "wir", "ihr", "mich", "dich",
    "sich", "uns", "euch", "mir", "dir", "ihm", "ihn", "ihnen", "mein", "meine", "meinen",
    "meinem", "meiner", "dein", "deine", "sein", "seine", "seinen", "seinem", "seiner", "ihre",
    "ihren", "ihrem", "ihrer", "unser", "unsere", "euer", "eure", "hier", "da", "dort", "heute",
    "gestern", "morgen", "jetzt", "dann", "immer", "wieder", "mal", "sehr", "gar", "ganz",
    "etwas", "was", "wer", "wo", "wann", "warum", "hat", "habe", "haben", "hatte", "hatten",
    "ist", "sind", "war", "waren", "bin", "bist", "wird", "werden", "wurde", "kann", "können",
    "konnte", "muss", "müssen", "soll", "sollen", "will", "wollen", "wollte", "darf", "mag",
    "möchte", "sagt", "sagte", "meint", "meinte", "kommt", "kam", "geht", "ging", "macht",
    "machte", "findet", "fand", "weiß", "wusste", "also", "bitte", "danke", "halt", "eben",
    "total", "echt", "selbst", "allein", "alle", "alles", "viel", "viele", "wenig", "beide",
    "einfach", "gerade", "bald", "oft", "manchmal", "endlich", "leider", "wohl", "vielleicht",
    "hast", "habt", "seid", "sei", "wäre", "hätte", "würde", "gibt", "gab", "steht", "stand",
    "liegt", "lag", "neue", "neuen", "neuer", "alte", "alten", "kleine", "kleinen", "große",
    "großen", "liebe", "lieber", "gute", "guten", "namens", "heißt", "hieß",
    # English
    "the", "a", "an", "and", "or", "but", "so", "if", "as", "of", "to", "in", "on", "at", "by",
    "for", "with", "from", "up", "about", "into", "over", "after", "before", "is", "are", "was",
    "were", "be", "been", "being", "am", "has", "have", "had", "do", "does", "did", "will",
    "would", "can", "could", "shall", "should", "may", "might", "must", "i", "you", "he", "she",
    "it", "we", "they", "me", "him", "her", "us", "them", "my", "your", "his", "its", "our",
    "their", "this", "that", "these", "those", "there", "here", "then", "now", "just", "also",
    "too", "very", "really", "always", "never", "often", "still", "already", "again",
    "finally", "actually", "probably", "maybe", "not", "no", "yes", "what", "who", "when",
    "where", "why", "how", "which", "all", "some", "any", "each", "every", "both", "other",
    "another", "only", "than", "said", "says", "told", "says", "got", "gets", "went", "goes",
    "came", "comes", "usually", "sometimes", "literally", "basically", "totally", "kind",
    "sort", "even", "ever", "back", "off", "out", "down", "away", "today", "tonight",
    "tomorrow", "yesterday", "who's", "who'd", "she's", "he's",
})

# A capitalised word before these is a person: "Rosa aus dem yogakurs", "April from
# accounting", "Heide vom wanderverein". German: "aus"/"vom"/"von" (an article or possessive
# may follow), then a word that ends with one of `GROUP_HEADS` or starts with one of
# `GROUP_PREFIXES`; English: "from" (the/my/our … and one more word may follow), then one of
# `EN_GROUPS`. "Rosen aus dem Garten" stays: a garden is no group of people.
GROUP_BEFORE = frozenset({"aus", "vom", "von"})
GROUP_HEADS = ("kurs", "verein", "gruppe", "chor", "treff", "team", "club", "klub", "büro",
               "abteilung", "buchhaltung", "kita", "kindergarten", "schule", "klasse", "firma",
               "praxis", "gemeinde", "jahrgang", "studium", "verwaltung", "amt", "kanzlei",
               "kollegium", "elternrat", "elternbeirat", "orchester", "band", "mannschaft",
               "wg", "hilfe", "dienst", "labor", "redaktion", "station", "seminar", "gym",
               "fitnessstudio", "studio", "workshop")
GROUP_PREFIXES = ("nachbar",)
EN_GROUPS = frozenset({
    "accounting", "accounts", "hr", "sales", "marketing", "finance", "legal", "it", "work",
    "office", "church", "school", "yoga", "pilates", "gym", "club", "choir", "team", "group",
    "class", "allotment", "uni", "college", "band", "practice", "surgery", "support",
    "payroll", "reception", "nursery", "daycare", "playgroup", "parish", "department",
    "floor", "lab", "ward", "squad", "crew", "course", "book", "reading", "running",
    "climbing", "swimming", "football", "tennis", "chess", "knitting",
})
EN_GROUP_PHRASES = ("next door", "upstairs", "downstairs", "across the road", "across the street",
                    "down the road", "down the street", "over the road")
# Nouns for people in general: "Kinder aus der Kita", "Leute aus dem Verein" are no names.
PEOPLE_NOUNS = frozenset({
    "kinder", "kind", "eltern", "leute", "kollegen", "kolleginnen", "freunde", "freundinnen",
    "jemand", "einer", "eine", "alle", "viele", "mitglieder", "mädchen", "jungs", "frauen",
    "männer", "menschen", "schüler", "schülerinnen", "nachbarn", "teilnehmer", "die", "der",
    "people", "someone", "somebody", "everyone", "everybody", "guys", "folks", "kids",
    "parents", "friends", "colleagues", "members", "mums", "moms", "dads", "girls", "boys",
    "somebody's", "nobody", "anyone", "the", "a", "an", "one", "two", "three",
})

# Labels before a name on an address or billing line ("Rechnung an:", "z. Hd.", "c/o",
# "Bill to:"). `True`: the label needs its colon ("Empfänger:", "An:"); `False`: it stands
# alone too ("c/o Benedikt Haller", "z. Hd. Miriam Tschöpe"). The name after it: up to
# `LABEL_NAME_WORDS` words (honorifics and titles skipped, particles along), in any case,
# up to the first punctuation or a word that is no name.
LABELS: dict[str, bool] = {
    "rechnung an": False, "lieferung an": False, "z. hd.": False, "z.hd.": False,
    "zu händen": False, "zu händen von": False, "c/o": False, "empfänger": True,
    "empfängerin": True, "absender": True, "absenderin": True, "rechnungsempfänger": True,
    "rechnungsempfängerin": True, "mieter": True, "mieterin": True, "vermieter": True,
    "vermieterin": True, "ansprechpartner": True, "ansprechpartnerin": True,
    "versicherungsnehmer": True, "versicherungsnehmerin": True, "kontoinhaber": True,
    "kontoinhaberin": True, "lieferadresse": True, "rechnungsadresse": True, "an": True,
    "patient": True, "patientin": True, "name": True, "inhaber": True, "inhaberin": True,
    "kunde": True, "kundin": True, "antragsteller": True, "antragstellerin": True,
    "auftraggeber": True, "auftraggeberin": True, "notfallkontakt": True, "anmeldung": True,
    "teilnehmer": True, "teilnehmerin": True, "vertragspartner": True, "schuldner": True,
    "gläubiger": True, "bill to": True, "ship to": True, "deliver to": True, "invoice to": True,
    "sold to": True, "send to": True, "attn": False, "attn.": False, "attention": True,
    "care of": False, "recipient": True, "account holder": True, "account name": True,
    "emergency contact": True, "addressee": True, "tenant": True, "contact": True, "to": True,
    "from": True, "payee": True, "beneficiary": True, "guest": True, "participant": True,
    "customer": True, "next of kin": True, "cardholder": True, "full name": True,
}
LABEL_NAME_WORDS = 4

# Hyphenated compounds that name a thing after a person ("Karl-Marx-Straße",
# "Max-Planck-Institut", "Anna-Amalia-Bibliothek", "Tante-Emma-Laden"): their last part ends
# with one of these. A registered name inside one is no person there.
THING_HEADS = ("straße", "strasse", "str", "weg", "platz", "allee", "gasse", "ring", "damm",
               "ufer", "chaussee", "brücke", "bahnhof", "institut", "schule", "gymnasium",
               "universität", "hochschule", "bibliothek", "museum", "theater", "haus", "halle",
               "park", "garten", "stadion", "arena", "preis", "stiftung", "klinik", "klinikum",
               "krankenhaus", "zentrum", "center", "kirche", "dom", "denkmal", "turm", "umzug",
               "fest", "markt", "tag", "jahr", "laden", "eis", "torte", "kuchen", "brot", "salat",
               "suppe", "kaserne", "siedlung", "viertel", "kiez", "gesellschaft", "verlag",
               "werk", "werke", "preis", "medaille", "plan", "gesetz", "effekt", "syndrom",
               "krankheit", "methode", "prinzip", "test", "regel", "kreis", "see", "insel",
               "tunnel", "hafen", "flughafen", "apotheke", "quelle", "grundschule",
               "realschule", "gesamtschule", "oberschule")

# Public names that hold a name: brands, dishes, fictional and public people, titles of
# books and films, places ("Earl Grey", "Dr. Oetker", "Onkel Dagobert", "Harry Potter").
# A name inside one of these, as written here (any case), is no person of the user's.
PUBLIC_NAMES = (
    # brands and products
    "dr. oetker", "dr oetker", "dr pepper", "dr. pepper", "dr. martens", "dr martens",
    "doc martens", "dr. best", "dr. hauschka", "dr. scholl", "dr. scholl's", "mr. proper",
    "mr proper", "mr. clean", "mr clean", "mr. muscle", "mr muscle", "uncle ben's",
    "ben & jerry's", "ben and jerry's", "jack daniel's", "jack daniels", "jim beam",
    "johnnie walker", "captain morgan", "tante emma", "fritz!box", "fritz box",
    "fritz-kola", "marks & spencer", "marks and spencer", "aunt jemima", "betty crocker",
    "sara lee", "tommy hilfiger", "calvin klein", "ralph lauren", "hugo boss", "mercedes-benz",
    "heinz ketchup", "werther's", "kinder bueno", "uncle sam", "onkel tom", "onkel toms hütte",
    "birne helene", "earl grey", "lady grey", "bloody mary", "tom collins", "eggs benedict",
    "victoria sponge", "beef wellington", "peach melba", "pfirsich melba", "pizza margherita",
    "caesar salad", "jack russell", "jack russell terrier", "king charles spaniel", "st bernard",
    # fictional and public people, titles
    "onkel dagobert", "graf zahl", "frau holle", "herr der ringe", "mrs doubtfire",
    "mrs. doubtfire", "mr men", "mr. men", "mr bean", "mr. bean", "mr. spock", "mr spock",
    "miss marple", "mrs. robinson", "mrs robinson", "dr. who", "doctor who", "dr. no", "dr no",
    "dr. house", "dr house", "dr. dre", "dr dre", "dr. seuss", "dr seuss", "mr. robot",
    "mr robot", "harry potter", "sherlock holmes", "peter pan", "peter lustig",
    "emil und die detektive", "pippi langstrumpf", "winnie the pooh", "santa claus",
    "father christmas", "sankt martin", "st. martin", "st martin", "st patrick",
    "st. patrick", "st patrick's", "st. patrick's", "st nicholas", "nikolaus", "king charles",
    "prince harry", "prince william", "queen mary", "queen elizabeth", "angela merkel",
    "lady gaga", "lord voldemort", "darth vader", "baker street",
    "mary poppins", "uncle scrooge", "tante-emma-laden",
)

# Before a place or region: a German preposition fused with its article ("ins Wendland",
# "im Allgäu") never stands before a person's name.
PLACE_ARTICLES = frozenset({"ins", "im", "ans"})
# Before a place: "moved to Austin", "flights to Florence", "fahren nach Paris": the two words
# before the name. Only pairs that never go before a person ("fly to", "drove to", "back
# from" can: "heard back from Jordan").
PLACE_BEFORE_PAIRS = frozenset({
    ("moving", "to"), ("moved", "to"), ("move", "to"), ("moves", "to"), ("flights", "to"),
    ("flight", "to"), ("trip", "to"), ("travel", "to"), ("travelling", "to"),
    ("traveling", "to"), ("holiday", "to"), ("relocating", "to"), ("relocated", "to"),
    ("train", "to"), ("tickets", "to"), ("born", "in"),
    ("lives", "in"), ("live", "in"), ("living", "in"), ("holiday", "in"), ("vacation", "in"),
    ("weekend", "in"), ("week", "in"), ("fahren", "nach"), ("fliegen", "nach"),
    ("ziehen", "nach"), ("zieht", "nach"), ("gezogen", "nach"), ("flug", "nach"),
    ("fahrt", "nach"), ("reise", "nach"), ("urlaub", "in"), ("wohnt", "in"), ("leben", "in"),
})
# An indefinite article two words before a name, with an adjective between ("einen alten
# Mercedes"), or right before a name in lower case ("einen stein"), makes it a thing; "eine
# Anna" right after it stays a person.
INDEFINITE = frozenset({"ein", "eine", "einen", "einem", "einer", "eines", "a", "an"})

# Labels after which a number is a reference, never a phone ("tracking number 1Z …",
# "Sendungsnummer", "Bestellnummer", "ISBN").
NUMBER_LABELS = ("tracking number", "tracking no", "tracking", "sendungsnummer",
                 "sendungsverfolgung", "paketnummer", "bestellnummer", "auftragsnummer",
                 "kundennummer", "rechnungsnummer", "vertragsnummer", "aktenzeichen",
                 "order number", "order no", "order #", "reference", "ref.", "ref ", "isbn",
                 "invoice number", "serial number", "seriennummer", "schadennummer")
NUMBER_LABELS_REACH = 30  # characters before a number searched for those
