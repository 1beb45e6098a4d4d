"""`gbbot render REPORT --format …`: one report, many views, each a pure `Report -> str`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from gbbot import api
from gbbot.core.model import Report
from gbbot.edges import console
from gbbot.render import annotations, markdown, sarif

FORMATS: dict[str, Callable[[Report], str]] = {
    "markdown": markdown.render,
    "json": api.dumps_report,
    "sarif": sarif.render,
    "annotations": annotations.render,
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("report", type=Path, help="a report.json written by gbbot")
    parser.add_argument(
        "--format",
        "-f",
        choices=sorted(FORMATS),
        default="markdown",
        help="markdown: the PR comment's text (the default); sarif: SARIF 2.1.0 for code scanning; json: the "
        "report as gbbot writes it (read back through its schema); annotations: GitHub workflow commands for "
        "what the PR changed, one per line",
    )
    parser.add_argument("--output", "-o", type=Path, help="write here instead of stdout")


def run(args: argparse.Namespace) -> int:
    text = FORMATS[args.format](api.load_report(args.report))
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    elif args.format == "annotations":  # workflow commands, to be obeyed where the runner reads them
        console.obeyed(text.splitlines())
    else:
        sys.stdout.write(text)
    return 0
