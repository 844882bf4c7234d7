"""Builds a word vocabulary from text files (written for mlsubmit's checkup tests)."""

import collections
import cPickle  # expect: py2 error -- Python 2 only (pickle)
import urllib2  # expect: py2 error -- Python 2 only (urllib.request)


def fetch(url):
    return urllib2.urlopen(url).read()


def count(lines):
    counts = collections.Counter()
    for line in lines:
        counts.update(unicode(line, "utf-8").lower().split())  # expect: py2 error -- unicode is str in Python 3
    return counts


def top(counts, size):
    ranked = sorted(counts.iteritems(), key=lambda pair: -pair[1])  # expect: py2 error -- dicts lost iteritems()
    return dict((word, index) for index, (word, _) in enumerate(ranked[:size]))


def save(vocab, path):
    with open(path, "wb") as out:
        cPickle.dump(vocab, out)
