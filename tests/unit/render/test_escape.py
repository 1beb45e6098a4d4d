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
from gbbot.render.escape import html_text, md_code, md_text
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


# `#12`, `GH-12` and `owner/repo#12` become issue links on github.com (and a cross-reference event
# on that issue): GitHub does this after rendering, on the text, like mentions.
ISSUE_REFERENCES = ["fixes #1", "see GH-12", "like octo-org/octo-repo#3", "(#42)", "gh-7 and #8."]
LIVE_REFERENCE = re.compile(r"(#|\bGH-)\d", re.IGNORECASE)


@pytest.mark.parametrize("text", ISSUE_REFERENCES)
def test_issue_references_are_neutralised_and_read_the_same(text):
    assert LIVE_REFERENCE.search(text)  # the raw text would reference an issue
    rendered = gfm(md_text(text))
    shown = html.unescape(re.sub(r"<[^>]+>", "", rendered))
    assert not LIVE_REFERENCE.search(shown), shown
    assert visible(rendered) == text


def test_issue_references_in_a_break_reach_the_comment_only_inside_code():
    """One level down: the reference is in the break's explanation and hint, the full comment
    rendered; outside code spans and blocks nothing references an issue."""
    brk = traced_break(1, explanation="regressed in #1, see GH-2", hints=("octo-org/octo-repo#3",))
    text = markdown.render(report_of(entrypoint("train", [brk])))
    outside_code = re.sub(r"<code>.*?</code>|<pre.*?</pre>", "", gfm(text), flags=re.S)
    assert not LIVE_REFERENCE.search(html.unescape(re.sub(r"<[^>]+>", "", outside_code)))
    assert "regressed in #" in visible(gfm(text))


def test_a_forged_doc_url_never_becomes_a_link_the_id_makes_it():
    brk = traced_break(1, doc_url="https://evil.example/gb0059.html")
    rendered = gfm(markdown.render(report_of(entrypoint("train", [brk]))))
    hrefs = re.findall(r'<a [^>]*href="([^"]*)"', rendered)
    assert "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html" in hrefs
    assert not [h for h in hrefs if "evil" in h]


def test_an_issue_reference_in_a_summary_line_stays_text():
    """A path or an entrypoint name shown in a `<summary>` (`models/#3/net.py`) must not become
    a live reference to issue 3 (GitHub links `#3` in HTML text too), and still reads the same."""
    shown = html_text("models/#3/net.py: GH-12 and owner/repo#4")
    assert not re.search(r"(#|GH-)\d", html.unescape(shown))
    assert html.unescape(shown).replace("\u200b", "") == "models/#3/net.py: GH-12 and owner/repo#4"
