"""A pull request pays only for the entrypoints it reaches: with the merge-base's report and its
runs' reads in the cache, the head runs only the entrypoints whose base runs read something the
change touches, and takes the base's result for the others (said per entrypoint, and why). What
lies outside the record (what is installed, uncommitted edits, a base kept without reads) runs
everything, and says so.

One repository for the module: three small models, one module each, two of them sharing a
helper, each with its own old break or none; the cache is filled once, by a diff on main itself
(a push to the base branch), and each test is a pull request branched from main."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gbbot import api
from gbbot.core.config import load_config
from gbbot.main import main
from tests.conftest import git

FILES = {
    "README.md": "# three models\n",
    "requirements.txt": "torch\n",
    "models/__init__.py": "",
    "models/shared.py": "import torch\n\n\ndef norm(x):\n    return torch.nn.functional.layer_norm(x, x.shape[-1:])\n",
    "models/mlp.py": (
        "import torch\n\nfrom models.shared import norm\n\n\nclass MLP(torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.fc = torch.nn.Linear(8, 8)\n\n"
        "    def forward(self, x):\n        x = norm(self.fc(x))\n"
        '        print("mlp: normed")  # an old break\n        return x.relu()\n'
    ),
    "models/conv.py": (
        "import torch\n\nfrom models.shared import norm\n\n\nclass Conv(torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.conv = torch.nn.Conv1d(2, 2, 3, padding=1)\n\n"
        "    def forward(self, x):\n        y = self.conv(x)\n        return norm(y + x)\n"
    ),
    "models/attn.py": (
        "import torch\n\n\nclass Attn(torch.nn.Module):\n"
        "    def __init__(self, heads):\n        super().__init__()\n"
        "        self.attn = torch.nn.MultiheadAttention(8, heads, batch_first=True)\n\n"
        "    def forward(self, x):\n        out, _ = self.attn(x, x, x)\n        return out.sum(-1)\n"
    ),
    "configs/attn.json": '{"heads": 2}\n',
    "run_mlp.py": "import torch\nfrom models.mlp import MLP\n\ntorch.compile(MLP())(torch.ones(2, 8))\n",
    "run_conv.py": "import torch\nfrom models.conv import Conv\n\ntorch.compile(Conv())(torch.ones(1, 2, 8))\n",
    "run_attn.py": (
        "import json\n\nimport torch\nfrom models.attn import Attn\n\n"
        "try:\n    heads = json.load(open('configs/attn.json'))['heads']\nexcept FileNotFoundError:\n    heads = 1\n"
        "torch.compile(Attn(heads))(torch.ones(1, 3, 8))\n"
    ),
}
NAMES = ("mlp", "conv", "attn")
CONFIG = "version: 1\nentrypoints:\n" + "".join(f"  - {{name: {n}, run: python run_{n}.py}}\n" for n in NAMES)


@dataclass(frozen=True)
class Diffed:
    report: dict
    log: str  # what the terminal showed
    markdown: str

    @property
    def diff(self) -> dict:
        return self.report["diff"]

    def taken(self) -> dict[str, str]:
        """Entrypoint → why its result is the base's (not run on the head)."""
        return {e["name"]: e["from_base"] for e in self.report["entrypoints"] if "from_base" in e}

    def by_entrypoint(self) -> dict[str, dict]:
        return {e["name"]: e for e in self.diff["entrypoints"]}


@dataclass(frozen=True)
class Project:
    repo: Path
    cache: Path
    filled: Diffed  # the diff on main that filled the cache

    def diff(self, capsys, cache: Path | None = None) -> Diffed:
        out, md = self.repo.parent / "report.json", self.repo.parent / "report.md"
        args = ["diff", "--base", "main", "--root", str(self.repo), "--cache", str(cache or self.cache)]
        assert main([*args, "--json", str(out), "--markdown", str(md), "--fail-on", "none"]) == 0
        said = capsys.readouterr()  # the terminal's report on stdout, the log on stderr
        return Diffed(json.loads(out.read_text()), said.out + said.err, md.read_text())

    def pr(self, capsys, edits: dict[str, str | None], cache: Path | None = None) -> Diffed:
        """A pull request branched from main that makes `edits` (None removes the file)."""
        git(self.repo, "checkout", "-qb", f"pr-{len(git(self.repo, 'branch').splitlines())}", "main")
        try:
            for path, text in edits.items():
                if text is None:
                    (self.repo / path).unlink()
                else:
                    (self.repo / path).write_text(text)
            git(self.repo, "add", "-A")
            git(self.repo, "commit", "-qm", "pr")
            return self.diff(capsys, cache)
        finally:
            git(self.repo, "checkout", "-qf", "main")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    repo = tmp_path_factory.mktemp("incremental") / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for path, text in FILES.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    (repo / ".gbbot.yml").write_text(CONFIG)
    (repo / ".gitignore").write_text("__pycache__/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    cache = repo.parent / "cache"
    out, md = repo.parent / "fill.json", repo.parent / "fill.md"
    args = ["diff", "--base", "main", "--root", str(repo), "--cache", str(cache), "--json", str(out)]
    assert main([*args, "--markdown", str(md), "--fail-on", "none"]) == 0
    filled = Diffed(json.loads(out.read_text()), "", md.read_text())
    yield Project(repo, cache, filled)


def test_a_diff_on_the_base_branch_keeps_its_run_and_what_each_entrypoint_read(project):
    (kept_report,) = (p for p in project.cache.rglob("*.json") if not p.name.endswith(".reads.json"))
    assert json.loads(kept_report.read_text())["commit"] == git(project.repo, "rev-parse", "main")
    kept = json.loads(next(project.cache.rglob("*.reads.json")).read_text())
    assert set(kept["entrypoints"]) == set(NAMES)
    assert "/models/shared.py" in kept["entrypoints"]["mlp"]["files"]
    assert "/configs/attn.json" in kept["entrypoints"]["attn"]["files"]
    assert not any("site-packages" in f for r in kept["entrypoints"].values() for f in r["files"])


def test_a_docs_only_pr_runs_nothing_and_says_every_result_is_the_bases(project, capsys):
    done = project.pr(capsys, {"README.md": "# three models\n\nNow documented.\n"})
    assert done.taken() == {name: "it read nothing this change touches" for name in NAMES}
    assert done.diff["baseline_source"] == "cache" and done.diff["new"] == [] and done.diff["fixed"] == []
    assert done.diff["persisting"] == project.filled.diff["persisting"] != []  # mlp's old print
    assert "3 of 3 entrypoints not reached by this change: results from the base" in done.markdown
    assert "mlp: not run, the base's result: it read nothing this change touches" in done.log


def test_a_change_to_one_models_module_runs_that_one_and_the_others_persist(project, capsys):
    conv = FILES["models/conv.py"].replace("y = self.conv(x)", "y = self.conv(x)  # the same conv")
    done = project.pr(capsys, {"models/conv.py": conv})
    assert set(done.taken()) == {"mlp", "attn"}  # conv ran on the head; the base is the cache's
    assert "the head runs `conv`: it read `models/conv.py`, which the change touches" in done.log
    entries = done.by_entrypoint()
    assert entries["mlp"]["persisting"] and not entries["mlp"]["new"] and not entries["mlp"]["fixed"]
    assert done.diff["new"] == [] and done.diff["fixed"] == []
    assert any(note.startswith("2 of 3 entrypoints not reached by this change") for note in done.diff["notes"])
    assert "2 of 3 entrypoints not reached by this change: results from the base" in done.markdown


def test_a_print_added_to_one_models_forward_is_exactly_the_new_break_and_nothing_is_fixed(project, capsys):
    conv = FILES["models/conv.py"].replace("y = self.conv(x)\n", 'y = self.conv(x)\n        print("conv: y")\n')
    done = project.pr(capsys, {"models/conv.py": conv})
    assert set(done.taken()) == {"mlp", "attn"}
    new = [b for e in done.report["entrypoints"] for b in e["breaks"] if b["fingerprint"] in done.diff["new"]]
    assert [(b["file"], b["code"].strip()) for b in new] == [("models/conv.py", 'print("conv: y")')]
    assert done.diff["fixed"] == [] and done.by_entrypoint()["mlp"]["persisting"]


def test_a_change_to_the_shared_helper_runs_every_model_that_uses_it(project, capsys):
    shared = FILES["models/shared.py"].replace("return", "# normalised over the last dimension\n    return")
    done = project.pr(capsys, {"models/shared.py": shared})
    assert set(done.taken()) == {"attn"}
    assert done.diff["new"] == [] and done.diff["fixed"] == []


def test_an_entrypoint_that_read_a_file_the_pr_deletes_runs(project, capsys):
    done = project.pr(capsys, {"configs/attn.json": None})
    assert set(done.taken()) == {"mlp", "conv"}
    assert "the head runs `attn`: it read `configs/attn.json`, which the change touches" in done.log


def test_a_requirements_change_runs_everything_and_says_why(project, capsys):
    done = project.pr(capsys, {"requirements.txt": "torch\nnumpy\n"})
    assert done.taken() == {}
    why = "The head ran every entrypoint: the change touches `requirements.txt`, which says what is installed."
    assert why in done.diff["notes"]


def test_a_dirty_tree_runs_everything(project, capsys):
    (project.repo / "README.md").write_text("# three models, being edited\n")
    try:
        done = project.diff(capsys)
    finally:
        git(project.repo, "checkout", "-q", "--", "README.md")
    assert done.taken() == {}
    assert "The head ran every entrypoint: the tree has uncommitted changes." in done.diff["notes"]


def test_a_cached_base_without_reads_runs_everything(project, capsys, tmp_path):
    older = tmp_path / "older-cache"  # as an older gbbot, or a base run in a container, left it
    shutil.copytree(project.cache, older)
    for kept in older.rglob("*.reads.json"):
        kept.unlink()
    done = project.pr(capsys, {"README.md": "# three models\n\nNow documented.\n"}, cache=older)
    assert done.taken() == {} and done.diff["baseline_source"] == "cache"
    assert "The head ran every entrypoint: the cached base kept no record of what its runs read." in done.diff["notes"]


def test_a_check_on_the_base_branch_keeps_the_base_for_the_prs_that_follow(project, capsys, tmp_path):
    """What the action does on a push: its check is the next pull requests' base."""
    config = load_config(project.repo / ".gbbot.yml")
    pushed = tmp_path / "pushed-cache"
    found = api.check_and_keep(project.repo, config, api.CheckOptions(), pushed)
    assert found.commit == git(project.repo, "rev-parse", "main") and len(list(pushed.rglob("*.reads.json"))) == 1
    done = project.pr(capsys, {"README.md": "# three models\n\nDocumented after a push.\n"}, cache=pushed)
    assert set(done.taken()) == set(NAMES) and done.diff["baseline_source"] == "cache"
    (project.repo / "README.md").write_text("# uncommitted\n")  # a dirty tree is no commit's base
    try:
        api.check_and_keep(project.repo, config, api.CheckOptions(only=("attn",)), tmp_path / "dirty-cache")
    finally:
        git(project.repo, "checkout", "-q", "--", "README.md")
    assert not (tmp_path / "dirty-cache").exists()
