"""Real torch runs: every pattern of tests/breakpatterns/patterns.py found, identified and
classified, through `gbbot check` (one process compiles every pattern: `patterns_report`, in
tests/e2e/conftest.py). Under the pinned torch, and again under the newer one of
.ci/torch-next-constraint.txt (.ci/run's second environment)."""

from __future__ import annotations

import importlib.metadata

import pytest

from gbbot.analysis import report
from gbbot.checks.tree import CheckOptions, check
from gbbot.core.config import parse_config
from gbbot.core.model import Category, Origin, Status
from gbbot.render import markdown


def by_function(report) -> dict:
    (entry,) = report.entrypoints
    found: dict = {}
    for brk in entry.breaks:
        found.setdefault(brk.function, []).append(brk)
    return found


EXPECTED = {
    # function: (gb_id, category, fix recipe)
    "print_call": ("GB0059", Category.SUPPORTABLE, "print"),
    "logger_info": ("GB0291", Category.SUPPORTABLE, "logger"),
    "warnings_warn": ("GB0007", Category.SUPPORTABLE, "skipped_call"),
    "item_call": ("GB0124", Category.SUPPORTABLE, "item"),
    "tolist_float": ("GB0109", Category.SUPPORTABLE, "tolist"),
    # `if x.sum() > 0: return …`: no shape the tensor_branch recipes rewrite, so no fix is promised
    "data_dependent_if": ("GB0170", Category.FUNDAMENTAL, None),
    "nonzero_call": ("GB0036", Category.SUPPORTABLE, "dynamic_shape"),
    "numpy_on_tensor": ("GB0033", Category.SUPPORTABLE, None),
    "deepcopy_tensor": ("GB4198", Category.SUPPORTABLE, "deepcopy"),
    "explicit_graph_break": ("GB0025", Category.SUPPORTABLE, "graph_break"),
}


@pytest.mark.parametrize("function", sorted(EXPECTED))
def test_pattern_is_found_with_its_id_and_category(patterns_report, function):
    (brk,) = by_function(patterns_report)[function]
    assert (brk.gb_id, brk.category, brk.fix) == EXPECTED[function]
    assert brk.origin is Origin.USER
    assert brk.file == "patterns.py"
    assert brk.doc_url.endswith(f"/gb/{brk.gb_id.lower()}.html")
    assert not brk.frame_skipped


def test_deepcopy_is_attributed_to_the_user_line_not_copy_py(patterns_report):
    (brk,) = by_function(patterns_report)["deepcopy_tensor"]
    assert brk.code.startswith("y = copy.deepcopy(x)")
    assert brk.user_stack[-1].file == "copy.py"  # the innermost frame is kept for reference


def test_break_in_loop_is_one_root_with_the_frame_skipped(patterns_report):
    (brk,) = by_function(patterns_report)["break_in_loop"]
    assert brk.gb_id == "GB0025" and brk.frame_skipped and brk.in_loop
    assert brk.consequences == ("graph break in loop",) and len(brk.caused) == 1
    # the print after the loop is never seen: the frame ran eagerly
    assert not any(b.gb_id == "GB0059" and b.function == "break_in_loop" for b in patterns_report.breaks)
    # impact order: the skipped frame comes first
    assert patterns_report.breaks[0] is brk


def test_break_inside_a_third_party_package(patterns_report):
    (brk,) = by_function(patterns_report)["third_party_break"]
    assert brk.origin is Origin.THIRD_PARTY
    assert (brk.file, brk.code) == (
        "patterns.py",
        "return fakelib.scale(x)  # the break happens inside fakelib (origin third_party)",
    )
    assert brk.user_stack[-1].file == "fakelib/__init__.py" and brk.user_stack[-1].function == "scale"
    assert brk.count == 2  # inlined into third_party_break, then scale compiled on its own


def test_no_break_pattern_and_counts(patterns_report):
    (entry,) = patterns_report.entrypoints
    assert entry.status is Status.OK
    assert "no_break" not in by_function(patterns_report)
    assert entry.frames_skipped == 1
    assert entry.break_count == sum(b.count for b in entry.breaks) == 13
    # the torch installed here (the pin, or .ci/run's newer one), read without a caveat
    assert patterns_report.torch_version.startswith(importlib.metadata.version("torch"))
    assert entry.trace_problems == ()


def test_markdown_shows_where_inside_the_package_a_third_party_break_is(patterns_report):
    (brk,) = by_function(patterns_report)["third_party_break"]
    assert (brk.library_site.package, brk.library_site.path, brk.library_site.line) == (
        "fakelib",
        "fakelib/__init__.py",
        7,
    )
    text = markdown.render(patterns_report)
    assert "Inside `fakelib` at `fakelib/__init__.py:7` in `scale`, reached from `patterns.py:83`" in text
    assert "torch._dynamo.graph_break()\n```" in text  # the library's own source line
    assert brk.fix is None  # no recipe patches the call into the library


def test_a_module_reached_through_dotdot_is_outside_the_repository(tmp_path):
    """An entrypoint that imports a module through `repo/../outside`: its break is a
    third-party one at the repository's call, and the report stays valid."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "mod.py").write_text(
        "import torch\n\n\ndef helper(x):\n    torch._dynamo.graph_break()\n    return x + 1\n"
    )
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "main.py").write_text(
        "import os\nimport sys\n\nimport torch\n\n"
        "sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'outside'))\n"
        "import mod  # noqa: E402\n\n\ndef f(x):\n    return mod.helper(x) * 2\n\n\ntorch.compile(f)(torch.ones(2))\n"
    )
    config = parse_config("version: 1\nentrypoints:\n  - name: outside\n    run: python main.py\n")
    result = check(repo, config, CheckOptions())
    report.validate(report.to_json(result))
    (entry,) = result.entrypoints
    assert entry.status is Status.OK and entry.breaks
    for brk in entry.breaks:
        assert (brk.file, brk.origin) == ("main.py", Origin.THIRD_PARTY)
        assert (brk.library_site.path, brk.library_site.line) == ("mod.py", 5)
