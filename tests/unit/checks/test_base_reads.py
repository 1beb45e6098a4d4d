"""What a base's runs read, kept beside its cached report (gbbot/checks/baseline.py): only what lies
in the checkout, as paths below its top level, read back within bounds."""

from __future__ import annotations

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
    kept = baseline.BaseReads.of({"train": SEEN, "serve": None}, (TREE,))
    cache.store(key, BASE, kept)
    assert cache.load_reads(key) == kept and set(kept.entrypoints) == {"train"}  # serve recorded nothing
    cache.store(key, BASE)  # a base run without records replaces the older record too
    assert cache.load_reads(key) is None


def test_a_damaged_or_forged_record_is_no_record(tmp_path):
    cache, key = baseline.Cache(tmp_path), cache_key()
    cache.store(key, BASE, baseline.BaseReads.of({"train": SEEN}, (TREE,)))
    path = baseline.reads_path(key.path(tmp_path))
    for text in ('{"python": "3.11", "entrypoints": {"train": {"files": ["relative.py"]}}}', "[[[[[[[[1]]]]]]]]", "{"):
        path.write_text(text)
        assert cache.load_reads(key) is None
    assert baseline.BaseReads.of({"train": None}, (TREE,)) is None
