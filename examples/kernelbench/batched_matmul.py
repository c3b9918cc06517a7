"""A batch of matrix products: out[b] = a[b] @ c[b]."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, c):
        return torch.bmm(a, c)


batch = 16
m = 256
k = 384
n = 128


def get_inputs():
    return [torch.randn(batch, m, k), torch.randn(batch, k, n)]


def get_init_inputs():
    return []
