"""Whose memory a run reads and writes: the one namespace rule of every surface.

Every surface (the read graph, ``add_memory``, the middleware, the memory tools, the graphs of
``langgraph.json``) calls :func:`resolve_namespace`; nothing else decides a namespace.

**Without authentication** the run names its user: the runtime context (``namespace``, then
``user_id``), then ``config["configurable"]`` (the same two keys), then ``default``. A
``user_id`` ``"ada"`` means the namespace ``("users", "ada")`` (:data:`USER_NAMESPACE`, the one
convention of the package); a ``default`` with ``{field}`` placeholders is a template filled
from the run (:func:`fill_namespace`).

**On a LangGraph server with authentication** the server strips any client-sent
``langgraph_auth_user_id`` / ``langgraph_auth_user`` from the run's ``configurable`` and sets
them from the login, so those two are the only fields of a run a client cannot choose. When a
run carries ``langgraph_auth_user_id``, that identity decides the namespace: the template (the
surface's, else :data:`USER_NAMESPACE`) is filled from the authenticated user only
(``user_id`` is the identity, any other field comes from the user the auth handler returned),
never from the client, and no plain default namespace is used. A context, ``configurable`` or
input that names a *different* user or namespace is refused with
:class:`~mnemon_langgraph.errors.NamespaceAccessError`; naming the same one is allowed.
"""

from __future__ import annotations

import string
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from mnemon_langgraph.errors import ConfigurationError, NamespaceAccessError
from mnemon_langgraph.types import Namespace, normalize_namespace

__all__ = [
    "AUTH_USER_ID_KEY",
    "AUTH_USER_KEY",
    "USER_NAMESPACE",
    "AuthIdentity",
    "auth_identity",
    "check_claimed_namespace",
    "context_fields",
    "fill_namespace",
    "fill_source_namespace",
    "granted_namespace",
    "legacy_namespace_hint",
    "legacy_user_namespace",
    "namespace_value",
    "resolve_namespace",
    "run_actor",
    "run_fields",
    "template_fields",
    "user_namespace",
]

USER_NAMESPACE: tuple[str, str] = ("users", "{user_id}")
"""The one namespace convention: user ``"ada"``'s memory is ``("users", "ada")``.

Two parts, not ``(user_id,)``: a one-part namespace would let a user called ``"teams"`` own
the root of shared namespaces such as ``("teams", "blue")``.
"""

AUTH_USER_ID_KEY = "langgraph_auth_user_id"
"""``configurable`` key where a LangGraph server puts the authenticated identity."""

AUTH_USER_KEY = "langgraph_auth_user"
"""``configurable`` key where a LangGraph server puts the authenticated user (its fields)."""

_GRANTED: ContextVar[Namespace | None] = ContextVar("mnemon_granted_namespace", default=None)


# --- values and templates ------------------------------------------------------------------


def namespace_value(name: str, value: Any) -> str | None:
    """``value`` of field ``name`` as a namespace string; ``None`` if absent (``None``/``""``).

    Only ``str`` and ``int`` (not ``bool``) are accepted: ``str()`` of any other object (a
    user object whose ``__str__`` is a display name, ``object()``) is not a stable identity.

    Raises:
        ConfigurationError: ``value`` is of another type.
    """
    if value is None or (isinstance(value, str) and not value):
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ConfigurationError(
            f"namespace field {name!r} must be a str or int, got {type(value).__name__}; "
            f"pass the user's stable id (e.g. user.id), not the object"
        )
    return str(value)


def user_namespace(user_id: str | int) -> Namespace:
    """The namespace of user ``user_id``: ``("users", user_id)`` (:data:`USER_NAMESPACE`).

    Raises:
        ConfigurationError: ``user_id`` is empty or not a str/int.
        NamespaceError: ``user_id`` is not a usable namespace part.
    """
    value = namespace_value("user_id", user_id)
    if value is None:
        raise ConfigurationError("user_id must be a non-empty string")
    return normalize_namespace((USER_NAMESPACE[0], value))


def _parts(template: str | Sequence[str]) -> list[str]:
    return [template] if isinstance(template, str) else [str(p) for p in template]


def template_fields(template: str | Sequence[str] | None) -> list[str]:
    """The ``{field}`` names of a namespace template, in order (none for a plain namespace).

    Raises:
        ConfigurationError: A placeholder is not a plain name, or a part holds two.
    """
    if template is None:
        return []
    fields: list[str] = []
    for part in _parts(template):
        in_part = 0
        for _, name, _, _ in string.Formatter().parse(part):
            if name is None:
                continue
            if not name.isidentifier():
                raise ConfigurationError(
                    f"namespace template {template!r}: placeholder {{{name}}} must be a "
                    "plain field name such as {user_id}"
                )
            in_part += 1
            if in_part > 1:
                # "{org}-{user_id}" fills ("a", "b-c") and ("a-b", "c") alike.
                raise ConfigurationError(
                    f"namespace template {template!r}: part {part!r} holds more than one "
                    "field, so two users could share one namespace; put each field in "
                    'its own namespace part, e.g. ("org", "{org}", "user", "{user_id}")'
                )
            fields.append(name)
    return fields


def _field(source: Any, name: str) -> str | None:
    """Non-empty ``name`` of a context object or mapping (the server sends ``""`` for none)."""
    if source is None:
        return None
    value = source.get(name) if isinstance(source, Mapping) else getattr(source, name, None)
    return namespace_value(name, value)


def _configurable(config: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (config or {}).get("configurable") or {}


def _fill_from_run(template: str | Sequence[str], context: Any, config: Any) -> Namespace:
    """Each ``{field}`` from the run's context, then ``configurable`` (no authentication)."""
    configurable = _configurable(config)
    values: dict[str, str] = {}
    for name in template_fields(template):
        value = _field(context, name) or _field(configurable, name)
        if value is None:
            where = type(context).__name__ if context is not None else "no context"
            raise ConfigurationError(
                f"namespace template {tuple(_parts(template))!r} needs {name!r}: looked in the "
                f"run's context ({where}) and config['configurable'] (keys: "
                f"{sorted(k for k in configurable if not str(k).startswith('__'))}); pass "
                f"context=...({name}=...) or config={{'configurable': {{'{name}': ...}}}}"
            )
        values[name] = value
    return normalize_namespace([part.format_map(values) for part in _parts(template)])


# --- the authenticated identity ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AuthIdentity:
    """The user a LangGraph server authenticated for a run.

    Attributes:
        user_id: ``configurable["langgraph_auth_user_id"]`` (the auth handler's ``identity``).
        user: ``configurable["langgraph_auth_user"]``: the user the auth handler returned (a
            dict or the server's proxy of it), whose fields fill namespace templates.
    """

    user_id: str
    user: Any = None

    def value(self, name: str) -> str | None:
        """Field ``name`` of the authenticated user (``user_id`` is the identity)."""
        if name in ("user_id", "identity"):
            return self.user_id
        return namespace_value(name, _user_field(self.user, name))


def _user_field(user: Any, name: str) -> Any:
    if user is None:
        return None
    getter = getattr(user, "get", None)  # dict, and the server's ProxyUser / DotDict
    if callable(getter):
        try:
            return getter(name)
        except (KeyError, TypeError, AttributeError):
            return None
    return getattr(user, name, None)


def _current_config() -> Mapping[str, Any] | None:
    from langgraph.config import get_config

    try:
        return get_config()
    except (RuntimeError, KeyError):
        return None


def auth_identity(config: Mapping[str, Any] | None = None) -> AuthIdentity | None:
    """The authenticated user of the run ``config`` belongs to, or ``None`` without auth.

    Looks in ``config`` and in the config of the LangGraph run this code executes in, so a
    surface that builds a config of its own still sees the server's identity.
    """
    for source in (config, _current_config()):
        configurable = _configurable(source)
        user_id = namespace_value(AUTH_USER_ID_KEY, configurable.get(AUTH_USER_ID_KEY))
        if user_id is not None:
            return AuthIdentity(user_id, configurable.get(AUTH_USER_KEY))
    return None


def run_actor(actor: str, config: Mapping[str, Any] | None = None) -> str:
    """The actor an audit row of this run records: ``actor``, or who is signed in and how.

    On a server with authentication: ``"auth:<identity> via <actor>"`` (an actor that already
    says so is kept); otherwise ``actor``. Every audited deletion a run can make (forget, an
    item's delete, an erase, an import) goes through this, so the trail names who was signed in.
    """
    auth = auth_identity(config)
    if auth is None:
        return actor
    prefix = f"auth:{auth.user_id} via "
    return actor if actor.startswith(prefix) else prefix + actor


def legacy_user_namespace(
    namespace: Sequence[str], config: Mapping[str, Any] | None = None
) -> Namespace | None:
    """Where earlier versions kept user X's memory: the one-part ``(X,)``, for a user's
    namespace ``("users", X)`` (``None`` for any other namespace).

    On a LangGraph server with authentication, only the authenticated user's own (``X`` is
    the identity; ``None`` otherwise): a hint built on it never says whether another
    namespace holds data.
    """
    if len(namespace) != 2 or namespace[0] != USER_NAMESPACE[0]:
        return None
    auth = auth_identity(config)
    if auth is not None and auth.user_id != namespace[1]:
        return None
    return (namespace[1],)


def legacy_namespace_hint(old: Namespace, db: str | None = None) -> str:
    """The sentence naming the old one-part namespace ``old`` (which holds records) and the
    command that moves its records to the user's namespace (``db``: its ``--db``, already
    redacted; ``None``: left out)."""
    import shlex

    where = f"--db {shlex.quote(db)} " if db else ""
    name = shlex.quote(old[0])
    return (
        f"the one-part namespace {list(old)!r} of earlier versions holds records; move them "
        f"with `mnemon rename-namespace {where}--namespace {name} --to-user {name}`"
    )


@contextmanager
def granted_namespace(namespace: Sequence[str]) -> Iterator[Namespace]:
    """Within the block, ``namespace`` counts as resolved for the run (a nested read graph).

    A surface that resolved its namespace by the rule hands it to the read graph it runs; on a
    server with authentication the nested graph then accepts it even when the surface's
    template differs from the default one. A context variable, not a config key: a client can
    set config keys, never this.
    """
    ns = normalize_namespace(namespace)
    token = _GRANTED.set(ns)
    try:
        yield ns
    finally:
        _GRANTED.reset(token)


def _authenticated(
    auth: AuthIdentity, template: str | Sequence[str] | None
) -> tuple[Namespace, list[str]]:
    """The namespace ``auth`` decides under ``template`` (or the granted one), and its fields."""
    if template is None or not template_fields(template):
        template = USER_NAMESPACE
    fields = template_fields(template)
    granted = _GRANTED.get()
    if granted is not None:
        return granted, fields
    values: dict[str, str] = {}
    for name in fields:
        value = auth.value(name)
        if value is None:
            raise ConfigurationError(
                f"namespace template {tuple(_parts(template))!r} needs {name!r} of the "
                f"authenticated user, and the server's user has none: the auth handler must "
                f"return it (e.g. {{'identity': ..., '{name}': ...}}); a value the client "
                "sends is never used when the server authenticates"
            )
        values[name] = value
    return normalize_namespace([p.format_map(values) for p in _parts(template)]), fields


def _refuse(auth: AuthIdentity, where: str, what: str) -> NamespaceAccessError:
    return NamespaceAccessError(
        f"the server authenticated this run as {auth.user_id!r}, and {where} names {what}, "
        "which is not that user's memory: the authenticated identity decides whose memory a "
        "run reads, so remove it (or sign in as that user)"
    )


def check_claimed_namespace(
    auth: AuthIdentity, expected: Namespace, where: str, claimed: Any
) -> None:
    """Refuse ``claimed`` (a namespace a client named in ``where``) unless it is ``expected``.

    Raises:
        NamespaceAccessError: ``claimed`` is set and names another namespace.
    """
    if claimed is None or claimed == "" or claimed == [] or claimed == ():
        return
    try:
        same = normalize_namespace(claimed) == expected
    except Exception:  # a malformed claim is a claim of something else
        same = False
    if not same:
        raise _refuse(auth, where, f"namespace {claimed!r}")


def _check_claims(
    auth: AuthIdentity, expected: Namespace, fields: list[str], context: Any, config: Any
) -> None:
    sources = [("the run's context", context), ("config['configurable']", _configurable(config))]
    for where, source in sources:
        if source is None:
            continue
        raw = source.get("namespace") if isinstance(source, Mapping) else None
        if not isinstance(source, Mapping):
            raw = getattr(source, "namespace", None)
        check_claimed_namespace(auth, expected, where, raw)
    _check_field_claims(auth, [*fields, "user_id"], context, config)


def _check_field_claims(auth: AuthIdentity, fields: list[str], context: Any, config: Any) -> None:
    """Refuse a context or ``configurable`` that names any of ``fields`` other than ``auth``'s."""
    sources = [("the run's context", context), ("config['configurable']", _configurable(config))]
    for where, source in sources:
        if source is None:
            continue
        for name in dict.fromkeys(fields):
            try:
                value = _field(source, name)
            except ConfigurationError:
                raise _refuse(auth, where, f"{name} of an unusable type") from None
            if value is not None and value != auth.value(name):
                raise _refuse(auth, where, f"{name}={value!r}")


# --- the rule --------------------------------------------------------------------------------


def _runtime_context() -> Any:
    """The context of the graph run this code executes in, or ``None`` outside one."""
    from langgraph.runtime import get_runtime

    try:
        return getattr(get_runtime(), "context", None)
    except (RuntimeError, KeyError, AttributeError, TypeError):
        return None


def _named(value: Any) -> Namespace | None:
    """Namespace a context object or mapping names (``namespace`` wins over ``user_id``)."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        namespace, user_id = value.get("namespace"), value.get("user_id")
    else:
        namespace = getattr(value, "namespace", None)
        user_id = getattr(value, "user_id", None)
    if namespace:
        return normalize_namespace(namespace)
    user = namespace_value("user_id", user_id)
    return user_namespace(user) if user is not None else None


_NO_NAMESPACE = (
    "the read graph needs a namespace (whose memory to read): pass "
    "context=ReadContext(user_id='user-1') or context={'user_id': 'user-1'} "
    "(or namespace=...) to invoke, or config={'configurable': {'user_id': 'user-1'}} "
    "(or 'namespace')"
)


def resolve_namespace(
    context: Any,
    config: Mapping[str, Any] | None,
    default: str | Sequence[str] | None = None,
) -> Namespace:
    """The namespace of this run — the one rule every surface uses (see the module doc).

    Args:
        context: The run's runtime context (an object or a mapping), if any.
        config: The run's config, if any.
        default: A namespace template (``("orgs", "{org_id}", "users", "{user_id}")``), or
            the namespace of runs that name none (never used when the run is authenticated).

    Raises:
        NamespaceAccessError: The run is authenticated and names another user or namespace.
        ConfigurationError: No namespace can be found, or a template field is missing.
    """
    auth = auth_identity(config)
    if auth is not None:
        expected, fields = _authenticated(auth, default)
        runtime = _runtime_context()
        _check_claims(auth, expected, fields, context, config)
        if runtime is not None and runtime is not context:
            _check_claims(auth, expected, fields, runtime, None)
        return expected
    if default is not None and template_fields(default):
        return _fill_from_run(default, context, config)
    found = _named(context)
    if found is None and config:
        found = _named(_configurable(config))
    if found is None:
        found = _named(_runtime_context())
    if found is None and default is not None:
        found = normalize_namespace(default)
    if found is None:
        raise ConfigurationError(_NO_NAMESPACE)
    return found


def fill_namespace(
    template: str | Sequence[str],
    *,
    context: Any = None,
    config: Mapping[str, Any] | None = None,
) -> Namespace:
    """Fill a namespace template such as ``("memories", "{user_id}")`` for one run.

    Each ``{field}`` is looked up in the run's context (attribute or key), then in
    ``config["configurable"]``; any field name works (``{customer_id}``, ``{org}``). On an
    authenticated run, the fields come from the authenticated user (:func:`resolve_namespace`).

    Raises:
        ConfigurationError: A field is in neither place (the message says where it looked).
        NamespaceAccessError: The run is authenticated and names another user.
    """
    if auth_identity(config) is not None:
        return resolve_namespace(context, config, template)
    return _fill_from_run(template, context, config)


def fill_source_namespace(
    template: str | Sequence[str],
    *,
    context: Any = None,
    config: Mapping[str, Any] | None = None,
) -> Namespace:
    """The namespace a read source's template (``("teams", "{team_id}")``) names for one run.

    Without authentication, each ``{field}`` comes from the run like the journal's
    (:func:`fill_namespace`). On an authenticated run, from the authenticated user only
    (``user_id`` is the identity, any other field the auth handler's user's): a client that
    names another value in the context or ``configurable`` is refused, as it is for the
    journal, and a field the authenticated user lacks is an error (never filled from what the
    client sent). Unlike :func:`resolve_namespace`, a namespace a surface granted to a nested
    read graph (:func:`granted_namespace`) is never used here: it names the user's own memory,
    not a shared source's.

    Raises:
        ConfigurationError: A field is missing (the message says where it looked).
        NamespaceAccessError: The run is authenticated and names another value of a field.
    """
    auth = auth_identity(config)
    if auth is None:
        return _fill_from_run(template, context, config)
    fields = template_fields(template)
    values: dict[str, str] = {}
    for name in fields:
        value = auth.value(name)
        if value is None:
            raise ConfigurationError(
                f"source namespace template {tuple(_parts(template))!r} needs {name!r} of the "
                "authenticated user, and the server's user has none; a value the client "
                "sends is never used when the server authenticates"
            )
        values[name] = value
    _check_field_claims(auth, fields, context, config)
    runtime = _runtime_context()
    if runtime is not None and runtime is not context:
        _check_field_claims(auth, fields, runtime, None)
    return normalize_namespace([p.format_map(values) for p in _parts(template)])


def _plain_fields(source: Any) -> dict[str, str]:
    """The str/int fields of a context object or mapping (private ``__`` keys and LangGraph's
    own ``langgraph_`` / ``checkpoint_`` keys left out)."""
    if source is None:
        return {}
    if isinstance(source, Mapping):
        items = list(source.items())
    else:
        names = getattr(source, "__dataclass_fields__", None) or getattr(source, "__dict__", {})
        items = [(name, getattr(source, name, None)) for name in names]
    out: dict[str, str] = {}
    for name, value in items:
        if not isinstance(name, str) or name.startswith(("__", "langgraph_", "checkpoint_")):
            continue
        if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
            continue
        out[name] = str(value)
    return out


def context_fields(context: Any = None) -> dict[str, str]:
    """The str/int fields of a run's context (an object or a mapping; ``None``: the context
    of the graph run this code executes in), for a nested read graph whose sources fill
    templates such as ``("teams", "{team_id}")`` from them."""
    return _plain_fields(context if context is not None else _runtime_context())


def run_fields(context: Any = None, config: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The run's fields a source's ``for_run`` sees (a retriever's ``{user_id}`` filter).

    Without authentication: the str/int values of ``config["configurable"]``, then of the
    runtime context (which wins). On an authenticated run: only the authenticated user's
    (``user_id`` is the identity, then the auth handler's user's str/int fields), never
    what the client sent.
    """
    auth = auth_identity(config)
    if auth is not None:
        user = auth.user
        try:  # a dict, or the server's proxy of the auth handler's user
            fields = _plain_fields(dict(user)) if user is not None else {}
        except (TypeError, ValueError):
            fields = {}
        fields.pop("identity", None)
        return {**fields, "user_id": auth.user_id}
    return {**_plain_fields(_configurable(config)), **_plain_fields(context)}
