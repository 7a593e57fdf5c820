"""The profile's pure change rules: every action, scopes, origins, and what an automatic path
may touch."""

from __future__ import annotations

import pytest

from app.profiles.writing.model import (
    Change,
    Field,
    NotApplicable,
    Profile,
    Source,
    Trait,
    TraitSpec,
    apply_change,
    automatic_allowed,
)


def profile() -> Profile:
    return Profile(core=Field("Knapp.", "manual"),
                   facets={"letters": Field("Briefe", "accepted")},
                   traits=[Trait("t1", "humor", "trocken", "core", False, "automatic",
                                 [Source("entry:a:b", 1.0, "journal entry of 2026-01-01")]),
                           Trait("t2", "irony", "leise", "core", False, "automatic"),
                           Trait("t3", "rhythm", "kurz", "core", True, "automatic"),
                           Trait("t4", "detail", "sparsam", "letters", False, "manual")])


def test_merge_and_split_keep_sources_and_take_the_origin():
    merged = apply_change(profile(), Change("merge", keys=["humor", "irony"], key="wit",
                                            value="trocken-ironisch",
                                            sources=[Source("ev_1")]), "accepted", 5.0)
    keys = [t.key for t in merged.traits]
    assert "humor" not in keys and "irony" not in keys
    wit = merged.find("wit")
    assert (wit.value, wit.origin, wit.scope, wit.updated_at) == \
        ("trocken-ironisch", "accepted", "core", 5.0)
    assert [s.ref for s in wit.sources] == ["entry:a:b", "ev_1"]

    split = apply_change(merged, Change("split", key="wit", into=[
        TraitSpec("humor", "trocken"), TraitSpec("irony", "leise", "letters")]), "automatic", 6.0)
    assert split.find("wit") is None
    assert split.find("irony").scope == "letters"
    assert [s.ref for s in split.find("humor").sources] == ["entry:a:b", "ev_1"]


def test_reclassify_update_remove_and_facets():
    moved = apply_change(profile(), Change("reclassify", key="humor", scope="letters"),
                         "accepted", 1.0)
    assert moved.find("humor").scope == "letters"
    updated = apply_change(profile(), Change("update", trait_id="t2", value="laut"), "manual", 1.0)
    assert (updated.trait("t2").value, updated.trait("t2").origin) == ("laut", "manual")
    gone = apply_change(profile(), Change("remove", "facet", key="letters"), "manual", 1.0)
    assert "letters" not in gone.facets and gone.find("detail") is None  # its traits go too
    journal = apply_change(profile(), Change("add", key="tone", value="warm",
                                             scope="autobiographical_journal"), "manual", 1.0)
    assert journal.find("tone").scope == "autobiographical_journal"
    assert profile().find("tone") is None  # the input is never changed


@pytest.mark.parametrize("change", [
    Change("update", key="ghost", value="x"),
    Change("add", key="humor", value="x"),  # exists in core already
    Change("add", key="tone", value="x", scope="poems"),  # no such facet
    Change("add", key="tone", value="  "),
    Change("merge", keys=["humor"], key="x", value="y"),
    Change("split", key="humor", into=[TraitSpec("a", "b")]),
    Change("update", "facet", key="poems", value="x"),
    Change("explode", key="humor"),
    Change("update", "nowhere", value="x"),
])
def test_a_change_that_does_not_fit_is_not_applicable(change):
    with pytest.raises(NotApplicable):
        apply_change(profile(), change, "accepted", 1.0)


def test_automatic_paths_never_touch_locks_or_the_users_own():
    p = profile()
    assert automatic_allowed(p, Change("update", key="humor", value="x"))  # automatic, open
    assert not automatic_allowed(p, Change("update", key="rhythm", value="x"))  # locked
    assert not automatic_allowed(p, Change("update", key="detail", value="x"))  # manual
    assert not automatic_allowed(p, Change("update", "core", value="x"))  # manual core
    assert not automatic_allowed(p, Change("remove", "facet", key="letters"))  # accepted
    assert not automatic_allowed(p, Change("merge", keys=["humor", "rhythm"], key="x",
                                           value="y"))
    assert automatic_allowed(p, Change("add", key="tone", value="warm"))  # touches nothing
