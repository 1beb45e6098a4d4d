import torch as T


@T.compile
def step(x):
    x = x + 1
    print("value", x.sum(), 3)  # BREAK
    return x
