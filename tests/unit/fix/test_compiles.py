"""How a break's entrypoints compile: which are `model:` entries (their setting goes into their
`compile:` option), and which files the others run as `__main__` (a compile in another file's
`if __name__ == "__main__":` block never runs for them)."""

from __future__ import annotations

from gbbot.fix.compiles import ConfigFile, compiles_of, in_main_block, not_run, runs
from gbbot.fix.sites import CompileSite

CONFIG = ConfigFile(
    ".gbbot.yml",
    """\
version: 1
entrypoints:
  - {name: gpt, model: 'tiny.gpt:GPT'}
  - {name: serve, call: 'tiny.serve:run'}
  - {name: train, run: python tiny/train.py --steps 2}
  - {name: module, run: python -m tiny.sample}
  - {name: shell, run: ./train.sh}
""",
)
MAIN = """\
import torch


def build():
    return torch.compile(torch.nn.Linear(2, 2))


if __name__ == "__main__":
    model = torch.compile(torch.nn.Linear(2, 2))
"""


def test_model_entries_and_the_files_the_others_run_as_main():
    both = compiles_of(("gpt", "serve"), CONFIG)
    assert (both.models, both.others, both.mains) == (("gpt",), True, frozenset())
    assert compiles_of(("gpt",), CONFIG).others is False
    assert compiles_of(("train",), CONFIG).mains == {"tiny/train.py"}
    assert compiles_of(("module",), CONFIG).mains == {"tiny/sample.py", "tiny/sample/__main__.py"}
    assert compiles_of(("shell",), CONFIG).mains is None  # not known: every compile counts
    assert compiles_of(("gpt",), None).models == ()  # no configuration in the repository


def test_a_compile_in_a_main_block_runs_only_for_the_entrypoint_that_runs_that_file():
    assert in_main_block(MAIN, 9) and not in_main_block(MAIN, 5)
    site = CompileSite("tiny/train.py", 9)
    assert not runs(site, MAIN, compiles_of(("serve",), CONFIG))
    assert runs(site, MAIN, compiles_of(("train",), CONFIG))
    assert runs(CompileSite("tiny/train.py", 5), MAIN, compiles_of(("serve",), CONFIG))
    assert runs(site, MAIN, compiles_of(("shell",), CONFIG))
    reason = not_run([site, site], compiles_of(("serve",), CONFIG))
    assert reason == (
        'the `torch.compile` that compiles it (tiny/train.py:9) is in an `if __name__ == "__main__":` block '
        "that serve never run"
    )
