"""The analysis package's bound holds whatever the profile and the evidence hold."""

from __future__ import annotations

from app.profiles.writing.model import Field, Profile, Trait
from app.profiles.writing.package import EvidenceText, build_package, dumps, representative

WORD = "Sauerteigbrot "


def test_a_huge_profile_and_huge_evidence_still_fit_and_say_what_was_left_out():
    profile = Profile(core=Field(WORD * 1500, "manual"),
                      facets={f"facet_{i}": Field(WORD * 500, "manual") for i in range(5)},
                      traits=[Trait(f"t{i}", f"trait {i}", WORD * 300) for i in range(200)])
    evidence = [EvidenceText(f"ev_{i}", "entry", "„Zitat“ \"quoted\" \\ " + WORD * 2000,
                             float(i), f"journal entry of day {i}") for i in range(30)]
    for limit in (4000, 6000, 12000):
        package = build_package(profile, governance="advising", lifecycle="confirmed",
                                mode="review", evidence=evidence, signals={}, max_chars=limit)
        assert len(dumps(package)) <= limit
        assert package["profile"].get("traits_left_out", 0) > 0
        shown = len(package["evidence"])
        assert shown + package["left_out"] == 30 or shown == 0
        for item in package["evidence"]:
            assert item["cut"] is True and item["text"].endswith("…")
            assert not item["text"].removesuffix("…").endswith(" ")


def test_representative_takes_newest_and_oldest_in_turn_and_new_contexts_first():
    texts = [EvidenceText(f"r{i}", "entry", "x", float(i), "a" if i < 3 else f"c{i}")
             for i in range(6)]
    order = [t.ref for t in representative(texts)]
    assert sorted(order) == [f"r{i}" for i in range(6)]
    assert order[:2] == ["r5", "r0"]  # the newest, then the oldest (a new context)
    assert order.index("r1") > order.index("r3")  # a repeated context waits


def test_the_review_schema_is_named_for_its_purpose_on_the_wire() -> None:
    """The model server knows the schema by its name and title: `profile_review`."""
    from app.profiles.writing.package import PURPOSE_REVIEW, ReviewAnswer
    from app.llm.schema import json_schema, schema_name

    assert schema_name(ReviewAnswer) == PURPOSE_REVIEW
    assert json_schema(ReviewAnswer)["title"] == PURPOSE_REVIEW
