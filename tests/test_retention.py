"""Retention that erases (issue 46 §2), on both backends: what a policy removes, what it
keeps, the receipt, the audit row, legal holds, dry runs, the CLI and the byte scan.

Every test dates its records explicitly and passes the run's clock (``now=``), so nothing
depends on the day the suite runs. Every negative check first sees what it later misses.
"""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _reliability_common import fake_embeddings
from test_store_conformance import _holding

from mnemon_langgraph.cli import main as cli_main
from mnemon_langgraph.errors import InputError
from mnemon_langgraph.items import IndexItem
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.store._internal.retention import RETENTION_NOTE, RetentionReceipt
from mnemon_langgraph.store.kv_items import KVWrite
from mnemon_langgraph.types import Message

ADA = ("users", "ada")
BO = ("users", "bo")
NOW = datetime(2025, 6, 30, 12, 0, tzinfo=UTC)
OLD = datetime(2025, 1, 10, 9, 0)  # 171 days before NOW
NEW = datetime(2025, 6, 20, 9, 0)  # 10 days before NOW


def _messages() -> list[Message]:
    """Six old dated messages, three recent ones and two undated ones."""
    old = [
        Message(f"QzvOldMarker{i} I adopted a cat named Whiskers", "Ada", id=f"old{i}",
                timestamp=OLD + timedelta(days=i), session=1)
        for i in range(6)
    ]  # fmt: skip
    new = [
        Message(f"recent note {i}: I like green tea", "Ada", id=f"new{i}",
                timestamp=NEW + timedelta(days=i), session=2)
        for i in range(3)
    ]  # fmt: skip
    undated = [
        Message(f"undated remark {i} about the garden", "Ada", id=f"und{i}") for i in range(2)
    ]
    return [*old, *new, *undated]


def _seed(store: MnemonStore) -> dict[str, str]:
    """Ingest ADA's messages (one record each) and BO's; message id -> record id."""
    store.ingest(ADA, _messages(), origin="chat", pack=False)
    store.ingest(
        BO,
        [Message("QzvOldMarker0 Bo's own old words", "Bo", id="b0", timestamp=OLD)],
        origin="chat",
    )
    return {r.message_ids[0]: r.id for r in store.records(ADA)}


def test_a_policy_removes_old_dated_records_keeps_undated_and_recent_and_audits_counts(
    journal_target: str,
) -> None:
    with MnemonStore(journal_target, fake_embeddings()) as store:
        ids = _seed(store)
        assert store.search("QzvOldMarker3", namespace=ADA, k=1)[0].record.id == ids["old3"]
        n_before, df_before = store.term_statistics(ADA, ["cat", "tea"])
        assert (n_before, df_before) == (11, {"cat": 6, "tea": 3})

        receipt = store.apply_retention(ADA, older_than=timedelta(days=30), now=NOW)

        assert isinstance(receipt, RetentionReceipt) and not receipt.held
        assert receipt.cutoff == NOW - timedelta(days=30)
        assert receipt.counts == {
            "records": 6, "messages": 6, "vectors": 6,
            "items_removed": 0, "items_trimmed": 0, "kv_items": 0, "failures_redacted": 0,
        }  # fmt: skip
        assert receipt.undated_kept == 2 and receipt.kept_by_keep_last == 0
        assert sorted(receipt.message_ids) == [f"old{i}" for i in range(6)]
        left = {r.message_ids[0] for r in store.records(ADA)}
        assert left == {"new0", "new1", "new2", "und0", "und1"}
        # vectors, message ids and BM25 statistics went with the records
        assert store.stored_vectors(ADA, [ids["old3"], ids["new0"]]).keys() == {ids["new0"]}
        assert store.known_message_ids(ADA, ["old3", "new0"]) == {"new0"}
        assert store.term_statistics(ADA, ["cat", "tea"]) == (5, {"cat": 0, "tea": 3})
        hits = store.search("QzvOldMarker3", namespace=ADA, k=5)
        assert hits and all("QzvOldMarker" not in h.record.text for h in hits)
        # the other namespace is untouched, though its record is as old
        assert store.count(BO) == 1
        # one audit row: ids and counts per table, never text
        audit = store.audit_log(ADA)
        assert [a.action for a in audit] == ["apply_retention"]
        assert audit[0].count == 6 and set(audit[0].record_ids) == {
            ids[f"old{i}"] for i in range(6)
        }
        assert audit[0].message_ids == receipt.message_ids
        reason = json.loads(audit[0].reason)
        assert reason["policy"] == {"older_than_seconds": 30 * 86400, "keep_last": None}
        assert reason["cutoff"] == receipt.cutoff.isoformat()
        assert sum(reason["tables"].values()) >= 18 and "QzvOld" not in audit[0].reason
        # a second run finds nothing and writes no second row
        again = store.apply_retention(ADA, older_than="30d", now=NOW)
        assert again.records == 0 and len(store.audit_log(ADA)) == 1


def test_keep_last_keeps_the_newest_dated_records_whatever_their_age(journal_target: str) -> None:
    with MnemonStore(journal_target, fake_embeddings()) as store:
        _seed(store)
        receipt = store.apply_retention(ADA, older_than="30d", keep_last=5, now=NOW)
        # the 5 newest dated: new0..2 (recent anyway) and old4, old5 (kept by keep_last)
        assert receipt.records == 4 and receipt.kept_by_keep_last == 2
        left = sorted(r.message_ids[0] for r in store.records(ADA))
        assert left == ["new0", "new1", "new2", "old4", "old5", "und0", "und1"]
        # a newer clock still never removes the undated records
        late = store.apply_retention(ADA, older_than="1d", now=NOW + timedelta(days=400))
        assert late.records == 5 and late.undated_kept == 2
        assert sorted(r.message_ids[0] for r in store.records(ADA)) == ["und0", "und1"]


def test_a_dry_run_counts_the_same_and_removes_nothing(journal_target: str) -> None:
    with MnemonStore(journal_target, fake_embeddings()) as store:
        _seed(store)
        dry = store.apply_retention(ADA, older_than="30d", now=NOW, dry_run=True)
        assert dry.dry_run and dry.records == 6 and dry.messages == 6
        assert store.count(ADA) == 11 and store.audit_log(ADA) == []
        real = store.apply_retention(ADA, older_than="30d", now=NOW)
        assert real.counts == dry.counts and real.record_ids == dry.record_ids
        assert store.count(ADA) == 5


def test_a_held_namespace_is_skipped_and_the_receipt_says_so(journal_target: str) -> None:
    with MnemonStore(journal_target, fake_embeddings()) as store:
        _seed(store)
        assert store.hold(ADA, actor="legal", reason="case 7") is True
        assert store.hold(ADA) is False  # already held
        assert store.held_namespaces() == [ADA]
        skipped = store.apply_retention(ADA, older_than="30d", now=NOW)
        assert skipped.held and skipped.records == 0 and store.count(ADA) == 11
        assert store.apply_retention(BO, older_than="30d", now=NOW).records == 1  # not held
        assert store.release(ADA, actor="legal") is True and store.held_namespaces() == []
        assert store.release(ADA) is False
        after = store.apply_retention(ADA, older_than="30d", now=NOW)
        assert not after.held and after.records == 6
        actions = [(a.action, a.actor) for a in store.audit_log(ADA)]
        assert actions == [("hold", "legal"), ("release", "legal"), ("apply_retention", "api")]
    with MnemonStore(journal_target, fake_embeddings()) as store:  # holds are stored
        store.hold(BO)
    with MnemonStore(journal_target, fake_embeddings()) as store:
        assert store.held_namespaces() == [BO]


def _item(i: str, kind: Any, text: str, records: list[str], **kw: Any) -> IndexItem:
    return IndexItem(id=i, namespace=ADA, kind=kind, text=text, record_ids=tuple(records), **kw)


def test_items_linked_only_to_removed_records_go_others_lose_the_quoted_text_and_say_so(
    journal_target: str,
) -> None:
    with MnemonStore(journal_target, fake_embeddings()) as store:
        ids = _seed(store)
        items = store.item_store()
        batch = [
            _item("only-old", "event", "Ada adopted Whiskers.", [ids["old0"]], topic="pets"),
            _item(
                "mixed", "event", "Ada adopted a cat named Whiskers. Ada likes green tea.",
                [ids["old1"], ids["new0"]], topic="life",
            ),
            _item(
                "value", "value", "Ada's pet is Whiskers.", [ids["old2"], ids["new1"]],
                subject="Ada", attribute="pet", value="Whiskers",
            ),
            _item("recent", "event", "Ada likes green tea.", [ids["new2"]], topic="drinks"),
            _item(
                "drink", "value", "Ada drinks green tea. Ada adopted Whiskers.",
                [ids["old4"], ids["new1"]], subject="Ada", attribute="drink", value="green tea",
            ),
            _item(  # its timeline's name is a word only the removed records said
                "label", "event", "Ada likes green tea.", [ids["old3"], ids["new0"]],
                topic="Whiskers",
            ),
        ]  # fmt: skip
        items.commit_batch(
            ADA, expected_watermark=0, new_watermark=store.max_seq(ADA), new_items=batch,
            new_vectors=items.embed_items(batch),
        )  # fmt: skip
        assert items.count(ADA) == 6
        receipt = store.apply_retention(ADA, older_than="30d", now=NOW)
        assert receipt.items_removed == 3 and receipt.items_trimmed == 2
        left = {it.id: it for it in items.all_items(ADA)}
        assert set(left) == {"mixed", "recent", "drink"}
        assert left["drink"].value == "green tea" and left["drink"].trimmed
        assert left["drink"].render().endswith("(some of its records were removed by retention)")
        assert not left["recent"].trimmed
        assert left["mixed"].text == f"Ada likes green tea. {RETENTION_NOTE}"
        assert left["mixed"].record_ids == (ids["new0"],)
        assert left["recent"].text == "Ada likes green tea."
        # the run's one audit row says it all: no "delete_item" rows of the orphan trigger
        assert [a.action for a in store.audit_log(ADA)] == ["apply_retention"]
        tables = json.loads(store.audit_log(ADA)[0].reason)["tables"]
        assert {k.removeprefix("mnemon_"): v for k, v in tables.items() if "item" in k} == {
            "items": 3, "items_updated": 2, "item_links": 5, "kv_items": 0,
        }  # fmt: skip


def _kv(store: MnemonStore, writes: list[KVWrite]) -> None:
    asyncio.run(store.kv().write(writes, actor="test"))


def test_key_value_items_under_the_namespace_written_before_the_cutoff_go(
    journal_target: str,
) -> None:
    old, new = NOW - timedelta(days=90), NOW - timedelta(days=2)

    def put(ns: tuple[str, ...], key: str, at: datetime) -> KVWrite:
        return KVWrite(ns, key, json.dumps({"v": key}), stamp=(at, at))

    with MnemonStore(journal_target, fake_embeddings()) as store:
        _kv(store, [
            put(ADA, "old-profile", old), put((*ADA, "memories"), "old-memory", old),
            put(ADA, "new-profile", new), put(("users", "adam"), "old-other", old),
            put(BO, "old-bo", old),
        ])  # fmt: skip
        receipt = store.apply_retention(ADA, older_than="30d", now=NOW)
        assert receipt.kv_items == 2 and receipt.records == 0
        rows = asyncio.run(store.kv().under(("users",), None))
        assert sorted(r.key for r in rows) == ["new-profile", "old-bo", "old-other"]
        assert [a.action for a in store.audit_log(ADA)] == ["apply_retention"]


def test_retention_writes_the_basestores_own_audit_one_row_per_namespace_keys_only(
    journal_target: str,
) -> None:
    from mnemon_langgraph.integrations.basestore import MnemonBaseStore

    old, new = NOW - timedelta(days=90), NOW - timedelta(days=2)

    def put(ns: tuple[str, ...], key: str, at: datetime) -> KVWrite:
        return KVWrite(ns, key, json.dumps({"v": f"QzvValue-{key}"}), stamp=(at, at))

    with MnemonStore(journal_target, fake_embeddings()) as store:
        _kv(store, [
            put(ADA, "old-b", old), put(ADA, "old-a", old), put((*ADA, "memories"), "old-m", old),
            put(ADA, "new-profile", new), put(BO, "old-bo", old), put(("users", "cy"), "c", old),
        ])  # fmt: skip
        with MnemonBaseStore(store) as bs:
            # a dry run and a held namespace write no row
            assert store.apply_retention(ADA, older_than="30d", now=NOW, dry_run=True).kv_items == 3
            store.hold(BO)
            assert store.apply_retention(BO, older_than="30d", now=NOW).held
            assert bs.audit_log() == []

            receipt = store.apply_retention(ADA, older_than="30d", now=NOW, actor="policy")
            assert receipt.kv_items == 3
            rows = [(a.action, a.actor, a.namespace, a.keys, a.count) for a in bs.audit_log()]
            assert sorted(rows) == [
                ("apply_retention", "policy", ADA, ("old-a", "old-b"), 2),
                ("apply_retention", "policy", (*ADA, "memories"), ("old-m",), 1),
            ]
            assert [a.namespace for a in bs.audit_log(BO)] == []
            assert all("QzvValue" not in json.dumps(a.keys) for a in bs.audit_log())
            # a run that removes nothing writes no further row
            store.apply_retention(ADA, older_than="30d", now=NOW)
            assert len(bs.audit_log()) == 2


def test_the_async_twin_answers_as_the_sync_face(journal_target: str) -> None:
    with MnemonStore(journal_target, fake_embeddings()) as store:
        _seed(store)
        store.ingest(("users", "cy"), _messages(), origin="chat", pack=False)
        sync = store.apply_retention(ADA, older_than="30d", now=NOW)
        other = asyncio.run(store.aapply_retention(("users", "cy"), older_than="30d", now=NOW))
        assert other.counts == sync.counts and other.message_ids == sync.message_ids
        assert asyncio.run(store.ahold(ADA)) is True
        assert asyncio.run(store.aheld_namespaces()) == [ADA]
        assert asyncio.run(store.aapply_retention(ADA, older_than="1d", now=NOW)).held
        assert asyncio.run(store.arelease(ADA)) is True


@pytest.mark.parametrize(
    "kwargs",
    [
        {"older_than": timedelta(0)},
        {"older_than": "30x"},
        {"older_than": 30},
        {"older_than": "30d", "keep_last": -1},
        {"older_than": "30d", "keep_last": True},
        {"older_than": "30d", "now": "2025-01-01"},
        {"older_than": "30d", "actor": 3},
    ],
)
def test_a_bad_policy_is_refused_before_anything_is_removed(
    tmp_path: Path, kwargs: dict[str, Any]
) -> None:
    with MnemonStore(tmp_path / "m.db", fake_embeddings()) as store:
        _seed(store)
        with pytest.raises(InputError):
            store.apply_retention(ADA, **kwargs)
        assert store.count(ADA) == 11 and store.audit_log() == []


def test_retention_leaves_no_residue_of_what_it_removed(journal_target: str) -> None:
    markers = [f"QzvOldMarker{i}" for i in range(6)] + ["QzvKvSecret"]
    with MnemonStore(journal_target, fake_embeddings()) as store:
        ids = _seed(store)
        items = store.item_store()
        batch = [
            _item("mixed", "event", "QzvOldMarker1 was said. Ada likes green tea.",
                  [ids["old1"], ids["new0"]], topic="life"),
        ]  # fmt: skip
        items.commit_batch(
            ADA, expected_watermark=0, new_watermark=store.max_seq(ADA), new_items=batch,
            new_vectors=items.embed_items(batch),
        )  # fmt: skip
        seqs = {r.message_ids[0]: r.seq for r in store.records(ADA)}
        items.record_failure(
            ADA, batch_start_seq=seqs["old2"], batch_end_seq=seqs["old2"], attempts=1,
            error="model output: QzvOldMarker2 is a cat", skip=False,
            expected_watermark=store.max_seq(ADA),
        )  # fmt: skip
        at = NOW - timedelta(days=60)
        _kv(store, [KVWrite(ADA, "k", json.dumps({"v": "QzvKvSecret"}), text="QzvKvSecret",
                            stamp=(at, at))])  # fmt: skip
        assert store.search("QzvOldMarker2", namespace=ADA, k=1)  # index files written
        store.flush()
        before = _holding(journal_target, markers)
        assert any("QzvKvSecret" in f for f in before)
        assert len({f.split(": ")[-1] for f in before}) == len(markers)
        assert store.apply_retention(ADA, older_than="30d", now=NOW).failures_redacted == 1
        assert [f.attempts for f in items.failures(ADA)] == [1]  # the row stays, redacted
        store.flush()
        # BO's old record carries QzvOldMarker0 too: it is another namespace, so it stays
        kept = _holding(journal_target, markers)
        assert kept and all(f.endswith(": QzvOldMarker0") for f in kept)
        assert store.search("QzvOldMarker0", namespace=BO, k=1)
    left = _holding(journal_target, markers[1:])
    assert left == []


def test_cli_retention_dry_run_prints_what_would_go_then_removes_it(
    journal_target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    today = datetime.now(UTC).replace(tzinfo=None)
    with MnemonStore(journal_target, fake_embeddings()) as store:
        store.ingest(ADA, [
            Message("ancient words", "Ada", id="a", timestamp=today - timedelta(days=400)),
            Message("fresh words", "Ada", id="f", timestamp=today - timedelta(days=1)),
        ], origin="chat", pack=False)  # fmt: skip
    args = ["retention", "--db", journal_target, "--user", "ada", "--older-than", "30d"]
    assert cli_main([*args, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would remove 1 records" in out and "dry run" in out
    with MnemonStore(journal_target, fake_embeddings()) as store:
        assert store.count(ADA) == 2
    assert cli_main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["records"] == 1 and report["dry_run"] is False
    with MnemonStore(journal_target, fake_embeddings()) as store:
        assert [r.message_ids for r in store.records(ADA)] == [("f",)]
        assert [(a.action, a.actor) for a in store.audit_log(ADA)] == [("apply_retention", "cli")]
        store.hold(ADA)
    assert cli_main([*args]) == 0
    assert "under a legal hold: skipped" in capsys.readouterr().out
    assert cli_main([*args[:-1], "soon"]) == 2
    assert "30d" in capsys.readouterr().err


def test_a_postgres_database_from_before_retention_gets_a_clear_error(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import psycopg

    with MnemonStore(postgres_url, fake_embeddings()) as store:
        _seed(store)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP TABLE mnemon_retention_holds")  # as schema version 6 was
        conn.execute("UPDATE mnemon_meta SET value = '6' WHERE key = 'schema_version'")
    args = ["retention", "--db", postgres_url, "--user", "ada", "--older-than", "30d"]
    assert cli_main(args) == 2  # a maintenance open does not migrate
    assert "predates retention" in capsys.readouterr().err
    with MnemonStore(postgres_url, fake_embeddings()) as store:  # a regular open migrates
        assert store.count(ADA) == 11
        assert store.apply_retention(ADA, older_than="30d", now=NOW).records == 6


def test_a_run_that_removes_nothing_leaves_the_index_files_alone(tmp_path: Path) -> None:
    from mnemon_langgraph.store.embedded._index import index_folder

    db = tmp_path / "m.db"
    with MnemonStore(db, fake_embeddings()) as store:
        _seed(store)
        assert store.search("tea", namespace=ADA, k=1)
        store.flush()
        checkpoint = index_folder(db, ADA) / "bm25.npz"
        assert checkpoint.is_file()
        nothing = store.apply_retention(ADA, older_than="365d", now=NOW)
        assert nothing.records == 0 and not nothing.dry_run
        assert checkpoint.is_file()  # another process still loads it instead of rebuilding
        assert store.apply_retention(ADA, older_than="30d", now=NOW).records == 6
        assert not checkpoint.exists()  # it held the removed words
        store.flush()
        assert checkpoint.is_file()  # written again, without them


def test_the_receipt_is_reachable_from_the_store_package_and_documented() -> None:
    import mnemon_langgraph.store as store_package

    assert store_package.RetentionReceipt is RetentionReceipt
    assert "RetentionReceipt" in store_package.__all__
    api = (Path(__file__).parent.parent / "docs" / "api.md").read_text(encoding="utf-8")
    assert "\n::: mnemon_langgraph.store.RetentionReceipt\n" in api
