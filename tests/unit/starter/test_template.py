"""`gbbot init`'s proposals from source text alone (pure: no torch, nothing run): the tests that
reach a compile as node ids, module-level-compile scripts with the flags a short run needs,
factories left out, and model: entrypoints for a repository that never compiles."""

from __future__ import annotations

import textwrap

import pytest

from gbbot.core.config import parse_config
from gbbot.core.errors import GbbotError
from gbbot.starter import discover, template


def scan_of(files: dict[str, str], names: tuple[str, ...] = ()) -> discover.Scan:
    sources = {path: textwrap.dedent(text) for path, text in files.items()}
    facts = tuple(discover.facts_of(path, text) for path, text in sources.items())
    every = frozenset({p.rsplit("/", 1)[-1] for p in files} | set(names))
    registered = tuple(
        (discover.module_of(path), name.decode())
        for path, text in sources.items()
        for name in discover.REGISTERED.findall(text.encode())
    )
    return discover.Scan(facts, len(files), False, len(files), every, registered=registered)


def proposed(files: dict[str, str], names: tuple[str, ...] = ()):
    text, chosen = template.starter(scan_of(files, names))
    return text, [(c.kind, c.target) for c in chosen], parse_config(text)


OPS = """\
    import torch


    @torch.compile
    def fused(x):
        return x.sin() + 1


    def plain(x):
        return x + 1
"""


def test_of_twenty_tests_only_the_one_reaching_a_compile_through_a_helper_is_proposed():
    plain_tests = "\n".join(
        f"def test_plain_{i}():\n    assert ops.plain(torch.ones(1)) is not None\n" for i in range(19)
    )
    tests = f"""\
import torch

from pkg import ops


def _through_helper(x):
    return ops.fused(x)


{plain_tests}

def test_fused_path():
    assert _through_helper(torch.ones(2)).shape == (2,)
"""
    _, chosen, config = proposed({"pkg/__init__.py": "", "pkg/ops.py": OPS, "tests/test_ops.py": tests})
    assert chosen == [("pytest", "tests/test_ops.py::test_fused_path")]
    assert config.entrypoints[0].pytest == ("tests/test_ops.py::test_fused_path",)


def test_a_test_reaching_a_compile_through_a_conftest_fixture_and_a_test_class_method():
    conftest = """\
        import pytest
        import torch

        from pkg.model import Net


        @pytest.fixture
        def compiled_net():
            return torch.compile(Net())
    """
    tests = """\
        from pkg.model import Net


        def test_uses_fixture(compiled_net):
            compiled_net(1)


        class TestNet:
            def _compiled(self):
                import torch
                return torch.compile(Net())

            def test_eager(self):
                Net()(1)

            def test_compiled(self):
                self._compiled()(1)
    """
    model = "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
    files = {"pkg/__init__.py": "", "pkg/model.py": model, "tests/conftest.py": conftest, "tests/test_net.py": tests}
    _, chosen, _ = proposed(files)
    assert chosen == [("pytest", "tests/test_net.py::test_uses_fixture tests/test_net.py::TestNet::test_compiled")]


def test_a_test_file_that_only_imports_a_compiling_module_is_not_proposed_whole():
    tests = "from pkg import ops\n\ndef test_plain():\n    assert ops.plain(1) == 2\n"
    with pytest.raises(GbbotError):
        proposed({"pkg/__init__.py": "", "pkg/ops.py": OPS, "tests/test_ops.py": tests})


def test_a_factory_is_not_a_call_candidate_but_the_test_calling_what_it_returns_is():
    factory = """\
        import torch


        def step(x):
            return x * 2


        def make_step():
            return torch.compile(step)
    """
    tests = "from pkg.train import make_step\n\ndef test_step():\n    assert make_step()(1) == 2\n"
    _, chosen, _ = proposed({"pkg/__init__.py": "", "pkg/train.py": factory, "tests/test_train.py": tests})
    assert chosen == [("pytest", "tests/test_train.py::test_step")]


NANO_TRAIN = """\
    import os
    import numpy as np
    import torch
    from model import GPT

    max_iters = 600000
    device = 'cuda'
    compile = True
    exec(open('configurator.py').read())

    data = np.memmap(os.path.join('data', 'train.bin'), dtype=np.uint16, mode='r')
    model = GPT()
    if compile:
        model = torch.compile(model)
    while True:
        model(data)
"""


def written(files: dict[str, str], built: dict | None = None) -> str:
    """The config text init writes, or, when nothing is active, the message it exits 2 with."""
    try:
        return template.starter(scan_of(files), built=built)[0]
    except GbbotError as exc:
        return str(exc)


def test_a_module_level_compile_script_reading_data_is_written_commented_with_short_run_flags():
    model = "import torch\n\nclass GPT(torch.nn.Module):\n    pass\n"
    text = written({"train.py": NANO_TRAIN, "model.py": model, "configurator.py": "import sys\n"})
    assert "  # train.py compiles (line 14) at module level.\n" in text
    assert "  # - name: train\n  #   run: python train.py --max_iters=5 --device=cpu\n" in text
    assert "line 11: reads train.bin, which is not in the repository" in text
    assert "np.memmap(...) loads data or weights from outside the repository" in text


def test_script_knobs_as_argparse_options_or_settings_to_lower_by_hand():
    bench = """\
        import argparse
        import torch

        steps = 1000
        parser = argparse.ArgumentParser()
        parser.add_argument("--compile", action="store_true")
        parser.add_argument("--num-steps", type=int, default=100)
        parser.add_argument("-b", "--batch-size", type=int, default=256)
        args = parser.parse_args()
        f = torch.compile(lambda x: x + 1)
        for _ in range(args.num_steps):
            f(torch.ones(1))
    """
    text = written({"bench.py": bench, "ckpt_loader.py": "x = 1\n"})
    # a setting it cannot lower from outside: not short for sure, so not active
    assert "  #   run: python bench.py --compile --num-steps 5 --batch-size 2\n" in text
    assert "line 4: steps = 1000; lower it for a short run." in text
    _, chosen, _ = proposed({"bench.py": bench.replace("steps = 1000", "steps = 5")})
    assert chosen == [("run", "python bench.py --compile --num-steps 5 --batch-size 2")]


def test_a_script_compiles_with_its_flag_and_one_that_downloads_or_takes_a_data_set_is_commented():
    bench = textwrap.dedent("""\
        import argparse
        import torch
        parser = argparse.ArgumentParser()
        parser.add_argument("--model", "-m", default="big")
        parser.add_argument("--torchcompile", nargs="?", type=str, default=None, const="inductor")
        parser.add_argument("--num-warm-iter", type=int, default=10)
        args = parser.parse_args()
        if __name__ == "__main__":
            torch.compile(lambda x: x)(torch.ones(1))
    """)
    fetch = bench.replace("args = parser", "weights = torch.hub.load_state_dict_from_url(URL)\nargs = parser")
    validate = bench.replace(
        'parser.add_argument("--model"', 'parser.add_argument("data")\nparser.add_argument("--model"'
    )
    variants = (
        "from timm.registry import register_model\n\n\n@register_model\ndef tiny_net(pretrained=False):\n    pass\n"
    )
    files = {"bench.py": bench, "fetch.py": fetch, "validate.py": validate, "zoo/nets.py": variants}
    text, chosen, _ = proposed(files)
    # the flag that makes it compile, the fewest iterations, and the registry's smallest model
    assert chosen == [("run", "python bench.py --model tiny_net --torchcompile --num-warm-iter 5")]
    assert "load_state_dict_from_url(...) loads data or weights from outside the repository" in text
    assert "  #   run: python fetch.py" in text
    assert "it takes a data set (data)" in text and "  #   run: python validate.py" in text


def test_a_compile_option_taking_an_integer_gets_one():
    script = """\
        import argparse
        import torch
        parser = argparse.ArgumentParser()
        parser.add_argument("--compile", type=int, default=0)
        parser.add_argument("--device", type=str, default="cuda")
        args = parser.parse_args()
        device = args.device
        if __name__ == "__main__":
            torch.compile(lambda x: x)(torch.ones(1))
    """
    text, chosen, _ = proposed({"train.py": script})
    assert chosen == [("run", "python train.py --compile 1 --device cpu")]
    assert "a CPU runner needs" not in text  # device comes from the option, already set


def test_a_library_module_that_compiles_at_import_is_no_script():
    lib = "import torch\n\ndef f(x):\n    return x\n\nfast_f = torch.compile(f)\nprint('loaded')\n"
    user = "from pkg.lib import fast_f\n"
    with pytest.raises(GbbotError):
        proposed({"pkg/__init__.py": "", "pkg/lib.py": lib, "pkg/user.py": user})


def test_the_starter_links_gbbot_docs_not_a_path_in_the_users_repository():
    bench = (
        "import torch\n\nstep = torch.compile(lambda x: x + 1)\n\nif __name__ == '__main__':\n    step(torch.ones(2))\n"
    )
    text, chosen, _ = proposed({"bench.py": bench})
    assert chosen
    assert "# Every key: https://github.com/gbbot/gbbot/blob/main/docs/configuration.md" in text
    assert " docs/configuration.md" not in text


def test_files_that_cannot_hold_a_candidate_are_not_parsed():
    assert not discover.worth_parsing("pkg/util.py", b"def f():\n    return 1\n")
    assert not discover.worth_parsing("pkg/model.py", b"class M(nn.Module): ...")
    assert discover.worth_parsing("pkg/model.py", b"class M(nn.Module): ...", models=True)
    assert discover.worth_parsing("tests/test_util.py", b"def test_f(): ...")
    assert discover.worth_parsing("pkg/__init__.py", b"")


NETS = """\
    from torch import nn


    class Net(nn.Module):
        def __init__(self, dim):
            super().__init__()

        def forward(self, x):
            return x


    class Tagger(nn.Module):
        def __init__(self, n_tags):
            super().__init__()

        def forward(self, x):
            return x
"""
RAN = {"args": (), "kwargs": (("dim", 32),), "inputs": ({"tensor": [2, 8, 32]},), "input_kwargs": (), "error": None}
FAILED = {"args": (), "kwargs": (), "inputs": (), "input_kwargs": (), "error": "nothing says what to pass as n_tags"}


def test_the_models_that_ran_are_written_active_and_the_others_commented_with_their_error():
    files = {"zoo/__init__.py": "", "zoo/nets.py": NETS}
    text, _ = template.starter(scan_of(files), built={"Net": RAN, "Tagger": FAILED})
    config = parse_config(text)
    assert [(e.name, e.model, dict(e.kwargs), e.inputs) for e in config.entrypoints] == [
        ("Net", "zoo.nets:Net", {"dim": 32}, ({"tensor": [2, 8, 32]},))
    ]
    assert "  # Tried small, it did not run: nothing says what to pass as n_tags\n  # - name: Tagger\n" in text
    assert "its model: entries were built and called once" in text
    with pytest.raises(GbbotError, match="no model that ran when built small") as info:
        template.starter(scan_of(files), built={"Net": FAILED, "Tagger": FAILED})
    assert "fill in" not in str(info.value)  # no words that read like a config key


def test_nothing_built_writes_each_model_commented_to_build_and_nothing_found_shows_the_template():
    message = written({"zoo/__init__.py": "", "zoo/nets.py": NETS})
    assert "  # Not built (--no-build): init builds it to find its arguments and inputs.\n  # - name: Net\n" in message
    assert "  #   model: zoo.nets:Net\n" in message
    with pytest.raises(GbbotError) as info:
        proposed({"app.py": "import re\nre.compile('x')\n"})
    message = str(info.value)
    assert (
        "found no torch.compile call sites to run, and no model that ran when built small, in 1 Python files" in message
    )
    assert "model: mypkg.model:MyModel" in message.split("\n\n", 1)[1]
