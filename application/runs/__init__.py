"""A run: the tool loop, what it reports and records, its budget, its held answers and structured output."""
