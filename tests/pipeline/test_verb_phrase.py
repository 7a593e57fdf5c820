"""`lists.VerbPhrase.search` over a space of texts made of its own words: the same phrase as
the plain reading of its rule — from each verb, in order, the first joint within `GAP` whose
items hold no line break and which leads to a target (for a phrase closed by a word, that
word within `GAP` after the joint; with `wanted`, a target whose head it matches unless no
later joint is in reach). The search orders its steps for speed (the linear-time tests);
this holds it to the rule."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from app.pipeline.offline_rules import lists
from app.pipeline.offline_rules.lists import GAP, Phrase, VerbPhrase

WORDS = ["füg", "füge", "setz", "put", "der", "zur", "zu", "auf", "on", "to", "hinzu", "Milch",
         "bitte", "Liste", "list", "Einkaufsliste", "Brot", "und", "\n", ".", "x" * 40]


def by_the_rule(phrase: VerbPhrase, text: str) -> Phrase | None:
    for verb in phrase.verb.finditer(text):
        joints = [j for j in phrase.joint.finditer(text)
                  if verb.end() < j.start() <= verb.end() + GAP]
        for n, joint in enumerate(joints):
            raw = text[verb.end():joint.start()].strip()
            items = re.sub(r"^(?:bitte|please|noch)\s+(?=\S)", "", raw, count=1, flags=re.I) \
                or raw
            if "\n" in items:
                break
            if phrase.closing is None:
                target = re.match(rf"[^.!?]{{0,{GAP}}}", text[joint.end():]).group().strip()
            else:
                closing = [c for c in phrase.closing.finditer(text)
                           if joint.end() < c.start() <= joint.end() + GAP]
                if not closing:
                    continue
                target = text[joint.end():closing[0].start()].strip()
            wanted = phrase.wanted
            if wanted is not None and not wanted.search(" ".join(target.split()[:4])) \
                    and n + 1 < len(joints):
                continue
            return Phrase(items, target)
    return None


texts = st.lists(st.sampled_from(WORDS), max_size=40).map(" ".join)


@settings(max_examples=400, deadline=None)
@given(texts)
def test_the_search_finds_what_the_rule_says(text: str) -> None:
    for phrase in (lists._ADD, lists._ADD_HINZU, lists._REMOVE):
        assert phrase.search(text) == by_the_rule(phrase, text), text
