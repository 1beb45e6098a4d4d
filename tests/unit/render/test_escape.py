"""Untrusted text through gbbot's escaping, rendered by GitHub's own markdown engine (cmark-gfm,
with the extensions github.com enables): no link, no HTML, no mention, and the text still reads
exactly as written."""

from __future__ import annotations

import html
import re

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options

from gbbot.render import markdown
from gbbot.render.escape import md_code, md_text
from tests.builders import entrypoint, report_of, traced_break

# tagfilter is left out on purpose: it would rewrite a raw <script> that escaping let through, and
# hide the bug. UNSAFE keeps raw HTML in the output for the same reason.
EXTENSIONS = ["autolink", "table", "strikethrough", "tasklist"]

MENTIONS = "ping @org/team and @octocat"  # GitHub turns mentions into links after rendering
HOSTILE = [
    "see https://evil.example/x for details",
    "http://evil.example/login?next=/",
    "ftp://evil.example/payload",
    "www.evil.example",
    "(www.evil.example)",
    "*www.evil.example*",
    "go to www.evil.example/path?q=1",
    "mail admin@evil.example now",
    "odd a@_b.example",
    "[x](javascript:alert(1))",
    "<https://evil.example/angle>",
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    MENTIONS,
]
LIVE = ("<a ", "<script", "<img")
TRUSTED_HREF = "https://meta-pytorch.github.io/"  # the report's own documentation links


def gfm(text: str) -> str:
    return cmarkgfm.markdown_to_html_with_extensions(text, options=Options.CMARK_OPT_UNSAFE, extensions=EXTENSIONS)


def visible(rendered: str) -> str:
    """What a reader sees: tags dropped, entities decoded, zero-width spaces invisible."""
    return html.unescape(re.sub(r"<[^>]+>", "", rendered)).replace("\u200b", "").strip()


@pytest.mark.parametrize("text", HOSTILE)
def test_the_renderer_would_act_on_the_raw_text(text):
    """Each sample does something on GitHub when not escaped, so the checks below can fail."""
    rendered = gfm(text)
    assert any(tag in rendered for tag in LIVE) or text == MENTIONS


@pytest.mark.parametrize("text", HOSTILE)
def test_escaped_text_renders_as_the_same_text_and_nothing_else(text):
    rendered = gfm(md_text(text))
    assert not any(tag in rendered for tag in LIVE), rendered
    assert visible(rendered) == text  # shown exactly as written: the escapes themselves are invisible
    assert not re.search(r"@[A-Za-z0-9_]", md_text(text))  # no mention can fire


@pytest.mark.parametrize("text", HOSTILE)
def test_code_spans_show_hostile_text_literally(text):
    rendered = gfm(md_code(text))
    assert not any(tag in rendered for tag in LIVE), rendered
    assert rendered.startswith("<p><code>")


def test_a_hostile_break_in_the_full_report_makes_no_link_and_no_html():
    hostile = " ".join(HOSTILE)
    brk = traced_break(
        1,
        code=hostile,
        explanation=hostile,
        hints=(hostile,),
        gb_type=hostile,
        function="f<script>",
        file="pkg/www.evil.example.py",
    )
    text = markdown.render(report_of(entrypoint("https://evil.example", [brk]), entrypoint("www.evil.example")))
    rendered = cmarkgfm.github_flavored_markdown_to_html(text, options=Options.CMARK_OPT_UNSAFE)
    hrefs = re.findall(r'<a [^>]*href="([^"]*)"', rendered)
    assert all(href.startswith(TRUSTED_HREF) for href in hrefs), hrefs
    assert "<script" not in rendered and "<img" not in rendered
    assert "evil.example" in visible(rendered)  # the text is there, as text
