"""Fits a price model on the rentals export (written for mlsubmit's checkup tests)."""

import argparse

from sklearn.linear_model import LinearRegression

from trainer import features


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    args = parser.parse_args()
    frame = features.tidy(features.load(args.data))
    model = LinearRegression().fit(features.matrix(frame, ["rooms", "area"]), frame["log_price"])
    print("coefficients", model.coef_)


if __name__ == "__main__":
    main()
