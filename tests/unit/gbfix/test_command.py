"""The pure parts of `/gb-fix`: the command on a comment's first line, the role order, and what an
untrusted patch may be."""

from __future__ import annotations

import pytest

from gbbot.deliver import commit as fix_commit
from gbbot.deliver import patchcheck
from gbbot.fix.patch import FilePatch
from gbbot.gbfix import permission
from gbbot.gbfix.command import FIRST_LINE_MAX, Command, Kind, parse


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("/gb-fix", Command(Kind.FIX)),
        ("/gb-fix\r\nthanks", Command(Kind.FIX)),
        ("  /gb-fix   GB0059  ", Command(Kind.FIX, gb_id="GB0059")),
        ("/gb-fix gb0059", Command(Kind.FIX, gb_id="GB0059")),
        ("/gb-fix src/model.py", Command(Kind.FIX, path="src/model.py")),
        ("/gb-fix 0123456789abcdef", Command(Kind.FIX, fingerprint="0123456789abcdef")),
        ("/gb-fix dry-run", Command(Kind.FIX, dry_run=True)),
        ("/gb-fix dry-run GB0059", Command(Kind.FIX, dry_run=True, gb_id="GB0059")),
        ("/gb-fix all", Command(Kind.FIX, widen=True)),
        ("/gb-fix dry-run all", Command(Kind.FIX, dry_run=True, widen=True)),
        ("/gb-fix all GB0059", Command(Kind.UNKNOWN, word="GB0059")),
        ("/gb-fix help", Command(Kind.HELP)),
        ("/gb-fix --apply", Command(Kind.UNKNOWN, word="--apply")),
        ("/gb-fix ../etc/x.py", Command(Kind.UNKNOWN, word="../etc/x.py")),
        ("/gb-fix $(id).py", Command(Kind.UNKNOWN, word="$(id).py")),
        ("/gb-fix GB0059 model.py", Command(Kind.UNKNOWN, word="model.py")),
        ("hello\n/gb-fix", None),
        ("/gb-fixes", None),
        ("`/gb-fix`", None),
        ("", None),
        ("/gb-fix " + "x" * FIRST_LINE_MAX, None),
    ],
)
def test_the_first_line_alone_is_the_command(body: str, expected: Command | None) -> None:
    assert parse(body) == expected


def test_args_are_the_normalised_words() -> None:
    assert parse("/gb-fix  dry-run\tgb0059").args == "dry-run GB0059"


@pytest.mark.parametrize(
    ("role", "required", "allowed"),
    [
        ("admin", "write", True),
        ("maintain", "write", True),
        ("write", "write", True),
        ("triage", "write", False),
        ("read", "write", False),
        ("write", "maintain", False),
        ("maintain", "admin", False),
        (None, "write", False),
        ("custom-role", "write", False),
    ],
)
def test_roles_are_ordered_admin_maintain_write(role, required, allowed) -> None:
    assert permission.allows(role, required) is allowed


def test_a_custom_role_counts_as_its_base_permission() -> None:
    assert permission.role_from({"permission": "write", "role_name": "release-manager"}) == "write"
    assert permission.role_from({"permission": "none", "role_name": "none"}) is None
    assert permission.role_from("nonsense") is None


GENUINE = patchcheck.render([FilePatch("m.py", "a\nprint(x)\nb\n", "a\nif c:\n    print(x)\nb\n")])


@pytest.mark.parametrize(
    ("patch", "why"),
    [
        (
            GENUINE.replace(
                "diff --git a/m.py b/m.py\n", "diff --git a/m.py b/m.py\nold mode 100644\nnew mode 100755\n"
            ),
            "changes a file's mode",
        ),
        ("diff --git a/x.bin b/x.bin\nBinary files a/x.bin and b/x.bin differ\n", "changes a binary file"),
        ("diff --git a/a.py b/b.py\n--- a/a.py\n+++ b/b.py\n", "renames a file"),
        (GENUINE.replace("+++ b/m.py", "+++ b/other.py"), "new file is not m.py"),
        (GENUINE + "echo pwned\n", "not part of a hunk"),
        (GENUINE + GENUINE, "names a file twice"),
        ("x" * 10, "does not start with a file header"),
    ],
)
def test_an_untrusted_patch_may_only_edit_regular_files_in_place(patch: str, why: str) -> None:
    refused = patchcheck.paths_of(patch.encode())
    assert isinstance(refused, patchcheck.Refused) and why in refused.reason


def test_a_genuine_patch_names_its_files_and_size_and_bytes_are_bounded() -> None:
    assert patchcheck.paths_of(GENUINE.encode()) == ("m.py",)
    assert "over the 10" in patchcheck.paths_of(GENUINE.encode(), max_bytes=10).reason
    assert "binary" in patchcheck.paths_of(b"diff --git a/m b/m\n\0").reason
    assert "UTF-8" in patchcheck.paths_of(b"diff --git a/m b/m\n\xff").reason


def test_protected_paths() -> None:
    assert patchcheck.protected(["m.py"], [".gbbot.yml"], ["m.py"]) is None
    # its own config only where a verified fix names it (a setting in a `model:` entry's option)
    assert patchcheck.protected([".gbbot.yml"], [".gbbot.yml"], [".gbbot.yml"]) is None
    assert "only for a verified fix's setting" in patchcheck.protected([".gbbot.yml"], [".gbbot.yml"], ["m.py"])
    assert ".github/" in patchcheck.protected([".github/x.py"], [], [".github/x.py"])
    assert "no verified fix" in patchcheck.protected(["n.py"], [], ["m.py"])


def test_two_gbbot_fix_commits_in_a_row_stop_the_next_one() -> None:
    bot = (fix_commit.AUTHOR_EMAIL, "gbbot: fix 1 graph break")
    person = ("dev@example.com", "gbbot: fix 1 graph break")
    assert fix_commit.too_many([bot, bot, person])
    assert not fix_commit.too_many([bot, person, bot]) and not fix_commit.too_many([bot])
