"""The proxy itself: loopback only, guarded by its master key, and quiet towards the internet."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid

import pytest

from tests.integration.gateway.proxy import MASTER_KEY, MODELS, proxy_config
from tests.integration.gateway.support import Gateway
from tests.support.upstreams import FakeServer, tripwire_route

pytestmark = pytest.mark.gateway


def _post_responses(gateway: Gateway, key: str | None, text: str = "hello") -> int:
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    body = json.dumps({"model": "gw-text", "input": text, "stream": False}).encode()
    url = f"{gateway.proxy.base_url}/responses"
    request = urllib.request.Request(url, data=body, headers=headers)  # noqa: S310  # loopback proxy URL
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310  # loopback proxy URL
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_proxy_listens_on_loopback_and_is_alive(gateway: Gateway) -> None:
    assert gateway.proxy.is_running()
    assert gateway.proxy.base_url.startswith("http://127.0.0.1:")
    assert gateway.proxy.startup_seconds is not None


def test_proxy_relays_nothing_without_its_master_key(gateway: Gateway) -> None:
    # Measured with 1.108.7 and no database: a wrong key gets 400, a missing one 500 (the auth error
    # path imports prisma, which the proxy extra does not install). Either way nothing is relayed.
    nonce = f"no-key-{uuid.uuid4()}"
    assert 400 <= _post_responses(gateway, None, nonce) < 600
    assert 400 <= _post_responses(gateway, "sk-not-the-master-key", nonce) < 600
    assert [r for r in gateway.upstream.requests if r.mentions(nonce)] == []


def test_proxy_serves_requests_that_carry_its_master_key(gateway: Gateway) -> None:
    assert _post_responses(gateway, MASTER_KEY) == 200


def test_nothing_tried_to_leave_the_machine_while_the_proxy_started(gateway: Gateway) -> None:
    # The session fixture checks again at teardown, after every request of the tier.
    assert [r.path for r in gateway.tripwire.requests] == []


def test_every_model_of_the_config_points_at_loopback() -> None:
    config = proxy_config("http://127.0.0.1:1", "http://127.0.0.1:2")
    bases = [model["litellm_params"]["api_base"] for model in config["model_list"]]
    assert len(bases) == len(MODELS) + 1
    assert all(base.startswith(("http://127.0.0.1:1/", "http://127.0.0.1:2")) for base in bases)
    assert all(model["litellm_params"]["num_retries"] == 0 for model in config["model_list"])


def test_the_tripwire_refuses_and_records_what_a_proxy_aware_client_sends_out() -> None:
    # Its own tripwire: the session's must stay empty. Nothing leaves 127.0.0.1 here either.
    tripwire = FakeServer(tripwire_route).start()
    try:
        opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({"http": tripwire.base_url, "https": tripwire.base_url})
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            opener.open("http://price-list.example.invalid/model_prices.json", timeout=10)
        refused.value.close()
    finally:
        tripwire.stop()
    assert refused.value.code == 403
    assert [r.path for r in tripwire.requests] == ["http://price-list.example.invalid/model_prices.json"]
