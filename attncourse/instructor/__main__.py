import sys

from attncourse.instructor.cli import main

if __name__ == "__main__":
    sys.exit(main())
