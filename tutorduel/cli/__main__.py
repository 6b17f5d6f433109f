import sys

from tutorduel.cli import main

sys.exit(main())
