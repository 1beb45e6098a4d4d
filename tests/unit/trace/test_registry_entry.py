"""`gbbot explain`: reads the installed torch's registry without running anything."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gbbot.main import main
from gbbot.trace import registry_entry


def test_explain_known_id(capsys):
    assert main(["explain", "gb0059"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("GB0059: Failed to trace builtin operator")
    assert "Hint: If you are attempting to call a logging function (e.g. `print`), you can try adding it to" in out
    assert "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html" in out


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
    (entry,) = registry_entry.lookup("GB0001", registry)
    assert entry.hints == ("Consume the gradient (call backward()).", "Next.")
