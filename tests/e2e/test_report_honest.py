"""Results people can trust: an entrypoint that compiled nothing is never green, a fullgraph=True
compile that failed shows its break, and every view states the same numbers. Real torch runs."""

from __future__ import annotations

import json
import textwrap

from gbbot.analysis import report
from gbbot.analysis.policy import Policy
from gbbot.checks.tree import CheckOptions, check
from gbbot.core import counts
from gbbot.core.config import parse_config
from gbbot.core.model import Status
from gbbot.publish import checkrun
from gbbot.render import findings, markdown
from tests.cli_helpers import write

NEVER_COMPILES = {
    "plain.py": "print('no torch here')\n",
    "flagged.py": """\
        import os, torch
        def f(x):
            print("hi")
            return x + 1
        g = torch.compile(f) if os.environ.get("USE_COMPILE") else f
        g(torch.ones(2))
        """,
    "swallowed.py": """\
        import torch
        def f(x):
            print("hi")
            return x + 1
        try:
            torch.compile(f, fullgraph=True)(torch.ones(2))
        except Exception:
            pass
        """,
}


def run(root, body: str):
    write(root, {".gbbot.yml": "version: 1\n" + textwrap.dedent(body)})
    config = parse_config((root / ".gbbot.yml").read_text())
    return check(root, config, CheckOptions())


def test_entrypoints_that_compiled_nothing_are_no_compile_and_fail_the_policy(tmp_path):
    write(tmp_path, NEVER_COMPILES)
    result = run(
        tmp_path,
        """\
        entrypoints:
          - {name: plain, run: python plain.py}
          - {name: flagged, run: python flagged.py}
        """,
    )
    by_name = {e.name: e for e in result.entrypoints}
    assert by_name["plain"].status is Status.NO_COMPILE
    assert by_name["plain"].error == "compiled nothing: no trace files were written"
    assert by_name["flagged"].status is Status.NO_COMPILE
    assert by_name["flagged"].error.startswith("compiled nothing: no ")
    text = markdown.render(result)
    assert "🎉" not in text and "no_compile" in text
    assert (
        text.splitlines()[2] == "⚠️ `plain` compiled nothing and `flagged` compiled nothing: their breaks are unknown."
    )
    verdict = Policy.of("new").verdict(result)
    assert "flagged" in verdict.reason and "compiled nothing" in verdict.reason
    assert verdict.conclusion == "failure"
    assert "did not run cleanly" in checkrun.title(result)
    assert report.from_json(json.loads(report.dumps(result))).entrypoints[0].status is Status.NO_COMPILE


def test_a_failed_fullgraph_compile_reports_its_break(tmp_path):
    """The program swallows the fullgraph error and exits 0: the break still shows, not a green."""
    write(tmp_path, NEVER_COMPILES)
    result = run(tmp_path, "entrypoints: [{name: swallowed, run: python swallowed.py}]\n")
    entry = result.entrypoints[0]
    assert entry.status is Status.OK and entry.break_count == 1
    (brk,) = entry.breaks
    assert brk.fullgraph_failure and brk.gb_id == "GB0059" and brk.fix == "print"
    assert (brk.file, brk.line, brk.function, brk.code) == ("swallowed.py", 3, "f", 'print("hi")')
    assert "made the fullgraph compile fail" in markdown.render(result)
    assert "🎉" not in markdown.render(result)


def test_a_fullgraph_entrypoint_that_raises_is_failed_with_its_break(tmp_path):
    write(
        tmp_path,
        {
            "model.py": """\
            import torch
            def step(x):
                x = x * 2
                torch._dynamo.graph_break()
                return x + 1
            def main():
                return torch.compile(step, fullgraph=True)(torch.ones(2))
            """
        },
    )
    result = run(tmp_path, "entrypoints: [{name: fg, call: 'model:main'}]\n")
    entry = result.entrypoints[0]
    assert entry.status is Status.FAILED
    (brk,) = entry.breaks
    assert brk.fullgraph_failure and brk.gb_id == "GB0025" and (brk.file, brk.line) == ("model.py", 4)
    # gbbot's launcher is not the user's code: neither in the traceback nor in a stack.
    assert "gbbot/child/launch.py" not in entry.error and "launch.py" not in entry.error


def test_one_break_in_several_entrypoints_has_one_set_of_numbers(tmp_path):
    write(
        tmp_path,
        {
            "model.py": """\
            import torch
            def helper(x):
                print("step")
                return x + 1
            def a(x):
                return helper(x) * 2
            def b(x):
                return helper(x) * 3
            def c(x):
                return helper(x) * 4
            def once():
                return torch.compile(a)(torch.ones(2))
            def thrice():
                return [torch.compile(fn)(torch.ones(2)) for fn in (a, b, c)]
            """
        },
    )
    result = run(
        tmp_path,
        """\
        entrypoints:
          - {name: once, call: 'model:once'}
          - {name: thrice, call: 'model:thrice'}
        """,
    )
    c = counts.counts(result)
    per = {e.name: e.break_count for e in result.entrypoints}
    assert c.distinct == 1 and c.occurrences == per["once"] + per["thrice"] and per["thrice"] > per["once"]
    text = markdown.render(result)
    assert "**1 graph break** in 2 entrypoints." in text and f"· {c.occurrences} occurrences ·" in text
    assert f"×{c.occurrences}" in text
    assert Policy.of("any").verdict(result).reason.endswith(": 1 graph break")
    assert checkrun.title(result) == "1 graph break"
    assert json.loads(report.dumps(result))["counts"]["distinct"] == 1
    assert json.loads(report.dumps(result))["counts"]["occurrences"] == c.occurrences
    (finding,) = findings.findings(result, Policy.of("any"))
    assert finding.total == c.occurrences and finding.entrypoints == ("once", "thrice")
    # Listed the other way round, the card says the same.
    flipped = result.__class__(**{**result.__dict__, "entrypoints": result.entrypoints[::-1]})
    assert f"×{c.occurrences}" in markdown.render(flipped)
