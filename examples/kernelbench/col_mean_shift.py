"""Subtracts each column's mean over the rows (a reduction over dim 0, the constant reduce_dim)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, reduce_dim):
        super().__init__()
        self.reduce_dim = reduce_dim

    def forward(self, x):
        return x - x.mean(dim=self.reduce_dim, keepdim=True)


rows = 1024
cols = 512
reduce_dim = 0


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return [reduce_dim]
