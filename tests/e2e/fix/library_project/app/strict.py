import torch
from libmodels import Normalised
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols


def numbers_refused(gm, example_inputs):
    """A backend that cannot compile a number read from a tensor (an unbacked symbol), as Inductor
    (torch 2.13) cannot compile some graphs that `capture_scalar_outputs` lets through."""
    for node in gm.graph.nodes:
        if free_unbacked_symbols(node.meta.get("example_value")):
            raise RuntimeError(f"{node.name}: this backend compiles no number read from a tensor")
    return gm.forward


def run():
    torch.manual_seed(0)
    model = torch.compile(Normalised().eval(), backend=numbers_refused)
    return model(torch.linspace(-1, 1, 8).reshape(2, 4))
