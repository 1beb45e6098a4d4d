"""The README's tables of the action's inputs and outputs, made from action.yml.

    python tools/action_tables.py            # rewrite the tables in README.md
    python tools/action_tables.py --check    # exit 1, saying which table, when README.md is stale

action.yml is where the inputs and outputs are declared (and tests/unit/test_workflows.py holds it
to what gbbot reads and writes); the README shows them between marker comments, and only this
script writes what lies between them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
TABLES = ("inputs", "outputs")


def begin(table: str) -> str:
    return f"<!-- {table}: made from action.yml by tools/action_tables.py; do not edit -->"


def end(table: str) -> str:
    return f"<!-- end of {table} -->"


def cell(text: Any) -> str:
    """One table cell: on one line, its pipes escaped, code in backticks left as it is."""
    return " ".join(str(text).split()).replace("|", "\\|")


def inputs_table(inputs: dict[str, dict[str, Any]]) -> str:
    rows = ["| input | default | what it does |", "|---|---|---|"]
    for name, spec in inputs.items():
        default = str(spec.get("default", ""))
        shown = f"`{cell(default)}`" if default else ""
        rows.append(f"| `{name}` | {shown} | {cell(spec.get('description', ''))} |")
    return "\n".join(rows)


def outputs_table(outputs: dict[str, dict[str, Any]]) -> str:
    rows = ["| output | what it holds |", "|---|---|"]
    rows += [f"| `{name}` | {cell(spec.get('description', ''))} |" for name, spec in outputs.items()]
    return "\n".join(rows)


def tables(action: dict[str, Any]) -> dict[str, str]:
    return {"inputs": inputs_table(action["inputs"]), "outputs": outputs_table(action["outputs"])}


def filled(readme: str, made: dict[str, str]) -> str:
    """The README with each table between its markers replaced; a missing marker is an error."""
    for table, body in made.items():
        head, tail = begin(table), end(table)
        if readme.count(head) != 1 or readme.count(tail) != 1:
            raise ValueError(f"README: expected one {head!r} and one {tail!r}")
        before, rest = readme.split(head)
        _, after = rest.split(tail)
        readme = f"{before}{head}\n{body}\n{tail}{after}"
    return readme


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="do not write; exit 1 when the README is stale")
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md")
    parser.add_argument("--action", type=Path, default=ROOT / "action.yml")
    options = parser.parse_args(argv)
    action = yaml.safe_load(options.action.read_text(encoding="utf-8"))
    readme = options.readme.read_text(encoding="utf-8")
    try:
        wanted = filled(readme, tables(action))
    except ValueError as error:
        print(f"action_tables: {error}", file=sys.stderr)
        return 2
    if wanted == readme:
        return 0
    if options.check:
        stale = [t for t in TABLES if tables(action)[t] not in readme]
        print(
            f"action_tables: {options.readme.name}: the {' and '.join(stale)} table(s) differ from "
            f"{options.action.name}; run python tools/action_tables.py",
            file=sys.stderr,
        )
        return 1
    options.readme.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
