"""Adapters: the OpenAI Responses clients, the offline endpoint, the container and the CLI."""

import logging

# A library's loggers stay silent until the host configures logging: without a handler anywhere,
# logging's last resort would print this package's warnings on the host's stderr.
logging.getLogger(__name__).addHandler(logging.NullHandler())
