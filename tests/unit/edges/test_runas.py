"""GBBOT_RUN_AS: which user the repository's code runs as (the drop itself: e2e/test_run_as.py)."""

from __future__ import annotations

import pwd

import pytest

from gbbot.core.errors import GbbotError
from gbbot.edges import runas


@pytest.mark.parametrize("value", [None, "", "  ", "root", "0"])
def test_unset_empty_or_root_runs_the_code_as_gbbot(value):
    assert runas.wanted(value) is None


def test_a_name_or_a_uid_names_that_user():
    nobody = pwd.getpwnam("nobody")
    expected = (nobody.pw_uid, nobody.pw_gid, "nobody")
    assert runas.wanted("nobody") == expected
    assert runas.wanted(str(nobody.pw_uid)) == expected


def test_a_uid_without_a_passwd_entry_runs_in_its_own_group():
    """A runner's workspace owner (uid 1001 on GitHub's hosted runners) has no entry in the image."""
    uid = next(u for u in range(50000, 60000) if not _exists(u))
    assert runas.wanted(str(uid)) == (uid, uid, str(uid))


def test_a_name_that_is_no_user_is_an_error():
    with pytest.raises(GbbotError, match="GBBOT_RUN_AS='no-such-user-here' names no user"):
        runas.wanted("no-such-user-here")


def _exists(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True
