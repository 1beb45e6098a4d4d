"""The `gbbot` command line: parse arguments and dispatch; every command lives in gbbot/commands/."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

from gbbot import __version__
from gbbot.core.errors import EXIT_CODES_HELP, ExitCode, GbbotError
from gbbot.edges import console, git, vault
from gbbot.edges.console import internal_error
from gbbot.edges.interrupt import exit_status, sigterm_as_interrupt

# name → (module in gbbot.commands, one-line help)
COMMANDS = {
    "init": ("init", "write a starter .gbbot.yml from the repository's torch.compile call sites"),
    "check": ("check", "run the entrypoints on the working tree and report every graph break"),
    "diff": ("diff", "also run the merge-base and report new, fixed and persisting breaks"),
    "parse": ("parse", "build a report from existing logs (TORCH_TRACE dir or TORCH_LOGS text)"),
    "fix": ("fix", "propose verified patches for the easy breaks (--apply writes them)"),
    "explain": ("explain", "what the installed torch says about a graph-break id"),
    "render": ("render", "render a report.json as markdown, SARIF, JSON or annotations"),
    "merge": ("merge", "join shard reports into one"),
    "audit": ("audit", "the nightly audit, locally: a record on the data branch and the tracking issue's body"),
    "action": ("action", "the GitHub Actions entrypoint"),
}


def parser(selected: str | None = None) -> argparse.ArgumentParser:
    """The argument parser. Only the selected command's module is imported (its options are all
    that is parsed): `gbbot check` does not pay for importing LibCST or PyGithub."""
    root = argparse.ArgumentParser(
        prog="gbbot",
        description="Find, diff and fix torch.compile graph breaks.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    root.add_argument("--version", action="version", version=f"gbbot {__version__}")
    sub = root.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_text) in COMMANDS.items():
        command_parser = sub.add_parser(
            name,
            help=help_text,
            description=help_text,
            epilog=EXIT_CODES_HELP,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        if name == selected:
            importlib.import_module(f"gbbot.commands.{module}").add_arguments(command_parser)
    return root


def _selected(argv: Sequence[str]) -> str | None:
    first = next((arg for arg in argv if not arg.startswith("-")), None)
    return first if first in COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    """Ctrl-C and SIGTERM stop gbbot at any point, its imports and setup included: what runs is
    stopped, and the exit status is a shell's for that signal (130, 143)."""
    try:
        with sigterm_as_interrupt():
            return _main(argv)
    except KeyboardInterrupt as stop:
        print("gbbot: interrupted", file=sys.stderr)
        return exit_status(stop)


def _main(argv: Sequence[str] | None) -> int:
    if argv is None:  # the program, not a call from a library or a test
        vault.start()
        git.pin(Path.cwd())  # before any entrypoint: the user's git config and this repository's
        console.stop_commands()  # the repository's code prints into this log: as data
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser(_selected(argv)).parse_args(argv)
    command = importlib.import_module(f"gbbot.commands.{COMMANDS[args.command][0]}")
    try:
        return int(command.run(args))
    except GbbotError as exc:
        print(f"gbbot: error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    except Exception as exc:
        internal_error(exc)
        return ExitCode.INTERNAL
    finally:
        console.resume_commands()


if __name__ == "__main__":
    raise SystemExit(main())
