"""Server error codes reach the user in the UI's language (issue 11 item 15).

Every code the API can answer with (`ApiError(status, "code", …)` anywhere in app/, or a room's
`Refused` kind: `STATUS, CODE = 409, "code"` in its class) has a
`reason.<code>` text in both of the UI's languages, so a panel shows a translated reason
instead of the server's English message.
"""

from __future__ import annotations

import re

from tests import ROOT

I18N = (ROOT / "web" / "js" / "i18n.js").read_text(encoding="utf-8")
API_ERROR = re.compile(r'ApiError\(\s*\d+\s*,\s*"([a-z_]+)"|STATUS, CODE = \d+, "([a-z_]+)"')


def api_error_codes() -> set[str]:
    return {code for path in (ROOT / "app").rglob("*.py")
            for codes in API_ERROR.findall(path.read_text(encoding="utf-8"))
            for code in codes if code}


def language_table(language: str) -> str:
    start = I18N.index(f"\n  {language}: {{")
    end = I18N.index("\n  },", start)
    return I18N[start:end]


def test_the_scan_finds_the_api_error_codes() -> None:
    codes = api_error_codes()
    assert {"invalid_request", "invalid_due_at", "unknown_character", "not_own"} <= codes


def test_every_api_error_code_has_a_reason_text_in_both_languages() -> None:
    for language in ("en", "de"):
        table = language_table(language)
        missing = sorted(code for code in api_error_codes() if f'"reason.{code}"' not in table)
        assert not missing, f"{language}: no reason text for {missing}"
