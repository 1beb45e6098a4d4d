import torch


def f(x):
    if not torch.compiler.is_compiling():
        print("first")  # BREAK
    print("second")
    return x
