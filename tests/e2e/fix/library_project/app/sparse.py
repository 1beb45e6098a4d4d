import torch
from libmodels import Sparse

from app.build import compiled


def run():
    torch.manual_seed(0)
    model = compiled(Sparse())
    return model(torch.linspace(-1, 1, 8).reshape(2, 4))
