"""After grading: points, the grades on disk, the report, the learners' feedback and the
exports to a gradebook."""
