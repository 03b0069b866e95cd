# pyright: basic
# (drives pulumi.runtime internals - settings, config, run_in_stack - which are untyped.)
"""Run one Pulumi program against a RecordingMonitor, the way the Python language host does.

Mirrors pulumi.automation's inline-program server (reset settings, set config, fresh event
loop, run_in_stack), with three deliberate differences:

* dry_run=True: this is a preview. Outputs the mock cannot know stay unknown and apply
  callbacks on them do not run, exactly as under `pulumi preview`.
* RPCs run inline on the event-loop thread instead of a thread pool. The monitor never
  blocks, so the thread hop per registration is pure overhead (and makes the order in
  which registrations reach the monitor depend on thread scheduling).
* Before the SDK's own wait for outstanding work (pulumi.runtime.stack.wait_for_rpcs), the
  program's Output tasks are waited for in time linear in their number (`_settle`). The
  SDK's loop waits for the first of all outstanding tasks to finish, over and over, and each
  round registers and removes a callback on every one of them: with thousands of Outputs
  (a 50-pool spec has about 6,000) that was a third of a preview. The SDK's loop still
  runs afterwards, finds nothing left, and is what raises a failed task's exception.
* It must be called on a thread of its own (engine.py does that): pulumi keeps its
  settings, config and root stack in context variables, and a fresh thread starts with a
  fresh context, so nothing leaks between two recordings or into the caller.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
from collections.abc import Callable, Mapping
from contextlib import suppress
from typing import Any, ClassVar

from google.protobuf import empty_pb2
from pulumi.runtime import config as pulumi_config
from pulumi.runtime import settings as pulumi_settings
from pulumi.runtime.proto import engine_pb2
from pulumi.runtime.settings import SETTINGS
from pulumi.runtime.stack import run_in_stack

from ._mockdata import MockContext
from ._monitor import RecordingMonitor
from .records import RecordedResource

DEFAULT_REGION = "us-east-1"
_program_log = logging.getLogger("gpuplat.preview.program")


class _InlineExecutor(concurrent.futures.ThreadPoolExecutor):
    """Runs submitted calls immediately. asyncio insists on a ThreadPoolExecutor subclass."""

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[override]
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # handed to the awaiting coroutine
            future.set_exception(exc)
        return future


class _Engine:
    """Receives pulumi.log.* from the program; debug chatter from the SDK is dropped."""

    _levels: ClassVar[dict[int, int]] = {
        engine_pb2.INFO: logging.INFO,
        engine_pb2.WARNING: logging.WARNING,
        engine_pb2.ERROR: logging.ERROR,
    }

    def Log(self, request):
        level = self._levels.get(request.severity)
        if level is not None:
            suffix = f" ({request.urn})" if request.urn else ""
            _program_log.log(level, "%s%s", request.message, suffix)
        return empty_pb2.Empty()

    def RequirePulumiVersion(self, request):
        return empty_pb2.Empty()


def _exception_handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    # After a failure, outputs that depended on it hold the same exception and nobody
    # awaits them; the failure itself is already raised to the caller.
    message = str(context.get("message", ""))
    if "never retrieved" in message:
        return
    loop.default_exception_handler(context)


def run(
    program: Callable[[], None],
    *,
    project: str,
    stack: str,
    config: Mapping[str, str],
    root_directory: str,
    facts: Any = None,  # AccountFacts | None
) -> list[RecordedResource]:
    monitor = RecordingMonitor(
        MockContext(region=config.get("aws:region") or DEFAULT_REGION, facts=facts), config=dict(config)
    )
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.set_default_executor(_InlineExecutor(max_workers=1))
    loop.set_exception_handler(_exception_handler)
    try:
        pulumi_settings.ROOT.set(None)
        # Constructing Settings assigns every field, in this thread's context only.
        pulumi_settings.configure(
            pulumi_settings.Settings(
                project=project,
                stack=stack,
                monitor=monitor,
                engine=_Engine(),
                dry_run=True,
                organization="organization",
                root_directory=root_directory,
            )
        )
        pulumi_config.set_all_config(dict(config), [])
        loop.run_until_complete(run_in_stack(functools.partial(_program_then_settle, program)))
        return monitor.recorded()
    finally:
        _close(loop)
        monitor.release()


async def _program_then_settle(program: Callable[[], None]) -> None:
    program()
    await _settle()


async def _settle() -> None:
    """Wait until every tracked Output task has finished, or one has failed.

    The SDK tracks each Output's task in SETTINGS.outputs and a task that succeeds removes
    itself; new ones appear while others run. Each task gets one done-callback, and the set
    is scanned once per wake-up of this coroutine (several tasks finish per wake-up), not per
    task. A failure (or a cancellation) ends the wait at once: the SDK's own loop, which runs
    next, raises it as before, so errors surface exactly as they did."""
    loop = asyncio.get_running_loop()
    watched: set[asyncio.Task[Any]] = set()
    finished: list[asyncio.Task[Any]] = []
    wake: list[asyncio.Future[None]] = []

    def on_done(task: asyncio.Task[Any]) -> None:
        finished.append(task)
        if wake and not wake[0].done():
            wake[0].set_result(None)

    settings: Any = SETTINGS  # its fields are context properties, which pyright cannot see through
    outstanding = 0
    while True:
        with settings.lock:
            fresh = [task for task in settings.outputs if task not in watched]
        for task in fresh:
            watched.add(task)
            task.add_done_callback(on_done)
        outstanding += len(fresh)
        while finished:
            task = finished.pop()
            outstanding -= 1
            if task.cancelled() or task.exception() is not None:
                return
        if outstanding == 0:
            return
        wake[:] = [loop.create_future()]
        await wake[0]


def _close(loop: asyncio.AbstractEventLoop) -> None:
    # A failed program can leave tasks waiting on resources that will never resolve.
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    for task in pending:
        with suppress(BaseException):
            loop.run_until_complete(task)
    with suppress(Exception):
        loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()
    asyncio.set_event_loop(None)
