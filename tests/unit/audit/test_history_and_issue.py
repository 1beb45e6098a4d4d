"""The data branch against a real smart-HTTP remote (races, corrupted records), the tracking
issue against the GitHub stand-in (closed, locked, deleted), and the issue body as a snapshot
whose Mermaid blocks a real Mermaid parser accepts."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from gbbot.audit import history, issue, tracking
from gbbot.audit.changes import compare
from gbbot.audit.record import BreakEntry, EntrypointEntry, Record, dumps
from gbbot.core.errors import GitError
from gbbot.edges import git as git_
from tests.conftest import GOLDEN as GOLDEN_DIR
from tests.conftest import ROOT, git
from tests.git_http import GitHttpRemote
from tests.github_standin import ACTIONS_BOT, ACTIONS_TOKEN

GOLDEN = GOLDEN_DIR / "audit_issue.md"
A, B, C = "a" * 40, "b" * 40, "c" * 40
PRINT = BreakEntry(
    "1111aaaa",
    "GB0059",
    "Attempted to call print",
    "SUPPORTABLE",
    "model.py",
    12,
    1,
    function="f",
    code="print(x)",
    doc_url="https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html",
)
ITEM = BreakEntry("2222bbbb", "GB0124", "Tensor.item() call", "SUPPORTABLE", "model.py", 20, 2, in_loop=True)
HOSTILE = BreakEntry("3333cccc", None, "<img src=x> @someone", "UNKNOWN", "x|y.py", 3, 1, flaky=True)


def rec(commit: str, date: str, breaks: tuple[BreakEntry, ...], status: str = "ok", torch: str = "2.13.0") -> Record:
    other = EntrypointEntry(
        "train", status, 4, 0, 0, (), (), error=None if status == "ok" else "Traceback\nRuntimeError: boom `x` @dev"
    )
    steady = sum(b.count for b in breaks if not b.flaky)
    step = EntrypointEntry("step", "ok", 3, steady, 0, (("SUPPORTABLE", steady),), breaks)
    return Record(commit, date, torch, "fast", "abcd", 1, (step, other))


HISTORY = (
    rec(A, "2026-01-01T03:17:00Z", (PRINT,)),
    rec(B, "2026-01-02T03:17:00Z", (PRINT,), torch="2.13.0"),
    replace(rec(C, "2026-01-03T03:17:00Z", (PRINT, ITEM, HOSTILE), status="failed"), fixes=(("1111aaaa", "print"),)),
)


def body() -> str:
    changes = compare(HISTORY[1], HISTORY[2])
    return issue.render(HISTORY, changes, issue.Where("https://github.com/octo-org/octo-repo", None))


def test_issue_body_snapshot():
    text = body()
    if os.environ.get("GBBOT_UPDATE_GOLDEN"):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()
    # The regression is the first thing after the marker, untrusted text is inert.
    assert text.split("\n")[1:3] == ["> [!CAUTION]", text.split("\n")[2]] and "Regression" in text.split("\n")[2]
    outside_code = re.sub(r"(`+)[^`]*?\1", "", text)
    assert "<img" not in outside_code and "@someone" not in outside_code


def test_flaky_break_is_never_a_regression_and_torch_alone_is_named():
    before = rec(A, "2026-01-01T03:17:00Z", (PRINT,))
    flaky = rec(A, "2026-01-02T03:17:00Z", (PRINT, HOSTILE), torch="2.14.0")
    changes = compare(before, flaky)
    assert not changes.regression and changes.cause == "torch 2.13.0 → 2.14.0"


def mermaid_blocks(text: str) -> list[str]:
    return re.findall(r"```mermaid\n(.*?)```", text, flags=re.S)


def mermaid_modules() -> Path | None:
    candidates = [os.environ.get("GBBOT_MERMAID_MODULES"), os.environ.get("NODE_PATH")]
    return next((Path(c) for c in candidates if c and (Path(c) / "mermaid").is_dir()), None)


def test_mermaid_blocks_parse():
    blocks = mermaid_blocks(body())
    assert len(blocks) == 2
    modules, node = mermaid_modules(), shutil.which("node")
    if modules is None or node is None:
        if os.environ.get("CI") == "true":
            pytest.fail("the npm packages mermaid and jsdom are missing (.ci/run installs them)")
        # The grammar the charts use, checked line by line.
        for block in blocks:
            lines = block.strip().split("\n")
            assert lines[0] == "xychart-beta"
            assert re.fullmatch(r'    title "[^"]*"', lines[1])
            assert re.fullmatch(r'    x-axis \["[0-9a-f]{7}"(, "[0-9a-f]{7}")*\]', lines[2])
            assert re.fullmatch(r'    y-axis "\w+" 0 --> \d+', lines[3])
            assert all(re.fullmatch(r"    line \[\d+(, \d+)*\]", line) for line in lines[4:])
        return
    script = ROOT / ".ci" / "mermaid-parse.mjs"
    for block in [*blocks, "xychart-beta\n    x-axis [a b\n"]:
        done = subprocess.run(
            [node, str(script)],
            input=block,
            capture_output=True,
            text=True,
            env={**os.environ, "NODE_PATH": str(modules)},
            cwd=modules.parent,
            timeout=120,
        )
        broken = block.startswith("xychart-beta\n    x-axis [a b")
        assert (done.returncode != 0) == broken, done.stdout + done.stderr


# --- the data branch against a real remote --------------------------------------------------------


def remote_and_clone(tmp_path: Path, name: str = "clone") -> tuple[Path, Path]:
    bare = tmp_path / "served" / "r.git"
    if not bare.exists():
        git(tmp_path, "init", "-q", "--bare", str(bare))
    clone = tmp_path / name
    git(tmp_path, "init", "-q", str(clone))
    return bare, clone


def test_two_audits_racing_for_the_data_branch_both_land(tmp_path):
    _, mine = remote_and_clone(tmp_path)
    _, theirs = remote_and_clone(tmp_path, "theirs")
    with GitHttpRemote(tmp_path / "served", "tok") as server:
        remote = history.Remote(server.repo_url("r.git"), "tok")
        history.append_remote(mine, remote, "gbbot-data", HISTORY[0], print)
        # Just before our push is served, another audit pushes its record.
        server.before_push = lambda: history.append_remote(theirs, remote, "gbbot-data", HISTORY[1], print)
        logged: list[str] = []
        pushed = history.append_remote(mine, remote, "gbbot-data", HISTORY[2], logged.append)
        assert pushed.tries == 2 and "refused" in logged[0]
        assert "tok" not in " ".join(logged) and "dG9r" not in " ".join(logged)
        dates = [r.date for r in history.read(mine, history.fetch(mine, remote, "gbbot-data"), print).records]
        assert dates == [r.date for r in HISTORY]


def test_a_corrupted_record_is_skipped_with_a_warning(tmp_path):
    bare, clone = remote_and_clone(tmp_path)
    with GitHttpRemote(tmp_path / "served", "tok") as server:
        remote = history.Remote(server.repo_url("r.git"), "tok")
        tip = history.append_remote(clone, remote, "gbbot-data", HISTORY[0], print).commit
        for name, content in (
            ("records/2026-zz-bad.json", b'{"gbbot_audit": 1, "commit": "<script>"}'),
            ("records/2026-zz-notjson.json", b"\xff\xfe not json"),
        ):
            tip = git_.commit_with_file(bare, tip, name, content, "vandalism")
        git(bare, "update-ref", "refs/heads/gbbot-data", tip)
        warnings: list[str] = []
        pushed = history.append_remote(clone, remote, "gbbot-data", HISTORY[1], print)
        loaded = history.read(clone, pushed.commit, warnings.append)
        assert [r.commit for r in loaded.records] == [A, B]
        assert len(warnings) == 2 and all(w.startswith("warning: skipped a record") for w in warnings)
        assert any("2026-zz-bad.json" in w and "not an audit record" in w for w in warnings)


def test_a_wrong_token_is_refused_without_showing_it(tmp_path):
    _, clone = remote_and_clone(tmp_path)
    with GitHttpRemote(tmp_path / "served", "right") as server, pytest.raises(GitError) as caught:
        history.append_remote(
            clone, history.Remote(server.repo_url("r.git"), "wrong-secret"), "gbbot-data", HISTORY[0], print
        )
    assert "wrong-secret" not in str(caught.value)


# --- the tracking issue on the stand-in ----------------------------------------------------------


def test_tracking_issue_created_edited_reopened_replaced(github_standin):
    repo = github_standin.github_client(ACTIONS_TOKEN).get_repo("octo-org/octo-repo")
    text = body()
    assert tracking.upsert(repo, text, ACTIONS_BOT).action is tracking.Action.CREATED
    assert tracking.upsert(repo, text, ACTIONS_BOT).action is tracking.Action.UPDATED
    github_standin.issue(1).state = "closed"
    posted = tracking.upsert(repo, text, ACTIONS_BOT)
    assert (posted.action, posted.number, github_standin.issue(1).state) == (tracking.Action.REOPENED, 1, "open")
    github_standin.issue(1).state, github_standin.issue(1).locked = "closed", True
    posted = tracking.upsert(repo, text, ACTIONS_BOT)
    assert (posted.action, posted.number) == (tracking.Action.REPLACED, 2)
    assert "Continues #1" in github_standin.issue(2).body
    github_standin.issue(2).deleted = True
    github_standin.add_issue_record("gbbot audit", issue.MARKER + "\nforged", "mallory", ["gbbot-audit"])
    posted = tracking.upsert(repo, text, ACTIONS_BOT)  # the deleted one is gone; a forged one is not ours
    assert posted.number == 4 and posted.action is tracking.Action.REPLACED
    assert len([i for i in github_standin.issues() if i.state == "open" and i.login == ACTIONS_BOT]) == 2


def test_record_round_trips_and_refuses_oversized_fields():
    from gbbot.audit.record import RecordError, loads

    assert loads(dumps(HISTORY[2]).encode()) == HISTORY[2]
    # a key the schema leaves optional may be missing: it takes the value's default
    data = json.loads(dumps(HISTORY[2]))
    del data["run_url"], data["entrypoints"][0]["error"], data["entrypoints"][0]["exit_code"]
    for key in ("gb_id", "origin", "function", "code", "doc_url"):
        del data["entrypoints"][0]["fingerprints"][0][key]
    found = loads(json.dumps(data).encode())
    brk = found.entrypoints[0].fingerprints[0]
    assert (brk.gb_id, brk.origin, brk.function, brk.code, brk.doc_url) == (None, "user", "", "", None)
    assert (found.run_url, found.entrypoints[0].error, found.entrypoints[0].exit_code) == (None, None, None)
    with pytest.raises(RecordError):
        loads(dumps(HISTORY[0]).replace('"model.py"', '"/etc/passwd"').encode())


def test_a_records_frames_read_back_with_their_names_and_eager_flags():
    from gbbot.audit.record import loads
    from gbbot.core.model import CompiledFrame, FrameRef

    forward, helper = FrameRef("model.py", 10, "forward", "Net.forward"), FrameRef("model.py", 30, "helper")
    brk = replace(PRINT, frames=(forward, helper), makes_eager=(forward,))
    frames = (CompiledFrame(forward, (), 0, True, PRINT.fingerprint), CompiledFrame(helper, (), 0, False))
    step = replace(HISTORY[0].entrypoints[0], fingerprints=(brk,), frames=frames)
    back = loads(dumps(replace(HISTORY[0], entrypoints=(step,))).encode()).entrypoints[0]
    assert back == step
    assert [(f.frame.qualname, f.eager, f.eager_by) for f in back.frames] == [
        ("Net.forward", True, PRINT.fingerprint),
        ("", False, None),
    ]
    assert [f.name for f in back.fingerprints[0].frames] == ["Net.forward", "helper"]


def test_the_record_schema_has_the_limits_and_names_the_code_cuts_to():
    """The schema is a data file: its bounds are the ones `from_reports` cuts to, its enums the
    model's, so a record written is never one refused when read."""
    from gbbot.audit import record
    from gbbot.core.model import Category, Status

    top = record.RECORD_SCHEMA["properties"]
    entry = top["entrypoints"]["items"]["properties"]
    brk = entry["fingerprints"]["items"]["properties"]
    assert top["gbbot_audit"] == {"const": record.FORMAT}
    assert top["entrypoints"]["maxItems"] == record.MAX_ENTRYPOINTS
    assert entry["fingerprints"]["maxItems"] == record.MAX_BREAKS_PER_ENTRYPOINT
    assert entry["error"]["anyOf"][0]["maxLength"] == record.ERROR_CHARS
    assert entry["status"]["enum"] == [s.value for s in Status]
    assert entry["frames"]["maxItems"] == brk["frames"]["maxItems"] == record.MAX_FRAMES
    assert brk["category"]["enum"] == [c.value for c in Category]
    assert brk["code"]["maxLength"] == record.CODE_CHARS
    assert brk["file"]["maxLength"] == record.PATH_CHARS
    assert brk["gb_type"]["maxLength"] == brk["function"]["maxLength"] == record.TEXT_CHARS
    # `loads` fills the values' fields from the checked JSON, key by key
    assert set(brk) == {f.name for f in dataclasses.fields(record.BreakEntry)}
    assert set(entry) == {f.name for f in dataclasses.fields(record.EntrypointEntry)} | {"eager"}
    assert set(top) == {f.name for f in dataclasses.fields(record.Record)} | {"gbbot_audit"}


def test_graph_launches_per_call_are_charted_with_their_table_and_older_records_show_none():
    from gbbot.audit.record import loads

    def measured(record: Record, per_call: float | None) -> Record:
        step = replace(record.entrypoints[0], launches_per_call=per_call)
        return replace(record, entrypoints=(step, *record.entrypoints[1:]))

    records = (HISTORY[0], measured(HISTORY[1], 4.0), measured(rec(C, "2026-01-03T03:17:00Z", (PRINT,)), 2.5))
    assert all(loads(dumps(r).encode()) == r for r in records)
    text = issue.render(records, compare(records[1], records[2]), issue.Where("https://github.com/o/r", None))
    chart = next(b for b in mermaid_blocks(text) if "Graph launches per call" in b)
    assert "line [0, 4.0, 2.5]" in chart  # the step entrypoint; the oldest record has no figure
    rows = [line for line in text.splitlines() if line.startswith("| 2026-01-0")]
    assert rows[:3] == [  # the chart's table, before the breaks / graphs one
        f"| 2026-01-01 [`aaaaaaa`](https://github.com/o/r/commit/{A}) | — | — |",
        f"| 2026-01-02 [`bbbbbbb`](https://github.com/o/r/commit/{B}) | 4 | — |",
        f"| 2026-01-03 [`ccccccc`](https://github.com/o/r/commit/{C}) | 2.5 | — |",
    ]
    assert "Graph launches per call" not in body()  # records without the figure: no chart


def test_a_forged_records_doc_url_is_not_linked_the_gb_id_makes_the_link():
    """Records live on a data branch anyone with push access (or a forged artifact) can write."""
    forged = replace(PRINT, doc_url="https://evil.example/phish")
    history = (rec(A, "2026-01-01T03:17:00Z", (forged,)), rec(B, "2026-01-02T03:17:00Z", (forged,)))
    text = issue.render(history, compare(*history), issue.Where("https://github.com/octo-org/octo-repo", None))
    assert "evil.example" not in text
    assert "(https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html)" in text


def test_an_audit_in_the_same_second_as_the_one_before_is_compared_with_it_whatever_the_branch_order():
    from gbbot.audit.run import outcome

    first, mine = rec(B, "2026-04-02T03:00:00Z", (PRINT,)), rec(A, "2026-04-02T03:00:00Z", (PRINT, ITEM))
    for read_back in ((first, mine), (mine, first)):  # records/<date>-<commit> sorts A's record first
        changes = outcome(read_back, mine, 10, issue.Where()).changes
        assert changes.previous == first and changes.current == mine
    read_back = replace(mine, run_url="https://example.invalid/other")  # ours, read back otherwise
    assert outcome((first, read_back), mine, 10, issue.Where()).changes.previous == first
