"""Test doubles, fakes and local servers shared by every tier: the one place to look before writing one.

Which to reach for:

- :mod:`tests.support.doubles`: doubles of the ports (tool invokers that record, fail or raise; tool and
  chat decorators that log their order; chat wrappers with only whole answers or with streams that cannot
  be closed). For the application and the container, with :class:`adapters.scripted.ScriptedChat` as the
  scripted model.
- :mod:`tests.support.gateway`: the real OpenAI SDK over ``httpx.MockTransport``, serving bodies built
  with the stand-in's renderer (:mod:`adapters.offline.render`); for the adapters' reading of the wire
  format, without sockets. Its ``sdk_over`` is the SDK over any legacy httpx client: build every test's
  SDK client with it, whatever server it talks to.
- :mod:`tests.support.local_server`: uvicorn on 127.0.0.1 in the test's own loop; for what only real
  sockets show (deadlines against a stalled peer, redirects, connections closed early).
- :mod:`tests.support.telemetry`: OpenTelemetry SDK providers in memory; for spans, events and metrics.
- :mod:`tests.support.leaks`: every text a log record can show; for "no secret reaches a log".
- :mod:`tests.support.json_places`: every place inside a JSON value and the value at one; for spoiling
  a document anywhere.
- :mod:`tests.support.runs`: leaving a run early, as a host that stops reading does.
- :mod:`tests.support.states`: a stored paused run tampered with (its held calls, its pending list), as
  an attacker who can write the file would.
- :mod:`tests.support.processes`: a command in a process of its own with no ``AGENT_*`` variable but
  those the test sets (``clean_environment``, ``gateway_environment``), and a child interpreter that
  imports this checkout (``checkout_first``).
- :mod:`tests.support.doc_blocks`: the docs' and README's code blocks, read and run as a reader would.
- :mod:`tests.support.examples`: how many examples a property tries under the Hypothesis profile.
- :mod:`tests.support.bombs`, :mod:`tests.support.otlp`, :mod:`tests.support.postgres`: compression
  bombs, an OTLP receiver on 127.0.0.1, a real Postgres on 127.0.0.1.
- :mod:`tests.support.upstreams`: the one fake server on 127.0.0.1 (it records every request) and its
  routes: a gateway that echoes the caller's key back, for "the command never shows the key"; and the
  upstreams behind a real LiteLLM proxy (a chat-completions provider, a Codex-style endpoint, a
  tripwire), only for the gateway tier.

The offline stand-in itself (:mod:`adapters.offline`) is the fake gateway of the integration tiers; the
``offline_server`` fixture of ``tests/conftest.py`` serves it on 127.0.0.1 for one test.
"""
