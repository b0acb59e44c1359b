"""Views of the admin pages, one module per area."""
