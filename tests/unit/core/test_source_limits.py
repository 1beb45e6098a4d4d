"""Hostile Python source and the LibCST parses that would crash or stall on it
(gbbot/core/source_limits.py): refused first, in the fix engine, the compile-site lookup a caller's
file goes through and the publisher's re-derivation; `gbbot init`, which reads with Python's own
parser, refuses what that parser cannot take."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gbbot.core import source_limits
from gbbot.core.fixes import FixResult, FixStatus, Hunk
from gbbot.core.model import Frame
from gbbot.deliver import rederive
from gbbot.fix import plan
from gbbot.recipes import engine
from gbbot.recipes.base import SourceError, parse
from gbbot.starter import discover
from tests.builders import graph_break
from tests.cli_helpers import write

PARENS = "x = " + "(" * 2000 + "1" + ")" * 2000 + "\n"  # SIGSEGV inside LibCST
BRACKETS = "y = " + "[" * 1500 + "]" * 1500 + "\n"  # 3 KB, the same
INDENTED = "".join("    " * i + "if x:\n" for i in range(110)) + "    " * 110 + "pass\n"
NOTS = "x = " + "not " * 3000 + "1\n"  # accepted by no parser without recursion
CHAIN = "x = " + "+".join(["1"] * 20_000) + "\n"  # minutes of LibCST
# 14 nodes a function: 70,001, over the node limit (20,000 of them, 840 KB, took LibCST 30 s and 470 MB)
LARGE = "".join(f"def f{i}(a, b):\n    return a + b * {i}\n" for i in range(5_000))
HOSTILE = {"parens": PARENS, "brackets": BRACKETS, "indented": INDENTED, "nots": NOTS, "chain": CHAIN, "large": LARGE}
COMPILES = "import torch\n\n\ndef f(x):\n    return x.item()\n\n\nfast = torch.compile(f)\n"


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_source_is_refused_before_libcst_sees_it(name):
    reason = source_limits.refusal(HOSTILE[name])
    assert reason
    with pytest.raises(SourceError):
        parse(HOSTILE[name])
    facts = discover.facts_of("evil.py", HOSTILE[name])
    assert facts is None if name != "large" else len(facts.functions) == 5_000  # no LibCST there


def test_real_code_is_not_refused():
    assert source_limits.refusal(COMPILES) is None
    assert source_limits.refusal(Path(engine.__file__).read_text()) is None
    assert discover.facts_of("m.py", COMPILES).sites


def test_the_refusal_names_cpythons_own_limit():
    assert "too many nested parentheses" in source_limits.refusal(PARENS)
    assert "too many levels of indentation" in source_limits.refusal(INDENTED)


def test_a_forged_fix_naming_a_hostile_file_is_not_believed():
    """The publisher's re-derivation (workflow_run, the /gb-fix push, autofix): dropped, said why."""
    brk = graph_break(0, file="evil.py", line=1, function="<module>", code="x = (", fix="print")
    claim = FixResult(
        brk.fingerprint, FixStatus.VERIFIED, "evil.py", 1, recipe="print", variant="guard",
        summary="outputs equal", hunks=(Hunk("evil.py", 1, 1, ("x = 1",)),),
    )  # fmt: skip
    kept = rederive.check(claim, {brk.fingerprint: brk}, lambda path: PARENS)
    assert isinstance(kept, rederive.Dropped)
    assert "does not parse" in kept.reason and "nested parentheses" in kept.reason


def test_a_hostile_caller_file_one_frame_up_is_skipped_not_parsed():
    """The compile-site recipes read the files of the break's callers too: the hostile one is
    passed over; the break's own file still gets its patch."""
    brk = graph_break(
        0, file="model.py", line=5, function="f", code="return x.item()", fix="item",
        user_stack=(Frame("train.py", 1, "<module>"), Frame("model.py", 5, "f")),
    )  # fmt: skip
    files = {"model.py": COMPILES, "train.py": PARENS}
    found, _ = plan.candidates(brk, COMPILES, files.__getitem__)
    assert [c.paths for c in found if c.recipe.id == "item"] == [("model.py",)]


def test_gbbot_init_skips_the_hostile_file_and_finds_the_real_site(tmp_path):
    main = COMPILES + '\n\nif __name__ == "__main__":\n    fast(torch.ones(1))\n'
    write(tmp_path, {"evil.py": BRACKETS, "deeper/evil2.py": PARENS, "model.py": main})
    done = subprocess.run(
        [sys.executable, "-m", "gbbot", "init", "--print"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "model" in done.stdout and "evil" not in done.stdout
