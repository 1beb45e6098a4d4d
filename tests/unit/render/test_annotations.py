"""Workflow-command annotations: what the Actions runner reads back is exactly the break's text,
and no break text can start, end or forge a command."""

from __future__ import annotations

from dataclasses import replace

from gbbot.analysis.policy import Policy
from gbbot.render import annotations
from gbbot.render.findings import Level, State, findings
from tests.builders import graph_break, report

HOSTILE = "line one\r\n::error file=evil.py::pwned %0A %25 @someone <script>alert(1)</script> `rm -rf` a::b, c:d"


def parse_command(line: str) -> tuple[str, dict[str, str], str]:
    """The runner's parser (actions/runner ActionCommand.TryParseV2), reduced: `::name props::data`,
    properties `k=v` split on `,`, then the toolkit's escapes undone."""
    assert line.startswith("::")
    end = line.index("::", 2)
    head, data = line[2:end], line[end + 2 :]
    name, _, listed = head.partition(" ")
    properties = {}
    for pair in filter(None, listed.split(",")):
        key, _, value = pair.partition("=")
        properties[key] = unescape(value, prop=True)
    return name, properties, unescape(data)


def unescape(text: str, prop: bool = False) -> str:
    pairs = [("%0D", "\r"), ("%0A", "\n")] + ([("%3A", ":"), ("%2C", ",")] if prop else [])
    for escaped, plain in [*pairs, ("%25", "%")]:
        text = text.replace(escaped, plain)
    return text


def test_hostile_break_text_reads_back_verbatim_and_forges_nothing() -> None:
    brk = graph_break(1, gb_type=f"type {HOSTILE}", explanation=HOSTILE, file="pkg/a,b:c%0A.py", line=42)
    out = annotations.render(report([brk]))
    lines = out.splitlines()
    assert len(lines) == 1  # the CR/LF inside the text did not make a second command
    name, properties, message = parse_command(lines[0])
    assert name == "error"  # fail_on new: a new break fails the check
    assert properties == {"file": "pkg/a,b:c%0A.py", "line": "42", "title": f"GB0059: type {' '.join(HOSTILE.split())}"}
    assert HOSTILE in message


def test_levels_follow_the_policy() -> None:
    new, old = graph_break(1), graph_break(2)
    result = report([new, old], new=[new])
    levels = {f.brk.fingerprint: (f.state, f.level) for f in findings(result, Policy.of("new"))}
    assert levels == {new.fingerprint: (State.NEW, Level.FAILURE), old.fingerprint: (State.PERSISTING, Level.NOTICE)}
    assert {f.level for f in findings(result, Policy.of("none"))} == {Level.WARNING, Level.NOTICE}
    assert {f.level for f in findings(result, Policy.of("any"))} == {Level.FAILURE}


def test_only_new_breaks_become_commands_and_ignored_ones_never() -> None:
    new, old, ignored = graph_break(1), graph_break(2), graph_break(3, ignored=True)
    lines = annotations.render(report([new, old, ignored], new=[new, ignored]), Policy.of("none")).splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("::warning file=model/layer_1.py,line=11,")


def test_a_path_that_leaves_the_repository_is_not_annotated_at_a_file() -> None:
    outside = replace(graph_break(1), file="../secrets/x.py", line=0)
    name, properties, _ = parse_command(annotations.render(report([outside])).strip())
    assert "file" not in properties and "line" not in properties
    assert name == "error"


def test_registered_as_a_render_format(tmp_path) -> None:
    from gbbot.analysis import report as report_io
    from gbbot.main import main

    path = tmp_path / "report.json"
    report_io.write(report([graph_break(1)]), path)
    out = tmp_path / "out.txt"
    assert main(["render", str(path), "--format", "annotations", "-o", str(out)]) == 0
    assert out.read_text().startswith("::error file=model/layer_1.py,line=11,title=GB0059%3A ")


def test_a_compile_error_is_annotated_as_the_entrypoints_failure_at_its_line_not_as_a_break():
    from gbbot.core.model import Category, CompileError, Status
    from tests.builders import entrypoint, report_of

    error = CompileError(
        "RuntimeError when making fake tensor call", "GB4315", Category.USER_ERROR, "crash.py", 4, "project",
        "return x @ torch.ones(3, 5)", "Dynamo failed to run FX node with fake tensors",
    )  # fmt: skip
    crashed = entrypoint("crash", status=Status.FAILED, exit_code=1, compile_error=error)
    (line,) = annotations.render(report_of(crashed)).splitlines()
    assert line.startswith(
        "::error file=crash.py,line=4,title=GB4315%3A crash failed to compile::"
    )  # `:` escaped in a property
    assert "compile error GB4315 (USER_ERROR) at crash.py:4 in project" in line
    assert "graph break" not in line.lower()
