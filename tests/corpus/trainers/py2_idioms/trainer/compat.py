"""The Python 2/3 compatible way, for contrast (written for mlsubmit's checkup tests)."""

import six
from six.moves import xrange  # fine: six.moves provides xrange on Python 3

try:
    import cPickle as pickle  # fine: guarded, Python 3 takes the except branch
except ImportError:
    import pickle


def pairs(mapping):
    return [(k, v) for k, v in six.iteritems(mapping)]  # fine: six.iteritems is not the dict method


def chunks(items, size):
    return [items[i : i + size] for i in xrange(0, len(items), size)]  # fine: six.moves.xrange


def dump(value, path):
    file = open(path, "wb")  # fine: a variable named file, not the Python 2 builtin
    pickle.dump(value, file)
    file.close()
