"""What an entrypoint is expected to import, read from the checkout's source: the names the warm
server may import for the children after it, one checkout import deeper at a time."""

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


def test_a_script_gives_what_it_and_the_checkout_modules_it_imports_import_from_elsewhere(tmp_path):
    write(tmp_path, {
        "train.py": "import torch\nfrom model import build\n\ndef main():\n    import datasets\n",
        "model.py": "from transformers import BertModel, BertConfig\nfrom layers.attention import Attention\n",
        "layers/__init__.py": "import einops\n",
        "layers/attention.py": "from . import norms\nfrom .norms import rms\nimport flash_attn.ops\n",
        "layers/norms.py": "import apex\n",
    })  # fmt: skip
    assert names_of(tmp_path, "script", "train.py") == [
        "torch", "datasets", "transformers", "transformers.BertModel", "transformers.BertConfig",
        "einops", "flash_attn.ops", "apex",
    ]  # fmt: skip  (the checkout's own model, layers, norms are read, never named)


def test_a_script_in_a_folder_finds_its_neighbours_and_the_checkout_shadows_installed_names(tmp_path):
    write(tmp_path, {
        "scripts/run.py": "import helpers.io\nimport tokenizers\nimport tests.common\n",
        "scripts/helpers.py": "import yaml\n",
        "tests/common.py": "import numpy\n",
    })  # fmt: skip
    # `helpers` is scripts/helpers.py (helpers.io an attribute of it); `tests` is the checkout's
    assert names_of(tmp_path, "script", "scripts/run.py") == ["tokenizers", "yaml", "numpy"]


def test_type_checking_imports_and_files_that_do_not_parse_give_nothing(tmp_path):
    write(tmp_path, {
        "run.py": """\
            from typing import TYPE_CHECKING
            import broken
            if TYPE_CHECKING:
                import mypy_only
            else:
                import at_runtime
        """,
        "broken.py": "import never_seen\ndef (:\n",
    })  # fmt: skip
    assert names_of(tmp_path, "script", "run.py") == ["typing", "typing.TYPE_CHECKING", "at_runtime"]


def test_call_targets_modules_and_pytest_files_are_where_entrypoints_start(tmp_path):
    write(tmp_path, {
        "pkg/__init__.py": "import six\n",
        "pkg/entry.py": "import timm\n",
        "tests/test_model.py": "import pytest_benchmark\n",
    })  # fmt: skip
    assert names_of(tmp_path, "module", "gbbot.child.launch", "--arguments", "[]", "pkg.entry:main") == ["six", "timm"]
    assert names_of(tmp_path, "module", "pkg.entry") == ["six", "timm"]
    assert names_of(tmp_path, "module", "pytest", "-p", "plugin", "tests/test_model.py") == ["pytest_benchmark"]


def test_nothing_outside_the_checkout_is_read(tmp_path):
    outside = write(tmp_path / "elsewhere", {"secret.py": "import leaked\n"})
    repo = write(tmp_path / "repo", {"run.py": "import os\n"})
    (repo / "link.py").symlink_to(outside / "secret.py")
    assert names_of(repo, "script", "../elsewhere/secret.py") == []
    assert names_of(repo, "script", "link.py") == []
    write(repo, {"run.py": "import link\n"})  # a checkout module that is a link out of it
    assert names_of(repo, "script", "run.py") == []


def test_a_chain_longer_than_the_bound_stops_there(tmp_path):
    count = MAX_FILES + 50
    write(tmp_path, {f"m{i}.py": f"import m{i + 1}\nimport dep{i}\n" for i in range(count)})
    found = names_of(tmp_path, "script", "m0.py")
    assert found == [f"dep{i}" for i in range(MAX_FILES)]
