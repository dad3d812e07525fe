"""``async with`` for an adapter that owns what it opened: leaving the block calls its ``aclose()``."""

from __future__ import annotations

from types import TracebackType
from typing import Self

__all__ = ["ClosedOnExit"]


class ClosedOnExit:
    """A base giving ``async with`` to a class with an ``aclose()``: entering returns the object itself,
    leaving (however the block ends) closes it."""

    async def aclose(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
