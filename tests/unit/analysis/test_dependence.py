"""Whether what a head break depends on is the base's (gbbot/analysis/dependence.py), on source
text and hand-made break records: the way Dynamo traced to it, the repository line of a break
raised inside a library, the callee a skipped or disabled-function break is about. No torch, no
git. (With real torch and git: tests/e2e/test_diff_dependence.py.)"""

from __future__ import annotations

from gbbot.analysis import dependence, source
from gbbot.core.model import Frame, FrameRef, GraphBreak, LibrarySite, Origin
from tests.builders import traced_break

# Gen.generate's loop calls Net.forward; the head adds a debug call into a logging package.
BASE = """\
import tinylog
import torch


class Net(torch.nn.Module):
    def forward(self, x):
        return x * 0.5 + 1


class Gen(torch.nn.Module):
    def generate(self, x):
        for _ in range(4):
            x = self.net(x)
            if (x > 100).any().all():
                break
        return x
"""
HEAD = BASE.replace(
    "        return x * 0.5 + 1\n", '        tinylog.debug(f"net {x.shape}")\n        return x * 0.5 + 1\n'
)
GENERATE = FrameRef("gen.py", 11, "generate", "Gen.generate")
ENTRY = Frame("entry.py", 5, "main", "return torch.compile(Gen().generate)(torch.ones(2))")
IN_LOOP = Frame("gen.py", 13, "generate", "x = self.net(x)")
LIBRARY = LibrarySite("tinylog", "tinylog/__init__.py", 9, "debug", "sys.stderr.write(message)")


def change(head: dict[str, str], base: dict[str, str], touched: set[str] | None = None) -> dependence.Change:
    def lookup(files: dict[str, str]):
        return lambda path: source.source_map(files[path]) if path in files else None

    differ = {p for p in head.keys() | base.keys() if head.get(p) != base.get(p)} if touched is None else touched
    return dependence.Change(lookup(head), lookup(base), frozenset(differ))


def library_break(line: int = 7, code: str = 'tinylog.debug(f"net {x.shape}")', **changes) -> GraphBreak:
    """A break raised inside tinylog, under Net.forward's line that calls it."""
    stack = (
        ENTRY,
        IN_LOOP,
        Frame("gen.py", line, "forward", code),
        Frame("tinylog/__init__.py", 9, "debug", "sys.stderr.write(message)"),
    )
    values = dict(
        gb_id="GB0156",
        origin=Origin.THIRD_PARTY,
        file="gen.py",
        line=line,
        function="Net.forward",
        code=code,
        library_site=LIBRARY,
        user_stack=stack,
        frames=(GENERATE,),
    )
    return traced_break(**{**values, **changes})


def test_a_break_inside_a_library_under_a_line_the_head_added_is_not_the_bases():
    assert dependence.unchanged(change({"gen.py": HEAD}, {"gen.py": BASE}))(library_break()) is False
    # the same line already on the base: the way to it is the base's
    assert dependence.unchanged(change({"gen.py": HEAD}, {"gen.py": HEAD}))(library_break()) is True


def test_the_repository_line_of_a_library_break_is_the_line_that_calls_into_it():
    line = dependence.repository_line(library_break())
    assert line == Frame("gen.py", 7, "Net.forward", 'tinylog.debug(f"net {x.shape}")')
    assert dependence.line_in(lambda _p: source.source_map(BASE))(library_break()) is False
    assert dependence.line_in(lambda _p: source.source_map(HEAD))(library_break()) is True


def test_a_break_with_no_repository_line_on_its_way_cannot_be_shown_the_bases():
    inside = library_break(file=LIBRARY.path, line=LIBRARY.line, function="debug", code=LIBRARY.code)
    assert dependence.repository_line(inside) is None
    assert dependence.unchanged(change({"gen.py": HEAD}, {"gen.py": HEAD}))(inside) is None
    assert dependence.line_in(lambda _p: source.source_map(HEAD))(inside) is None


def test_a_break_reached_through_a_call_line_the_head_added_is_not_the_bases():
    # The head's loop calls a new helper; the print inside it is on the base, the call is not.
    base = BASE + "\n\ndef note(x):\n    print(x)\n"
    head = base.replace("            x = self.net(x)\n", "            x = self.net(x)\n            note(x)\n")
    stack = (ENTRY, Frame("gen.py", 14, "generate", "note(x)"), Frame("gen.py", 20, "note", "print(x)"))
    printed = traced_break(file="gen.py", line=20, function="note", code="print(x)", user_stack=stack)
    printed = GraphBreak(**{**printed.__dict__, "frames": (GENERATE,)})
    assert dependence.unchanged(change({"gen.py": head}, {"gen.py": base}))(printed) is False


def test_an_edit_elsewhere_in_a_function_on_the_way_is_not_held_against_the_break():
    # Fixing the first break in a loop edits the function whose later breaks it reveals.
    base = BASE.replace("        return x\n", '        print("done")\n        return x\n')
    head = base.replace("            x = self.net(x)\n", "            x = self.net(x)  # no print here any more\n")
    head = head.replace("        for _ in range(4):\n", "        for _ in range(4):\n            x = x + 0\n")
    stack = (ENTRY, Frame("gen.py", 18, "generate", 'print("done")'))
    printed = traced_break(
        file="gen.py", line=18, function="Gen.generate", code='print("done")', user_stack=stack, frames=(GENERATE,)
    )
    assert dependence.unchanged(change({"gen.py": head}, {"gen.py": base}))(printed) is True


def test_the_callers_above_the_compiled_frame_are_not_on_the_way():
    # The entry script now compiles with other settings: its line is no part of the way to the break.
    entry_base = "import torch\n\ndef main():\n    x = 1\n    return torch.compile(Gen().generate)(torch.ones(2))\n"
    entry_head = entry_base.replace("torch.compile(Gen().generate)", "torch.compile(Gen().generate, dynamic=True)")
    moved = Frame("entry.py", 5, "main", "return torch.compile(Gen().generate, dynamic=True)(torch.ones(2))")
    brk = library_break(user_stack=(moved, *library_break().user_stack[1:]))
    sides = change({"gen.py": HEAD, "entry.py": entry_head}, {"gen.py": HEAD, "entry.py": entry_base})
    assert dependence.unchanged(sides)(brk) is True


def test_a_file_only_the_head_has_is_not_the_bases():
    assert dependence.unchanged(change({"gen.py": HEAD}, {}))(library_break()) is False


def test_a_file_the_change_did_not_touch_is_not_read():
    def unread(path: str):
        raise AssertionError(f"{path} read")

    sides = dependence.Change(unread, unread, frozenset({"other.py"}))
    assert dependence.unchanged(sides)(library_break()) is True


# The decorator pattern: Model.forward's loop calls block(x); the head disables Block.forward.
BLOCKS = """\
import torch


class Block(torch.nn.Module):
    def forward(self, x):
        return x + 1


class Model(torch.nn.Module):
    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x
"""
DISABLED = BLOCKS.replace(
    "    def forward(self, x):\n        return x + 1",
    "    @torch.compiler.disable\n    def forward(self, x):\n        return x + 1",
)
MODEL = FrameRef("blocks.py", 10, "forward", "Model.forward")


def skipped(explanation: str, gb_id: str = "GB0099") -> GraphBreak:
    stack = (
        Frame("entry.py", 3, "main", "return torch.compile(Model())(x)"),
        Frame("blocks.py", 12, "forward", "x = block(x)"),
    )
    return traced_break(
        gb_id=gb_id,
        file="blocks.py",
        line=12,
        function="Model.forward",
        code="x = block(x)",
        explanation=explanation,
        user_stack=stack,
        frames=(MODEL,),
    )


DISABLE = "Skip inlining function <function Block.forward at 0x7f5eed3b4ae0> since it was wrapped with `torch.compiler.disable` (reason: None)"


def test_a_call_line_whose_callee_the_head_disabled_is_not_the_bases():
    assert dependence.callee(skipped(DISABLE)) == "Block.forward"
    assert dependence.unchanged(change({"blocks.py": DISABLED}, {"blocks.py": BLOCKS}))(skipped(DISABLE)) is False
    # disabled on the base already, another function edited: the callee is the base's
    edited = DISABLED.replace("        return x\n", "        return x * 1\n")
    assert dependence.unchanged(change({"blocks.py": edited}, {"blocks.py": DISABLED}))(skipped(DISABLE)) is True


def test_a_disabled_callee_break_that_names_no_callee_cannot_be_shown_the_bases():
    vague = skipped("Skip inlining a function wrapped with `torch.compiler.disable`.", "GB0099")
    assert dependence.unchanged(change({"blocks.py": BLOCKS}, {"blocks.py": BLOCKS}))(vague) is None


def test_a_builtin_a_library_calls_is_no_callee_of_the_repository():
    # loguru's logger.debug reaches sys._getframe (GB0007): a line the base had is the base's.
    getframe = library_break(
        gb_id="GB0007",
        explanation="Dynamo does not know how to trace the builtin `sys._getframe.` This function is either a Python builtin",
    )
    assert dependence.unchanged(change({"gen.py": HEAD}, {"gen.py": HEAD}))(getframe) is True
    assert dependence.unchanged(change({"gen.py": HEAD}, {"gen.py": BASE}))(getframe) is False


def test_a_patch_known_line_by_line_makes_the_breaks_on_its_lines_its_own():
    def written(path: str, line: int) -> int | None:
        return None if (path, line) == ("gen.py", 7) else line

    assert dependence.lines_kept(written)(library_break()) is False
    assert dependence.lines_kept(written)(library_break(line=8, code="return x * 0.5 + 1")) is True
    assert dependence.lines_kept(written)(skipped(DISABLE)) is None  # the callee's lines are not on its stack
