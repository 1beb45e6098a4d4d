import torch as T
import torch.nn.functional as F


class Attention(T.nn.Module):
    def forward(self, q, k, v):
        # math only: reproducible on every machine
        with T.backends.cuda.sdp_kernel(  # BREAK
            enable_flash=False,
            enable_mem_efficient=False,
        ):
            out = F.scaled_dot_product_attention(q, k, v)
        return out
