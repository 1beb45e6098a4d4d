"""A repository whose entrypoint imports a package only its requirements.txt names, through the
action: the config's `setup:` installs it (here from a wheel in the repository, so nothing is
downloaded), both sides of the diff import it and their breaks are found; a requirement that
cannot be installed stops the step with "setup failed" and pip's own error. The PR touches
requirements.txt, so each side of the diff also runs in an environment of its own files.

The job's Python is a virtual environment of its own that sees this test run's packages (gbbot,
torch) through a .pth file, so what setup installs lands there and nowhere else. The own-job route
(the repository's CI built the environment, then `gbbot action`) is the same process with
`setup: false`.
"""

from __future__ import annotations

import json
import subprocess
import sysconfig
from pathlib import Path

import pytest

from tests.action_run import ActionRun, pull_request_event, run_action
from tests.conftest import git
from tests.github_standin import ACTIONS_TOKEN
from tests.github_standin.fixtures import checked_standin
from tests.local_package import CONFIG, MODEL, tinydep_wheel, venv_with_pip
from tests.local_package import REQUIREMENTS as TINYDEP_REQUIREMENTS

PR = 7
REQUIREMENTS = TINYDEP_REQUIREMENTS.format(version="1.0")
# The PR: a second break, in the repository's own callee.
HEAD_MODEL = MODEL.replace("    return x + 1\n", "    torch._dynamo.graph_break()\n    return x + 1\n")


def job_python(where: Path) -> str:
    """A fresh virtual environment (with pip) that also sees this run's site-packages."""
    python = venv_with_pip(where)
    inner = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    outer = sysconfig.get_paths()["purelib"]
    (Path(inner) / "_outer.pth").write_text(f"import site; site.addsitedir({outer!r})\n")
    return str(python)


def imports_tinydep(python: str) -> bool:
    done = subprocess.run([python, "-c", "import tinydep"], capture_output=True)
    return done.returncode == 0


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> tuple[Path, str, str]:
    """main has the model and its requirement; the PR adds a break and touches requirements.txt."""
    path = tmp_path_factory.mktemp("setup") / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / ".gbbot.yml").write_text(CONFIG)
    (path / "requirements.txt").write_text(REQUIREMENTS)
    (path / "model.py").write_text(MODEL)
    tinydep_wheel(path / "vendor")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "base")
    base = git(path, "rev-parse", "HEAD")
    (path / "model.py").write_text(HEAD_MODEL)
    (path / "requirements.txt").write_text("# pinned for the PR\n" + REQUIREMENTS)
    git(path, "commit", "-q", "-am", "head: a graph break in block")
    return path, base, git(path, "rev-parse", "HEAD")


def run_pr(repo_path: Path, base: str, head: str, scratch: Path, python: str, **inputs: str):
    with checked_standin() as standin:
        standin.add_pull(PR, head)
        event = pull_request_event(PR, head, base)
        extra = {"GITHUB_TOKEN": "ghs_canary_never_handed_on"}
        done = run_action(repo_path, scratch, standin, "pull_request", event, ACTIONS_TOKEN, extra, python, **inputs)
        return done, standin.comments(PR)


def breaks_by_state(repo_path: Path) -> dict[str, list[str]]:
    report = json.loads((repo_path / "gbbot-report" / "report.json").read_text())
    found = [b for e in report["entrypoints"] for b in e["breaks"]]
    by_print = {b["fingerprint"]: (b["origin"], b["file"], b["code"]) for b in found}
    for entry in report["entrypoints"]:
        assert entry["status"] == "ok", entry["error"]
    diff = report["diff"]
    assert all(not e.get("no_baseline") for e in diff["entrypoints"]), diff["entrypoints"]
    return {state: sorted(str(by_print.get(f, f)) for f in diff[state]) for state in ("new", "persisting", "fixed")}


@pytest.fixture(scope="module")
def docker_route(repo, tmp_path_factory) -> tuple[ActionRun, list, str]:
    repo_path, base, head = repo
    python = job_python(tmp_path_factory.mktemp("job") / "venv")
    assert not imports_tinydep(python)  # only the setup step can make the import work
    done, comments = run_pr(repo_path, base, head, tmp_path_factory.mktemp("scratch"), python, jobs="1")
    return done, comments, python


def test_setup_installs_what_requirements_txt_names_and_both_sides_find_their_breaks(docker_route, repo):
    done, _, python = docker_route
    repo_path, _, _ = repo
    assert done.code == 1, done.stderr  # fail_on: new, and the PR adds a break
    states = breaks_by_state(repo_path)
    # new: the PR's own break; persisting: the package's print, at the repository's call into it
    assert states["new"] == [str(("user", "model.py", "torch._dynamo.graph_break()"))], states
    assert states["persisting"] == [str(("third_party", "model.py", "x = tinydep.scale(x)"))], states
    assert imports_tinydep(python)  # installed in the job's environment, where entrypoints run


def test_the_setup_log_is_folded_and_the_token_stays_out(docker_route):
    done, _, _ = docker_route
    lines = done.stdout.splitlines()
    assert "::group::gbbot setup 1/1: pip install -r requirements.txt" in lines
    assert lines.index("::endgroup::") > lines.index("::group::gbbot setup 1/1: pip install -r requirements.txt")
    assert any("tinydep-1.0" in line for line in lines)  # pip's own output, inside the group
    assert "gbbot: setup step 1 done in" in done.stdout
    assert "ghs_canary_never_handed_on" not in done.stdout + done.stderr


def test_a_pr_that_touches_requirements_txt_runs_each_side_in_its_own_environment(docker_route, repo):
    """The PR edits requirements.txt: the base's environment is built from the base's copy, the
    head's from the head's; the versions are the same, so the comment has no package line and no
    warning, and the report says how the sides ran."""
    done, comments, _ = docker_route
    repo_path, _, _ = repo
    (comment,) = comments
    assert "Both sides ran with the head's packages" not in comment.body
    assert " → " not in comment.body.split("<sub>")[0]  # no package moved: the headline is the PR's
    notes = json.loads((repo_path / "gbbot-report" / "report.json").read_text())["diff"]["notes"]
    assert (
        "Each side ran in an environment built from its own files (`requirements.txt` changed); their "
        "packages are the same." in notes
    )
    assert "gets an environment of its own" in done.stderr + done.stdout


def test_a_requirement_that_cannot_be_installed_is_setup_failed_with_pips_error(tmp_path):
    repo_path = tmp_path / "repo"
    repo_path.mkdir()
    git(repo_path, "init", "-q", "-b", "main")
    (repo_path / ".gbbot.yml").write_text(CONFIG)
    (repo_path / "requirements.txt").write_text(REQUIREMENTS.replace("tinydep==1.0", "tinydep==9.9"))
    (repo_path / "model.py").write_text(MODEL)
    tinydep_wheel(repo_path / "vendor")
    git(repo_path, "add", "-A")
    git(repo_path, "commit", "-q", "-m", "base")
    sha = git(repo_path, "rev-parse", "HEAD")
    python = job_python(tmp_path / "venv")
    done, comments = run_pr(repo_path, sha, sha, tmp_path / "scratch", python)
    assert done.code == 1
    assert "gbbot: error: setup failed: step 1 of 1, `pip install -r requirements.txt`, exited 1" in done.stderr
    assert "No matching distribution found for tinydep==9.9" in done.stderr
    assert "no entrypoint ran" in done.stderr
    assert not (repo_path / "gbbot-report" / "report.json").exists()
    assert comments == []  # no comment listing one failed entrypoint per import


def test_the_own_job_route_runs_gbbot_action_in_the_environment_the_job_built(repo, tmp_path):
    """The repository's CI installed its requirements itself, then ran `gbbot action` with
    `setup: false`: the same diff, the same comment, and no setup step in the log."""
    repo_path, base, head = repo
    python = job_python(tmp_path / "venv")
    pip = [python, "-m", "pip", "install", "-q", "-r", "requirements.txt"]
    subprocess.run(pip, cwd=repo_path, check=True, capture_output=True, timeout=300)
    done, comments = run_pr(repo_path, base, head, tmp_path / "scratch", python, setup="false")
    assert done.code == 1, done.stderr
    assert "gbbot setup" not in done.stdout + done.stderr
    states = breaks_by_state(repo_path)
    assert len(states["new"]) == 1 and len(states["persisting"]) == 1, states
    (comment,) = comments
    assert "New graph breaks" in comment.body
