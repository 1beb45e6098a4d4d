"""Every recipe against its own examples, its look-alikes, and the golden before/after files
(tricky formatting: multi-line calls, comments, nested functions, methods, decorators, an existing
`import torch as T`, a module without `import torch`). A line marked `# BREAK` is where the graph
break is reported. No torch runs here: the re-runs are in test_fix_e2e.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from gbbot.recipes import RECIPES, all_variants, engine
from gbbot.recipes.base import MARKER, BreakSite, Recipe, SourceError, code
from gbbot.recipes.deepcopy import DeepcopyClone
from gbbot.recipes.print_call import PrintGuard
from gbbot.recipes.skipped_call import SkippedCallGuard

GOLDEN = Path(__file__).parent / "golden"


def apply_at_markers(recipe: type[Recipe], source: str) -> engine.Outcome:
    lines = [n for n, text in enumerate(source.splitlines(), 1) if MARKER in text]
    assert lines, "an example needs a line marked # BREAK"
    return engine.apply(source, [engine.Request(str(n), recipe, BreakSite(n)) for n in lines])


def _examples():
    for recipe in all_variants():
        for i, ex in enumerate(recipe.examples):
            yield pytest.param(recipe, ex.before, ex.after, id=f"{recipe.id}-{recipe.variant}-{i}")


def _untouched():
    for recipe in all_variants():
        for i, source in enumerate(recipe.untouched):
            yield pytest.param(recipe, source, id=f"{recipe.id}-{recipe.variant}-{i}")


def _golden():
    for before in sorted(GOLDEN.glob("*/*.before.py")):
        variant = before.name.split("-", 1)[0]
        recipe = next(v for v in RECIPES[before.parent.name] if v.variant == variant)
        yield pytest.param(recipe, before, id=f"{before.parent.name}/{before.name}")


def test_every_recipe_has_examples_and_look_alikes():
    assert set(RECIPES) == {
        "print",
        "logger",
        "skipped_call",
        "item",
        "tolist",
        "deepcopy",
        "requires_grad",
        "graph_break",
        "dynamic_shape",
        "rnn",
        "side_effect",
        "sdp_kernel",
        "tensor_branch",
    }
    for recipe in all_variants():
        assert recipe.examples and recipe.untouched, recipe.__name__
        assert recipe.title and len(recipe.description) > 80, recipe.__name__


@pytest.mark.parametrize(("recipe", "before", "after"), list(_examples()))
def test_recipe_examples(recipe, before, after):
    outcome = apply_at_markers(recipe, before)
    assert outcome.after == after
    assert outcome.missed == ()


@pytest.mark.parametrize(("recipe", "source"), list(_untouched()))
def test_look_alikes_are_not_touched(recipe, source):
    outcome = apply_at_markers(recipe, source)
    assert outcome.after == source
    assert outcome.applied == ()
    assert "not a pattern" in outcome.missed[0][1]


@pytest.mark.parametrize(("recipe", "before"), list(_golden()))
def test_golden_files(recipe, before):
    expected = before.with_name(before.name.replace(".before.py", ".after.py")).read_text(encoding="utf-8")
    outcome = apply_at_markers(recipe, before.read_text(encoding="utf-8"))
    assert outcome.after == expected
    # comments survive: every comment of the original is still there (a deleted
    # graph_break() takes only its own trailing comment with it)
    kept = [line.split("#", 1)[1] for line in before.read_text().splitlines() if "#" in line and MARKER not in line]
    assert all(comment in outcome.after for comment in kept)


def test_golden_files_cover_every_recipe():
    assert {p.parent.name for p in GOLDEN.glob("*/*.before.py")} == set(RECIPES)


def test_an_existing_torch_alias_is_used_and_no_import_added():
    source = "import torch as T\n\n\ndef f(x):\n    print(x)  # BREAK\n    return x\n"
    after = apply_at_markers(PrintGuard, source).after
    assert "if not T.compiler.is_compiling():" in after
    assert "import torch\n" not in after


def test_import_torch_is_added_when_missing():
    source = code(
        """
        '''Doc.'''
        import warnings


        def f(x):
            warnings.warn("careful")  # BREAK
            return x
        """
    )
    after = apply_at_markers(SkippedCallGuard, source).after
    assert after.startswith("'''Doc.'''\nimport warnings\nimport torch\n")
    assert 'if not torch.compiler.is_compiling():\n        warnings.warn("careful")  # BREAK' in after


def test_a_fix_that_would_drop_a_comment_is_not_offered():
    source = code(
        """
        import copy


        def f(x):
            y = copy.deepcopy(
                x  # the caller's tensor
            )  # BREAK
            return y
        """
    )
    outcome = apply_at_markers(DeepcopyClone, source)
    assert outcome.after == source
    assert "would drop a comment" in outcome.missed[0][1]


def test_a_syntax_error_is_a_source_error():
    with pytest.raises(SourceError, match="line 2"):
        engine.apply("def f(x):\n    print(x  # BREAK\n", [engine.Request("k", PrintGuard, BreakSite(2))])


def test_several_fixes_in_one_file_apply_together():
    source = code(
        """
        import copy
        import logging

        import torch

        log = logging.getLogger(__name__)


        def f(x):
            print("a")  # BREAK
            y = copy.deepcopy(x)  # BREAK
            log.info("b")  # BREAK
            return y
        """
    )
    requests = [
        engine.Request("p", RECIPES["print"][0], BreakSite(10)),
        engine.Request("d", RECIPES["deepcopy"][0], BreakSite(11)),
        engine.Request("l", RECIPES["logger"][0], BreakSite(12)),
    ]
    outcome = engine.apply(source, requests)
    assert outcome.applied == ("p", "d", "l")
    assert outcome.after.count("if not torch.compiler.is_compiling():") == 2
    assert "y = x.detach().clone()  # BREAK" in outcome.after


def test_overlapping_fixes_are_reported_not_merged():
    source = "import torch\n\n\ndef f(x):\n    print(x)  # BREAK\n    return x\n"
    requests = [
        engine.Request("a", RECIPES["print"][0], BreakSite(5)),
        engine.Request("b", RECIPES["print"][1], BreakSite(5)),
    ]
    outcome = engine.apply(source, requests)
    assert outcome.applied == ("a",)
    assert outcome.missed == (("b", "overlaps another fix in the same file; apply that one first"),)


def test_two_breaks_on_one_statement_that_get_the_same_guard_share_one_edit():
    # nanoGPT's `print(f"loss {loss.item():.4f}")` breaks twice (GB0059 print, GB0124 .item()):
    # both fixes are the one guard, made once, and both are in the patch
    source = 'import torch\n\n\ndef f(loss):\n    print(f"loss {loss.item():.4f}")  # BREAK\n    return loss\n'
    requests = [
        engine.Request("print", RECIPES["print"][0], BreakSite(5)),
        engine.Request("item", RECIPES["side_effect"][0], BreakSite(5)),
    ]
    outcome = engine.apply(source, requests)
    assert outcome.applied == ("print", "item") and outcome.missed == ()
    assert outcome.after.count("if not torch.compiler.is_compiling():") == 1


def test_a_setting_around_the_models_call_takes_a_second_setting_in_the_same_with():
    from gbbot.recipes.compile_site import DynamicShapeCaptureOps, ItemCaptureScalars, SettingAtCall, at_call

    (example,) = SettingAtCall.examples
    scalars, shapes = at_call(ItemCaptureScalars), at_call(DynamicShapeCaptureOps)
    line = next(n for n, text in enumerate(example.before.splitlines(), 1) if MARKER in text)
    once = engine.apply(example.before, [engine.Request("a", scalars, BreakSite(line))])
    assert once.after == example.after and scalars.variant == "capture_scalar_outputs_at_call"
    both = engine.apply(
        example.before, [engine.Request("a", scalars, BreakSite(line)), engine.Request("b", shapes, BreakSite(line))]
    )
    assert both.applied == ("a", "b")
    joined = "with torch._dynamo.config.patch(capture_scalar_outputs=True, capture_dynamic_output_shape_ops=True):"
    assert joined in both.after
    again = engine.apply(once.after, [engine.Request("b", shapes, BreakSite(line + 1))])  # an earlier fix's with
    assert joined in again.after and again.after.count("with ") == 1
