"""`python -m tutorduel.cli`: the command line."""
import sys

from tutorduel.cli import run

if __name__ == "__main__":
    sys.exit(run())
