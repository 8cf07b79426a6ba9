"""Submissions in from a learning platform: a Canvas "Download Submissions" zip or a
Gradescope "Export Submissions" zip turned into the folder grade reads, one folder per
learner (``importing.import_export``; ``python -m attncourse.instructor import``).

``archive``: the zip, read without trusting it; ``canvas`` and ``gradescope_export``: each
platform's layout, read into submissions; ``plan``: a learner for each submission, and
the names written; ``importing``: the folder written, beside it when each learner
submitted.
"""
