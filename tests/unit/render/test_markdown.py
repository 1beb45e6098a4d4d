"""The markdown report: exact output for a known report, and hostile text rendered harmless."""

from __future__ import annotations

import os
import re
from dataclasses import replace

from gbbot.core.model import Category, CompiledFrame, FrameRef, Status
from gbbot.render import markdown
from gbbot.render.escape import md_code, md_code_block, md_text
from tests.builders import entrypoint, report_of, traced_break
from tests.conftest import GOLDEN


def sample():
    loop = traced_break(
        2,
        gb_id="GB0025",
        gb_type="Call to `torch._dynamo.graph_break()`",
        frame_skipped=True,
        in_loop=True,
        category=Category.SUPPORTABLE,
        fix="graph_break",
        code="torch._dynamo.graph_break()",
        consequences=("graph break in loop",),
        caused=("00000000000000ff",),
        function="smooth",
        explanation="User-inserted graph break.",
        hints=("Remove the `torch._dynamo.graph_break()` call.",),
        doc_url="https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0025.html",
    )
    printed = traced_break(1, count=2)
    failed = entrypoint("bench", status=Status.FAILED, exit_code=1, error="Traceback …\nRuntimeError: boom")
    return report_of(entrypoint("train", [loop, printed]), failed)


def test_markdown_exact_output():
    text = markdown.render(sample())
    golden = GOLDEN / "report.md"
    if os.environ.get("GBBOT_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()


def test_no_breaks_says_so():
    text = markdown.render(report_of(entrypoint("train")))
    assert "No graph breaks." in text


HOSTILE = (
    "x = 1  # <script>alert(1)</script> ``` `@someone` @octocat %0A ::error:: [click](javascript:alert(1)) <img src=x>"
)


def outside_code(text: str) -> str:
    """What GitHub would interpret: the text minus fenced blocks and code spans."""
    text = re.sub(r"^(`{3,})[^\n]*\n.*?^\1$", "", text, flags=re.S | re.M)
    return re.sub(r"(`+).+?\1", "", text)


def test_hostile_break_text_is_harmless_in_markdown():
    brk = traced_break(1, code=HOSTILE, explanation=HOSTILE, hints=(HOSTILE,), gb_type=HOSTILE, function="f<b>")
    text = markdown.render(report_of(entrypoint("train", [brk])))
    live = outside_code(text)
    assert "<script" not in live and "<img" not in live and "<b>" not in live
    assert "@octocat" not in live and "@someone" not in live
    assert not re.search(r"(?<!\\)\]\(javascript:", live)  # an escaped bracket is no link
    assert "&lt;script&gt;" in live and "@&#8203;octocat" in live
    # the source line is shown verbatim, in a fence longer than any backtick run inside it
    assert "````python\n" + HOSTILE + "\n````" in text


def test_escape_helpers():
    assert md_text("a <b> & c") == "a &lt;b&gt; &amp; c"
    assert md_text("hi @someone") == "hi @&#8203;someone"
    assert md_text("email a@b.c") == "email a@&#8203;b.c"
    assert md_text("- not a list") == "\\- not a list"
    assert md_text("use `x | y` here") == "use `x \\| y` here"
    assert md_code("a`b") == "``a`b``"
    assert md_code("`x`") == "`` `x` ``"
    assert md_code_block("```\ncode\n```").startswith("````\n")


def test_a_function_is_named_at_one_line_though_the_fixed_break_is_the_bases_record():
    """A line added above `GPT.forward` on the head: the fixed break's record is the base's, with
    the frame at the base's first line; the report names the frame as the head does, once."""
    from tests.builders import report, traced_break

    base_frame = FrameRef("m.py", 5, "forward", "GPT.forward")
    head_frame = FrameRef("m.py", 6, "forward", "GPT.forward")
    gone = traced_break(1, file="m.py", line=7, frame_skipped=True, frames=(base_frame,), makes_eager=(base_frame,))
    added = traced_break(2, file="m.py", line=8, frame_skipped=True, frames=(head_frame,), makes_eager=(head_frame,))
    seen = report([added], new=[added], fixed=[gone])
    entry = replace(seen.entrypoints[0], frames=(CompiledFrame(head_frame, ("0/0",), 0, True, added.fingerprint),))
    text = markdown.render(replace(seen, entrypoints=(entry,)))
    assert "`GPT.forward` (m.py:6)" in text and "(m.py:5)" not in text
