"""A learner's notebook as grade runs it: its source read, its answers placed, the course's
cells no answer needs left out."""
