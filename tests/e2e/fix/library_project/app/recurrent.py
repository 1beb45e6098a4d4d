import torch
from libmodels import Recurrent

from app.build import compiled


def run():
    torch.manual_seed(0)
    model = compiled(Recurrent())
    with torch.no_grad():  # (with autograd on, torch 2.13's Inductor cannot compile the LSTM)
        return model(torch.linspace(-1, 1, 24).reshape(2, 3, 4))
