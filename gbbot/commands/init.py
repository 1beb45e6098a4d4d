"""`gbbot init`: write a starter .gbbot.yml from the repository's torch.compile call sites, its
proposed `model:` entrypoints built once first (`--no-build`: nothing is run)."""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

from gbbot import api
from gbbot.core.config import CONFIG_NAME
from gbbot.core.errors import ExitCode, GbbotError
from gbbot.core.words import plural
from gbbot.edges.console import say
from gbbot.starter import discover, environment, models, template


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", metavar="DIR", type=Path, help="the repository to look at (default: here)")
    parser.add_argument(
        "--print", dest="to_stdout", action="store_true", help=f"print the config instead of writing {CONFIG_NAME}"
    )
    parser.add_argument(
        "--no-build",
        dest="build",
        action="store_false",
        help="do not build the model candidates (by default each is built small and called once, "
        "uncompiled, in a child process to find the arguments and inputs that run: this runs your code; "
        "one that fails is written commented out)",
    )


PROGRESS_EVERY_S = 2.0


def _progress() -> discover.Progress:
    """A line on stderr every few seconds while a large tree is read, so init never looks stuck."""
    last = time.monotonic()

    def report(read: int, parsed: int) -> None:
        nonlocal last
        if time.monotonic() - last >= PROGRESS_EVERY_S:
            last = time.monotonic()
            say(f"… read {read} Python files, parsed {parsed} that can hold a candidate")

    return report


def _build(root: Path, scan: discover.Scan) -> dict[str, dict] | None:
    """Each model candidate built small and called once in a child: what ran, what failed and why."""
    candidates, wanted = template.model_candidates(scan)
    if not candidates:
        return None
    started = time.monotonic()
    say(f"building up to {len(candidates)} models small, until {wanted} ran (--no-build skips it)")
    settings = models.settings(scan.files, scan.settings)
    built = api.try_models(root, [c.request() for c in candidates], settings, wanted)
    for name, result in built.items():
        say(f"{name}: {'ran' if result['error'] is None else 'did not run: ' + result['error']}")
    say(f"built in {time.monotonic() - started:.1f}s")
    return built


def run(args: argparse.Namespace) -> int:
    root = (args.root or Path.cwd()).resolve()
    if not root.is_dir():
        raise GbbotError(f"--root {root}: not a directory")
    existing = root / CONFIG_NAME
    if existing.exists() and not args.to_stdout:
        raise GbbotError(
            f"{existing} already exists; gbbot init never overwrites it "
            "(`gbbot init --print` shows the suggestion without writing)"
        )
    started = time.monotonic()
    scan = discover.scan(root, progress=_progress())
    # the nn.Module classes: the candidates when nothing compiles, and the main model beside a
    # compiled helper that never compiles it
    scan = discover.add_models(root, scan, _progress(), classes=not models.enough_variants(scan))
    say(f"read {scan.read} Python files, parsed {scan.parsed}, in {time.monotonic() - started:.1f}s")
    found = environment.found(root)
    built = _build(root, scan) if args.build else None
    text, chosen = template.starter(scan, found, built)
    if args.to_stdout:
        sys.stdout.write(text)
        return ExitCode.OK
    target = template.write(root, text)
    kinds = Counter(c.kind for c in chosen)
    counted = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
    say(f"wrote {target}: {plural(len(chosen), 'entrypoint')} ({counted})")
    say(f"review it, then run: {template.NEXT_COMMAND}")
    return ExitCode.OK
