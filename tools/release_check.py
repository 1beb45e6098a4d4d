"""Before a release is published: the tag, gbbot's version, the image action.yml names and the
`uses: gbbot/gbbot@…` the README, docs and example workflows tell users to copy all agree.

    python3 tools/release_check.py --owner gbbot                  # exit 1, saying what differs
    python3 tools/release_check.py --owner gbbot --image          # print the image to build and push
    python3 tools/release_check.py --owner gbbot --pin IMAGE@sha256:…   # action.yml runs that digest
    python3 tools/release_check.py --owner gbbot --tag v0.1.0     # the tagged commit may be released

On the default branch action.yml names `docker://ghcr.io/<owner>/gbbot:<version>`, the image the
release workflow (.github/workflows/release.yml) builds from the Dockerfile and pushes. A tag is
mutable, so the release then pins what it pushed: `--pin` rewrites action.yml's image to the pushed
digest (`ghcr.io/<owner>/gbbot@sha256:…`), the release commits that on top of the checked commit and
tags it `v<version>`; `--tag` refuses a tagged commit whose action.yml is not pinned by digest, so
pinning the action by commit (or by tag) pins the code that runs. A tag whose action.yml names
another version would make every user of that tag run an old image, or one that does not exist; a
README naming another tag than the release's (`@v1` while the release is v0.1.0) sends users to a
tag that was never pushed. A pin by commit (`@<sha> # v0.1.0`, as the README's workflow has it: a
tag can be moved) names a release already out, whose commit is known; it is brought to the new
release's commit after the release, and must only say which release it is. Standard library only:
it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMAGE = re.compile(r"^\s*image:\s*[\"']?(?P<image>\S+?)[\"']?\s*(#.*)?$", re.MULTILINE)
VERSION = re.compile(r'^__version__\s*=\s*"(?P<version>[^"]+)"', re.MULTILINE)
# pyproject.toml's [project] version: the first `version = "…"` after the table's header.
PROJECT_VERSION = re.compile(
    r'^\[project\]\s*$(?:(?!^\[).)*?^version\s*=\s*"(?P<version>[^"]+)"', re.MULTILINE | re.DOTALL
)


# `uses: gbbot/gbbot@REF` in what users copy (the owner may be any: a fork releases as itself), with
# the comment after it: a pin by commit says which release's commit it is (`@<sha> # v0.1.0`)
USES = re.compile(
    r"^\s*(?:-\s+)?uses:\s*[\"']?[\w.-]+/gbbot@(?P<ref>[^\s\"'#]+)[\"']?[ \t]*(?:#[ \t]*(?P<names>\S*))?",
    re.MULTILINE,
)
COMMIT = re.compile(r"[0-9a-f]{40}")


def documented_uses(root: Path) -> list[tuple[str, str]]:
    """(file, ref) for every `uses: …/gbbot@ref` in the README, docs/ and the example workflows; a
    pin by commit as `<sha> # <the release it names>`."""
    files = [
        root / "README.md",
        *sorted((root / "docs").glob("*.md")),
        *sorted((root / ".github" / "workflows").glob("*.yml")),
    ]
    found = []
    for path in files:
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            found += [
                (
                    str(path.relative_to(root)),
                    f"{m['ref']} # {m['names'] or ''}" if COMMIT.fullmatch(m["ref"]) else m["ref"],
                )
                for m in USES.finditer(text)
            ]
    return found


def versions(root: Path) -> dict[str, str]:
    """The version each file states."""
    project = PROJECT_VERSION.search((root / "pyproject.toml").read_text(encoding="utf-8"))
    package = VERSION.search((root / "gbbot" / "__init__.py").read_text(encoding="utf-8"))
    found = {"pyproject.toml": project, "gbbot/__init__.py": package}
    return {name: match["version"] if match else "(none)" for name, match in found.items()}


def action_image(root: Path) -> str:
    found = IMAGE.search((root / "action.yml").read_text(encoding="utf-8"))
    return found["image"] if found else "(none)"


def expected_image(owner: str, version: str) -> str:
    return f"docker://ghcr.io/{owner.lower()}/gbbot:{version}"


def pinned_image(owner: str, named: str) -> bool:
    """Whether `named` is this owner's image pinned by a sha256 digest."""
    return re.fullmatch(rf"docker://ghcr\.io/{re.escape(owner.lower())}/gbbot@sha256:[0-9a-f]{{64}}", named) is not None


def pin(root: Path, owner: str, image: str) -> str:
    """Rewrite action.yml's image to `image` (`ghcr.io/OWNER/gbbot@sha256:…`, as `docker push`
    reports it); the text written. ValueError for anything else: a release never pins a name it did
    not push."""
    named = "docker://" + image.removeprefix("docker://")
    if not pinned_image(owner, named):
        raise ValueError(f"{image!r} is not ghcr.io/{owner.lower()}/gbbot@sha256:<64 hex digits>")
    path = root / "action.yml"
    text = path.read_text(encoding="utf-8")
    found = IMAGE.search(text)
    if found is None:
        raise ValueError("action.yml names no image")
    text = text[: found.start("image")] + named + text[found.end("image") :]
    path.write_text(text, encoding="utf-8")
    return text


def problems(root: Path, owner: str, tag: str | None) -> list[str]:
    """What disagrees; empty when the release may go out."""
    stated = versions(root)
    version = stated["pyproject.toml"]
    found = [f"{name} says {v}, pyproject.toml {version}" for name, v in stated.items() if v != version]
    if tag is not None and tag != f"v{version}":
        found.append(f"the tag is {tag}, the version v{version}")
    wanted, named = expected_image(owner, version), action_image(root)
    if tag is not None and not pinned_image(owner, named):
        found.append(f"action.yml runs {named}: a release tag pins ghcr.io/{owner.lower()}/gbbot by digest (--pin)")
    elif tag is None and named != wanted and not pinned_image(owner, named):
        found.append(f"action.yml runs {named}, the release pushes {wanted}")
    for name, ref in documented_uses(root):
        if COMMIT.match(ref) and not re.fullmatch(r"[0-9a-f]{40} # v\d+(\.\d+)*", ref):
            found.append(f"{name} pins gbbot@{ref[:40]} without saying which release's commit it is (# vX.Y.Z)")
        elif not COMMIT.match(ref) and ref != f"v{version}":
            found.append(f"{name} uses gbbot@{ref}, the release is v{version}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--owner", required=True, help="the repository's owner (the registry namespace)")
    parser.add_argument("--tag", help="the release tag, e.g. v0.1.0")
    parser.add_argument("--image", action="store_true", help="print the image to build (ghcr.io/OWNER/gbbot:VERSION)")
    parser.add_argument("--pin", metavar="IMAGE", help="pin action.yml to IMAGE (ghcr.io/OWNER/gbbot@sha256:…)")
    parser.add_argument("--root", type=Path, default=ROOT)
    options = parser.parse_args(argv)
    if options.pin:
        try:
            pin(options.root, options.owner, options.pin)
        except ValueError as exc:
            print(f"release_check: {exc}", file=sys.stderr)
            return 1
    found = problems(options.root, options.owner, options.tag)
    for problem in found:
        print(f"release_check: {problem}", file=sys.stderr)
    if found:
        return 1
    if options.image:
        print(expected_image(options.owner, versions(options.root)["pyproject.toml"]).removeprefix("docker://"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
