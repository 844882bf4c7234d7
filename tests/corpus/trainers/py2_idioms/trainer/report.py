"""Prints a training summary (written for mlsubmit's checkup tests)."""


def summary(step, loss):
    print "step %d: loss %.4f" % (step, loss)  # expect: py2-syntax error -- a print statement does not parse
