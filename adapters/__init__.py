"""Adapters: the OpenAI Responses clients, the offline endpoint, the container and the CLI."""
