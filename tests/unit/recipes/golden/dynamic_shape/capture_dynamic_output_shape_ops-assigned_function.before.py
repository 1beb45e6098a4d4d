from torch import compile as compile_fn


def positive_sum(x):
    return x[x > 0].sum()


fast_sum = compile_fn(positive_sum)  # BREAK
