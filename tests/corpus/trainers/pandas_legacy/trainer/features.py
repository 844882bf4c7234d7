"""Turns a rentals export into model features with pandas (written for mlsubmit's checkup tests)."""

import pandas as pd


def load(path):
    frame = pd.read_csv(path, error_bad_lines=False)  # expect: pandas-removed warning -- removed in pandas 2.0
    frame["log_price"] = pd.np.log1p(frame["price"])  # expect: pandas-removed warning -- pd.np removed in 2.0
    return frame


def tidy(frame):
    frame = frame.copy()
    frame.ix[frame["rooms"] > 10, "rooms"] = 10  # expect: pandas-removed warning -- .ix removed in 1.0
    for column, values in frame.iteritems():  # expect: py2 error -- .iteritems() left pandas in 2.0
        if values.dtype == object:
            frame[column] = values.str.strip()
    return frame


def matrix(frame, columns):
    return frame[columns].as_matrix()  # expect: pandas-removed warning -- .as_matrix() removed in 1.0


def load_modern(path):
    frame = pd.read_csv(path, on_bad_lines="skip")  # fine: the pandas 1.3+ spelling
    frame.loc[frame["rooms"] > 10, "rooms"] = 10  # fine: .loc
    return frame[["rooms", "price"]].to_numpy()  # fine: .to_numpy()
