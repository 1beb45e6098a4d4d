"""gbbot's pytest plugin: which test produced which graph break.

    pytest --gbbot                          # installed gbbot registers the plugin
    pytest -p gbbot.child.pytest_plugin --gbbot   # the same, where entry points are not loaded

With `--gbbot`, the plugin notes the bytes each test (setup and teardown included) added to the
TORCH_TRACE files, in `gbbot-tests.json` beside them (gbbot/trace/attribution.py), and prints the graph
breaks per test at the end of the run. It also keeps the node id of the test running now in a file
there, which gbbot's progress line and a timeout's reason read. `pytest:` entrypoints run through it, and gbbot's report
then lists each break's tests.

TORCH_TRACE is read once, when torch is imported. Without it set, the plugin points it at a new
temporary directory before conftest.py files and test modules are imported; that is too late
only when something imported torch earlier (another plugin, a `-p` module): the plugin says so,
and `TORCH_TRACE=DIR pytest --gbbot` works in every case.

Without `--gbbot` the plugin does nothing, and it imports nothing heavy: installing gbbot must not
slow down or change anyone's test runs.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

TRACE_ENV = "TORCH_TRACE"
MAX_SHOWN_PER_TEST = 10


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("gbbot").addoption(
        "--gbbot",
        action="store_true",
        default=False,
        help="trace torch.compile and report the graph breaks of each test (sets TORCH_TRACE if unset)",
    )


def _ensure_trace_dir() -> tuple[Path, str]:
    """The TORCH_TRACE directory, made if the environment named none; and a warning, if any."""
    if os.environ.get(TRACE_ENV):
        return Path(os.environ[TRACE_ENV]), ""
    os.environ[TRACE_ENV] = tempfile.mkdtemp(prefix="gbbot-pytest-")
    warning = ""
    if "torch" in sys.modules:
        warning = (
            "torch was imported before gbbot could set TORCH_TRACE, so nothing may be traced; "
            f"run with {TRACE_ENV}=DIR set in the environment"
        )
    return Path(os.environ[TRACE_ENV]), warning


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    # Called for -p and entry-point plugins before any conftest.py is imported: the earliest
    # moment the option is known, so the first test module's `import torch` sees TORCH_TRACE.
    if getattr(early_config.known_args_namespace, "gbbot", False):
        _ensure_trace_dir()


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("gbbot"):
        config.pluginmanager.register(_Recorder(*_ensure_trace_dir()), "gbbot-recorder")


class _Recorder:
    """Per test: the trace bytes it wrote and how it ended; the sidecar rewritten after each."""

    def __init__(self, trace_dir: Path, warning: str) -> None:
        from gbbot.trace import attribution

        self.attribution = attribution
        self.trace_dir, self.warning = trace_dir, warning
        self.tests: dict[str, object] = {}  # node id → TestRun, in run order
        self.errors: list[str] = []

    def _session(self, exit_status: int | None = None):
        return self.attribution.TestSession(tuple(self.tests.values()), tuple(self.errors), exit_status)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None):
        before = self.attribution.sizes(self.trace_dir)
        self.tests[item.nodeid] = self.attribution.TestRun(item.nodeid, "passed")
        self._running(item.nodeid)
        try:
            return (yield)
        finally:
            spans = self.attribution.grown(before, self.attribution.sizes(self.trace_dir))
            run = self.tests[item.nodeid]
            self.tests[item.nodeid] = type(run)(run.id, run.outcome, spans, run.message)
            self.attribution.write(self.trace_dir, self._session())

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        run = self.tests.get(report.nodeid)
        if run is None or run.outcome == "failed":
            return
        if report.failed:
            crash = getattr(report.longrepr, "reprcrash", None)
            message = (crash.message if crash else str(report.longrepr)).strip().splitlines()
            self.tests[report.nodeid] = type(run)(run.id, "failed", run.spans, message[0][:300] if message else "")
        elif report.skipped and report.when == "setup":
            self.tests[report.nodeid] = type(run)(run.id, "skipped", run.spans, run.message)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            lines = str(report.longrepr).strip().splitlines()
            self.errors.append(f"{report.nodeid or '(session)'}: {lines[-1][:300] if lines else 'error'}")

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.attribution.write(self.trace_dir, self._session(int(exitstatus)))
        self._running("")

    def _running(self, node_id: str) -> None:
        """The test running now, for gbbot's progress line and a timeout's reason; "" once done."""
        from gbbot.core.model import RUNNING_TEST_FILE

        try:
            self.trace_dir.mkdir(parents=True, exist_ok=True)
            (self.trace_dir / RUNNING_TEST_FILE).write_text(node_id, encoding="utf-8")
        except OSError:
            pass  # the run goes on; only the progress line loses the name

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if os.environ.get("GBBOT_MODE"):
            return  # run by gbbot, whose report says this and more
        terminalreporter.write_sep("=", "gbbot: graph breaks per test")
        if self.warning:
            terminalreporter.write_line(f"warning: {self.warning}")
        for line in summary_lines(self.trace_dir, Path(str(terminalreporter.config.rootpath))):
            terminalreporter.write_line(line)


def summary_lines(trace_dir: Path, root: Path) -> list[str]:
    """The breaks of each test that had any, classified as `gbbot check` would."""
    from gbbot.analysis import classify
    from gbbot.trace import attribution, tracelog

    session = attribution.read(trace_dir)
    if session is None:
        return [f"no tests recorded in {trace_dir}"]
    log = tracelog.read_path(trace_dir, attribution.owners(trace_dir, session))
    breaks = classify.classify(log.breaks, str(root.resolve()))
    lines = []
    for test in session.tests:
        mine = [b for b in breaks if test.id in b.tests]
        if not mine:
            continue
        count = sum(b.count for b in mine)
        lines.append(f"{test.id}: {count} graph break{'s' * (count != 1)}")
        for b in mine[:MAX_SHOWN_PER_TEST]:
            where = f"{b.file}:{b.line} in {b.function}"
            lines.append(f"  {b.gb_id or '-'} {b.category.value} {where}: {b.code or b.gb_type}")
        if len(mine) > MAX_SHOWN_PER_TEST:
            lines.append(f"  … and {len(mine) - MAX_SHOWN_PER_TEST} more")
    clean = sum(1 for t in session.tests if not any(t.id in b.tests for b in breaks))
    lines.append(f"{clean} test{'s' * (clean != 1)} without graph breaks")
    lines.append(f"trace: {trace_dir} (`gbbot parse {trace_dir}` for the full report)")
    return lines
