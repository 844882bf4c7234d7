"""A small Keras classifier trained the TF1-era way (written for mlsubmit's checkup tests)."""

import os

import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import backend as K

from trainer import data

flags = tf.app.flags  # expect: tf-app-flags error -- tf.app and tf.flags left TensorFlow in 2.0
flags.DEFINE_string("train_files", None, "CSV shards to train on")
flags.DEFINE_string("eval_files", None, "CSV shards to evaluate on")
flags.DEFINE_string("job_dir", None, "where the model goes")
flags.DEFINE_float("learning_rate", 0.003, "Adam's step size")
FLAGS = flags.FLAGS


def build(learning_rate):
    model = keras.Sequential(
        [
            keras.layers.Dense(32, activation="relu", input_shape=(data.WINDOW,)),
            keras.layers.Dense(1, activation="sigmoid"),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(lr=learning_rate),  # expect: keras3-lr error -- Keras 3 takes learning_rate=
        loss="binary_crossentropy",
        metrics=["accuracy"],
    )
    return model


def main(_):
    K.set_session(tf.compat.v1.Session())  # expect: keras3-session error -- Keras 3 has no TF1 session
    model = build(FLAGS.learning_rate)
    warmup = keras.optimizers.SGD(learning_rate=0.01)  # fine: learning_rate= is the Keras 3 spelling
    del warmup
    model.fit_generator(data.windows(FLAGS.train_files, 64), steps_per_epoch=100, epochs=5)  # expect: keras3-generator error
    loss, accuracy = model.evaluate_generator(data.windows(FLAGS.eval_files, 64), steps=20)  # also: keras3-generator error
    print("eval loss %.4f accuracy %.4f" % (loss, accuracy))
    model.save(os.path.join(FLAGS.job_dir, "model"), save_format="tf")  # expect: keras3-save-format error


if __name__ == "__main__":
    tf.app.run()  # also: tf-app-flags error
