"""`gbbot explain GBNNNN`."""

from __future__ import annotations

import argparse

from gbbot.trace import registry_entry


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("gb_id", metavar="GBNNNN", help="a graph-break id, e.g. GB0059")


def run(args: argparse.Namespace) -> int:
    print("\n\n".join(registry_entry.format_entry(e) for e in registry_entry.explain(args.gb_id)))
    return 0
