"""`gbbot fix --commit` in a real git repository with real torch: one commit with exactly the
verified patches, its message listing them; the rest of the tree (staged or not) stays as it was."""

from __future__ import annotations

from gbbot.main import main
from tests.conftest import git
from tests.e2e.fix.test_fix_safety import make_repo, two_module_repo


def test_commit_holds_only_the_patched_files_and_names_each_fix(tmp_path, capsys):
    repo = two_module_repo(tmp_path)
    (repo / "notes.txt").write_text("draft\n")
    git(repo, "add", "notes.txt")  # staged by the user, not gbbot's to commit
    (repo / ".gbbot.yml").write_text((repo / ".gbbot.yml").read_text() + "# local tweak\n")
    args = ["fix", "--root", str(repo), "--commit", "--author", "Fix Bot <bot@example.com>", "--quiet"]
    assert main(args) == 0
    assert "gbbot fix: committed " in capsys.readouterr().err
    assert git(repo, "rev-list", "--count", "HEAD") == "2"
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == ["a.py", "b.py"]
    subject, _, *body = git(repo, "log", "-1", "--format=%B").splitlines()
    assert subject == "gbbot: fix 2 graph breaks"
    assert [line.split(": ")[0] for line in body[:2]] == ["- GB0059 a.py:4 (print)", "- GB0059 b.py:4 (print)"]
    assert body[-1].startswith("Graph breaks 2 → 0; graphs ")
    assert (
        git(repo, "log", "-1", "--format=%an <%ae> / %cn <%ce>")
        == "Fix Bot <bot@example.com> / Fix Bot <bot@example.com>"
    )
    assert git(repo, "diff", "--name-only") == ".gbbot.yml"  # still modified, not committed
    assert git(repo, "diff", "--cached", "--name-only") == "notes.txt"  # still staged, not committed


def test_nothing_verified_means_no_commit(tmp_path, capsys):
    module = "import torch\n\ndef run():\n    return torch.compile(lambda x: x * 2)(torch.ones(2))\n"
    repo = make_repo(tmp_path / "repo", {"clean.py": module}, ["{name: clean, call: 'clean:run', timeout: 120}"])
    assert main(["fix", "--root", str(repo), "--commit", "--quiet"]) == 0
    assert "no verified patch was written; nothing committed" in capsys.readouterr().err
    assert git(repo, "rev-list", "--count", "HEAD") == "1"
