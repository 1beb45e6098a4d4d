"""`gbbot explain`: reads the installed torch's registry without running anything."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gbbot.main import main
from gbbot.trace import registry_entry

# GB0170 as torch 2.13's registry keeps it: five wordings, newest first, three of them partly
# torch's source (a placeholder name, the expression that builds the message).
GB0170 = [
    {
        "Gb_type": "Data-dependent branching",
        "Context": "attempted to jump with {value}",
        "Explanation": '"Detected data-dependent branching (e.g. `if my_tensor.sum() > 0:`). "             '
        '"Dynamo does not support tracing dynamic control flow." + trace_info',
        "Hints": [],
    },
    {
        "Gb_type": "Data-dependent branching",
        "Context": "attempted to jump with {value}",
        "Explanation": "Detected data-dependent branching (e.g. `if my_tensor.sum() > 0:`). "
        "Dynamo does not support tracing dynamic control flow.",
        "Hints": [
            "Use `torch.cond` to express dynamic control flow.",
            "This graph break is fundamental - it is unlikely that Dynamo will ever be able to trace "
            "through your code. Consider finding a workaround.",
        ],
    },
    {"Gb_type": "Data-dependent branching", "Context": "", "Explanation": "_explanation", "Hints": ["x."]},
    {"Gb_type": "_gb_type", "Context": "", "Explanation": "_explanation", "Hints": []},
]


def test_explain_gb0170_is_one_clean_entry_with_recipe_and_link(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["explain", "GB0170"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("GB0170: Data-dependent branching\n")
    assert out.count("Data-dependent branching") == 1  # one entry, not one per registry wording
    for raw in ("_gb_type", "_explanation", "trace_info", '" +', "{"):
        assert raw not in out
    assert "Detected data-dependent branching" in out
    # the recipes `gbbot fix` tries for it, and gbbot's own advice, then torch's page
    assert "`gbbot fix` tries" in out and "torch.where instead of a branch" in out
    assert "What to do:" in out
    assert out.rstrip().endswith("Docs: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html")
    assert max(len(line) for line in out.splitlines()) <= 100


def test_explain_known_id_without_a_recipe(capsys):
    assert main(["explain", "gb0008"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("GB0008: ")
    assert "`gbbot fix` has no mechanical fix for this kind of break." in out
    assert "{fn_qualname}" not in out and "`<fn_qualname>`" in out


def test_registry_wordings_become_one_readable_entry():
    entry = registry_entry.lookup("gb0170", {"GB0170": GB0170})
    assert entry.gb_type == "Data-dependent branching"
    # the newest explanation, its string parts read out of the expression
    assert entry.explanation == (
        "Detected data-dependent branching (e.g. `if my_tensor.sum() > 0:`). "
        "Dynamo does not support tracing dynamic control flow."
    )
    assert entry.hints[0] == "Use `torch.cond` to express dynamic control flow."


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (
            "Dynamo does not know how to trace `super().{name}()`",
            "Dynamo does not know how to trace `super().<name>()`",
        ),
        ("{cls.__name__} defines a C __hash__", "<cls> defines a C __hash__"),
        ("but got {','.join(set(kwargs.keys()) - {'initial', 'func'})}", "but got <…>"),
        (
            '"Failed to compare {self}, " + f"because {other} is not constant"',
            "Failed to compare <self>, because <other> is not constant",
        ),
    ],
)
def test_format_fields_are_shown_as_placeholders(text, shown):
    entry = registry_entry.lookup("GB0001", {"GB0001": [{"Gb_type": "t", "Explanation": text, "Hints": []}]})
    assert entry.explanation == shown


def test_a_one_word_gb_type_is_a_name_but_a_placeholder_is_not():
    found = registry_entry.lookup("GB2483", {"GB2483": [{"Gb_type": "tp_str_impl", "Explanation": "explanation"}]})
    assert (found.gb_type, found.explanation) == ("tp_str_impl", "")


def test_explain_does_not_import_torch():
    probe = "import sys; from gbbot.main import main; main(['explain', 'GB0124']); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.startswith("GB0124: ") and out.strip().endswith("False")


@pytest.mark.parametrize(
    ("gb_id", "message"),
    [
        ("GB99", "is not a graph-break id"),
        ("GB9999", "GB9999 is not in this torch's registry"),
    ],
)
def test_explain_bad_ids(capsys, gb_id, message):
    assert main(["explain", gb_id]) == 2
    assert message in capsys.readouterr().err


def test_registry_hints_split_over_strings_are_joined():
    registry = {
        "GB0001": [
            {"Gb_type": "t", "Explanation": "e", "Hints": ["Consume the gradient ", "(call backward()).", "Next."]}
        ]
    }
    entry = registry_entry.lookup("GB0001", registry)
    assert entry.hints == ("Consume the gradient (call backward()).", "Next.")
