"""`gbbot explain GBNNNN`."""

from __future__ import annotations

import argparse

from gbbot import api


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("gb_id", metavar="GBNNNN", help="a graph-break id, e.g. GB0059")


def run(args: argparse.Namespace) -> int:
    print("\n\n".join(api.format_entry(e) for e in api.explain(args.gb_id)))
    return 0
