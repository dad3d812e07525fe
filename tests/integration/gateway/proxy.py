"""Start and stop a real LiteLLM proxy on 127.0.0.1, with every model pointed at a loopback fake."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO, Any

import yaml

__all__ = [
    "MASTER_KEY",
    "MODELS",
    "LiteLLMProxy",
    "ProxyStartError",
    "free_port",
    "proxy_config",
]

MASTER_KEY = "sk-gateway-tier-master-key"
UPSTREAM_KEY = "sk-upstream-fake-key"

# Public model name -> upstream model name on the fake chat-completions server.
MODELS = {
    "gw-text": "scripted-text",
    "gw-tool": "scripted-tool",
    "gw-malformed": "scripted-malformed",
    "gw-agent": "scripted-agent",
    "gw-500": "scripted-500",
}
CHATGPT_MODEL = "gw-chatgpt"

# Flags that keep LiteLLM off the network and away from the developer's files: the bundled price
# list instead of a download, no telemetry, no .env from the working directory, no remote blog or
# header lists, a token directory of our own for the chatgpt provider.
_QUIET_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_MODE": "PRODUCTION",
    "LITELLM_TELEMETRY_DISABLED": "true",
    "LITELLM_DONT_SHOW_FEEDBACK_BOX": "true",
    "LITELLM_LOCAL_BLOG_POSTS": "true",
    "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS": "true",
    "LITELLM_LOCAL_POLICY_TEMPLATES": "true",
    "LITELLM_LOCAL_AUTOROUTER_PRESETS": "true",
    "DISABLE_SCHEMA_UPDATE": "true",
    "NO_COLOR": "1",
    "PYTHONUNBUFFERED": "1",
}
# Variables from the developer's shell that would send the proxy somewhere else or change its keys.
_SCRUBBED_PREFIXES = ("LITELLM_", "OPENAI_", "CHATGPT_", "AZURE_", "ANTHROPIC_", "DATABASE_URL", "REDIS_")


class ProxyStartError(RuntimeError):
    """The proxy died or did not become ready before the deadline; the message ends with its log."""


def free_port() -> int:
    """An ephemeral port on 127.0.0.1 that was free a moment ago (the proxy binds it itself)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def proxy_config(upstream_url: str, codex_url: str) -> dict[str, Any]:
    """The proxy's YAML config as data: the scripted models on the upstream and the chatgpt route."""
    model_list: list[dict[str, Any]] = [
        {
            "model_name": public,
            "litellm_params": {
                "model": f"openai/{upstream}",
                "api_base": f"{upstream_url}/v1",
                "api_key": UPSTREAM_KEY,
                # The Responses route reaches this upstream through LiteLLM's chat-completions bridge.
                "use_chat_completions_api": True,
                # Failures are under test: a retry would hide the first one and double the calls.
                "num_retries": 0,
            },
        }
        for public, upstream in MODELS.items()
    ]
    model_list.append(
        {
            "model_name": CHATGPT_MODEL,
            # The chatgpt provider ignores api_base in this version (CHATGPT_API_BASE is what counts);
            # it is loopback here too, so that no model of this config names a remote host.
            "litellm_params": {"model": "chatgpt/gpt-5.5", "api_base": codex_url, "num_retries": 0},
        }
    )
    return {
        "model_list": model_list,
        "litellm_settings": {"num_retries": 0, "request_timeout": 30, "drop_params": True},
        "general_settings": {"master_key": MASTER_KEY},
    }


def _chatgpt_auth(access_token: str) -> dict[str, Any]:
    # expires_at is read before the token is decoded, so an opaque token never triggers a refresh.
    return {
        "access_token": access_token,
        "refresh_token": "fake-refresh-token",
        "account_id": "acct-gateway-tier",
        "expires_at": int(time.time()) + 24 * 3600,
    }


class LiteLLMProxy:
    """One ``litellm`` proxy process: its config, its environment, its log file and its lifecycle."""

    def __init__(
        self,
        workdir: Path,
        *,
        upstream_url: str,
        codex_url: str,
        tripwire_url: str,
        chatgpt_access_token: str,
    ) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.log_path = workdir / "litellm.log"
        self.startup_seconds: float | None = None
        self._upstream_url = upstream_url
        self._codex_url = codex_url
        self._tripwire_url = tripwire_url
        self._chatgpt_access_token = chatgpt_access_token
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL clients use (``/v1`` included)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _environment(self, token_dir: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUBBED_PREFIXES)}
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
            env.pop(name, None)
        env.update(_QUIET_ENV)
        env.update(
            {
                "LITELLM_MASTER_KEY": MASTER_KEY,
                "CHATGPT_API_BASE": self._codex_url,
                "CHATGPT_TOKEN_DIR": str(token_dir),
                # Anything that honours proxy variables and tries to leave the machine lands on the
                # tripwire, which refuses it and records it; loopback traffic goes direct.
                "HTTP_PROXY": self._tripwire_url,
                "HTTPS_PROXY": self._tripwire_url,
                "http_proxy": self._tripwire_url,
                "https_proxy": self._tripwire_url,
                "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost",
                "HOME": str(self.workdir / "home"),
            }
        )
        return env

    def _command(self, config_path: Path) -> list[str]:
        executable = shutil.which("litellm", path=str(Path(sys.executable).parent))
        launcher = [executable] if executable else [sys.executable, "-m", "litellm.proxy.proxy_cli"]
        return [*launcher, "--config", str(config_path), "--host", "127.0.0.1", "--port", str(self.port)]

    def start(self, *, deadline_seconds: float = 300.0) -> LiteLLMProxy:
        """Launch the proxy and wait until ``/health/liveliness`` answers; raise ProxyStartError if not.

        The deadline only guards against a proxy that never comes up: it starts in 5-15 s on an idle
        2-vCPU machine, but imports for more than 90 s when the machine is loaded (load average 20,
        seen while the whole suite ran beside other work), and the poll returns as soon as it answers.
        """
        token_dir = self.workdir / "chatgpt-tokens"
        token_dir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "home").mkdir(exist_ok=True)
        (token_dir / "auth.json").write_text(json.dumps(_chatgpt_auth(self._chatgpt_access_token)))
        config_path = self.workdir / "litellm-config.yaml"
        config = proxy_config(self._upstream_url, self._codex_url)
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))

        self._log = self.log_path.open("wb")
        started = time.monotonic()
        self._process = subprocess.Popen(  # noqa: S603  # our own interpreter and arguments, no shell
            self._command(config_path),
            cwd=self.workdir,
            env=self._environment(token_dir),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            self._wait_until_ready(started + deadline_seconds)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started
        return self

    def _wait_until_ready(self, deadline: float) -> None:
        url = f"{self.root_url}/health/liveliness"
        last_error = "no attempt yet"
        while time.monotonic() < deadline:
            assert self._process is not None
            code = self._process.poll()
            if code is not None:
                raise ProxyStartError(f"litellm exited with {code} before it was ready\n{self.log_text()}")
            try:
                with urllib.request.urlopen(url, timeout=2) as answer:  # noqa: S310  # fixed loopback URL
                    if answer.status == 200:
                        return
                    last_error = f"HTTP {answer.status}"
            except (urllib.error.URLError, OSError) as exc:
                last_error = type(exc).__name__
            time.sleep(0.1)
        raise ProxyStartError(f"litellm not ready at {url} ({last_error})\n{self.log_text()}")

    def is_running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def log_text(self, *, tail_chars: int = 20_000) -> str:
        if self._log is not None:
            self._log.flush()
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return text[-tail_chars:]

    def stop(self) -> None:
        """Terminate the proxy's process group (uvicorn may fork), then kill it if it lingers."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=15)
        if self._log is not None:
            self._log.close()
            self._log = None
