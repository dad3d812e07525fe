"""Meetings: transcripts as recorded, the summary pipeline, chunking, grounding, language and evaluation."""
