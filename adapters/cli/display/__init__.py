"""What the command shows: its streams, the live line, the result as text or JSON, and failures."""
