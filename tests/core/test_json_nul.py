"""No text from outside holds U+0000 (app.core.json_input.check_no_nul): PostgreSQL cannot
store it, so it is refused where JSON comes in. The escape is told apart from an escaped
backslash followed by the text "u0000", wherever the document's pieces are cut."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.core import json_input

# Texts rich in what matters: backslashes, the letters of the escape, NUL itself.
texts = st.text(alphabet=st.sampled_from(["\\", "u", "0", "\x00", "a", "ü", '"']), max_size=40)
documents = st.recursive(texts | st.integers(),
                         lambda inner: st.lists(inner, max_size=4)
                         | st.dictionaries(texts, inner, max_size=4), max_leaves=12)


def holds_nul(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, list):
        return any(holds_nul(v) for v in value)
    if isinstance(value, dict):
        return any(holds_nul(k) or holds_nul(v) for k, v in value.items())
    return False


@settings(max_examples=300, deadline=None)
@given(document=documents, piece=st.integers(1, 12))
def test_refused_exactly_when_a_string_holds_nul(document, piece):
    raw = json.dumps(document).encode()
    old, json_input.NUL_SCAN_PIECE = json_input.NUL_SCAN_PIECE, piece  # pieces cut anywhere
    try:
        if holds_nul(document):
            with pytest.raises(json_input.HasNul):
                json_input.decode(raw)
        else:
            assert json_input.decode(raw) == document
    finally:
        json_input.NUL_SCAN_PIECE = old


@pytest.mark.parametrize("raw, refused", [
    (rb'"\u0000"', True),
    (rb'"\\u0000"', False),  # a backslash, then the text u0000
    (rb'"\\\u0000"', True),  # a backslash, then NUL
    (rb'"\\\\u0000"', False),
    (rb'{"\u0000": 1}', True),  # in a key too
    (rb'"\u00001"', True),
    (rb'"\u0001"', False),
])
def test_the_escape_and_its_look_alikes(raw, refused):
    if refused:
        with pytest.raises(json_input.HasNul):
            json_input.decode(raw)
    else:
        json_input.decode(raw)


def test_a_large_document_is_searched_in_pieces_and_the_nul_found_at_its_end():
    raw = json.dumps({"messages": ["x" * 100] * 40_000 + ["end\x00"]}).encode()
    assert len(raw) > 3 * json_input.NUL_SCAN_PIECE
    with pytest.raises(json_input.HasNul):
        json_input.decode(raw)
