"""Make untrusted text (break messages quote user code; names; comments) harmless in markdown.

Break text ends up in PR comments, check runs and job summaries: HTML must not render, markdown
must not restructure the page, `@someone` must not notify anyone, `#12` must not reference an
issue, and nothing may become a link.
GitHub's renderer (cmark-gfm with its autolink extension) links bare `https://…`, `http://…`,
`ftp://…`, `www.…` and `name@host` in plain text, so those are broken up too.
"""

from __future__ import annotations

import re

MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
LINE_START = re.compile(r"^(\s*)([#+=>-]|\d+[.)])")
# Every `@`: before a name it is a mention; before anything else (`a@_b.example`) the autolink
# extension may still take it for an email address.
MENTION = re.compile(r"@")
# A backslash before `:` or `.` shows nothing, but splits the text where the autolink extension
# looks for `scheme://` and `www.`, so neither matches.
SCHEME_COLON = re.compile(r"(?<=[A-Za-z0-9]):(?=//)")
WWW_DOT = re.compile(r"(www)\.", re.IGNORECASE)
# `#12`, `GH-12` and `owner/repo#12` become links to issues, and cross-reference events on them:
# a zero-width space between the mark and the number stops that, as it stops a mention.
ISSUE_REFERENCE = re.compile(r"(#|\bGH-)(?=\d)", re.IGNORECASE)
CODE_SPAN = re.compile(r"`([^`]+)`")
ZERO_WIDTH_SPACE = "&#8203;"


def _plain(text: str) -> str:
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = MD_SPECIAL.sub(r"\\\1", text)
    text = SCHEME_COLON.sub(r"\\:", text)
    text = WWW_DOT.sub(r"\1\\.", text)
    text = ISSUE_REFERENCE.sub(lambda m: m.group(1) + ZERO_WIDTH_SPACE, text)
    return MENTION.sub("@" + ZERO_WIDTH_SPACE, text)


def md_text(text: str) -> str:
    """Plain text → markdown that shows exactly that text, on one line. `code` spans stay code
    spans (rebuilt safely); everything else is escaped: no HTML, no links, no mentions."""
    text = " ".join(text.split())
    parts = CODE_SPAN.split(text)  # even: plain text, odd: code span contents
    out = "".join(md_code(part) if i % 2 else _plain(part) for i, part in enumerate(parts))
    return LINE_START.sub(_escape_line_start, out, count=1)


def _escape_line_start(match: re.Match[str]) -> str:
    """`- x`, `# x`, `1. x` would become a list or heading: escape the punctuation (a backslash
    before a digit would show)."""
    lead, mark = match.group(1), match.group(2)
    return f"{lead}{mark[:-1]}\\{mark[-1]}" if mark[0].isdigit() else f"{lead}\\{mark}"


def md_code(text: str) -> str:
    """Inline code span that survives backticks and table pipes; mentions do not fire in code."""
    text = " ".join(text.split()).replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_code_block(text: str, language: str = "") -> str:
    """Fenced block whose fence is longer than any backtick run inside."""
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{language}\n{text.rstrip()}\n{fence}"


def md_link(label: str, url: str | None) -> str:
    if not url or not url.startswith("https://") or any(c in url for c in " ()<>\"'"):
        return md_text(label)
    return f"[{md_text(label)}]({url})"


def html_text(text: str) -> str:
    """Plain text → HTML text for a raw HTML line (a `<summary>`), where markdown is not read but
    GitHub still turns `@name` into a mention and `#3` into an issue reference: entities escaped,
    mentions and references broken, one line."""
    text = " ".join(text.split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    # Markdown is not read on such a line, but should it ever be (a renderer that ends the HTML
    # block early), brackets and backticks as entities make neither a link nor a code span.
    text = text.replace("[", "&#91;").replace("]", "&#93;").replace("`", "&#96;")
    text = ISSUE_REFERENCE.sub(lambda m: m.group(1) + ZERO_WIDTH_SPACE, text)  # GitHub links `#3` there too
    return MENTION.sub("@" + ZERO_WIDTH_SPACE, text)
