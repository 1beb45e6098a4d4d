"""The warm server: Python entrypoints forked from a process that imported torch once report what
fresh processes report (breaks, graphs, statuses, exits, output), and nothing leaks between them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest

from gbbot.backends import warm as warm_backend
from gbbot.checks.tree import CheckOptions, check
from gbbot.core.config import parse_config
from gbbot.core.model import Report
from gbbot.edges import machine
from gbbot.main import main
from tests.conftest import git
from tests.e2e.conftest import PATTERNS_CONFIG
from tests.unit.checks.test_tree import HANG, alive


def configured(root: Path, body: str, warm: bool):
    config = parse_config("version: 1\n" + textwrap.dedent(body))
    return replace(config, runner=replace(config.runner, warm=warm))


def entries(root: Path, body: str, warm: bool, **options) -> dict:
    return {e.name: e for e in check(root, configured(root, body, warm), CheckOptions(**options)).entrypoints}


def observable(entry) -> tuple:
    """All a report says about an entrypoint, but how long it took."""
    return (
        entry.status, entry.exit_code, entry.error, entry.graph_count, entry.frames_skipped, entry.break_count,
        sorted((b.fingerprint, b.count) for b in entry.breaks), entry.trace_problems, entry.env_withheld,
    )  # fmt: skip


def same_both_ways(root: Path, body: str, **options) -> dict:
    warm, fresh = (entries(root, body, on, **options) for on in (True, False))
    assert {n: observable(e) for n, e in warm.items()} == {n: observable(e) for n, e in fresh.items()}
    return warm


def test_python_entrypoints_fork_from_the_server_the_rest_start_fresh(tmp_path):
    (tmp_path / "probe.py").write_text("import sys\nopen(sys.argv[1], 'w').write(str('torch' in sys.modules))\n")
    body = """\
        entrypoints:
          - {name: script, run: python probe.py script}
          - {name: pipeline, run: "python probe.py pipeline | cat"}
    """
    entries(tmp_path, body, warm=True)
    assert (tmp_path / "script").read_text() == "True"  # imported by the server before the fork
    assert (tmp_path / "pipeline").read_text() == "False"
    entries(tmp_path, body, warm=False)
    assert (tmp_path / "script").read_text() == "False"


def same_as_fresh(warm: Report, root: Path, body: str) -> dict:
    """A report the warm server made (a session's shared run) against fresh processes' on `root`."""
    found, fresh = {e.name: e for e in warm.entrypoints}, entries(root, body, warm=False)
    assert {n: observable(e) for n, e in found.items()} == {n: observable(e) for n, e in fresh.items()}
    return found


def test_example_project_reports_the_same(example_checked):
    repo = example_checked.repo
    body = (repo / ".gbbot.yml").read_text().replace("version: 1\n", "")
    warm = same_as_fresh(example_checked.report, repo, body)
    assert len({b.fingerprint for e in warm.values() for b in e.breaks}) == 6
    assert warm["train-step"].frames_skipped == 1


def test_break_patterns_report_the_same(patterns_repo, patterns_report):
    warm = same_as_fresh(patterns_report, patterns_repo, PATTERNS_CONFIG)
    assert len(warm["patterns"].breaks) > 10


ITEM = """\
import sys, torch, torch._dynamo
def f(x):
    return x * x.sum().item()
if sys.argv[1] == "flip":
    import helper
    torch._dynamo.config.capture_scalar_outputs = True
    torch.leaked = True
else:
    assert "helper" not in sys.modules and not hasattr(torch, "leaked"), "leaked from the first entrypoint"
    assert not torch._dynamo.config.capture_scalar_outputs, "Dynamo config leaked"
torch.compile(f)(torch.ones(3))
"""


def test_nothing_an_entrypoint_changes_reaches_the_next(tmp_path):
    (tmp_path / "item.py").write_text(ITEM)
    (tmp_path / "helper.py").write_text("")
    body = """\
        entrypoints:
          - {name: flips, run: python item.py flip}
          - {name: next, run: python item.py plain}
    """
    found = same_both_ways(tmp_path, body)
    assert found["flips"].breaks == () and found["next"].status.value == "ok"
    assert [b.gb_type for b in found["next"].breaks] == [
        "Unsupported Tensor.item() call with capture_scalar_outputs=False"
    ]


def test_crashes_failures_and_floods_read_as_from_fresh_processes(tmp_path):
    (tmp_path / "boom.py").write_text("def f():\n    raise RuntimeError('kaboom in f')\nf()\n")
    (tmp_path / "segv.py").write_text("import ctypes\nctypes.string_at(0)\n")
    (tmp_path / "flood.py").write_text("import sys\nsys.stdout.write('x' * 5_000_000 + '\\nTHE END\\n')\nsys.exit(3)\n")
    (tmp_path / "bye.py").write_text("raise SystemExit('bye now')\n")
    body = """\
        entrypoints:
          - {name: raises, run: python boom.py}
          - {name: segfault, run: python segv.py}
          - {name: flood, run: python flood.py}
          - {name: message, run: python bye.py}
          - {name: missing, run: python no_such.py}
          - {name: no-module, run: python -m no_such_module}
    """
    found = same_both_ways(tmp_path, body, keep_traces=tmp_path / "kept")
    assert (tmp_path / "kept" / "flood" / "stdout.txt").stat().st_size > 5_000_000
    assert found["segfault"].status.value == "crashed" and "killed by signal 11" in found["segfault"].error
    assert found["flood"].exit_code == 3
    assert "RuntimeError: kaboom in f" in found["raises"].error
    assert found["message"].exit_code == 1 and "bye now" in found["message"].error


def test_timeout_kills_the_child_and_what_it_started(tmp_path):
    (tmp_path / "hang.py").write_text(HANG)
    started = time.monotonic()
    entry = entries(tmp_path, "entrypoints: [{name: hang, run: python hang.py, timeout: 2}]\n", warm=True)["hang"]
    assert time.monotonic() - started < 60
    assert entry.status.value == "timeout" and "timed out after 2 s; process group killed" in entry.error
    assert not alive(int((tmp_path / "child.pid").read_text()))


HANGS = "import os, time\nopen('started.pid', 'w').write(str(os.getpid()))\ntime.sleep(300)\n"


def hanging_check(tmp_path: Path, entrypoints: str) -> tuple[subprocess.Popen, int]:
    """`gbbot check` in a process of its own, once its first entrypoint (hang.py) runs: (gbbot, that
    entrypoint's pid)."""
    (tmp_path / "hang.py").write_text(HANGS)
    (tmp_path / ".gbbot.yml").write_text(f"version: 1\nentrypoints:\n{entrypoints}")
    gbbot = subprocess.Popen([sys.executable, "-m", "gbbot", "check", "--root", str(tmp_path), "--quiet"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    pid_file = tmp_path / "started.pid"
    deadline = time.monotonic() + 60
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return gbbot, int(pid_file.read_text())


def test_diff_runs_base_and_head_on_one_server(in_git_dir):
    repo, parents = in_git_dir, in_git_dir.parent / "parents.txt"
    (repo / "who.py").write_text(f"import os\nopen({str(parents)!r}, 'a').write(f'{{os.getppid()}}\\n')\n")
    (repo / ".gbbot.yml").write_text("version: 1\nentrypoints: [{name: who, run: python who.py}]\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    (repo / "who.py").write_text((repo / "who.py").read_text() + "print('head')\n")
    # who.py compiles nothing (a failure of the default policy): only where it ran matters here
    assert main(["diff", "--base", "HEAD", "--root", str(repo), "--quiet", "--fail-on", "none"]) == 0
    base, head = parents.read_text().split()
    assert base == head  # one parent for both sides: the warm server
    assert "warm_server.py" in Path(f"/proc/{head}/cmdline").read_text()


def test_a_server_that_cannot_fork_safely_says_why_once_and_runs_fresh(tmp_path, monkeypatch, capsys):
    site = tmp_path / "site"
    site.mkdir()
    (site / "spins.py").write_text(
        "import threading, time\nthreading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n"
    )
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ["PYTHONPATH"]]))
    (tmp_path / "ok.py").write_text("import sys\nopen(sys.argv[1], 'w').write('ran')\n")
    body = "runner: {preload: [spins]}\nentrypoints: [{name: a, run: python ok.py a}, {name: b, run: python ok.py b}]\n"
    found = entries(tmp_path, body, warm=True)
    assert all(e.status.value == "no_compile" for e in found.values())  # ran cleanly, compiled nothing
    assert (tmp_path / "a").read_text() == (tmp_path / "b").read_text() == "ran"
    err = capsys.readouterr().err
    assert err.count("warm server off") == 1 and "1 Python thread(s) running in the server" in err


def test_a_warm_up_that_fails_sends_later_entrypoints_to_fresh_processes_and_says_why(tmp_path, monkeypatch, capsys):
    site = tmp_path / "site"
    site.mkdir()
    (site / "nocompile.py").write_text(
        "import torch\ndef refuse(*args, **kwargs):\n    raise RuntimeError('no compiling in the server')\n"
        "torch.compile = refuse\n"
    )
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ["PYTHONPATH"]]))
    (tmp_path / "where.py").write_text("import sys, torch\nopen(sys.argv[1], 'w').write(torch.compile.__name__)\n")
    body = "runner: {preload: [nocompile]}\nentrypoints: [{name: a, run: python where.py a}, {name: b, run: python where.py b}]\n"
    entries(tmp_path, body, warm=True)
    # a was forked before the warm-up (it sees the preloaded module's torch.compile); b ran fresh
    assert ((tmp_path / "a").read_text(), (tmp_path / "b").read_text()) == ("refuse", "compile")
    err = capsys.readouterr().err
    assert err.count("warm server off") == 1 and "the warm-up compile failed: RuntimeError: no compiling" in err


def test_a_child_records_what_it_read_and_one_that_dies_early_leaves_no_record(tmp_path):
    (tmp_path / "helper.py").write_text("VALUE = 1\n")
    (tmp_path / "data.txt").write_text("x\n")
    (tmp_path / "reads.py").write_text(
        "import os, sys, helper\nopen('data.txt').read()\nopen('out.txt', 'w').write('written, not read')\n"
        "if sys.argv[1] == 'die':\n    os._exit(0)\n"
    )
    body = "entrypoints: [{name: e, run: python reads.py {how}}]\n"
    kept, seen = tmp_path / "kept", {}
    for how in ("live", "die"):  # the same kept directory: the first run's record is still there
        config = configured(tmp_path, body.replace("{how}", how), warm=True)
        check(tmp_path, config, CheckOptions(keep_traces=kept), on_done=lambda o, how=how: seen.update({how: o.reads}))
    files = {Path(f).name for f in seen["live"].files if f.startswith(str(tmp_path))}
    assert files == {"reads.py", "helper.py", "data.txt"}  # not out.txt, nothing of gbbot's or the trace's
    assert "helper" in seen["live"].searched[str(tmp_path)] and seen["live"].spawned is None
    assert seen["die"] is None


BREAKS = """\
import sys, torch
from torch._dynamo import trace_rules
open(sys.argv[1], "w").write(str(trace_rules.get_tensor_method.cache_info().currsize))
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 3)
    def forward(self, x):
        y = self.linear(x)
        print("break")
        return y.sum() * x.sum().item()
torch.compile(Net())(torch.ones(2, 3))
torch.compile(Net())(torch.ones(4, 3))  # a second module: a recompilation of the same frames
"""


def trace_ids(kept: Path) -> tuple[list, set, int]:
    """What a kept trace says about numbering: each record's compile id, in order, the strings it
    interned and the first string id. A child's stacks also pass through warm_server.py, which
    interns one more string (as before the warm-up): that string is left out."""
    ids, strings = [], {}
    for line in (line for log in sorted(kept.rglob("*.log")) for line in log.read_text().splitlines()):
        if line.startswith("\t") or "] " not in line:
            continue
        record = json.loads(line.split("] ", 1)[1])
        name = next(iter(record))
        if name == "str":
            strings.update([record["str"]])
        else:
            ids.append((name, record.get("frame_id"), record.get("frame_compile_id"), record.get("attempt")))
    return ids, {s for s in strings if not s.endswith("warm_server.py")}, min(strings.values())


def test_a_child_numbers_its_compiles_as_a_fresh_process_though_the_server_compiled_first(tmp_path):
    (tmp_path / "breaks.py").write_text(BREAKS)
    # the server warms up while its first child runs: the second is forked from the warmed server
    # (fresh, `breaks` runs alone: `first` changes nothing for a process of its own)
    body = "entrypoints: [{name: first, run: python breaks.py first}, {name: breaks, run: python breaks.py built}]\n"
    runs = {}
    for warm in (True, False):
        only = () if warm else ("breaks",)
        found = entries(tmp_path, body, warm, keep_traces=tmp_path / f"kept-{warm}", only=only)["breaks"]
        kept = tmp_path / f"kept-{warm}" / "breaks"
        runs[warm] = observable(found), trace_ids(kept), (tmp_path / "built").read_text()
    assert runs[True][:2] == runs[False][:2]
    (status, _, _, graphs, _, breaks, *_), (ids, _, first_string), _ = runs[True]
    assert status.value == "ok" and graphs > 1 and breaks > 0
    assert ids[0][1:3] == (0, 0)  # the child's first compile is [0/0], as in a fresh process
    assert {(frame, compile_) for _, frame, compile_, _ in ids if frame is not None} >= {(0, 0), (0, 1), (1, 0)}
    assert first_string == 0  # interned strings are numbered from 0 again
    # the server's warm-up compile built trace_rules' map of tensor methods; a fresh process does it on its first
    assert (runs[True][2], runs[False][2]) == ("1", "0")


LEARNER = """\
import os, sys, time
had = sorted(m for m in ("heavy", "heavy.deep", "mine", "spins") if m in sys.modules)
import heavy, mine
heavy.load()  # imports heavy.deep one call deeper, from inside the installed package
if sys.argv[1] == "a":
    import spins
if sys.argv[1] == "b":  # until the server's learning probe has ended (b is its only child then)
    children = f"/proc/{os.getppid()}/task/{os.getppid()}/children"
    deadline = time.monotonic() + 120
    while open(children).read().split() != [str(os.getpid())] and time.monotonic() < deadline:
        time.sleep(0.05)
open(sys.argv[1], "w").write(",".join(had))
"""


def learning_project(tmp_path: Path, monkeypatch, preload: str = "") -> Path:
    """An installed package `heavy` (with a submodule it imports lazily), an installed module that
    starts a thread at import, and a module of the checkout's own; three entrypoints, one after the
    other, each writing which of them it found already imported. gbbot sees one core: no standby
    children, whose core the server would not learn beside."""
    monkeypatch.setattr(machine, "cores", lambda: 1)
    site = tmp_path / "site"
    (site / "heavy").mkdir(parents=True)
    (site / "heavy" / "__init__.py").write_text("def load():\n    import heavy.deep\n")
    (site / "heavy" / "deep.py").write_text("VALUE = 1\n")
    (site / "spins.py").write_text(
        "import threading, time\nthreading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n"
    )
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ["PYTHONPATH"]]))
    monkeypatch.setattr(warm_backend, "_SHARED", {})  # a server of its own, started where `site` is installed
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "mine.py").write_text("VALUE = 2\n")
    (repo / "learner.py").write_text(LEARNER)
    runs = "".join(f"  - {{name: {n}, run: python learner.py {n}}}\n" for n in ("a", "b", "c"))
    (repo / ".gbbot.yml").write_text(f"version: 1\n{preload}entrypoints:\n{runs}")
    return repo


def seen_loaded(repo: Path) -> dict[str, str]:
    assert main(["check", "--root", str(repo), "--quiet", "--fail-on", "none"]) == 0
    return {n: (repo / n).read_text() for n in ("a", "b", "c")}


def test_the_server_learns_the_installed_modules_children_import_never_the_checkouts(tmp_path, monkeypatch, capsys):
    seen = seen_loaded(learning_project(tmp_path, monkeypatch))
    # a imported everything itself, and so did b, forked while the server tried what a imported;
    # c found the installed package and its lazily imported submodule loaded, never the
    # checkout's module, nor `spins`: it starts a thread at import, so the server skipped it and
    # still forks (no "warm server off")
    assert seen == {"a": "", "b": "", "c": "heavy,heavy.deep"}
    assert "warm server off" not in capsys.readouterr().err


def test_a_preload_list_is_exactly_what_the_server_imports_and_an_empty_one_turns_learning_off(tmp_path, monkeypatch):
    assert seen_loaded(learning_project(tmp_path, monkeypatch, "runner: {preload: []}\n")) == dict.fromkeys("abc", "")
    listed = learning_project(tmp_path / "listed", monkeypatch, "runner: {preload: [heavy]}\n")
    assert seen_loaded(listed) == dict.fromkeys("abc", "heavy")


RECORDS = "import os, sys\nARGV0, SEEN = sys.argv[0], os.environ.get('SEEN')\n"
STANDBY = """\
\"\"\"What ran before this program's own first line: each installed module says when it was imported.\"\"\"
import json
import sys
import first
from first import deep
import mine
VALUE = 1
import after


def later():
    import inside


later()
when = {m: "early" if sys.modules[m].ARGV0 != sys.argv[0] else "program"
        for m in ("first", "first.deep", "beside", "after", "inside")}
json.dump({"when": when, "seen": sys.modules["first"].SEEN}, open(sys.argv[1], "w"))
"""


def standby_project(tmp_path: Path, monkeypatch) -> Path:
    """Installed modules that note when they were imported (the interpreter's argv is the
    program's only once it runs) and under which environment; a checkout module between them."""
    site = tmp_path / "site"
    (site / "first").mkdir(parents=True)
    for name in ("first/__init__.py", "first/deep.py", "beside.py", "after.py", "inside.py"):
        (site / name).write_text(RECORDS)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ["PYTHONPATH"]]))
    monkeypatch.setattr(warm_backend, "_SHARED", {})
    monkeypatch.setattr(machine, "cores", lambda: 4)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "mine.py").write_text("import beside\nMINE = 1\nimport after\n")
    (repo / "standby.py").write_text(STANDBY)
    runs = "".join(f"  - {{name: {n}, run: python standby.py {n}, env: {{SEEN: {n}}}}}\n" for n in "abc")
    (repo / ".gbbot.yml").write_text(f"version: 1\nrunner: {{preload: []}}\nentrypoints:\n{runs}")
    return repo


def test_a_standby_child_imports_what_its_program_imports_first_in_its_own_environment_one_job_per_core_has_none(
    tmp_path, monkeypatch
):
    repo = standby_project(tmp_path, monkeypatch)
    assert main(["check", "--root", str(repo), "--quiet", "--fail-on", "none"]) == 0
    found = {n: json.loads((repo / n).read_text()) for n in "abc"}
    # a started when its turn came. b and c were forked while the one before ran, and imported
    # their program's first imports then: the installed ones before the checkout's `mine`, and
    # what `mine` imports before its own first statement; never what comes after a statement
    # (`mine`'s, or the program's: `mine` sets MINE first), nor an import inside a function.
    early = {"first": "early", "first.deep": "early", "beside": "early", "after": "program", "inside": "program"}
    assert found["a"] == {"when": dict.fromkeys(early, "program"), "seen": "a"}
    assert found["b"] == {"when": early, "seen": "b"}  # imported under its own `env:`, not the server's
    assert found["c"] == {"when": early, "seen": "c"}

    # one job per core leaves no core for a standby child: each imports when its program runs (the
    # same server: it learns nothing with `preload: []`, and its children's imports stay theirs)
    served = dict(warm_backend._SHARED)
    for name in "abc":
        (repo / name).unlink()
    monkeypatch.setattr(machine, "cores", lambda: 1)
    assert main(["check", "--root", str(repo), "--quiet", "--fail-on", "none"]) == 0
    assert {json.loads((repo / n).read_text())["when"]["first"] for n in "abc"} == {"program"}
    assert served == warm_backend._SHARED


def test_ctrl_c_stops_a_warm_child_and_gbbot_promptly_and_drops_the_standby_child_too(tmp_path):
    assert machine.cores() > 1, "gbbot runs in a process of its own here: it needs a core to spare"
    (tmp_path / "next.py").write_text("import json\nopen('ran', 'w').write('ran')\n")
    gbbot, child = hanging_check(
        tmp_path, "  - {name: hang, run: python hang.py, timeout: 600}\n  - {name: next, run: python next.py}\n"
    )
    assert Path(f"/proc/{child}/status").read_text().count("PPid") and os.getppid() != child
    server = int(Path(f"/proc/{child}/stat").read_text().rpartition(")")[2].split()[1])
    deadline = time.monotonic() + 30  # the standby child for `next`: the server's other child
    while len(children_of(server)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    (standby,) = set(children_of(server)) - {child}
    gbbot.send_signal(signal.SIGINT)
    _, err = gbbot.communicate(timeout=30)
    assert gbbot.returncode == 130 and "interrupted" in err
    assert not alive(child) and not alive(standby)
    assert not (tmp_path / "ran").exists()  # it never ran its program


def children_of(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


@pytest.mark.parametrize("cores", [1, 4])
def test_a_module_that_hangs_in_the_learning_probe_holds_no_entrypoint_back(tmp_path, monkeypatch, cores):
    repo = learning_project(tmp_path, monkeypatch)
    monkeypatch.setattr(machine, "cores", lambda: cores)  # 4: b and c are standby children
    (tmp_path / "site" / "stalls.py").write_text(
        "import sys, time\nif sys.argv[0].endswith('warm_server.py'):  # the server's probe, never a program\n"
        "    time.sleep(600)\n"
    )
    (repo / "learner.py").write_text(
        "import sys\nopen(sys.argv[1], 'w').write(str('stalls' in sys.modules))\nif sys.argv[1] == 'a':\n"
        "    import stalls\n"
    )
    started = time.monotonic()
    assert seen_loaded(repo) == {"a": "False", "b": "False", "c": "False"}
    assert time.monotonic() - started < 120  # the probe is still asleep: it is not waited for


def test_an_entrypoint_that_stops_the_warm_server_fails_alone_and_gbbot_still_reports(tmp_path, monkeypatch):
    """PR code SIGSTOPs the warm server (its parent): gbbot never hears of its exit. It waits
    REPLY_DEADLINE_S, not until the job's time limit: that entrypoint crashed, and says why; the
    server is killed and the next entrypoint runs in a fresh process."""
    monkeypatch.setattr(warm_backend, "REPLY_DEADLINE_S", 3.0, raising=False)
    (tmp_path / "stop.py").write_text(
        "import os, signal, time\ntime.sleep(0.5)\nos.kill(os.getppid(), signal.SIGSTOP)\n"
    )
    (tmp_path / "ok.py").write_text("import sys\nopen(sys.argv[1], 'w').write(str('torch' in sys.modules))\n")
    # a preload list of its own: its own server, not the one the other tests share
    body = "runner: {preload: [colorsys]}\nentrypoints: [{name: stop, run: python stop.py}, {name: after, run: python ok.py after}]\n"
    started = time.monotonic()
    found = entries(tmp_path, body, warm=True, jobs=1)
    assert time.monotonic() - started < 120
    assert found["stop"].status.value == "crashed"
    assert "the warm server was lost: it did not" in (found["stop"].error or "")  # answer, or report an exit
    assert found["after"].status.value == "no_compile", found["after"].error
    assert (tmp_path / "after").read_text() == "False"  # a fresh process: the server is gone
