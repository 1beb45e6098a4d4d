import torch._dynamo as dynamo


def f(x, debug):
    if debug:
        # keep this for the next investigation
        dynamo.graph_break()  # BREAK
    return x + 1
