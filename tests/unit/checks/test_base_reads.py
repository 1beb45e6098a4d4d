"""What a base's runs read, kept beside its cached report (gbbot/checks/baseline.py): only what lies
in the checkout, as paths below its top level, read back within bounds."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

from gbbot.analysis import reads
from gbbot.analysis.report import new_report
from gbbot.checks import baseline
from gbbot.core.model import EntrypointReport, Mode, Reads, Status

TREE = "/tmp/gbbot-base-1234"  # the base's temporary checkout
SEEN = Reads(
    files=frozenset({f"{TREE}/train.py", f"{TREE}/models/net.py", "/usr/lib/python3.11/json/__init__.py"}),
    directories=frozenset({f"{TREE}/data"}),
    searched={TREE: frozenset({"models", "extras"}), "/usr/lib/python3.11": frozenset({"json"})},
    absent=frozenset({f"{TREE}/local_settings.py"}),
)


def test_a_kept_record_names_only_the_checkout_below_its_top_level():
    kept = reads.rooted(SEEN, (TREE,))
    assert kept.files == {"/train.py", "/models/net.py"}  # the interpreter's files are the same on both sides
    assert kept.directories == {"/data"} and kept.absent == {"/local_settings.py"}
    assert kept.searched == {"/": {"models", "extras"}}
    # read as rooted paths, the same decision as in the checkout itself
    change = reads.Changes.of(["train.py", "models/net.py"], [("A", "local_settings.py")], [])
    assert reads.why_rerun(kept, change, reads.ROOTED) == reads.why_rerun(SEEN, change, (TREE,))
    assert "local_settings.py" in reads.why_rerun(kept, change, reads.ROOTED)


def cache_key() -> baseline.CacheKey:
    expected = baseline.Expected("a" * 40, "c0ffee", "2.13.0", Mode.FAST, ("train", "serve"))
    key = baseline.CacheKey.for_run(expected)
    assert key is not None
    return key


BASE = new_report([EntrypointReport("train", Status.OK, 0, 1.0, 1, 0, 0, ())], Mode.FAST, "2.13.0", "a" * 40, "c0ffee")


def test_the_cache_keeps_the_reads_beside_the_report_and_reads_them_back(tmp_path):
    cache, key = baseline.Cache(tmp_path), cache_key()
    kept = baseline.BaseReads.of({"train": SEEN, "serve": None}, Path(TREE))
    cache.store(key, BASE, kept)
    assert cache.load_reads(key) == kept and set(kept.entrypoints) == {"train"}  # serve recorded nothing
    cache.store(key, BASE)  # a base run without records replaces the older record too
    assert cache.load_reads(key) is None


def test_a_damaged_or_forged_record_is_no_record(tmp_path):
    cache, key = baseline.Cache(tmp_path), cache_key()
    cache.store(key, BASE, baseline.BaseReads.of({"train": SEEN}, Path(TREE)))
    path = baseline.reads_path(key.path(tmp_path))
    for text in ('{"python": "3.11", "entrypoints": {"train": {"files": ["relative.py"]}}}', "[[[[[[[[1]]]]]]]]", "{"):
        path.write_text(text)
        assert cache.load_reads(key) is None
    assert baseline.BaseReads.of({"train": None}, Path(TREE)) is None


def test_what_the_changes_code_wrote_into_the_cache_is_removed_and_nothing_else(tmp_path):
    """The cache as it was before any code of the change ran is what a later run may read
    (gbbot/checks/baseline.py `untouched`): a report rewritten, a forged base commit, an
    environment with a file added are removed whole; what nobody touched stays."""
    cache, key = baseline.Cache(tmp_path / "cache"), cache_key()
    cache.store(key, BASE, baseline.BaseReads.of({"train": SEEN}, Path(TREE)))
    other = baseline.CacheKey("b" * 40, "c0ffee", "2.13.0", Mode.FAST, ("train",))
    cache.store(other, BASE)
    for name in ("base-env", "other-env"):
        (cache.directory / "environments" / name / "lib").mkdir(parents=True)
        (cache.directory / "environments" / f"{name}.lock").write_text("")
    said: list[str] = []
    with baseline.untouched(cache.directory, said.append):
        key.path(cache.directory).write_text("{}")  # the report gbbot kept, forged in place
        forged = baseline.CacheKey("c" * 40, "c0ffee", "2.13.0", Mode.FAST, ("train",))
        cache.store(forged, BASE)  # a base commit no run of gbbot's wrote
        (cache.directory / "environments" / "base-env" / "lib" / "poison.pth").write_text("import os\n")
    left = sorted(p.relative_to(cache.directory).as_posix() for p in cache.directory.rglob("*"))
    assert left == ["b" * 40, f"{'b' * 40}/{other.path(cache.directory).name}", "environments",
                    "environments/other-env", "environments/other-env.lock", "environments/other-env/lib"]  # fmt: skip
    assert len(said) == 3 and all("changed while the change's code ran" in s for s in said)


def test_a_cache_directory_replaced_while_the_changes_code_ran_is_removed_never_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("not gbbot's")
    cache = tmp_path / "cache"
    baseline.Cache(cache).store(cache_key(), BASE)
    with baseline.untouched(cache, lambda _said: None):
        cache.rename(tmp_path / "moved")
        cache.symlink_to(outside)  # where a sweep that followed it would remove what is there
    assert not cache.exists() and not cache.is_symlink() and (outside / "precious").exists()
    with baseline.untouched(cache, lambda _said: None):  # none before: whatever comes is the change's
        baseline.Cache(cache).store(cache_key(), BASE)
    assert not cache.exists()


def test_a_torch_build_has_one_identity_read_the_same_way_as_a_report_holds_it(tmp_path, monkeypatch):
    """A CUDA build from the default index: its package metadata says 2.14.1, `torch.__version__`
    (what a report holds) 2.14.1+cu130. The cache's key and a baseline's check read the build as
    the report does, so a report made a minute earlier fits (issue 51)."""
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("raise ImportError('torch is never imported to be named')\n")
    (tmp_path / "torch" / "version.py").write_text("__version__: str = '2.14.1+cu130'\ncuda = '13.0'\n")
    (tmp_path / "torch-2.14.1.dist-info").mkdir()
    (tmp_path / "torch-2.14.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.14.1\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert importlib.metadata.version("torch") == "2.14.1"  # what gbbot read before
    assert baseline.installed_torch() == "2.14.1+cu130"
    made = new_report(
        [EntrypointReport("train", Status.OK, 0, 1.0, 1, 0, 0, ())], Mode.FAST, "2.14.1+cu130", "a" * 40, "c0ffee"
    )
    expected = baseline.Expected("a" * 40, "c0ffee", baseline.installed_torch(), Mode.FAST, ("train",))
    assert baseline.mismatches(made, expected) == []
    cache, key = baseline.Cache(tmp_path / "cache"), baseline.CacheKey.for_run(expected)
    cache.store(key, made)
    assert cache.load(key, expected) == made
    (tmp_path / "torch" / "version.py").write_text("git_version = 'abc'\n")  # says nothing: the metadata's
    assert baseline.installed_torch() == "2.14.1"
