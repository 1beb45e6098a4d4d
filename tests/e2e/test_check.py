"""`gbbot check` on the bundled example, with real torch: every break found, in both modes. The
fast-mode run is `example_checked` (tests/e2e/conftest.py), which test_warm compares with fresh
processes."""

from __future__ import annotations

from gbbot.checks.tree import CheckOptions, check
from gbbot.core.config import parse_config
from gbbot.core.model import Mode, Status


def test_example_project_end_to_end(example_checked):
    data = example_checked.data
    assert example_checked.code == 1  # fail_on: new and no baseline: every break is new
    found = {(b["gb_id"], b["file"], b["function"]) for e in data["entrypoints"] for b in e["breaks"]}
    assert found == {
        ("GB0025", "tinymodel/model.py", "smooth"),
        ("GB0170", "tinymodel/model.py", "clip_grad"),
        ("GB0059", "tinymodel/model.py", "TinyNet.forward"),
        ("GB0124", "tinymodel/model.py", "TinyNet.forward"),
        ("GB0291", "tinymodel/model.py", "TinyNet.forward"),
        ("GB4198", "train.py", "loss_fn"),
    }
    assert data["commit"] and data["mode"] == "fast" and data["torch_version"].startswith("2.13")
    train = next(e for e in data["entrypoints"] if e["name"] == "train-step")
    assert train["frames_skipped"] == 1 and train["graph_count"] >= 5
    # measured order: the breaks whose frames ran on both training steps before the eager frame
    # (smooth, entered once), the rule only breaking ties
    entries = [b["cost"]["entries"] for b in train["breaks"]]
    assert entries == sorted(entries, reverse=True) and entries[0] == 2
    smooth = next(b for b in train["breaks"] if b["gb_id"] == "GB0025")
    assert smooth["frame_skipped"] and smooth["cost"]["runs_eagerly"] and smooth["cost"]["entries"] == 1
    text = example_checked.markdown
    # impact order: the break that makes a frame run eagerly first, though paid once against GB0059's 3
    assert text.index("GB0025") < text.index("GB0059")
    assert "`smooth` runs eagerly on its one call" in text
    terminal = example_checked.terminal
    assert "train-step" in terminal and "TinyNet.forward" in terminal


def test_fast_mode_finds_the_same_breaks_as_faithful_mode(example_checked):
    config = parse_config((example_checked.repo / ".gbbot.yml").read_text())
    runs = {Mode.FAST: example_checked.report}
    runs[Mode.FAITHFUL] = check(example_checked.repo, config, CheckOptions(mode=Mode.FAITHFUL, only=("forward",)))
    found = {}
    for mode, result in runs.items():
        entry = next(e for e in result.entrypoints if e.name == "forward")
        assert entry.status is Status.OK and result.mode is mode
        found[mode] = ({b.fingerprint for b in entry.breaks}, entry.graph_count)
    assert found[Mode.FAST] == found[Mode.FAITHFUL]
    assert len(found[Mode.FAST][0]) == 3  # print, .item(), log.info in TinyNet.forward
