"""Waiting for a state, never for a time: the one polling loop of the lab, the tests and the benchmarks."""

import time

# Seconds spent in wait_until by this process, whatever it waited for: where a test's time goes
# (tests/integration/conftest.py reports it per test, the lab's CLI prints its own on stderr).
WAITED = {"seconds": 0.0}


class WaitTimeout(AssertionError):
    """What was awaited did not come in time (an AssertionError: a test that waited fails)."""


def wait_until(predicate, timeout=20.0, step=0.2, what=None):
    """Call predicate every `step` seconds until it returns something true, at most `timeout` seconds;
    return that value. On a timeout: the last (false) value, or, when `what` names the state awaited,
    raise WaitTimeout saying so."""
    started = time.monotonic()
    deadline = started + timeout
    try:
        while True:
            value = predicate()
            if value or time.monotonic() >= deadline:
                break
            time.sleep(step)
    finally:
        WAITED["seconds"] += time.monotonic() - started
    if not value and what is not None:
        raise WaitTimeout("timed out after %gs waiting for %s" % (timeout, what))
    return value
