"""``python -m attncourse.instructor``: the command line (``cli``)."""

import sys

from attncourse.instructor.cli import main

if __name__ == "__main__":
    sys.exit(main())
