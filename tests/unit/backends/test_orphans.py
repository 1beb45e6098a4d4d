"""How a process reads in /proc/PID/stat (gbbot/backends/orphans.py). Daemons that leave their
entrypoint, reaped by `gbbot check` run whole: tests/e2e/test_orphans.py."""

from __future__ import annotations

from gbbot.backends.orphans import parse_stat


def test_stat_fields_are_read_after_a_command_name_with_spaces_and_parentheses():
    child = parse_stat("4242 (evil) R 1 2 3) S 17 4242 4242 0 -1 4194560")
    assert (child.pid, child.parent, child.group, child.session, child.zombie) == (4242, 17, 4242, 4242, False)
