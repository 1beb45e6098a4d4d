"""Which environment variables gbbot keeps, holds and hands on: pure name rules that gbbot applies
to its own environment (what it does not keep is held in memory, never in what a process it starts
inherits) and to an entrypoint's (an allow-list, widened only by whoever started gbbot)."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable

# What an entrypoint inherits from gbbot's environment: what finds programs, libraries, caches and
# the GPU, and says where it runs. Everything else is withheld (an allow-list, like tox's
# `passenv`): a deny-list of secret-looking names always misses some (API_KEY, DB_PASSWD, …).
ALLOWED = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_*", "LANGUAGE", "TZ",
    "TMPDIR", "TMP", "TEMP", "PYTHON*", "VIRTUAL_ENV", "CONDA_PREFIX", "CUDA*", "NVIDIA*",
    "TORCH*", "TORCHINDUCTOR_*", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_*",
    "LD_LIBRARY_PATH", "HF_HOME", "XDG_CACHE_HOME", "CI", "GITHUB_ACTIONS", "RUNNER_OS", "RUNNER_ARCH",
)  # fmt: skip
# What gbbot's own process keeps in its environment besides the allow-list: what it, git, the
# GitHub client and docker read there (secret-looking names excepted). The rest is held.
KEPT = (
    *ALLOWED, "GBBOT_*", "XDG_CONFIG_HOME", "DOCKER_HOST", "DOCKER_CERT_PATH", "DOCKER_CONFIG",
    # GitHub's default variables, by name: a workflow's own secret may be called GITHUB_PAT
    "GITHUB_ACTION", "GITHUB_ACTION_PATH", "GITHUB_ACTION_REPOSITORY", "GITHUB_ACTOR", "GITHUB_ACTOR_ID",
    "GITHUB_API_URL", "GITHUB_BASE_REF", "GITHUB_ENV", "GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH",
    "GITHUB_GRAPHQL_URL", "GITHUB_HEAD_REF", "GITHUB_JOB", "GITHUB_OUTPUT", "GITHUB_PATH", "GITHUB_REF",
    "GITHUB_REF_NAME", "GITHUB_REF_PROTECTED", "GITHUB_REF_TYPE", "GITHUB_REPOSITORY", "GITHUB_REPOSITORY_ID",
    "GITHUB_REPOSITORY_OWNER", "GITHUB_REPOSITORY_OWNER_ID", "GITHUB_RETENTION_DAYS", "GITHUB_RUN_ATTEMPT",
    "GITHUB_RUN_ID", "GITHUB_RUN_NUMBER", "GITHUB_SERVER_URL", "GITHUB_SHA", "GITHUB_STATE",
    "GITHUB_STEP_SUMMARY", "GITHUB_TRIGGERING_ACTOR", "GITHUB_WORKFLOW", "GITHUB_WORKFLOW_REF",
    "GITHUB_WORKFLOW_SHA", "GITHUB_WORKSPACE", "RUNNER_DEBUG", "RUNNER_ENVIRONMENT", "RUNNER_NAME",
    "RUNNER_TEMP", "RUNNER_TOOL_CACHE", "RUNNER_WORKSPACE",
    # what git reads that gbbot sets or copies (edges/git)
    "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_SSL_CAINFO",
    "DOCKER_TLS_VERIFY", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR",
    "PWD", "SHLVL", "HOSTNAME", "_",
)  # fmt: skip
# Where whoever starts gbbot (the workflow's `env:`, the user's shell; never a file of the
# repository) widens what entrypoints inherit beyond the allow-list: names or globs, comma- or
# space-separated. The config's `pass_env` cannot pass anything gbbot holds.
WIDEN_VARIABLE = "GBBOT_PASS_ENV"
# Names that look like credentials.
SECRET_LOOKING = (
    "*TOKEN*", "*SECRET*", "*PASSWORD*", "*PASSWD*", "*_KEY", "*CREDENTIAL*", "*AUTH*", "ACTIONS_*", "INPUT_*",
)  # fmt: skip
# The Actions token, the action's inputs and the runner's own credentials: never handed to user
# code, whoever lists them.
NEVER = ("GITHUB_TOKEN", "GH_TOKEN", "ACTIONS_*", "INPUT_*")


# Variables whose value may be a URL with a user and password in it: `http://user:pass@proxy:3128`.
URL_VALUED = ("*_PROXY",)


def carries_credentials(name: str, value: str) -> bool:
    """Whether `value` holds credentials for a variable `name` that is not secret-looking by its
    name: a proxy URL with a user (and, as a rule, a password) before its host."""
    authority = value.split("//", 1)[-1].split("/", 1)[0]
    return matches(name, URL_VALUED) and "@" in authority


def matches(name: str, patterns: Iterable[str]) -> bool:
    """Case-insensitive: `github_token` is the same secret as GITHUB_TOKEN."""
    return any(fnmatch.fnmatchcase(name.upper(), p.upper()) for p in patterns)


def looks_secret(name: str) -> bool:
    return matches(name, (*SECRET_LOOKING, *NEVER))


def held_at_start(name: str) -> bool:
    """Whether gbbot holds `name` in memory when it starts (and so keeps it out of its own
    environment): a secret-looking name, or anything outside what it keeps."""
    return looks_secret(name) or not matches(name, KEPT)


def widening(value: str | None) -> tuple[str, ...]:
    """The names and globs in a GBBOT_PASS_ENV value."""
    return tuple(part for part in (value or "").replace(",", " ").split() if part)
