"""The course as grading reads it: the solved chapters' tag convention, the student
version, and what grading takes from them."""
