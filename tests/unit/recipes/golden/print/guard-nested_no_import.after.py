import math
import torch


def outer(x):
    def inner(y):
        if not torch.compiler.is_compiling():
            print("inner", math.pi)  # BREAK
        return y + 1

    return inner(x) * 2
