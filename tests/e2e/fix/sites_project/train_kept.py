import torch
from sitedemo.kept import Model, batch

model = Model()
model = torch.compile(model)  # the compiled model is kept and used below
model.eval()
with torch.no_grad():
    out = model(batch())
print("loss", round(float(out.sum()), 4))
