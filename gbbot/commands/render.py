"""`gbbot render REPORT --format …`: one report, many views. Formats are a registry of pure
`Report -> str` functions; other steps (SARIF, annotations) register theirs in FORMATS."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from gbbot import report
from gbbot.model import Report
from gbbot.render import markdown

FORMATS: dict[str, Callable[[Report], str]] = {
    "markdown": markdown.render,
    "json": report.dumps,
}


def _optional_formats() -> None:
    try:
        from gbbot.render import annotations, sarif  # noqa: F401 - registered when present
    except ImportError:
        return
    FORMATS.setdefault("sarif", sarif.render)
    FORMATS.setdefault("annotations", annotations.render)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _optional_formats()
    parser.add_argument("report", type=Path, help="a report.json written by gbbot")
    parser.add_argument("--format", "-f", choices=sorted(FORMATS), default="markdown")
    parser.add_argument("--output", "-o", type=Path, help="write here instead of stdout")


def run(args: argparse.Namespace) -> int:
    text = FORMATS[args.format](report.load(args.report))
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0
