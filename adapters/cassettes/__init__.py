"""Record and replay: a run's HTTP exchanges kept as cassettes, and a ChatPort that answers from them."""

from adapters.cassettes.format import CassetteError, Exchange
from adapters.cassettes.recorder import Recorder
from adapters.cassettes.replay import ReplayChat, ReplayMismatchError, ReplayTransport, load_cassettes

__all__ = [
    "CassetteError",
    "Exchange",
    "Recorder",
    "ReplayChat",
    "ReplayMismatchError",
    "ReplayTransport",
    "load_cassettes",
]
