"""Test doubles and local servers shared by the test tiers; each module's docstring says when to use it."""
