"""What the CLI tests written as one process of many cases share: a check that
counts failures, and the exit with OK or FAILED."""
import sys

failures = 0


def check(ok, what):
    """Counts a failure, printing what was expected, unless `ok`."""
    global failures
    if not ok:
        failures += 1
        print("FAIL:", what)


def finish():
    print("FAILED" if failures else "OK")
    sys.exit(1 if failures else 0)
