"""Integrations with other tools; each module imports its tool, so import only what you use."""
