import torch

from tinymodel.model import TinyNet


def forward_once() -> torch.Tensor:
    """The `call:` entrypoint: its return value is what fix verification compares."""
    torch.manual_seed(0)
    model = TinyNet()
    compiled = torch.compile(model)
    with torch.no_grad():
        return compiled(torch.randn(2, 5, 8))
