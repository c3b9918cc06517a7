"""Refused by the importer: an integer input (indices), whose valid range depends on the problem."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, table, idx):
        return table[idx]


rows = 64
n = 32


def get_inputs():
    return [torch.randn(rows, 8), torch.randint(0, rows, (n,))]


def get_init_inputs():
    return []
