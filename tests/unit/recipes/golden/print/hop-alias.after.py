import torch as T


@T.compile
def step(x):
    x = x + 1
    T._higher_order_ops.print("{} {} {}", "value", x.sum(), 3)  # BREAK
    return x
