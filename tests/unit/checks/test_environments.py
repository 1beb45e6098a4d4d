"""Each side's environment of a dependency-bump diff: an overlay venv that `setup:` installs into
(real pip, a wheel the repository vendors), kept in the cache under a key of what built it, and
the versions its code would import read from what was installed."""

from __future__ import annotations

import fcntl
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from gbbot.checks import environments
from gbbot.checks import setup as setup_steps
from gbbot.core.config import parse_config
from tests.local_package import tinydep_wheel

STEPS = ("pip install -r requirements.txt",)


def config_with(*steps: str):
    listed = "".join(f"  - {json.dumps(step)}\n" for step in steps)
    return parse_config(f"version: 1\nentrypoints:\n  - {{name: a, run: 'true'}}\nsetup:\n{listed}", ".gbbot.yml")


def checkout(where: Path, version: str, nested: bool = False) -> Path:
    """A side's checkout: requirements.txt pins tinydep (through requirements/base.txt when `nested`)."""
    where.mkdir(parents=True)
    tinydep_wheel(where / "vendor", version)
    pins = f"--no-index\n--find-links vendor\ntinydep=={version}\n"
    if nested:
        (where / "requirements").mkdir()
        (where / "requirements" / "base.txt").write_text(pins)
        pins = "-r requirements/base.txt\n"
    (where / "requirements.txt").write_text(pins)
    return where


def test_the_key_is_what_built_it_wherever_the_checkout_is(tmp_path):
    base, head = checkout(tmp_path / "base", "1.0", nested=True), checkout(tmp_path / "head", "1.0", nested=True)
    assert environments.key(base, STEPS) == environments.key(head, STEPS)  # same files, another worktree
    (head / "requirements" / "base.txt").write_text("tinydep==2.0\n")  # a file the named one names
    assert environments.key(base, STEPS) != environments.key(head, STEPS)
    assert environments.key(base, STEPS) != environments.key(base, (*STEPS, "pip install einops"))


def test_steps_that_install_the_checkout_itself_are_not_kept():
    assert environments.installs_repository(["pip install -e ."])
    assert environments.installs_repository(["pip install './[dev]'"])
    assert not environments.installs_repository(["pip install -r requirements.txt", "pip install einops"])


def test_setup_installs_into_each_sides_environment_which_the_cache_keeps(tmp_path):
    """Two pip installs (the base's 1.0, the head's 2.0), then the base's again: from the cache."""
    cache, config, log = tmp_path / "cache", config_with(*STEPS), setup_steps.Log({}, io.StringIO())
    base_tree = checkout(tmp_path / "base", "1.0")
    with (
        environments.ready(base_tree, config, cache, log) as base,
        environments.ready(checkout(tmp_path / "head", "2.0"), config, cache, log) as head,
    ):
        assert base.built and head.built and environments.differences(base, head) == (("tinydep", "1.0", "2.0"),)
        assert base.version("pip") == head.version("pip")  # gbbot's, seen by both
        found = subprocess.run([base.venv / "bin" / "python", "-c", "import tinydep, pip; print(tinydep.__file__)"],
                               capture_output=True, text=True, check=True).stdout  # fmt: skip
        assert found.startswith(str(base.venv))  # its own site-packages first, gbbot's pip after it
    # gbbot's own environment did not get it
    assert subprocess.run([sys.executable, "-c", "import tinydep"], capture_output=True).returncode != 0
    with environments.ready(base_tree, config, cache, log) as again:
        assert not again.built and again.venv == base.venv and again.version("tinydep") == "1.0"
    assert len(list((cache / environments.DIRECTORY).glob("*/" + environments.COMPLETE))) == 2


def test_the_cache_keeps_the_most_recently_used_and_any_another_run_is_using(tmp_path):
    """Six environments kept before, from oldest to newest, the oldest in use by another run: taking
    one more (already built) leaves the three newest, the one in use, and the one taken."""
    cache, config = tmp_path / "cache", config_with(*STEPS)
    tree = checkout(tmp_path / "tree", "1.0")
    shared = cache / environments.DIRECTORY
    taken = shared / environments.key(tree, config.setup)
    old = [shared / f"old{n}" for n in range(6)]
    for n, path in enumerate([*old, taken]):
        path.mkdir(parents=True)
        (path / environments.COMPLETE).touch()
        os.utime(path / environments.COMPLETE, (1000 + n, 1000 + n))
    with old[0].with_suffix(".lock").open("a") as other:
        fcntl.flock(other, fcntl.LOCK_SH)
        with environments.ready(tree, config, cache) as found:
            assert not found.built and found.venv == taken
        kept = {p.name for p in shared.iterdir() if p.is_dir()}
    assert kept == {"old0", "old3", "old4", "old5", taken.name}
