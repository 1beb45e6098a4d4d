"""The README an adopter reads first: short, in the order they need it, its tables true to
action.yml, its examples valid, its links alive."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

import gbbot
from gbbot.core.config import parse_config
from tests.conftest import ROOT
from tests.unit.test_workflows import run_actionlint, run_zizmor

README = ROOT / "README.md"
TOOL = ROOT / "tools" / "action_tables.py"
LINK = re.compile(r"!?\[[^\]]*\]\((?P<target>[^)\s]+)\)")
FENCE = re.compile(r"^```(?P<lang>\w*)\n(?P<body>.*?)^```", re.DOTALL | re.MULTILINE)


def text() -> str:
    return README.read_text(encoding="utf-8")


def blocks(lang: str) -> list[str]:
    return [m["body"] for m in FENCE.finditer(text()) if m["lang"] == lang]


def check_tables(readme: Path, action: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(TOOL), "--check", "--readme", str(readme), "--action", str(action)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_readme_is_under_200_lines_in_the_adopters_order():
    lines = text().splitlines()
    assert len(lines) < 200
    headings = [line for line in lines if line.startswith("## ")]
    assert headings == [
        "## On your pull requests",
        "## On your machine",
        "## Inputs",
        "## Outputs",
        "## What it costs",
        "## More",
        "## Develop gbbot",
    ]
    first_heading = lines.index(headings[0])
    pictures = [line for line in lines[:first_heading] if line.startswith("![")]
    assert [LINK.match(p)["target"] for p in pictures] == ["docs/img/comment.png", "docs/img/check-run.png"]


def test_the_readme_says_nothing_about_this_projects_own_machines_or_targets():
    lowered = text().lower()
    for phrase in ("target", "this project's machines", "2-core", "load average"):
        assert phrase not in lowered, phrase


def test_the_tables_list_every_input_and_output_of_action_yml():
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    rows = set(re.findall(r"^\| `([a-z-]+)` \|", text(), re.MULTILINE))
    assert set(action["inputs"]) | set(action["outputs"]) <= rows
    assert check_tables(README, ROOT / "action.yml").returncode == 0


def test_a_readme_behind_action_yml_is_caught_and_the_tool_brings_it_back(tmp_path):
    readme, action = tmp_path / "README.md", tmp_path / "action.yml"
    shutil.copy(README, readme)
    declared = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    declared["outputs"]["graphs"] = {"description": "Graphs compiled | all entrypoints together."}
    action.write_text(yaml.safe_dump(declared, sort_keys=False), encoding="utf-8")

    stale = check_tables(readme, action)
    assert stale.returncode == 1
    assert "the outputs table(s) differ from action.yml" in stale.stderr

    subprocess.run([sys.executable, str(TOOL), "--readme", str(readme), "--action", str(action)], check=True)
    assert "| `graphs` | Graphs compiled \\| all entrypoints together. |" in readme.read_text(encoding="utf-8")
    assert check_tables(readme, action).returncode == 0


def test_a_readme_without_the_markers_is_refused(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# no tables here\n")
    done = check_tables(readme, ROOT / "action.yml")
    assert done.returncode == 2 and "expected one" in done.stderr


def test_the_readmes_config_example_loads():
    [example] = [b for b in blocks("yaml") if b.startswith("version: 1")]
    config = parse_config(example)
    assert [e.name for e in config.entrypoints] == ["train-step", "forward", "model-tests", "gpt"]


def linted(workflow: str, tmp_path: Path) -> None:
    """actionlint and zizmor find nothing in `workflow`, placed where a repository keeps it."""
    path = tmp_path / ".github" / "workflows" / "gbbot.yml"
    path.parent.mkdir(parents=True)
    path.write_text(workflow)
    done = run_zizmor(path)
    assert done.returncode == 0, done.stdout + done.stderr
    done = run_actionlint(path)
    assert (done.returncode, done.stdout) == (0, ""), done.stdout + done.stderr


def test_the_readmes_workflow_passes_the_linters_and_uses_this_action(tmp_path):
    [workflow] = [b for b in blocks("yaml") if b.startswith("name: gbbot")]
    assert len(workflow.splitlines()) <= 15
    # pinned by the commit of the release the tag names (the release workflow pushes that tag)
    assert re.search(rf"uses: gbbot/gbbot@[0-9a-f]{{40}} # v{re.escape(gbbot.__version__)}$", workflow, re.MULTILINE)
    linted(workflow, tmp_path)
    # zizmor's own defaults too, which pin every action by commit, this one included
    done = run_zizmor(tmp_path / ".github" / "workflows" / "gbbot.yml", config=None)
    assert done.returncode == 0, done.stdout + done.stderr
    [job] = yaml.safe_load(workflow)["jobs"].values()
    assert job["timeout-minutes"] and yaml.safe_load(workflow)["concurrency"]["cancel-in-progress"] is True
    assert "git ls-remote https://github.com/gbbot/gbbot v" in text()  # where the pinned commit comes from


def test_the_readmes_workflow_checks_forks_and_gives_each_permission_its_reason():
    [workflow] = [b for b in blocks("yaml") if b.startswith("name: gbbot")]
    [job] = yaml.safe_load(workflow)["jobs"].values()
    assert "if" not in job  # fork PRs are checked too: read-only token, annotations and summary
    for permission in job["permissions"]:
        [line] = [line for line in text().splitlines() if line.startswith(f"- `{permission}: ")]
        assert " — " in line, line  # the reason, on the same line
    assert "fork-safe pair" in text()


def test_the_own_job_workflow_in_the_docs_runs_gbbot_action_with_declared_inputs(tmp_path):
    page = (ROOT / "docs" / "github.md").read_text(encoding="utf-8")
    [workflow] = [m["body"] for m in FENCE.finditer(page) if m["body"].startswith("name: gbbot")]
    document = yaml.safe_load(workflow)
    [job] = document["jobs"].values()
    [step] = [s for s in job["steps"] if s.get("run") == "gbbot action"]
    declared = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))["inputs"]
    given = {name.removeprefix("INPUT_").lower().replace("_", "-") for name in step["env"]}
    assert given <= set(declared) and {"token", "setup"} <= given
    assert any("pip install gbbot" in s.get("run", "") for s in job["steps"])
    linted(workflow, tmp_path)


def test_the_readmes_links_into_the_repository_lead_to_files():
    """The pictures under docs/img/ included: tools/screenshots.py makes them, and they are committed."""
    targets = [m["target"] for m in LINK.finditer(text()) if "://" not in m["target"]]
    assert len(targets) >= 10 and "docs/img/comment.png" in targets
    missing = [t for t in targets if not (ROOT / t.split("#")[0]).exists()]
    assert missing == []


def test_every_docs_page_links_only_to_what_exists():
    for page in sorted((ROOT / "docs").glob("*.md")):
        for match in LINK.finditer(page.read_text(encoding="utf-8")):
            target = match["target"].split("#")[0]
            if target and "://" not in target:
                assert (page.parent / target).exists(), f"{page.name}: {match['target']}"


def test_hidden_and_revealed_are_defined_where_the_readme_first_says_them():
    first = {word: text().lower().index(word) for word in ("hidden", "revealed", "reveals")}
    for word in ("hidden", "revealed"):
        sentence = text()[: first[word] + 200].replace("\n", " ")
        assert f"**{word}**" in sentence and ("run eagerly" in sentence or "ran eagerly" in sentence), word
    assert first["revealed"] < first["reveals"]  # the permissions' "adds or reveals" comes after


def test_the_readme_says_who_may_run_gb_fix_and_what_the_audit_does():
    more = text()[text().index("## More") :].replace("\n  ", " ")
    gb_fix = next(line for line in more.splitlines() if "/gb-fix" in line)
    assert "`write` role" in gb_fix and "pushes to the PR's branch one commit" in gb_fix
    audit = next(line for line in more.splitlines() if "nightly audit" in line)
    assert "every entrypoint on the default branch" in audit and "03:17 UTC" in audit
    assert "`gbbot-data` branch" in audit and "tracking issue" in audit
    nightly = (ROOT / ".github" / "workflows" / "gbbot-nightly.yml").read_text(encoding="utf-8")
    assert 'cron: "17 3 * * *"' in nightly and "branch: gbbot-data" in (ROOT / "docs" / "audit.md").read_text()


def test_the_first_command_installs_the_demo_not_the_development_tools():
    [first, *_] = [line for line in blocks("bash")[-1].splitlines() if line and not line.startswith("#")]
    assert "requirements-dev.txt" not in first and "pip install -e ." in first
    assert "pip install torch==" in first and "--index-url https://download.pytorch.org/whl/cpu" in first
    assert "CUDA build of several GB" in text()


LOG_WORDING = re.compile(r"\b[Bb]efore\b[^.]{0,120}\bnow\b|\b(it|gbbot) used to\b|\bpreviously\b")
# wording of a commit message, not of a page a user reads: which commit changed what, gbbot's internals
COMMIT_WORDING = {"fixes.md": "one no trial ran", "development.md": "consequence is folded into it"}


def test_the_docs_describe_the_product_not_its_history():
    """Comparisons in time ("before 14.0 s … now 11.6 s") belong in commit messages."""
    for page in [README, *sorted((ROOT / "docs").glob("*.md"))]:
        for sentence in re.split(r"(?<=[.;:])\s", page.read_text(encoding="utf-8").replace("\n", " ")):
            assert not LOG_WORDING.search(sentence), f"{page.name}: {sentence[:160]}"
    for name, words in COMMIT_WORDING.items():
        assert words not in (ROOT / "docs" / name).read_text(encoding="utf-8")
