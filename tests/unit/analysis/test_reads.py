"""Whether the head would read what the base read (gbbot/analysis/reads.py): a head run is skipped only
when nothing the change touches was read (as the file read: a `.pyc` is a `.pyc`), tried, or could
be found where the run looked, and the record is whole."""

from __future__ import annotations

import json

import pytest

from gbbot.analysis import reads
from gbbot.backends import reads_record
from gbbot.core.model import Reads
from gbbot.core.untrusted_json import Refused

TOP = "/work/repo"
BASE = ["train.py", "models/net.py", "models/__init__.py", "data/config.json", "data/labels.json", "README.md"]


def changes(*name_status: tuple[str, str], untracked: tuple[str, ...] = ()) -> reads.Changes:
    return reads.Changes.of(BASE, name_status, untracked)


def at(path: str) -> str:
    return f"{TOP}/{path}".rstrip("/")


def record(*files: str, directories: tuple[str, ...] = (), searched: dict | None = None, **kwargs) -> Reads:
    looked = {at(d): frozenset(names) for d, names in (searched or {}).items()}
    return Reads(frozenset(map(at, files)), frozenset(map(at, directories)), searched=looked, **kwargs)


def why(found: Reads | None, change: reads.Changes) -> str | None:
    return reads.why_rerun(found, change, (TOP,))


# train.py imports models.net (read as its bytecode), looks for an optional top-level `extras`
# module and for models._ops, and lists data/ itself
TRAIN = record("train.py", "models/__init__.py", "models/__pycache__/net.cpython-311.pyc",
               directories=("data",), searched={"": {"models", "extras"}, "models": {"net", "_ops"}})  # fmt: skip


def test_a_run_that_read_nothing_the_change_touches_is_taken():
    assert why(TRAIN, changes(("M", "README.md"), ("M", "models/other.py"))) is None


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        # through the bytecode cache the run wrote itself
        (
            changes(("M", "models/net.py")),
            "it read `models/__pycache__/net.cpython-311.pyc`, compiled from `models/net.py`, which the change touches",
        ),
        # a committed bytecode cache is matched as itself, never as the unchanged source beside it
        (
            changes(("A", "models/__pycache__/net.cpython-311.pyc")),
            "it read `models/__pycache__/net.cpython-311.pyc`, which the change touches",
        ),
        (changes(("M", "train.py")), "it read `train.py`, which the change touches"),
        (changes(("D", "models/__init__.py")), "it read `models/__init__.py`, which the change touches"),
        # an entry named like a module the import system looked for there, appearing or going
        (changes(("A", "extras.py")), "it looked for module `extras` in `./`, where the change adds"),
        (changes(("A", "extras/sub/__init__.py")), "it looked for module `extras` in `./`, where the change adds"),
        (changes(("A", "models/_ops.cpython-311-x86_64-linux-gnu.so")), "it looked for module `_ops` in `models/`"),
        (changes(("M", "models/_ops.cpython-311-x86_64-linux-gnu.so")), "may load `models/_ops.cpython-311"),
        # a directory the program listed itself: any entry counts
        (changes(("A", "data/more.json")), "it listed `data/`, where the change adds or removes `more.json`"),
        (changes(("D", "data/config.json")), "it listed `data/`, where the change adds or removes `config.json`"),
    ],
)
def test_what_the_change_touches_runs_again(change, reason):
    assert reason in why(TRAIN, change)


@pytest.mark.parametrize(
    "change",
    [
        changes(untracked=("helpers.py",)),  # a module nothing looked for
        changes(("A", "docs/guide.md")),  # a new top-level directory nothing imports
        changes(("A", "models/sub/more.py")),  # `sub` was not looked for in models/
        changes(("A", "models/readme.txt")),
        changes(("M", "other/_ext.cpython-311-x86_64-linux-gnu.so")),  # where nothing looked
    ],
)
def test_an_entry_no_search_could_find_leaves_the_heads_result(change):
    assert why(TRAIN, change) is None


def test_installed_package_searches_count_only_distributions():
    found = Reads(frozenset({at("train.py")}), frozenset(), metadata=frozenset({TOP}))
    assert why(found, changes(("A", "notes.md"))) is None
    assert "adds or removes `mypkg-0.1.dist-info`" in why(found, changes(untracked=("mypkg-0.1.dist-info/METADATA",)))


def test_a_file_the_base_commit_lacks_sends_the_base_to_run():
    ignored = record("train.py", "weights/best.pt")  # ignored by git: the base's checkout has none
    assert why(ignored, changes()) == "it read `weights/best.pt`, which is not in the base commit"


def test_a_file_that_was_not_there_counts_only_if_the_change_adds_or_removes_it():
    probe = Reads(frozenset({f"{TOP}/train.py"}), frozenset(), absent=frozenset({f"{TOP}/local_settings.py"}))
    assert why(probe, changes()) is None  # a failed probe fails on the other side too
    gone = Reads(frozenset({f"{TOP}/train.py"}), frozenset(), absent=frozenset({f"{TOP}/README.md"}))
    said = "it tried to read `README.md`, which the change adds or removes"
    assert why(gone, changes(("D", "README.md"))) == why(gone, changes(("A", "README.md"))) == said


def test_paths_outside_the_repository_do_not_count():
    outside = Reads(frozenset({"/usr/lib/python3.11/json/__init__.py", "/tmp/cache.bin", "/work/repository/x.py"}),
                    frozenset({"/tmp", "/work"}))  # fmt: skip
    assert why(outside, changes(("M", "train.py"), ("A", "x.py"))) is None


@pytest.mark.parametrize(
    ("found", "reason"),
    [
        (None, "not recorded"),
        (record("train.py", spawned="subprocess.Popen"), "started another program (subprocess.Popen)"),
        (record("train.py", overflow=True), "read more than"),
    ],
)
def test_an_incomplete_record_sends_the_base_to_run(found, reason):
    assert reason in why(found, changes())


def test_the_resolved_top_level_counts_too():
    found = Reads(frozenset({"/real/repo/train.py"}), frozenset())
    assert reads.why_rerun(found, changes(("M", "train.py")), (TOP, "/real/repo")) is not None
    # one directory searched under both names: the names looked for under either count
    both = Reads(frozenset(), frozenset(), searched={TOP: frozenset({"a"}), "/real/repo": frozenset({"b"})})
    assert "module `a`" in reads.why_rerun(both, changes(("A", "a.py")), (TOP, "/real/repo"))
    assert "module `b`" in reads.why_rerun(both, changes(("A", "b.py")), (TOP, "/real/repo"))


def test_a_childs_record_is_checked_before_it_is_believed():
    good = {"files": ["/a/b.py"], "directories": ["/a"], "metadata": [], "searched": {"/a": ["b"]},
            "spawned": None, "overflow": False}  # fmt: skip
    expected = Reads(frozenset({"/a/b.py"}), frozenset({"/a"}), searched={"/a": frozenset({"b"})})
    assert reads_record.parse(json.dumps(good)) == expected
    bad = [
        "[]",
        json.dumps({**good, "files": ["relative.py"]}),
        json.dumps({**good, "files": "/a/b.py"}),
        json.dumps({**good, "overflow": "no"}),
        json.dumps({**good, "spawned": "x" * 500}),
        json.dumps({**good, "files": [["/nested"]]}),
        json.dumps({**good, "files": [f"/{i}" for i in range(reads_record.MAX_PATHS + 1)]}),
        json.dumps({**good, "searched": {"relative": ["b"]}}),
        json.dumps({**good, "searched": {"/a": ["../b"]}}),
        json.dumps({**good, "searched": ["/a"]}),
        json.dumps({k: v for k, v in good.items() if k != "searched"}),
        '{"files": [',
    ]
    for text in bad:
        with pytest.raises(Refused):
            reads_record.parse(text)
