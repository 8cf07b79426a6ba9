"""Running a learner's notebook: in a sandbox, behind counted channels, against the clock,
in a control group where the machine gives one."""
