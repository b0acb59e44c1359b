"""Jobs run by the fault suite's worker subprocesses."""
