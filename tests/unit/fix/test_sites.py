"""Finding the `torch.compile` that compiled a frame, in the forms real repositories write it: a
kept compiled model in a training script, a compiled instance called at once, a module compiling
itself, a compile in the `call:` target's module, a decorated method, a bound method compiled from
another module, an inherited `forward`. Pure: source texts in, sites out."""

from __future__ import annotations

from gbbot.core.model import FrameRef
from gbbot.fix.sites import CompileSite, search, unresolved_site
from gbbot.recipes.base import code

MODEL = code(
    """
    import torch
    from torch import nn


    class Block(nn.Module):
        def forward(self, x):
            return x * int(x.sum().item())


    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([Block()])

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return x

        @classmethod
        def from_pretrained(cls, name):
            return cls()


    class TinyGPT(GPT):
        pass
    """
)
GPT_FORWARD = FrameRef("model.py", 15, "forward")  # the loop's frame: Block.forward is inlined
BLOCK_FORWARD = FrameRef("model.py", 7, "forward")


def sites(frame: FrameRef, **files: str) -> list[tuple[str, int]]:
    texts = {"model.py": MODEL, **{f"{name}.py": text for name, text in files.items()}}
    return [(s.path, s.line) for s in search(frame, texts).sites]


TRAIN = code(
    """
    import torch
    from model import GPT, Block

    init_from = "scratch"
    if init_from == "scratch":
        model = GPT()
    else:
        model = GPT.from_pretrained(init_from)
    probe = torch.compile(Block())
    if True:
        unoptimized_model = model
        model = torch.compile(model)  # requires PyTorch 2.0
    """
)


def test_a_kept_compiled_model_in_a_training_script_is_the_site_of_its_forward():
    assert sites(GPT_FORWARD, train=TRAIN) == [("train.py", 12)]  # not the probe of a block


def test_a_frame_one_call_deeper_is_compiled_by_the_model_that_holds_it():
    # the block's own frame (compiled alone once the model's frame runs eagerly) is traced by the
    # probe's compile and, inlined, by the model's: the model makes blocks in __init__
    assert sites(BLOCK_FORWARD, train=TRAIN) == [("train.py", 9), ("train.py", 12)]
    helper = code(
        """
        import torch


        def scale(y):
            return y.abs().mean().item()


        def body(y):
            return y / (1.0 + scale(y))


        def step(y):
            return body(y) * 2


        fast = torch.compile(step)
        """
    )
    frame = FrameRef("helper.py", 5, "scale")  # two calls below the compiled function
    assert [(s.path, s.line) for s in search(frame, {"helper.py": helper}).sites] == [("helper.py", 16)]


def test_classes_of_the_same_name_in_other_files_are_not_the_frames():
    other = MODEL.replace("class TinyGPT(GPT):\n    pass\n", "")
    entry = code(
        """
        import torch
        from other import GPT
        import model


        a = torch.compile(GPT())
        b = torch.compile(model.GPT())
        """
    )
    assert sites(GPT_FORWARD, other=other, entry=entry) == [("entry.py", 7)]


def test_a_compiled_instance_called_at_once_and_a_module_compiling_itself():
    navit = code(
        """
        import torch
        from model import GPT


        def run(batch):
            v = GPT()
            return torch.compile(v)(batch)


        def run_method(batch):
            m = GPT.from_pretrained("x")
            m.compile(mode="default")
            return m(batch)
        """
    )
    assert sites(GPT_FORWARD, entry=navit) == [("entry.py", 7), ("entry.py", 12)]


def test_a_compile_in_the_call_targets_module_of_an_instance_made_in_the_call():
    bench = "import torch\nimport model\n\n\ndef forward_once(x):\n    return torch.compile(model.GPT())(x)\n"
    assert sites(GPT_FORWARD, bench=bench) == [("bench.py", 6)]


def test_an_inherited_forward_is_compiled_through_the_subclass():
    entry = "import torch\nfrom model import TinyGPT\n\nnet = TinyGPT()\nfast = torch.compile(net)\n"
    assert sites(GPT_FORWARD, entry=entry) == [("entry.py", 5)]


def test_a_decorated_method_is_its_own_site():
    decorated = code(
        """
        import torch


        class Synth:
            @torch.compile(dynamic=False)
            def synthesize(self, y):
                return y[: int(y.sum())]
        """
    )
    frame = FrameRef("synth.py", 5, "synthesize")
    assert [(s.path, s.line) for s in search(frame, {"synth.py": decorated}).sites] == [("synth.py", 5)]


def test_a_bound_method_compiled_from_the_entry_module():
    synth = "class TTS:\n    def synthesize(self, y):\n        return helper(y)\n"
    entry = code(
        """
        import torch
        from synth import TTS


        def main(y):
            model = TTS()
            out = torch.compile(model.synthesize)(y)
            other = torch.compile(model.encode)(y)
            return out, other
        """
    )
    frame = FrameRef("synth.py", 2, "synthesize")
    assert [(s.path, s.line) for s in search(frame, {"synth.py": synth, "entry.py": entry}).sites] == [("entry.py", 7)]


def test_compiles_of_other_things_are_not_sites():
    other = code(
        """
        import re
        import torch
        from model import Block


        def f(x):
            return x


        pattern = re.compile("a+")
        fast_f = torch.compile(f)
        fast_block = torch.compile(Block())
        """
    )
    assert sites(GPT_FORWARD, other=other) == []


def test_with_nothing_resolved_the_compile_on_the_stack_is_the_candidate():
    entry = "import torch\n\n\ndef run(model, x):\n    return torch.compile(model)(x)\n\n\ndef g(f):\n    return torch.compile(f)\n"
    texts = {"model.py": MODEL, "entry.py": entry}
    found = [search(frame, texts, ("model.py", "entry.py")) for frame in (BLOCK_FORWARD, GPT_FORWARD)]
    assert all(not f.sites for f in found)
    assert unresolved_site(found, [CompileSite("entry.py", 5), CompileSite("model.py", 16)]) == CompileSite(
        "entry.py", 5
    )
    assert unresolved_site(found, []) is None  # two unresolved compiles and none on the stack: no guess
