"""`gbbot explain GBNNNN`."""

from __future__ import annotations

import argparse
import textwrap

from gbbot import api
from gbbot.edges.console import width

INDENT = "  "


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("gb_id", metavar="GBNNNN", help="a graph-break id, e.g. GB0059")


def run(args: argparse.Namespace) -> int:
    print(format_explained(api.explain(args.gb_id), width()))
    return 0


def format_explained(found: api.Explained, columns: int = 100) -> str:
    """One entry: torch's name and explanation, its hints, gbbot's recipes and advice, the doc page."""
    entry = found.entry
    lines = [f"{entry.gb_id}: {entry.gb_type}"]
    if found.title:
        lines.append(_wrap(f"({found.title})", columns))
    lines += ["", _wrap(entry.explanation or "(torch's registry words no explanation for this id)", columns)]
    lines += _section("Torch's hints:", entry.hints, columns)
    if found.recipes:
        lines += _section("`gbbot fix` tries (each verified by re-running the entrypoint):", found.recipes, columns)
    else:
        lines += ["", "`gbbot fix` has no mechanical fix for this kind of break."]
    lines += _section("What to do:", [_advised(a) for a in found.advice], columns)
    lines += ["", f"Docs: {entry.doc_url}"]
    return "\n".join(lines)


def _section(heading: str, items: list[str] | tuple[str, ...], columns: int) -> list[str]:
    if not items:
        return []
    bullets = [textwrap.fill(i, columns, initial_indent=INDENT + "- ", subsequent_indent=INDENT * 2) for i in items]
    return ["", heading, *bullets]


def _advised(advice: api.Advice) -> str:
    return f"{advice.text} ({advice.url})" if advice.url else advice.text


def _wrap(text: str, columns: int) -> str:
    return textwrap.fill(text, columns)
