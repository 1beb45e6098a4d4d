"""gbbot-fix.yml: the three jobs keep PR code and write tokens apart, as the handler's stages expect."""

from __future__ import annotations

from tests.unit.test_workflows import ACTION, WORKFLOWS, granted, load, triggers, uses

PATH = WORKFLOWS / "gbbot-fix.yml"


def test_the_jobs_split_pr_code_from_write_tokens():
    document = load(PATH)
    assert triggers(document) == {"issue_comment": {"types": ["created"]}}
    jobs = document["jobs"]
    assert list(jobs) == ["authorize", "fix", "push"]
    stages = {name: [s for s in job["steps"] if uses(s, ACTION)] for name, job in jobs.items()}
    assert {name: [s["with"]["gb-fix"] for s in found] for name, found in stages.items()} == {
        "authorize": ["authorize"],
        "fix": ["fix"],
        "push": ["push"],
    }
    assert granted(jobs["fix"]["permissions"]) == {"contents": "read"}
    assert stages["fix"][0]["with"]["token"] == ""
    assert granted(jobs["push"]["permissions"])["contents"] == "write"
    for name, job in jobs.items():
        assert not any("run" in s for s in job["steps"]), f"{name}: runs a shell line"
        for checkout in (s for s in job["steps"] if uses(s, "actions/checkout@")):
            assert checkout["with"]["persist-credentials"] is False
            assert checkout["with"]["ref"] == "${{ needs.authorize.outputs.head-sha }}"
    assert "needs.authorize.outputs.allowed == 'true'" in jobs["push"]["if"]


def test_the_comment_text_reaches_no_step():
    assert "comment.body" not in PATH.read_text()


def test_the_fix_job_judges_the_head_against_the_base_authorize_pinned():
    """What the PR added is decided against its merge-base: the fix job gets the base commit
    authorize read, and a checkout with the history to find the merge-base in."""
    jobs = load(PATH)["jobs"]
    assert jobs["authorize"]["outputs"]["base-sha"] == "${{ steps.gbbot.outputs.base-sha }}"
    (fix,) = [s for s in jobs["fix"]["steps"] if uses(s, ACTION)]
    assert fix["with"]["base-ref"] == "${{ needs.authorize.outputs.base-sha }}"
    (checkout,) = [s for s in jobs["fix"]["steps"] if uses(s, "actions/checkout@")]
    assert checkout["with"]["fetch-depth"] == 0
