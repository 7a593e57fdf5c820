"""Each privacy detector on its own (design §7a): what it finds, what it leaves alone."""

from __future__ import annotations

import pytest

from app.llm.privacy import (
    Masker,
    NameIndex,
    address,
    birthdate,
    email,
    iban,
    names,
    phone,
    plate,
    taxid,
    url,
)
from app.llm.privacy.spans import Span, settle


def values(finder, text: str) -> list[str]:
    return [span.value for span in finder(text)]


@pytest.mark.parametrize("text", ["0170/1234567", "(0151) 2345-678", "+49 30 1234567",
                                  "0221 / 47 11 08 15", "0049 171 1234567", "+44 20 7946 0958",
                                  "+49 (0)211 1234567", "030-12345678", "(312) 555-0142"])
def test_phone_numbers_as_people_write_them(text):
    assert values(phone.find, f"Ruf {text} an.") == [text]


@pytest.mark.parametrize("text", ["am 12.03.2024 um 9:30", "Bestellnummer 123456789",
                                  "Sendung 00340434161234567890", "am 01.03.2024",
                                  "Das kostet 1.234,56 Euro", "im Jahr 2024", "02/14/1992",
                                  "Raum 0.12"])
def test_dates_times_and_order_numbers_are_no_phone_numbers(text):
    assert values(phone.find, text) == []


def test_iban_needs_a_valid_checksum_and_stops_at_the_next_word():
    assert values(iban.find, "IBAN DE89 3704 0044 0532 0130 00 AB bitte") == \
        ["DE89 3704 0044 0532 0130 00"]
    assert values(iban.find, "DE89370400440532013000") == ["DE89370400440532013000"]
    assert values(iban.find, "DE89 3704 0044 0532 0130 01") == []  # checksum broken
    assert values(iban.find, "iban de89 3704 0044 0532 0130 00") == ["de89 3704 0044 0532 0130 00"]


def test_the_german_tax_id_needs_its_check_digit():
    assert values(taxid.find, "Steuer-ID 86 095 742 719.") == ["86 095 742 719"]
    assert values(taxid.find, "IdNr 86095742719") == ["86095742719"]
    assert values(taxid.find, "Nummer 86095742718") == []
    assert values(taxid.find, "Kunde 12345678901") == []


def test_email_addresses():
    assert values(email.find, "an Anna.Berg+x@example.co.uk, danke") == \
        ["Anna.Berg+x@example.co.uk"]
    assert values(email.find, "@anna auf Mastodon") == []
    assert values(email.find, "post@bäckerei-schulz.de schreibt") == ["post@bäckerei-schulz.de"]


@pytest.mark.parametrize(("text", "found"), [
    ("in der Weserstr. 112 im", "Weserstr. 112"),
    ("Hauptstraße 12a, 10115 Berlin.", "Hauptstraße 12a, 10115 Berlin"),
    ("wohnt Am Alten Hafen 12.", "Am Alten Hafen 12"),
    ("Karl-Marx-Allee 3-5", "Karl-Marx-Allee 3-5"),
    ("at 221B Baker Street, London NW1 6XE.", "221B Baker Street, London NW1 6XE"),
    ("moved to 45 Kings Road today", "45 Kings Road"),
    ("vor der Bgm.-Müller-Str. 4 warten", "Bgm.-Müller-Str. 4"),
    ("im Lindenweg 12–14 links", "Lindenweg 12–14"),
    ("to 88 Elm Hill Dr, Denver, CO 80203 by", "88 Elm Hill Dr, Denver, CO 80203"),
    ("at 400 N Oak St tonight", "400 N Oak St")])
def test_street_addresses_with_a_house_number(text, found):
    assert values(address.find, text) == [found]


@pytest.mark.parametrize("text", ["die Postleitzahl 10115", "in Köln", "Im Jahr 2024 war",
                                  "die Hauptstraße ist gesperrt", "10115 Berlin"])
def test_a_postcode_city_or_street_alone_is_no_address(text):
    assert values(address.find, text) == []


@pytest.mark.parametrize(("text", "found"), [
    ("geboren am 12.03.1985 in Bonn", ["12.03.1985"]),
    ("am 2.4.2019 geboren", ["2.4.2019"]),
    ("Mein Geburtstag: 3. Mai 1990", ["3. Mai 1990"]),
    ("born on 4 July 1976", ["4 July 1976"]),
    ("my birthday is March 3, 1990", ["March 3, 1990"]),
    ("sie hat am 3.5.1980 geburtstag", ["3.5.1980"]),
    ("er kam am 2.2.2020 auf die Welt", ["2.2.2020"]),
    ("bday 1990-01-02 for the form", ["1990-01-02"]),
    ("Geburtstag am 12. März", []),  # no year: stays
    ("Termin am 12.03.2024", [])])  # no birthday word: stays
def test_birth_dates_need_a_year_and_a_birthday_word(text, found):
    assert values(birthdate.find, text) == found


def test_german_car_plates():
    assert values(plate.find, "B-XY 1234, HH-JK 4711E und K LM 456.") == \
        ["B-XY 1234", "HH-JK 4711E", "K LM 456"]
    assert values(plate.find, "Raum B-204, Kapitel 3, DIN A4") == []
    # In lower case only after a plate word: "ab 12" alone is no plate.
    assert values(plate.find, "mein kennzeichen ist hh-ab 123.") == ["hh-ab 123"]
    assert values(plate.find, "komm ab 12 vorbei, hh ab 123") == []


def test_private_urls_are_found_and_public_sites_stay():
    text = ("Album https://photos.app.goo.gl/abc, Artikel https://www.spiegel.de/x, "
            "Call https://zoom.us/j/123?pwd=x. Geld: https://paypal.me/anna/20 "
            "Cloud https://cloud.example.de/index.php/s/AbC")
    assert values(url.find, text) == ["https://photos.app.goo.gl/abc", "https://zoom.us/j/123?pwd=x",
                                      "https://paypal.me/anna/20",
                                      "https://cloud.example.de/index.php/s/AbC"]
    # Known private hosts written without a scheme, only with a path; public ones stay.
    bare = ("komm rein: meet.google.com/abc-defg-hij oder calendly.com/anna/30min, "
            "nicht google.com/search, nur meet.google.com")
    assert values(url.find, bare) == ["meet.google.com/abc-defg-hij", "calendly.com/anna/30min"]


def test_registered_names_match_in_any_case_inflected_and_by_their_parts():
    index = NameIndex(["Frau Dr. Özdemir", "Anna Schmidt"])
    assert set(index.terms) == {"Özdemir", "Anna Schmidt", "Anna", "Schmidt"}
    assert values(index.find, "ANNA, annas Hund, Özdemir und Frau Dr. özdemir") == \
        ["ANNA", "anna", "Özdemir", "özdemir"]
    assert values(index.find, "Annabell und Schmidts und Schmidtke") == ["Schmidt"]


@pytest.mark.parametrize(("name", "text", "masked"), [
    ("Rosen", "Rosen aus dem Garten", False), ("Rosen", "Frau Rosen kommt", True),
    ("Freitag", "am Freitag", False), ("Freitag", "Herr Freitag sagt", True),
    ("August", "im August", False), ("August", "Onkel August", True),
    ("Frank", "frank und frei", False), ("Frank", "Frank sagt", True),
    ("Mark", "mark my words", False), ("Bill", "pay the bill", False),
    ("Margherita", "pizza Margherita", False), ("Müller", "bei Müller gekauft", False),
    ("Müller", "Herr Müller", True), ("Müller", "klingel bei Müller", True),
    ("Freitag", "Freitags gehe ich laufen", False), ("Freitag", "Herrn Freitags Auto", True),
    # words of the English list decided by the same rules ("rules.py"), not by a table row
    ("Grant", "my grant was approved", False), ("Grant", "then Grant called me", True),
    ("Amber", "the light turned amber", False), ("Dawn", "we left at dawn", False),
    ("Miles", "we walked ten miles", False), ("Miles", "later, Miles drove home", True),
    ("Holly", "Tom bought the holly", False), ("Olive", "it is Olive's car", True),
    ("Bill", "bill forgot the keys", True), ("Will", "will you come?", False),
    ("Will", "will keeps calling", True), ("Rosen", "die Rosen hat sich bedankt", True),
    ("Rosen", "die Rosen blühen", False), ("Freitag", "Freitags Sohn kam", True),
    ("Ernst", "im Ernst?", False), ("Mark", "durch Mark und Bein", False),
    ("Anna", "die Anna kommt auch", True), ("Margherita", "hat margherita gerufen", True),
    ("Lange", "wie lange ist das her", False), ("Ernst", "das war ernst gemeint", False)])
def test_homonyms_are_decided_by_their_context(name, text, masked):
    assert bool(values(NameIndex([name]).find, text)) is masked


@pytest.mark.parametrize(("text", "masked"), [
    ("heide und tom fahren weg", ["heide", "tom"]),  # joined to another registered name
    ("frank und frei gesagt", []), ("dawn and I left early", ["dawn"])])
def test_a_lower_case_name_at_a_clause_start_is_its_subject(text, masked):
    assert values(NameIndex(["Heide", "Tom", "Frank", "Dawn"]).find, text) == masked


@pytest.mark.parametrize(("text", "found"), [
    ("Herr Kowalski hat", ["Kowalski"]), ("bei Frau Dr. Kühn", ["Kühn"]),
    ("Oma Gerda kommt", ["Gerda"]), ("klingel bei Brenner", ["Brenner"]),
    ("Mr Pemberton called", ["Pemberton"]), ("Herr Jürgen Albers kam", ["Jürgen Albers"]),
    ("Meine Mutter Ingeborg ruft", ["Ingeborg"]), ("Frau von der Leyen sagt", ["von der Leyen"]),
    ("Prof. Dr. med. Weber", ["Weber"]), ("Frau Schmidt-Lehmann kam", ["Schmidt-Lehmann"]),
    ("Ich heiße Lisa.", ["Lisa"]),
    ("My colleague Mr. O'Brien", ["O'Brien"]),
    ("Herr und Frau kommen", []), ("bei Müller gekauft", []),
    ("bitte bei Nowakowski klingeln", ["Nowakowski"]),
    ("Paket bei Lindqvist im Hof abgeben", ["Lindqvist"])])
def test_unregistered_names_in_a_person_context(text, found):
    assert values(names.find_in_context, text) == found


@pytest.mark.parametrize(("text", "found"), [
    ("Yesterday I met Priya at the market.", ["Priya"]),
    ("Then Jonathan said no.", ["Jonathan"]),
    ("I met Frank", []),  # a dictionary word: only the registry knows this Frank
    ("We flew with Lufthansa to London.", ["Lufthansa"]),  # a brand the list lacks
    ("I called Google support", []), ("We met on Monday", []),
    ("My colleague Mr. O'Brien", []),  # a title is no name (O'Brien: the context finder)
    ("Priya and I went out.", ["Priya"]), ("lunch with Aiyana and Bartholomew", ["Aiyana",
                                                                            "Bartholomew"]),
    ("Salt and Pepper and I", []), ("flew to London and Paris", []),
    ("I think Oluwaseun is coming", ["Oluwaseun"]), ("ran into Thandiwe today", ["Thandiwe"]),
    ("paid with Revolut again", [])])
def test_english_capitalised_non_dictionary_words_in_a_person_context(text, found):
    assert values(names.find_english, text) == found


def test_overlapping_finds_keep_the_longer_one():
    spans = [Span(0, 20, "EMAIL", "x"), Span(0, 4, "PERSON", "anna"), Span(25, 30, "PHONE", "y")]
    assert settle(spans) == [spans[0], spans[2]]


def test_overlapping_people_become_one_person():
    """A name read in context ("Abends Anna-Lena", as long as the registered "Anna-Lena
    Öztürk") must not win a tie and leave "Öztürk" standing (found by the copy package's
    property test, issue 22 §5)."""
    text = "Heute Abends Anna-Lena Öztürk rief an"
    spans = [Span(6, 22, "PERSON", text[6:22]), Span(13, 29, "PERSON", text[13:29])]
    assert settle(spans) == [Span(6, 29, "PERSON", "Abends Anna-Lena Öztürk")]
    masker = Masker(NameIndex(["Anna-Lena Öztürk"], ["Anna-Lena", "Öztürk"]))
    assert masker.mask(text) == "Heute [PERSON_1] rief an"

