"""Outages of the services the stages run on: waited out, never turned into verdicts.

A stage's logic raises ``ServiceUnavailable`` when the Docker engine, the LLM endpoint or
GitHub does not answer at all. The stage framework then keeps the record (its offset is not
committed), waits with exponential backoff and tries it again, until the service is back:

    first failure of a service -> one WARNING, swe_stream_service_up{service}=0, outages+1
    every retry                -> swe_stream_stage_outage_retries_total, paused seconds
    first success after it     -> one INFO ("back after N s"), swe_stream_service_up=1

The state is per process and per service, so a stage with many records in flight (validate's
concurrency) reports one outage, not one per record.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from streams.core import metrics
from streams.core.errors import ServiceUnavailable

log = logging.getLogger("swe_stream.outages")


@dataclass
class Backoff:
    """Waits of ``first`` seconds, doubling up to ``longest``, jittered by up to a tenth."""

    first: float = 1.0
    longest: float = 60.0

    def delay(self, attempt: int) -> float:
        base = min(self.longest, self.first * 2 ** max(0, attempt - 1))
        return base * (1 + random.random() / 10)


@dataclass
class _Outage:
    since: float
    message: str


@dataclass
class Outages:
    """The services that are down in this process, and the waits of the records that need
    them. ``sleep`` is injectable so that unit tests need not wait."""

    backoff: Backoff = field(default_factory=Backoff)
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    _down: dict[str, _Outage] = field(default_factory=dict)

    def down(self) -> dict[str, str]:
        """The services down now, and what their last failure said."""
        return {service: outage.message for service, outage in self._down.items()}

    async def wait(self, stage: str, error: ServiceUnavailable, attempt: int) -> None:
        """Record that ``stage``'s record met ``error`` (its ``attempt``-th try), then wait
        before it is tried again."""
        service = error.service
        if service not in self._down:
            self._down[service] = _Outage(time.monotonic(), str(error))
            metrics.SERVICE_UP.labels(service=service).set(0)
            metrics.SERVICE_OUTAGES.labels(service=service).inc()
            log.warning(
                "%s does not answer (%s): %s pauses and tries again with backoff up to %g s; "
                "nothing is marked failed",
                service,
                str(error).splitlines()[0][:300] if str(error) else type(error).__name__,
                stage,
                self.backoff.longest,
            )
        else:
            self._down[service].message = str(error)
        delay = self.backoff.delay(attempt)
        metrics.STAGE_OUTAGE_RETRIES.labels(stage=stage, service=service).inc()
        log.debug("%s: waiting %.1f s for %s (try %d)", stage, delay, service, attempt + 1)
        started = time.monotonic()
        try:
            await self.sleep(delay)
        finally:
            metrics.STAGE_PAUSED_SECONDS.labels(stage=stage, service=service).inc(
                time.monotonic() - started
            )

    def answered(self, stage: str, services: set[str]) -> None:
        """``stage`` got through with ``services`` that were down: they are back."""
        for service in services:
            outage = self._down.pop(service, None)
            if outage is None:
                continue
            metrics.SERVICE_UP.labels(service=service).set(1)
            log.info(
                "%s is back after %.0f s: %s resumed",
                service,
                time.monotonic() - outage.since,
                stage,
            )


# one per process: every stage of a worker shares what it knows of the services
OUTAGES = Outages()
