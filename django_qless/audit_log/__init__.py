"""The audit log of the admin's actions: one `AuditEntry` row per change, queryable."""
