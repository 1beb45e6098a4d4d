"""Whether the base would read what the head read (gbbot/reads.py): a base run is skipped only when
nothing the change touches was read, listed or tried, and the record is whole."""

from __future__ import annotations

import json

import pytest

from gbbot import reads
from gbbot.model import Reads
from gbbot.untrusted_json import Refused

TOP = "/work/repo"
BASE = ["train.py", "models/net.py", "models/__init__.py", "data/config.json", "README.md"]


def changes(*name_status: tuple[str, str], untracked: tuple[str, ...] = ()) -> reads.Changes:
    return reads.Changes.of(BASE, name_status, untracked)


def record(*files: str, directories: tuple[str, ...] = (), **kwargs) -> Reads:
    return Reads(frozenset(f"{TOP}/{f}" for f in files), frozenset(f"{TOP}/{d}".rstrip("/") for d in directories),
                 **kwargs)  # fmt: skip


def why(found: Reads | None, change: reads.Changes) -> str | None:
    return reads.why_rerun(found, change, (TOP,))


TRAIN = record("train.py", "models/__init__.py", "models/__pycache__/net.cpython-311.pyc",
               directories=("", "models"))  # fmt: skip


def test_a_run_that_read_nothing_the_change_touches_takes_the_heads_result():
    assert why(TRAIN, changes(("M", "README.md"), ("A", "data/notes.md"))) is None


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (changes(("M", "models/net.py")), "it read `models/net.py`, which the change touches"),  # via its bytecode
        (changes(("M", "train.py")), "it read `train.py`, which the change touches"),
        (changes(("D", "models/__init__.py")), "it read `models/__init__.py`, which the change touches"),
        # a new module where the import system looked: it may shadow or add what the code imports
        (changes(("A", "models/extra.py")), "it listed `models/`, where the change adds or removes files"),
        (changes(untracked=("helpers.py",)), "it listed `./`, where the change adds or removes files"),
        (changes(("A", "pkg/deep/mod.py")), "it listed `./`, where the change adds or removes files"),  # new `pkg`
        (changes(("D", "data/config.json")), "it listed `./`, where the change adds or removes files"),  # no `data`
        (changes(("M", "models/_ops.cpython-311-x86_64-linux-gnu.so")), "may load `models/_ops.cpython-311"),
    ],
)
def test_what_the_change_touches_sends_the_base_to_run(change, reason):
    assert reason in why(TRAIN, change)


def test_a_file_added_below_a_directory_that_exists_only_relists_that_directory():
    assert why(TRAIN, changes(("A", "models/sub/more.py"))) == "it listed `models/`, where the change adds or removes files"
    assert why(TRAIN, changes(("A", "data/more.json"))) is None  # data/ was not listed, the top still has `data`


def test_a_file_the_base_commit_lacks_sends_the_base_to_run():
    ignored = record("train.py", "weights/best.pt")  # ignored by git: the base's checkout has none
    assert why(ignored, changes()) == "it read `weights/best.pt`, which is not in the base commit"


def test_a_file_that_was_not_there_counts_only_if_the_base_has_it():
    probe = Reads(frozenset({f"{TOP}/train.py"}), frozenset(), absent=frozenset({f"{TOP}/local_settings.py"}))
    assert why(probe, changes()) is None  # a failed probe fails on the base too
    gone = Reads(frozenset({f"{TOP}/train.py"}), frozenset(), absent=frozenset({f"{TOP}/README.md"}))
    assert why(gone, changes(("D", "README.md"))) == "it tried to read `README.md`, which the change removes"


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


def test_a_childs_record_is_checked_before_it_is_believed():
    good = {"files": ["/a/b.py"], "directories": ["/a"], "spawned": None, "overflow": False}
    assert reads.parse(json.dumps(good)) == Reads(frozenset({"/a/b.py"}), frozenset({"/a"}))
    bad = [
        "[]",
        json.dumps({**good, "files": ["relative.py"]}),
        json.dumps({**good, "files": "/a/b.py"}),
        json.dumps({**good, "overflow": "no"}),
        json.dumps({**good, "spawned": "x" * 500}),
        json.dumps({**good, "files": [["/nested"]]}),
        json.dumps({**good, "files": [f"/{i}" for i in range(reads.MAX_PATHS + 1)]}),
        '{"files": [',
    ]
    for text in bad:
        with pytest.raises(Refused):
            reads.parse(text)
