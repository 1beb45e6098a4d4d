import torch
from libmodels import Lengths

from app.build import compiled


def run():
    torch.manual_seed(0)
    model = compiled(Lengths())
    return model(torch.tensor([[1.0, 2.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0]]))
