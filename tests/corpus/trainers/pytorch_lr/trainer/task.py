"""Trains a two-layer network on a noisy sine with PyTorch (written for mlsubmit's checkup tests)."""

import argparse
import os

import torch
from torch import nn

from trainer.loop import Trainer


def batches(count=20, size=32):
    def generate():
        for _ in range(count):
            x = torch.rand(size, 1) * 6.28
            yield x, torch.sin(x) + 0.05 * torch.randn(size, 1)

    return generate


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()
    model = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 1))
    adam = torch.optim.Adam(model.parameters(), lr=args.lr)  # fine: torch.optim, not tf.keras.optimizers
    del adam
    trainer = Trainer(model, lr=args.lr).fit_generator(batches(), args.epochs)  # fine: Trainer is not Keras
    out = os.environ.get("AIP_MODEL_DIR", ".")  # fine: where Vertex AI wants the model
    trainer.save(os.path.join(out, "model.pt"), save_format="state_dict")  # fine: not Keras's save


if __name__ == "__main__":
    main()
