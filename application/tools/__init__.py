"""Tool calls: the typed registry, the guard every call passes, parameter schemas and approval."""
