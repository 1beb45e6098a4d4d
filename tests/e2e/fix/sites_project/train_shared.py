"""The other entrypoint compiling the shared model: a training script."""

import torch
from sitedemo.shared import Model, batch

model = torch.compile(Model())
with torch.no_grad():
    print("loss", round(float(model(batch()).sum()), 4))
