"""Breaks inside a library get the Dynamo setting their kind has, for the compile in the user's
code, found one call deeper than the model is made (`compiled(Model())` with the `torch.compile`
in the helper). The helper is shared code, so the setting goes around the statement that calls the
compiled model, where it reaches that model alone. Pure: sources as text, the library's through a
lookup. The real runs are in tests/e2e/fix/test_library_fixes.py."""

from __future__ import annotations

from dataclasses import replace

from gbbot.core.fixes import FixResult, FixStatus
from gbbot.core.model import Frame, FrameRef, LibrarySite, Origin
from gbbot.deliver import rederive
from gbbot.fix import plan
from gbbot.fix.sites import search
from gbbot.recipes import engine
from gbbot.recipes.base import BreakSite
from gbbot.recipes.compile_site import DynamicShapeCaptureOps, ItemCaptureScalars, LoggerIgnored
from tests.builders import graph_break

LIBRARY = """\
import logging

import torch

logger = logging.getLogger(__name__)


class Chatty(torch.nn.Module):
    def forward(self, x):
        logger.warning_once("chatty")
        n = x.sum().item()
        if x.max().item() > 3:
            x = x + 1
        return x * n
"""
BUILD = """\
import torch


def compiled(model):
    model.eval()
    return torch.compile(model)
"""
RUN = """\
from libmodels import Chatty

from app.build import compiled


def run(x):
    model = compiled(Chatty())
    return model(x)
"""
OTHER = """\
from libmodels import Other

from app.build import compiled


def other(x):
    return compiled(Other())(x)
"""
FILES = {"app/build.py": BUILD, "app/run.py": RUN}
FRAME = FrameRef("libmodels/__init__.py", 9, "forward")


def _library_break(gb_id: str, line: int):
    return graph_break(
        1,
        gb_id=gb_id,
        origin=Origin.THIRD_PARTY,
        file="app/run.py",
        line=8,
        function="run",
        code="return model(x)",
        frames=(FRAME,),
        library_site=LibrarySite("libmodels", "libmodels/__init__.py", line, "forward", LIBRARY.splitlines()[line - 1]),
        user_stack=(Frame("app/run.py", 8, "run", "return model(x)"), Frame("libmodels/__init__.py", line, "forward")),
    )


def _read(path: str) -> str:
    if path not in FILES:
        raise plan.Unpatchable(f"{path} is outside the repository")
    return FILES[path]


def _lookup(path: str) -> str | None:
    return LIBRARY if path == "libmodels/__init__.py" else None


def test_the_helper_that_compiles_a_library_model_passed_to_it_is_the_site():
    found = search(FRAME, FILES, (), library_owner="Chatty")
    assert [(s.path, s.line) for s in found.sites] == [("app/build.py", 6)]


def test_a_helper_whose_callers_pass_another_class_is_not_the_site():
    found = search(FRAME, {"app/build.py": BUILD, "app/other.py": OTHER}, (), library_owner="Chatty")
    assert found.sites == ()


def test_a_library_logger_call_gets_its_method_ignored_around_the_models_call():
    settings, why = plan.library_settings(_library_break("GB0291", 10), _read, _lookup, tuple(FILES))
    assert why == ()
    (candidate,) = settings
    assert candidate.recipe.variant == "ignore_logging_functions_at_call" and candidate.paths == ("app/run.py",)
    assert (
        "+    with torch._dynamo.config.patch(ignore_logging_functions={logging.Logger.warning_once}):\n"
        "+        return model(x)\n"
    ) in candidate.diff
    assert "+import logging" in candidate.diff and "+import torch" in candidate.diff


def test_an_item_whose_number_feeds_only_arithmetic_gets_capture_scalar_outputs():
    settings, _ = plan.library_settings(_library_break("GB0124", 11), _read, _lookup, tuple(FILES))
    assert [c.recipe.variant for c in settings] == ["capture_scalar_outputs_at_call"]


def test_a_data_dependent_operator_gets_the_setting_its_message_names_and_not_where_it_decides_a_branch():
    # GB0033 (`aten._local_scalar_dense`: a scalar an op reads from a tensor) has no recipe of its
    # own; torch's hint is capture_scalar_outputs, `.item()`'s setting
    settings, _ = plan.library_settings(_library_break("GB0033", 11), _read, _lookup, tuple(FILES))
    assert [c.recipe.variant for c in settings] == ["capture_scalar_outputs_at_call"]
    assert "with torch._dynamo.config.patch(capture_scalar_outputs=True):" in settings[0].diff
    assert plan.library_settings(_library_break("GB0033", 12), _read, _lookup, tuple(FILES))[0] == ()


def test_an_item_that_decides_a_branch_in_the_library_is_not_given_the_setting_and_says_so():
    brk = _library_break("GB0124", 12)
    settings, why = plan.library_settings(brk, _read, _lookup, tuple(FILES))
    assert settings == ()
    assert why == ("capture_scalar_outputs not tried: the number decides a branch (libmodels/__init__.py:12)",)
    result = plan.plan_break(brk, ("run",), _read, _lookup, tuple(FILES))
    assert result.status.value == "scaffold" and "the number decides a branch" in result.reason


def test_a_break_whose_kind_has_no_setting_keeps_its_scaffold():
    brk = replace(_library_break("GB0170", 12), gb_type="Data-dependent branching")
    result = plan.plan_break(brk, ("run",), _read, _lookup, tuple(FILES))
    assert result.status.value == "scaffold"


def test_settings_before_one_compile_are_all_turned_on_there():
    requests = [
        engine.Request(key, recipe, BreakSite(6))
        for key, recipe in (("a", ItemCaptureScalars), ("b", DynamicShapeCaptureOps), ("c", LoggerIgnored))
    ]
    outcome = engine.apply(BUILD, requests)
    assert outcome.applied == ("a", "b", "c") and outcome.missed == ()
    assert outcome.after.endswith(
        "    torch._dynamo.config.capture_scalar_outputs = True\n"
        "    torch._dynamo.config.capture_dynamic_output_shape_ops = True\n"
        "    torch._dynamo.config.ignore_logging_functions |= {logging.Logger.warning}\n"
        "    return torch.compile(model)\n"
    )


def test_a_setting_several_breaks_need_is_turned_on_once_beside_another():
    # VITS: one `.item()` setting and five `nonzero` breaks, all verified, at one helper
    kinds = (ItemCaptureScalars, DynamicShapeCaptureOps, DynamicShapeCaptureOps, DynamicShapeCaptureOps)
    requests = [engine.Request(f"{n}", recipe, BreakSite(6)) for n, recipe in enumerate(kinds)]
    outcome = engine.apply(BUILD, requests)
    assert outcome.applied == ("0", "1", "2", "3") and outcome.missed == ()
    assert outcome.after.endswith(
        "    torch._dynamo.config.capture_scalar_outputs = True\n"
        "    torch._dynamo.config.capture_dynamic_output_shape_ops = True\n"
        "    return torch.compile(model)\n"
    )


CHECKED_LIBRARY = """\
import torch


class Checked(torch.nn.Module):
    def forward(self, x):
        if (x < -100).any():
            raise ValueError("out of range")
        return x * 2
"""
CHECKED_RUN = """\
import torch
from libmodels import Checked

from app.build import compiled


def run(x):
    model = compiled(Checked())
    return model(x)
"""


def test_a_library_if_that_only_raises_gets_a_finished_override_used_where_the_model_is_made():
    files = {"app/build.py": BUILD, "app/run.py": CHECKED_RUN}

    def read(path: str) -> str:
        if path not in files:
            raise plan.Unpatchable(path)
        return files[path]

    brk = replace(
        _library_break("GB0170", 6),
        frames=(FrameRef("libmodels/__init__.py", 5, "forward"),),
        library_site=LibrarySite("libmodels", "libmodels/__init__.py", 6, "forward", "if (x < -100).any():"),
        user_stack=(Frame("app/run.py", 9, "run", "return model(x)"), Frame("libmodels/__init__.py", 6, "forward")),
        line=9,
    )
    planned = plan.plan_break(
        brk, ("run",), read, lambda p: CHECKED_LIBRARY if p.startswith("libmodels/") else None, tuple(files)
    )
    assert isinstance(planned, plan.Planned)
    (candidate,) = planned.candidates
    assert candidate.recipe.variant == "override" and set(candidate.paths) == {"app/run.py", "app/build.py"}
    assert "+class CompilableChecked(Checked):" in candidate.diff
    assert '+        torch._check(torch.sym_not((x < -100).any().item()), lambda: "out of range")' in candidate.diff
    assert "+    model = compiled(CompilableChecked())" in candidate.diff
    # what torch._check needs: at the compile, since around the call it would overlap the class's use
    assert "+    torch._dynamo.config.capture_scalar_outputs = True" in candidate.diff


def test_a_library_line_no_recipe_rewrites_gets_no_override():
    brk = replace(
        _library_break("GB0170", 6),
        library_site=LibrarySite("libmodels", "libmodels/__init__.py", 6, "forward", "if x.sum() > 0:"),
    )
    library = CHECKED_LIBRARY.replace("if (x < -100).any():", "if x.sum() > 0:").replace(
        'raise ValueError("out of range")', "x = x + 1"
    )
    assert (
        plan._finished_override(brk, _read, lambda p: library if p.startswith("libmodels/") else None, tuple(FILES))
        == ()
    )


def test_a_layer_deep_inside_a_library_model_is_compiled_where_the_repository_compiles_that_librarys_model():
    # the frame is an expert layer the library's model makes inside itself: the repository never
    # names it, so only the whole library's classes can lead to the compile (verification decides)
    layer = FrameRef("libmodels/layers.py", 20, "forward")
    assert search(layer, FILES, (), library_owner="Expert").sites == ()
    found = search(layer, FILES, ("app/run.py",), library_owner="Expert", whole_library=True)
    assert [(s.path, s.line) for s in found.sites] == [("app/build.py", 6)]
    other = FrameRef("otherlib/layers.py", 20, "forward")
    assert search(other, FILES, ("app/run.py",), library_owner="Expert", whole_library=True).sites == ()
    # another model's compile, made by a file that is not on the break's stack, is not the site
    files = {**FILES, "app/build_other.py": BUILD, "app/other.py": OTHER.replace("app.build", "app.build_other")}
    found = search(layer, files, ("app/run.py",), library_owner="Expert", whole_library=True)
    assert [(s.path, s.line) for s in found.sites] == [("app/build.py", 6)]


def _claim(candidate: plan.Candidate) -> FixResult:
    brk = candidate.brk
    recipe = candidate.recipe
    return FixResult(
        brk.fingerprint, FixStatus.VERIFIED, brk.file, brk.line, recipe.id, recipe.variant, hunks=candidate.hunks
    )


def _read_pinned(path: str) -> str:
    return _read(path)  # the pinned commit's files; the library's source is not there


def test_the_job_that_pushes_rederives_a_library_setting_without_the_librarys_source():
    # autofix and /gb-fix push only what gbbot's recipes make of the pinned source: a library
    # break has no label (no recipe at its line), its fix is the setting at the user's compile
    settings = (("GB0291", 10, "ignore_logging_functions_at_call"), ("GB0124", 11, "capture_scalar_outputs_at_call"))
    for gb_id, line, variant in settings:
        brk = _library_break(gb_id, line)
        assert brk.fix is None
        (candidate,), _ = plan.library_settings(brk, _read, _lookup, tuple(FILES))
        claim = _claim(candidate)
        kept = rederive.check(claim, {brk.fingerprint: brk}, _read_pinned, tuple(FILES))
        assert isinstance(kept, FixResult), kept
        assert kept.variant == variant and kept.hunks == candidate.hunks and kept.diff == candidate.diff


def test_a_forged_library_setting_is_not_rederived():
    brk = _library_break("GB0291", 10)
    (candidate,), _ = plan.library_settings(brk, _read, _lookup, tuple(FILES))
    claim = _claim(candidate)
    # the method another logger call would name: every compiled run's `logger.debug` silenced
    hunks = tuple(
        replace(h, replacement=tuple(t.replace("warning_once", "debug") for t in h.replacement))
        for h in candidate.hunks
    )
    assert hunks != candidate.hunks
    forged = replace(claim, hunks=hunks)
    dropped = rederive.check(forged, {brk.fingerprint: brk}, _read_pinned, tuple(FILES))
    assert isinstance(dropped, rederive.Dropped) and "hunks are not what the recipe makes" in dropped.reason
    # a setting the break's kind does not have (capture_scalar_outputs for a logger call)
    wrong = replace(claim, recipe="item", variant="capture_scalar_outputs")
    assert isinstance(rederive.check(wrong, {brk.fingerprint: brk}, _read_pinned, tuple(FILES)), rederive.Dropped)
