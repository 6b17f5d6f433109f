"""`python -m tutorduel.cli`: the command line."""
import sys

from tutorduel.cli import main

if __name__ == "__main__":
    sys.exit(main())
