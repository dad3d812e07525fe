"""Editing a workflow: the edits that wait for approval, and whether the instruction was carried out."""
