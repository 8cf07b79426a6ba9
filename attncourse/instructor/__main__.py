import sys

from attncourse.instructor.cli import main

sys.exit(main())
