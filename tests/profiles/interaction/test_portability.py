"""The interaction profile's document (`kansho.interaction_profile`, seed 004 §12), alone and
inside the combined `kansho.profiles` that the writing profile composes: the same shape both
ways, the name rule both profiles share, and a round trip that keeps every preference."""

from __future__ import annotations

import json

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from app.profiles.governance import NAME, PortableError
from app.profiles.interaction import portability
from app.profiles.writing import portability as both_profiles
from tests.conftest import AUTH

LIMIT = 40

pref_names = st.one_of(st.from_regex(NAME, fullmatch=True),
                       st.text(min_size=0, max_size=8))
pref_values = st.text(max_size=LIMIT + 5)


@given(st.dictionaries(pref_names, pref_values, max_size=4),
       st.sampled_from(["learning", "advising", "frozen"]), st.booleans())
def test_a_document_is_read_iff_every_name_and_value_fits_and_then_round_trips(prefs,
                                                                              governance,
                                                                              inside_both):
    alone = {"kind": portability.KIND, "format_version": 1, "governance": governance,
             "prefs": {k: {"value": v, "origin": "manual"} for k, v in prefs.items()}}
    document = {"kind": "kansho.profiles", "format_version": 1, "interaction": alone} \
        if inside_both else alone
    # A value holding U+0000 does not fit either: no text from outside may (json_input).
    fits = all(NAME.fullmatch(k) and len(v) <= LIMIT and "\x00" not in v
               for k, v in prefs.items())
    try:
        writing, doc = both_profiles.read(msgspec.json.encode(document), LIMIT)
    except PortableError:
        assert not fits
        return
    assert fits and writing is None and doc is not None
    current = portability.imported(doc)
    assert current.suggestions == [] and current.governance == governance
    again = portability.export(current)
    assert {**again, "exported_at": None} == {**alone, "exported_at": None}


async def test_the_export_has_the_same_interaction_document_alone_and_in_both(client):
    await client.put("/api/profile/interaction/prefs/answer_length", headers=AUTH,
                     json={"value": "ausführlich"})
    await client.put("/api/profile/interaction/governance", headers=AUTH,
                     json={"governance": "learning"})
    await client.post("/api/profile/interaction/observations", headers=AUTH,
                      json={"key": "humour", "value": "trocken"})
    alone = await (await client.get("/api/profile/export?kind=interaction",
                                    headers=AUTH)).json()
    both = await (await client.get("/api/profile/export?kind=all", headers=AUTH)).json()
    assert list(alone) == ["kind", "format_version", "exported_at", "governance", "prefs"]
    assert alone["prefs"] == {"answer_length": {"value": "ausführlich", "origin": "manual"},
                              "humour": {"value": "trocken", "origin": "automatic"}}
    assert list(both) == ["kind", "format_version", "exported_at", "writing", "interaction"]
    assert json.dumps({**both["interaction"], "exported_at": 0}) == \
        json.dumps({**alone, "exported_at": 0})  # byte for byte, key order included

    # The interaction document alone replaces the preferences and leaves the writing profile.
    await client.put("/api/profile/core", headers=AUTH, json={"value": "Knapp."})
    await client.put("/api/profile/interaction/prefs/listening", headers=AUTH,
                     json={"value": "Frag nach."})
    response = await client.post("/api/profile/import", headers=AUTH, data=json.dumps(alone))
    assert response.status == 200, await response.text()
    assert (await response.json())["core"]["value"] == "Knapp."
    restored = await (await client.get("/api/profile/interaction", headers=AUTH)).json()
    assert set(restored["prefs"]) == {"answer_length", "humour"}
    assert restored["governance"] == "learning" and restored["suggestions"] == []
