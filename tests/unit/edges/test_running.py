"""The runs in flight, as the progress line names them: a pytest: run's current test, cut when long."""

from __future__ import annotations

from gbbot.core.model import RUNNING_TEST_FILE
from gbbot.edges import running


def test_runs_in_flight_name_their_current_test_until_they_finish(tmp_path):
    suite, script = tmp_path / "suite", tmp_path / "script"
    suite.mkdir()
    (suite / RUNNING_TEST_FILE).write_text("tests/test_x.py::test_y[" + "a" * 300 + "]")
    running.started("suite", suite)
    running.started("script", script)  # no file: not a pytest: run
    try:
        (line,) = running.running_tests()
        assert line.startswith("suite: tests/test_x.py::test_y[aaa") and line.endswith("…")
        assert len(line) == len("suite: ") + running.MAX_TEST_CHARS + 1
        (suite / RUNNING_TEST_FILE).write_text("")  # the session ended
        assert running.running_tests() == []
    finally:
        running.finished(suite)
        running.finished(script)
    assert running.current_test(script) is None
