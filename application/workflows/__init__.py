"""Workflows: the workflow-editor pipeline and the JSON form of a workflow."""
