import math


def outer(x):
    def inner(y):
        print("inner", math.pi)  # BREAK
        return y + 1

    return inner(x) * 2
