"""What a program imports before it runs anything else, read from the checkout's source: the names a
standby child may import before the program's turn, in the program's order, one checkout import
deeper at a time, and never past a statement that could change what an import does."""

from __future__ import annotations

import textwrap
from pathlib import Path

from gbbot.backends.expected_imports import MAX_FILES, expected, start_files


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    return root


def names_of(root: Path, kind: str, target: str, *args: str) -> list[str]:
    return expected(root, start_files(root, kind, target, args))


def test_the_leading_imports_of_a_script_and_of_the_checkout_modules_it_imports_in_order(tmp_path):
    write(tmp_path, {
        "train.py": '"""Train."""\nfrom __future__ import annotations\nimport torch\nfrom model import build\nimport numpy\n',
        "model.py": "from transformers import BertModel, BertConfig\nfrom layers.attention import Attention\n",
        "layers/__init__.py": "import einops\n",
        "layers/attention.py": "from . import norms\nfrom .norms import rms\nimport flash_attn.ops\n",
        "layers/norms.py": "import apex\n",
    })  # fmt: skip
    assert names_of(tmp_path, "script", "train.py") == [
        "torch",
        "transformers",
        "transformers.BertModel",
        "transformers.BertConfig",
        "einops",
        "apex",
        "flash_attn.ops",
        "numpy",
    ]  # fmt: skip  (the checkout's own model, layers, norms are read, never named)


def test_the_first_statement_ends_the_list_even_one_import_deeper(tmp_path):
    write(tmp_path, {
        "run.py": "import os\nos.environ['HF_HUB_OFFLINE'] = '1'\nimport transformers\n",
        "deeper.py": "import model\nimport timm\n",
        "model.py": "import einops\nLAYERS = 2\nimport xformers\n",
        "helpers.py": "import yaml\n\ndef load():\n    import datasets\n",
    })  # fmt: skip
    # transformers may read HF_HUB_OFFLINE at import: it comes after the program's own statement
    assert names_of(tmp_path, "script", "run.py") == ["os"]
    # model.py runs LAYERS = 2 before xformers, and the script's timm only after all of model.py
    assert names_of(tmp_path, "script", "deeper.py") == ["einops"]
    # an import inside a function is not one the program surely runs
    write(tmp_path, {"calls.py": "import helpers\nimport torch\n"})
    assert names_of(tmp_path, "script", "calls.py") == ["yaml"]


def test_type_checking_blocks_are_passed_over_and_a_file_that_does_not_parse_ends_the_list(tmp_path):
    write(tmp_path, {
        "run.py": """\
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                import mypy_only
            import torch
            import broken
            import never
        """,
        "broken.py": "import never_seen\ndef (:\n",
    })  # fmt: skip
    assert names_of(tmp_path, "script", "run.py") == ["typing", "typing.TYPE_CHECKING", "torch"]


def test_hostile_source_ends_the_list_quietly(tmp_path, capsys):
    write(tmp_path, {
        "run.py": "import torch\nimport deep\nimport never\n",
        "deep.py": "import numpy\nx = " + "(" * 5000 + ")" * 5000 + "\n",
        "escapes.py": "import yaml\nimport nested\n",
        "nested.py": "".join("    " * i + "if x:\n" for i in range(2000)) + "    " * 2000 + "pass\n",
    })  # fmt: skip
    assert names_of(tmp_path, "script", "run.py") == ["torch"]  # deep.py nests past CPython's parser
    (tmp_path / "escapes.py").write_text('"""\\d"""\nimport yaml\nimport nested\nimport after\n')
    assert names_of(tmp_path, "script", "escapes.py") == ["yaml"]  # nor nested.py (2,000 levels)
    assert capsys.readouterr() == ("", "")


def test_call_targets_and_modules_start_in_their_package_pytest_runs_its_own_start_up_first(tmp_path):
    write(tmp_path, {
        "pkg/__init__.py": "import six\n",
        "pkg/entry.py": "import timm\n",
        "tests/test_model.py": "import pytest_benchmark\n",
    })  # fmt: skip
    assert names_of(tmp_path, "module", "gbbot.child.launch", "--arguments", "[]", "pkg.entry:main") == ["six", "timm"]
    assert names_of(tmp_path, "module", "pkg.entry") == ["six", "timm"]
    assert names_of(tmp_path, "module", "pytest", "-p", "plugin", "tests/test_model.py") == []


def test_a_script_in_a_folder_finds_its_neighbours_and_the_checkout_shadows_installed_names(tmp_path):
    write(tmp_path, {
        "scripts/run.py": "import helpers.io\nimport tokenizers\nimport tests.common\nimport numpy\n",
        "scripts/helpers.py": "import yaml\n",
        "tests/common.py": "import scipy\n",
    })  # fmt: skip
    # `helpers` is scripts/helpers.py (helpers.io an attribute of it); `tests` is the checkout's
    assert names_of(tmp_path, "script", "scripts/run.py") == ["yaml", "tokenizers", "scipy", "numpy"]


def test_nothing_outside_the_checkout_is_read(tmp_path):
    outside = write(tmp_path / "elsewhere", {"secret.py": "import leaked\n"})
    repo = write(tmp_path / "repo", {"run.py": "import os\n"})
    (repo / "link.py").symlink_to(outside / "secret.py")
    assert names_of(repo, "script", "../elsewhere/secret.py") == []
    assert names_of(repo, "script", "link.py") == []
    write(repo, {"run.py": "import link\nimport torch\n"})  # a checkout name that leads out of it
    assert names_of(repo, "script", "run.py") == []


def test_a_chain_longer_than_the_bound_stops_there(tmp_path):
    count = MAX_FILES + 50
    write(tmp_path, {f"m{i}.py": f"import dep{i}\nimport m{i + 1}\n" for i in range(count)})
    assert names_of(tmp_path, "script", "m0.py") == [f"dep{i}" for i in range(MAX_FILES)]
