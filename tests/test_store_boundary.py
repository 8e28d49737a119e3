"""The store's one checked boundary (``store/_internal/boundary.py``): every operation's arguments
are checked once, by one checker that the sync method and its async twin share; hooks below get
a normalised namespace tuple and an id tuple; a lone string is one id everywhere."""

from __future__ import annotations

import ast
import asyncio
import inspect
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _reliability_common import fake_embeddings

from mnemon_langgraph.errors import InputError, NamespaceError
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.store._internal.boundary import OPERATIONS
from mnemon_langgraph.store.base import MnemonStore as BaseStore
from mnemon_langgraph.store.embedded import EmbeddedStore
from mnemon_langgraph.types import Message

NS = ("users", "ada")


@pytest.fixture(params=["embedded", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MnemonStore]:
    target = (
        str(tmp_path / "memory.db")
        if request.param == "embedded"
        else str(request.getfixturevalue("postgres_url"))
    )
    with MnemonStore(target, fake_embeddings()) as s:
        yield s


def _body(cls: type, name: str) -> list[ast.stmt]:
    """The statements of ``cls.name`` without its docstring."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(getattr(cls, name))))
    func = tree.body[0]
    assert isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef)
    body = func.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return body


def _called(node: ast.AST) -> str | None:
    if isinstance(node, ast.Await):
        node = node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id
    return None


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.name)
def test_each_face_is_one_line_over_the_operations_one_checker(op: Any) -> None:
    """No face checks anything itself: ``return call(self, OP, …)`` / ``return await
    acall(self, OP, …)``, so the two faces cannot check differently."""
    for name, runner in ((op.name, "call"), ("a" + op.name, "acall")):
        body = _body(BaseStore, name)
        assert len(body) == 1 and isinstance(body[0], ast.Return), f"{name}: one return"
        assert body[0].value is not None and _called(body[0].value) == runner, name
        call = body[0].value.value if isinstance(body[0].value, ast.Await) else body[0].value
        assert isinstance(call, ast.Call)
        assert isinstance(call.args[1], ast.Name), name
        module = inspect.getmodule(getattr(BaseStore, name))
        assert getattr(module, call.args[1].id) is op, name


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.name)
def test_every_backend_implements_each_operations_hook(op: Any) -> None:
    from mnemon_langgraph.store.postgres import PostgresStore

    abstract = getattr(BaseStore, op.hook)
    for backend in (EmbeddedStore, PostgresStore):
        assert getattr(backend, op.hook) is not abstract, (backend.__name__, op.hook)
        assert inspect.iscoroutinefunction(getattr(backend, op.async_hook)), op.async_hook


def test_hooks_get_a_namespace_tuple_and_a_distinct_id_tuple(
    store: MnemonStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[Any, ...]] = []

    def sync_hook(ns: Any, ids: Any) -> list[Any]:
        seen.append((ns, ids))
        return []

    async def async_hook(ns: Any, ids: Any) -> list[Any]:
        seen.append((ns, ids))
        return []

    monkeypatch.setattr(store, "_get_records", sync_hook)
    monkeypatch.setattr(store, "_aget_records", async_hook)
    store.get_records(["users", "ada"], iter(["r-1", "r-2", "r-1"]))
    asyncio.run(store.aget_records(["users", "ada"], ["r-1", "r-2", "r-1"]))
    store.get_records("ada", "r-1")
    assert seen == [(NS, ("r-1", "r-2")), (NS, ("r-1", "r-2")), (("ada",), ("r-1",))]


BAD_CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any], type[Exception]]] = [
    ("get_records", ((),), {"ids": ["r"]}, NamespaceError),
    ("get_records", (NS, 3), {}, InputError),
    ("get_records", (NS, [b"r"]), {}, InputError),
    ("match_record_ids", (NS, 7), {}, InputError),
    ("term_statistics", (NS, {"a": 1}), {}, InputError),
    ("session_records", (NS, -1), {}, InputError),
    ("session_records", (NS, 1), {"stop": True}, InputError),
    ("known_message_ids", (NS, None), {}, InputError),
    ("max_seq", (("",),), {}, NamespaceError),
    ("count", ((1,),), {}, NamespaceError),
    ("holds_namespace", (b"x",), {}, NamespaceError),
    ("warm", (("a", ""),), {}, NamespaceError),
    ("audit_log", (("a", ""),), {}, NamespaceError),
    ("stats", (("a\x00",),), {}, NamespaceError),
    ("delete_records", (NS, ["r"]), {"actor": 3}, InputError),
    ("delete_messages", (NS, ["m"]), {"source": None}, InputError),
    ("erase_namespace", (NS,), {"actor": None}, InputError),
    ("search", ("q",), {"namespace": NS, "k": -1}, InputError),
    ("ingest", (NS, "text"), {"source": "s"}, InputError),
    ("apply_retention", (NS,), {"older_than": "soon"}, InputError),
    ("apply_retention", (NS,), {"older_than": "30d", "keep_last": -2}, InputError),
    ("apply_retention", ((),), {"older_than": "30d"}, NamespaceError),
    ("hold", (NS,), {"reason": 3}, InputError),
    ("release", (("a", ""),), {}, NamespaceError),
]


@pytest.mark.parametrize(
    ("name", "args", "kwargs", "error"),
    BAD_CALLS,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(BAD_CALLS)],
)
def test_both_faces_refuse_the_same_bad_arguments_with_the_same_error(
    store: MnemonStore, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], error: type
) -> None:
    with pytest.raises(error) as sync_error:
        getattr(store, name)(*args, **kwargs)
    with pytest.raises(error) as async_error:
        asyncio.run(getattr(store, "a" + name)(*args, **kwargs))
    assert str(sync_error.value) == str(async_error.value)


def _two_records(store: MnemonStore, user: str) -> list[str]:
    msgs = [Message(f"turn {i} of {user}", "Ada", id=f"{user}-{i}") for i in range(2)]
    return list(store.ingest(user, msgs, origin="chat", pack=False).record_ids)


def test_a_lone_string_is_one_id_on_every_deletion_and_face(store: MnemonStore) -> None:
    """One rule (``check_ids``): ``delete(user, "r-…")`` deletes that record, as
    ``delete_records(ns, "r-…")`` does, on both faces; the other record stays."""
    calls = {
        "delete": lambda ns, rid: store.delete(ns, rid),
        "adelete": lambda ns, rid: asyncio.run(store.adelete(ns, rid)),
        "delete_records": lambda ns, rid: store.delete_records(ns, rid),
        "adelete_records": lambda ns, rid: asyncio.run(store.adelete_records(ns, rid)),
    }
    for user, delete in calls.items():
        first, second = _two_records(store, user)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # delete, adelete: aliases
            assert delete(user, first) == [first], user
        assert [r.id for r in store.records(user)] == [second], user


def test_the_deprecated_per_user_names_warn_and_answer_as_the_store_vocabulary(
    store: MnemonStore,
) -> None:
    first, second = _two_records(store, "ada")
    with pytest.warns(DeprecationWarning, match=r"list_records .*records"):
        listed = store.list_records("ada", limit=1)
    assert listed == list(store.records("ada", limit=1)) and [r.id for r in listed] == [first]
    with pytest.warns(DeprecationWarning, match="alist_records"):
        alisted = asyncio.run(store.alist_records("ada"))
    assert alisted == list(store.records("ada"))
    with pytest.warns(DeprecationWarning, match=r"\.delete is deprecated.*delete_records"):
        assert store.delete("ada", [first], reason="asked") == [first]
    with pytest.warns(DeprecationWarning, match="adelete_records"):
        assert asyncio.run(store.adelete("ada", [second])) == [second]
    assert [a.actor for a in store.audit_log("ada")] == ["api.delete", "api.delete"]
    assert list(store.records("ada")) == []


def test_the_renamed_ef_search_tables_keep_their_old_names_one_release() -> None:
    import mnemon_langgraph.search._vectors as vectors
    import mnemon_langgraph.store.postgres._settings as settings

    for module, prefix in ((vectors, "FAISS_"), (settings, "PGVECTOR_")):
        with pytest.warns(DeprecationWarning, match=prefix + "EF_SEARCH_BY_SIZE"):
            assert module.EF_SEARCH_BY_SIZE is getattr(module, prefix + "EF_SEARCH_BY_SIZE")
        with pytest.warns(DeprecationWarning, match=prefix.lower() + "ef_search_for"):
            old = module.ef_search_for
        assert old is getattr(module, prefix.lower() + "ef_search_for")
    assert vectors.FAISS_EF_SEARCH_BY_SIZE != settings.PGVECTOR_EF_SEARCH_BY_SIZE  # on purpose
    with pytest.raises(AttributeError):
        _ = vectors.NO_SUCH_NAME


def test_postgres_internals_are_private_and_the_old_names_warn(postgres_url: str) -> None:
    with MnemonStore(postgres_url, fake_embeddings()) as pg:
        rows = pg._run(pg._fetch("SELECT count(*) FROM mnemon_records"))
        assert rows == [(0,)]
        with pytest.warns(DeprecationWarning, match="PostgresStore.run"):
            old = pg.run(pg._fetch("SELECT count(*) FROM mnemon_records"))
        assert old == rows
        with pytest.warns(DeprecationWarning, match="PostgresStore.key"):
            assert pg.key("ada") == pg._key("ada") == '["ada"]'
