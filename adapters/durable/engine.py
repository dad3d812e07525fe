"""DBOS for one process: launch it on a system database, queue transcripts, run each as a workflow."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copyreg
import importlib.metadata
import io
import logging
import os
import pickle
import types
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Final

import attrs
import sqlalchemy
from dbos import (
    DBOS,
    DBOSConfig,
    PropagateOtelContext,
    Queue,
    Serializer,
    SetEnqueueOptions,
    SetWorkflowID,
    WorkflowHandleAsync,
    WorkflowStatus,
)
from opentelemetry import trace

from adapters.durable.dbos_seam import NO_LOGGER_PROVIDER_WARNING, console_to_current_stderr, quiet_arguments
from adapters.durable.liveness import ExecutorInUseError, Liveness, LivenessLostError
from adapters.durable.steps import MODEL_REQUEST_STEP, DurableChat, to_store
from adapters.durable.takeover import UNFINISHED, older_unfinished, take_over
from adapters.redaction import Redactor
from application import MeetingSummary, SummaryAgent, ToolRun, ToolRunError, Transcript, WorkflowEditorAgent
from application.meetings.transcripts import TranscriptFormat
from domain import ChatError, ChatMessage, ChatOptions, ChatPort, ChatResponse, FunctionCallContent

__all__ = [
    "APP_NAME",
    "REQUESTS_QUEUE",
    "TRANSCRIPTS_QUEUE",
    "DatabaseError",
    "Engine",
    "EngineSettings",
    "LivenessLostError",
    "Outcome",
    "Runtime",
    "check_database_url",
    "current_runtime",
    "serializer",
    "workflow_runtime",
]

APP_NAME: Final = "meeting-agents"
TRANSCRIPTS_QUEUE: Final = "meeting-agents-transcripts"
REQUESTS_QUEUE: Final = "meeting-agents-requests"
SUMMARIZE_WORKFLOW: Final = "meeting_agents.summarize"
REQUEST_WORKFLOW: Final = "meeting_agents.model_request"
# How often each process looks for queued work (a query each time): a transcript or a rate-limited
# request waits about half of it for its slot. A transcript takes a second or more of requests, so its
# queue is looked at less often: on Postgres each look costs CPU, which a process pays for as long as a
# backlog waits.
_POLLING_SECONDS: Final = 0.05
_TRANSCRIPTS_POLLING_SECONDS: Final = 0.1
_IDLE_POLLING_SECONDS: Final = 1.0
_ENDED_IN_ERROR: Final = ("ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")
# How long a transaction waits for this process's one SQLite connection, or for another process's lock.
_SQLITE_WAIT_SECONDS: Final = 30
_CONNECT_TIMEOUT_SECONDS: Final = 10
_SCHEMES: Final = {"sqlite": "sqlite", "postgresql": "postgresql", "postgres": "postgresql"}
# Every rate-limited request goes to this one partition of the requests queue. DBOS claims from an
# unpartitioned queue in a REPEATABLE READ transaction, where two processes polling at once can each
# count the window's requests before the other's claim commits and each take its own (disjoint)
# requests: three requests in a minute whose limit is two. A claim from a partition of a queue with a
# queue-wide limiter runs SERIALIZABLE, which refuses one of two such claims (DBOS retries it at the
# next poll), so the limit holds across every process.
_REQUESTS_PARTITION: Final = "requests"


def _sqlite_engine(url: str) -> sqlalchemy.Engine:
    """The SQLite engine DBOS would build, in write-ahead-log mode, with one connection that every
    transaction of this process takes in turn.

    DBOS's own engine keeps SQLite's rollback journal, whose every commit waits for the disk (tens of
    milliseconds each on a busy machine, and a run commits once per step). In WAL mode with
    ``synchronous=NORMAL`` a commit is in the operating system's hands before it returns, so it
    survives the process being killed at any point; only an operating-system crash or a power cut
    can lose the last commits (never the database itself), and a commit costs a write instead of a
    wait for the disk. (``synchronous=FULL`` would keep those last commits through a power cut too,
    at one disk flush per commit; ``OFF`` would risk the whole database on one.)

    SQLite lets one writer in at a time, and a writer that finds the file locked sleeps and tries
    again (1, 2, 5, 10 ... 100 ms): with a transcript's steps committing from several threads at
    once, most of a run's time went to those sleeps. Here the pool holds one connection, so this
    process's transactions queue for it, each woken the moment the one before hands it back
    (SQLAlchemy's own queue, bounded by :data:`_SQLITE_WAIT_SECONDS`; other processes still meet
    SQLite's busy timeout). With no engine events of ours, SQLAlchemy dispatches none per statement.
    """
    engine = sqlalchemy.create_engine(url, pool_size=1, max_overflow=0, pool_timeout=_SQLITE_WAIT_SECONDS)

    @sqlalchemy.event.listens_for(engine, "connect")
    def configure(connection: Any, _record: Any) -> None:
        # As DBOS's own engine: writers queue for the lock instead of failing at sqlite3's 5 s default.
        connection.isolation_level = "IMMEDIATE"
        connection.execute(f"PRAGMA busy_timeout={_SQLITE_WAIT_SECONDS * 1000}")
        connection.execute("PRAGMA foreign_keys=ON")
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")

    return engine


def host_traces() -> bool:
    """Whether the host installed a global tracer provider: then DBOS's spans join ours in it."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider | trace.NoOpTracerProvider)


class _NoLoggerProviderWarning(logging.Filter):
    """Drops DBOS's warning that no global *logger* provider is set: we turn DBOS's OpenTelemetry on for
    its spans, and its log records go wherever the host's logging sends them, as everyone else's."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(NO_LOGGER_PROVIDER_WARNING)


class DatabaseError(ValueError):
    """The run database cannot be used (a bad URL, a server that cannot be reached): one line."""


def _shown(url: str) -> str:
    """``url`` without its password."""
    try:
        return sqlalchemy.make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<unreadable URL>"


def shown_url(url: str) -> str:
    """``url`` as an error may show it: without its password."""
    return _shown(url)


def check_database_url(url: str) -> str:
    """``url`` as DBOS takes it (``postgres://`` spelled ``postgresql://``), or a :class:`DatabaseError`.

    SQLite: ``sqlite:///relative.sqlite`` or ``sqlite:////absolute/path.sqlite``, in a folder that
    exists. Postgres: ``postgresql://user:password@host:port/database``.
    """
    if "://" not in url and "@" not in url and url.split(":", 1)[0].lower() not in _SCHEMES:
        # A file's path where a URL goes: say the URL that names it (no password can hide in a path).
        typed = "sqlite:///" + url
        raise DatabaseError(f"--db {url!r}: not a database URL; for a SQLite file type --db {typed}")
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    base = scheme.split("+", 1)[0]
    if base not in _SCHEMES:
        raise DatabaseError(
            f"--db {_shown(url)!r}: expected sqlite:///PATH or postgresql://USER@HOST:PORT/DATABASE"
        )
    try:
        parsed = sqlalchemy.make_url(url)
        parsed.port  # noqa: B018  # reading the port is what rejects a bad one
    except Exception:
        raise DatabaseError(f"--db {_shown(url)!r}: not a database URL") from None
    if _SCHEMES[base] == "sqlite":
        if not parsed.database or parsed.database == ":memory:":
            raise DatabaseError(f"--db {url!r}: name a file (sqlite:///PATH); an in-memory database is lost")
        folder = Path(parsed.database).parent
        if not folder.is_dir():
            raise DatabaseError(f"--db {url!r}: the folder {str(folder)!r} does not exist")
        return "sqlite:///" + parsed.database
    if not parsed.host:
        raise DatabaseError(
            f"--db {_shown(url)!r}: name the server's host (postgresql://USER@HOST:PORT/DATABASE)"
        )
    return "postgresql://" + url.split("://", 1)[1]


def version() -> str:
    """The application version DBOS records with each workflow: processes of one version share a queue.

    ``DBOS__APPVERSION`` when set (DBOS's own variable, for a deploy that names its versions), else
    the package's."""
    named = os.environ.get("DBOS__APPVERSION", "").strip()
    if named:
        return named
    try:
        return f"{APP_NAME}-{importlib.metadata.version('meeting-assistant-agents')}"
    except importlib.metadata.PackageNotFoundError:
        return f"{APP_NAME}-unknown"


def read_only(mapping: dict[Any, Any]) -> types.MappingProxyType[Any, Any]:
    """A read-only mapping again, as it was pickled (pickle cannot name ``MappingProxyType`` itself)."""
    return types.MappingProxyType(mapping)


def _mapping_proxy(proxy: types.MappingProxyType[Any, Any]) -> tuple[Any, tuple[dict[Any, Any]]]:
    return read_only, (dict(proxy),)


def _call(call: FunctionCallContent) -> tuple[Any, tuple[Any, ...]]:
    return parsed_call, (call.call_id, call.name, call.raw_arguments, call.item_id, call.provider_item)


def parsed_call(
    call_id: str, name: str, raw_arguments: str, item_id: str | None, provider_item: str | None
) -> FunctionCallContent:
    """A call as it was pickled without its parsed arguments: parsed again from the model's text."""
    return FunctionCallContent.parse(
        call_id=call_id, name=name, raw_arguments=raw_arguments, item_id=item_id, provider_item=provider_item
    )


class StoreDepthError(ValueError):
    """A value nested deeper than pickle follows, even with each call kept as the model's text only."""


class _RedactingSerializer(Serializer):
    """DBOS's pickle serializer with every secret cut out of what it stores first."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor

    def serialize(self, data: Any) -> str:
        cleaned = to_store(data, self._redactor)
        # The domain's values hold read-only mappings, which pickle cannot take as they are.
        table = {**copyreg.dispatch_table, types.MappingProxyType: _mapping_proxy}
        try:
            return _pickled(cleaned, table)
        except RecursionError:
            pass
        # Pickle recurses once per level: a call's arguments parsed hundreds of levels deep go as the
        # text the model wrote (what they are parsed from again on loading), not as the parsed value.
        try:
            return _pickled(cleaned, {**table, FunctionCallContent: _call})
        except RecursionError:
            raise StoreDepthError("a value nested deeper than a durable run can store") from None

    def deserialize(self, serialized_data: str) -> Any:
        return _Unpickler(io.BytesIO(base64.b64decode(serialized_data))).load()

    def name(self) -> str:
        # DBOS picks a record's serializer by this name; its own "py_pickle" would bypass this one.
        return "meeting_agents_pickle"


MOVED_MODULES: Final[Mapping[str, str]] = types.MappingProxyType(
    {
        "application.approval": "application.tools.approval",
        "application.budget": "application.runs.budget",
        "application.chunking": "application.meetings.chunking",
        "application.conversation": "application.runs.conversation",
        "application.evaluation": "application.meetings.evaluation",
        "application.events": "application.runs.events",
        "application.grounding": "application.meetings.grounding",
        "application.guard": "application.tools.guard",
        "application.held": "application.runs.held",
        "application.language": "application.meetings.language",
        "application.loop": "application.runs.loop",
        "application.output": "application.runs.output",
        "application.parameters": "application.tools.parameters",
        "application.pipeline": "application.runs.pipeline",
        "application.run": "application.runs.run",
        "application.summary": "application.meetings.summary",
        "application.tools": "application.tools.registry",
        "application.transcripts": "application.meetings.transcripts",
        "application.workflow_editor": "application.workflows.editor",
        "application.workflow_json": "application.workflows.json_form",
    }
)
"""Where each module of the application's first, flat layout now stands: a record names a class by its
module, and records written by a version of that layout (a paused edit waiting across a deploy) load
into the same class today."""


class _Unpickler(pickle.Unpickler):
    """Our own database's records, each class looked up where its module stands now."""

    def find_class(self, module: str, name: str) -> Any:
        return super().find_class(MOVED_MODULES.get(module, module), name)


def _pickled(data: Any, table: dict[Any, Any]) -> str:
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer)
    pickler.dispatch_table = table
    pickler.dump(data)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def serializer(redactor: Redactor) -> Serializer:
    """What the engine stores values with (``redactor`` cuts secrets out first); a client reading or
    writing the same database (:class:`~adapters.durable.approval.Approvals`) must use it too."""
    return _RedactingSerializer(redactor)


@attrs.frozen
class Outcome:
    """What one transcript's workflow returns (and DBOS records): ``status`` ``done``, ``incomplete``
    or ``failed``; the ``--format json`` summary (None when failed); the failure in one line; what the
    run spent (the ``usage`` of ``--format json``: requests, tokens, cost), failed runs included."""

    status: str
    summary: Mapping[str, Any] | None = None
    error: str | None = None
    usage: Mapping[str, Any] | None = None


@attrs.frozen
class Runtime:
    """What a process's workflows run with: the pipeline, how to render a summary and tell a failure.

    ``summary_agent`` builds a pipeline whose chat and tools are already the durable decorators';
    ``chat`` is the plain chat a rate-limited request goes through; ``workflow_editor`` (built the
    same way) runs durable edits (:mod:`adapters.durable.approval`).
    """

    summary_agent: Callable[[], SummaryAgent]
    chat: ChatPort
    render: Callable[[MeetingSummary], Mapping[str, Any]]
    describe: Callable[[ChatError], str]
    redactor: Redactor
    spending: Callable[[ToolRun], Mapping[str, Any]]
    workflow_editor: Callable[[], WorkflowEditorAgent] | None = None
    announce: Callable[[str], None] | None = None
    """Told, in one line naming its id (never its content), of each meeting this process takes and
    finishes (a ``worker`` prints them)."""


_runtime: Runtime | None = None
_log = logging.getLogger(__name__)
# Whether DBOS traces in this process (set by Engine.launch): a queued request then carries the trace.
_traced = False
# The queues as this process registered them (set by Engine.launch).
_queues: dict[str, Queue] = {}


def current_runtime() -> Runtime:
    """What this process's workflows run with; a RuntimeError before :meth:`Engine.launch`."""
    if _runtime is None:
        raise RuntimeError("no durable runtime: Engine.launch() sets it")
    return _runtime


# The tasks of the workflows running in this process, which Engine.shutdown ends. Left running, a
# workflow waiting on a peer outlives DBOS.destroy, which drops DBOS's own hold on its task: the
# garbage collector then closes the task's coroutine at some later moment, outside the event loop,
# and DBOS's cleanup in it fails there ("Exception ignored in: <coroutine _execute_workflow_async>").
_workflow_tasks: set[asyncio.Task[Any]] = set()


def workflow_runtime() -> Runtime:
    """:func:`current_runtime`, for the workflow starting in the calling task: the task is held until
    it ends, so that :meth:`Engine.shutdown` can end it on the event loop."""
    runtime = current_runtime()
    task = asyncio.current_task()
    if task is not None and task not in _workflow_tasks:
        _workflow_tasks.add(task)
        task.add_done_callback(_workflow_tasks.discard)
    return runtime


@DBOS.workflow(name=SUMMARIZE_WORKFLOW)
async def summarize_transcript(
    transcript: str, input_format: TranscriptFormat | None = None, speakers: dict[str, str] | None = None
) -> Outcome:
    """One transcript, summarized: the workflow DBOS runs, keyed by the transcript's sha256. With an
    ``input_format`` (checked by the batch before it submitted it) the text is imported in that format,
    its labels named by ``speakers``."""
    runtime = workflow_runtime()
    meeting_id = DBOS.workflow_id
    if runtime.announce is not None:
        runtime.announce(f"took meeting {meeting_id}")
    meeting = transcript if input_format is None else Transcript.parse(transcript, input_format, speakers)
    try:
        summary = await runtime.summary_agent().summarize(meeting)
    except ChatError as error:
        spent = runtime.spending(error.run) if isinstance(error, ToolRunError) else None
        outcome = Outcome("failed", error=runtime.redactor.redact(runtime.describe(error)), usage=spent)
    else:
        status = "done" if summary.complete else "incomplete"
        outcome = Outcome(status, summary=runtime.render(summary), usage=runtime.spending(summary.run))
    if runtime.announce is not None:
        runtime.announce(f"finished meeting {meeting_id}: {outcome.status}")
    return outcome


@DBOS.workflow(name=REQUEST_WORKFLOW)
async def model_request(messages: Sequence[ChatMessage], options: ChatOptions | None) -> ChatResponse:
    """One model request on the rate-limited queue (with ``agent.batch_requests_per_minute``)."""
    runtime = workflow_runtime()
    durable = DurableChat(runtime.chat, runtime.redactor)
    return await DBOS.run_step_async({"name": MODEL_REQUEST_STEP}, durable.send, messages, options)


async def _through_queue(messages: Sequence[ChatMessage], options: ChatOptions | None) -> ChatResponse:
    queue = _queues.get(REQUESTS_QUEUE)
    assert queue is not None  # Engine.launch registers it
    # The request's workflow span joins the transcript's trace (under the chat span that sends it).
    with (
        PropagateOtelContext() if _traced else contextlib.nullcontext(),
        SetEnqueueOptions(queue_partition_key=_REQUESTS_PARTITION),
    ):
        handle = await queue.enqueue_async(model_request, tuple(messages), options)
    return await handle.get_result()


@attrs.frozen
class EngineSettings:
    """Where the runs are kept and how much this process takes on."""

    database_url: str
    executor_id: str
    concurrency: int
    requests_per_minute: int | None = None
    traced: bool = True
    """DBOS's own spans (a workflow's, each step's) go to the global tracer provider when the host
    installed one: each transcript one trace, its workflow span the parent of the run's spans."""
    shared_queue: bool | None = None
    """Whether :meth:`Engine.submit` puts transcripts on the queue other processes take from too, or
    starts them in this process (at most ``concurrency`` at a time). None: the shared queue on a
    server database (Postgres, where workers run), here on SQLite (one process, no queue to wait for:
    a transcript starts the moment a slot frees instead of at the queue's next poll)."""
    recovery_seconds: float = 10.0
    """On Postgres, how often this process looks for processes that died holding workflows (and
    recovers those workflows); it looks at launch too. See :mod:`adapters.durable.liveness`."""

    @property
    def queued(self) -> bool:
        """Whether transcripts go through the shared queue (see ``shared_queue``)."""
        if self.shared_queue is not None:
            return self.shared_queue
        return self.database_url.startswith("postgresql")


def requester(settings: EngineSettings) -> Callable[..., Any] | None:
    """How a durable chat sends a request: through the rate-limited queue when there is a limit."""
    return _through_queue if settings.requests_per_minute is not None else None


class Engine:
    """DBOS launched in this process (a process-global singleton: one engine at a time).

    :meth:`launch` must run inside the running event loop, so that the workflows run on it.
    """

    def __init__(
        self,
        settings: EngineSettings,
        database: sqlalchemy.Engine | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
        liveness: Liveness | None = None,
    ) -> None:
        self.settings = settings
        self._database = database
        self._loop = loop
        self._liveness = liveness
        self._lost: str | None = None
        self._lost_news = asyncio.Event()
        # Transcripts started in this process (not queued): the slots, the waits, their outcomes.
        self._slots = asyncio.Semaphore(settings.concurrency)
        self._running: set[asyncio.Task[None]] = set()
        self._ended: dict[str, Outcome] = {}
        self._news = asyncio.Event()
        # What take_finished has still to hand out: started here, the ids that ended since its last
        # call; queued, the ids submitted whose end it has not handed out yet.
        self._fresh: list[str] = []
        self._unfinished: set[str] = set()
        # Workflows of an earlier version this process put back on the transcripts queue under its own.
        self._taken_over: set[str] = set()
        self.on_notice: Callable[[str], None] | None = None
        """Who hears, in one line, of what this process did besides its work (taking an earlier
        version's meetings over); None: the runtime's ``announce``, else the log."""

    @classmethod
    async def launch(cls, settings: EngineSettings, runtime: Runtime) -> Engine:
        """Open (creating it if need be) the system database, recover this executor's unfinished
        workflows and start taking queued transcripts. Raises :class:`DatabaseError`."""
        global _runtime, _traced
        url = settings.database_url
        # On Postgres this id's lock first: DBOS recovers this id's own workflows at launch only once no
        # survivor can be recovering them too (and never while a live process has the same id).
        liveness = await _take_liveness(settings) if url.startswith("postgresql") else None
        _runtime = runtime
        _traced = settings.traced and host_traces()
        config: DBOSConfig = {
            "name": APP_NAME,
            "system_database_url": url,
            "application_version": version(),
            "executor_id": settings.executor_id,
            "serializer": serializer(runtime.redactor),
            "log_level": "WARNING",
            "notification_listener_polling_interval_sec": 0.1,
            # No endpoint: DBOS adds no exporter and no provider of its own, it uses the host's.
            "enable_otlp": _traced,
        }
        engine = None
        if url.startswith("postgresql"):
            config["db_engine_kwargs"] = {"connect_args": {"connect_timeout": _CONNECT_TIMEOUT_SECONDS}}
        else:
            engine = config["system_database_engine"] = _sqlite_engine(url)
        try:
            dbos_logger = logging.getLogger("dbos")
            console_to_current_stderr()
            quiet_arguments()
            quiet = _NoLoggerProviderWarning()
            dbos_logger.addFilter(quiet)
            try:
                DBOS(config=config)
            finally:
                dbos_logger.removeFilter(quiet)
            DBOS.launch()
            limit = settings.requests_per_minute
            # Polled either way, so that what an earlier process queued there still runs; when this
            # process starts its transcripts itself, rarely.
            _queues[TRANSCRIPTS_QUEUE] = await DBOS.register_queue_async(
                TRANSCRIPTS_QUEUE,
                worker_concurrency=settings.concurrency,
                polling_interval_sec=_TRANSCRIPTS_POLLING_SECONDS
                if settings.queued
                else _IDLE_POLLING_SECONDS,
                on_conflict="always_update",
            )
            if limit is not None:
                # Only then: every queue a process knows is polled, which costs a query each time.
                _queues[REQUESTS_QUEUE] = await DBOS.register_queue_async(
                    REQUESTS_QUEUE,
                    limiter={"limit": limit, "period": 60.0},
                    # The same limit on the one partition: what makes the queue a partitioned one.
                    partition_limiter={"limit": limit, "period": 60.0},
                    polling_interval_sec=_POLLING_SECONDS,
                    on_conflict="always_update",
                )
        except Exception as exc:
            DBOS.destroy(destroy_registry=False)
            if engine is not None:
                engine.dispose()
            if liveness is not None:
                liveness.close()
            _runtime = None
            _traced = False
            _queues.clear()
            _give_back_default_executor(asyncio.get_running_loop())
            raise DatabaseError(
                f"--db {_shown(url)!r}: cannot be used ({type(exc).__name__}: {_first_line(exc)})"
            ) from None
        launched = cls(settings, engine, asyncio.get_running_loop(), liveness)
        if liveness is not None:
            liveness.start(
                launched._heard_lost, (SUMMARIZE_WORKFLOW, TRANSCRIPTS_QUEUE, launched._heard_taken_over)
            )
        return launched

    def _heard_taken_over(self, line: str) -> None:
        """From the liveness thread: it took an earlier version's meetings over (one line)."""
        runtime = _runtime
        hears = self.on_notice or (runtime.announce if runtime is not None else None)
        if hears is not None and self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(hears, line)
        else:
            _log.warning("%s", line)

    def _heard_lost(self, reason: str) -> None:
        """From the liveness thread: this process can no longer prove it is alive."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._set_lost, reason)

    def _set_lost(self, reason: str) -> None:
        self._lost = reason
        self._lost_news.set()

    @property
    def lost(self) -> str | None:
        """Why this process stopped proving it is alive to the others (its liveness connection to a
        Postgres run database broke), or None: once set, others may take its workflows over, so the
        process should stop (``batch`` and ``worker`` end with exit code 1)."""
        return self._lost

    async def wait_lost(self) -> str:
        """Until :attr:`lost` is set (on SQLite, never); why."""
        await self._lost_news.wait()
        assert self._lost is not None
        return self._lost

    def check_alive(self) -> None:
        """A :class:`LivenessLostError` once :attr:`lost` is set."""
        if self._lost is not None:
            raise LivenessLostError(self._lost)

    async def submit(
        self,
        sha256: str,
        transcript: str,
        input_format: TranscriptFormat | None = None,
        speakers: dict[str, str] | None = None,
    ) -> None:
        """Run ``transcript`` as the workflow ``sha256``: queued, or started here once a slot is free
        (``EngineSettings.shared_queue``). A workflow of that id already there (done, running or
        queued, here or on another worker) is left as it is, its outcome the one recorded.
        ``input_format`` and ``speakers`` say how to import it (:meth:`Transcript.parse`)."""
        meeting = (transcript, input_format, speakers)
        if sha256 in self._taken_over and not self.settings.queued:
            # Already on the queue under this version: wait for it there.
            task = asyncio.create_task(self._wait_here(sha256), name=f"transcript {sha256[:12]}")
            self._running.add(task)
            task.add_done_callback(self._running.discard)
            return
        if self.settings.queued:
            with SetWorkflowID(sha256):
                await _queues[TRANSCRIPTS_QUEUE].enqueue_async(summarize_transcript, *meeting)
            self._unfinished.add(sha256)
            return
        task = asyncio.create_task(self._run_here(sha256, meeting), name=f"transcript {sha256[:12]}")
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _run_here(
        self, sha256: str, meeting: tuple[str, TranscriptFormat | None, dict[str, str] | None]
    ) -> None:
        async with self._slots:
            outcome = await _outcome(self._started(sha256, meeting))
        self._settled(sha256, outcome)

    @staticmethod
    async def _started(
        sha256: str, meeting: tuple[str, TranscriptFormat | None, dict[str, str] | None]
    ) -> object:
        with SetWorkflowID(sha256):
            handle = await DBOS.start_workflow_async(summarize_transcript, *meeting)
        return await handle.get_result()

    def _settled(self, sha256: str, outcome: Outcome) -> None:
        self._ended[sha256] = outcome
        self._fresh.append(sha256)
        self._news.set()

    async def take_over(self, ids: Sequence[str]) -> dict[str, list[str]]:
        """Of the workflows ``ids``, those an earlier application version left unfinished, put back on
        the transcripts queue under this process's version from their last recorded step
        (:func:`adapters.durable.takeover.take_over`): DBOS runs and queues a workflow only under the
        version that started it, so after an upgrade they would wait for ever. The ids taken over, by
        the version that left them.

        On Postgres only those this executor id left (a process started again after an upgrade): the
        others' are taken over once their process is gone (:mod:`adapters.durable.liveness`), so a
        process of the old version still running keeps its own."""
        current = DBOS.application_version
        statuses: list[WorkflowStatus] = await DBOS.list_workflows_async(
            workflow_ids=list(ids), status=UNFINISHED, load_input=False, load_output=False
        )
        older = older_unfinished(statuses, current)
        if self._liveness is not None:
            older = [status for status in older if status.executor_id in (None, self.settings.executor_id)]
        if not older:
            return {}
        taken = await asyncio.to_thread(take_over, older, current, TRANSCRIPTS_QUEUE)
        self._taken_over.update(id_ for ids_ in taken.values() for id_ in ids_)
        return taken

    async def forget(self, ids: Sequence[str]) -> None:
        """The workflows ``ids`` deleted, whatever they ended with, with the requests they queued:
        :meth:`submit` then runs them again from the start (``batch --rerun``)."""
        await DBOS.delete_workflows_async(list(ids), delete_children=True)

    async def _wait_here(self, sha256: str) -> None:
        self._settled(sha256, await _outcome(self._retrieved(sha256)))

    @staticmethod
    async def _retrieved(sha256: str) -> object:
        handle: WorkflowHandleAsync[Any] = await DBOS.retrieve_workflow_async(sha256)
        return await handle.get_result()

    async def forget_failed(self, ids: Sequence[str]) -> list[str]:
        """Of the workflows ``ids``, those that ended ``failed`` or in error, deleted with the requests
        they queued: :meth:`submit` then runs them again from the start. The ids deleted."""
        statuses: list[WorkflowStatus] = await DBOS.list_workflows_async(
            workflow_ids=list(ids), load_input=False
        )
        failed = [
            status.workflow_id
            for status in statuses
            if status.status in _ENDED_IN_ERROR
            or (
                status.status == "SUCCESS"
                and isinstance(status.output, Outcome)
                and status.output.status == "failed"
            )
        ]
        if failed:
            await DBOS.delete_workflows_async(failed, delete_children=True)
        return failed

    async def recorded(self, ids: Sequence[str]) -> dict[str, Outcome]:
        """Of the workflows ``ids``, those the run database records as ended, with their outcome (as
        :meth:`finished` tells it), whichever process ran them: what earlier runs left."""
        return await self._ended_of(ids)

    async def ended_well(self, ids: Sequence[str]) -> list[str]:
        """Of the workflows ``ids``, those already recorded as ended with a summary (``done`` or
        ``incomplete``): submitted again, they hand back that record and send nothing."""
        statuses: list[WorkflowStatus] = await DBOS.list_workflows_async(
            workflow_ids=list(ids), status="SUCCESS", load_input=False
        )
        return [
            status.workflow_id
            for status in statuses
            if isinstance(status.output, Outcome) and status.output.status in ("done", "incomplete")
        ]

    async def finished(self, ids: Sequence[str]) -> dict[str, Outcome]:
        """Of the workflows ``ids``, those that ended, with their outcome (an error, as ``error``).
        It looks at every one of ``ids``: a loop waiting for a batch takes :meth:`take_finished`."""
        if not self.settings.queued:
            return {id_: self._ended[id_] for id_ in ids if id_ in self._ended}
        return await self._ended_of(ids)

    async def take_finished(self) -> dict[str, Outcome]:
        """The workflows :meth:`submit` ran that ended since the last call, each once, with its
        outcome (as :meth:`finished` tells it): started here, in the order of their ids; queued, as
        the database lists them (oldest first).

        Started here, a call costs what ended since the one before (sorted), not what is still
        running, so a batch that hears of its transcripts' ends one at a time pays the same for each
        however long it is. Queued, it asks the database about every transcript submitted and not
        yet handed out (one query a call), as a poll must, and reads back the rows of those that ended only.
        """
        if not self.settings.queued:
            fresh, self._fresh = self._fresh, []
            return {id_: self._ended[id_] for id_ in sorted(fresh)}
        ended = await self._ended_of(sorted(self._unfinished))
        self._unfinished.difference_update(ended)
        return ended

    async def _ended_of(self, ids: Sequence[str]) -> dict[str, Outcome]:
        # Only the rows of those that ended: a poll over a long batch does not load every running one.
        statuses: list[WorkflowStatus] = await DBOS.list_workflows_async(
            workflow_ids=list(ids), status=["SUCCESS", *_ENDED_IN_ERROR], load_input=False
        )
        ended: dict[str, Outcome] = {}
        for status in statuses:
            if status.status == "SUCCESS" and isinstance(status.output, Outcome):
                ended[status.workflow_id] = status.output
            elif status.status in _ENDED_IN_ERROR:
                reason = _first_line(status.error) if status.error is not None else status.status.lower()
                ended[status.workflow_id] = Outcome("error", error=f"the run ended with {reason}")
        return ended

    async def wait(self, seconds: float) -> None:
        """Until a transcript started here ends, at most ``seconds`` (queued ones: ``seconds``); then
        :meth:`take_finished` tells which."""
        if self.settings.queued:
            await asyncio.sleep(seconds)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._news.wait(), seconds)
        self._news.clear()

    def shutdown(self) -> None:
        """Stop DBOS; workflows still running stay PENDING and are recovered by the next launch.

        Their tasks are cancelled: each ends on the event loop the next time it runs (its request
        closed, its cleanup done where it can run). DBOS records nothing for a cancelled task, so the
        workflow stays PENDING, as after a crash."""
        global _runtime, _traced
        for task in self._running:
            task.cancel()  # the waits
        for task in tuple(_workflow_tasks):
            loop = task.get_loop()
            if not loop.is_closed():
                # Safe from any thread; the workflows of a launch from a running loop run on it.
                loop.call_soon_threadsafe(task.cancel)
        if self._liveness is not None:
            self._liveness.stop()
        DBOS.destroy(destroy_registry=False)
        if self._liveness is not None:
            # Last: once the lock is given back, others may recover what this process left PENDING.
            self._liveness.close()
        if self._database is not None:
            self._database.dispose()
        _runtime = None
        _traced = False
        _queues.clear()
        if self._loop is not None:
            _give_back_default_executor(self._loop)


async def _take_liveness(settings: EngineSettings) -> Liveness:
    """This executor id's liveness lock on a Postgres run database, or a :class:`DatabaseError`."""
    url = settings.database_url
    try:
        return await asyncio.to_thread(
            Liveness.take, url, settings.executor_id, settings.recovery_seconds, version()
        )
    except ExecutorInUseError as exc:
        raise DatabaseError(str(exc)) from None
    except Exception as exc:
        raise DatabaseError(
            f"--db {_shown(url)!r}: cannot be used ({type(exc).__name__}: {_first_line(exc)})"
        ) from None


def _give_back_default_executor(loop: asyncio.AbstractEventLoop) -> None:
    """A default executor of its own again for ``loop``, once DBOS is gone.

    DBOS makes the loop's default executor (``asyncio.to_thread``, ``run_in_executor(None, ...)``) a
    front for its own thread pool, which ``DBOS.destroy`` shuts down: the loop would then refuse
    every later ``to_thread`` ("cannot schedule new futures after shutdown"). The fresh pool starts
    its threads when first used and is shut down with the loop, as asyncio's own default would be.
    """
    if not loop.is_closed():
        loop.set_default_executor(ThreadPoolExecutor(thread_name_prefix="asyncio"))


async def _outcome(result: Awaitable[object]) -> Outcome:
    """What a meeting's workflow ended with: its ``Outcome``, or an error outcome naming why it has none."""
    try:
        output = await result
    except Exception as exc:  # the workflow raised, or DBOS could not run it
        return Outcome("error", error=f"the run ended with {_first_line(exc)}")
    return output if isinstance(output, Outcome) else Outcome("error", error="no outcome")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
