"""A wide model over feature columns (written for mlsubmit's checkup tests)."""

import tensorflow as tf
from tensorflow.keras import layers

NUMERIC = ("age", "hours_per_week")
CATEGORICAL = {"workclass": ("private", "self", "gov"), "education": ("hs", "college", "masters")}


def feature_columns():
    numeric = [tf.feature_column.numeric_column(name) for name in NUMERIC]  # fine: still in TensorFlow 2.17
    return numeric + [
        tf.feature_column.indicator_column(tf.feature_column.categorical_column_with_vocabulary_list(k, v))
        for k, v in sorted(CATEGORICAL.items())
    ]


def build(learning_rate):
    inputs = {name: tf.keras.Input(shape=(1,), name=name) for name in NUMERIC}
    inputs.update({name: tf.keras.Input(shape=(1,), name=name, dtype=tf.string) for name in CATEGORICAL})
    dense = layers.DenseFeatures(feature_columns())(inputs)  # expect: keras3-removed error -- gone in Keras 3
    scaled = layers.Lambda(lambda x: x * 2.0)(dense)  # expect: keras3-lambda warning -- output shape inferred
    doubled = layers.Lambda(lambda x: x * 2.0, output_shape=(8,))(scaled)  # fine: output_shape given
    hidden = layers.Dense(16, activation="relu")(doubled)
    output = layers.Dense(1, activation="sigmoid")(hidden)
    model = tf.keras.Model(inputs, output)
    schedule = tf.keras.experimental.CosineDecay(learning_rate, 1000)  # expect: keras3-removed error
    model.compile(
        optimizer=tf.keras.optimizers.Adam(learning_rate=schedule, decay=1e-6),  # expect: keras3-removed error
        loss="binary_crossentropy",
        metrics=["accuracy"],
    )
    return model
