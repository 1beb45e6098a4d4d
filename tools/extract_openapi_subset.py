"""Extract the slice of GitHub's REST description that gbbot's tests need.

Inputs (both fetched with ``npm pack`` into a temporary directory unless given):

* ``@octokit/openapi@23.0.2``, file ``generated/api.github.com.json``: GitHub's
  official OpenAPI 3.0.3 description of api.github.com (13 MB).
* ``@octokit/webhooks-examples@7.6.1``, file ``api.github.com/index.json``:
  GitHub's example webhook payloads, 58 events.

Outputs (committed, so the tests never need the network):

* ``tests/data/github_openapi_subset.json``: only the operations in
  ``OPERATIONS``, with every component they reference (transitively) kept as
  a ``$ref`` target, plus the generic error schemas in ``EXTRA_COMPONENTS``.
  It stays a valid OpenAPI 3.0.3 document that openapi-core can load.  The
  response examples are kept: the stand-in builds its objects from them.
* ``tests/data/webhooks/<event>[.<action>].json``: one payload per event in
  ``WEBHOOKS``.

One payload is changed on purpose: none of the ``issue_comment`` examples is a
comment on a pull request, yet ``/gb-fix`` only ever arrives that way.  GitHub
marks such an issue with an ``issue.pull_request`` object (``url``,
``html_url``, ``diff_url``, ``patch_url``, ``merged_at``), so
``add_pull_request_link`` adds one, built from the issue's own URLs.

One thing in the description is normalised: a schema that is ``nullable`` and
has an ``enum`` without ``null`` (``check-run.conclusion``,
``pull-request-review-comment.start_side``) gets ``null`` added to the enum.
Under OpenAPI 3.0.3, ``nullable`` does not extend ``enum``, so validators
(openapi-core included) reject the ``null`` GitHub really sends, e.g. the
conclusion of a queued check run.

Run from the repository root::

    python tools/extract_openapi_subset.py                 # fetch with npm
    python tools/extract_openapi_subset.py --openapi A.json --webhooks I.json
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

OPENAPI_PACKAGE = "@octokit/openapi@23.0.2"
OPENAPI_MEMBER = "package/generated/api.github.com.json"
WEBHOOKS_PACKAGE = "@octokit/webhooks-examples@7.6.1"
WEBHOOKS_MEMBER = "package/api.github.com/index.json"

REPO_ROOT = Path(__file__).resolve().parent.parent
SUBSET_PATH = REPO_ROOT / "tests" / "data" / "github_openapi_subset.json"
WEBHOOKS_DIR = REPO_ROOT / "tests" / "data" / "webhooks"
MAX_SUBSET_BYTES = 2_000_000

OPERATIONS: tuple[tuple[str, str], ...] = (
    ("get", "/repos/{owner}/{repo}"),
    ("get", "/repos/{owner}/{repo}/pulls"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/files"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/comments"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews"),
    ("post", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews"),
    ("get", "/repos/{owner}/{repo}/commits/{commit_sha}/pulls"),
    ("get", "/repos/{owner}/{repo}/contents/{path}"),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("get", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("patch", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("delete", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("get", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"),
    ("post", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"),
    ("post", "/repos/{owner}/{repo}/check-runs"),
    ("get", "/repos/{owner}/{repo}/check-runs/{check_run_id}"),
    ("patch", "/repos/{owner}/{repo}/check-runs/{check_run_id}"),
    ("get", "/repos/{owner}/{repo}/check-runs/{check_run_id}/annotations"),
    ("get", "/repos/{owner}/{repo}/commits/{ref}/check-runs"),
    ("get", "/repos/{owner}/{repo}/collaborators/{username}/permission"),
    ("get", "/user"),
    # The audit's tracking issue: found by label, created once, then edited (or reopened).
    ("get", "/repos/{owner}/{repo}/issues"),
    ("post", "/repos/{owner}/{repo}/issues"),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}"),
    ("patch", "/repos/{owner}/{repo}/issues/{issue_number}"),
    # The audit's fix PR (open_fix_pr): opened once from gbbot's branch, then edited.
    ("post", "/repos/{owner}/{repo}/pulls"),
    ("patch", "/repos/{owner}/{repo}/pulls/{pull_number}"),
)

# Error bodies for statuses an operation does not declare (GitHub answers 401,
# 403 and 422 on every write, but checks/create, for one, declares only 201).
EXTRA_COMPONENTS: tuple[str, ...] = (
    "#/components/schemas/basic-error",
    "#/components/schemas/validation-error",
    "#/components/schemas/validation-error-simple",
)

# (event, action or None for action-less events, output file stem)
WEBHOOKS: tuple[tuple[str, str | None, str], ...] = (
    ("pull_request", "opened", "pull_request.opened"),
    ("pull_request", "synchronize", "pull_request.synchronize"),
    # The only completed run whose pull_requests[] is not empty (its event is
    # "repository_dispatch" in the package; tests that need "pull_request" set it).
    ("workflow_run", "completed", "workflow_run.completed"),
    ("issue_comment", "created", "issue_comment.created"),
    ("push", None, "push"),
    ("workflow_dispatch", None, "workflow_dispatch"),
)

REF_PATTERN = re.compile(r"^#/components/([^/]+)/([^/]+)$")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gbbot-openapi-") as scratch:
        openapi_path = args.openapi or npm_fetch(OPENAPI_PACKAGE, OPENAPI_MEMBER, Path(scratch))
        webhooks_path = args.webhooks or npm_fetch(WEBHOOKS_PACKAGE, WEBHOOKS_MEMBER, Path(scratch))
        subset = extract_subset(load_json(openapi_path))
        examples = load_json(webhooks_path)
    write_subset(subset, SUBSET_PATH)
    for stem, payload in select_webhooks(examples):
        write_json(WEBHOOKS_DIR / f"{stem}.json", payload)
    print(f"wrote {SUBSET_PATH.relative_to(REPO_ROOT)} and {len(WEBHOOKS)} webhook payloads")
    return 0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--openapi", type=Path, help="an unpacked api.github.com.json")
    parser.add_argument("--webhooks", type=Path, help="an unpacked webhooks index.json")
    return parser.parse_args(argv)


def npm_fetch(package: str, member: str, scratch: Path) -> Path:
    """``npm pack`` one package into ``scratch`` and unpack one file of it."""
    result = subprocess.run(
        ["npm", "pack", package, "--silent"],
        cwd=scratch,
        check=True,
        capture_output=True,
        text=True,
    )
    tarball = scratch / result.stdout.strip().splitlines()[-1]
    target = scratch / tarball.stem
    with tarfile.open(tarball) as archive:
        archive.extract(member, target, filter="data")
    return target / member


def load_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)


def extract_subset(spec: dict[str, Any]) -> dict[str, Any]:
    paths = select_operations(spec["paths"])
    components = collect_components(spec, [paths, *(resolve(spec, ref) for ref in EXTRA_COMPONENTS)])
    for ref in EXTRA_COMPONENTS:
        kind, name = split_ref(ref)
        components.setdefault(kind, {})[name] = copy.deepcopy(resolve(spec, ref))
    subset = {
        "openapi": spec["openapi"],
        "info": subset_info(spec["info"]),
        "servers": spec["servers"],
        "paths": paths,
        "components": components,
    }
    allow_null_in_nullable_enums(subset)
    return subset


def subset_info(info: dict[str, Any]) -> dict[str, Any]:
    return {
        **{key: info[key] for key in ("title", "version", "license") if key in info},
        "description": (
            f"Subset of {OPENAPI_PACKAGE} ({OPENAPI_MEMBER}) for gbbot's tests; "
            "regenerate with tools/extract_openapi_subset.py."
        ),
    }


def select_operations(all_paths: dict[str, Any]) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for method, path in OPERATIONS:
        item = all_paths[path]
        selected = paths.setdefault(path, {})
        if "parameters" in item:
            selected["parameters"] = copy.deepcopy(item["parameters"])
        selected[method] = copy.deepcopy(item[method])
    return paths


def collect_components(spec: dict[str, Any], roots: list[Any]) -> dict[str, dict[str, Any]]:
    """Every component reachable by ``$ref`` from ``roots``, grouped by kind."""
    components: dict[str, dict[str, Any]] = {}
    pending = [ref for root in roots for ref in iter_refs(root)]
    while pending:
        kind, name = split_ref(pending.pop())
        if name in components.get(kind, {}):
            continue
        target = resolve(spec, f"#/components/{kind}/{name}")
        components.setdefault(kind, {})[name] = copy.deepcopy(target)
        pending.extend(iter_refs(target))
    return {kind: dict(sorted(items.items())) for kind, items in sorted(components.items())}


def allow_null_in_nullable_enums(node: Any) -> None:
    if isinstance(node, dict):
        enum = node.get("enum")
        if node.get("nullable") is True and isinstance(enum, list) and None not in enum:
            enum.append(None)
        for value in node.values():
            allow_null_in_nullable_enums(value)
    elif isinstance(node, list):
        for value in node:
            allow_null_in_nullable_enums(value)


def iter_refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from iter_refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from iter_refs(value)


def split_ref(ref: str) -> tuple[str, str]:
    match = REF_PATTERN.match(ref)
    if match is None:
        raise ValueError(f"unsupported $ref {ref!r}: only #/components/<kind>/<name>")
    return match.group(1), match.group(2)


def resolve(spec: dict[str, Any], ref: str) -> Any:
    kind, name = split_ref(ref)
    return spec["components"][kind][name]


def write_subset(subset: dict[str, Any], path: Path) -> None:
    text = json.dumps(subset, indent=1, ensure_ascii=False) + "\n"
    size = len(text.encode())
    if size > MAX_SUBSET_BYTES:
        raise SystemExit(f"{path.name} would be {size} bytes, over {MAX_SUBSET_BYTES}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def select_webhooks(events: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    by_name = {event["name"]: event["examples"] for event in events}
    for event, action, stem in WEBHOOKS:
        payload = copy.deepcopy(pick_example(event, action, by_name[event]))
        if event == "issue_comment":
            add_pull_request_link(payload["issue"])
        yield stem, payload


def pick_example(event: str, action: str | None, examples: list[dict[str, Any]]) -> dict[str, Any]:
    """The first example with ``action``, preferring a PR-run and a branch push."""
    matching = [example for example in examples if example.get("action") == action]
    preferred = [example for example in matching if is_preferred(event, example)]
    if not matching:
        raise SystemExit(f"no {event} example with action {action!r}")
    return (preferred or matching)[0]


def is_preferred(event: str, example: dict[str, Any]) -> bool:
    if event == "workflow_run":
        return bool(example["workflow_run"]["pull_requests"])
    if event == "push":
        return str(example["ref"]).startswith("refs/heads/")
    return True


def add_pull_request_link(issue: dict[str, Any]) -> None:
    """Mark the example's issue as a pull request, as GitHub does for PR comments.

    No ``issue_comment`` example in the package is on a pull request.
    """
    pull_url = issue["url"].replace("/issues/", "/pulls/")
    html_url = issue["html_url"].replace("/issues/", "/pull/")
    issue["pull_request"] = {
        "url": pull_url,
        "html_url": html_url,
        "diff_url": f"{html_url}.diff",
        "patch_url": f"{html_url}.patch",
        "merged_at": None,
    }


def write_json(path: Path, payload: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
