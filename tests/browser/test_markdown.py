"""The character's replies as Markdown, rendered safely (web/js/markdown.js: the vendored
`marked` and DOMPurify): lists, emphasis, code and links show as such; whatever HTML or
script a model writes stays inert; the user's own messages stay plain text."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import character_bubbles, send, user_bubbles
from tests.fakemodel import Reply

pytestmark = pytest.mark.browser

HOSTILE = [
    "<script>window.__pwned = 1</script>",
    "<img src=x onerror=\"window.__pwned = 2\">",
    "![bild](javascript:window.__pwned=3)",
    "[klick](javascript:window.__pwned=4)",
    "[klick](JaVaScRiPt:window.__pwned=5)",
    "[daten](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "<iframe src=\"/\" onload=\"window.__pwned = 6\"></iframe>",
    "<a href=\"javascript:window.__pwned=7\">a</a>",
    "<svg><script>window.__pwned = 8</script></svg>",
    "<div style=\"background:url(javascript:x)\" onmouseover=\"window.__pwned = 9\">x</div>",
    "<form action=\"/api/logout\" method=\"post\"><button>x</button></form>",
    "<math><mi xlink:href=\"javascript:window.__pwned=10\">x</mi></math>",
    "[x](vbscript:msgbox) <object data=\"x\"></object> <embed src=\"x\">",
    "<details open ontoggle=\"window.__pwned = 11\">x</details>",
    "`<b>code</b>` and\n\n```\n<script>window.__pwned = 12</script>\n```",
    "<input autofocus onfocus=\"window.__pwned = 13\">",
    "<style>body { display: none }</style><link rel=stylesheet href=/x.css>",
]

RENDER_ALL = """async (texts) => {
    const { renderMarkdown } = await import('/static/js/markdown.js');
    const box = document.createElement('div');
    document.body.append(box);
    for (const text of texts) box.append(renderMarkdown(text));
    await new Promise((resolve) => setTimeout(resolve, 300));  // any handler would have run
    const bad = [];
    for (const node of box.querySelectorAll('*')) {
      const tag = node.tagName.toLowerCase();
      if (['script', 'iframe', 'img', 'svg', 'math', 'object', 'embed', 'form', 'style', 'link',
           'details', 'button', 'div'].includes(tag)) bad.push(tag);
      for (const attr of node.attributes) {
        if (attr.name.startsWith('on') || attr.name === 'style' || attr.name === 'src') bad.push(`${tag}@${attr.name}`);
        if (/^\\s*(javascript|data|vbscript):/i.test(attr.value)) bad.push(`${tag}@${attr.name}=${attr.value}`);
      }
      if (tag === 'input' && node.type !== 'checkbox') bad.push('input');
    }
    const links = [...box.querySelectorAll('a[href]')].map((a) => a.getAttribute('href'));
    return { bad, pwned: window.__pwned ?? null, links, text: box.textContent };
}"""


def test_hostile_markdown_and_html_render_inert(nova, open_chat):
    page = open_chat(nova)
    result = page.evaluate(RENDER_ALL, HOSTILE)
    assert result["bad"] == []
    assert result["pwned"] is None
    assert result["links"] == []  # not one of those links leads anywhere
    # Raw HTML is shown as what it is, text; code keeps its characters.
    assert "<script>window.__pwned = 1</script>" in result["text"]
    assert "<b>code</b>" in result["text"]


def test_a_reply_renders_lists_emphasis_code_and_safe_links(nova, fake, open_chat):
    fake.script("responder", Reply(
        "Hier ist der Plan:\n\n- **Milch** kaufen\n- *Eier* holen\n\n1. eins\n2. zwei\n\n"
        "Nutze `make test` und lies [die Doku](https://example.org/doku)."))
    page = open_chat(nova)
    send(page, "Was ist der Plan? **nicht fett** <i>und kein HTML</i>")
    answer = character_bubbles(page)
    expect(answer.locator("ul li")).to_have_count(2)
    expect(answer.locator("ol li")).to_have_count(2)
    expect(answer.locator("strong")).to_have_text("Milch")
    expect(answer.locator("em")).to_have_text("Eier")
    expect(answer.locator("code")).to_have_text("make test")
    link = answer.locator("a")
    expect(link).to_have_attribute("href", "https://example.org/doku")
    expect(link).to_have_attribute("target", "_blank")
    expect(link).to_have_attribute("rel", "noopener noreferrer")
    # The user's own words are shown as typed.
    mine = user_bubbles(page).locator(".text")
    expect(mine).to_have_text("Was ist der Plan? **nicht fett** <i>und kein HTML</i>")
    expect(mine.locator("*")).to_have_count(0)


def test_the_content_security_policy_still_holds(nova, open_chat):
    violations: list[str] = []
    page = open_chat(nova)
    page.on("console", lambda m: violations.append(m.text)
            if "Content Security Policy" in m.text else None)
    page.reload()
    expect(page.locator("#connection")).to_have_attribute("data-state", "online")
    header = page.evaluate("async () => (await fetch('/')).headers.get('content-security-policy')")
    assert header.startswith("default-src 'self'")
    assert page.evaluate(
        "async () => typeof (await import('/static/js/markdown.js')).renderMarkdown") == "function"
    assert violations == []
