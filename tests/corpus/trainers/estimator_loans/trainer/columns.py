"""Feature columns of the loan-applications table (written for mlsubmit's checkup tests)."""

import tensorflow as tf

NUMERIC = ("amount", "term_months", "income", "debt_ratio")
CATEGORIES = {
    "purpose": ("car", "home", "study", "other"),
    "employment": ("salaried", "self", "none"),
}
LABEL = "defaulted"


def wide_and_deep():
    """(wide columns, deep columns) for a linear + DNN combined model."""
    numeric = [tf.feature_column.numeric_column(name) for name in NUMERIC]  # fine: tf.feature_column is still in 2.17
    categorical = [
        tf.feature_column.categorical_column_with_vocabulary_list(name, values)
        for name, values in sorted(CATEGORIES.items())
    ]
    crossed = tf.feature_column.crossed_column(["purpose", "employment"], hash_bucket_size=32)
    deep = numeric + [tf.feature_column.indicator_column(c) for c in categorical]
    return categorical + [crossed], deep
