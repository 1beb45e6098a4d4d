"""A `model:` entry's setting goes into its `compile: {dynamo: …}` option, in the mapping's own
style, the rest of the file as written; where the entry is no `model:` entry or already names the
setting, there is no edit."""

from __future__ import annotations

import pytest

from gbbot.fix.config_edit import already, with_setting

BLOCK = """\
version: 1
entrypoints:
  - name: dit   # the DiT model
    model: models:DiT
    inputs: [{tensor: [1, 4]}]
  - {name: other, model: 'm:B'}
  - {name: script, run: python train.py}
"""


@pytest.mark.parametrize(
    ("text", "name", "expected"),
    [
        (BLOCK, "dit", "    inputs: [{tensor: [1, 4]}]\n    compile: {dynamo: {capture_scalar_outputs: true}}\n"),
        (BLOCK, "other", "  - {name: other, model: 'm:B', compile: {dynamo: {capture_scalar_outputs: true}}}\n"),
        (
            "version: 1\nentrypoints:\n  - name: a\n    model: m:A\n    compile:\n      fullgraph: false\n  - name: b\n    model: m:B\n",
            "a",
            "    compile:\n      fullgraph: false\n      dynamo: {capture_scalar_outputs: true}\n  - name: b\n",
        ),
        (
            "version: 1\nentrypoints:\n  - name: a\n    model: m:A\n    compile: {dynamo: {allow_rnn: true}}\n",
            "a",
            "    compile: {dynamo: {allow_rnn: true, capture_scalar_outputs: true}}\n",
        ),
    ],
)
def test_the_setting_goes_into_the_entrys_compile_option_in_its_style(text, name, expected):
    edited = with_setting(text, ".gbbot.yml", name, "capture_scalar_outputs")
    assert edited is not None and expected in edited
    assert already(edited, ".gbbot.yml", name, "capture_scalar_outputs", True)


def test_the_rest_of_the_file_is_kept_as_written():
    edited = with_setting(BLOCK, ".gbbot.yml", "dit", "capture_scalar_outputs")
    assert edited == BLOCK.replace(
        "[{tensor: [1, 4]}]\n", "[{tensor: [1, 4]}]\n    compile: {dynamo: {capture_scalar_outputs: true}}\n", 1
    )


def test_a_logger_method_is_a_list():
    edited = with_setting(BLOCK, ".gbbot.yml", "other", "ignore_logging_functions", ("warning_once",))
    assert edited is not None and "compile: {dynamo: {ignore_logging_functions: [warning_once]}}" in edited


@pytest.mark.parametrize(
    ("name", "flag"),
    [
        ("script", "capture_scalar_outputs"),  # not a model: entry: gbbot does not compile it
        ("missing", "capture_scalar_outputs"),
        ("dit", "no_such_setting"),  # the edit would not load
    ],
)
def test_no_edit_where_the_entry_cannot_take_it(name, flag):
    assert with_setting(BLOCK, ".gbbot.yml", name, flag) is None


def test_a_setting_the_entry_names_already_is_not_written_again():
    text = "version: 1\nentrypoints:\n  - {name: a, model: 'm:A', compile: {dynamo: {capture_scalar_outputs: false}}}\n"
    assert with_setting(text, ".gbbot.yml", "a", "capture_scalar_outputs") is None
