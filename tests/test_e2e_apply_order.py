"""The suite applies a recording's objects in an order the API server and its controllers accept
(e2e/objects.py): a recording lists resources by type, which puts a token Secret before its
ServiceAccount, and the token controller deletes such a Secret when it finds no account."""

from __future__ import annotations

from e2e.objects import sort_for_apply


def _object(kind: str, name: str) -> dict[str, object]:
    return {"kind": kind, "metadata": {"name": name}}


def test_service_accounts_come_before_the_token_secrets_that_name_them() -> None:
    recorded = [_object("Secret", "multikueue-atlas-token-0"), _object("ServiceAccount", "multikueue-atlas"),
                _object("Namespace", "kueue-system"), _object("Deployment", "x")]
    kinds = [o["kind"] for o in sort_for_apply(recorded)]
    assert kinds == ["Namespace", "ServiceAccount", "Secret", "Deployment"]
