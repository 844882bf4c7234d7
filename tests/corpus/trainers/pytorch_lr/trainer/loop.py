"""A tiny training loop with a Keras-like surface (written for mlsubmit's checkup tests)."""

import torch
from torch import nn, optim


class Trainer:
    def __init__(self, model, lr):
        self.model = model
        self.optimizer = optim.SGD(model.parameters(), lr=lr, momentum=0.9)  # fine: PyTorch's lr= is not Keras's
        self.schedule = optim.lr_scheduler.StepLR(self.optimizer, step_size=5, gamma=0.5)
        self.loss = nn.MSELoss()

    def fit_generator(self, batches, epochs):  # fine: its own method, no Keras in this module
        for _ in range(epochs):
            for features, target in batches():
                self.optimizer.zero_grad()
                loss = self.loss(self.model(features), target)
                loss.backward()
                self.optimizer.step()
            self.schedule.step()
        return self

    def save(self, path, save_format="state_dict"):  # fine: not Keras's Model.save
        if save_format == "state_dict":
            torch.save(self.model.state_dict(), path)
        else:
            torch.save(self.model, path)
