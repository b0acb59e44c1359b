"""End-to-end worker benchmark: systems, measurements and the report."""
