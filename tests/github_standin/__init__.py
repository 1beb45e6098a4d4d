"""A GitHub stand-in for tests: real HTTP on 127.0.0.1, state, and GitHub's OpenAPI contract.

Use the ``github_standin`` fixture (``fixtures.py``) or ``GitHubStandin()`` as a context
manager.  One repository, ``octo-org/octo-repo`` by default, served at ``server.url``::

    def test_publish(github_standin):
        github_standin.add_pull(7, head_sha)
        github_standin.set_pull_files(7, {"model.py": "@@ -1 +1,2 @@\\n x\\n+print(x)"})
        github_standin.set_permission("maintainer", "write")
        github_standin.add_comment(7, "<!-- gbbot -->", ACTIONS_BOT, minimized=True)
        client = github_standin.github_client(ACTIONS_TOKEN)  # PyGithub, no retry/throttle
        ...
        assert len(github_standin.requests_to("POST", r"/issues/7/comments$")) == 1

Tokens (``DEFAULT_TOKENS``; replace with ``tokens=`` or ``add_token``): ``ACTIONS_TOKEN``
(github-actions[bot], writes, ``GET /user`` is 403), ``FORK_PR_TOKEN`` (the same bot,
read-only: every write is 403), ``MAINTAINER_TOKEN`` (user "maintainer").  Failures:
``fail_next``, ``fail_rate_limited``, ``fail_secondary_rate_limited``.  Contract
breaches collect in ``violations``; take the ones a test provokes with ``take_violations``.
"""

from .model import ACTIONS_BOT, CheckRun, Identity, IssueComment, Pull, PullFile, Review
from .server import (
    ACTIONS_TOKEN,
    DEFAULT_TOKENS,
    FORK_PR_TOKEN,
    MAINTAINER_TOKEN,
    GitHubStandin,
    RecordedRequest,
    Violation,
)

__all__ = [
    "ACTIONS_BOT",
    "ACTIONS_TOKEN",
    "DEFAULT_TOKENS",
    "FORK_PR_TOKEN",
    "MAINTAINER_TOKEN",
    "CheckRun",
    "GitHubStandin",
    "Identity",
    "IssueComment",
    "Pull",
    "PullFile",
    "RecordedRequest",
    "Review",
    "Violation",
]
