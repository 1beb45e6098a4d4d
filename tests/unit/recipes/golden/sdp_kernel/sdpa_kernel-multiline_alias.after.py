import torch as T
import torch.nn.functional as F


class Attention(T.nn.Module):
    def forward(self, q, k, v):
        # math only: reproducible on every machine
        with T.nn.attention.sdpa_kernel(  # BREAK
            [T.nn.attention.SDPBackend.MATH, T.nn.attention.SDPBackend.CUDNN_ATTENTION],
        ):
            out = F.scaled_dot_product_attention(q, k, v)
        return out
